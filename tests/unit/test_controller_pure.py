import random

import pytest

from kafkalite.controller.assignment import (assign_replicas, parse_replica_assignment,
                                             validate_assignment)
from kafkalite.controller.election import (controlled_shutdown_election, leader_imbalance,
                                           new_partition_election, offline_election,
                                           preferred_election, reassignment_election)
from kafkalite.controller.state_machines import (PartitionState as P, ReplicaState as R,
                                                 StateTable)
from kafkalite.errors import (IllegalStateError, InvalidReplicaAssignmentError,
                              InvalidReplicationFactorError)


# --- assignment -----------------------------------------------------------------------------
def test_rack_unaware_spread_matches_kafka_fixed_start():
    # Kafka's AdminUtilsTest: 5 brokers, 10 partitions, rf 3, fixed start index 0
    expected = {0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
                5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}
    assert assign_replicas(10, 3, [0, 1, 2, 3, 4], fixed_start_index=0) == expected


@pytest.mark.parametrize("brokers,partitions,rf", [([1, 2, 3], 6, 3), ([1, 2, 3], 7, 2),
                                                   ([5, 9], 4, 1), ([1, 2, 3, 4, 5], 20, 3)])
def test_spread_is_balanced_and_valid(brokers, partitions, rf):
    assignment = assign_replicas(partitions, rf, brokers, rng=random.Random(3))
    validate_assignment(assignment)
    leaders = [replicas[0] for replicas in assignment.values()]
    counts = [leaders.count(b) for b in brokers]
    assert max(counts) - min(counts) <= 1


def test_replication_factor_above_live_brokers():
    with pytest.raises(InvalidReplicationFactorError,
                       match=r"] Replication factor: 3 larger than available brokers: 2.$"):
        assign_replicas(1, 3, [1, 2])


@pytest.mark.parametrize("text,error", [("1:2,x:3", "expected broker ids"), ("1:1", "Duplicate replica"),
                                        ("1:2,3", "same number")])
def test_bad_explicit_assignment(text, error):
    with pytest.raises(InvalidReplicaAssignmentError, match=error):
        parse_replica_assignment(text)


def test_explicit_assignment():
    assert parse_replica_assignment("1:2,2:3") == {0: [1, 2], 1: [2, 3]}


# --- elections (REFERENCE.md's table) --------------------------------------------------------
@pytest.mark.parametrize("assignment,isr,live,unclean,expected", [
    ([1, 2, 3], [1, 2, 3], {1, 2, 3}, False, (1, (1, 2, 3), False)),
    ([1, 2, 3], [1, 2, 3], {2, 3}, False, (2, (2, 3), False)),
    ([1, 2, 3], [3, 2], {2, 3}, False, (2, (3, 2), False)),   # assignment order, not ISR order
    ([1, 2, 3], [1], {2, 3}, False, None),                     # no live ISR member, clean
    ([1, 2, 3], [1], {2, 3}, True, (2, (2,), True)),           # unclean: first live replica
    ([1, 2, 3], [1], set(), True, None),
])
def test_offline_election(assignment, isr, live, unclean, expected):
    result = offline_election(assignment, isr, live, unclean)
    if expected is None:
        assert result is None
    else:
        assert (result.leader, result.isr, result.unclean) == expected


def test_new_partition_election():
    assert new_partition_election([2, 1, 3], {1, 3}).leader == 1
    assert new_partition_election([2, 1, 3], {1, 3}).isr == (1, 3)
    assert new_partition_election([2], set()) is None


@pytest.mark.parametrize("target,isr,live,leader", [
    ([4, 5, 6], [4, 5, 6, 1], {1, 4, 5, 6}, 4), ([4, 5, 6], [5, 6, 1], {1, 4, 5, 6}, 5),
    ([4, 5], [1], {1, 4, 5}, None)])
def test_reassignment_election(target, isr, live, leader):
    result = reassignment_election(target, isr, live)
    assert (result.leader if result else None) == leader
    if result:
        assert result.isr == tuple(isr)


@pytest.mark.parametrize("assignment,isr,live,leader", [
    ([1, 2, 3], [2, 3, 1], {1, 2, 3}, 1), ([1, 2, 3], [2, 3], {1, 2, 3}, None),
    ([1, 2, 3], [1, 2, 3], {2, 3}, None)])
def test_preferred_election(assignment, isr, live, leader):
    result = preferred_election(assignment, isr, live)
    assert (result.leader if result else None) == leader


@pytest.mark.parametrize("assignment,isr,live,down,expected", [
    ([1, 2, 3], [1, 2, 3], {1, 2, 3}, {1}, (2, (2, 3))),
    ([1, 2, 3], [1, 3], {1, 2, 3}, {1}, (3, (3,))),
    ([1, 2], [1], {1, 2}, {1}, None)])
def test_controlled_shutdown_election(assignment, isr, live, down, expected):
    result = controlled_shutdown_election(assignment, isr, live, down)
    assert ((result.leader, result.isr) if result else None) == expected


def test_leader_imbalance():
    assignments = {("t", 0): [1, 2], ("t", 1): [1, 2], ("t", 2): [2, 1]}
    leaders = {("t", 0): 1, ("t", 1): 2, ("t", 2): 2}
    assert leader_imbalance(assignments, leaders) == {1: 0.5, 2: 0.0}


# --- state machines --------------------------------------------------------------------------
def test_partition_state_transitions():
    table = StateTable("partition", P.NON_EXISTENT)
    table.transition(("t", 0), P.NEW)
    table.transition(("t", 0), P.ONLINE)
    table.transition(("t", 0), P.OFFLINE)
    table.transition(("t", 0), P.ONLINE)
    with pytest.raises(IllegalStateError, match="OnlinePartition -> NonExistentPartition"):
        table.transition(("t", 0), P.NON_EXISTENT)
    table.transition(("t", 0), P.OFFLINE)
    table.transition(("t", 0), P.NON_EXISTENT)
    assert table.get(("t", 0)) == P.NON_EXISTENT


def test_replica_deletion_path():
    table = StateTable("replica", R.NON_EXISTENT)
    key = ("t", 0, 1)
    for state in (R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_STARTED, R.DELETION_SUCCESSFUL,
                  R.NON_EXISTENT):
        table.transition(key, state)
    with pytest.raises(IllegalStateError):
        table.transition(key, R.ONLINE)
