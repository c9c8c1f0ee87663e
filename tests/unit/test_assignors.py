import pytest
from hypothesis import given, settings, strategies as st

from kafkalite.client.assignors import (ASSIGNORS, moved_partitions, range_assign,
                                        roundrobin_assign, sticky_assign)


def _t(topic, *ps):
    return [(topic, p) for p in ps]


@pytest.mark.parametrize("members,count,expected", [
    (["a", "b", "c"], 6, {"a": [0, 1], "b": [2, 3], "c": [4, 5]}),
    (["a", "b", "c"], 7, {"a": [0, 1, 2], "b": [3, 4], "c": [5, 6]}),
    (["a", "b", "c", "d"], 6, {"a": [0, 1], "b": [2, 3], "c": [4], "d": [5]}),
    (["a", "b"], 1, {"a": [0], "b": []}),
])
def test_range_matches_kafka(members, count, expected):
    result = range_assign({m: {"t"} for m in members}, {"t": count})
    assert result == {m: _t("t", *ps) for m, ps in expected.items()}


def test_range_is_per_topic():
    result = range_assign({"a": {"x", "y"}, "b": {"x", "y"}}, {"x": 3, "y": 3})
    assert result == {"a": _t("x", 0, 1) + _t("y", 0, 1), "b": _t("x", 2) + _t("y", 2)}


def test_roundrobin_deals_across_topics():
    result = roundrobin_assign({"a": {"x", "y"}, "b": {"x", "y"}}, {"x": 3, "y": 3})
    assert result == {"a": _t("x", 0, 2) + _t("y", 1), "b": _t("x", 1) + _t("y", 0, 2)}


def test_roundrobin_skips_unsubscribed_members():
    result = roundrobin_assign({"a": {"x"}, "b": {"x", "y"}}, {"x": 2, "y": 2})
    assert result == {"a": _t("x", 0), "b": _t("x", 1) + _t("y", 0, 1)}


def test_idle_members_beyond_partition_count():
    for name, assignor in ASSIGNORS.items():
        result = assignor({f"m{i}": {"t"} for i in range(8)}, {"t": 6})
        assert sum(1 for tps in result.values() if not tps) == 2, name


def test_sticky_moves_fewer_than_range_when_one_of_five_leaves():
    members = {f"m{i}": {"t"} for i in range(5)}
    before_range = range_assign(members, {"t": 20})
    before_sticky = sticky_assign(members, {"t": 20})
    remaining = {m: s for m, s in members.items() if m != "m2"}
    moved_range = moved_partitions(before_range, range_assign(remaining, {"t": 20}))
    moved_sticky = moved_partitions(before_sticky,
                                    sticky_assign(remaining, {"t": 20}, before_sticky))
    assert moved_sticky == 4             # exactly the leaver's partitions
    assert moved_range > moved_sticky


def test_sticky_join_moves_only_what_the_newcomer_needs():
    members = {f"m{i}": {"t"} for i in range(3)}
    before = sticky_assign(members, {"t": 12})
    after = sticky_assign({**members, "m9": {"t"}}, {"t": 12}, before)
    assert len(after["m9"]) == 3
    assert moved_partitions(before, after) == 3


subscriptions = st.dictionaries(
    st.sampled_from([f"m{i}" for i in range(7)]),
    st.sets(st.sampled_from(["a", "b", "c"]), min_size=1), min_size=1)
topic_counts = st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(1, 9), min_size=1)


@settings(max_examples=200, deadline=None)
@given(subscriptions, topic_counts, st.sampled_from(sorted(ASSIGNORS)))
def test_every_partition_exactly_once_to_a_subscriber(subs, counts, name):
    result = ASSIGNORS[name](subs, counts)
    owned = [tp for tps in result.values() for tp in tps]
    wanted = {(t, p) for t, n in counts.items() for p in range(n)
              if any(t in s for s in subs.values())}
    assert sorted(owned) == sorted(wanted)
    for member, tps in result.items():
        assert all(t in subs[member] for t, _ in tps)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 8), st.integers(1, 40), st.data())
def test_sticky_stays_balanced_after_changes(members, count, data):
    subs = {f"m{i}": {"t"} for i in range(members)}
    before = sticky_assign(subs, {"t": count})
    leaving = data.draw(st.sets(st.sampled_from(sorted(subs)), max_size=members - 1))
    after_subs = {m: s for m, s in subs.items() if m not in leaving}
    after_subs.update({f"n{i}": {"t"} for i in range(data.draw(st.integers(0, 3)))})
    after = sticky_assign(after_subs, {"t": count}, before)
    sizes = [len(tps) for tps in after.values()]
    assert max(sizes) - min(sizes) <= 1
    assert sorted(tp for tps in after.values() for tp in tps) == [("t", p) for p in range(count)]
