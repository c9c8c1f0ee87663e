"""A topic's compression.type, on both systems: the leader stores every batch in the topic's codec
whatever the producer sent, and consumers read the same records.

Kafka 2.8 recompresses (LogValidator); kafkalite used to refuse any compression.type but
'producer' (the third difference found with Kafka beside it). The stored codec is read from raw
Fetch answers (kio's codecs, no client library between), the records through confluent-kafka.
"""

from __future__ import annotations

import struct
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.protocol.kafka import codec as kafka_codec
from kafkalite.local.cluster import wait_until
from kafkalite.testing.conformance.raw import send_frame
from kafkalite.testing.oracle_fixtures import SYSTEMS

pytestmark = [pytest.mark.integration]

LZ4 = 3


def _stored_codecs(address: str, topic: str) -> list[int]:
    """The codec of every batch of ``topic``-0, from one raw Fetch v4 to its leader."""
    payload = kafka_codec.encode_request(1, 4, 1, "conformance", {
        "replica_id": -1, "max_wait": 100, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "topics": [{"topic": topic, "partitions": [{
            "partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]})
    answer_frame = send_frame(address, payload, timeout_s=30)
    assert answer_frame is not None, f"{address} closed the connection"
    _cid, body = kafka_codec.decode_response(1, 4, answer_frame)
    [answer] = [p for t in body.responses for p in t.partitions]
    assert int(answer.error_code) == 0, answer
    records = bytes(answer.records or b"")
    codecs = []
    pos = 0
    while pos + 61 <= len(records):
        (_base, length) = struct.unpack_from(">qi", records, pos)
        (attributes,) = struct.unpack_from(">h", records, pos + 21)
        codecs.append(attributes & 0x07)
        pos += 12 + length
    return codecs


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_leader_stores_batches_in_the_topics_codec(system):
    topic = f"lz4-topic-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": system.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 3, config={"compression.type": "lz4"})])[topic]\
        .result(30)
    sent = []
    for codec in ("none", "gzip", "none"):
        producer = Producer({"bootstrap.servers": system.bootstrap_servers, "acks": "all",
                             "compression.type": codec, "linger.ms": 0})
        for i in range(3):
            value = f"{codec}-{i}-".encode() * 20
            producer.produce(topic, key=b"k%d" % i, value=value, headers=[("h", b"v")])
            sent.append((b"k%d" % i, value))
        assert producer.flush(30) == 0

    leader = admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader
    address = next(a for a in system.bootstrap_servers.split(",")
                   if a in {f"{b.host}:{b.port}" for b in
                            admin.list_topics(timeout=10).brokers.values() if b.id == leader})
    codecs = _stored_codecs(address, topic)
    assert codecs and set(codecs) == {LZ4}, codecs

    consumer = Consumer({"bootstrap.servers": system.bootstrap_servers, "group.id": topic,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = []
    try:
        def read_all():
            for message in consumer.consume(20, timeout=1):
                assert message.error() is None, message.error()
                got.append((message.key(), message.value(), message.headers()))
            return len(got) >= len(sent)
        wait_until(read_all, 60, f"{len(sent)} records of {topic}")
    finally:
        consumer.close()
    assert [(k, v) for k, v, _h in got] == sent
    assert all(h == [("h", b"v")] for _k, _v, h in got)
