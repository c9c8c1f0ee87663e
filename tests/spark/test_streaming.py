"""Streaming reads and writes through the "kafkalite" data source (local[2] Spark, 3 brokers)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from sparktools import create_topic, produce, read_all, simple_records, unique_topic

from kafkalite.client import Consumer, TopicPartition

pytestmark = pytest.mark.spark

# retention runs often, for the data-loss test
CLUSTER_OVERRIDES = {"log.retention.check.interval.ms": 300}

HERE = os.path.dirname(os.path.abspath(__file__))


def stream(spark, bootstrap, **options):
    r = spark.readStream.format("kafkalite").option("kafkalite.bootstrap.servers", bootstrap)
    for name, value in {"startingOffsets": "earliest", **options}.items():
        r = r.option(name, value)
    return r.load()


def run_to_parquet(df, out: str, checkpoint: str, timeout_s: float = 120):
    """One availableNow run into a Parquet sink; returns the query's progress list."""
    query = (df.selectExpr("topic", "partition", "offset", "CAST(value AS STRING) AS value")
             .writeStream.format("parquet").option("path", out)
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(timeout_s), "the availableNow run did not finish"
    finally:
        if query.isActive:
            query.stop()
    return query.recentProgress


def parquet_rows(spark, path: str) -> list[tuple]:
    return sorted((r.topic, r.partition, r.offset, r.value)
                  for r in spark.read.parquet(path).collect())


def expected(topic: str, acked) -> list[tuple]:
    return sorted((topic, p, o, v.decode()) for p, o, _k, v, _ts, _h in acked)


def test_available_now_reads_everything_then_the_next_run_reads_what_came_later(
        spark, bootstrap, tmp_path):
    topic = create_topic(bootstrap, unique_topic("avail"), partitions=3)
    first = produce(bootstrap, topic, simple_records(150))
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    progress = run_to_parquet(stream(spark, bootstrap, subscribe=topic), out, checkpoint)
    assert sum(p["numInputRows"] for p in progress) == 150
    assert parquet_rows(spark, out) == expected(topic, first)

    later = produce(bootstrap, topic, simple_records(60, start=150))
    progress = run_to_parquet(stream(spark, bootstrap, subscribe=topic), out, checkpoint)
    assert sum(p["numInputRows"] for p in progress) == 60
    assert parquet_rows(spark, out) == expected(topic, first + later)   # each exactly once
    # the offsets Spark checkpointed are plain JSON in Kafka's format
    assert json.loads(progress[-1]["sources"][0]["endOffset"]) == {
        topic: {str(p): off for p, off in sorted(_ends(bootstrap, topic).items())}}


def _ends(bootstrap, topic):
    with Consumer(bootstrap_servers=bootstrap, enable_auto_commit=False) as consumer:
        tps = [TopicPartition(topic, p) for p in range(3)]
        return {tp.partition: off for tp, off in consumer.end_offsets(tps).items()}


def test_max_offsets_per_trigger_limits_each_micro_batch(spark, bootstrap, tmp_path):
    topic = create_topic(bootstrap, unique_topic("limit"), partitions=3)
    acked = produce(bootstrap, topic, simple_records(200))
    out = str(tmp_path / "out")
    progress = run_to_parquet(stream(spark, bootstrap, subscribe=topic,
                                     maxOffsetsPerTrigger="70"),
                              out, str(tmp_path / "checkpoint"))
    sizes = [p["numInputRows"] for p in progress if p["numInputRows"]]
    assert sizes == [70, 70, 60]
    assert parquet_rows(spark, out) == expected(topic, acked)


def test_new_partitions_are_read_from_the_earliest_offset(spark, bootstrap, tmp_path):
    prefix = unique_topic("grow")
    a = create_topic(bootstrap, f"{prefix}-a", partitions=1)
    acked_a = produce(bootstrap, a, simple_records(10))
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    def df():
        return stream(spark, bootstrap, subscribePattern=f"{prefix}-.*")

    run_to_parquet(df(), out, checkpoint)
    assert parquet_rows(spark, out) == expected(a, acked_a)
    # a new topic (two new partitions) matching the pattern, with data produced before the run
    b = create_topic(bootstrap, f"{prefix}-b", partitions=2)
    acked_b = produce(bootstrap, b, simple_records(15, prefix="b"))
    acked_a += produce(bootstrap, a, simple_records(5, start=10))
    run_to_parquet(df(), out, checkpoint)
    assert parquet_rows(spark, out) == sorted(expected(a, acked_a) + expected(b, acked_b))


def test_stream_writer_round_trip(spark, bootstrap, tmp_path):
    source = create_topic(bootstrap, unique_topic("sw-in"), partitions=3)
    sink = create_topic(bootstrap, unique_topic("sw-out"), partitions=2)
    acked = produce(bootstrap, source, simple_records(120))
    query = (stream(spark, bootstrap, subscribe=source)
             .selectExpr("key", "upper(CAST(value AS STRING)) AS value")
             .writeStream.format("kafkalite")
             .option("kafkalite.bootstrap.servers", bootstrap).option("topic", sink)
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(120)
    written = read_all(bootstrap, sink)
    assert sorted((k, v) for _p, _o, k, v, _h in written) == \
        sorted((k, v.upper()) for _p, _o, k, v, _ts, _h in acked)


def test_query_killed_mid_stream_restarts_from_its_checkpoint_exactly_once(
        spark, bootstrap, tmp_path):
    topic = create_topic(bootstrap, unique_topic("kill"), partitions=3)
    acked = produce(bootstrap, topic, simple_records(240))
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    job = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "stream_job.py"), bootstrap, topic, out, checkpoint,
         "40"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    offsets_dir, commits_dir = os.path.join(checkpoint, "offsets"), os.path.join(checkpoint,
                                                                                "commits")
    killed_in = None
    try:
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline and job.poll() is None:
            planned = {int(n) for n in _listdir(offsets_dir) if n.isdigit()}
            committed = {int(n) for n in _listdir(commits_dir) if n.isdigit()}
            # kill -9 while a micro-batch is planned but not committed, after two committed
            in_flight = planned - committed
            if len(committed) >= 2 and in_flight:
                os.killpg(job.pid, signal.SIGKILL)
                killed_in = max(in_flight)
                break
            time.sleep(0.01)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
        output = job.communicate()[0].decode(errors="replace")
    assert killed_in is not None, f"the streaming job never got going:\n{output[-3000:]}"
    assert len(spark.read.parquet(out).collect()) < 240
    # restart from the checkpoint: the batch that was cut short runs again with the same
    # offsets (from Spark's offset log), then the rest in one batch
    progress = run_to_parquet(stream(spark, bootstrap, subscribe=topic), out, checkpoint)
    assert progress[0]["batchId"] == killed_in
    assert progress[0]["numInputRows"] == 40
    rows = parquet_rows(spark, out)
    assert len(rows) == len(set(rows)) == 240
    assert rows == expected(topic, acked)


def _listdir(path):
    try:
        return os.listdir(path)
    except FileNotFoundError:
        return []


def _wait_for_log_start(bootstrap, tp, above, timeout_s=60):
    with Consumer(bootstrap_servers=bootstrap, enable_auto_commit=False) as consumer:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            start = consumer.beginning_offsets([tp])[tp]
            if start > above:
                return start
            time.sleep(0.2)
    raise AssertionError(f"retention did not delete {tp} below offset {above}")


def test_offsets_lost_to_retention_fail_or_are_skipped(spark, bootstrap, tmp_path):
    topic = create_topic(bootstrap, unique_topic("loss"), partitions=1, replication_factor=1,
                         configs={"segment.bytes": "1024", "retention.bytes": "3000"})
    tp = TopicPartition(topic, 0)
    produce(bootstrap, topic, simple_records(20))
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    run_to_parquet(stream(spark, bootstrap, subscribe=topic), out, checkpoint)
    assert len(parquet_rows(spark, out)) == 20
    # while the query is not running, more records come and retention deletes unread ones
    for start in range(20, 420, 20):
        produce(bootstrap, topic, simple_records(20, start=start), linger_ms=0)
    log_start = _wait_for_log_start(bootstrap, tp, above=20)

    with pytest.raises(Exception) as info:
        run_to_parquet(stream(spark, bootstrap, subscribe=topic), out, checkpoint)
    message = str(info.value)
    assert f"Partition {topic}-0" in message and "failOnDataLoss" in message

    # restarted with failOnDataLoss=false, the failed batch runs again and skips the lost
    # offsets (with a warning)
    run_to_parquet(stream(spark, bootstrap, subscribe=topic, failOnDataLoss="false"), out,
                   checkpoint)
    offsets = [o for _t, _p, o, _v in parquet_rows(spark, out)]
    assert offsets[:20] == list(range(20))
    resumed = offsets[20:]
    assert resumed and resumed[0] >= log_start
    assert resumed == list(range(resumed[0], 420))


def test_unknown_topic_fails_the_stream_naming_the_option(spark, bootstrap, tmp_path):
    with pytest.raises(Exception, match="subscribe: unknown topic 'no-such-stream-topic'"):
        run_to_parquet(stream(spark, bootstrap, subscribe="no-such-stream-topic"),
                       str(tmp_path / "out"), str(tmp_path / "checkpoint"))
    with pytest.raises(Exception, match="endingOffsets: is for batch queries only"):
        run_to_parquet(stream(spark, bootstrap, subscribe="x", endingOffsets="latest"),
                       str(tmp_path / "out2"), str(tmp_path / "checkpoint2"))
