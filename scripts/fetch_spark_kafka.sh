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
jars="$home/jars"
stamp="$home/.pom.sha256"
want="$(sha256sum jvm/spark-kafka/pom.xml | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
    && ls "$jars"/spark-sql-kafka-0-10_2.13-4.2.0.jar >/dev/null 2>&1; then
  echo "fetch_spark_kafka: Spark's Kafka connector 4.2.0 already in $jars" >&2
  exit 0
fi
command -v mvn >/dev/null 2>&1 || { echo "fetch_spark_kafka: Maven (mvn) is needed: apt-get install maven" >&2; exit 1; }
echo "fetch_spark_kafka: fetching Spark's Kafka connector 4.2.0 with Maven into $jars" >&2
rm -rf "$jars.tmp"
mvn -q -B -f jvm/spark-kafka/pom.xml dependency:copy-dependencies \
  -DoutputDirectory="$jars.tmp" -DincludeScope=runtime
rm -rf "$jars"
mv "$jars.tmp" "$jars"
echo "$want" > "$stamp"
echo "fetch_spark_kafka: $(ls "$jars" | wc -l) jars in $jars" >&2
