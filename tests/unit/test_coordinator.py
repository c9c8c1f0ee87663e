"""GroupCoordinator (kafkalite.coordinator.coordinator) on a twisted Clock and a fake store:
Kafka 2.8's join/sync/heartbeat/leave rebalance protocol, static membership, offsets, loading
and resigning, deletion and expiry."""

import random
import struct
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st
from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalite import errors as E
from kafkalite.coordinator import coordinator as coordinator_module
from kafkalite.coordinator.coordinator import GroupCoordinator
from kafkalite.coordinator.group import (
    COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE,
)
from kafkalite.coordinator.types import (
    GroupSnapshot, MemberSnapshot, OffsetAndMetadata,
)

SESSION, REBALANCE = 10_000, 20_000


class FakeCodec:
    """Structured stand-ins for records.py's bytes, so tests can read what was written."""
    @staticmethod
    def offset_key(group, topic, partition):
        return ("offset", group, topic, partition)

    @staticmethod
    def offset_value(oam):
        return oam

    @staticmethod
    def group_key(group):
        return ("group", group)

    @staticmethod
    def group_value(snapshot):
        return snapshot


class FakeStore:
    """append answers at once with ``code`` unless ``manual``; then ``complete(i, code)``."""

    def __init__(self):
        self.partitions = {}          # group id -> partition; default 0
        self.appends = []             # [partition, records, deferred]
        self.loads = []               # [partition, deferred]
        self.code = 0
        self.manual = False

    def partition_for(self, group_id):
        return self.partitions.get(group_id, 0)

    def append(self, partition, records):
        d = defer.Deferred()
        self.appends.append((partition, list(records), d))
        if not self.manual:
            d.callback(self.code)
        return d

    def complete(self, index=-1, code=0):
        self.appends[index][2].callback(code)

    def load(self, partition):
        d = defer.Deferred()
        self.loads.append((partition, d))
        return d

    def records(self):
        return [r for _, records, _ in self.appends for r in records]


def track(d):
    box = []
    d.addBoth(lambda r: box.append(r) or r)
    return box


def subscription(*topics):
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


class Env:
    def __init__(self, monkeypatch, **config):
        monkeypatch.setattr(coordinator_module, "_codec", lambda: FakeCodec)
        self.clock = Clock()
        self.store = FakeStore()
        settings = dict(group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=1000)
        settings.update(config)
        self.config = SimpleNamespace(**settings)
        self.coord = GroupCoordinator(1, self.clock, self.store, self.config)
        self.coord.start()

    def elect(self, partition=0, snapshots=None, offsets=None, epoch=1):
        self.coord.on_elected(partition, epoch)
        _, d = self.store.loads[-1]
        d.callback((snapshots or {}, offsets or {}))

    def join(self, member_id="", group="g", instance=None, client="cli", topics=("t",),
             protocols=None, session=SESSION, rebalance=REBALANCE, require=False,
             protocol_type="consumer"):
        if protocols is None:
            protocols = [("range", subscription(*topics))]
        return track(self.coord.join_group(group, member_id, instance, client, "/10.0.0.1",
                                           rebalance, session, protocol_type, protocols,
                                           require))

    def sync(self, member_id, generation, assignments=None, group="g", instance=None):
        return track(self.coord.sync_group(group, generation, member_id, instance, "consumer",
                                           None, assignments or {}))

    def heartbeat(self, member_id, generation, group="g", instance=None):
        return track(self.coord.heartbeat(group, generation, member_id, instance))[0]

    def commit(self, offsets, generation=-1, member_id="", group="g", instance=None,
               retention=-1):
        offsets = {tp: OffsetAndMetadata(o) if isinstance(o, int) else o
                   for tp, o in offsets.items()}
        return track(self.coord.commit_offsets(group, generation, member_id, instance,
                                               retention, offsets))

    def fetch(self, partitions=None, group="g"):
        return track(self.coord.fetch_offsets(group, partitions))[0]

    def group(self, group_id="g"):
        return self.coord._groups.get(group_id)

    def stable_pair(self, session=SESSION):
        """Two dynamic members a (leader) and b, Stable in generation 1."""
        ja, jb = self.join(client="a", session=session), self.join(client="b", session=session)
        self.clock.advance(0)
        a, b = ja[0], jb[0]
        assert a.error_code == 0 and b.error_code == 0
        leader, follower = (a, b) if a.members else (b, a)
        sf = self.sync(follower.member_id, follower.generation_id)
        sl = self.sync(leader.member_id, leader.generation_id,
                       {leader.member_id: b"L", follower.member_id: b"F"})
        assert sl[0].error_code == 0 and sf[0].error_code == 0
        assert self.group().state is STABLE
        return leader.member_id, follower.member_id


@pytest.fixture
def env(monkeypatch):
    e = Env(monkeypatch)
    e.elect()
    return e


@pytest.fixture
def make_env(monkeypatch):
    def make(**config):
        return Env(monkeypatch, **config)
    return make


# --- rebalance ---------------------------------------------------------------------------

def test_two_members_join_and_sync_with_initial_delay(make_env):
    env = make_env(group_initial_rebalance_delay_ms=3000)
    env.elect()
    ja = env.join(client="a", topics=("t1",))
    env.clock.advance(1)
    jb = env.join(client="b", topics=("t2",), rebalance=10_000)
    assert env.group().state is PREPARING_REBALANCE
    env.clock.advance(2)             # 3 s: b joined during the delay, so it extends by 3 s
    assert not ja and not jb
    env.clock.advance(2.5)
    assert not ja
    env.clock.advance(0.5)
    a, b = ja[0], jb[0]
    assert a.error_code == b.error_code == 0
    assert a.generation_id == b.generation_id == 1
    assert a.protocol_type == "consumer" and a.protocol_name == "range"
    assert a.leader == b.leader == a.member_id      # first joiner leads
    assert a.member_id.startswith("a-") and b.member_id.startswith("b-")
    assert {m.member_id: m.metadata for m in a.members} == {
        a.member_id: subscription("t1"), b.member_id: subscription("t2")}
    assert b.members == ()
    assert env.group().state is COMPLETING_REBALANCE

    sb = env.sync(b.member_id, 1)
    assert not sb                      # the follower waits for the leader's assignment
    env.store.manual = True
    sa = env.sync(a.member_id, 1, {a.member_id: b"for-a", b.member_id: b"for-b"})
    assert not sa and not sb           # not before the group metadata is written
    (key, snapshot), = env.store.appends[-1][1]
    assert key == ("group", "g") and snapshot.generation == 1
    assert {m.member_id: m.assignment for m in snapshot.members} == {
        a.member_id: b"for-a", b.member_id: b"for-b"}
    env.store.complete()
    assert sa[0].error_code == 0 and sa[0].assignment == b"for-a"
    assert sb[0].assignment == b"for-b" and sb[0].protocol_name == "range"
    assert env.group().state is STABLE
    assert env.heartbeat(a.member_id, 1) == 0


def test_initial_delay_is_capped_by_the_rebalance_timeout(make_env):
    env = make_env(group_initial_rebalance_delay_ms=3000)
    env.elect()
    first = env.join(client="a", rebalance=5000)
    for i in range(10):                # a joiner every second keeps extending the delay
        env.clock.advance(1)
        env.join(client=f"x{i}", rebalance=5000)
        if first:
            break
    assert first and first[0].error_code == 0
    assert env.clock.seconds() == 5    # 3 s, then only the 2 s left of the 5 s timeout


def test_single_member_waits_only_the_initial_delay(make_env):
    env = make_env(group_initial_rebalance_delay_ms=3000)
    env.elect()
    joined = env.join()
    env.clock.advance(2.5)
    assert not joined
    env.clock.advance(0.5)
    assert joined[0].error_code == 0 and joined[0].generation_id == 1


def test_member_id_required_then_rejoin(env):
    first = env.join(client="cli", require=True)[0]
    assert first.error_code == E.MemberIdRequiredError.code
    assert first.member_id.startswith("cli-")
    assert env.group().pending_members == {first.member_id}
    joined = env.join(member_id=first.member_id)
    env.clock.advance(0)
    assert joined[0].error_code == 0 and joined[0].member_id == first.member_id
    assert not env.group().pending_members


def test_pending_member_expires_after_its_session_timeout(env):
    first = env.join(require=True, session=5000)[0]
    env.clock.advance(5)
    assert not env.group().pending_members
    late = env.join(member_id=first.member_id)[0]
    assert late.error_code == E.UnknownMemberIdError.code


def test_pending_member_holds_the_join_until_it_rejoins(env):
    a, b = env.stable_pair()
    pending = env.join(require=True, client="c")[0]
    ja = env.join(member_id=a)
    jb = env.join(member_id=b)
    assert not ja and not jb          # waiting for the pending member too
    jc = env.join(member_id=pending.member_id, client="c")
    assert ja and jb and jc and jc[0].generation_id == 2
    assert len(ja[0].members) == 3


def test_member_that_does_not_rejoin_is_removed_after_rebalance_timeout(env):
    leader, follower = env.stable_pair(session=30_000)
    rejoin = env.join(member_id=leader)   # the leader's rejoin starts a rebalance
    assert env.group().state is PREPARING_REBALANCE
    assert env.heartbeat(follower, 1) == E.RebalanceInProgressError.code
    env.clock.advance(REBALANCE / 1000 - 0.5)
    assert not rejoin
    env.clock.advance(0.5)
    result = rejoin[0]
    assert result.error_code == 0 and result.generation_id == 2
    assert [m.member_id for m in result.members] == [leader]
    assert env.heartbeat(follower, 2) == E.UnknownMemberIdError.code


def test_new_leader_elected_when_leader_does_not_rejoin(env):
    leader, follower = env.stable_pair(session=30_000)
    rejoin = env.join(member_id=follower, topics=("other",))   # changed metadata: rebalance
    env.clock.advance(REBALANCE / 1000)
    assert rejoin[0].leader == follower and rejoin[0].members


def test_session_expiry_triggers_a_rebalance(env):
    leader, follower = env.stable_pair()
    for _ in range(3):                 # the leader heartbeats, the follower is silent
        env.clock.advance(SESSION / 1000 * 0.4)
        code = env.heartbeat(leader, 1)
    assert code == E.RebalanceInProgressError.code
    assert follower not in env.group().members
    rejoin = env.join(member_id=leader)
    assert rejoin[0].generation_id == 2 and len(rejoin[0].members) == 1


def test_leave_triggers_a_rebalance(env):
    leader, follower = env.stable_pair()
    code, results = track(env.coord.leave_group("g", [(follower, None), ("nobody", None)]))[0]
    assert code == 0
    assert [r.error_code for r in results] == [0, E.UnknownMemberIdError.code]
    assert env.group().state is PREPARING_REBALANCE
    assert env.heartbeat(leader, 1) == E.RebalanceInProgressError.code
    assert env.join(member_id=leader)[0].generation_id == 2


def test_last_member_leaving_empties_the_group(env):
    joined = env.join()
    env.clock.advance(0)
    track(env.coord.leave_group("g", [(joined[0].member_id, None)]))
    group = env.group()
    assert group.state is EMPTY and group.generation_id == 2
    assert env.store.appends[-1][1][0][1].members == ()   # empty metadata written


def test_heartbeat_errors(env):
    leader, follower = env.stable_pair()
    assert env.heartbeat(leader, 1) == 0
    assert env.heartbeat(leader, 7) == E.IllegalGenerationError.code
    assert env.heartbeat("stranger", 1) == E.UnknownMemberIdError.code
    assert env.heartbeat(leader, 1, group="unknown") == E.UnknownMemberIdError.code
    assert env.heartbeat(leader, 1, group="") == E.InvalidGroupIdError.code
    env.store.partitions["elsewhere"] = 3
    assert env.heartbeat(leader, 1, group="elsewhere") == E.NotCoordinatorError.code


def test_heartbeats_keep_a_member_alive(env):
    leader, follower = env.stable_pair()
    for _ in range(10):
        env.clock.advance(SESSION / 1000 * 0.9)
        assert env.heartbeat(leader, 1) == 0
        assert env.heartbeat(follower, 1) == 0
    assert env.group().state is STABLE


def test_follower_rejoining_unchanged_in_stable_group_gets_current_generation(env):
    leader, follower = env.stable_pair()
    again = env.join(member_id=follower)[0]
    assert again.generation_id == 1 and again.members == () and again.leader == leader
    assert env.group().state is STABLE


def test_lost_join_response_is_answered_again_while_completing(env):
    ja, jb = env.join(client="a"), env.join(client="b")
    env.clock.advance(0)
    again = env.join(member_id=ja[0].member_id)[0]
    assert again.generation_id == 1 and len(again.members) == 2
    assert env.group().state is COMPLETING_REBALANCE


def test_join_validation_errors(env):
    assert env.join(session=999)[0].error_code == E.InvalidSessionTimeoutError.code
    assert env.join(session=1_800_001)[0].error_code == E.InvalidSessionTimeoutError.code
    assert env.join(group="")[0].error_code == E.InvalidGroupIdError.code
    assert env.join(member_id="ghost", group="new")[0].error_code == \
        E.UnknownMemberIdError.code
    assert env.join(protocols=[], group="h")[0].error_code == \
        E.InconsistentGroupProtocolError.code
    env.stable_pair()
    assert env.join(protocols=[("roundrobin", b"")])[0].error_code == \
        E.InconsistentGroupProtocolError.code
    assert env.join(protocol_type="connect")[0].error_code == \
        E.InconsistentGroupProtocolError.code


def test_group_max_size(make_env):
    env = make_env(group_max_size=2)
    env.elect()
    env.stable_pair()
    assert env.join(client="c")[0].error_code == E.GroupMaxSizeReachedError.code
    assert env.group().size == 2


def test_members_that_never_sync_are_removed(env):
    ja, jb = env.join(client="a", session=30_000), env.join(client="b", session=30_000)
    env.clock.advance(0)
    leader = ja[0] if ja[0].members else jb[0]
    follower = jb[0] if leader is ja[0] else ja[0]
    env.sync(leader.member_id, 1, {leader.member_id: b"x", follower.member_id: b"y"})
    assert env.group().state is STABLE
    env.clock.advance(REBALANCE / 1000)
    assert follower.member_id not in env.group().members
    assert env.group().state is PREPARING_REBALANCE


def test_sync_errors(env):
    leader, follower = env.stable_pair()
    assert env.sync(leader, 9)[0].error_code == E.IllegalGenerationError.code
    assert env.sync("ghost", 1)[0].error_code == E.UnknownMemberIdError.code
    assert env.sync(leader, 1, group="nope")[0].error_code == E.UnknownMemberIdError.code
    stable = env.sync(follower, 1)[0]                 # Stable: the assignment again
    assert stable.error_code == 0 and stable.assignment == b"F"
    env.join(member_id=leader)
    assert env.sync(follower, 1)[0].error_code == E.RebalanceInProgressError.code
    wrong = track(env.coord.sync_group("g", 1, follower, None, "connect", None, {}))[0]
    assert wrong.error_code == E.InconsistentGroupProtocolError.code


def test_store_failure_during_sync_goes_back_to_rebalancing(env):
    ja, jb = env.join(client="a"), env.join(client="b")
    env.clock.advance(0)
    leader = ja[0] if ja[0].members else jb[0]
    follower = jb[0] if leader is ja[0] else ja[0]
    sf = env.sync(follower.member_id, 1)
    env.store.manual = True
    sl = env.sync(leader.member_id, 1, {leader.member_id: b"x", follower.member_id: b"y"})
    env.store.complete(code=E.NotEnoughReplicasError.code)
    not_available = E.CoordinatorNotAvailableError.code
    assert sl[0].error_code == sf[0].error_code == not_available
    assert sl[0].assignment == b"" and sl[0].protocol_name is None
    assert env.group().state is PREPARING_REBALANCE
    env.store.manual = False
    ra = env.join(member_id=leader.member_id)
    rb = env.join(member_id=follower.member_id)
    assert ra[0].generation_id == rb[0].generation_id == 2


def test_store_that_never_answers_times_out(env):
    ja, jb = env.join(client="a"), env.join(client="b")
    env.clock.advance(0)
    leader = ja[0] if ja[0].members else jb[0]
    env.store.manual = True
    sl = env.sync(leader.member_id, 1, {})
    env.clock.advance(5)       # offsets.commit.timeout.ms: REQUEST_TIMED_OUT -> rejoin
    assert sl[0].error_code == E.RebalanceInProgressError.code
    env.store.complete(0, code=0)   # a late answer is ignored
    assert env.group().state is PREPARING_REBALANCE


def test_new_member_joining_while_completing_resets_the_waiting_syncs(env):
    ja, jb = env.join(client="a"), env.join(client="b")
    env.clock.advance(0)
    follower = jb[0] if ja[0].members else ja[0]
    sf = env.sync(follower.member_id, 1)
    env.join(client="c")
    assert sf[0].error_code == E.RebalanceInProgressError.code


# --- static membership -------------------------------------------------------------------

def static_pair(env):
    ja = env.join(instance="i-a", client="a", session=30_000)
    jb = env.join(instance="i-b", client="b", session=30_000)
    env.clock.advance(0)
    a, b = ja[0], jb[0]
    assert a.member_id.startswith("i-a-")
    env.sync(b.member_id, 1)
    env.sync(a.member_id, 1, {a.member_id: b"A", b.member_id: b"B"})
    assert env.group().state is STABLE
    return a.member_id, b.member_id


def test_static_member_replaced_without_rebalance(env):
    a, b = static_pair(env)
    appends = len(env.store.appends)
    joined = env.join(instance="i-b", client="b")[0]      # restarted: no member id
    assert joined.error_code == 0 and joined.member_id not in (a, b)
    assert joined.generation_id == 1 and joined.leader == a and joined.members == ()
    group = env.group()
    assert group.state is STABLE and group.generation_id == 1
    assert group.static_members["i-b"] == joined.member_id
    stored = env.store.appends[appends][1][0][1]
    assert joined.member_id in {m.member_id for m in stored.members}
    sync = env.sync(joined.member_id, 1, instance="i-b")[0]
    assert sync.error_code == 0 and sync.assignment == b"B"
    assert env.heartbeat(b, 1, instance="i-b") == E.FencedInstanceIdError.code
    assert env.sync(b, 1, instance="i-b")[0].error_code == E.FencedInstanceIdError.code
    assert env.join(member_id=b, instance="i-b")[0].error_code == \
        E.FencedInstanceIdError.code
    assert env.heartbeat(joined.member_id, 1, instance="i-b") == 0


def test_static_leader_replaced_keeps_the_old_leader_id_in_the_answer(env):
    a, b = static_pair(env)
    joined = env.join(instance="i-a", client="a")[0]
    assert joined.leader == a and joined.members == ()
    assert env.group().leader_id == joined.member_id


def test_static_replacement_reverted_when_the_store_fails(env):
    a, b = static_pair(env)
    env.store.code = E.NotLeaderForPartitionError.code
    joined = env.join(instance="i-b", client="b")[0]
    assert joined.error_code == E.NotCoordinatorError.code and joined.member_id == ""
    env.store.code = 0
    assert env.group().static_members["i-b"] == b
    assert env.heartbeat(b, 1, instance="i-b") == 0


def test_static_members_stay_through_a_rebalance_without_rejoining(env):
    a, b = static_pair(env)
    rejoin = env.join(member_id=a, instance="i-a", topics=("t", "u"))
    env.clock.advance(REBALANCE / 1000)
    assert rejoin[0].generation_id == 2
    assert {m.member_id for m in rejoin[0].members} == {a, b}   # b kept its place


def test_leave_by_instance_id(env):
    a, b = static_pair(env)
    code, results = track(env.coord.leave_group("g", [("", "i-b"), ("wrong", "i-a")]))[0]
    assert [r.error_code for r in results] == [0, E.FencedInstanceIdError.code]
    assert b not in env.group().members and a in env.group().members


# --- offsets -----------------------------------------------------------------------------

def test_simple_commit_is_visible_only_once_written(env):
    env.store.manual = True
    done = env.commit({("t", 0): 42})
    assert not done
    code, fetched = env.fetch([("t", 0)])
    assert code == 0 and fetched[("t", 0)].offset == -1
    (key, value), = env.store.appends[-1][1]
    assert key == ("offset", "g", "t", 0) and value.offset == 42 and value.commit_timestamp == 0
    env.store.complete()
    assert done[0] == {("t", 0): 0}
    code, fetched = env.fetch()
    assert fetched == {("t", 0): (42, -1, "", 0)}
    assert env.group().state is EMPTY and env.group().generation_id == 0


def test_failed_commit_is_not_visible(env):
    env.store.code = E.NotLeaderForPartitionError.code
    assert env.commit({("t", 0): 1})[0] == {("t", 0): E.NotCoordinatorError.code}
    assert env.fetch([("t", 0)])[1][("t", 0)].offset == -1


def test_commit_generation_checks(env):
    leader, follower = env.stable_pair()
    assert env.commit({("t", 0): 1})[0] == {("t", 0): E.UnknownMemberIdError.code}
    assert env.commit({("t", 0): 1}, 3, leader)[0] == {("t", 0): E.IllegalGenerationError.code}
    assert env.commit({("t", 0): 1}, 1, "ghost")[0] == {("t", 0): E.UnknownMemberIdError.code}
    assert env.commit({("t", 0): 5}, 1, leader)[0] == {("t", 0): 0}
    assert env.fetch([("t", 0)])[1][("t", 0)].offset == 5
    assert env.commit({("t", 0): 1}, 4, "x", group="other")[0] == {
        ("t", 0): E.IllegalGenerationError.code}
    env.join(member_id=leader)          # PreparingRebalance: commits still allowed
    assert env.commit({("t", 0): 6}, 1, follower)[0] == {("t", 0): 0}


def test_commit_while_completing_rebalance(env):
    ja, jb = env.join(client="a"), env.join(client="b")
    env.clock.advance(0)
    assert env.commit({("t", 0): 1}, 1, ja[0].member_id)[0] == {
        ("t", 0): E.RebalanceInProgressError.code}


def test_commit_metadata_too_large(make_env):
    env = make_env(offset_metadata_max_bytes=4)
    env.elect()
    result = env.commit({("t", 0): OffsetAndMetadata(1, metadata="12345"),
                         ("t", 1): OffsetAndMetadata(2, metadata="1234")})[0]
    assert result == {("t", 0): E.OffsetMetadataTooLargeError.code, ("t", 1): 0}
    assert env.commit({("t", 0): OffsetAndMetadata(1, metadata="12345")})[0] == {
        ("t", 0): 12}


def test_commit_retention_time_sets_the_expire_timestamp(env):
    env.clock.advance(100)
    env.commit({("t", 0): 1}, retention=5000)
    value = env.store.appends[-1][1][0][1]
    assert value.commit_timestamp == 100_000 and value.expire_timestamp == 105_000


def test_fetch_of_unknown_group_and_partitions(env):
    assert env.fetch([("t", 0)], group="none") == (0, {("t", 0): (-1, -1, "", 0)})
    assert env.fetch(None, group="none") == (0, {})
    assert env.fetch(None, group="") == (0, {})     # the empty id is allowed for offsets


# --- loading, ownership ------------------------------------------------------------------

def test_requests_while_loading_and_not_coordinator(monkeypatch):
    env = Env(monkeypatch)
    assert env.join()[0].error_code == E.NotCoordinatorError.code
    env.coord.on_elected(0, 1)
    assert env.coord.loading_partitions() == {0} and env.coord.owned_partitions() == set()
    loading = E.CoordinatorLoadInProgressError.code
    assert env.join()[0].error_code == loading
    assert env.heartbeat("m", 1) == 0                     # answered blindly
    assert env.sync("m", 1)[0].error_code == E.RebalanceInProgressError.code
    assert env.commit({("t", 0): 1})[0] == {("t", 0): loading}
    assert env.fetch()[0] == loading
    assert track(env.coord.list_groups())[0][0] == loading
    env.store.loads[-1][1].callback(({}, {}))
    assert env.coord.owned_partitions() == {0} and not env.coord.loading_partitions()
    joined = env.join()
    env.clock.advance(0)
    assert joined[0].error_code == 0


def test_load_rebuilds_groups_and_offsets(monkeypatch):
    env = Env(monkeypatch)
    member = MemberSnapshot("m-1", None, "cli", "/h", REBALANCE, SESSION, subscription("t"),
                            b"asg")
    snapshots = {
        "stable": GroupSnapshot("consumer", 3, "range", "m-1", 0, (member,)),
        "empty": GroupSnapshot("consumer", 2, None, None, 0),
        "deleted": None,
    }
    offsets = {("stable", "t", 0): OffsetAndMetadata(7), ("only-offsets", "t", 1):
               OffsetAndMetadata(9), ("stable", "t", 1): None}
    env.elect(snapshots=snapshots, offsets=offsets)
    stable = env.group("stable")
    assert stable.state is STABLE and stable.generation_id == 3
    assert env.group("empty").state is EMPTY and env.group("deleted") is None
    assert env.group("only-offsets").state is EMPTY
    assert env.fetch(group="stable")[1] == {("t", 0): (7, -1, "", 0)}
    assert env.fetch(group="only-offsets")[1] == {("t", 1): (9, -1, "", 0)}
    assert env.heartbeat("m-1", 3, group="stable") == 0
    synced = env.sync("m-1", 3, group="stable")[0]
    assert synced.assignment == b"asg"
    env.clock.advance(SESSION / 1000)       # the loaded member gets a fresh session timer
    assert stable.state is EMPTY and not stable.members and stable.generation_id == 4


def test_failed_load_is_retried(monkeypatch):
    env = Env(monkeypatch)
    env.coord.on_elected(0, 1)
    env.store.loads[-1][1].errback(RuntimeError("disk"))
    assert env.coord.loading_partitions() == {0}
    env.clock.advance(1)
    assert len(env.store.loads) == 2
    env.store.loads[-1][1].callback(({}, {}))
    assert env.coord.owned_partitions() == {0}


def test_resign_stops_load_retries(monkeypatch):
    env = Env(monkeypatch)
    env.coord.on_elected(0, 1)
    env.store.loads[-1][1].errback(RuntimeError("disk"))
    env.coord.on_resigned(0, 1)
    env.coord.stop()
    assert env.clock.getDelayedCalls() == [] and env.coord.loading_partitions() == set()


def test_stale_load_after_resign_is_ignored(monkeypatch):
    env = Env(monkeypatch)
    env.coord.on_elected(0, 1)
    env.coord.on_resigned(0, 1)
    env.store.loads[-1][1].callback(({}, {("g", "t", 0): OffsetAndMetadata(1)}))
    assert env.coord.owned_partitions() == set() and env.group() is None
    env.coord.on_elected(0, 0)              # an older epoch: ignored
    assert env.coord.loading_partitions() == set()


def test_resign_drops_groups_and_answers_not_coordinator(env):
    leader, follower = env.stable_pair()
    rejoin = env.join(member_id=leader)
    env.store.partitions["other"] = 1
    env.elect(partition=1)
    env.commit({("t", 0): 1}, group="other")
    env.coord.on_resigned(0, 1)
    assert rejoin[0].error_code == E.NotCoordinatorError.code
    assert env.group() is None and env.group("other") is not None
    assert env.coord.owned_partitions() == {1}
    assert env.heartbeat(leader, 1) == E.NotCoordinatorError.code
    env.clock.advance(3600)                   # no timer of the dropped group fires
    assert env.group("other") is not None


def test_stop_cancels_everything(env):
    ja, jb = env.join(client="a"), env.join(client="b")
    env.clock.advance(0)
    follower = jb[0] if ja[0].members else ja[0]
    sf = env.sync(follower.member_id, 1)
    env.coord.stop()
    assert sf[0].error_code == E.NotCoordinatorError.code
    assert env.clock.getDelayedCalls() == []
    assert env.join()[0].error_code == E.CoordinatorNotAvailableError.code


# --- admin, deletion, expiry -------------------------------------------------------------

def test_describe_and_list(env):
    leader, follower = env.stable_pair()
    env.commit({("t", 0): 1}, group="simple")
    described = track(env.coord.describe_groups(["g", "missing"]))[0]
    assert described[0].state == "Stable" and described[0].protocol == "range"
    assert {m.member_id: m.assignment for m in described[0].members} == {
        leader: b"L", follower: b"F"}
    assert described[0].members[0].client_host == "/10.0.0.1"
    assert described[1].state == "Dead" and described[1].error_code == 0
    code, groups = track(env.coord.list_groups())[0]
    assert code == 0 and {(g.group_id, g.state) for g in groups} == {
        ("g", "Stable"), ("simple", "Empty")}
    assert [g.group_id for g in track(env.coord.list_groups(["Empty"]))[0][1]] == ["simple"]


def test_delete_groups(env):
    env.stable_pair()
    env.commit({("t", 0): 1, ("t", 1): 2}, group="idle")
    env.store.manual = True
    result = track(env.coord.delete_groups(["idle", "g", "missing"]))
    assert not result                         # waits for the tombstones
    assert set(env.store.appends[-1][1]) == {(("offset", "idle", "t", 0), None),
                                             (("offset", "idle", "t", 1), None)}
    assert env.group("idle").state is DEAD    # gone once the tombstones are written
    env.store.complete()
    assert result[0] == {"idle": 0, "g": E.NonEmptyGroupError.code,
                         "missing": E.GroupIdNotFoundError.code}
    assert env.group("idle") is None
    assert env.fetch(group="idle") == (0, {})


def test_delete_of_a_group_that_had_members_writes_a_metadata_tombstone(env):
    joined = env.join()
    env.clock.advance(0)
    track(env.coord.leave_group("g", [(joined[0].member_id, None)]))
    assert track(env.coord.delete_groups(["g"]))[0] == {"g": 0}
    assert env.store.appends[-1][1] == [(("group", "g"), None)]
    assert env.group() is None


def test_delete_offsets(env):
    leader, follower = env.stable_pair()
    env.commit({("t", 0): 1, ("u", 0): 2}, 1, leader)
    code, codes = track(env.coord.delete_offsets("g", [("t", 0), ("u", 0)]))[0]
    assert code == 0 and codes == {("t", 0): E.GroupSubscribedToTopicError.code, ("u", 0): 0}
    assert set(env.fetch()[1]) == {("t", 0)}
    assert env.store.appends[-1][1] == [(("offset", "g", "u", 0), None)]
    assert track(env.coord.delete_offsets("nope", [("t", 0)]))[0] == (
        E.GroupIdNotFoundError.code, {})


def test_offsets_expire_and_empty_group_dies(make_env):
    env = make_env(offsets_retention_minutes=1, offsets_retention_check_interval_ms=10_000)
    env.elect()
    env.commit({("t", 0): 1}, group="simple")
    env.clock.advance(50)
    env.commit({("t", 1): 2}, group="simple")
    env.clock.advance(20)        # 70 s: (t, 0) is 70 s old, (t, 1) 20 s
    assert set(env.fetch(group="simple")[1]) == {("t", 1)}
    assert (("offset", "simple", "t", 0), None) in env.store.records()
    env.clock.advance(50)        # 120 s: (t, 1) expired too; the group is gone
    assert env.group("simple") is None
    assert (("group", "simple"), None) not in env.store.records()   # generation 0


def test_empty_consumer_group_offsets_expire_after_it_empties(make_env):
    env = make_env(offsets_retention_minutes=1, offsets_retention_check_interval_ms=10_000)
    env.elect()
    joined = env.join()
    env.clock.advance(0)
    mid = joined[0].member_id
    env.sync(mid, 1, {mid: b""})
    env.commit({("t", 0): 1}, 1, mid)
    for _ in range(12):                      # 2 minutes as a live member: nothing expires
        env.clock.advance(SESSION / 1000 / 2)
        env.heartbeat(mid, 1)
    assert env.fetch()[1][("t", 0)].offset == 1
    track(env.coord.leave_group("g", [(mid, None)]))
    env.clock.advance(50)
    assert env.fetch()[1][("t", 0)].offset == 1
    env.clock.advance(20)
    assert env.group() is None
    assert (("group", "g"), None) in env.store.records()


def test_invalid_group_ids(env):
    assert track(env.coord.describe_groups([""]))[0][0].error_code == 0
    assert track(env.coord.delete_offsets("", []))[0][0] == E.InvalidGroupIdError.code
    assert track(env.coord.leave_group("", []))[0] == (E.InvalidGroupIdError.code, [])
    assert track(env.coord.delete_groups([None]))[0] == {None: E.InvalidGroupIdError.code}


# --- randomized: invariants hold and no request is left hanging --------------------------


# the common steps of a rebalance (join, wait, sync, heartbeat) weigh more than the rare ones
ACTION_NAMES = ["join"] * 3 + ["advance"] * 4 + ["sync"] * 3 + ["heartbeat"] * 2 + [
    "join-static", "join-static", "join-required", "rejoin", "rejoin-changed", "leave",
    "leave-static", "commit", "store-fails", "store-ok", "resign-elect", "delete"]
ACTIONS = st.lists(st.tuples(st.sampled_from(ACTION_NAMES), st.integers(0, 5)),
                   min_size=3, max_size=40)


def check_invariants(group):
    members = group.members
    assert group.num_awaiting_join == sum(m.is_awaiting_join for m in members.values())
    assert (group.leader_id in members) if members else group.leader_id is None
    assert all(members[mid].group_instance_id == iid for iid, mid in
               group.static_members.items())
    assert group.pending_sync_members <= set(members)
    if group.state in (COMPLETING_REBALANCE, STABLE):
        assert members and group.protocol_name in group.candidate_protocols()
    if group.state is EMPTY:
        assert not members


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(actions=ACTIONS)
def test_random_operations_keep_the_group_consistent(monkeypatch, caplog, actions):
    run_actions(monkeypatch, caplog, actions, event)


def test_seeded_random_operations(monkeypatch, caplog):
    """Uniformly random sequences too: they reach Stable and later generations far more often
    than Hypothesis's (shrink-friendly) draws."""
    reached = set()
    for seed in range(200):
        rng = random.Random(seed)
        actions = [(rng.choice(ACTION_NAMES), rng.randint(0, 5))
                   for _ in range(rng.randint(3, 40))]
        run_actions(monkeypatch, caplog, actions, reached.add)
    assert {"reached Stable", "generation > 2", "reached CompletingRebalance"} <= reached


def run_actions(monkeypatch, caplog, actions, event):
    caplog.clear()
    env = Env(monkeypatch, group_initial_rebalance_delay_ms=500)
    env.elect()
    joins = []          # (answer box, instance) of every JoinGroup, in order
    syncs = []
    epoch = 1

    def known():
        """member id -> (generation, instance) from the answers received so far."""
        out = {}
        for box, instance in joins:
            if box and box[0].member_id:
                out[box[0].member_id] = (box[0].generation_id, instance)
        return out

    def pick(n):
        ids = sorted(known())
        return ids[n % len(ids)] if ids else "nobody"

    def join(instance=None, **kwargs):
        joins.append((env.join(instance=instance, session=6000, rebalance=4000, **kwargs),
                      instance))
        return joins[-1][0]

    for action, n in actions:
        members = known()
        mid = pick(n)
        gen, instance = members.get(mid, (-1, None))
        if action == "join":
            join(client=f"c{n}")
        elif action == "join-static":
            join(client="s", instance=f"i{n % 2}")
        elif action == "join-required":
            box = join(client=f"r{n}", require=True)
            join(member_id=box[0].member_id)
        elif action in ("rejoin", "rejoin-changed"):
            join(member_id=mid, instance=instance,
                 topics=("t", "u") if action == "rejoin-changed" else ("t",))
        elif action == "sync":
            for member_id, (generation, inst) in members.items():
                syncs.append(env.sync(member_id, generation, {m: b"x" for m in members},
                                      instance=inst))
        elif action == "heartbeat":
            for member_id, (generation, inst) in members.items():
                if member_id != mid:
                    env.heartbeat(member_id, generation, instance=inst)
        elif action == "leave":
            track(env.coord.leave_group("g", [(mid, None)]))
        elif action == "leave-static":
            track(env.coord.leave_group("g", [("", f"i{n % 2}")]))
        elif action == "commit":
            env.commit({("t", n): n}, gen, mid, instance=instance)
        elif action == "advance":
            # small steps: Clock runs a timer set during advance() relative to its end
            env.clock.pump([0.25] * ((n + 1) * 4))
        elif action == "store-fails":
            env.store.code = E.NotEnoughReplicasError.code
        elif action == "store-ok":
            env.store.code = 0
        elif action == "resign-elect":
            env.coord.on_resigned(0, epoch)
            epoch += 1
            env.elect(epoch=epoch)
        elif action == "delete":
            track(env.coord.delete_groups(["g"]))
        group = env.group()
        if group is not None:
            check_invariants(group)
            event(f"reached {group.state.value}")
            if group.generation_id > 2:
                event("generation > 2")
        else:
            event("no group")
    env.store.code = 0
    env.clock.pump([1] * 3600)
    assert all(box for box, _ in joins) and all(syncs), "a request was never answered"
    assert not [r for r in caplog.records if r.exc_info], "the coordinator hit an exception"
    env.coord.stop()
    assert env.clock.getDelayedCalls() == []


# --- with the real __consumer_offsets codec ----------------------------------------------

def test_groups_and_offsets_survive_a_coordinator_move_with_real_records(monkeypatch):
    """Everything written through records.py, replayed into a new coordinator's load: the
    group comes back Stable with its assignment, the offsets with it, tombstones honoured."""
    records = pytest.importorskip("kafkalite.coordinator.records")
    env = Env(monkeypatch)
    monkeypatch.setattr(coordinator_module, "_codec", lambda: records)
    env.elect()
    leader, follower = env.stable_pair(session=30_000)
    env.commit({("t", 0): OffsetAndMetadata(5, 3, "meta"), ("u", 1): 8}, 1, leader)
    track(env.coord.delete_offsets("g", [("u", 1)]))
    env.commit({("t", 2): 1}, group="simple")

    replay_groups, replay_offsets = {}, {}
    for key, value in env.store.records():
        assert isinstance(key, bytes)
        kind, ident, decoded = records.parse(key, value)
        (replay_groups if kind == "group" else replay_offsets)[ident] = decoded

    clock = Clock()
    store = FakeStore()
    moved = GroupCoordinator(2, clock, store, env.config)
    moved.on_elected(0, 2)
    store.loads[-1][1].callback((replay_groups, replay_offsets))
    group = moved._groups["g"]
    assert group.state is STABLE and group.generation_id == 1
    assert {m: group.get(m).assignment for m in group.members} == {leader: b"L", follower: b"F"}
    assert group.subscribed_topics == {"t"}
    code, fetched = track(moved.fetch_offsets("g", None))[0]
    assert fetched == {("t", 0): (5, 3, "meta", 0)}
    assert track(moved.fetch_offsets("simple", None))[0][1] == {("t", 2): (1, -1, "", 0)}
    assert track(moved.heartbeat("g", 1, follower, None))[0] == 0
