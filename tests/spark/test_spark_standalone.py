"""The payments pipeline on a Spark standalone cluster: a master and two workers started as their
own processes with pyspark's ``spark-class`` (spark_integration.standalone), against 3 kafkalite
brokers (replication factor 3, min.insync.replicas 2).

- the pipeline's window totals equal a plain-Python computation of the input as confluent-kafka
  reads it back, and the executors of BOTH workers ran tasks: each partition of a kafkalite read
  says which worker's executor read it (an executor's working directory is
  ``<worker work dir>/<app id>/<executor id>``), and the driver's REST API counts completed tasks
  per executor, mapped to workers by each worker's own JSON;
- a streaming run of the pipeline (checkpointed, exactly-once Parquet sink) with one worker
  killed -9 (with its executor: a lost host) once a micro-batch has committed and while input is
  still arriving: the query goes on with the other worker (or, if it fails, is restarted from its
  checkpoint), and the totals are exactly the plain-Python ones.
"""

from __future__ import annotations

import os
import time

import pytest
from sparktools import consume_with_confluent, unique_topic

from kafkalite.local.cluster import wait_until
from kafkalite.local.ports import free_port
from spark_integration.pipelines.payments import (
    Payment,
    PipelineConfig,
    ensure_topics,
    generate_payments,
    produce_payments,
    read_parquet_totals,
    reference_totals,
    run_pipeline,
    start_queries,
)
from spark_integration.session import spark_unavailable_reason
from spark_integration.standalone import executor_tasks

# a master, two workers and their executors are JVMs: under load the module needs time
pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

CLUSTER_OVERRIDES = {"min.insync.replicas": 2, "default.replication.factor": 3}
MINUTE = 60_000
# a window boundary an hour ago (well inside retention)
START_MS = int(time.time()) // 60 * 60_000 - 60 * MINUTE


@pytest.fixture(scope="module")
def standalone(request, tmp_path_factory):
    """A master and two workers (1 core, 1g each), each its own process and work dir."""
    reason = spark_unavailable_reason()
    if reason:
        pytest.fail(f"the standalone-cluster tests need Spark: {reason}")
    from spark_integration.standalone import StandaloneCluster

    cluster = StandaloneCluster(str(tmp_path_factory.mktemp("spark-standalone")), workers=2)
    cluster.start()
    yield cluster
    if request.session.testsfailed:
        print(cluster.describe_logs())
    cluster.stop()


@pytest.fixture(scope="module")
def cluster_spark(standalone):
    """The driver, in this process, on the standalone master; its UI (and REST API) on."""
    from spark_integration.session import spark_session

    session = spark_session("kafkalite-standalone-tests", standalone.master_url, ui=True,
                            log_level="ERROR", conf={"spark.ui.port": free_port(),
                                                     "spark.executor.memory": "512m"})
    yield session
    session.stop()


def _worker_of(path: str, standalone) -> int | None:
    for i, worker in enumerate(standalone.worker_processes):
        if path.startswith(worker.work_dir + os.sep):
            return i
    return None


def _confluent_payments(bootstrap: str, topic: str) -> list[Payment]:
    return [Payment.from_json(m.value()) for m in consume_with_confluent(bootstrap, topic)]


def test_pipeline_on_two_workers_equals_plain_python(cluster_spark, standalone, bootstrap,
                                                     tmp_path):
    spark = cluster_spark
    config = PipelineConfig(bootstrap, input_topic=unique_topic("sa-payments"),
                            output_topic=unique_topic("sa-totals"), output_dir=str(tmp_path),
                            sinks=("parquet",))
    ensure_topics(bootstrap, [config.input_topic], partitions=3, replication_factor=3)
    payments = generate_payments(300, start_ms=START_MS, span_s=360, seed=41)
    payments += payments[7:9]                        # stored twice: counted once
    produce_payments(bootstrap, config.input_topic, payments)

    result = run_pipeline(spark, config, echo=print)
    assert result.input_rows == len(payments)
    read_back = _confluent_payments(bootstrap, config.input_topic)
    assert sorted(read_back, key=lambda p: p.id) == sorted(payments, key=lambda p: p.id)
    reference = reference_totals([read_back], config.window, config.watermark)
    assert reference.closed and not reference.dropped
    assert read_parquet_totals(spark, config.parquet_path) == reference.closed

    # which worker's executor read each part of a kafkalite read (the data source's read and
    # the UDF run in one task, in the executor's working directory)
    from pyspark.sql import functions as F

    where = F.udf(lambda _: os.getcwd(), "string")
    rows = (spark.read.format("kafkalite").option("kafkalite.bootstrap.servers", bootstrap)
            .option("subscribe", config.input_topic).option("minPartitions", "6").load()
            .select("partition", where(F.col("offset")).alias("cwd")).distinct().collect())
    readers = sorted((r.partition, _worker_of(r.cwd, standalone)) for r in rows)
    print(f"\n(kafkalite partition, worker) of each read: {readers}")
    assert {w for _p, w in readers} == {0, 1}, [r.cwd for r in rows]
    assert {p for p, _w in readers} == {0, 1, 2}

    # Spark's own accounting: completed tasks per executor (driver REST), executors per worker
    # (each worker's JSON)
    app = spark.sparkContext.applicationId
    tasks = {i: n for i, (_host, n) in executor_tasks(spark).items()}
    per_worker = {i: sum(tasks.get(str(e["id"]), 0)
                         for e in standalone.worker_state(i).get("executors", [])
                         if e.get("appid") == app)
                  for i in range(2)}
    print(f"completed tasks per worker: {per_worker} (per executor: {tasks})")
    assert all(per_worker[i] > 0 for i in range(2)), per_worker


def _batch_ids(directory: str) -> set[int]:
    try:
        return {int(n) for n in os.listdir(directory) if n.isdigit()}
    except FileNotFoundError:
        return set()


class QueryStopped(AssertionError):
    pass


def _wait_committed(query, commits: str, count: int, timeout_s: float = 300) -> None:
    """Wait until ``count`` micro-batches have committed (the checkpoint's commits dir)."""
    deadline = time.monotonic() + timeout_s
    while len(_batch_ids(commits)) < count:
        if not query.isActive:
            raise QueryStopped(f"the query stopped before micro-batch {count - 1} committed: "
                               f"{query.exception()}")
        assert time.monotonic() < deadline, \
            f"micro-batch {count - 1} not committed in {timeout_s:.0f} s: {query.lastProgress}"
        time.sleep(0.1)


def test_worker_killed_mid_query_same_exact_totals(cluster_spark, standalone, bootstrap,
                                                   tmp_path):
    spark = cluster_spark
    config = PipelineConfig(bootstrap, input_topic=unique_topic("sa-stream"),
                            output_topic=unique_topic("sa-stream-totals"),
                            output_dir=str(tmp_path), sinks=("parquet",), available_now=False,
                            interval="1 second")
    ensure_topics(bootstrap, [config.input_topic], partitions=3, replication_factor=3)
    payments = generate_payments(480, start_ms=START_MS, span_s=480, seed=43)
    chunks = [payments[i:i + 120] for i in range(0, len(payments), 120)]
    chunks[-1] = chunks[-1] + payments[121:123]      # an at-least-once retry: counted once
    commits = os.path.join(config.checkpoints, "parquet", "commits")

    produce_payments(bootstrap, config.input_topic, chunks[0])
    (query,) = start_queries(spark, config)
    restarts = 0
    killed_after = None
    try:
        for number, chunk in enumerate(chunks[1:], start=1):
            # each chunk after a micro-batch committed: input keeps arriving batch by batch
            try:
                _wait_committed(query, commits, number)
            except QueryStopped as stopped:
                if killed_after is None:
                    raise
                # the kill failed the query: restart it from its checkpoint
                print(f"{stopped}; restarting from the checkpoint")
                (query,) = start_queries(spark, config)
                restarts += 1
                _wait_committed(query, commits, number)
            produce_payments(bootstrap, config.input_topic, chunk)
            if number == 1:
                killed_after = sorted(_batch_ids(commits))
                standalone.kill_worker(0)             # worker 0 with its executor
                print(f"\nworker 0 killed -9 after batches {killed_after} committed")

        reference = reference_totals([_confluent_payments(bootstrap, config.input_topic)],
                                     config.window, config.watermark)
        assert reference.closed and not reference.dropped

        def caught_up():
            nonlocal query, restarts
            if not query.isActive:
                # the query failed: restart it from its checkpoint
                print(f"query stopped ({query.exception()}); restarting from the checkpoint")
                (query,) = start_queries(spark, config)
                restarts += 1
                return False
            return read_parquet_totals(spark, config.parquet_path) == reference.closed
        wait_until(caught_up, 400, "the Parquet totals to reach the plain-Python ones",
                   interval_s=3, on_timeout=lambda: str(query.lastProgress))
    finally:
        if query.isActive:
            query.stop()
    # once stopped: nothing more, nothing twice (read_parquet_totals fails on a repeated key)
    assert read_parquet_totals(spark, config.parquet_path) == reference.closed
    assert killed_after and len(_batch_ids(commits)) > len(killed_after)
    # the worker is gone: the master's JSON says so once it times out; the other one is alive
    alive = [w["id"] for w in standalone.alive_workers()]
    print(f"restarts from the checkpoint: {restarts}; workers ALIVE now: {alive}")
    assert standalone.worker_processes[1].popen.poll() is None
