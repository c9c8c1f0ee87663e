"""A broker killed (kill -9) in the middle of a Spark job through the "kafkalite" data source.

The job has many small tasks (local[2] runs two at a time), and the leader of a partition is
killed once some tasks have finished and others have not, so the remaining tasks meet the dead
broker (refused connections, then metadata that still names it until the controller notices,
then the new leader). Replication factor 3, min.insync.replicas 2.

- read: the job either fails with an error that says what went wrong, or returns every record
  of the topic exactly once (each (partition, offset) once, with the value produced there);
- write: the job succeeds (the sink retries through the failover) and every row is in the topic
  afterwards (at least once: the sink is at-least-once).
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from sparktools import create_topic, produce, read_all, rows_as_tuples, unique_topic

from kafkalite.local.cluster import wait_until

pytestmark = pytest.mark.spark

# a kill -9 is noticed when the broker's ZooKeeper session expires
CLUSTER_OVERRIDES = {"zookeeper.session.timeout.ms": 3000,
                     "zookeeper.connection.timeout.ms": 15000}
TASKS = 40


class LeaderKiller(threading.Thread):
    """Watches the Spark jobs of ``group`` and, once some of their tasks finished and some did
    not, kill -9s the leader of partition 0 of ``topic``. The action itself runs on the test's
    own thread (under ``spark.sparkContext.setJobGroup(group, ...)``)."""

    def __init__(self, spark, cluster, group: str, topic: str):
        super().__init__(daemon=True)
        self.spark, self.cluster, self.group, self.topic = spark, cluster, group, topic
        self.victim: int | None = None
        self.killed_at: tuple[int, int] | None = None     # (tasks completed, all tasks)
        self.error: BaseException | None = None
        self._job_over = threading.Event()

    def progress(self) -> tuple[int, int] | None:
        """(completed tasks, all tasks) of the group's stages, None before there is one."""
        tracker = self.spark.sparkContext.statusTracker()
        done = total = 0
        for job_id in tracker.getJobIdsForGroup(self.group):
            job = tracker.getJobInfo(job_id)
            for stage_id in (job.stageIds if job else ()):
                stage = tracker.getStageInfo(stage_id)
                if stage is not None:
                    done += stage.numCompletedTasks
                    total += stage.numTasks
        return (done, total) if total else None

    def run(self) -> None:
        try:
            at = wait_until(lambda: self._job_over.is_set() or
                            (lambda p: p if p is not None and 0 < p[0] < p[1] else None)(
                                self.progress()), 240, "the job part-way through its tasks")
            if self._job_over.is_set():
                return
            self.victim = self.cluster.wait_for_leader(self.topic, 0)
            self.cluster.kill(self.victim)
            self.killed_at = at
        except BaseException as exc:  # noqa: BLE001 - reported by job_over()
            self.error = exc

    def job_over(self) -> None:
        """The action returned or raised: stop watching; the kill must have happened."""
        self._job_over.set()
        self.join(60)
        assert self.error is None, f"watching the job failed: {self.error}"
        assert self.victim is not None, \
            "the job ended before a broker could be killed in its middle: nothing was tested"


def run_with_a_kill(spark, cluster, group: str, topic: str, action):
    """``(result, error, killer)`` of ``action()`` run while a LeaderKiller strikes."""
    spark.sparkContext.setJobGroup(group, f"{group}: a broker is killed part-way")
    killer = LeaderKiller(spark, cluster, group, topic)
    killer.start()
    result = error = None
    try:
        result = action()
    except Exception as exc:  # noqa: BLE001 - the test judges it
        error = exc
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    killer.job_over()
    return result, error, killer


def restore(cluster, victim: int, topic: str, partitions: int) -> None:
    cluster.restart(victim)
    wait_until(lambda: all(victim in cluster.partition_metadata(topic, p).isr
                           for p in range(partitions)), 60, f"broker {victim} back in sync")


def test_broker_killed_during_a_read(spark, spark_cluster, bootstrap):
    topic = create_topic(bootstrap, unique_topic("kill-read"), partitions=3,
                         configs={"min.insync.replicas": "2"})
    acked = produce(bootstrap, topic, [{"value": b"r-%d" % i} for i in range(6000)])
    df = (spark.read.format("kafkalite").option("kafkalite.bootstrap.servers", bootstrap)
          .option("subscribe", topic).option("minPartitions", str(TASKS)).load())
    result, error, killer = run_with_a_kill(
        spark, spark_cluster, "kill-during-read", topic,
        lambda: df.select("partition", "offset", "key", "value").collect())
    victim, at = killer.victim, killer.killed_at
    try:
        if error is not None:
            message = str(error)
            print(f"\nread: broker {victim} killed at {at[0]}/{at[1]} tasks; the read failed: "
                  f"{message[:300]}")
            assert topic in message or "leader" in message, \
                f"the read failed without saying which partition or why: {message[:2000]}"
            return
        rows = rows_as_tuples(result)
        counts = Counter((p, o) for p, o, _k, _v in rows)
        print(f"\nread: broker {victim} killed at {at[0]}/{at[1]} tasks; the read returned "
              f"{len(rows)} rows")
        assert not [k for k, n in counts.items() if n > 1], "offsets read more than once"
        assert rows == sorted((p, o, k, v) for p, o, k, v, _ts, _h in acked)
    finally:
        restore(spark_cluster, victim, topic, 3)


def test_broker_killed_during_a_write(spark, spark_cluster, bootstrap):
    topic = create_topic(bootstrap, unique_topic("kill-write"), partitions=3,
                         configs={"min.insync.replicas": "2"})
    rows = 6000
    df = spark.range(0, rows, numPartitions=TASKS).selectExpr(
        "CAST(id % 97 AS STRING) AS key", "CONCAT('w-', id) AS value")
    writer = (df.write.format("kafkalite").option("kafkalite.bootstrap.servers", bootstrap)
              .option("topic", topic).mode("append"))
    _result, error, killer = run_with_a_kill(spark, spark_cluster, "kill-during-write", topic,
                                             writer.save)
    victim, at = killer.victim, killer.killed_at
    try:
        assert error is None, f"the write failed after broker {victim} was killed: " \
                              f"{str(error)[:2000]}"
        live = ",".join(b.address for b in spark_cluster.live_brokers())
        # a new leader learns the high watermark from its followers' next fetches: wait until
        # every row is visible (or give up and report what is missing)
        stored: Counter = Counter()

        def every_row_visible() -> bool:
            stored.clear()
            stored.update(v for _p, _o, _k, v, _h in read_all(live, topic))
            return all(stored[b"w-%d" % i] for i in range(rows))
        try:
            wait_until(every_row_visible, 30, "every row of the write visible")
        except Exception:  # noqa: BLE001 - the assertion below says what is missing
            pass
        missing = [i for i in range(rows) if stored[b"w-%d" % i] == 0]
        print(f"\nwrite: broker {victim} killed at {at[0]}/{at[1]} tasks; {sum(stored.values())} "
              f"records stored for {rows} rows ({sum(n - 1 for n in stored.values())} repeats)")
        assert not missing, f"{len(missing)} rows of a successful write are missing: " \
                            f"{missing[:10]}"
        assert set(stored) == {b"w-%d" % i for i in range(rows)}
    finally:
        restore(spark_cluster, victim, topic, 3)
