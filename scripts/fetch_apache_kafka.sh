#!/usr/bin/env bash
# Fetch Apache Kafka 2.8.2 (the oracle the conformance suite and the tool tests run beside
# kafkalite) from Maven Central at the versions pinned in jvm/apache-kafka/pom.xml, into a cache
# outside git: $KAFKALITE_APACHE_KAFKA_HOME, default ~/.cache/kafkalite/apache-kafka-2.8.2 (jars in
# libs/). Nothing is built and nothing is committed. Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
home="${KAFKALITE_APACHE_KAFKA_HOME:-$HOME/.cache/kafkalite/apache-kafka-2.8.2}"
exec bash scripts/maven_fetch.sh fetch_apache_kafka jvm/apache-kafka/pom.xml "$home/libs" \
  kafka_2.13-2.8.2.jar
