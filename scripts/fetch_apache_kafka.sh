#!/usr/bin/env bash
# Fetch Apache Kafka 2.8.2 (the oracle the conformance suite and the tool tests run beside
# kafkalite) from Maven Central at the versions pinned in jvm/apache-kafka/pom.xml, into a cache
# outside git: $KAFKALITE_APACHE_KAFKA_HOME, default ~/.cache/kafkalite/apache-kafka-2.8.2 (jars in
# libs/). Nothing is built and nothing is committed. Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
home="${KAFKALITE_APACHE_KAFKA_HOME:-$HOME/.cache/kafkalite/apache-kafka-2.8.2}"
libs="$home/libs"
stamp="$home/.pom.sha256"
want="$(sha256sum jvm/apache-kafka/pom.xml | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && ls "$libs"/kafka_2.13-2.8.2.jar >/dev/null 2>&1; then
  echo "fetch_apache_kafka: Apache Kafka 2.8.2 already in $libs" >&2
  exit 0
fi
command -v mvn >/dev/null 2>&1 || { echo "fetch_apache_kafka: Maven (mvn) is needed: apt-get install maven" >&2; exit 1; }
echo "fetch_apache_kafka: fetching Apache Kafka 2.8.2 jars with Maven into $libs" >&2
rm -rf "$libs.tmp"
mvn -q -B -f jvm/apache-kafka/pom.xml dependency:copy-dependencies \
  -DoutputDirectory="$libs.tmp" -DincludeScope=runtime
rm -rf "$libs"
mv "$libs.tmp" "$libs"
echo "$want" > "$stamp"
echo "fetch_apache_kafka: $(ls "$libs" | wc -l) jars in $libs" >&2
