"""The pure group state machine (kafkalite.coordinator.group): Kafka's GroupMetadata and
MemberMetadata rules, table- and property-tested."""

import struct

import pytest
from hypothesis import given, strategies as st

from kafkalite.coordinator import group as g
from kafkalite.coordinator.group import (
    COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE, VALID_PREVIOUS_STATES,
    GroupMetadata, GroupState, MemberMetadata, parse_subscription_topics,
)
from kafkalite.coordinator.types import GroupSnapshot, MemberSnapshot, OffsetAndMetadata
from kafkalite.errors import FencedInstanceIdError, IllegalStateError


def subscription(topics, version=0, user_data=None):
    out = struct.pack(">hi", version, len(topics))
    for t in topics:
        raw = t.encode()
        out += struct.pack(">h", len(raw)) + raw
    return out + (struct.pack(">i", -1) if user_data is None
                  else struct.pack(">i", len(user_data)) + user_data)


def member(mid, protocols=(("range", b"r"),), instance=None, rebalance=10000, session=30000):
    return MemberMetadata(mid, instance, "client", "/host", rebalance, session, "consumer",
                          list(protocols))


def new_group(state=EMPTY, now=None):
    clock = now if now is not None else [1000]
    return GroupMetadata("grp", state, lambda: clock[0])


# --- transitions ---------------------------------------------------------------------------

# Kafka's table, written out independently of the module's
ALLOWED = {
    (STABLE, PREPARING_REBALANCE), (COMPLETING_REBALANCE, PREPARING_REBALANCE),
    (EMPTY, PREPARING_REBALANCE),
    (PREPARING_REBALANCE, COMPLETING_REBALANCE),
    (COMPLETING_REBALANCE, STABLE),
    (PREPARING_REBALANCE, EMPTY),
    (STABLE, DEAD), (PREPARING_REBALANCE, DEAD), (COMPLETING_REBALANCE, DEAD), (EMPTY, DEAD),
    (DEAD, DEAD),
}


@pytest.mark.parametrize("source", list(GroupState))
@pytest.mark.parametrize("target", list(GroupState))
def test_transition_table(source, target):
    now = [5]
    group = new_group(source, now)
    now[0] = 9
    if (source, target) in ALLOWED:
        group.transition_to(target)
        assert group.state is target and group.state_timestamp == 9
    else:
        with pytest.raises(IllegalStateError):
            group.transition_to(target)
        assert group.state is source and group.state_timestamp == 5


@given(st.lists(st.sampled_from(list(GroupState)), max_size=30))
def test_any_sequence_of_transitions_follows_the_table(targets):
    group = new_group()
    for target in targets:
        before = group.state
        try:
            group.transition_to(target)
        except IllegalStateError:
            assert (before, target) not in ALLOWED and group.state is before
        else:
            assert (before, target) in ALLOWED and group.state is target
    assert group.can_rebalance() == (group.state in VALID_PREVIOUS_STATES[PREPARING_REBALANCE])


def test_can_rebalance_only_from_stable_completing_or_empty():
    assert {s for s in GroupState if new_group(s).can_rebalance()} == {
        STABLE, COMPLETING_REBALANCE, EMPTY}


# --- protocols -----------------------------------------------------------------------------

def test_select_protocol_votes_among_common_protocols():
    group = new_group(PREPARING_REBALANCE)
    group.add(member("a", [("roundrobin", b""), ("range", b"")]))
    group.add(member("b", [("range", b""), ("roundrobin", b""), ("sticky", b"")]))
    group.add(member("c", [("roundrobin", b""), ("range", b"")]))
    assert group.candidate_protocols() == {"range", "roundrobin"}
    assert group.select_protocol() == "roundrobin"      # 2 votes to 1
    group.remove("c")
    # one vote each: the tie goes to the protocol voted first (member a's)
    assert group.select_protocol() == "roundrobin"


def test_select_protocol_of_empty_group_is_an_error():
    with pytest.raises(IllegalStateError):
        new_group().select_protocol()


@given(st.lists(st.permutations(["range", "roundrobin", "sticky"]).map(
    lambda p: p[:2]), min_size=1, max_size=6))
def test_selected_protocol_is_supported_by_everyone(preferences):
    group = new_group(PREPARING_REBALANCE)
    for i, prefs in enumerate(preferences):
        group.add(member(f"m{i}", [(p, b"") for p in prefs]))
    common = set.intersection(*(set(p) for p in preferences))
    if not common:
        with pytest.raises(IllegalStateError):
            group.select_protocol()
    else:
        chosen = group.select_protocol()
        assert chosen in common
        votes = {p: sum(1 for prefs in preferences
                        if next(x for x in prefs if x in common) == p) for p in common}
        assert votes[chosen] == max(votes.values())


def test_supports_protocols():
    group = new_group()
    assert group.supports_protocols("consumer", ["range"])
    assert not group.supports_protocols("", ["range"])
    assert not group.supports_protocols("consumer", [])
    group.transition_to(PREPARING_REBALANCE)
    group.add(member("a", [("range", b""), ("sticky", b"")]))
    assert group.protocol_type == "consumer"
    assert group.supports_protocols("consumer", ["sticky", "x"])
    assert not group.supports_protocols("consumer", ["x"])
    assert not group.supports_protocols("connect", ["range"])


def test_update_member_moves_protocol_counts_and_awaiting():
    group = new_group(PREPARING_REBALANCE)
    a = member("a", [("range", b"")])
    group.add(a)
    assert group.num_awaiting_join == 0 and not group.has_all_members_joined()
    group.update_member(a, [("sticky", b"")], lambda r: None)
    assert group.candidate_protocols() == {"sticky"}
    assert group.num_awaiting_join == 1 and group.has_all_members_joined()
    group.pending_members.add("p")
    assert not group.has_all_members_joined()
    group.update_member(a, [("sticky", b"")], None)
    assert group.num_awaiting_join == 0


def test_member_matches_and_metadata():
    a = member("a", [("range", b"x"), ("sticky", b"y")])
    assert a.matches([("range", b"x"), ("sticky", b"y")])
    assert not a.matches([("sticky", b"y"), ("range", b"x")])
    assert not a.matches([("range", b"x")])
    assert a.metadata("sticky") == b"y"
    with pytest.raises(IllegalStateError):
        a.metadata("nope")


# --- members -------------------------------------------------------------------------------

def test_leader_is_first_member_and_moves_on_removal():
    group = new_group(PREPARING_REBALANCE)
    for mid in "abc":
        group.add(member(mid))
    assert group.leader_id == "a"
    group.remove("a")
    assert group.leader_id == "b"
    group.remove("c")
    group.remove("b")
    assert group.leader_id is None and group.size == 0


def test_maybe_elect_new_joined_leader():
    group = new_group(PREPARING_REBALANCE)
    a, b = member("a"), member("b")
    group.add(a)
    group.add(b, lambda r: None)
    assert group.maybe_elect_new_joined_leader() and group.leader_id == "b"
    group.take_join_callback(b)
    assert not group.maybe_elect_new_joined_leader()


def test_rebalance_timeout_is_the_members_max():
    group = new_group(PREPARING_REBALANCE)
    group.add(member("a", rebalance=5000))
    group.add(member("b", rebalance=7000))
    assert group.rebalance_timeout_ms == 7000


def test_static_member_replacement_fences_the_parked_callbacks():
    group = new_group(PREPARING_REBALANCE)
    a = member("old", instance="i-1")
    joined, synced = [], []
    group.add(a, joined.append)
    group.static_members["i-1"] = "old"
    a.awaiting_sync = synced.append
    replaced, fenced = group.replace_group_instance("old", "new", "i-1")
    assert replaced is a and a.member_id == "new" and group.leader_id == "new"
    assert group.static_members == {"i-1": "new"} and not group.has("old")
    for callback, result in fenced:
        callback(result)
    assert joined[0].error_code == FencedInstanceIdError.code
    assert synced[0].error_code == FencedInstanceIdError.code
    assert group.num_awaiting_join == 0
    assert group.is_static_member_fenced("old", "i-1")
    assert not group.is_static_member_fenced("new", "i-1")
    assert not group.is_static_member_fenced("old", None)
    group.remove("new")
    assert group.static_members == {}


def test_pending_member():
    group = new_group()
    group.pending_members.add("p")
    assert group.is_pending_member("p")
    group.transition_to(PREPARING_REBALANCE)
    group.add(member("p"))
    assert not group.is_pending_member("p")


def test_generate_member_id():
    assert GroupMetadata.generate_member_id("cli", None).startswith("cli-")
    assert GroupMetadata.generate_member_id("cli", "inst").startswith("inst-")
    assert len(GroupMetadata.generate_member_id("c", None)) == len("c-") + 36


def test_init_next_generation():
    group = new_group(PREPARING_REBALANCE)
    group.protocol_type = "consumer"
    group.init_next_generation()
    assert group.state is EMPTY and group.generation_id == 1 and group.protocol_name is None
    assert group.subscribed_topics == set()
    group.transition_to(PREPARING_REBALANCE)
    group.add(member("a", [("range", subscription(["t1", "t2"]))]))
    group.add(member("b", [("range", subscription(["t3"]))]))
    group.pending_sync_members.add("a")
    group.init_next_generation()
    assert group.state is COMPLETING_REBALANCE and group.generation_id == 2
    assert group.protocol_name == "range" and group.subscribed_topics == {"t1", "t2", "t3"}
    assert not group.pending_sync_members
    assert [m.member_id for m in group.current_member_metadata()] == ["a", "b"]


def test_unparseable_subscription_means_subscribed_to_everything():
    group = new_group(PREPARING_REBALANCE)
    group.add(member("a", [("range", b"\x00")]))
    group.init_next_generation()
    assert group.subscribed_topics is None and group.is_subscribed_to_topic("anything")


@pytest.mark.parametrize("data,expected", [
    (subscription(["a", "b"]), {"a", "b"}),
    (subscription(["a"], version=3, user_data=b"xyz") + b"more fields", {"a"}),
    (subscription([]), set()),
    (b"", None),
    (struct.pack(">hi", 0, 5), None),
    (struct.pack(">hih", 0, 1, 10) + b"abc", None),
    (struct.pack(">hi", -1, 0), None),
])
def test_parse_subscription_topics(data, expected):
    assert parse_subscription_topics(data) == expected


def test_describe_shows_metadata_only_when_stable():
    group = new_group(PREPARING_REBALANCE)
    group.add(member("a", [("range", b"meta")]))
    assert group.describe().members[0].metadata == b""
    group.init_next_generation()
    group.get("a").assignment = b"asg"
    group.transition_to(STABLE)
    described = group.describe()
    assert (described.state, described.protocol, described.protocol_type) == (
        "Stable", "range", "consumer")
    assert described.members[0].metadata == b"meta"
    assert described.members[0].assignment == b"asg"
    assert group.overview() == ("grp", "consumer", "Stable")


def test_snapshot_round_trip():
    group = new_group(PREPARING_REBALANCE)
    group.add(member("a", [("range", subscription(["t"]))], instance="i-a"))
    group.static_members["i-a"] = "a"
    group.add(member("b", [("range", subscription(["u"]))]))
    group.init_next_generation()
    snap = group.snapshot({"a": b"A", "b": b"B"})
    assert snap.protocol == "range" and snap.leader == "a" and snap.generation == 1
    assert [m.assignment for m in snap.members] == [b"A", b"B"]
    loaded = GroupMetadata.from_snapshot("grp", snap, lambda: 0)
    assert loaded.state is STABLE and loaded.generation_id == 1
    assert loaded.leader_id == "a" and loaded.static_members == {"i-a": "a"}
    assert loaded.get("b").assignment == b"B" and loaded.subscribed_topics == {"t", "u"}
    assert loaded.protocol_type == "consumer"
    empty = GroupMetadata.from_snapshot(
        "grp", GroupSnapshot("consumer", 4, None, None, -1), lambda: 0)
    assert empty.state is EMPTY and empty.generation_id == 4 and empty.state_timestamp is None


def test_from_snapshot_with_stored_member():
    snap = GroupSnapshot("consumer", 2, "range", "m", 77, (
        MemberSnapshot("m", None, "c", "/h", 1000, 2000, b"sub", b"asg"),))
    group = GroupMetadata.from_snapshot("x", snap, lambda: 0)
    m = group.get("m")
    assert (m.rebalance_timeout_ms, m.session_timeout_ms, m.metadata("range"), m.assignment) == (
        1000, 2000, b"sub", b"asg")
    assert group.state_timestamp == 77


# --- offsets -------------------------------------------------------------------------------

def oam(offset, commit=0, expire=-1):
    return OffsetAndMetadata(offset, -1, "", commit, expire)


def test_offset_commit_lands_only_when_still_pending():
    group = new_group()
    token = group.prepare_offset_commit({("t", 0): oam(5)})
    assert group.has_offsets() and group.offsets == {}
    group.complete_offset_commit(token, {("t", 0): oam(5)}, True)
    assert group.offsets == {("t", 0): oam(5)} and not group.pending_offset_commits
    token = group.prepare_offset_commit({("t", 0): oam(9)})
    group.remove_offsets([("t", 0)])         # deleted while the write was in flight
    group.complete_offset_commit(token, {("t", 0): oam(9)}, True)
    assert group.offsets == {} and not group.has_offsets()
    token = group.prepare_offset_commit({("t", 1): oam(1)})
    group.complete_offset_commit(token, {("t", 1): oam(1)}, False)
    assert group.offsets == {} and not group.has_offsets()


def test_expiry_of_simple_group_is_by_commit_time():
    group = new_group(EMPTY, [0])
    group.offsets = {("t", 0): oam(1, commit=100), ("t", 1): oam(2, commit=1500),
                     ("t", 2): oam(3, commit=0, expire=2000)}
    assert group.remove_expired_offsets(1100, 1000) == {("t", 0): oam(1, commit=100)}
    assert set(group.offsets) == {("t", 1), ("t", 2)}
    assert group.remove_expired_offsets(2000, 1000) == {("t", 2): oam(3, commit=0, expire=2000)}


def test_expiry_of_empty_consumer_group_counts_from_becoming_empty():
    now = [0]
    group = new_group(PREPARING_REBALANCE, now)
    group.protocol_type = "consumer"
    group.offsets = {("t", 0): oam(1, commit=0)}
    now[0] = 5000
    group.transition_to(EMPTY)
    assert group.remove_expired_offsets(5500, 1000) == {}
    assert group.remove_expired_offsets(6000, 1000) == {("t", 0): oam(1, commit=0)}


def test_expiry_of_stable_consumer_group_spares_subscribed_topics():
    group = new_group(PREPARING_REBALANCE)
    group.add(member("a", [("range", subscription(["live"]))]))
    group.init_next_generation()
    group.transition_to(STABLE)
    group.offsets = {("live", 0): oam(1), ("gone", 0): oam(2)}
    assert group.remove_expired_offsets(10_000, 1000) == {("gone", 0): oam(2)}
    assert set(group.offsets) == {("live", 0)}


def test_no_expiry_while_rebalancing_or_with_pending_commits():
    group = new_group(PREPARING_REBALANCE)
    group.protocol_type = "consumer"
    group.offsets = {("t", 0): oam(1)}
    assert group.remove_expired_offsets(10_000, 1) == {}
    simple = new_group()
    simple.offsets = {("t", 0): oam(1)}
    simple.prepare_offset_commit({("t", 0): oam(2)})
    assert simple.remove_expired_offsets(10_000, 1) == {}


def test_module_exports_consumer_protocol_type():
    assert g.CONSUMER_PROTOCOL_TYPE == "consumer"
