"""DescribeProducers (KIP-664) on kafkalite and Apache Kafka 2.8.2, after confluent-kafka
(librdkafka) producers wrote: an idempotent producer's 3 records, then a transactional
producer's 2 records, left open, then committed. A raw DescribeProducers v0 request (kio-built,
``conformance.raw``) at the partition's leader answers the same on both systems: each
producer's epoch, last sequence, last timestamp (the records' own; the commit marker's is the
coordinator's clock), coordinator epoch (-1 before any marker) and open transaction's first
offset. Producer ids are normalised to the producer's role; Kafka 2.8.2 has no
kafka-transactions tool (3.0), so no tool is judged here.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.local.cluster import wait_until
from kafkalite.testing.conformance.catalogue.producers import describe, shape
from kafkalite.testing.oracle_fixtures import SYSTEMS

pytestmark = [pytest.mark.integration]

TS = 1_650_000_000_000


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _leader(admin: AdminClient, topic: str) -> str:
    def found():
        md = admin.list_topics(topic, timeout=10)
        partition = md.topics[topic].partitions.get(0)
        if partition is None or partition.leader < 0:
            return None
        broker = md.brokers[partition.leader]
        return f"{broker.host}:{broker.port}"
    return wait_until(found, 30, f"a leader of {topic}")


def _producer_ids(answer: dict) -> list[int]:
    return [s["producer_id"] for t in answer["topics"] for p in t["partitions"]
            for s in p["active_producers"]]


def _state(epoch, sequence, timestamp, coordinator_epoch, txn_start) -> dict:
    return {"producer_epoch": epoch, "last_sequence": sequence, "last_timestamp": timestamp,
            "coordinator_epoch": coordinator_epoch, "current_txn_start_offset": txn_start}


IDEMPOTENT = _state(0, 2, TS + 2, -1, -1)


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_describe_producers_after_librdkafka_producers(system):
    bootstrap = system.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = _unique("describe-producers")
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
    leader = _leader(admin, topic)

    idempotent = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                           "linger.ms": 0, "log_level": 0})
    for i in range(3):
        idempotent.produce(topic, value=b"i%d" % i, partition=0, timestamp=TS + i)
        assert idempotent.flush(30) == 0            # one batch each: sequences 0, 1, 2
    [idempotent_id] = _producer_ids(describe(leader, {topic: [0]}))
    roles = {idempotent_id: "idempotent"}

    transactional = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "log_level": 0,
                              "transactional.id": _unique("describe-tx")})
    transactional.init_transactions(60)
    transactional.begin_transaction()
    for i in range(2):
        transactional.produce(topic, value=b"t%d" % i, partition=0, timestamp=TS + 10 + i)
        assert transactional.flush(30) == 0
    open_answer = describe(leader, {topic: [0]})
    roles.update({pid: "transactional" for pid in _producer_ids(open_answer)
                  if pid != idempotent_id})
    chosen = (TS + 2, TS + 11)
    assert shape(open_answer, roles, chosen) == {"throttle_time_ms": 0, "topics": {topic: [
        [0, "NONE", None, {"idempotent": IDEMPOTENT,
                           "transactional": _state(0, 1, TS + 11, -1, 3)}]]}}

    transactional.commit_transaction(60)

    def marker_written():
        # EndTxn is answered once PrepareCommit is logged: the marker may come a little later
        answer = describe(leader, {topic: [0, 1]})
        states = answer["topics"][0]["partitions"][0]["active_producers"]
        return answer if all(s["current_txn_start_offset"] == -1 for s in states) else None
    assert shape(wait_until(marker_written, 30, "the commit marker"), roles, chosen) == {
        "throttle_time_ms": 0, "topics": {topic: [
            [0, "NONE", None, {"idempotent": IDEMPOTENT,
                               "transactional": _state(0, 1, "marker time", ">= 0", -1)}],
            [1, "UNKNOWN_TOPIC_OR_PARTITION", None, {}]]}}
