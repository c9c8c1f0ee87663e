"""The consumer's parts on their own, with an injected clock (no sleeps, no sockets but the
IoLoop's socketpairs): SubscriptionState, Fetcher, OffsetsLookup, IoLoop."""

from __future__ import annotations

import socket
import threading

import pytest

from kafkalite import errors
from kafkalite.client.fetcher import Fetcher, FetchSettings
from kafkalite.client.io_loop import IoLoop
from kafkalite.client.offsets_lookup import OffsetsLookup
from kafkalite.client.structs import OffsetAndMetadata, TopicPartition
from kafkalite.client.subscription_state import SubscriptionState
from kafkalite.errors import IllegalStateError
from kafkalite.protocol import messages as m
from kafkalite.record import build_batch

TP = TopicPartition("t", 0)


class FakeClock:
    def __init__(self, now: float = 100.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:   # time passes only when somebody waits
        self.now += seconds


class FakeSnapshot:
    def __init__(self, leaders: dict):
        self.leaders = leaders          # {(topic, partition): node or None}
        self.topics = {}
        for (t, p) in leaders:
            self.topics.setdefault(t, set()).add(p)

    def leader_for(self, topic, partition):
        return self.leaders.get((topic, partition))


class FakeCluster:
    """What the fetcher and the offsets lookup use of ClusterMetadata."""

    def __init__(self, leaders=None, pool=None):
        self.snapshot = FakeSnapshot(leaders or {("t", 0): 1})
        self.updates_requested = 0
        self.refreshes = 0
        self.added: set = set()
        self._pool = pool

    def request_update(self):
        self.updates_requested += 1

    def stale(self):
        return False

    def refresh(self, topics=None):
        self.refreshes += 1
        return self.snapshot

    def add_topics(self, *topics):
        self.added.update(topics)

    def pool(self):
        return self._pool


class ScriptedConnection:
    """Answers each request with the next scripted response (or raises it)."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.requests = []

    def request(self, request):
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer


class ScriptedPool:
    def __init__(self, conns: dict):
        self.conns = conns
        self.dropped = []

    def get(self, node):
        return self.conns[node]

    def drop(self, node):
        self.dropped.append(node)

    def close(self):
        pass


def list_offsets_answer(tp, offset=-1, error=0, timestamp=-1):
    return m.ListOffsetsResponse(topics=[m.ListOffsetsTopicResponse(tp[0], [
        m.ListOffsetsPartitionResponse(tp[1], error, timestamp, offset)])])


def fetch_answer(tp, records=b"", error=0, hw=10):
    return m.FetchResponse(responses=[m.FetchTopicResponse(tp[0], [m.FetchPartitionResponse(
        tp[1], error, hw, hw, 0, records=records)])])


def batch(base: int, n: int) -> bytes:
    data = bytearray(build_batch([(1000 + i, None, b"v%d" % (base + i), None)
                                  for i in range(n)]))
    data[0:8] = base.to_bytes(8, "big")        # the broker patches the base offset in place
    return bytes(data)


# --- SubscriptionState ------------------------------------------------------------------------
def test_subscription_state_rules_and_assignment_keeps_partition_state():
    subs = SubscriptionState(FakeClock())
    with pytest.raises(IllegalStateError, match="either topics or a pattern"):
        subs.subscribe(set(), None, None)
    subs.assign([TP])
    with pytest.raises(IllegalStateError, match="after assign"):
        subs.subscribe({"t"}, None, None)
    subs.unsubscribe()
    subs.subscribe({"t"}, None, None)
    with pytest.raises(IllegalStateError, match="while subscribed"):
        subs.assign([TP])
    seen = []
    subs.on_assignment_change = seen.append
    subs.set_assignment({TP})
    assert subs.needs_reset and subs.missing_positions() == [subs.state(TP)]
    ps = subs.state(TP)
    ps.seek(5)
    epoch = ps.epoch
    subs.set_assignment({TP, TopicPartition("t", 1)})
    assert subs.state(TP) is ps and ps.position == 5 and ps.epoch == epoch
    assert seen == [{TP}, {TP, TopicPartition("t", 1)}]
    with pytest.raises(IllegalStateError, match="not assigned"):
        subs.state(("u", 0))


def test_subscription_state_pattern_pause_revoke_and_backoff_on_the_injected_clock():
    clock = FakeClock(50.0)
    subs = SubscriptionState(clock)
    subs.subscribe(set(), r"orders-.*", None)
    assert subs.match_pattern({"orders-a", "other"}) and subs.topics == {"orders-a"}
    assert not subs.match_pattern({"orders-a", "other"})
    subs.set_assignment({TP})
    subs.pause(TP)
    assert subs.paused() == {TP} and not subs.state(TP).fetchable(clock())
    subs.resume(TP)
    subs.state(TP).seek(7)
    subs.backoff([TP], 0.25)
    assert subs.state(TP).backoff_until == 50.25
    assert not subs.state(TP).fetchable(clock())
    clock.now = 50.25
    assert subs.state(TP).fetchable(clock())
    assert subs.positions() == {TP: 7}
    subs.revoke({TP})
    assert subs.state(TP).position is None and subs.needs_reset
    states = subs.seek_reset((), "earliest")
    assert [ps.reset for ps in states] == ["earliest"]


# --- Fetcher ----------------------------------------------------------------------------------
def make_fetcher(clock, offsets_answers=(), policy="latest", leaders=None):
    pool = ScriptedPool({1: ScriptedConnection(offsets_answers)})
    cluster = FakeCluster(leaders, pool)
    subs = SubscriptionState(clock)
    lookup = OffsetsLookup(cluster, pool, 0.1, clock, clock.sleep)
    fetcher = Fetcher(cluster, subs, lookup, FetchSettings(
        max_partition_fetch_bytes=1000, retry_backoff_ms=100, auto_offset_reset=policy),
        clock, clock.sleep)
    subs.on_assignment_change = fetcher.retain
    return fetcher, subs, cluster


def test_fetcher_buffers_whole_batches_and_drain_hands_out_decoded_records():
    clock = FakeClock()
    fetcher, subs, _ = make_fetcher(clock)
    subs.assign([TP])
    subs.state(TP).seek(0)
    epoch = subs.state(TP).epoch
    fetcher.handle_response({TP: (0, epoch)}, fetch_answer(TP, batch(0, 3) + batch(3, 2)))
    ps = subs.state(TP)
    assert ps.fetch_position == 5 and ps.position == 0 and ps.buffered == 1
    chunks, n = fetcher.drain(4)
    assert n == 4 and [r.value for r in chunks[0][1]] == [b"v0", b"v1", b"v2", b"v3"]
    assert ps.position == 4
    chunks, n = fetcher.drain(None)
    assert n == 1 and chunks[0][1][0].offset == 4 and ps.position == 5 and ps.buffered == 0


def test_fetcher_drops_stale_data_and_backs_off_partial_batches_on_the_clock():
    clock = FakeClock(10.0)
    fetcher, subs, _ = make_fetcher(clock)
    subs.assign([TP])
    ps = subs.state(TP)
    ps.seek(0)
    stale = ps.epoch
    ps.seek(0)                                   # a seek while that fetch was in flight
    fetcher.handle_response({TP: (0, stale)}, fetch_answer(TP, batch(0, 3)))
    assert not fetcher.completed
    whole = batch(0, 3)
    fetcher.handle_response({TP: (0, ps.epoch)}, fetch_answer(TP, whole[:40]))
    assert ps.backoff_until == 10.1 and not fetcher.completed   # cut short below the size
    big = batch(0, 200)
    assert len(big) > 1000
    fetcher.handle_response({TP: (0, ps.epoch)}, fetch_answer(TP, big[:500]))
    assert ps.fetch_size == len(big)             # a batch larger than the fetch size: grow


def test_fetcher_partition_errors_retriable_backoff_and_out_of_range_policies():
    clock = FakeClock(1.0)
    fetcher, subs, cluster = make_fetcher(clock)
    subs.assign([TP])
    ps = subs.state(TP)
    ps.seek(3)
    fetcher.handle_response({TP: (3, ps.epoch)},
                            fetch_answer(TP, error=errors.NotLeaderForPartitionError.code))
    assert ps.backoff_until == pytest.approx(1.1) and cluster.updates_requested == 1
    fetcher.handle_response({TP: (3, ps.epoch)},
                            fetch_answer(TP, error=errors.OffsetOutOfRangeError.code))
    assert ps.position is None and ps.reset == "latest" and subs.needs_reset

    fetcher, subs, _ = make_fetcher(FakeClock(), policy="none", offsets_answers=[
        list_offsets_answer(TP, 2), list_offsets_answer(TP, 9)])
    subs.assign([TP])
    subs.state(TP).seek(20)
    with pytest.raises(errors.OffsetOutOfRangeError, match=r"\[2, 9\)"):
        fetcher.handle_response({TP: (20, subs.state(TP).epoch)},
                                fetch_answer(TP, error=errors.OffsetOutOfRangeError.code))


def test_fetcher_paused_partition_keeps_nothing_and_refetches_from_its_position():
    fetcher, subs, _ = make_fetcher(FakeClock())
    subs.assign([TP])
    ps = subs.state(TP)
    ps.seek(0)
    fetcher.handle_response({TP: (0, ps.epoch)}, fetch_answer(TP, batch(0, 3)))
    subs.pause(TP)
    assert fetcher.drain(None) == ([], 0)
    assert ps.position == 0 and ps.fetch_position == 0 and not fetcher.completed


def test_reset_positions_uses_committed_offsets_then_the_policy_and_backs_off_failures():
    clock = FakeClock(5.0)
    other = TopicPartition("t", 1)
    fetcher, subs, _ = make_fetcher(clock, leaders={("t", 0): 1, ("t", 1): None},
                                    offsets_answers=[])
    subs.assign([TP, other])
    fetcher.reset_positions(lambda tps: {TP: OffsetAndMetadata(42, "")})
    assert subs.state(TP).position == 42
    assert subs.state(other).position is None                 # no leader: try again later
    assert subs.state(other).backoff_until == pytest.approx(5.1) and subs.needs_reset

    fetcher, subs, _ = make_fetcher(FakeClock(), policy="none")
    subs.assign([TP])
    with pytest.raises(errors.NoOffsetForPartitionError, match="seek"):
        fetcher.reset_positions(lambda tps: {})


def test_pushback_moves_positions_back_and_goes_first():
    fetcher, subs, _ = make_fetcher(FakeClock())
    subs.assign([TP])
    ps = subs.state(TP)
    ps.seek(0)
    fetcher.handle_response({TP: (0, ps.epoch)}, fetch_answer(TP, batch(0, 4)))
    chunks, _ = fetcher.drain(None)
    records = chunks[0][1]
    fetcher.push_back(records[2:])
    assert ps.position == 2
    chunks, n = fetcher.drain(1)
    assert n == 1 and chunks[0][1][0].offset == 2 and ps.position == 3
    subs.set_assignment(set())                   # unassigned: what was given back goes
    assert fetcher.pushback == []


# --- OffsetsLookup ----------------------------------------------------------------------------
def test_offsets_lookup_retries_on_the_injected_clock_and_reports_what_is_missing():
    clock = FakeClock(0.0)
    retriable = errors.NotLeaderForPartitionError.code
    conn = ScriptedConnection([list_offsets_answer(TP, error=retriable)] * 3)
    pool = ScriptedPool({1: conn})
    cluster = FakeCluster(pool=pool)
    lookup = OffsetsLookup(cluster, pool, 0.5, clock, clock.sleep)
    result = lookup.list_offsets({TP: -1}, timeout=1.0)
    assert result.found == {} and result.missing == [TP]
    assert isinstance(result.last_error, errors.NotLeaderForPartitionError)
    assert len(conn.requests) == 3 and clock.now == 1.0      # rounds at 0, 0.5, 1.0
    conn.answers = [list_offsets_answer(TP, error=retriable), list_offsets_answer(TP, 17, 0, 5)]
    assert lookup.list_offsets({TP: -1}, timeout=10).found == {TP: (17, 5)}


def test_offsets_lookup_unknown_partitions_and_errors():
    clock = FakeClock()
    pool = ScriptedPool({1: ScriptedConnection([
        errors.NetworkError("gone"), list_offsets_answer(TP, 4),
        list_offsets_answer(TP, error=errors.TopicAuthorizationFailedError.code)])})
    lookup = OffsetsLookup(FakeCluster(pool=pool), pool, 0.1, clock, clock.sleep)
    result = lookup.list_offsets({TP: -2, ("nope", 0): -2}, timeout=5, fresh=True,
                                 drop_unknown=True)
    assert result.found == {TP: (4, -1)} and result.unknown == [("nope", 0)]
    assert pool.dropped == [1]                   # the broken connection was let go
    with pytest.raises(errors.TopicAuthorizationFailedError, match="listing offsets of t-0"):
        lookup.list_once({TP: -1})


# --- IoLoop -----------------------------------------------------------------------------------
class SocketConnection:
    def __init__(self, sock, deadline=None):
        self.sock = sock
        self.deadline = deadline

    def fileno(self):
        return self.sock.fileno()

    def oldest_deadline(self):
        return self.deadline


def test_io_loop_dispatches_readable_and_overdue_nodes_and_wakes_from_another_thread():
    loop = IoLoop(wakeable=True)
    a, b = socket.socketpair()
    c, d = socket.socketpair()
    try:
        loop.register(1, SocketConnection(a))
        loop.register(2, SocketConnection(c, deadline=0.0))     # long overdue
        b.send(b"x")
        ready = []
        loop.poll(60, ready.append)
        assert sorted(ready) == [1, 2]
        loop.unregister(2)
        a.recv(1)
        waker = threading.Thread(target=loop.wakeup)
        waker.start()
        waker.join()
        ready.clear()
        loop.poll(None, ready.append)            # returns because of the wakeup alone
        assert ready == [] and not loop._wake_pending
    finally:
        loop.close()
        for s in (a, b, c, d):
            s.close()
