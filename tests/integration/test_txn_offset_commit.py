"""TxnOffsetCommit on three real brokers (rf 3, min.insync.replicas 2), its markers written by
hand with WriteTxnMarkers as the transaction coordinator would, and the group's offsets judged by
confluent-kafka's ``committed()`` (librdkafka asks OffsetFetch v7 with require_stable).

A committed transaction's offsets replace the plain ones at its COMMIT marker, an aborted one's
never show; while a transaction is open OffsetFetch with require_stable answers
UNSTABLE_OFFSET_COMMIT for its partitions. After a kill -9 of the group coordinator, the new one
loads the committed offsets from ``__consumer_offsets`` and keeps an open transaction's offsets
pending until its marker reaches the new leader."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition

from kafkalite.client import AdminClient, NewTopic
from kafkalite.coordinator.partitioner import partition_for
from kafkalite.coordinator.types import OFFSETS_TOPIC
from kafkalite.local.cluster import wait_until
from kafkalite.testing.conformance import raw

pytestmark = pytest.mark.integration

GROUP, TOPIC, OFFSETS_PARTITIONS = "copier", "source", 5
PID_COMMITTED, PID_ABORTED, PID_OPEN = 7001, 7002, 7003
EPOCH = 0
_RETRIABLE = {"COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR"}
TIMEOUT_S = 90


def find_coordinator(cluster, exclude=()) -> tuple[int, str] | None:
    """(node id, address) of the group's coordinator as a live broker answers FindCoordinator
    v3; None while there is none (or it is one of ``exclude``)."""
    for broker in cluster.live_brokers():
        try:
            answer = raw.call(broker.address, 10, 3, {"key": GROUP, "key_type": 0})
        except OSError:
            continue
        if answer["error_code"] == "NONE" and answer["node_id"] not in exclude:
            return answer["node_id"], f"{answer['host']}:{answer['port']}"
    return None


def txn_offset_commit(address: str, producer_id: int, offsets: dict[int, int]) -> dict:
    """TxnOffsetCommit v3 (no group generation: a producer outside the group), retried while
    the coordinator is loading or moving; {partition: error name}."""
    def attempt():
        answer = raw.call(address, 28, 3, {
            "transactional_id": f"tx-{producer_id}", "group_id": GROUP,
            "producer_id": producer_id, "producer_epoch": EPOCH, "generation_id": -1,
            "member_id": "", "group_instance_id": None, "topics": [{"name": TOPIC, "partitions": [
                {"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1,
                 "committed_metadata": ""} for p, o in offsets.items()]}]})
        codes = {p["partition_index"]: p["error_code"]
                 for t in answer["topics"] for p in t["partitions"]}
        return None if set(codes.values()) & _RETRIABLE else codes
    return wait_until(attempt, TIMEOUT_S, "TxnOffsetCommit answered")


def write_marker(address: str, producer_id: int, commit: bool) -> list:
    """WriteTxnMarkers v1 to the group's __consumer_offsets partition at its leader, as the
    transaction coordinator sends it; the partition's error names."""
    answer = raw.call(address, 27, 1, {"markers": [{
        "producer_id": producer_id, "producer_epoch": EPOCH, "transaction_result": commit,
        "topics": [{"name": OFFSETS_TOPIC,
                    "partition_indexes": [partition_for(GROUP, OFFSETS_PARTITIONS)]}],
        "coordinator_epoch": 0}]})
    return [p["error_code"] for m in answer["markers"] for t in m["topics"]
            for p in t["partitions"]]


def offset_fetch(address: str, stable: bool) -> dict | None:
    """OffsetFetch v7 of both partitions: {partition: (offset, error name)}; None while the
    coordinator answers a retriable group error."""
    answer = raw.call(address, 9, 7, {"group_id": GROUP, "require_stable": stable,
                                      "topics": [{"name": TOPIC, "partition_indexes": [0, 1]}]})
    if answer["error_code"] in _RETRIABLE:
        return None
    assert answer["error_code"] == "NONE", answer
    return {p["partition_index"]: (p["committed_offset"], p["error_code"])
            for t in answer["topics"] for p in t["partitions"]}


def committed(bootstrap: str, partitions=(0, 1)) -> dict[int, int]:
    """The group's offsets as confluent-kafka reads them (a fresh consumer of the group)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    try:
        found = consumer.committed([TopicPartition(TOPIC, p) for p in partitions], timeout=30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found}


def test_txn_offsets_commit_at_the_marker_and_survive_a_coordinator_kill(
        kafkalite_cluster_factory):
    cluster = kafkalite_cluster_factory(3, **{"offsets.topic.replication.factor": 3,
                                              "offsets.topic.num.partitions": OFFSETS_PARTITIONS,
                                              "min.insync.replicas": 2})
    bootstrap = cluster.bootstrap_servers
    with AdminClient(bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, 2, 3)], timeout_ms=30000)
    # a plain commit first (a consumer of the group): what the aborted transaction leaves
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                         "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, 2), TopicPartition(TOPIC, 1, 3)],
                        asynchronous=False)
    finally:
        consumer.close()
    node, address = wait_until(lambda: find_coordinator(cluster), TIMEOUT_S, "a coordinator")

    assert txn_offset_commit(address, PID_COMMITTED, {0: 6, 1: 7}) == {0: "NONE", 1: "NONE"}
    assert txn_offset_commit(address, PID_ABORTED, {1: 99}) == {1: "NONE"}
    unstable = (-1, "UNSTABLE_OFFSET_COMMIT")
    assert offset_fetch(address, stable=True) == {0: unstable, 1: unstable}
    assert offset_fetch(address, stable=False) == {0: (2, "NONE"), 1: (3, "NONE")}

    assert write_marker(address, PID_ABORTED, commit=False) == ["NONE"]
    assert offset_fetch(address, stable=True) == {0: unstable, 1: unstable}   # one still open
    assert write_marker(address, PID_COMMITTED, commit=True) == ["NONE"]
    assert committed(bootstrap) == {0: 6, 1: 7}

    # a third transaction is open when the coordinator dies
    assert txn_offset_commit(address, PID_OPEN, {0: 20}) == {0: "NONE"}
    cluster.kill(node)
    new_node, new_address = wait_until(lambda: find_coordinator(cluster, exclude={node}),
                                       TIMEOUT_S, "a new coordinator")
    # loaded: the committed transaction's offsets; the open one's pending
    assert wait_until(lambda: offset_fetch(new_address, stable=True), TIMEOUT_S,
                      "the new coordinator loaded") == {0: unstable, 1: (7, "NONE")}
    assert committed(bootstrap, partitions=(1,)) == {1: 7}
    assert offset_fetch(new_address, stable=False) == {0: (6, "NONE"), 1: (7, "NONE")}

    # the open transaction's marker reaches the new leader of the partition
    assert wait_until(lambda: (lambda codes: codes if codes == ["NONE"] else None)(
        write_marker(new_address, PID_OPEN, commit=True)), TIMEOUT_S,
        "the marker written") == ["NONE"]
    assert committed(bootstrap) == {0: 20, 1: 7}
