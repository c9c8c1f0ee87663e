"""Producer and RecordAccumulator against the fake broker."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time

import pytest
from test_client_fakebroker import FakeCluster

from kafkalite import errors
from kafkalite.client import Producer, RecordMetadata
from kafkalite.client.accumulator import RecordAccumulator
from kafkalite.client.partitioner import partition_for_key
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.record import read_batch


@pytest.fixture
def cluster():
    c = FakeCluster(1)
    yield c
    c.close()


@pytest.fixture
def cluster2():
    c = FakeCluster(2)
    yield c
    c.close()


def make(cluster, **kw):
    kw.setdefault("linger_ms", 1)
    kw.setdefault("retry_backoff_ms", 10)
    return Producer(cluster.bootstrap, **kw)


def produce_requests(cluster):
    return [r for _n, k, r in cluster.request_log if k == ApiKey.PRODUCE]


# --- accumulator ------------------------------------------------------------------------------

def _drain(acc, now, leader=1):
    in_flight: set = set()
    units, next_check, unknown = acc.drain(now, lambda tp: leader, lambda node: True,
                                           in_flight, 1 << 20)
    return units.get(leader, []), next_check, unknown


def test_accumulator_closes_batches_by_size():
    wakes = []
    acc = RecordAccumulator(batch_size=1000, linger_ms=10_000, wakeup=lambda: wakes.append(1))
    results = [acc.append(("t", 0), (i, None, b"v", None), 100) for i in range(25)]
    assert [idx for _r, idx in results[:12]] == list(range(10)) + [0, 1]
    assert len({id(r) for r, _ in results}) == 3          # 10 + 10 + 5 records
    # two full batches make the partition sendable; they go as one unit, and the open batch
    # behind them rides along (it would only wait for linger otherwise)
    units, _next_check, _ = _drain(acc, time.monotonic())
    assert len(units) == 1 and [len(b.records) for b in units[0].batches] == [10, 10, 5]
    assert units[0].record_count == 25
    assert wakes


def test_accumulator_linger_makes_open_batch_sendable():
    acc = RecordAccumulator(batch_size=1 << 20, linger_ms=50)
    acc.append(("t", 0), (1, None, b"v", None), 100)
    now = time.monotonic()
    units, next_check, _ = _drain(acc, now)
    assert units == [] and 0 < next_check <= 0.05
    units, _, _ = _drain(acc, now + 0.06)
    assert len(units) == 1 and units[0].record_count == 1


def test_accumulator_one_unit_per_partition_in_flight_and_retry_goes_first():
    acc = RecordAccumulator(batch_size=100, linger_ms=0)
    for i in range(3):
        acc.append(("t", 0), (i, None, b"v", None), 100)
    in_flight: set = set()
    units, _, _ = acc.drain(time.monotonic(), lambda tp: 1, lambda n: True, in_flight, 150)
    first = units[1][0]
    assert first.record_count == 1 and ("t", 0) in in_flight
    # nothing more for the partition while its unit is in flight
    units, _, _ = acc.drain(time.monotonic(), lambda tp: 1, lambda n: True, in_flight, 1 << 20)
    assert units == {}
    # the unit fails retriably: it goes back in front of the later batches
    in_flight.clear()
    first.retry_at = 0
    acc.reenqueue(first)
    units, _, _ = acc.drain(time.monotonic(), lambda tp: 1, lambda n: True, in_flight, 1 << 20)
    assert units[1][0] is first


def test_accumulator_unknown_leader_and_abort_on_new_batch():
    acc = RecordAccumulator(batch_size=1000, linger_ms=0)
    assert acc.append(("t", 0), (1, None, b"v", None), 10, abort_on_new_batch=True) is None
    acc.append(("t", 0), (1, None, b"v", None), 10)
    units, _, unknown = acc.drain(time.monotonic(), lambda tp: None, lambda n: True, set(),
                                  1 << 20)
    assert units == {} and unknown


def test_accumulator_buffer_memory_blocks_then_times_out():
    acc = RecordAccumulator(batch_size=100, linger_ms=0, buffer_memory=250, max_block=0.05)
    acc.append(("t", 0), (1, None, b"v", None), 100)
    acc.append(("t", 0), (1, None, b"v", None), 100)
    with pytest.raises(errors.KafkaTimeoutError, match="buffer"):
        acc.append(("t", 0), (1, None, b"v", None), 100)


# --- producer ---------------------------------------------------------------------------------

def test_send_and_get_metadata(cluster):
    cluster.create_topic("t", 1)
    with make(cluster) as p:
        futures = [p.send("t", b"v%d" % i, timestamp_ms=1000 + i) for i in range(10)]
        metas = [f.get(5) for f in futures]
    assert [md.offset for md in metas] == list(range(10))
    assert metas[3] == RecordMetadata("t", 0, 3, 1003, 0, -1, 2)
    assert metas[3].topic_partition == ("t", 0)
    assert cluster.values("t", 0) == [b"v%d" % i for i in range(10)]


class ManualClock:
    """A monotonic clock (seconds) that only the test moves."""

    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def clocked(cluster, clock, **kw):
    """A producer whose linger, backoff and delivery timeouts run on ``clock``."""

    class ClockedProducer(Producer):
        _clock = staticmethod(clock)

    kw.setdefault("retry_backoff_ms", 10)
    return ClockedProducer(cluster.bootstrap, **kw)


def test_linger_batches_records_into_one_request(cluster):
    cluster.create_topic("t", 1)
    clock = ManualClock()
    with clocked(cluster, clock, linger_ms=200) as p:
        futures = [p.send("t", b"x") for _ in range(50)]
        with pytest.raises(errors.KafkaTimeoutError):
            futures[0].get(0.3)                 # lingering: the clock has not moved
        assert produce_requests(cluster) == []
        clock.advance(0.2)
        futures[-1].get(5)
    reqs = produce_requests(cluster)
    assert len(reqs) == 1
    header, records = read_batch(reqs[0].topic_data["t"][0])
    assert header.record_count == 50


def test_default_linger_is_kafkas_zero():
    import inspect

    assert inspect.signature(Producer).parameters["linger_ms"].default == 0
    assert inspect.signature(RecordAccumulator).parameters["linger_ms"].default == 0


def test_a_lone_send_goes_out_at_once_with_the_default_linger(cluster):
    cluster.create_topic("t", 1)
    clock = ManualClock()                        # never moves: nothing may wait for linger
    with clocked(cluster, clock) as p:
        assert p.send("t", b"alone").get(5).offset == 0
        assert p.send("t", b"next").get(5).offset == 1
    assert [len(list(read_batch(r.topic_data["t"][0])[1])) for r in produce_requests(cluster)] \
        == [1, 1]


def test_a_busy_loop_batches_while_a_request_is_in_flight(cluster):
    """linger 0: the first record goes alone; what is sent while its request is in flight
    gathers in one batch that goes when the answer comes back (Kafka's accumulator)."""
    cluster.create_topic("t", 1)
    clock = ManualClock()
    with clocked(cluster, clock) as p:
        p.partitions_for("t")                    # metadata in hand before the broker pauses
        cluster.brokers[0].paused.clear()        # the broker holds the first produce
        first = p.send("t", b"0")
        deadline = time.monotonic() + 5
        while p.metrics()["requests"] < 1 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert p.metrics()["requests"] == 1
        rest = [p.send("t", b"%d" % i) for i in range(1, 100)]
        cluster.brokers[0].paused.set()
        assert first.get(5).offset == 0
        assert [f.get(5).offset for f in rest] == list(range(1, 100))
    counts = [read_batch(r.topic_data["t"][0])[0].record_count
              for r in produce_requests(cluster)]
    assert counts == [1, 99]


def test_batch_size_triggers_send_before_linger(cluster):
    cluster.create_topic("t", 1)
    with make(cluster, linger_ms=60_000, batch_size=1000) as p:
        futures = [p.send("t", b"x" * 100) for _ in range(9)]   # 9 * 116 bytes > 1000
        futures[0].get(5)
        assert futures[7].is_done or futures[7].get(5)


def test_keyed_records_land_on_murmur2_partitions(cluster):
    cluster.create_topic("t", 6)
    keys = [b"user-%d" % i for i in range(40)] + [b"foobar"]
    with make(cluster) as p:
        metas = [p.send("t", b"v", key=k).get(5) for k in keys]
    for k, md in zip(keys, metas):
        assert md.partition == partition_for_key(k, 6)
    assert metas[-1].partition == partition_for_key(b"foobar", 6)
    for md, k in zip(metas, keys):
        recs = list(cluster.partition("t", md.partition).records())
        assert recs[md.offset].key == k


def test_null_keys_are_sticky_until_the_batch_is_full(cluster):
    cluster.create_topic("t", 3)
    with make(cluster, batch_size=500, linger_ms=1000) as p:
        metas = [p.send("t", b"x" * 100) for _ in range(40)]
        p.flush(5)
        parts = [f.get(1).partition for f in metas]
    runs = [parts[0]]
    for a, b in zip(parts, parts[1:]):
        if a != b:
            runs.append(b)
    assert len(set(parts)) == 3                   # spread over every partition ...
    assert len(runs) < len(parts) / 2             # ... in runs, not record by record


def test_order_kept_across_a_retry(cluster):
    cluster.create_topic("t", 1)
    cluster.produce_errors[("t", 0)] = [errors.NotLeaderForPartitionError.code]
    with make(cluster, batch_size=300, linger_ms=0,
              max_in_flight_requests_per_connection=5) as p:
        futures = [p.send("t", b"%d" % i) for i in range(300)]
        offsets = [f.get(5).offset for f in futures]
        assert p.metrics()["retries"] >= 1
    assert offsets == list(range(300))
    assert cluster.values("t", 0) == [b"%d" % i for i in range(300)]


def test_leader_moves_to_another_broker(cluster2):
    cluster2.create_topic("t", 1)                 # led by broker 1
    with make(cluster2, linger_ms=0) as p:
        assert p.send("t", b"a").get(5).offset == 0
        cluster2.topics["t"][0].leader = 2        # broker 1 now answers NOT_LEADER
        md = p.send("t", b"b").get(5)
    assert md.offset == 1
    nodes = [n for n, k, _r in cluster2.request_log if k == ApiKey.PRODUCE]
    assert nodes[0] == 1 and nodes[-1] == 2


def test_non_retriable_error_fails_the_futures(cluster):
    cluster.create_topic("t", 1)
    cluster.produce_errors[("t", 0)] = [errors.InvalidRecordError.code]
    seen = []
    with make(cluster) as p:
        f = p.send("t", b"x").add_errback(seen.append)
        with pytest.raises(errors.InvalidRecordError):
            f.get(5)
        assert f.failed() and isinstance(f.exception, errors.InvalidRecordError)
        assert p.send("t", b"y").get(5).offset == 0    # later records are fine
    assert isinstance(seen[0], errors.InvalidRecordError)


def test_retries_exhausted(cluster):
    cluster.create_topic("t", 1)
    cluster.produce_errors[("t", 0)] = [errors.NotEnoughReplicasError.code] * 10
    with make(cluster, retries=2) as p:
        with pytest.raises(errors.NotEnoughReplicasError):
            p.send("t", b"x").get(5)
    assert len(produce_requests(cluster)) == 3


def test_delivery_timeout_when_no_leader(cluster):
    cluster.create_topic("t", 1)
    cluster.topics["t"][0].leader = 99            # not a live broker
    with make(cluster, delivery_timeout_ms=200) as p:
        f = p.send("t", b"x")
        with pytest.raises(errors.KafkaTimeoutError, match="expiring"):
            f.get(5)


def test_acks_zero_resolves_with_offset_minus_one(cluster):
    cluster.create_topic("t", 1)
    with make(cluster, acks=0) as p:
        futures = [p.send("t", b"%d" % i) for i in range(20)]
        metas = [f.get(5) for f in futures]
    assert {md.offset for md in metas} == {-1}
    deadline = time.monotonic() + 5
    while len(cluster.values("t", 0)) < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert cluster.values("t", 0) == [b"%d" % i for i in range(20)]


def test_message_too_large_and_invalid_topic_fail_at_send(cluster):
    cluster.create_topic("t", 1)
    with make(cluster, max_request_size=1000) as p:
        with pytest.raises(errors.MessageTooLargeError):
            p.send("t", b"x" * 2000)
        with pytest.raises(errors.InvalidTopicError):
            p.send("bad topic!", b"x")
        with pytest.raises(errors.InvalidTopicError):
            p.send("", b"x")
        with pytest.raises(TypeError, match="value_serializer"):
            p.send("t", "not bytes")
        with pytest.raises(errors.UnknownTopicOrPartitionError):
            p.send("t", b"x", partition=5)
        assert p.send("t", b"ok", partition=0).get(5).offset == 0


def test_serializers_headers_and_tombstones(cluster):
    cluster.create_topic("t", 1)
    with make(cluster, key_serializer=str.encode,
              value_serializer=lambda v: json.dumps(v).encode()) as p:
        p.send("t", {"a": 1}, key="k", headers=[("h", b"1")]).get(5)
        p.send("t", None, key="k").get(5)          # a tombstone stays None
    recs = list(cluster.partition("t", 0).records())
    assert recs[0].key == b"k" and recs[0].value == b'{"a": 1}'
    assert recs[0].headers == (("h", b"1"),)
    assert recs[1].value is None


def test_compression_roundtrip(cluster):
    cluster.create_topic("t", 1)
    with make(cluster, compression_type="gzip") as p:
        for i in range(100):
            p.send("t", b"value %d" % i)
        p.flush(5)
    assert cluster.values("t", 0) == [b"value %d" % i for i in range(100)]
    header, _ = read_batch(cluster.partition("t", 0).batches[0][2])
    assert header.compression == 1


def test_callbacks_run_with_metadata(cluster):
    cluster.create_topic("t", 1)
    got = []
    done = threading.Event()
    with make(cluster) as p:
        p.send("t", b"x").add_callback(lambda md, tag: (got.append((md.offset, tag)),
                                                        done.set()), "tag")
        assert done.wait(5)
        f = p.send("t", b"y")
        f.get(5)
        f.add_callback(lambda md: got.append((md.offset, "late")))   # already done: runs now
    assert got == [(0, "tag"), (1, "late")]


def test_flush_timeout_then_close_delivers(cluster):
    cluster.create_topic("t", 1)
    p = make(cluster)
    p.send("t", b"a").get(5)
    cluster.brokers[0].paused.clear()             # the broker stops answering
    f = p.send("t", b"b")
    with pytest.raises(errors.KafkaTimeoutError):
        p.flush(timeout=0.2)
    cluster.brokers[0].paused.set()
    p.close()
    assert f.get(1).offset == 1
    with pytest.raises(errors.IllegalStateError):
        p.send("t", b"c")


def test_close_with_timeout_fails_what_is_left(cluster):
    cluster.create_topic("t", 1)
    p = make(cluster, linger_ms=0)
    p.send("t", b"a").get(5)
    cluster.brokers[0].paused.clear()
    f = p.send("t", b"b")
    p.close(timeout=0.2)
    with pytest.raises(errors.KafkaError):
        f.get(1)
    cluster.brokers[0].paused.set()


def test_lost_connection_is_retried(cluster):
    cluster.create_topic("t", 1)
    with make(cluster, linger_ms=0) as p:
        p.send("t", b"a").get(5)
        cluster.brokers[0].drop_connections()
        time.sleep(0.05)
        assert p.send("t", b"b").get(5).offset == 1


def test_idempotent_batches_carry_producer_id_and_sequences(cluster):
    cluster.create_topic("t", 1)
    with make(cluster, enable_idempotence=True, acks="all", batch_size=200,
              linger_ms=0) as p:
        futures = [p.send("t", b"x" * 50) for _ in range(10)]
        for f in futures:
            f.get(5)
    headers = [read_batch(data)[0] for _b, _l, data in cluster.partition("t", 0).batches]
    assert {h.producer_id for h in headers} == {1000}
    expected = 0
    for h in headers:
        assert h.base_sequence == expected
        expected += h.record_count
    assert cluster.count(ApiKey.INIT_PRODUCER_ID) == 1


def test_config_errors():
    with pytest.raises(errors.ConfigError):
        Producer("127.0.0.1:1", acks=2)
    with pytest.raises(errors.ConfigError):
        Producer("127.0.0.1:1", enable_idempotence=True, acks=1)
    with pytest.raises(errors.UnsupportedCompressionTypeError):
        Producer("127.0.0.1:1", compression_type="brotli")


def test_partitions_for_and_auto_created_topic(cluster):
    cluster.leader_not_available_rounds = 1
    cluster.default_partitions = 3
    with make(cluster) as p:
        assert p.partitions_for("fresh") == {0, 1, 2}
        assert p.send("fresh", b"x", partition=2).get(5).partition == 2


def test_close_from_a_callback_does_not_deadlock(cluster):
    cluster.create_topic("t", 1)
    p = make(cluster)
    closed = threading.Event()

    def close_it(_md):
        p.close()
        closed.set()

    p.send("t", b"a").add_callback(close_it)
    assert closed.wait(5)
    p._sender.join(5)
    assert not p._sender.is_alive()


# --- no broker: fail fast when nothing listens, log a failing refresh once -------------------

def test_send_fails_at_once_when_every_bootstrap_address_refuses(closed_ports, connects):
    servers = ",".join(f"127.0.0.1:{port}" for port in closed_ports)
    with Producer(servers, max_block_ms=60000, retry_backoff_ms=10) as p:
        with pytest.raises(errors.NoBrokersAvailableError) as info:
            p.send("t", b"x")
    assert info.value.refused
    assert all(f"127.0.0.1:{port}" in str(info.value) for port in closed_ports)
    # one round over the bootstrap addresses, not max_block_ms of retries (and the idle sender
    # thread asked nobody anything)
    assert connects == {port: 1 for port in closed_ports}


def test_refused_after_the_cluster_answered_is_retried(cluster, connects):
    cluster.create_topic("t", 1)
    port = cluster.brokers[0].port
    with make(cluster, max_block_ms=300) as p:
        p.send("t", b"a").get(5)
        cluster.close()                          # the broker goes away (a restart, say)
        before = connects.get(port, 0)
        with pytest.raises(errors.NoBrokersAvailableError):
            p.send("other", b"x")                # needs fresh metadata: retried to the end
        assert connects[port] - before >= 2
        p.close(0)


def test_a_broker_that_does_not_answer_is_retried_until_max_block(connects):
    with socket.socket() as silent:              # accepts connections (backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        port = silent.getsockname()[1]
        with Producer(f"127.0.0.1:{port}", max_block_ms=400, request_timeout_ms=50,
                      retry_backoff_ms=10) as p:
            with pytest.raises(errors.NoBrokersAvailableError) as info:
                p.send("t", b"x")
            p.close(0)
    assert not info.value.refused
    assert connects[port] >= 2


def test_a_failing_metadata_refresh_is_logged_once(cluster, caplog):
    cluster.create_topic("t", 1)
    with caplog.at_level(logging.DEBUG, logger="kafkalite.client.producer"):
        p = make(cluster)
        p.send("t", b"a").get(5)
        cluster.close()                          # every later refresh is refused
        f = p.send("t", b"b")                    # queued: the sender needs metadata
        deadline = time.monotonic() + 10
        while (p.metrics()["metadata_refresh_failures"] < 6
               and time.monotonic() < deadline):
            time.sleep(0.01)
        failures = p.metrics()["metadata_refresh_failures"]
        p.close(0)
    assert failures >= 6
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
              and r.getMessage().startswith("producer metadata refresh failed")]
    # once per distinct failure (the kept connection closing first, then every connect
    # refused), never once per attempt
    assert len([w for w in warned if "Connection refused" in w]) == 1
    assert len(warned) == len(set(warned)) <= 2
    repeats = [r for r in caplog.records if r.levelno == logging.DEBUG
               and r.getMessage().startswith("producer metadata refresh failed (again")]
    assert len(repeats) >= failures - len(warned)
    # the record waiting for its leader is not "retried" at every connect attempt either
    assert len([r for r in caplog.records if r.levelno == logging.WARNING
                and "Connection refused" in r.getMessage()]) <= 2
    with pytest.raises(errors.KafkaError):
        f.get(1)


def test_repeated_failure_log_says_it_again_only_when_something_changed(caplog):
    from kafkalite.client.producer import RepeatedFailureLog

    logger = logging.getLogger("test.repeated")

    def no_brokers(*attempts):
        exc = errors.NoBrokersAvailableError("no broker answered: " + "; ".join(attempts))
        exc.attempts = attempts
        return exc

    refused = ["a:1 (refused)", "b:2 (refused)"]
    with caplog.at_level(logging.DEBUG, logger="test.repeated"):
        failures = RepeatedFailureLog(logger, "refresh failed")
        failures.succeeded()                     # nothing to say
        for _ in range(10):
            failures.failed(no_brokers(*refused))
        failures.failed(no_brokers(*reversed(refused)))  # same failure, other order
        failures.failed(errors.RequestTimedOutError("slow"))         # another error
        failures.failed(errors.RequestTimedOutError("slow"))
        failures.succeeded()                                          # it recovered ...
        failures.succeeded()
        failures.failed(errors.RequestTimedOutError("slow"))         # ... and failed again
    levels = [(r.levelname, r.getMessage().split(":")[0]) for r in caplog.records
              if r.levelno >= logging.INFO]
    assert levels == [("WARNING", "refresh failed"), ("WARNING", "refresh failed"),
                      ("INFO", "refresh failed"), ("WARNING", "refresh failed")]
    assert "recovered after 2 failure(s)" in caplog.records[-2].getMessage()
