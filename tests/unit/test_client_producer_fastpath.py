"""The producer's per-record fast path: columnar batches, append_sticky, the unchecked column
encoder (same bytes as build_batch), the lazy wait event of a batch's result, murmur2."""

from __future__ import annotations

import threading

import pytest
from test_client_fakebroker import FakeCluster

from kafkalite.client import Producer
from kafkalite.client.accumulator import RECORD_OVERHEAD, ProduceUnit, RecordAccumulator
from kafkalite.client.future import BatchResult
from kafkalite.client.partitioner import murmur2
from kafkalite.record import build_batch
from kafkalite.record.batch import build_batch_columns


class FakeClock:
    def __init__(self):
        self.now = 10.0

    def __call__(self):
        return self.now


def test_columns_fill_keys_and_headers_lazily_and_join_across_batches():
    acc = RecordAccumulator(batch_size=3 * (RECORD_OVERHEAD + 1), linger_ms=10_000,
                            clock=FakeClock())
    tp = ("t", 0)
    acc.append(tp, (1, None, b"a", None), RECORD_OVERHEAD + 1)
    acc.append(tp, (2, b"k", b"b", None), RECORD_OVERHEAD + 1)
    acc.append(tp, (3, None, b"c", (("h", b"v"),)), RECORD_OVERHEAD + 1)   # fills the batch
    acc.append(tp, (4, None, b"d", None), RECORD_OVERHEAD + 1)
    q = acc._queues[tp]
    first, second = q.closed[0], q.open
    assert first.keys == [None, b"k", None] and first.headers == [None, None, (("h", b"v"),)]
    assert second.keys is None and second.headers is None and len(second) == 1
    unit = ProduceUnit(tp, [first, second], first.size + second.size)
    stamps, keys, values, headers = unit.columns()
    assert (stamps, keys, values) == ([1, 2, 3, 4], [None, b"k", None, None],
                                      [b"a", b"b", b"c", b"d"])
    assert headers == [None, None, (("h", b"v"),), None]
    assert ProduceUnit(tp, [second], second.size).columns() == ([4], None, [b"d"], None)


@pytest.mark.parametrize("records", [
    [(1000, None, b"v1", None), (1001, None, b"v2", None)],
    [(1000, b"k1", b"v1", None), (999, None, None, (("a", b"1"), ("b", None)))],
    [(-1, None, b"", None), (5, b"", b"x" * 300, None)],
])
@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_build_batch_columns_makes_build_batchs_bytes(records, compression):
    stamps, keys, values, headers = (list(c) for c in zip(*records))
    keys = keys if any(k is not None for k in keys) else None
    headers = headers if any(h is not None for h in headers) else None
    for settings in ({}, {"producer_id": 7, "producer_epoch": 1, "base_sequence": 40}):
        assert build_batch_columns(stamps, keys, values, headers, compression, **settings) == \
            build_batch(records, compression, **settings)


def test_append_sticky_needs_a_sticky_partition_with_an_open_batch_with_room():
    wakes = []
    acc = RecordAccumulator(batch_size=2 * (RECORD_OVERHEAD + 5), linger_ms=10_000,
                            buffer_memory=10_000, wakeup=lambda: wakes.append(1),
                            clock=FakeClock())
    size = RECORD_OVERHEAD + 5
    assert acc.append_sticky("t", 1, b"hello", size) is None          # no sticky partition yet
    acc.set_sticky("t", ("t", 3))
    assert acc.append_sticky("t", 1, b"hello", size) is None          # no open batch there
    acc.append(("t", 3), (1, None, b"first", None), size)
    future = acc.append_sticky("t", 2, b"hello", size)                # fills the batch
    assert future._index == 1 and future._value_size == 5 and future._key_size == -1
    assert wakes and acc._queues[("t", 3)].open is None
    assert acc.append_sticky("t", 3, b"hello", size) is None          # full: a new batch
    acc.set_sticky("t", None)
    acc.append(("t", 3), (1, None, b"again", None), size)
    assert acc.append_sticky("t", 3, b"hello", size) is None          # forgotten


def test_batch_result_makes_its_event_only_for_a_waiter():
    result = BatchResult("t", 0)
    assert result._event is None and not result.wait(0)
    assert result._event is not None
    waiter = threading.Thread(target=result.wait, args=(60,))
    waiter.start()
    result.resolve(5)
    waiter.join()
    assert result.wait(0) and result.base_offset == 5
    resolved = BatchResult("t", 0)
    resolved.resolve(1)
    assert resolved.wait(None) and resolved._event is None


def test_plain_and_keyed_sends_mixed_land_in_order_with_their_offsets():
    cluster = FakeCluster(1)
    try:
        cluster.create_topic("t", 1)
        with Producer(cluster.bootstrap) as producer:
            futures = []
            for i in range(300):
                if i % 7 == 0:
                    futures.append(producer.send("t", b"k%d" % i, key=b"key"))
                elif i % 11 == 0:
                    futures.append(producer.send("t", b"h%d" % i, headers=[("n", b"%d" % i)]))
                else:
                    futures.append(producer.send("t", b"v%d" % i))
            offsets = [f.get(10).offset for f in futures]
        assert offsets == list(range(300))
        values = cluster.values("t", 0)
        assert values[:3] == [b"k0", b"v1", b"v2"] and values[11] == b"h11" and len(values) == 300
    finally:
        cluster.close()


def test_murmur2_matches_the_per_word_definition():
    def reference(data: bytes) -> int:        # Kafka's Utils.murmur2, word by word
        m, mask = 0x5BD1E995, 0xFFFFFFFF
        h = (0x9747B28C ^ len(data)) & mask
        body = len(data) - len(data) % 4
        for i in range(0, body, 4):
            k = int.from_bytes(data[i:i + 4], "little")
            k = (k * m) & mask
            k ^= k >> 24
            k = (k * m) & mask
            h = ((h * m) & mask) ^ k
        rest = data[body:]
        if len(rest) == 3:
            h ^= rest[2] << 16
        if len(rest) >= 2:
            h ^= rest[1] << 8
        if rest:
            h ^= rest[0]
            h = (h * m) & mask
        h ^= h >> 13
        h = (h * m) & mask
        h ^= h >> 15
        return h - (1 << 32) if h & 0x80000000 else h

    for n in list(range(0, 20)) + [255, 256, 257, 1000]:
        data = bytes((i * 37 + n) & 0xFF for i in range(n))
        assert murmur2(data) == reference(data), n


def test_append_keyed_opens_batches_and_leaves_a_full_buffer_to_the_waiting_path():
    wakes = []
    size = RECORD_OVERHEAD + 2 + 3
    acc = RecordAccumulator(batch_size=size * 2, linger_ms=10_000, buffer_memory=size * 3,
                            wakeup=lambda: wakes.append(1), clock=FakeClock())
    futures = [acc.append_keyed(("t", 5), 1, b"k%d" % i, b"val", size) for i in range(3)]
    assert [f._index for f in futures] == [0, 1, 0]                  # a new batch at the third
    assert futures[0]._key_size == 2 and futures[0]._value_size == 3
    q = acc._queues[("t", 5)]
    assert [b.keys for b in q.closed] == [[b"k0", b"k1"]] and q.open.keys == [b"k2"]
    assert acc.append_keyed(("t", 5), 1, b"k3", b"val", size) is None   # buffer full
    assert len(wakes) >= 2


def test_keyed_fast_path_places_keys_where_kafka_does():
    from kafkalite.client.partitioner import partition_for_key

    cluster = FakeCluster(1)
    try:
        cluster.create_topic("k", 7)
        with Producer(cluster.bootstrap) as producer:
            got = [producer.send("k", b"v", key=b"user-%d" % i).get(10).partition
                   for i in range(40)]
        assert got == [partition_for_key(b"user-%d" % i, 7) for i in range(40)]
    finally:
        cluster.close()
