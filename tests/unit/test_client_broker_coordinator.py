"""Consumers in broker-coordinated groups (Kafka 0.9+), against the fake brokers' in-memory group
coordinator: joining (MEMBER_ID_REQUIRED), the leader's assignment, eager rebalances with the
listener's callbacks, heartbeats from the background thread, the poll timeout, coordinator
lookups and moves, commits in the member's generation, leaving."""

from __future__ import annotations

import time

import pytest
from test_client_consumer import fill
from test_client_fakebroker import FakeCluster
from test_client_producer import ManualClock

from kafkalite import errors
from kafkalite.client import Consumer, OffsetAndMetadata, TopicPartition
from kafkalite.client import consumer_protocol
from kafkalite.client.broker_coordinator import BrokerCoordinator, assignor_names
from kafkalite.protocol.api_keys import ApiKey


@pytest.fixture
def cluster():
    c = FakeCluster(2)
    yield c
    c.close()


def member(cluster, *topics, group="g", **kw):
    kw.setdefault("retry_backoff_ms", 10)
    kw.setdefault("fetch_max_wait_ms", 50)
    kw.setdefault("heartbeat_interval_ms", 100)
    kw.setdefault("session_timeout_ms", 3000)
    kw.setdefault("auto_offset_reset", "earliest")
    return Consumer(*topics, bootstrap_servers=cluster.bootstrap, group_id=group, **kw)


def requests(cluster, api_key):
    return [r for _n, k, r in cluster.request_log if k == api_key]


def drive(consumers, until, timeout=10.0, seen=None, commit=False):
    """Poll every consumer in turn (one thread, as the members' own threads would) until
    ``until()``; records go to ``seen`` as (partition, offset, consumer index)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for i, c in enumerate(consumers):
            got = c.poll(timeout_ms=20)
            for recs in got.values():
                if seen is not None:
                    seen.extend((r.partition, r.offset, i) for r in recs)
            if got and commit:
                c.commit()
        if until():
            return
    raise AssertionError("timed out")


class Listener:
    def __init__(self):
        self.events = []

    def on_partitions_revoked(self, tps):
        self.events.append(("revoked", sorted(tps)))

    def on_partitions_assigned(self, tps):
        self.events.append(("assigned", sorted(tps)))


def tps(topic, *partitions):
    return {TopicPartition(topic, p) for p in partitions}


def test_two_members_split_a_topic_read_everything_once_and_one_takes_over(cluster):
    cluster.create_topic("t", 6)
    for p in range(6):
        fill(cluster, partition=p, n=20)
    a = member(cluster, "t", enable_auto_commit=False)
    b = member(cluster, "t", enable_auto_commit=False)
    seen: list = []
    try:
        drive([a, b], lambda: len(a.assignment()) == 3 and len(b.assignment()) == 3
              and len(seen) >= 120, seen=seen, commit=True)
        assert a.assignment() | b.assignment() == tps("t", *range(6))
        assert sorted((p, o) for p, o, _ in seen) == sorted((p, o) for p in range(6)
                                                            for o in range(20))
        for p in range(6):
            fill(cluster, partition=p, n=5)
        a.close()
        drive([b], lambda: b.assignment() == tps("t", *range(6)) and len(seen) >= 150,
              seen=seen, commit=True)
        assert sorted((p, o) for p, o, _ in seen) == sorted((p, o) for p in range(6)
                                                            for o in range(25))
        assert [b.committed(tp) for tp in sorted(tps("t", *range(6)))] == [25] * 6
    finally:
        a.close()
        b.close()
    leaves = requests(cluster, ApiKey.LEAVE_GROUP)
    assert len(leaves) == 2 and all(len(r.members) == 1 for r in leaves)


def test_join_protocol_member_id_required_and_the_subscription_bytes(cluster):
    cluster.create_topic("t", 2)
    c = member(cluster, "t", partition_assignment_strategy=["roundrobin", "range"],
               client_id="app")
    try:
        drive([c], lambda: len(c.assignment()) == 2)
    finally:
        c.close()
    joins = requests(cluster, ApiKey.JOIN_GROUP)
    assert [j.member_id for j in joins[:2]] == ["", "app-1"]
    first = joins[0]
    assert first.protocol_type == "consumer" and first.group_id == "g"
    assert (first.session_timeout_ms, first.rebalance_timeout_ms) == (3000, 300000)
    assert [p.name for p in first.protocols] == ["roundrobin", "range"]
    sub = consumer_protocol.decode_subscription(first.protocols[0].metadata)
    assert (sub.version, sub.topics, sub.user_data) == (1, ["t"], None)
    [sync] = requests(cluster, ApiKey.SYNC_GROUP)
    assert sync.protocol_name == "roundrobin" and sync.generation_id == 1
    [given] = sync.assignments
    assert consumer_protocol.decode_assignment(given.assignment).partitions == \
        sorted(tps("t", 0, 1))


def test_listener_sees_revocation_before_rejoining_and_assignment_after_sync(cluster):
    cluster.create_topic("t", 4)
    la, lb = Listener(), Listener()
    a = member(cluster)
    a.subscribe(["t"], listener=la)
    try:
        drive([a], lambda: len(a.assignment()) == 4)
        b = member(cluster)
        b.subscribe(["t"], listener=lb)
        try:
            drive([a, b], lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2)
        finally:
            b.close()
    finally:
        a.close()
    assert la.events[:3] == [("assigned", sorted(tps("t", 0, 1, 2, 3))),
                             ("revoked", sorted(tps("t", 0, 1, 2, 3))),
                             ("assigned", sorted(tps("t", 0, 1)))]
    assert lb.events[0] == ("assigned", sorted(tps("t", 2, 3)))
    assert lb.events[-1] == ("revoked", sorted(tps("t", 2, 3)))       # close revokes


def test_auto_commit_before_revoking_lets_the_next_owner_continue(cluster):
    cluster.create_topic("t", 2)
    fill(cluster, partition=0, n=10)
    fill(cluster, partition=1, n=10)
    a = member(cluster, "t", auto_commit_interval_ms=60000)
    seen: list = []
    try:
        drive([a], lambda: len(seen) >= 20, seen=seen)
        b = member(cluster, "t", auto_commit_interval_ms=60000)
        try:
            drive([a, b], lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1,
                  seen=seen)
            fill(cluster, partition=0, n=3)
            fill(cluster, partition=1, n=3)
            drive([a, b], lambda: len(seen) >= 26, seen=seen)
        finally:
            b.close()
    finally:
        a.close()
    assert sorted((p, o) for p, o, _ in seen) == sorted((p, o) for p in (0, 1)
                                                        for o in range(13))


def until(condition, what, timeout=10.0):
    """Wait (real time, as a deadline only) until ``condition()``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


def test_heartbeats_keep_an_idle_member_and_a_poll_timeout_makes_it_leave(cluster):
    """The member and the coordinator share one ManualClock: time passes only when the test
    moves it, and each step waits for the heartbeat that step makes due."""
    cluster.create_topic("t", 1)
    clock = ManualClock()
    cluster.groups.clock = clock
    coordinator = BrokerCoordinator("g", bootstrap_servers=cluster.bootstrap,
                                    session_timeout_ms=600, heartbeat_interval_ms=100,
                                    max_poll_interval_ms=1200, retry_backoff_ms=10, clock=clock)
    c = member(cluster, "t", coordinator=coordinator)
    try:
        drive([c], lambda: c.assignment())
        first_id = c._coordinator.member_id
        beats = len(requests(cluster, ApiKey.HEARTBEAT))
        # 1.0 s without a poll, past the 0.6 s session: only the heartbeat thread talks, once
        # every 0.1 s, and the coordinator keeps the member
        for step in range(1, 11):
            clock.advance(0.1)
            until(lambda: len(requests(cluster, ApiKey.HEARTBEAT)) >= beats + step,
                  f"heartbeat {step}")
        assert len(requests(cluster, ApiKey.HEARTBEAT)) == beats + 10
        assert list(cluster.groups.groups["g"].members) == [first_id]
        # 1.3 s since the last poll > max_poll_interval_ms, 0.3 s since the last heartbeat <
        # the session: the member leaves because of the poll timeout
        clock.advance(0.3)
        until(lambda: cluster.groups.groups["g"].members == {}, "the member leaving")
        assert len(requests(cluster, ApiKey.LEAVE_GROUP)) == 1
        drive([c], lambda: c.assignment() and c._coordinator.member_id)
        assert c._coordinator.member_id != first_id
    finally:
        c.close()


def test_coordinator_not_available_is_retried_and_a_moved_coordinator_is_found(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=5)
    cluster.coordinator_errors = [errors.CoordinatorNotAvailableError.code,
                                  errors.CoordinatorLoadInProgressError.code]
    c = member(cluster, "t", enable_auto_commit=False)
    try:
        drive([c], lambda: c.assignment())
        assert len(requests(cluster, ApiKey.FIND_COORDINATOR)) >= 3
        c.commit({TopicPartition("t", 0): 3})
        # the coordinator moves (with the group): NOT_COORDINATOR, look it up again, commit
        with cluster.lock:
            cluster.coordinator_id = 2
        c.commit({TopicPartition("t", 0): OffsetAndMetadata(4, "note")})
        assert c.committed(TopicPartition("t", 0), metadata=True) == OffsetAndMetadata(4, "note")
        nodes = [n for n, k, _r in cluster.request_log if k == ApiKey.OFFSET_COMMIT]
        assert nodes[0] == 1 and nodes[-1] == 2
    finally:
        c.close()


def test_commit_in_a_stale_generation_fails_and_the_member_rejoins(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=5)
    c = member(cluster, "t", enable_auto_commit=False)
    try:
        drive([c], lambda: c.assignment())
        generation = c._coordinator.generation_id
        with cluster.lock:          # the coordinator moved on without this member noticing
            cluster.groups.groups["g"].generation += 1
        with pytest.raises(errors.IllegalGenerationError, match="already rebalanced"):
            c.commit({TopicPartition("t", 0): 2})
        with cluster.lock:
            cluster.groups.groups["g"].generation -= 1
        drive([c], lambda: c._coordinator.generation_id > generation and c.assignment())
        c.commit({TopicPartition("t", 0): 2})
        assert c.committed(TopicPartition("t", 0)) == 2
    finally:
        c.close()


def test_manual_assignment_commits_as_a_simple_consumer(cluster):
    cluster.create_topic("t", 1)
    fill(cluster, n=5)
    with member(cluster, enable_auto_commit=False) as c:
        tp = TopicPartition("t", 0)
        c.assign([tp])
        assert c.committed(tp) is None
        c.commit({tp: 3})
        assert c.committed(tp) == 3
    [commit] = requests(cluster, ApiKey.OFFSET_COMMIT)
    assert (commit.generation_id, commit.member_id) == (-1, "")
    assert not requests(cluster, ApiKey.JOIN_GROUP)


def test_static_member_keeps_its_place_when_closed(cluster):
    cluster.create_topic("t", 1)
    c = member(cluster, "t", group_instance_id="host-1")
    try:
        drive([c], lambda: c.assignment())
        assert c._coordinator.member_id.startswith("host-1-")
    finally:
        c.close()
    assert not requests(cluster, ApiKey.LEAVE_GROUP)
    assert requests(cluster, ApiKey.JOIN_GROUP)[0].group_instance_id == "host-1"


def test_new_partitions_make_the_members_rejoin(cluster):
    cluster.create_topic("t", 2)
    c = member(cluster, "t", metadata_max_age_ms=100)
    try:
        drive([c], lambda: len(c.assignment()) == 2)
        cluster.create_topic("t", 4)          # same name: now four partitions
        drive([c], lambda: len(c.assignment()) == 4)
    finally:
        c.close()


def test_assignor_names_and_configuration_errors(cluster):
    assert assignor_names("range") == ["range"]
    assert assignor_names(["org.apache.kafka.clients.consumer.RoundRobinAssignor", "range",
                           "StickyAssignor"]) == ["roundrobin", "range", "sticky"]
    with pytest.raises(ValueError, match="unknown partition_assignment_strategy"):
        assignor_names(["fastest"])
    with pytest.raises(errors.ConfigError, match="heartbeat_interval_ms"):
        BrokerCoordinator("g", bootstrap_servers=cluster.bootstrap, session_timeout_ms=3000,
                          heartbeat_interval_ms=3000)
    with pytest.raises(errors.ConfigError, match="group_id"):
        BrokerCoordinator("", bootstrap_servers=cluster.bootstrap)


def test_fatal_join_errors_reach_the_caller(cluster):
    cluster.create_topic("t", 1)
    a = member(cluster, "t")
    try:
        drive([a], lambda: a.assignment())
        with cluster.lock:          # a member of another protocol type holds the group
            cluster.groups.groups["g"].protocol_type = "connect"
        b = member(cluster, "t")
        try:
            with pytest.raises(errors.InconsistentGroupProtocolError):
                drive([b], lambda: False, timeout=5)
        finally:
            b.close()
    finally:
        a.close()


def test_a_member_busy_during_a_rebalance_keeps_its_session(cluster):
    """Heartbeats go on while the group waits for a member's next poll: one that processes for
    longer than the session timeout still rejoins under its own member id."""
    cluster.create_topic("t", 2)
    a = member(cluster, "t", session_timeout_ms=600, heartbeat_interval_ms=100)
    try:
        drive([a], lambda: len(a.assignment()) == 2)
        first_id = a._coordinator.member_id
        b = member(cluster, "t", session_timeout_ms=600, heartbeat_interval_ms=100)
        try:
            deadline = time.monotonic() + 1.5      # b waits in JoinGroup; a is "busy"
            while time.monotonic() < deadline:
                b.poll(timeout_ms=50)
            assert first_id in cluster.groups.groups["g"].members
            drive([a, b], lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1)
            assert a._coordinator.member_id == first_id
        finally:
            b.close()
    finally:
        a.close()


def test_pause_inside_on_partitions_assigned_holds_back_that_partition(cluster):
    # pause() in the listener raised IllegalStateError: the assignment was applied after it ran
    cluster.create_topic("t", 2)
    fill(cluster, partition=0, n=5)
    fill(cluster, partition=1, n=5)
    seen: list = []

    class Pauser(Listener):
        def on_partitions_assigned(self, tps):
            super().on_partitions_assigned(tps)
            c.pause(TopicPartition("t", 1))

    c = member(cluster)
    c.subscribe(["t"], listener=Pauser())
    try:
        drive([c], lambda: len(seen) >= 5, seen=seen)
        assert c.paused() == {TopicPartition("t", 1)}
        assert {p for p, _o, _i in seen} == {0}
        c.resume(TopicPartition("t", 1))
        drive([c], lambda: len(seen) >= 10, seen=seen)
    finally:
        c.close()
    assert sorted((p, o) for p, o, _i in seen) == [(p, o) for p in (0, 1) for o in range(5)]
