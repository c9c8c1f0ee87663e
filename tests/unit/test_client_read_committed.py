"""The consumer's read_committed filter (kafkalite.client.decoder) on hand-built logs: data
batches of transactional and plain producers, and Kafka's COMMIT/ABORT marker batches
(record.control.build_control_batch), filtered with a fetch response's aborted transactions as
Kafka's Java Fetcher filters them. And the consumer's isolation level on the wire (Fetch and
ListOffsets at level 1), against the fake broker."""

from __future__ import annotations

import time

import pytest

from kafkalite.client.decoder import decode_records
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.messages import FetchAbortedTransaction
from kafkalite.record import build_batch
from kafkalite.record.control import build_control_batch
from kafkalite.record.header import set_base_offset

from test_client_fakebroker import FakeCluster


class Log:
    """Batches back to back, offsets assigned as a leader does."""

    def __init__(self):
        self.data = bytearray()
        self.next = 0

    def data_batch(self, values, pid=-1, transactional=False, compression="none") -> int:
        base = self.next
        batch = bytearray(build_batch([(1000 + i, None, v, None) for i, v in enumerate(values)],
                                      compression, producer_id=pid,
                                      producer_epoch=0 if pid >= 0 else -1,
                                      base_sequence=0 if pid >= 0 else -1,
                                      transactional=transactional))
        set_base_offset(batch, 0, base)
        self.data += batch
        self.next += len(values)
        return base

    def txn(self, pid, values, compression="none") -> int:
        return self.data_batch(values, pid, True, compression)

    def marker(self, pid, commit: bool) -> int:
        base = self.next
        batch = bytearray(build_control_batch(pid, 0, commit, 5, 2000))
        set_base_offset(batch, 0, base)
        self.data += batch
        self.next += 1
        return base


def values(data, position=0, aborted=None):
    decoded = decode_records(bytes(data), "t", 0, position, aborted_transactions=aborted)
    return [r.value for r in decoded.records], decoded.next_offset


def aborted(*pairs):
    return [FetchAbortedTransaction(pid, first) for pid, first in pairs]


def test_commit_markers_are_dropped_and_committed_records_kept():
    log = Log()
    log.txn(1, [b"a", b"b"])
    log.marker(1, commit=True)
    log.data_batch([b"plain"])
    assert values(log.data, aborted=[]) == ([b"a", b"b", b"plain"], 4)
    assert values(log.data) == ([b"a", b"b", b"plain"], 4)     # read_uncommitted alike


def test_aborted_transactions_are_dropped_only_for_read_committed():
    log = Log()
    first = log.txn(1, [b"x1"])
    log.txn(1, [b"x2", b"x3"])
    log.marker(1, commit=False)
    log.data_batch([b"after"])
    assert values(log.data, aborted=aborted((1, first))) == ([b"after"], 5)
    assert values(log.data, aborted=None) == ([b"x1", b"x2", b"x3", b"after"], 5)


def test_interleaved_producers_one_aborted_one_committed():
    log = Log()
    a = log.txn(1, [b"a1"])
    log.txn(2, [b"b1"])
    log.txn(1, [b"a2"], compression="gzip")
    log.txn(2, [b"b2"], compression="zstd")
    log.marker(2, commit=True)
    log.txn(1, [b"a3"])
    log.marker(1, commit=False)
    log.data_batch([b"idempotent"], pid=1)        # producer 1, not transactional: kept
    assert values(log.data, aborted=aborted((1, a)))[0] == [b"b1", b"b2", b"idempotent"]


def test_a_producer_aborts_then_commits_its_next_transaction():
    log = Log()
    first = log.txn(1, [b"lost"])
    log.marker(1, commit=False)
    log.txn(1, [b"kept"])
    log.marker(1, commit=True)
    assert values(log.data, aborted=aborted((1, first))) == ([b"kept"], 4)


def test_two_aborted_transactions_of_one_producer():
    log = Log()
    one = log.txn(1, [b"1"])
    log.marker(1, commit=False)
    log.txn(1, [b"ok"])
    log.marker(1, commit=True)
    two = log.txn(1, [b"2"])
    log.marker(1, commit=False)
    log.data_batch([b"end"])
    assert values(log.data, aborted=aborted((1, two), (1, one)))[0] == [b"ok", b"end"]


def test_an_aborted_transaction_begun_before_the_fetch_position():
    log = Log()
    first = log.txn(1, [b"x1"])
    log.txn(2, [b"c1"])
    second = log.txn(1, [b"x2"])
    log.marker(1, commit=False)
    log.marker(2, commit=True)
    # a fetch from inside the aborted transaction: the broker names it with its first offset
    assert values(log.data, position=second, aborted=aborted((1, first)))[0] == []
    assert values(log.data, position=1, aborted=aborted((1, first)))[0] == [b"c1"]


def test_an_abort_marker_before_the_position_still_ends_the_aborted_set():
    log = Log()
    first = log.txn(1, [b"x"])
    log.marker(1, commit=False)
    kept = log.txn(1, [b"y"])
    log.marker(1, commit=True)
    assert values(log.data, position=kept, aborted=aborted((1, first))) == ([b"y"], 4)


def test_a_transaction_aborted_in_the_list_but_its_marker_beyond_the_response():
    log = Log()
    first = log.txn(1, [b"x1", b"x2"])
    log.data_batch([b"plain"])
    # the marker is past what this response holds: the rest of the range stays filtered
    assert values(log.data, aborted=aborted((1, first))) == ([b"plain"], 3)


@pytest.fixture
def fake():
    cluster = FakeCluster(1)
    cluster.create_topic("t", 1)
    yield cluster
    cluster.close()


@pytest.mark.parametrize(("level", "wire"), [("read_committed", 1), ("read_uncommitted", 0)])
def test_read_committed_consumer_asks_for_isolation_level_1(fake, level, wire):
    from kafkalite.client import Consumer, Producer, TopicPartition

    with Producer(fake.bootstrap) as producer:
        producer.send("t", b"v").get(10)
    # one consumer per fake: a closed consumer's last long poll may reach the fake late
    consumer = Consumer(bootstrap_servers=fake.bootstrap, auto_offset_reset="earliest",
                        isolation_level=level)
    try:
        tp = TopicPartition("t", 0)
        consumer.assign([tp])
        assert consumer.end_offsets([tp]) == {tp: 1}
        got = consumer.poll(5000)
        assert [r.value for r in got[tp]] == [b"v"]
    finally:
        consumer.close()
    with fake.lock:
        log = list(fake.request_log)
    fetches = [r for _n, k, r in log if k == ApiKey.FETCH]
    lists = [r for _n, k, r in log if k == ApiKey.LIST_OFFSETS]
    assert fetches and {r.isolation_level for r in fetches} == {wire}
    assert lists and {r.isolation_level for r in lists} == {wire}


def test_isolation_level_is_checked():
    from kafkalite.client import Consumer
    from kafkalite.errors import ConfigError

    with pytest.raises(ConfigError, match="isolation_level"):
        Consumer(bootstrap_servers="127.0.0.1:1", isolation_level="committed")


class _NoCluster:
    """The fetcher's cluster, never asked anything here (no fetch is sent)."""

    def pool(self):
        return None


def test_fetch_answer_aborted_transactions_reach_the_decoder():
    """The fetcher hands the response's aborted list to the decoder for read_committed only."""
    from kafkalite.client.fetcher import Fetcher, FetchSettings
    from kafkalite.client.structs import TopicPartition
    from kafkalite.client.subscription_state import SubscriptionState

    log = Log()
    first = log.txn(1, [b"x"])
    log.marker(1, commit=False)
    log.data_batch([b"y"])
    for level, expected in ((1, [b"y"]), (0, [b"x", b"y"])):
        subs = SubscriptionState()
        tp = TopicPartition("t", 0)
        subs.assign([tp])
        subs.assignment[tp].seek(0)
        fetcher = Fetcher(_NoCluster(), subs, None, FetchSettings(isolation_level=level),
                          clock=lambda: 0.0)
        response = m.FetchResponse(responses=[m.FetchTopicResponse("t", [
            m.FetchPartitionResponse(0, 0, 3, 3, 0, bytes(log.data),
                                     aborted((1, first)) if level else None)])])
        fetcher.handle_response({tp: (0, subs.assignment[tp].epoch)}, response)
        chunks, _n = fetcher.drain(None)
        assert [r.value for _tp, recs in chunks for r in recs] == expected
        assert subs.assignment[tp].position == 3


@pytest.mark.parametrize(("level", "stable"),
                         [("read_committed", True), ("read_uncommitted", False)])
def test_read_committed_offset_fetches_require_stable_offsets(fake, level, stable):
    """KIP-447: a read_committed consumer's OffsetFetch asks for stable offsets (the broker then
    answers UNSTABLE_OFFSET_COMMIT while a transaction's offsets are pending), as Java's does."""
    from kafkalite.client import Consumer, TopicPartition

    consumer = Consumer(bootstrap_servers=fake.bootstrap, group_id="g",
                        isolation_level=level)
    try:
        assert consumer.committed(TopicPartition("t", 0)) is None
    finally:
        consumer.close()
    with fake.lock:
        fetches = [r for _n, k, r in fake.request_log if k == ApiKey.OFFSET_FETCH]
    assert fetches and {r.require_stable for r in fetches} == {stable}


def test_group_metadata(fake):
    from kafkalite.client import Consumer, ConsumerGroupMetadata
    from kafkalite.errors import InvalidGroupIdError

    consumer = Consumer(bootstrap_servers=fake.bootstrap)
    try:
        with pytest.raises(InvalidGroupIdError):
            consumer.group_metadata()
    finally:
        consumer.close()
    consumer = Consumer(bootstrap_servers=fake.bootstrap, group_id="g", group_instance_id="i")
    try:
        assert consumer.group_metadata() == ConsumerGroupMetadata("g", -1, "", "i")
        consumer.subscribe(["t"])
        wait = time.monotonic() + 20
        while not consumer.assignment():
            assert time.monotonic() < wait, "no assignment"
            consumer.poll(100)
        meta = consumer.group_metadata()
        assert meta.generation_id >= 1 and meta.member_id and meta.group_instance_id == "i"
    finally:
        consumer.close()
