"""Batch reads and writes through the "kafkalite" data source, on local[2] Spark and 3 brokers.

The module's SparkSession does NOT register the source: every ``format("kafkalite")`` here is
found by PySpark's auto-discovery of the ``pyspark_kafkalite`` module.
"""

from __future__ import annotations

import json

import pytest
from sparktools import create_topic, produce, read_all, rows_as_tuples, unique_topic

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def topic_data(bootstrap):
    """A 3-partition topic with 300 records: keys, null keys, headers, explicit timestamps."""
    topic = create_topic(bootstrap, unique_topic("batch"), partitions=3)
    records = []
    for i in range(300):
        record = {"value": f"value-{i}".encode(), "timestamp_ms": 1_700_000_000_000 + i}
        if i % 5:
            record["key"] = f"key-{i % 11}".encode()
        if i % 3 == 0:
            record["headers"] = [("source", b"test"), ("n", str(i).encode())]
        if i % 4 == 0:
            record["partition"] = i % 3
        records.append(record)
    acked = produce(bootstrap, topic, records)
    return topic, acked


def reader(spark, bootstrap, **options):
    r = spark.read.format("kafkalite").option("kafkalite.bootstrap.servers", bootstrap)
    for name, value in options.items():
        r = r.option(name, value)
    return r.load()


def test_batch_read_returns_exactly_what_was_produced(spark, bootstrap, topic_data):
    topic, acked = topic_data
    df = reader(spark, bootstrap, subscribe=topic)
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp",
                          "timestampType"]
    assert [f.dataType.simpleString() for f in df.schema.fields] == [
        "binary", "binary", "string", "int", "bigint", "timestamp", "int"]
    rows = df.collect()
    assert len(rows) == 300 == df.count()
    assert rows_as_tuples(rows) == sorted((p, o, k, v) for p, o, k, v, _ts, _h in acked)
    assert {r.topic for r in rows} == {topic}
    assert {r.timestampType for r in rows} == {0}
    # timestamps are the producer's, to the millisecond (compared in UTC inside Spark)
    ts_rows = df.selectExpr("partition", "offset", "unix_millis(timestamp) AS ms").collect()
    assert sorted((r.partition, r.offset, r.ms) for r in ts_rows) == \
        sorted((p, o, ts) for p, o, _k, _v, ts, _h in acked)


def test_headers_with_include_headers(spark, bootstrap, topic_data):
    topic, acked = topic_data
    df = reader(spark, bootstrap, subscribe=topic, includeHeaders="true")
    assert df.columns[-1] == "headers"
    got = sorted((r.partition, r.offset, tuple((h.key, bytes(h.value)) for h in r.headers))
                 for r in df.select("partition", "offset", "headers").collect())
    assert got == sorted((p, o, h) for p, o, _k, _v, _ts, h in acked)


def test_starting_and_ending_offsets_json_read_exactly_that_range(spark, bootstrap, topic_data):
    topic, acked = topic_data
    starting = {topic: {"0": 10, "1": -2}}          # partition 2 unnamed: earliest
    ending = {topic: {"0": 40, "1": 25, "2": -1}}
    df = reader(spark, bootstrap, subscribe=topic, startingOffsets=json.dumps(starting),
                endingOffsets=json.dumps(ending))
    want = sorted((p, o, k, v) for p, o, k, v, _ts, _h in acked
                  if (p == 0 and 10 <= o < 40) or (p == 1 and o < 25) or p == 2)
    assert rows_as_tuples(df.collect()) == want


def test_min_partitions_splits_ranges_and_reads_each_offset_once(spark, bootstrap, topic_data):
    topic, acked = topic_data
    df = reader(spark, bootstrap, subscribe=topic, minPartitions="7")
    assert df.rdd.getNumPartitions() == 7
    assert rows_as_tuples(df.collect()) == sorted((p, o, k, v) for p, o, k, v, _ts, _h in acked)


def test_assign_and_subscribe_pattern(spark, bootstrap, topic_data):
    topic, acked = topic_data
    df = reader(spark, bootstrap, assign=json.dumps({topic: [1]}))
    assert rows_as_tuples(df.collect()) == sorted((p, o, k, v) for p, o, k, v, _ts, _h in acked
                                                  if p == 1)
    other = create_topic(bootstrap, f"{topic}-other", partitions=1)
    produce(bootstrap, other, [{"value": b"x"}, {"value": b"y"}])
    df = reader(spark, bootstrap, subscribePattern=f"{topic}(-other)?")
    assert df.count() == 302
    assert {r.topic for r in df.select("topic").distinct().collect()} == {topic, other}


def test_zookeeper_option_finds_the_brokers(spark, spark_cluster, topic_data):
    topic, _acked = topic_data
    df = (spark.read.format("kafkalite").option("kafkalite.zookeeper", spark_cluster.zk_connect)
          .option("subscribe", topic).load())
    assert df.count() == 300


def test_writer_round_trip(spark, bootstrap, topic_data):
    topic, acked = topic_data
    out = unique_topic("written")
    create_topic(bootstrap, out, partitions=2)
    source = reader(spark, bootstrap, subscribe=topic, includeHeaders="true")
    # key as string, value as binary, explicit partition, headers; the topic from the option
    (source.selectExpr("CAST(key AS STRING) AS key", "value", "headers",
                       "CAST(offset % 2 AS INT) AS partition")
     .write.format("kafkalite").option("kafkalite.bootstrap.servers", bootstrap)
     .option("topic", out).mode("append").save())
    written = read_all(bootstrap, out)
    assert len(written) == 300
    assert sorted(((k, v, h) for _p, _o, k, v, h in written), key=repr) == \
        sorted(((k, v, h) for _p, _o, k, v, _ts, h in acked), key=repr)
    # every record went to the partition its row asked for
    by_value = {v: o for p, o, k, v, _ts, h in acked}
    assert all(p == by_value[v] % 2 for p, _o, _k, v, _h in written)


def test_writer_topic_column(spark, bootstrap):
    a, b = unique_topic("col-a"), unique_topic("col-b")
    create_topic(bootstrap, a, partitions=1)
    create_topic(bootstrap, b, partitions=1)
    df = spark.createDataFrame([(a, "1"), (b, "2"), (a, "3")], "topic string, value string")
    # PySpark refuses the default save mode (ErrorIfExists) for Python data sources: append
    df.write.format("kafkalite").option("kafkalite.bootstrap.servers", bootstrap) \
        .mode("append").save()
    # (rows of different Spark partitions are written by different tasks: no order)
    assert sorted(v for _p, _o, _k, v, _h in read_all(bootstrap, a)) == [b"1", b"3"]
    assert [v for _p, _o, _k, v, _h in read_all(bootstrap, b)] == [b"2"]


def test_writer_refuses_overwrite_and_missing_columns(spark, bootstrap):
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    writer = df.write.format("kafkalite").option("kafkalite.bootstrap.servers", bootstrap)
    with pytest.raises(Exception, match="topic: no 'topic' option and no 'topic' column"):
        writer.mode("append").save()
    with pytest.raises(Exception, match="value: the DataFrame needs a 'value' column"):
        (df.select("key").write.format("kafkalite")
         .option("kafkalite.bootstrap.servers", bootstrap).option("topic", "t")
         .mode("append").save())
    with pytest.raises(Exception, match="save mode Overwrite is not allowed"):
        writer.option("topic", "t").mode("overwrite").save()


# --- bad options -------------------------------------------------------------------------------
def test_unknown_topic_names_the_option(spark, bootstrap):
    with pytest.raises(Exception, match="subscribe: unknown topic 'no-such-topic'"):
        reader(spark, bootstrap, subscribe="no-such-topic").count()
    with pytest.raises(Exception, match="assign: unknown topic: 'no-such-topic'"):
        reader(spark, bootstrap, assign='{"no-such-topic": [0]}').count()


def test_two_subscription_options_name_them(spark, bootstrap, topic_data):
    topic, _ = topic_data
    with pytest.raises(Exception, match="only one of 'assign', 'subscribe' or "
                                        "'subscribePattern' may be given, got 'subscribe' and "
                                        "'subscribePattern'"):
        reader(spark, bootstrap, subscribe=topic, subscribePattern=".*")
    with pytest.raises(Exception, match="subscribe: one of 'assign', 'subscribe' or "
                                        "'subscribePattern' is required"):
        reader(spark, bootstrap)


def test_malformed_offsets_json_names_the_option(spark, bootstrap, topic_data):
    topic, _ = topic_data
    with pytest.raises(Exception, match="startingOffsets: malformed JSON"):
        reader(spark, bootstrap, subscribe=topic, startingOffsets='{"x": {"0": 1')
    with pytest.raises(Exception, match="endingOffsets: malformed JSON"):
        reader(spark, bootstrap, subscribe=topic, endingOffsets="{oops}")
    with pytest.raises(Exception, match="assign: malformed JSON"):
        reader(spark, bootstrap, assign="{")
    with pytest.raises(Exception, match="endingOffsets: offset 100000 of partition"):
        reader(spark, bootstrap, subscribe=topic,
               endingOffsets=json.dumps({topic: {"0": 100000}})).count()


def test_explicit_registration(spark, bootstrap, topic_data):
    import spark_integration

    spark_integration.register(spark)
    topic, _ = topic_data
    assert reader(spark, bootstrap, subscribe=topic).count() == 300
