"""Kafka's consumer protocol bytes (JoinGroup metadata, SyncGroup assignments): golden bytes,
round trips against kio's schemas, and other clients' codecs."""

from __future__ import annotations

import io

import pytest
from kio.schema.consumer_protocol_assignment.v1 import data as kio_a1
from kio.schema.consumer_protocol_subscription.v1 import data as kio_s1
from kio.schema.consumer_protocol_subscription.v3 import data as kio_s3
from kio.serial import entity_reader, entity_writer

from kafkalite import errors
from kafkalite.client.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kafkalite.client.structs import TopicPartition as TP


def s16(text: str) -> bytes:
    return len(text).to_bytes(2, "big") + text.encode()


def i32(*values: int) -> bytes:
    return b"".join(v.to_bytes(4, "big", signed=True) for v in values)


# A Java 2.4+ consumer's subscription to orders and payments owning orders-0 and orders-2, and
# an assignment of orders-0, orders-1 with user data "x", byte for byte as Kafka lays them out.
GOLDEN_SUBSCRIPTION = (b"\x00\x01" + i32(2) + s16("orders") + s16("payments") + i32(-1)
                       + i32(1) + s16("orders") + i32(2, 0, 2))
GOLDEN_ASSIGNMENT = (b"\x00\x01" + i32(1) + s16("orders") + i32(2, 0, 1) + i32(1) + b"x")


def test_golden_bytes():
    assert encode_subscription(["payments", "orders"], None,
                               [("orders", 2), TP("orders", 0)]) == GOLDEN_SUBSCRIPTION
    assert decode_subscription(GOLDEN_SUBSCRIPTION) == Subscription(
        ["orders", "payments"], None, [TP("orders", 0), TP("orders", 2)], 1)
    assert encode_assignment([TP("orders", 1), ("orders", 0)], b"x") == GOLDEN_ASSIGNMENT
    assert decode_assignment(GOLDEN_ASSIGNMENT) == Assignment(
        [TP("orders", 0), TP("orders", 1)], b"x", 1)


def test_version_0_as_kafka_0_10_clients_write_it():
    v0 = b"\x00\x00" + i32(1) + s16("t") + i32(0)          # empty (not null) user data
    assert decode_subscription(v0) == Subscription(["t"], b"", [], 0)
    assert encode_subscription(["t"], b"", version=0) == v0
    assert decode_assignment(b"\x00\x00" + i32(1) + s16("t") + i32(1, 3) + i32(-1)) == \
        Assignment([TP("t", 3)], None, 0)


def _kio_bytes(version: int, cls, entity) -> bytes:
    buf = io.BytesIO()
    buf.write(version.to_bytes(2, "big"))
    entity_writer(cls)(buf, entity)
    return buf.getvalue()


def test_round_trip_against_kio():
    ours = encode_subscription(["a", "b"], b"\x00\x01", [("a", 1)])
    entity, size = entity_reader(kio_s1.ConsumerProtocolSubscription)(memoryview(ours), 2)
    assert size == len(ours) - 2          # everything after the version
    assert entity.topics == ("a", "b") and entity.user_data == b"\x00\x01"
    assert [(e.topic, list(e.partitions)) for e in entity.owned_partitions] == [("a", [1])]
    assert decode_subscription(_kio_bytes(1, kio_s1.ConsumerProtocolSubscription, entity)) == \
        Subscription(["a", "b"], b"\x00\x01", [TP("a", 1)], 1)

    ours = encode_assignment([("t", 2), ("u", 0)])
    entity, _ = entity_reader(kio_a1.ConsumerProtocolAssignment)(memoryview(ours), 2)
    assert [(e.topic, list(e.partitions)) for e in entity.assigned_partitions] == \
        [("t", [2]), ("u", [0])]
    assert decode_assignment(_kio_bytes(1, kio_a1.ConsumerProtocolAssignment, entity)) == \
        Assignment([TP("t", 2), TP("u", 0)], None, 1)


def test_newer_versions_are_read_as_far_as_known():
    # Kafka 3.x consumers send v3 (generation, rack); a future v9 is read as v3
    v3 = kio_s3.ConsumerProtocolSubscription(
        topics=("t",), user_data=None, owned_partitions=(
            kio_s3.TopicPartition(topic="t", partitions=(0,)),), generation_id=7,
        rack_id="rack-a")
    sub = decode_subscription(_kio_bytes(3, kio_s3.ConsumerProtocolSubscription, v3))
    assert (sub.version, sub.generation_id, sub.rack_id) == (3, 7, "rack-a")
    assert sub.owned_partitions == [TP("t", 0)]
    future = _kio_bytes(9, kio_s3.ConsumerProtocolSubscription, v3) + b"more fields"
    assert decode_subscription(future).topics == ["t"]
    assert decode_assignment(GOLDEN_ASSIGNMENT[:1] + b"\x05" + GOLDEN_ASSIGNMENT[2:]
                             + b"\x00\x00").partitions == [TP("orders", 0), TP("orders", 1)]


def test_other_clients_read_ours_and_we_read_theirs():
    aio = pytest.importorskip("aiokafka.coordinator.protocol")
    theirs = aio.ConsumerProtocolMemberMetadata(0, ["x", "y"], b"").encode()
    assert decode_subscription(theirs).topics == ["x", "y"]
    read = aio.ConsumerProtocolMemberMetadata.decode(encode_subscription(["y", "x"]))
    assert (read.version, read.subscription) == (1, ["x", "y"])
    read = aio.ConsumerProtocolMemberAssignment.decode(encode_assignment([("t", 1), ("t", 0)]))
    assert read.partitions() == [("t", 0), ("t", 1)]
    theirs = aio.ConsumerProtocolMemberAssignment(0, [("t", [4])], b"").encode()
    assert decode_assignment(theirs).partitions == [TP("t", 4)]


def test_empty_assignment_and_malformed_bytes():
    assert decode_assignment(b"") == Assignment([], None, 1)
    for bad in (b"", b"\x00", b"\xff\xff" + i32(0) + i32(-1),
                b"\x00\x01" + i32(2_000_000_000),           # a count no frame can hold
                b"\x00\x01" + i32(1) + b"\x00\x09abc"):     # truncated string
        with pytest.raises(errors.InvalidRequestError, match="consumer protocol subscription"):
            decode_subscription(bad)
    with pytest.raises(errors.InvalidRequestError, match="assignment"):
        decode_assignment(b"\x00\x01" + i32(7))
    with pytest.raises(ValueError):
        encode_subscription(["t"], version=3)
