"""Produce refusals and OffsetForLeaderEpoch, raw Kafka requests on both systems.

Kafka 2.8 answers NOT_LEADER_OR_FOLLOWER from a broker that knows a partition but holds no
replica of it; sets a refused partition's log start offset per error and no error message
unless with KIP-467 record errors; refuses records too far from its clock when the topic sets
message.timestamp.difference.max.ms; and answers undefined (-1, -1) for a leader epoch above its
latest. kafkalite answered otherwise for each, until the conformance suite found them.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.local.cluster import wait_until
from kafkalite.testing.conformance.catalogue import records
from kafkalite.testing.oracle_fixtures import SYSTEMS

pytestmark = [pytest.mark.integration]


def _topic(system, prefix: str, replication: int, config: dict | None = None):
    """A new topic; (its leader's address, the other brokers' addresses)."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": system.bootstrap_servers})
    admin.create_topics([NewTopic(name, 1, replication, config=config or {})])[name].result(30)

    def leader():
        md = admin.list_topics(name, timeout=10)
        partition = md.topics[name].partitions.get(0)
        return md if partition is not None and partition.leader >= 0 else None
    md = wait_until(leader, 30, f"a leader of {name}")
    brokers = {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}
    lead = md.topics[name].partitions[0].leader
    return name, brokers[lead], [a for b, a in brokers.items() if b != lead]


def _produce(address: str, topic: str, batch: bytes, **kw) -> dict:
    """The answer once ``address``'s metadata has the topic (before, both answer
    UNKNOWN_TOPIC_OR_PARTITION and append nothing)."""
    def known():
        answer = records.produce(address, topic, batch, **kw)
        return answer if answer["error"] != "UNKNOWN_TOPIC_OR_PARTITION" else None
    return wait_until(known, 30, f"{address} to know {topic}")


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_produce_to_a_broker_without_a_replica(system):
    name, _leader, others = _topic(system, "non-replica", 1)
    assert _produce(others[0], name, records.batch())["error"] == "NOT_LEADER_OR_FOLLOWER"


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_refused_produce_answer_fields(system):
    name, leader, _others = _topic(system, "refused", 1)   # min.insync.replicas=2
    refused = _produce(leader, name, records.batch(), detail=True)
    assert (refused["error"], refused["log_start_offset"], refused["message"]) == \
        ("NOT_ENOUGH_REPLICAS", 0, None)
    unknown = records.produce(leader, name, records.batch(), partition=7, detail=True)
    assert (unknown["error"], unknown["log_start_offset"], unknown["message"]) == \
        ("UNKNOWN_TOPIC_OR_PARTITION", -1, None)


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_record_timestamps_too_far_from_the_clock(system):
    name, leader, _others = _topic(system, "ts-diff", 3,
                                   {"message.timestamp.difference.max.ms": "60000"})
    answer = _produce(leader, name, records.batch(2), detail=True)   # 2020 timestamps
    assert (answer["error"], answer["base_offset"], answer["log_start_offset"]) == \
        ("INVALID_TIMESTAMP", -1, 0)
    assert answer["message"] == "One or more records have been rejected due to invalid timestamp"
    assert [e["batch_index"] for e in answer["record_errors"]] == [0, 1]
    assert answer["record_errors"][1]["batch_index_error_message"].startswith(
        f"Timestamp {records.TS + 1} of message with offset 1 is out of range. The timestamp "
        "should be within [")


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_end_offset_of_an_epoch_above_the_latest(system):
    name, leader, _others = _topic(system, "epochs", 3)
    assert _produce(leader, name, records.batch(3))["error"] == "NONE"
    answers = records.offset_for_leader_epoch(leader, name, [(-1, 0), (-1, 1), (-1, 9)])
    assert [a[1:] for a in answers] == [["NONE", 0, 3], ["NONE", -1, -1], ["NONE", -1, -1]]
