#!/usr/bin/env bash
# Fetch Spark's own Kafka connector (spark-sql-kafka-0-10_2.13 4.2.0) and the jars it needs beyond
# pyspark's own (kafka-clients, commons-pool2, spark-token-provider-kafka) from Maven Central at
# the versions pinned in jvm/spark-kafka/pom.xml, into a cache outside git:
# $KAFKALITE_SPARK_KAFKA_HOME, default ~/.cache/kafkalite/spark-kafka-4.2.0 (jars in jars/). The
# tests and `kafkalite pipeline --connector kafka` pass them with spark.jars. Nothing is built and
# nothing is committed. Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
home="${KAFKALITE_SPARK_KAFKA_HOME:-$HOME/.cache/kafkalite/spark-kafka-4.2.0}"
exec bash scripts/maven_fetch.sh fetch_spark_kafka jvm/spark-kafka/pom.xml "$home/jars" \
  spark-sql-kafka-0-10_2.13-4.2.0.jar
