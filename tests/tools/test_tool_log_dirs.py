"""DescribeLogDirs from the outside: Apache Kafka 2.8.2's kafka-log-dirs tool and kafka-python's
describe_log_dirs, against kafkalite and the Apache Kafka oracle alike (same report, the paths
and sizes being each cluster's own), and kafkalite's ``log-dirs`` subcommand printing what
Kafka's tool prints. (confluent-kafka 2.16 has no describe_log_dirs.)"""

from __future__ import annotations

import json
import os

import pytest
from kafka.admin import KafkaAdminClient
from kafka_tool_checks import KAFKA, KAFKALITE, produce, tool, unique, wait_for_leaders

from kafkalite.cli.main import main

pytestmark = [pytest.mark.integration]

ORACLE_FIRST = (KAFKA, KAFKALITE)


def _segment_size(cluster, broker_id: int, topic: str) -> int:
    return os.path.getsize(os.path.join(cluster.brokers[broker_id].log_dir, f"{topic}-0",
                                        "00000000000000000000.log"))


def _topic_on_brokers_1_and_2(cluster, topic: str) -> None:
    bs = cluster.bootstrap_servers
    tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", topic,
         "--replica-assignment", "1:2")
    wait_for_leaders(bs, topic, 1)
    produce(bs, topic, [(None, b"x" * 100) for _ in range(3)])


def _report(out: str) -> dict:
    lines = out.strip().splitlines()
    assert lines[0] == "Querying brokers for log directories information", out
    return json.loads(lines[-1])


def test_log_dirs_describe(kafka_systems):
    topic = unique("tu-dirs")
    for name in ORACLE_FIRST:
        cluster = kafka_systems[name]
        bs = cluster.bootstrap_servers
        _topic_on_brokers_1_and_2(cluster, topic)
        out = tool("kafka-log-dirs", "--bootstrap-server", bs, "--describe",
                   "--topic-list", topic).stdout
        assert "Received log directory information from brokers 1,2,3" in out, out
        report = _report(out)
        dirs = {b["broker"]: b["logDirs"] for b in report["brokers"]}
        assert sorted(dirs) == [1, 2, 3]
        for broker_id, logdirs in dirs.items():
            assert [d["logDir"] for d in logdirs] == [cluster.brokers[broker_id].log_dir]
            assert all(d["error"] is None for d in logdirs)
            partitions = logdirs[0]["partitions"]
            if broker_id == 3:
                assert partitions == []
                continue
            assert partitions == [{"partition": f"{topic}-0",
                                   "size": _segment_size(cluster, broker_id, topic),
                                   "offsetLag": 0, "isFuture": False}], (name, partitions)


def _shape(report: dict, cluster) -> dict:
    """The report with each broker's own log dir as ``DIR``: what two clusters share."""
    return {"version": report["version"], "brokers": [
        {"broker": b["broker"], "logDirs": [
            dict(d, logDir="DIR" if d["logDir"] == cluster.brokers[b["broker"]].log_dir
                 else d["logDir"]) for d in b["logDirs"]]}
        for b in report["brokers"]]}


def test_log_dirs_of_some_brokers_the_same_on_both(kafka_systems):
    """--broker-list 2,3: only those brokers, in that order; with sizes the same on both
    systems (the same three records in one v2 batch)."""
    topic = unique("tu-dirs-some")
    shapes = {}
    for name in ORACLE_FIRST:
        cluster = kafka_systems[name]
        _topic_on_brokers_1_and_2(cluster, topic)
        out = tool("kafka-log-dirs", "--bootstrap-server", cluster.bootstrap_servers,
                   "--describe", "--broker-list", "2,3", "--topic-list", topic).stdout
        assert "Received log directory information from brokers 2,3" in out, out
        shapes[name] = _shape(_report(out), cluster)
    assert [b["broker"] for b in shapes[KAFKA]["brokers"]] == [2, 3]
    assert shapes[KAFKALITE] == shapes[KAFKA]


def test_kafkalite_log_dirs_prints_what_kafkas_tool_prints(kafka_systems, capsys):
    """Line for line, the partitions in the order Kafka's tool prints them (its Scala map's)."""
    cluster = kafka_systems[KAFKALITE]
    topic = unique("tu-dirs-cli")
    bs = cluster.bootstrap_servers
    tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", topic,
         "--partitions", "8", "--replication-factor", "2")
    wait_for_leaders(bs, topic, 8)
    for partition in range(8):
        produce(bs, topic, [(None, b"y" * (10 * partition + 1))], partition=partition)
    for args in (["--topic-list", topic], ["--broker-list", "1", "--topic-list", topic]):
        kafkas = tool("kafka-log-dirs", "--bootstrap-server", bs, "--describe", *args).stdout
        code = main(["log-dirs", "--describe", "--bootstrap-server", bs, *args])
        ours, err = capsys.readouterr()
        assert code == 0, err
        assert ours == kafkas
    code = main(["log-dirs", "--bootstrap-server", bs])
    _, err = capsys.readouterr()
    assert code == 1 and 'Missing required argument "[describe]"' in err


def _kafka_python_dirs(bootstrap: str, topic: str) -> dict:
    client = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="log-dirs-test")
    try:
        answers = client.describe_log_dirs(topic_partitions={topic: [0, 1]})
    finally:
        client.close()
    return {a["broker"]: a["log_dirs"] for a in answers}


def test_kafka_python_describe_log_dirs_the_same_on_both(kafka_systems):
    """kafka-python's describe_log_dirs of two partitions (one exists): each broker's one dir,
    no error, the existing partition where it lives, and every topic of the dir listed, those
    not asked with no partitions (Kafka 2.8's answer)."""
    topic = unique("tu-dirs-kp")
    seen = {}
    for name in ORACLE_FIRST:
        cluster = kafka_systems[name]
        _topic_on_brokers_1_and_2(cluster, topic)
        dirs = _kafka_python_dirs(cluster.bootstrap_servers, topic)
        assert sorted(dirs) == [1, 2, 3]
        seen[name] = {}
        for broker_id, results in dirs.items():
            [result] = results
            assert result["log_dir"] == cluster.brokers[broker_id].log_dir
            assert result["error_code"] == 0
            ours = [(t["name"], [(p["partition_index"], p["partition_size"], p["offset_lag"],
                                  p["is_future_key"]) for p in t["partitions"]])
                    for t in result["topics"] if t["name"] == topic]
            others = [t for t in result["topics"] if t["name"] != topic]
            assert all(t["partitions"] == [] for t in others), (name, others)
            seen[name][broker_id] = ours
    for name, dirs in seen.items():
        expected = [(topic, [(0, _segment_size(kafka_systems[name], 1, topic), 0, False)])]
        assert dirs == {1: expected, 2: expected, 3: []}, name
