"""A topic of ``message.format.version=0.10.2`` (message format v1) on both systems, produced by
confluent-kafka, read by confluent-kafka and kafka-python, its segments read with Kafka 2.8.2's
kafka-dump-log. Kafka 2.8's leader converts the magic 2 batches producers send to the topic's
format on append (LogValidator.validateMessagesAndAssignOffsets with the topic's magic) and stores
and serves magic 1 messages; so does kafkalite (``kafkalite.record.legacy_convert``).

What Kafka 2.8.2 does, checked here:
- the value is validated (ApiVersion): an unknown version is INVALID_CONFIG;
- records without headers become magic 1 messages with their offsets and CreateTime timestamps,
  one message per uncompressed record, a gzip batch one wrapper message at its last inner offset
  with the greatest inner timestamp, on the leader and the follower alike; both clients read them;
- a record with headers cannot be written as magic 1 (MemoryRecordsBuilder throws
  IllegalArgumentException "Magic v1 does not support record headers"): UNKNOWN_SERVER_ERROR;
- an idempotent producer's batch is refused: UNSUPPORTED_FOR_MESSAGE_FORMAT ("Idempotent records
  cannot be used with magic version 1", LogValidator.validateBatch).
"""

from __future__ import annotations

import re

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_tool_checks import tool, unique, wait_for_leaders

from kafkalite.local.cluster import wait_until

pytestmark = [pytest.mark.integration]

BOTH = ["kafkalite", "kafka"]
TIMESTAMPS = (1_600_000_000_000, 1_600_000_000_007, 1_600_000_000_003)
# a shallow entry of kafka-dump-log (without --deep-iteration): one per magic 0/1 message, a
# compressed wrapper message being one entry at the offset of its last inner message
_SHALLOW = re.compile(r"^offset: (\d+) position: \d+ CreateTime: (\d+) size: \d+ magic: (\d) "
                      r"compresscodec: (\w+) crc: \d+ isvalid: (\w+)$")


def _create(bootstrap: str, topic: str, version: str, validate_only: bool = False):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, 1, 2, config={
        "message.format.version": version})], validate_only=validate_only, operation_timeout=30)
    try:
        futures[topic].result(60)
        return None
    except KafkaException as exc:
        err = exc.args[0]
        return err.name(), err.str()


def _produce(bootstrap: str, topic: str, records, **settings) -> list:
    """(error name or None, offset, timestamp) of each record, in order."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 0,
                         "linger.ms": 50, "retries": 0, **settings})
    delivered: list = []
    for key, value, timestamp, headers in records:
        producer.produce(topic, value=value, key=key, partition=0, timestamp=timestamp,
                         headers=headers, on_delivery=lambda err, msg: delivered.append(
                             (err.name() if err else None, msg.offset(), msg.timestamp())))
    producer.flush(60)
    return delivered


def _read_confluent(bootstrap: str, topic: str, count: int) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("mf1"),
                         "log_level": 0, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list = []
    try:
        def read():
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append((msg.offset(), msg.key(), msg.value(), msg.timestamp(),
                            msg.headers()))
            return len(got) >= count
        wait_until(read, 60, f"{count} records of {topic}", interval_s=0)
    finally:
        consumer.close()
    return got


def _read_kafka_python(bootstrap: str, topic: str, count: int) -> list:
    import kafka

    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                   consumer_timeout_ms=30000)
    tp = kafka.TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    got: list = []
    try:
        for msg in consumer:
            got.append((msg.offset, msg.key, msg.value, (msg.timestamp_type, msg.timestamp),
                        msg.headers))
            if len(got) >= count:
                break
    finally:
        consumer.close()
    return got


def _shallow_entries(log_dir: str, topic: str) -> list[tuple]:
    """kafka-dump-log of the partition's first segment: (offset, CreateTime, magic, codec,
    valid) of each shallow entry it shows as a magic 0/1 message."""
    path = f"{log_dir}/{topic}-0/00000000000000000000.log"
    out = tool("kafka-dump-log", "--files", path).stdout
    return [m.groups() for m in map(_SHALLOW.match, out.splitlines()) if m]


@pytest.mark.parametrize("system", BOTH, indirect=True)
def test_an_unknown_format_version_is_refused(system):
    topic = unique("mf-bad")
    assert _create(system.bootstrap_servers, topic, "0.10.9", validate_only=True) == (
        "INVALID_CONFIG", "Invalid value 0.10.9 for configuration message.format.version: "
        "Version `0.10.9` is not a valid version")


@pytest.mark.parametrize("system", BOTH, indirect=True)
def test_records_are_stored_as_magic_1_and_read_back(system):
    bs = system.bootstrap_servers
    topic = unique("mf-v1")
    assert _create(bs, topic, "0.10.2") is None
    replicas = wait_for_leaders(bs, topic, 1)[0].replicas
    records = [(f"k{i}".encode(), f"v{i}".encode(), ts, None) for i, ts in enumerate(TIMESTAMPS)]
    assert _produce(bs, topic, records) == [(None, i, (1, ts)) for i, ts in enumerate(TIMESTAMPS)]
    # gzip: values long enough for librdkafka to compress them
    compressed = [(b"k3", b"v3" * 100, TIMESTAMPS[1], None), (b"k4", b"v4" * 100, TIMESTAMPS[0],
                                                              None)]
    assert _produce(bs, topic, compressed, **{"compression.type": "gzip"}) == [
        (None, 3, (1, TIMESTAMPS[1])), (None, 4, (1, TIMESTAMPS[0]))]
    expected = [(i, f"k{i}".encode(), f"v{i}".encode(), (1, ts)) for i, ts in
                enumerate(TIMESTAMPS)] + [(3 + i, k, v, (1, ts)) for i, (k, v, ts, _) in
                                          enumerate(compressed)]
    assert [r[:4] for r in _read_confluent(bs, topic, 5)] == expected
    assert [r[:4] for r in _read_kafka_python(bs, topic, 5)] == [
        (o, k, v, (0, ts)) for o, k, v, (_, ts) in expected]       # 0: CreateTime
    # the same magic 1 messages on the leader and the follower: one per uncompressed record,
    # one gzip wrapper at the last inner offset with the greatest inner timestamp
    for broker in replicas:
        entries = wait_until(lambda: _shallow_entries(system.brokers[broker].log_dir, topic),
                             30, "dumped magic 1 entries")
        assert entries == [("0", str(TIMESTAMPS[0]), "1", "NONE", "true"),
                           ("1", str(TIMESTAMPS[1]), "1", "NONE", "true"),
                           ("2", str(TIMESTAMPS[2]), "1", "NONE", "true"),
                           ("4", str(TIMESTAMPS[1]), "1", "GZIP", "true")], entries


@pytest.mark.parametrize("system", BOTH, indirect=True)
def test_headers_and_idempotence_are_refused(system):
    bs = system.bootstrap_servers
    topic = unique("mf-refused")
    assert _create(bs, topic, "0.10.2") is None
    wait_for_leaders(bs, topic, 1)
    with_headers = _produce(bs, topic, [(b"k", b"v", TIMESTAMPS[0], [("h", b"1")])])
    idempotent = _produce(bs, topic, [(b"k", b"v", TIMESTAMPS[0], None)],
                          **{"enable.idempotence": True, "retries": 3})
    assert [e for e, _, _ in with_headers] == ["UNKNOWN"]
    assert [e for e, _, _ in idempotent] == ["UNSUPPORTED_FOR_MESSAGE_FORMAT"]
