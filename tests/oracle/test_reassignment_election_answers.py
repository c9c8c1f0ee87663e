"""AlterPartitionReassignments, ListPartitionReassignments and ElectLeaders answered as Apache
Kafka 2.8.2 answers them: the same raw requests to both systems' controller and to a broker that
is not the controller, the decoded answers compared whole (error codes and messages), on a topic
of the test's own. Kafka's order of partitions in an answer is a hash map's, so partitions are
compared sorted."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient

from kafkalite.local.cluster import wait_until
from kafkalite.testing.apache_kafka import run_tool
from kafkalite.testing.conformance import raw
from kafkalite.testing.oracle_fixtures import SYSTEMS

pytestmark = [pytest.mark.integration]

ALTER, LIST, ELECT = 45, 46, 43


def _addresses(bootstrap: str) -> tuple[str, str]:
    """(the controller's address, another broker's)."""
    md = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(timeout=10)
    address = {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}
    other = next(b for b in sorted(address) if b != md.controller_id)
    return address[md.controller_id], address[other]


def _sorted(answer, key: str, partitions: str = "partitions"):
    """The answer with each topic's partitions sorted (Kafka's are in hash order)."""
    if not isinstance(answer, dict):
        return answer
    for topic in answer.get(key) or []:
        topic[partitions] = sorted(topic[partitions], key=lambda p: sorted(p.items()))
    return answer


def _answers(bootstrap: str, topic: str) -> dict:
    controller, other = _addresses(bootstrap)
    alter = {"timeout": 10000, "topics": [{"name": topic, "partitions": [
        {"partition_index": 0, "replicas": []},
        {"partition_index": 1, "replicas": [2, 2]},
        {"partition_index": 2, "replicas": [3, -1]},
        {"partition_index": 3, "replicas": None},
        {"partition_index": 9, "replicas": [1, 2]}]}]}
    listing = {"timeout": 10000, "topics": [{"name": topic, "partition_indexes": [0, 9]}]}
    elect = {"election_type": 0, "timeout": 10000, "topic_partitions": [
        {"topic": topic, "partitions": [0, 9]}]}
    return {
        "alter at the controller": _sorted(raw.call(controller, ALTER, 0, alter), "responses"),
        "alter elsewhere": raw.call(other, ALTER, 0, alter),
        "list at the controller": raw.call(controller, LIST, 0, listing),
        "list all at the controller": raw.call(controller, LIST, 0, {"timeout": 10000,
                                                                     "topics": None}),
        "list elsewhere": raw.call(other, LIST, 0, listing),
        "elect preferred": _sorted(raw.call(controller, ELECT, 2, elect),
                                   "replica_election_results", "partition_result"),
        "elect unclean v1": _sorted(raw.call(controller, ELECT, 1, dict(elect, election_type=1)),
                                    "replica_election_results", "partition_result"),
        "elect v0": _sorted(raw.call(controller, ELECT, 0, elect), "replica_election_results",
                            "partition_result"),
        "elect elsewhere": _sorted(raw.call(other, ELECT, 2, elect), "replica_election_results",
                                   "partition_result"),
    }


def test_refusals_and_answers_as_kafka(kafka_systems):
    topic = f"ra-{uuid.uuid4().hex[:8]}"
    got = {}
    for name in SYSTEMS:
        bs = kafka_systems[name].bootstrap_servers
        created = run_tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", topic,
                           "--replica-assignment", "1:2,2:3,3:1,1:3")
        assert created.returncode == 0, created.stderr
        admin = AdminClient({"bootstrap.servers": bs, "log_level": 0})
        wait_until(lambda: len(admin.list_topics(topic, timeout=10).topics[topic].partitions)
                   == 4 and all(p.leader >= 0 for p in admin.list_topics(
                       topic, timeout=10).topics[topic].partitions.values()), 60,
                   f"{topic}'s leaders", interval_s=0.2)
        got[name] = _answers(bs, topic)
    kafka, kafkalite = got["kafka"], got["kafkalite"]
    codes = {(p["partition_index"], p["error_code"]) for t in kafka["alter at the controller"][
        "responses"] for p in t["partitions"]}
    assert codes == {(0, "INVALID_REPLICA_ASSIGNMENT"), (1, "INVALID_REPLICA_ASSIGNMENT"),
                     (2, "INVALID_REPLICA_ASSIGNMENT"), (3, "NO_REASSIGNMENT_IN_PROGRESS"),
                     (9, "UNKNOWN_TOPIC_OR_PARTITION")}, kafka
    for what in kafka:
        assert kafkalite[what] == kafka[what], what
