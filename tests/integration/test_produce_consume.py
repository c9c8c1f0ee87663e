"""One real broker process, the blocking clients, real ZooKeeper."""

import time
from collections import defaultdict

import pytest

from kafkalite import AdminClient, Consumer, NewTopic, Producer, TopicPartition
from kafkalite.client.partitioner import partition_for_key

pytestmark = pytest.mark.integration


def _create(bootstrap, name, partitions=1, rf=1):
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(name, partitions, rf)], timeout_ms=20000)


def _drain(consumer, expected, timeout_s=60):
    records = []
    deadline = time.monotonic() + timeout_s
    while len(records) < expected and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            records.extend(batch)
    return records


def test_100k_keyed_records_round_trip(bootstrap_servers):
    _create(bootstrap_servers, "keyed", partitions=4)
    total, keys = 100_000, 97
    with Producer(bootstrap_servers=bootstrap_servers, linger_ms=5) as producer:
        futures = [producer.send("keyed", key=b"key-%d" % (i % keys), value=b"%d" % i)
                   for i in range(total)]
        producer.flush()
        metadata = [f.get(timeout=30) for f in futures[-10:]]
    assert all(m.offset >= 0 for m in metadata)
    consumer = Consumer(bootstrap_servers=bootstrap_servers, auto_offset_reset="earliest")
    consumer.assign([TopicPartition("keyed", p) for p in range(4)])
    records = _drain(consumer, total)
    consumer.close()
    assert len(records) == total
    assert sorted(int(r.value) for r in records) == list(range(total))
    by_partition = defaultdict(list)
    partition_of_key = {}
    for r in records:
        by_partition[r.partition].append(r)
        assert partition_of_key.setdefault(r.key, r.partition) == r.partition
        assert r.partition == partition_for_key(r.key, 4)     # where Kafka would put it
    for partition, rs in by_partition.items():
        offsets = [r.offset for r in rs]
        assert offsets == list(range(len(rs))), f"partition {partition} out of order"
        values = defaultdict(list)
        for r in rs:
            values[r.key].append(int(r.value))
        assert all(v == sorted(v) for v in values.values())


def test_timestamps_and_headers_survive(bootstrap_servers):
    _create(bootstrap_servers, "meta")
    headers = [("trace", b"abc"), ("empty", b""), ("none", None)]
    with Producer(bootstrap_servers=bootstrap_servers) as producer:
        producer.send("meta", key=None, value=b"x", timestamp_ms=1_600_000_000_123,
                      headers=headers).get(timeout=10)
    consumer = Consumer(bootstrap_servers=bootstrap_servers, auto_offset_reset="earliest")
    consumer.assign([TopicPartition("meta", 0)])
    [record] = _drain(consumer, 1)
    consumer.close()
    assert record.timestamp == 1_600_000_000_123
    assert [tuple(h) for h in record.headers] == headers
    assert record.key is None and record.value == b"x"


def test_list_offsets_by_timestamp(bootstrap_servers):
    _create(bootstrap_servers, "times")
    base = 1_700_000_000_000
    with Producer(bootstrap_servers=bootstrap_servers, linger_ms=0) as producer:
        for i in range(50):
            producer.send("times", value=b"%d" % i, timestamp_ms=base + i * 1000).get(timeout=10)
    consumer = Consumer(bootstrap_servers=bootstrap_servers)
    tp = TopicPartition("times", 0)
    found = consumer.offsets_for_times({tp: base + 20_500})[tp]
    assert (found.offset, found.timestamp) == (21, base + 21_000)
    assert consumer.offsets_for_times({tp: base})[tp].offset == 0
    assert consumer.offsets_for_times({tp: base + 10**9})[tp] is None
    assert consumer.beginning_offsets([tp])[tp] == 0
    assert consumer.end_offsets([tp])[tp] == 50
    consumer.close()


def test_long_poll_wakes_when_data_arrives(bootstrap_servers):
    _create(bootstrap_servers, "wake")
    # a 10-minute long poll: only the append can answer it before _drain's deadline
    consumer = Consumer(bootstrap_servers=bootstrap_servers, fetch_max_wait_ms=600_000,
                        request_timeout_ms=660_000, auto_offset_reset="earliest")
    tp = TopicPartition("wake", 0)
    consumer.assign([tp])
    assert consumer.position(tp) == 0     # metadata and offset in hand: poll() fetches at once
    # the fetch is written to the broker's socket before the producer below even connects
    assert consumer.poll(timeout_ms=100) == {}
    with Producer(bootstrap_servers=bootstrap_servers, linger_ms=0) as producer:
        producer.send("wake", value=b"now").get(timeout=10)
    records = _drain(consumer, 1, timeout_s=60)
    consumer.close()
    assert [r.value for r in records] == [b"now"]


def test_idempotent_producer_round_trip(bootstrap_servers):
    _create(bootstrap_servers, "exactly", partitions=2)
    with Producer(bootstrap_servers=bootstrap_servers, acks="all",
                  enable_idempotence=True) as producer:
        futures = [producer.send("exactly", key=b"%d" % (i % 7), value=b"%d" % i)
                   for i in range(5000)]
        producer.flush()
    assert all(f.get(timeout=10).offset >= 0 for f in futures)
    consumer = Consumer(bootstrap_servers=bootstrap_servers, auto_offset_reset="earliest")
    consumer.assign([TopicPartition("exactly", 0), TopicPartition("exactly", 1)])
    records = _drain(consumer, 5000)
    consumer.close()
    assert sorted(int(r.value) for r in records) == list(range(5000))
