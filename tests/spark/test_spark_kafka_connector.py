"""Spark's own Kafka connector (spark-sql-kafka-0-10 4.2.0 on pyspark 4.3.0) against 3 kafkalite
brokers and, in the same run, 3 Apache Kafka 2.8.2 brokers (the session's ``system`` clusters:
replication factor 3, min.insync.replicas 2).

confluent-kafka (librdkafka) produces the records -- keys, headers, explicit timestamps -- and
reads back what Spark wrote, so neither side is judged by kafkalite's own client:

* ``spark.read.format("kafka")``: startingOffsets/endingOffsets as JSON, and by timestamp
  (startingTimestamp, startingOffsetsByTimestamp, endingOffsetsByTimestamp); the rows equal what
  was produced (topic, partition, offset, key, value, headers, timestamp);
* ``spark.readStream.format("kafka")`` with maxOffsetsPerTrigger, includeHeaders and
  failOnDataLoss, trigger availableNow, to a Parquet file sink, run twice from one checkpoint:
  every record exactly once, no micro-batch above the limit;
* ``df.write.format("kafka")`` with a headers column and a topic column: confluent-kafka reads
  each topic's records back.

The connector's jars come from ``scripts/fetch_spark_kafka.sh`` (the module fails, naming it,
without them); the module's SparkSession is the conftest's one, started with them.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest
from sparktools import consume_with_confluent

from kafkalite.testing.oracle_fixtures import SYSTEMS

pytestmark = [pytest.mark.spark,
              pytest.mark.parametrize("system", SYSTEMS, indirect=True)]

PARTITIONS = 3
# an hour ago: records older than retention.ms (7 days) would be deleted by Apache Kafka's
# retention check, the active segment included, while the test reads them
BASE_TS = int(time.time()) // 60 * 60_000 - 3_600_000


@pytest.fixture(scope="module", autouse=True)
def connector(spark):
    """The connector is on this session's spark.jars (fails naming the fetch script when not)."""
    from spark_integration.kafka_connector import connector_jars

    jars = connector_jars()
    loaded = spark.sparkContext.getConf().get("spark.jars", "")
    missing = [j for j in jars if j not in loaded]
    assert not missing, (f"the Spark JVM was started without the connector's jars {missing}: "
                         f"spark.jars is {loaded!r}")
    return jars


def bootstrap_of(system) -> str:
    return system.bootstrap_servers


def create_topic(bootstrap: str, prefix: str, partitions: int = PARTITIONS) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(60)
    return name


def produce(bootstrap: str, topic: str, count: int, start: int = 0) -> list[tuple]:
    """``count`` records, record i to partition i % 3 at BASE_TS + i seconds, with a key and
    headers (one key twice, one header without a value on every fifth record); returns the
    delivered ``(topic, partition, offset, key, value, headers, timestamp_ms)``."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5})
    delivered, errors = [], []

    def report(headers):
        # the delivery report's message carries no headers (librdkafka hands them to the request)
        def on_delivery(err, msg):
            if err is not None:
                errors.append(err)
                return
            delivered.append((msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(),
                              tuple(headers), msg.timestamp()[1]))
        return on_delivery

    for i in range(start, start + count):
        headers = [("seq", str(i).encode()), ("tag", b"a"), ("tag", f"b{i % 4}".encode())]
        if i % 5 == 0:
            headers.append(("empty", None))
        producer.produce(topic, key=f"k{i % 7}".encode(), value=f"value-{i}".encode(),
                         partition=i % PARTITIONS, timestamp=BASE_TS + i * 1000, headers=headers,
                         on_delivery=report(headers))
        producer.poll(0)
    assert producer.flush(60) == 0 and not errors, errors
    return sorted(delivered)


def consume_all(bootstrap: str, topic: str) -> list[tuple]:
    """Every record of ``topic`` as ``(key, value, headers)``, read by confluent-kafka."""
    return sorted((m.key(), m.value(), tuple(m.headers() or ()))
                  for m in consume_with_confluent(bootstrap, topic))


def as_tuples(df) -> list[tuple]:
    from pyspark.sql import functions as F

    rows = df.select("topic", "partition", "offset", "key", "value", "headers",
                     F.unix_millis("timestamp").alias("ts"), "timestampType").collect()
    assert all(r.timestampType == 0 for r in rows)           # CreateTime, as produced
    return sorted((r.topic, r.partition, r.offset, bytes(r.key), bytes(r.value),
                   tuple((h.key, None if h.value is None else bytes(h.value))
                         for h in r.headers or ()), r.ts) for r in rows)


def batch_read(spark, bootstrap: str, topic: str, **options):
    reader = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("includeHeaders", "true"))
    for key, value in options.items():
        reader = reader.option(key, value if isinstance(value, str) else json.dumps(value))
    return as_tuples(reader.load())


def test_batch_read_by_offsets_and_by_timestamp(spark, system):
    bootstrap = bootstrap_of(system)
    topic = create_topic(bootstrap, "spark-kafka-read")
    produced = produce(bootstrap, topic, 30)              # 10 per partition, offsets 0..9
    assert {p: sum(1 for r in produced if r[1] == p) for p in range(3)} == {0: 10, 1: 10, 2: 10}
    everything = {p: -2 for p in range(PARTITIONS)}

    # all of it, offsets as JSON (-2 earliest, -1 latest)
    rows = batch_read(spark, bootstrap, topic, startingOffsets={topic: everything},
                      endingOffsets={topic: {p: -1 for p in range(PARTITIONS)}})
    assert rows == produced

    # an offset range per partition
    start, end = {0: 2, 1: -2, 2: 7}, {0: 5, 1: 3, 2: -1}
    rows = batch_read(spark, bootstrap, topic,
                      startingOffsets={topic: {str(p): o for p, o in start.items()}},
                      endingOffsets={topic: {str(p): o for p, o in end.items()}})
    assert rows == [r for r in produced if max(start[r[1]], 0) <= r[2] <
                    (end[r[1]] if end[r[1]] >= 0 else 10)]

    # by timestamp: the first offset at or after a time, per partition and for all
    ts = {0: BASE_TS + 9_000, 1: BASE_TS + 1_000, 2: BASE_TS + 20_000}     # offsets 3, 0, 6
    until = {0: BASE_TS + 21_000, 1: BASE_TS + 13_000, 2: BASE_TS + 999_000}   # 7, 4, latest
    rows = batch_read(spark, bootstrap, topic,
                      startingOffsetsByTimestamp={topic: {str(p): t for p, t in ts.items()}},
                      endingOffsetsByTimestamp={topic: {str(p): t for p, t in until.items()}})
    expected = [r for r in produced if ts[r[1]] <= r[6] < until[r[1]]]
    assert rows == expected and {r[1]: r[2] for r in reversed(expected)} == {0: 3, 1: 0, 2: 6}
    # one time for every partition, to the end
    rows = batch_read(spark, bootstrap, topic, startingTimestamp=str(BASE_TS + 15_000))
    assert rows == [r for r in produced if r[6] >= BASE_TS + 15_000] and len(rows) == 15


def test_streaming_available_now_exactly_once(spark, system, tmp_path):
    bootstrap = bootstrap_of(system)
    topic = create_topic(bootstrap, "spark-kafka-stream")
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")

    def run() -> list[int]:
        frame = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                 .option("subscribe", topic).option("startingOffsets", "earliest")
                 .option("maxOffsetsPerTrigger", "12").option("includeHeaders", "true")
                 .option("failOnDataLoss", "true").load()
                 .select("topic", "partition", "offset", "key", "value", "headers",
                         "timestamp", "timestampType"))
        query = (frame.writeStream.format("parquet").option("path", out)
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        query.awaitTermination(300)
        assert not query.isActive and query.exception() is None, query.exception()
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

    first = produce(bootstrap, topic, 30)
    batches = run()
    assert sum(batches) == 30 and max(batches) <= 12 and len(batches) >= 3, batches
    second = produce(bootstrap, topic, 15, start=30)
    batches = run()
    assert sum(batches) == 15 and max(batches) <= 12 and len(batches) >= 2, batches
    rows = as_tuples(spark.read.parquet(out))
    assert rows == sorted(first + second)         # every record once: none lost, none twice


def test_sink_with_headers_and_a_topic_column(spark, system):
    from pyspark.sql import Row

    bootstrap = bootstrap_of(system)
    topics = [create_topic(bootstrap, "spark-kafka-sink", partitions=2) for _ in range(2)]
    wanted = {t: [] for t in topics}
    rows = []
    for i in range(40):
        topic = topics[i % 3 == 0]
        headers = [("n", str(i).encode()), ("from", b"spark")]
        wanted[topic].append((f"key-{i % 5}".encode(), f"payload-{i}".encode(), tuple(headers)))
        rows.append(Row(topic=topic, key=f"key-{i % 5}", value=f"payload-{i}".encode(),
                        headers=[Row(key=k, value=v) for k, v in headers]))
    frame = spark.createDataFrame(
        rows, "topic STRING, key STRING, value BINARY, "
              "headers ARRAY<STRUCT<key: STRING, value: BINARY>>")
    frame.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).save()
    for topic in topics:
        assert consume_all(bootstrap, topic) == sorted(wanted[topic])
