"""AlterReplicaLogDirs from the outside: a replica moved between the two data dirs of a one-broker
cluster, kafkalite and the Apache Kafka 2.8.2 oracle alike, while records are produced; every
record stays readable (confluent-kafka reads them back) and DescribeLogDirs (kafka-python, and
Kafka's kafka-log-dirs tool) shows the replica in its new dir. kafka-python drives the move
(alter_replica_log_dirs); the per-partition errors of a bad request are compared too."""

from __future__ import annotations

import json
import os

import pytest
from kafka import TopicPartitionReplica
from kafka.admin import KafkaAdminClient
from kafka_tool_checks import KAFKA, KAFKALITE, consume, produce, tool, unique, wait_for_leaders

from kafkalite.local.cluster import wait_until
from kafkalite.testing.oracle_fixtures import serve_cluster, session_chroot

pytestmark = [pytest.mark.integration]

ORACLE_FIRST = (KAFKA, KAFKALITE)


def _two_dirs(workdir: str) -> str:
    return ",".join(os.path.join(workdir, name) for name in ("dir-a", "dir-b"))


@pytest.fixture(scope="module")
def two_dir_kafkalite(request, zookeeper, tmp_path_factory):
    from kafkalite.local.cluster import LocalCluster

    workdir = str(tmp_path_factory.mktemp("kafkalite-two-dirs"))
    chroot = session_chroot(zookeeper, "kl-two-dirs")
    cluster = LocalCluster(f"{zookeeper.connect_string}{chroot}", 1, workdir=workdir,
                           overrides={"log.dirs": _two_dirs(workdir), "num.partitions": 1})
    cluster.log_dirs = _two_dirs(workdir).split(",")
    yield from serve_cluster(request, cluster)


@pytest.fixture(scope="module")
def two_dir_kafka(request, zookeeper, tmp_path_factory):
    from kafkalite.testing.apache_kafka import ApacheKafkaCluster

    workdir = str(tmp_path_factory.mktemp("kafka-two-dirs"))
    chroot = session_chroot(zookeeper, "kafka-two-dirs")
    cluster = ApacheKafkaCluster(f"{zookeeper.connect_string}{chroot}", 1, workdir=workdir,
                                 overrides={"log.dirs": _two_dirs(workdir), "num.partitions": 1})
    cluster.log_dirs = _two_dirs(workdir).split(",")
    yield from serve_cluster(request, cluster)


@pytest.fixture(scope="module")
def two_dir_systems(two_dir_kafka, two_dir_kafkalite):
    return {KAFKA: two_dir_kafka, KAFKALITE: two_dir_kafkalite}


def _admin(bootstrap: str) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap, client_id="alter-log-dirs-test")


def _where(bootstrap: str, topic: str) -> dict[str, list[tuple[int, bool]]]:
    """``{log dir: [(partition, is_future)]}`` of ``topic`` on broker 1 (DescribeLogDirs)."""
    admin = _admin(bootstrap)
    try:
        [answer] = admin.describe_log_dirs(topic_partitions={topic: [0]}, brokers=[1])
    finally:
        admin.close()
    return {d["log_dir"]: [(p["partition_index"], p["is_future_key"])
                           for t in d["topics"] if t["name"] == topic for p in t["partitions"]]
            for d in answer["log_dirs"]}


def _alter(bootstrap: str, topic: str, partition: int, path: str) -> str:
    admin = _admin(bootstrap)
    try:
        answer = admin.alter_replica_log_dirs({TopicPartitionReplica(topic, partition, 1): path})
    finally:
        admin.close()
    [(replica, error)] = answer.items()
    assert (replica.topic, replica.partition, replica.broker_id) == (topic, partition, 1)
    return error.__name__


def test_a_replica_moves_to_the_other_dir_and_keeps_every_record(two_dir_systems):
    topic = unique("ta-move")
    records = [(b"k%d" % i, b"v%d-" % i + b"x" * 200) for i in range(2000)]
    outcome = {}
    for name in ORACLE_FIRST:
        cluster = two_dir_systems[name]
        bs = cluster.bootstrap_servers
        tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", topic,
             "--partitions", "1", "--replication-factor", "1")
        wait_for_leaders(bs, topic, 1)
        produce(bs, topic, records[:1500])
        before = _where(bs, topic)
        [source] = [d for d, ps in before.items() if ps == [(0, False)]]
        [dest] = [d for d in cluster.log_dirs if d != source]
        assert _alter(bs, topic, 0, dest) == "NoError"
        produce(bs, topic, records[1500:])            # the replica serves during the move
        wait_until(lambda: _where(bs, topic) == {source: [], dest: [(0, False)]}, 60,
                   f"{topic}-0 to move to {dest}", interval_s=0.2)
        got = consume(bs, topic, len(records), partitions=1)
        assert [(key, value) for _, _, key, value in got] == records
        assert not os.path.exists(os.path.join(source, f"{topic}-0"))
        report = json.loads(tool("kafka-log-dirs", "--bootstrap-server", bs, "--describe",
                                 "--topic-list", topic).stdout.strip().splitlines()[-1])
        [broker] = report["brokers"]
        outcome[name] = sorted(
            (d["logDir"] == dest, d["error"], [(p["partition"], p["offsetLag"], p["isFuture"])
                                               for p in d["partitions"]])
            for d in broker["logDirs"])
    assert outcome[KAFKA] == [(False, None, []), (True, None, [(f"{topic}-0", 0, False)])]
    assert outcome[KAFKALITE] == outcome[KAFKA]


def test_alter_replica_log_dirs_errors_as_kafka(two_dir_systems):
    """A dir not in log.dirs: LogDirNotFoundError; a partition that does not exist yet:
    UnknownTopicOrPartitionError, and the dir is remembered: the replica is created there; the
    dir it is already in: NoError and nothing moves."""
    topic = unique("ta-errors")
    seen = {}
    for name in ORACLE_FIRST:
        cluster = two_dir_systems[name]
        bs = cluster.bootstrap_servers
        dest = cluster.log_dirs[1]
        errors = [_alter(bs, topic, 0, "/no/such/dir"), _alter(bs, topic, 0, dest)]
        tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", topic,
             "--partitions", "1", "--replication-factor", "1")
        wait_for_leaders(bs, topic, 1)
        placed = _where(bs, topic)
        errors.append(_alter(bs, topic, 0, dest))
        seen[name] = (errors, placed == {cluster.log_dirs[0]: [], dest: [(0, False)]},
                      _where(bs, topic) == placed)
    assert seen[KAFKA] == (["LogDirNotFoundError", "UnknownTopicOrPartitionError", "NoError"],
                           True, True)
    assert seen[KAFKALITE] == seen[KAFKA]


def test_reassign_partitions_moves_a_replica_between_dirs(two_dir_systems, tmp_path):
    """kafka-reassign-partitions --bootstrap-server with a ``log_dirs`` field: the tool sends
    AlterPartitionReassignments (same replicas) and AlterReplicaLogDirs, then --verify reads
    DescribeLogDirs until the replica is in its dir; the same output on both systems."""
    topic = unique("ta-reassign")
    records = [(None, b"r%d" % i) for i in range(500)]
    outputs = {}
    for name in ORACLE_FIRST:
        cluster = two_dir_systems[name]
        bs = cluster.bootstrap_servers
        tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", topic,
             "--partitions", "1", "--replication-factor", "1")
        wait_for_leaders(bs, topic, 1)
        produce(bs, topic, records)
        [source] = [d for d, ps in _where(bs, topic).items() if ps]
        [dest] = [d for d in cluster.log_dirs if d != source]
        plan = tmp_path / f"{name}.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": topic, "partition": 0, "replicas": [1], "log_dirs": [dest]}]}))
        executed = tool("kafka-reassign-partitions", "--bootstrap-server", bs, "--execute",
                        "--reassignment-json-file", str(plan)).stdout
        verified = wait_until(
            lambda: (lambda out: out if "is still in progress" not in out else None)(
                tool("kafka-reassign-partitions", "--bootstrap-server", bs, "--verify",
                     "--reassignment-json-file", str(plan)).stdout),
            60, f"{topic}-0 to reach {dest}", interval_s=0.5)
        assert _where(bs, topic) == {source: [], dest: [(0, False)]}
        got = consume(bs, topic, len(records), partitions=1)
        assert [(key, value) for _, _, key, value in got] == records
        outputs[name] = [executed.split("\n\n")[-1].replace(dest, "DEST"),
                         verified.replace(dest, "DEST")]
    assert outputs[KAFKALITE] == outputs[KAFKA]
