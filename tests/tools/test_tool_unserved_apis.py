"""Kafka 2.8.2's tools that need an API kafkalite does not serve yet.

Each test is the real test: it runs against the Apache Kafka oracle first (which must pass it)
and then against kafkalite, asserting what Kafka gives. They are strict xfails naming the API, so
the day kafkalite serves it the test passes and strictness turns that into a failure asking for
the marker to go. kafka-features is here too: in Kafka 2.8 no feature is defined, so the tool
never sends UpdateFeatures and describes through ApiVersions, which kafkalite serves: it passes.
"""

from __future__ import annotations

import json

import pytest
from kazoo.client import KazooClient
from kafka_tool_checks import (KAFKA, KAFKALITE, partitions_of, produce, tool, unique,
                               wait_for_leaders, zk_address)

from kafkalite.local.cluster import wait_until

pytestmark = [pytest.mark.integration]

ORACLE_FIRST = (KAFKA, KAFKALITE)


def _issue_23(api: str) -> str:
    return f"needs {api}: issue 23 (the rest of Kafka 2.8's API set)"


def _reorder_replicas(zookeeper, cluster, topic: str, replicas: list[int]) -> None:
    """Ask the controller (through /admin/reassign_partitions, with kazoo) to reorder partition
    0's replicas, so that its leader is no longer its preferred replica."""
    zk = KazooClient(hosts=zk_address(zookeeper, cluster))
    zk.start(timeout=15)
    try:
        zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
            {"topic": topic, "partition": 0, "replicas": replicas}]}).encode(), makepath=True)
    finally:
        zk.stop()
        zk.close()


@pytest.mark.xfail(strict=True, reason=_issue_23("ElectLeaders"))
def test_leader_election_moves_leadership_to_the_preferred_replica(zookeeper, kafka_systems):
    topic = unique("tu-elect")
    outputs = {}
    for name in ORACLE_FIRST:
        cluster = kafka_systems[name]
        bs = cluster.bootstrap_servers
        tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", topic,
             "--replica-assignment", "1:2")
        wait_for_leaders(bs, topic, 1)
        _reorder_replicas(zookeeper, cluster, topic, [2, 1])
        wait_until(lambda: list(partitions_of(bs, topic)[0].replicas) == [2, 1], 60,
                   "replicas reordered to [2, 1]", interval_s=0.2)
        assert partitions_of(bs, topic)[0].leader == 1
        elected = tool("kafka-leader-election", "--bootstrap-server", bs, "--election-type",
                       "preferred", "--topic", topic, "--partition", "0")
        wait_until(lambda: partitions_of(bs, topic)[0].leader == 2, 30, "broker 2 to lead",
                   interval_s=0.2)
        again = tool("kafka-leader-election", "--bootstrap-server", bs, "--election-type",
                     "preferred", "--topic", topic, "--partition", "0")
        outputs[name] = [elected.stdout, again.stdout]
    assert outputs[KAFKA] == [
        f"Successfully completed leader election (PREFERRED) for partitions {topic}-0\n",
        f"Valid replica already elected for partitions {topic}-0\n"]
    assert outputs[KAFKALITE] == outputs[KAFKA]


@pytest.mark.xfail(strict=True, reason=_issue_23(
    "ListPartitionReassignments/AlterPartitionReassignments"))
def test_reassign_partitions_through_bootstrap_server_lists(kafka_systems):
    """kafka-reassign-partitions without --zookeeper asks the brokers (KIP-455)."""
    for name in ORACLE_FIRST:
        got = tool("kafka-reassign-partitions", "--bootstrap-server",
                   kafka_systems[name].bootstrap_servers, "--list")
        assert got.stdout.strip() == "No partition reassignments found.", (name, got.stdout)


def test_features_describe_as_kafka(kafka_systems):
    """Kafka 2.8 defines no features: --describe (ApiVersions' feature fields) and
    --upgrade-all --dry-run print nothing and succeed, on both systems alike."""
    outputs = {}
    for name in ORACLE_FIRST:
        bs = kafka_systems[name].bootstrap_servers
        outputs[name] = [tool("kafka-features", "--bootstrap-server", bs, *args).stdout
                         for args in (["--describe"], ["--upgrade-all", "--dry-run"])]
    assert outputs[KAFKALITE] == outputs[KAFKA] == ["", ""]
