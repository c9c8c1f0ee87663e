"""confluent-kafka (librdkafka) on the log features that had unit tests only: compaction with
tombstones, retention by time and by size, the record size limit, and a topic of 1,000 partitions.

One 3-broker kafkalite cluster serves the module, with its log cleaner and retention check every
200 ms, so each wait below is for a condition (what a consumer reads, the earliest offset) with a
generous deadline, never a sleep. The size limit is judged on Apache Kafka 2.8.2 too (the session's
``apache_kafka``): the same record sizes, the same delivery reports. Retention and compaction run
on Kafka's own schedule (5 min and 15 s by default there), too slow for the suite; their expected
outcomes follow Kafka's rules (``Log.deletableSegments``, ``LogCleaner``), stated per test.

Segments are rolled after every batch (``segment.bytes=100``, each batch holds one record):
retention and compaction then act record by record, and the expected offsets are exact.
"""

from __future__ import annotations

import time
import uuid
import zlib

import pytest
from confluent_kafka import KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                  NewTopic)

from kafkalite.local.cluster import wait_until

from kafka_clients_tools import confluent_consumer, create_topic, module_cluster

pytestmark = [pytest.mark.integration]

#: the record size limit of the module's brokers (a topic's max.message.bytes defaults to it)
BROKER_MESSAGE_MAX_BYTES = 50_000

#: v2 record batch header: base offset .. record count (Kafka's DefaultRecordBatch overhead)
BATCH_OVERHEAD = 61

HOUR_MS = 3_600_000


@pytest.fixture(scope="module")
def cluster(request, zookeeper, tmp_path_factory):
    yield from module_cluster(request, zookeeper, tmp_path_factory, "confluent-log", {
        "log.cleaner.backoff.ms": 200,
        "log.retention.check.interval.ms": 200,
        "message.max.bytes": BROKER_MESSAGE_MAX_BYTES,
    })


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _producer(bootstrap: str, **extra) -> Producer:
    config = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
              "enable.idempotence": True, "log_level": 0}
    config.update(extra)
    return Producer(config)


def _produce_one_by_one(producer: Producer, topic: str, records, partition: int = 0) -> list:
    """Each (key, value, timestamp) as a batch of its own; returns the delivered offsets."""
    offsets = []
    for key, value, timestamp in records:
        reports = []
        producer.produce(topic, key=key, value=value, partition=partition,
                         timestamp=timestamp or 0,
                         on_delivery=lambda err, msg: reports.append((err, msg)))
        assert producer.flush(60) == 0
        [(err, msg)] = reports
        assert err is None, f"record {key!r} not delivered: {err}"
        offsets.append(msg.offset())
    return offsets


def _read_all(bootstrap: str, topic: str, partition: int = 0, timeout_s: float = 60) -> list:
    """(offset, key, value) of every record from the earliest offset to the end, read by
    confluent-kafka (auto.offset.reset=earliest, assign, partition EOF ends the read)."""
    consumer = confluent_consumer(bootstrap, **{"auto.offset.reset": "earliest",
                                                "enable.partition.eof": True})
    got = []
    try:
        consumer.assign([TopicPartition(topic, partition, -2)])    # OFFSET_BEGINNING
        deadline = time.monotonic() + timeout_s
        while True:
            assert time.monotonic() < deadline, f"no end of {topic}-{partition}; read {got}"
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                return got
            got.append((message.offset(), message.key(), message.value()))
    finally:
        consumer.close()


def _watermarks(bootstrap: str, topic: str, partition: int = 0) -> tuple[int, int]:
    consumer = confluent_consumer(bootstrap)
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    finally:
        consumer.close()


def _set_topic_config(bootstrap: str, topic: str, name: str, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource("TOPIC", topic, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(timeout=60)


# --- compaction --------------------------------------------------------------------------------

def test_compaction_keeps_latest_value_per_key_and_drops_tombstones(cluster):
    """Kafka's cleaner: the newest record of each key stays at its offset, older ones go; a
    tombstone stays while it is younger than ``delete.retention.ms`` and goes after; the active
    segment (the last batch) is never cleaned."""
    topic = _unique("compacted")
    bootstrap = cluster.bootstrap_servers
    create_topic(cluster, topic, 1, config={
        "cleanup.policy": "compact", "segment.bytes": "100", "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": str(24 * HOUR_MS)})
    keys = [f"k{i}".encode() for i in range(6)]
    records = [(keys[i % 6], f"v{i}".encode(), None) for i in range(24)]
    records += [(keys[0], None, None), (keys[1], None, None)]           # tombstones
    records += [(keys[2], b"last-k2", None), (b"active", b"stays in the active segment", None)]
    producer = _producer(bootstrap)
    offsets = _produce_one_by_one(producer, topic, records)
    assert offsets == list(range(len(records)))

    newest = {}
    for offset, (key, value, _) in enumerate(records):
        newest[key] = (offset, key, value)
    expected = sorted(newest.values())
    wait_until(lambda: _read_all(bootstrap, topic) == expected, 90,
               f"the cleaner to keep only the newest record of each key of {topic}")
    read = _read_all(bootstrap, topic)
    assert [r for r in read if r[2] is None] == [(24, keys[0], None), (25, keys[1], None)]
    assert _watermarks(bootstrap, topic) == (0, len(records))

    # tombstones older than delete.retention.ms go at the next cleaning; new records make
    # the log dirty again so that there is one
    _set_topic_config(bootstrap, topic, "delete.retention.ms", "100")
    more = [(b"later", f"l{i}".encode(), None) for i in range(3)]
    assert _produce_one_by_one(producer, topic, more) == [28, 29, 30]
    expected = [r for r in expected if r[2] is not None]
    expected += [(28 + i, b"later", f"l{i}".encode()) for i in range(3)]
    # "active" (offset 27) left the active segment and stays (the newest of its key); of
    # "later", l0 goes, l1 stays (the newest below the active segment, which the cleaner never
    # reads) and so does l2, in the active segment
    final = [r for r in expected if r[1] != b"later"] + [(29, b"later", b"l1"),
                                                         (30, b"later", b"l2")]
    wait_until(lambda: _read_all(bootstrap, topic) == final, 90,
               f"the cleaner to drop the tombstones of {topic} after delete.retention.ms")
    assert _watermarks(bootstrap, topic)[1] == 31


# --- retention -----------------------------------------------------------------------------------

def test_retention_ms_moves_log_start_past_old_records(cluster):
    """Records whose timestamp is older than ``retention.ms`` go with their segments, oldest
    first; confluent-kafka's earliest watermark is the first kept offset and a consumer from
    earliest reads only what is kept."""
    topic = _unique("retention-ms")
    bootstrap = cluster.bootstrap_servers
    create_topic(cluster, topic, 1, config={"segment.bytes": "100"})
    now = int(time.time() * 1000)
    old = [(f"o{i}".encode(), f"old {i}".encode(), now - 2 * HOUR_MS) for i in range(6)]
    fresh = [(f"f{i}".encode(), f"fresh {i}".encode(), now) for i in range(4)]
    producer = _producer(bootstrap)
    assert _produce_one_by_one(producer, topic, old + fresh) == list(range(10))
    assert _watermarks(bootstrap, topic) == (0, 10)       # default retention: a week

    _set_topic_config(bootstrap, topic, "retention.ms", str(HOUR_MS))
    wait_until(lambda: _watermarks(bootstrap, topic)[0] > 0, 60,
               f"retention.ms to delete the old segments of {topic}")
    assert _watermarks(bootstrap, topic) == (6, 10)
    assert _read_all(bootstrap, topic) == [(6 + i, k, v) for i, (k, v, _) in enumerate(fresh)]


def test_retention_ms_deletes_an_expired_active_segment_as_kafka(cluster):
    """Kafka 2.8 deletes the active segment too when it is past retention and wholly below the
    high watermark, rolling a new one (``Log.deleteSegments``): a log of old records only ends up
    with its earliest offset at its end (Apache Kafka 2.8.2 answered (5, 5) for these five
    records in one segment; kafkalite used to keep them all, (0, 5))."""
    topic = _unique("retention-active")
    bootstrap = cluster.bootstrap_servers
    create_topic(cluster, topic, 1)
    old = int(time.time() * 1000) - 2 * HOUR_MS
    producer = _producer(bootstrap)
    records = [(f"o{i}".encode(), f"old {i}".encode(), old) for i in range(5)]
    assert _produce_one_by_one(producer, topic, records) == list(range(5))
    _set_topic_config(bootstrap, topic, "retention.ms", str(HOUR_MS))
    wait_until(lambda: _watermarks(bootstrap, topic)[0] > 0, 60,
               f"retention.ms to delete the expired records of {topic}")
    assert _watermarks(bootstrap, topic) == (5, 5)
    assert _read_all(bootstrap, topic) == []
    assert _produce_one_by_one(producer, topic, [(b"new", b"kept", None)]) == [5]
    assert _read_all(bootstrap, topic) == [(5, b"new", b"kept")]


def test_retention_bytes_keeps_the_newest_segments(cluster):
    """``retention.bytes``: Kafka deletes the oldest segments while the log, less the segment,
    stays at or over the limit (``diff - segment.size >= 0``), so what is kept may exceed the
    limit by less than one segment. 12 one-record segments of B bytes and a limit of 4.5 B:
    7 go, 5 stay."""
    topic = _unique("retention-bytes")
    bootstrap = cluster.bootstrap_servers
    create_topic(cluster, topic, 1, config={"segment.bytes": "100"})
    records = [(f"key{i:03d}".encode(), b"v" * 30, None) for i in range(12)]
    producer = _producer(bootstrap)
    assert _produce_one_by_one(producer, topic, records) == list(range(12))
    batch = _batch_size(len(records[0][0]), 30)
    _set_topic_config(bootstrap, topic, "retention.bytes", str(4 * batch + batch // 2))
    wait_until(lambda: _watermarks(bootstrap, topic)[0] > 0, 60,
               f"retention.bytes to delete the oldest segments of {topic}")
    assert _watermarks(bootstrap, topic) == (7, 12)
    assert [offset for offset, _, _ in _read_all(bootstrap, topic)] == list(range(7, 12))


# --- the record size limit ------------------------------------------------------------------------

def _varint_size(value: int) -> int:
    zigzag = (value << 1) ^ (value >> 63)
    size = 1
    while zigzag >= 0x80:
        zigzag >>= 7
        size += 1
    return size


def _batch_size(key_len: int, value_len: int) -> int:
    """Bytes of an uncompressed v2 batch holding one record (no headers, deltas 0)."""
    body = 1 + 1 + 1 + _varint_size(key_len) + key_len + _varint_size(value_len) + value_len + 1
    return BATCH_OVERHEAD + _varint_size(body) + body


def _value_len_for_batch(key_len: int, batch_bytes: int) -> int:
    value_len = batch_bytes - BATCH_OVERHEAD - key_len - 8
    while _batch_size(key_len, value_len) > batch_bytes:
        value_len -= 1
    assert _batch_size(key_len, value_len) == batch_bytes
    return value_len


def _size_limit_reports(bootstrap: str, topic: str, limit: int) -> list:
    """Produce a record whose batch is exactly ``limit`` bytes, then one a byte over; the
    producer's own limit is far above, so the broker is the one to judge. Returns
    [(error code or None, offset)] and checks the first one reads back."""
    key = b"size"
    producer = _producer(bootstrap, **{"message.max.bytes": 4 * limit,
                                       "message.timeout.ms": 60_000})
    reports = []
    for batch_bytes in (limit, limit + 1):
        value = b"x" * _value_len_for_batch(len(key), batch_bytes)
        producer.produce(topic, key=key, value=value, partition=0, on_delivery=lambda err, msg:
                         reports.append((err and err.code(), msg.offset())))
        assert producer.flush(60) == 0
    [(offset, read_key, value)] = _read_all(bootstrap, topic)
    assert (offset, read_key, _batch_size(len(key), len(value))) == (0, key, limit)
    return reports


def test_record_at_message_max_bytes_is_stored_and_one_byte_over_is_refused(cluster):
    """The broker's ``message.max.bytes`` (no topic override): a batch of exactly that size is
    stored, one a byte bigger fails in the delivery report with MSG_SIZE_TOO_LARGE (librdkafka's
    name for the broker's MESSAGE_TOO_LARGE)."""
    topic = _unique("size-limit")
    create_topic(cluster, topic, 1)
    reports = _size_limit_reports(cluster.bootstrap_servers, topic, BROKER_MESSAGE_MAX_BYTES)
    assert reports[0] == (None, 0)
    assert reports[1][0] == KafkaError.MSG_SIZE_TOO_LARGE, reports
    assert _watermarks(cluster.bootstrap_servers, topic) == (0, 1)


def test_topic_max_message_bytes_answers_as_kafka(cluster, apache_kafka):
    """A topic's ``max.message.bytes`` on kafkalite and on Apache Kafka 2.8.2: the same delivery
    reports for a batch at the limit and one a byte over."""
    limit = 3000
    answers = {}
    for name, system in (("kafkalite", cluster), ("kafka", apache_kafka)):
        topic = _unique("topic-size-limit")
        admin = AdminClient({"bootstrap.servers": system.bootstrap_servers})
        admin.create_topics([NewTopic(topic, 1, 3, config={"max.message.bytes": str(limit)})]
                            )[topic].result(60)
        wait_until(lambda: admin.list_topics(topic, timeout=5).topics[topic].partitions[0]
                   .leader >= 0, 60, f"{name}: a leader for {topic}")
        answers[name] = _size_limit_reports(system.bootstrap_servers, topic, limit)
    assert answers["kafka"] == [(None, 0), (KafkaError.MSG_SIZE_TOO_LARGE, None)], answers
    assert answers["kafkalite"] == answers["kafka"]


# --- many partitions -----------------------------------------------------------------------------

def test_thousand_partitions_keyed_produce_and_consume(cluster):
    """1,000 partitions, two keyed records for each: librdkafka's default partitioner puts a key
    in partition crc32(key) % 1000, so keys are picked to reach every partition; every record
    is read back once, from the partition of its key.

    One replica per partition: the number of partitions is the point (Metadata, Produce and
    Fetch over 1,000 of them), replication is judged elsewhere. With three, creating the topic,
    acks=all and the brokers' shutdown (a producer-state snapshot fsynced per log, as Kafka's
    Log.close) each take about 20 s more on 2 busy cores."""
    topic = _unique("thousand")
    partitions = 1000
    bootstrap = cluster.bootstrap_servers
    create_topic(cluster, topic, partitions, rf=1, config={"min.insync.replicas": "1"})
    keys: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    candidate = 0
    while any(len(k) < 2 for k in keys.values()):
        key = f"key-{candidate}".encode()
        candidate += 1
        bucket = keys[zlib.crc32(key) % partitions]
        if len(bucket) < 2:
            bucket.append(key)
    sent = {key: f"value of {key.decode()}".encode() for ks in keys.values() for key in ks}
    producer = _producer(bootstrap, **{"linger.ms": 20})
    failures = []
    for key, value in sent.items():
        producer.produce(topic, key=key, value=value, on_delivery=lambda err, msg:
                         err is not None and failures.append(err))
        producer.poll(0)
    assert producer.flush(120) == 0
    assert failures == []

    consumer = confluent_consumer(bootstrap, **{"auto.offset.reset": "earliest"})
    read = {}
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + 120
        while len(read) < len(sent) and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=1000, timeout=0.5):
                assert message.error() is None, message.error()
                assert message.key() not in read, f"{message.key()!r} read twice"
                read[message.key()] = (message.partition(), message.value())
    finally:
        consumer.close()
    assert len(read) == len(sent), f"read {len(read)} of {len(sent)} records"
    assert read == {key: (zlib.crc32(key) % partitions, value) for key, value in sent.items()}
    assert {partition for partition, _ in read.values()} == set(range(partitions))
