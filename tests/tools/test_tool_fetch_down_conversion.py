"""Fetch v0-v3 on a normal (message format v2) topic, on both systems: kafka-python pinned to
an old broker version reads what confluent-kafka produced. Kafka 2.8's handleFetchRequest
down-converts the magic 2 batches for such a client (RecordsUtil.downConvert): Fetch v2/v3
(``api_version=(0, 10, 1)``) read magic 1 messages with offsets, keys, values and CreateTime
timestamps, Fetch v0/v1 (``api_version=(0, 9)``) magic 0 messages without timestamps; record
headers are dropped, a compressed batch comes back as one wrapper. kafkalite must give the
same records as Apache Kafka 2.8.2 (kafkalite.server.fetch_down_conversion).
"""

from __future__ import annotations

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_tool_checks import unique, wait_for_leaders

pytestmark = [pytest.mark.integration]

BOTH = ["kafkalite", "kafka"]
TS = (1_600_000_000_000, 1_600_000_000_007, 1_600_000_000_003)
RECORDS = [(b"k0", b"v0", TS[0], None), (b"k1", b"v1", TS[1], [("h", b"1")]),
           (None, b"v2", TS[2], None)]
GZIPPED = [(b"k3", b"v3" * 100, TS[1], None), (b"k4", b"v4" * 100, TS[0], None)]


def _produce(bootstrap: str, topic: str, records, **settings) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 50,
                         "log_level": 0, **settings})
    failed: list = []
    for key, value, timestamp, headers in records:
        producer.produce(topic, value=value, key=key, partition=0, timestamp=timestamp,
                         headers=headers,
                         on_delivery=lambda err, _msg: err is not None and failed.append(err))
    assert producer.flush(60) == 0 and not failed, failed


def _read_old_client(bootstrap: str, topic: str, api_version: tuple, count: int) -> list:
    import kafka

    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, api_version=api_version,
                                   enable_auto_commit=False, consumer_timeout_ms=30000)
    tp = kafka.TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    got: list = []
    try:
        for msg in consumer:
            got.append((msg.offset, msg.key, msg.value, msg.timestamp_type, msg.timestamp,
                        list(msg.headers or [])))
            if len(got) >= count:
                break
    finally:
        consumer.close()
    return got


@pytest.fixture(scope="module")
def produced(kafka_systems):
    """A topic of each system holding RECORDS then the GZIPPED batch, as magic 2 batches."""
    topics = {}
    for name, cluster in kafka_systems.items():
        bs = cluster.bootstrap_servers
        topic = unique("down-conv")
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_topics([NewTopic(topic, 1, 2)], operation_timeout=30)[topic].result(60)
        wait_for_leaders(bs, topic, 1)
        _produce(bs, topic, RECORDS)
        _produce(bs, topic, GZIPPED, **{"compression.type": "gzip"})
        topics[name] = (bs, topic)
    return topics


@pytest.mark.parametrize("system", BOTH)
def test_fetch_v3_reads_magic_1_messages(produced, system):
    bs, topic = produced[system]
    got = _read_old_client(bs, topic, (0, 10, 1), 5)
    assert got == [(i, k, v, 0, ts, []) for i, (k, v, ts, _h) in enumerate(RECORDS + GZIPPED)]


@pytest.mark.parametrize("system", BOTH)
def test_fetch_v1_reads_magic_0_messages(produced, system):
    bs, topic = produced[system]
    got = _read_old_client(bs, topic, (0, 9), 5)
    assert [(o, k, v, h) for o, k, v, _tt, _ts, h in got] == [
        (i, k, v, []) for i, (k, v, _ts, _h) in enumerate(RECORDS + GZIPPED)]
    assert {(tt, ts) for _o, _k, _v, tt, ts, _h in got} == {(None, None)}, got  # magic 0
