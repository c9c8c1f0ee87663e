"""Transaction markers written by hand on a 3-broker cluster, judged by librdkafka.

Transactional batches of two producer ids are produced to the partition's leader as a
coordinator's client would (kafkalite's own connection, native protocol), and WriteTxnMarkers is
sent to it by hand: one producer's transaction aborted, the other's committed, a third left
open. confluent-kafka consumers, unchanged, then read the partition: read_committed sees exactly
the committed and plain records (librdkafka applies the broker's aborted_transactions and skips
the control batches), read_uncommitted every data record; the open transaction holds the last
stable offset back (ListOffsets read_committed) until its COMMIT marker. The partition has
replication factor 3, so the LSO moves only once the followers have the markers."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, IsolationLevel, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from kafkalite import errors
from kafkalite.client.connection import BrokerConnection
from kafkalite.local.cluster import wait_until
from kafkalite.protocol import messages as m
from kafkalite.record import build_batch
from kafkalite.record.control import build_control_batch

pytestmark = pytest.mark.integration

TIMEOUT_S = 60


@pytest.fixture
def three_brokers(kafkalite_cluster_factory):
    return kafkalite_cluster_factory(3)


def _txn_batch(pid: int, sequence: int, values: list[str]) -> bytes:
    now = int(time.time() * 1000)
    return build_batch([(now, None, v.encode(), None) for v in values], producer_id=pid,
                       producer_epoch=0, base_sequence=sequence, transactional=True)


def _plain_batch(values: list[str]) -> bytes:
    now = int(time.time() * 1000)
    return build_batch([(now, None, v.encode(), None) for v in values])


class Leader:
    """A native connection to the leader of ``topic``-0."""

    def __init__(self, bootstrap: str, topic: str):
        admin = AdminClient({"bootstrap.servers": bootstrap})
        self.topic = topic
        admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)

        def led_with_full_isr() -> bool:
            meta = admin.list_topics(topic, timeout=5).topics.get(topic)
            return (meta is not None and meta.error is None and 0 in meta.partitions
                    and meta.partitions[0].leader >= 0 and len(meta.partitions[0].isrs) == 3)
        wait_until(led_with_full_isr, 30, f"a leader and full ISR for {topic}")
        cluster = admin.list_topics(topic, timeout=5)
        broker = cluster.brokers[cluster.topics[topic].partitions[0].leader]
        self.connection = BrokerConnection(broker.host, broker.port, client_id="txn-by-hand")

    def produce(self, batch: bytes, transactional_id: str | None = "by-hand") -> int:
        response = self.connection.request(m.ProduceRequest(
            transactional_id=transactional_id, acks=-1, timeout_ms=30000,
            topic_data={self.topic: {0: batch}}))
        answer = response.responses[self.topic][0]
        assert answer.error_code == 0, answer
        return answer.base_offset

    def marker(self, pid: int, commit: bool) -> int:
        response = self.connection.request(m.WriteTxnMarkersRequest(markers=[
            m.WritableTxnMarker(pid, 0, commit, [m.WritableTxnMarkerTopic(self.topic, [0])], 0)]))
        [result] = response.markers
        [topic] = result.topics
        return topic.partitions[0].error_code


def _read(bootstrap: str, topic: str, isolation: str, until_offset: int) -> list[str]:
    """Every record value of ``topic``-0 up to ``until_offset`` (its position afterwards)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex}",
                         "isolation.level": isolation, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "enable.partition.eof": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value().decode())
            position = consumer.position([TopicPartition(topic, 0)])[0].offset
            if position >= until_offset:
                return values
        raise AssertionError(f"{isolation} consumer stuck before {until_offset}: {values}")
    finally:
        consumer.close()


def _latest(bootstrap: str, topic: str, level) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, 0)
    return admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=level,
                              request_timeout=30)[tp].result(30).offset


def test_markers_by_hand_judged_by_librdkafka(three_brokers):
    bootstrap = three_brokers.bootstrap_servers
    topic = f"marked-{uuid.uuid4().hex[:8]}"
    leader = Leader(bootstrap, topic)
    assert leader.produce(_plain_batch(["plain-0"])) == 0                  # 0
    assert leader.produce(_txn_batch(4001, 0, ["aborted-0", "aborted-1"])) == 1   # 1-2
    assert leader.produce(_txn_batch(4002, 0, ["committed-0"])) == 3        # 3
    assert leader.produce(_txn_batch(4001, 2, ["aborted-2"])) == 4          # 4
    assert leader.produce(_plain_batch(["plain-1"])) == 5                   # 5
    assert leader.produce(_txn_batch(4002, 1, ["committed-1"])) == 6        # 6
    assert leader.marker(4001, commit=False) == 0                           # 7
    assert leader.marker(4002, commit=True) == 0                            # 8
    assert leader.produce(_txn_batch(4003, 0, ["open-0", "open-1"])) == 9  # 9-10, open
    assert leader.produce(_plain_batch(["plain-2"])) == 11                  # 11

    committed = ["plain-0", "committed-0", "plain-1", "committed-1"]
    everything = ["plain-0", "aborted-0", "aborted-1", "committed-0", "aborted-2", "plain-1",
                  "committed-1", "open-0", "open-1", "plain-2"]
    wait_until(lambda: _latest(bootstrap, topic, IsolationLevel.READ_COMMITTED) == 9, 30,
               "the LSO at the open transaction")
    assert _latest(bootstrap, topic, IsolationLevel.READ_UNCOMMITTED) == 12
    assert _read(bootstrap, topic, "read_committed", 9) == committed
    assert _read(bootstrap, topic, "read_uncommitted", 12) == everything

    assert leader.marker(4003, commit=True) == 0                            # 12
    wait_until(lambda: _latest(bootstrap, topic, IsolationLevel.READ_COMMITTED) == 13, 30,
               "the LSO past the commit")
    assert _read(bootstrap, topic, "read_committed", 13) == committed + [
        "open-0", "open-1", "plain-2"]
    # a client may not write markers
    refused = leader.connection.request(m.ProduceRequest(
        transactional_id="by-hand", acks=-1, timeout_ms=30000,
        topic_data={topic: {0: build_control_batch(4003, 0, True, 0, 0)}}))
    assert refused.responses[topic][0].error_code == errors.InvalidRecordError.code
    leader.connection.close()
