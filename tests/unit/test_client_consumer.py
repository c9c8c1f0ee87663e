"""Consumer and the fetch decoder against the fake broker."""

from __future__ import annotations

import json
import threading
import time

import pytest
from test_client_fakebroker import FakeCluster, FakePartition

from kafkalite import errors
from kafkalite.client import Consumer, ConsumerRecord, OffsetAndTimestamp, TopicPartition
from kafkalite.client.decoder import decode_records, scan_batches
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.record import build_batch

TP = TopicPartition("t", 0)


@pytest.fixture
def cluster():
    c = FakeCluster(1)
    yield c
    c.close()


def fill(cluster, topic="t", partition=0, n=10, per_batch=5, start_ts=1000, value=b"v%d",
         key=None, headers=None):
    """Append ``n`` records in batches of ``per_batch`` straight into the fake's log."""
    with cluster.lock:
        part = cluster.topics[topic][partition]
        first = part.leo
        for i in range(0, n, per_batch):
            recs = [(start_ts + first + j, key, value % (first + j) if b"%d" in value else value,
                     headers) for j in range(i, min(i + per_batch, n))]
            part.append(build_batch(recs))
        cluster.lock.notify_all()


def make(cluster, *topics, **kw):
    kw.setdefault("retry_backoff_ms", 10)
    kw.setdefault("fetch_max_wait_ms", 50)
    return Consumer(*topics, bootstrap_servers=cluster.bootstrap, **kw)


def poll_all(consumer, want: int, timeout: float = 5.0) -> list[ConsumerRecord]:
    out: list = []
    deadline = time.monotonic() + timeout
    while len(out) < want and time.monotonic() < deadline:
        for recs in consumer.poll(timeout_ms=100).values():
            out.extend(recs)
    return out


def test_assign_seek_to_beginning_poll_and_position(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=30)
    with make(cluster) as c:
        c.assign([TP])
        assert c.assignment() == {TP}
        c.seek_to_beginning()
        recs = poll_all(c, 30)
        assert [r.offset for r in recs] == list(range(30))
        assert recs[3] == ConsumerRecord("t", 0, 3, 1003, 0, None, b"v3", ())
        assert c.position(TP) == 30
        assert c.highwater(TP) == 30


def test_max_poll_records_and_dict_by_partition(cluster):
    cluster.create_topic("t", 2)
    fill(cluster, partition=0, n=20)
    fill(cluster, partition=1, n=20)
    with make(cluster, "t", auto_offset_reset="earliest", max_poll_records=7) as c:
        seen = {TopicPartition("t", 0): [], TopicPartition("t", 1): []}
        deadline = time.monotonic() + 5
        while sum(map(len, seen.values())) < 40 and time.monotonic() < deadline:
            got = c.poll(timeout_ms=100)
            assert sum(map(len, got.values())) <= 7
            for tp, recs in got.items():
                assert all(r.partition == tp.partition for r in recs)
                seen[tp].extend(r.offset for r in recs)
        assert seen[TopicPartition("t", 0)] == list(range(20))
        assert seen[TopicPartition("t", 1)] == list(range(20))


def test_latest_reset_only_sees_new_records(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=10)
    with make(cluster, "t") as c:
        assert c.poll(timeout_ms=200) == {}
        assert c.position(TP) == 10
        fill(cluster, n=3)
        assert [r.offset for r in poll_all(c, 3)] == [10, 11, 12]


def test_reset_policy_none_and_seek(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=10)
    with make(cluster, auto_offset_reset="none") as c:
        c.assign([TP])
        with pytest.raises(errors.NoOffsetForPartitionError, match="t-0"):
            c.poll(timeout_ms=100)
        c.seek(TP, 7)
        assert [r.offset for r in poll_all(c, 3)] == [7, 8, 9]
        c.seek(TP, 500)
        with pytest.raises(errors.OffsetOutOfRangeError) as info:
            poll_all(c, 1, timeout=2)
        assert "t-0" in str(info.value) and "[0, 10)" in str(info.value)
        assert info.value.partition_offsets == {TP: 500}


@pytest.mark.parametrize("policy,expected", [("earliest", 0), ("latest", 10)])
def test_out_of_range_resets_by_policy(cluster, policy, expected):
    cluster.create_topic("t", 1)
    fill(cluster, n=10)
    with make(cluster, auto_offset_reset=policy) as c:
        c.assign([TP])
        c.seek(TP, 999)
        recs = [r for rs in c.poll(timeout_ms=300).values() for r in rs]
        if policy == "latest":
            assert recs == []
            fill(cluster, n=2)
            recs = poll_all(c, 1)
        assert recs[0].offset == expected


def test_seek_into_the_middle_of_a_batch(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=20, per_batch=10)
    with make(cluster) as c:
        c.assign([TP])
        c.seek(TP, 13)        # the fetch returns the batch 10..19: records before 13 are dropped
        recs = poll_all(c, 7)
        assert [r.offset for r in recs] == list(range(13, 20))


def test_deserializers_skip_none(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=3, value=b'{"n": 1}', key=b"k")
    fill(cluster, n=1, value=b"%d")
    with cluster.lock:
        cluster.topics["t"][0].append(build_batch([(5, b"k", None, None)]))   # tombstone
    with make(cluster, auto_offset_reset="earliest", key_deserializer=bytes.decode,
              value_deserializer=json.loads) as c:
        c.assign([TP])
        recs = poll_all(c, 5)
    assert recs[0].key == "k" and recs[0].value == {"n": 1}
    assert recs[3].value == 3 and recs[3].key is None
    assert recs[4].value is None and recs[4].key == "k"


def test_headers_and_log_append_time(cluster):
    from kafkalite.record.header import set_log_append_time

    cluster.create_topic("t", 1)
    fill(cluster, n=2, headers=[("h", b"x")])
    with cluster.lock:
        part = cluster.topics["t"][0]
        base, last, data = part.batches[0]
        buf = bytearray(data)
        set_log_append_time(buf, 0, 424242)
        part.batches[0] = (base, last, bytes(buf))
    with make(cluster, auto_offset_reset="earliest") as c:
        c.assign([TP])
        recs = poll_all(c, 2)
    assert recs[0].headers == (("h", b"x"),)
    assert recs[0].timestamp == 424242 and recs[0].timestamp_type == 1


def test_fetches_are_pipelined(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=400, per_batch=20)
    with make(cluster, auto_offset_reset="earliest", max_poll_records=10,
              max_partition_fetch_bytes=1500) as c:
        c.assign([TP])
        first = c.poll(timeout_ms=2000)
        assert len(first[TP]) == 10
        # the next fetch went out before the application got its first records
        deadline = time.monotonic() + 2
        while cluster.count(ApiKey.FETCH) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert cluster.count(ApiKey.FETCH) >= 2
        assert c.position(TP) == 10
        second = poll_all(c, 390)
        assert [r.offset for r in first[TP] + second] == list(range(400))


def test_partial_trailing_batches(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=300, per_batch=7)
    cluster.fetch_truncate = True         # answers cut batches in the middle
    with make(cluster, auto_offset_reset="earliest", max_partition_fetch_bytes=1000) as c:
        c.assign([TP])
        recs = poll_all(c, 300)
    assert [r.offset for r in recs] == list(range(300))


def test_batch_larger_than_the_fetch_size_is_fetched_whole(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=50, per_batch=50, value=b"x" * 100)    # one ~6 KB batch
    cluster.fetch_truncate = True
    with make(cluster, auto_offset_reset="earliest", max_partition_fetch_bytes=1024) as c:
        c.assign([TP])
        recs = poll_all(c, 50)
    assert len(recs) == 50


def test_iteration_stops_after_consumer_timeout(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=25)
    with make(cluster, "t", auto_offset_reset="earliest", consumer_timeout_ms=200) as c:
        assert [r.offset for r in c] == list(range(25))     # ends once nothing more comes
        fill(cluster, n=2)
        assert [r.offset for r in c] == [25, 26]       # a new iteration continues


def test_iteration_goes_on_through_empty_fetches_within_consumer_timeout(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=5)

    def fetches_at_5():
        return sum(1 for _n, k, r in list(cluster.request_log) if k == ApiKey.FETCH
                   and r.topics[0].partitions[0].fetch_offset == 5)

    def fill_after_empty_fetches():
        # the fake holds each fetch fetch_max_wait_ms when nothing arrives: when the 8th is
        # asked, 7 came back empty, 1.75 s, longer than one poll inside the iteration (1 s)
        deadline = time.monotonic() + 60
        while fetches_at_5() < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        fill(cluster, n=2)

    with make(cluster, "t", auto_offset_reset="earliest", consumer_timeout_ms=60000,
              fetch_max_wait_ms=250) as c:
        it = iter(c)
        assert [next(it).offset for _ in range(5)] == list(range(5))
        filler = threading.Thread(target=fill_after_empty_fetches)
        filler.start()
        # the same iteration waits through the empty answers and yields what came later
        assert [next(it).offset for _ in range(2)] == [5, 6]
        filler.join()
    assert fetches_at_5() >= 8


def test_breaking_out_of_iteration_keeps_position_exact(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=50, per_batch=50)
    with make(cluster, auto_offset_reset="earliest", group_id="g",
              consumer_timeout_ms=300) as c:
        c.assign([TP])
        got = []
        for r in c:
            got.append(r.offset)
            if len(got) == 12:
                break
        assert c.position(TP) == 12
        c.commit()
        assert c.committed(TP) == 12
        rest = [r.offset for r in c.poll(timeout_ms=1000, max_records=100)[TP]]
        assert rest[0] == 12 and got + rest == list(range(50))


def test_next_on_consumer(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=3)
    with make(cluster, "t", auto_offset_reset="earliest", consumer_timeout_ms=200) as c:
        assert [next(c).offset for _ in range(3)] == [0, 1, 2]
        with pytest.raises(StopIteration):
            next(c)


def test_subscribe_picks_up_new_partitions(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=2)
    with make(cluster, "t", auto_offset_reset="earliest", metadata_max_age_ms=100) as c:
        assert len(poll_all(c, 2)) == 2
        with cluster.lock:
            cluster.topics["t"].append(FakePartition(1, [1]))
        fill(cluster, partition=1, n=3)
        recs = poll_all(c, 3)
        assert {r.partition for r in recs} == {1}
        assert c.assignment() == {TP, TopicPartition("t", 1)}


def test_subscribe_to_a_topic_created_later(cluster):
    cluster.leader_not_available_rounds = 2
    with make(cluster, "later", auto_offset_reset="earliest") as c:
        assert c.poll(timeout_ms=100) == {}
        deadline = time.monotonic() + 3
        while not c.assignment() and time.monotonic() < deadline:
            c.poll(timeout_ms=50)
        fill(cluster, topic="later", n=4)
        assert len(poll_all(c, 4)) == 4


def test_pattern_subscription(cluster):
    cluster.create_topic("logs-a", 1)
    cluster.create_topic("logs-b", 1)
    cluster.create_topic("other", 1)
    for t in ("logs-a", "logs-b", "other"):
        fill(cluster, topic=t, n=1)
    with make(cluster, auto_offset_reset="earliest") as c:
        c.subscribe(pattern=r"logs-.*")
        recs = poll_all(c, 2)
        assert {r.topic for r in recs} == {"logs-a", "logs-b"}
        assert c.subscription() == {"logs-a", "logs-b"}


def test_assign_and_subscribe_are_exclusive(cluster):
    cluster.create_topic("t", 1)
    with make(cluster, "t") as c:
        with pytest.raises(errors.IllegalStateError):
            c.assign([TP])
        c.unsubscribe()
        c.assign([TP])
        with pytest.raises(errors.IllegalStateError):
            c.subscribe(["t"])
        with pytest.raises(errors.IllegalStateError):
            c.seek(TopicPartition("t", 9), 0)
        with pytest.raises(errors.InvalidTopicError):
            c.assign([TopicPartition("bad topic", 0)])


def test_offset_lookups(cluster):
    cluster.create_topic("t", 2)
    fill(cluster, n=10, start_ts=5000)
    tp1 = TopicPartition("t", 1)
    with make(cluster) as c:
        assert c.beginning_offsets([TP, tp1]) == {TP: 0, tp1: 0}
        assert c.end_offsets([TP, tp1]) == {TP: 10, tp1: 0}
        found = c.offsets_for_times({TP: 5004, tp1: 5000})
        assert found[TP] == OffsetAndTimestamp(4, 5004)
        assert found[tp1] is None
        assert c.topics() == {"t"}
        assert c.partitions_for_topic("t") == {0, 1}


def test_commit_and_committed_in_memory(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=10)
    with make(cluster, "t", group_id="g", auto_offset_reset="earliest",
              enable_auto_commit=False) as c:
        assert c.committed(TP) is None
        poll_all(c, 10)
        c.commit()
        assert c.committed(TP) == 10
        c.commit({TP: 4})
        assert c.committed(TP, metadata=True).offset == 4
        # a partition without a position starts from its committed offset
        c.unsubscribe()
        c.subscribe(["t"])
        assert poll_all(c, 6)[0].offset == 4


def test_pause_and_resume(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=5)
    with make(cluster, auto_offset_reset="earliest") as c:
        c.assign([TP])
        c.pause(TP)
        assert c.paused() == {TP}
        assert c.poll(timeout_ms=200) == {}
        c.resume(TP)
        assert len(poll_all(c, 5)) == 5


def test_not_leader_fetch_error_refreshes_and_follows_the_leader():
    cluster = FakeCluster(2)
    try:
        cluster.create_topic("t", 1)
        fill(cluster, n=5)
        with make(cluster, auto_offset_reset="earliest") as c:
            c.assign([TP])
            assert len(poll_all(c, 5)) == 5
            cluster.topics["t"][0].leader = 2
            fill(cluster, n=3)
            recs = poll_all(c, 3)
            assert [r.offset for r in recs] == [5, 6, 7]
        nodes = [n for n, k, _r in cluster.request_log if k == ApiKey.FETCH]
        assert 2 in nodes
    finally:
        cluster.close()


def test_injected_retriable_fetch_error(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=5)
    cluster.fetch_errors[("t", 0)] = [errors.NotLeaderForPartitionError.code]
    with make(cluster, auto_offset_reset="earliest") as c:
        c.assign([TP])
        assert [r.offset for r in poll_all(c, 5)] == [0, 1, 2, 3, 4]
    assert cluster.fetch_errors[("t", 0)] == [], "the NOT_LEADER answer was never served"
    # the fetch answered NOT_LEADER is followed by a metadata refresh, then the same offset again
    log = [(k, r) for _n, k, r in cluster.request_log if k in (ApiKey.FETCH, ApiKey.METADATA)]
    fetches = [i for i, (k, _r) in enumerate(log) if k == ApiKey.FETCH]
    offsets = [log[i][1].topics[0].partitions[0].fetch_offset for i in fetches[:2]]
    assert offsets == [0, 0]
    assert ApiKey.METADATA in [k for k, _r in log[fetches[0] + 1:fetches[1]]]


def test_group_with_zookeeper_uses_the_zookeeper_coordinator():
    from kafkalite.client.coordinator_factory import make_coordinator
    from kafkalite.client.zk_coordinator import ZooKeeperCoordinator

    coordinator = make_coordinator("g", "127.0.0.1:1/chroot", assignor="sticky")
    assert isinstance(coordinator, ZooKeeperCoordinator)
    assert coordinator.member_id.startswith("g_")
    broker_side = make_coordinator("g", None, bootstrap_servers="127.0.0.1:1")
    assert type(broker_side).__name__ == "BrokerCoordinator"     # Kafka 0.9+'s groups
    broker_side.close()
    assert type(make_coordinator(None, None)).__name__ == "InMemoryCoordinator"
    with pytest.raises(errors.ConfigError):
        Consumer(bootstrap_servers="127.0.0.1:1", auto_offset_reset="sometimes")
    with pytest.raises(ValueError, match="unknown partition_assignment_strategy"):
        make_coordinator("g", "127.0.0.1:1", assignor="fastest")


def test_closed_consumer_refuses_work(cluster):
    c = make(cluster)
    c.close()
    c.close()
    with pytest.raises(errors.IllegalStateError):
        c.poll()


# --- decoder ----------------------------------------------------------------------------------

def _batches(n_batches=3, per=4):
    return b"".join(build_batch([(100 + i, b"k", b"v%d" % i, None) for i in range(per)],
                                base_offset=b * per) for b in range(n_batches))


def test_decode_skips_records_before_the_position_and_partial_tail():
    data = _batches()
    full = decode_records(data, "t", 0, 0)
    assert [r.offset for r in full.records] == list(range(12))
    assert full.next_offset == 12 and full.partial_size == 0
    mid = decode_records(data, "t", 0, 6)
    assert [r.offset for r in mid.records] == list(range(6, 12))
    cut = decode_records(data[:-5], "t", 0, 0)
    assert [r.offset for r in cut.records] == list(range(8))
    assert cut.next_offset == 8 and cut.partial_size == len(data) // 3
    tiny = decode_records(data[:len(data) // 3 + 20], "t", 0, 0)
    assert tiny.next_offset == 4 and tiny.partial_size > 0
    assert scan_batches(data[:-5], 0) == (8, 2 * len(data) // 3, len(data) // 3)


def test_decode_corrupt_batch_raises():
    data = bytearray(_batches(1))
    data[-3] ^= 0xFF
    with pytest.raises(errors.CorruptRecordError, match="CRC"):
        decode_records(bytes(data), "t", 0, 0)
    garbage = _batches(1)[:20] + b"\xc1" * 200      # a header that is not a batch's
    with pytest.raises(errors.CorruptRecordError):
        decode_records(garbage, "t", 0, 0)


def test_decode_compressed():
    for codec in ("gzip", "lz4", "zstd"):
        data = build_batch([(1, None, b"x%d" % i, None) for i in range(50)], codec)
        recs = decode_records(data, "t", 3, 10).records
        assert [r.value for r in recs] == [b"x%d" % i for i in range(10, 50)]
        assert recs[0].partition == 3


def test_deleted_topic_leaves_the_assignment():
    cluster = FakeCluster(1, auto_create=False)
    try:
        cluster.create_topic("t", 2)
        with make(cluster, "t", metadata_max_age_ms=50) as c:
            deadline = time.monotonic() + 3
            while len(c.assignment()) < 2 and time.monotonic() < deadline:
                c.poll(timeout_ms=20)
            assert len(c.assignment()) == 2
            with cluster.lock:
                del cluster.topics["t"]
            deadline = time.monotonic() + 3
            while c.assignment() and time.monotonic() < deadline:
                c.poll(timeout_ms=20)
            assert c.assignment() == set()
    finally:
        cluster.close()


def test_a_poll_zero_loop_returns_what_has_arrived(cluster):
    # poll(timeout_ms=0) once never read the sockets, so a loop of it never saw a record
    cluster.create_topic("t", 1)
    fill(cluster, n=30)
    with make(cluster, auto_offset_reset="earliest") as c:
        c.assign([TP])
        got: list = []
        polls = 0
        deadline = time.monotonic() + 10
        while len(got) < 30 and time.monotonic() < deadline:
            polls += 1
            for recs in c.poll(timeout_ms=0).values():
                got.extend(recs)
        assert [r.offset for r in got] == list(range(30)), f"after {polls} polls"
