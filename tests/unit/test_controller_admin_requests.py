"""The controller's side of AlterPartitionReassignments, ListPartitionReassignments (KIP-455)
and ElectLeaders (KIP-460), against the in-memory ZooKeeper and recording channels: the full
assignment in the topic znode (adding_replicas / removing_replicas) as Kafka 2.8 keeps it,
cancellation, Kafka's validation and per-partition errors, the API taking a partition out of
``/admin/reassign_partitions``, and a new controller resuming a move."""

from __future__ import annotations

import pytest

from kafkalite import errors
from kafkalite.controller.reassignment import ReplicaAssignment
from kafkalite.controller.state_machines import ReplicaState as RS

from controller_fakes import ControllerHarness

OK = (0, None)


def _run(h, d):
    """Settle the ensemble and give the Deferred's result (or raise its failure)."""
    out = []
    d.addBoth(out.append)
    h.settle()
    assert out, "the controller did not answer"
    if hasattr(out[0], "raiseException"):
        out[0].raiseException()
    return out[0]


def _moving():
    h = ControllerHarness(brokers=(1, 2, 3))
    h.admin.create_topic("r", {0: [1, 2], 1: [2, 1]})
    h.set_state("r", 0, leader=1, isr=[1, 2], leader_epoch=2)
    h.set_state("r", 1, leader=2, isr=[2, 1])
    controller, _ = h.controller(2)
    return h, controller


def _catch_up(h, isr):
    state = h.state("r", 0)
    h.set_state("r", 0, leader=state.leader, isr=isr, leader_epoch=state.leader_epoch)
    h.admin.create_isr_change_notification([("r", 0)])
    h.settle()


def test_an_api_reassignment_keeps_its_state_in_the_topic_znode_until_done():
    h, controller = _moving()
    controller.channels.clear()
    assert _run(h, controller.alter_partition_reassignments({("r", 0): [3, 2]})) == {
        ("r", 0): OK}
    znode = h.admin.get_topic_assignment("r")
    assert (znode.partitions[0], znode.adding_replicas, znode.removing_replicas) == (
        (3, 2, 1), {0: (3,)}, {0: (1,)})
    assert h.state("r", 0).leader_epoch == 3
    assert controller.replica_state_machine.state(("r", 0, 3)) == RS.NEW
    assert sorted(b for b, r in controller.channels.sent
                  if type(r).__name__ == "LeaderAndIsrRequest") == [1, 2, 3]
    assert h.admin.get_partition_reassignment() is None          # the API writes no request
    assert _run(h, controller.list_partition_reassignments()) == {
        ("r", 0): ReplicaAssignment((3, 2, 1), (3,), (1,))}
    assert _run(h, controller.list_partition_reassignments([("r", 1), ("x", 0)])) == {}

    _catch_up(h, [1, 2, 3])
    znode = h.admin.get_topic_assignment("r")
    assert (znode.partitions, znode.adding_replicas, znode.removing_replicas) == (
        {0: (3, 2), 1: (2, 1)}, {}, {})
    assert (h.state("r", 0).leader, h.state("r", 0).isr) == (3, (2, 3))
    assert controller.replica_state_machine.state(("r", 0, 1)) == RS.NON_EXISTENT
    assert _run(h, controller.list_partition_reassignments()) == {}


def test_cancelling_restores_the_original_replicas_and_stops_the_added_ones():
    h, controller = _moving()
    _run(h, controller.alter_partition_reassignments({("r", 0): [3, 2]}))
    controller.channels.clear()
    assert _run(h, controller.alter_partition_reassignments({("r", 0): None})) == {("r", 0): OK}
    znode = h.admin.get_topic_assignment("r")
    # as in Kafka, the original order is not restored: the target came first while moving
    assert (znode.partitions[0], znode.adding_replicas, znode.removing_replicas) == (
        (2, 1), {}, {})
    stop = controller.channels.requests("StopReplicaRequest", 3)
    assert [(p.topic, p.partition) for r in stop for p in r.partitions] == [("r", 0)]
    assert controller.replica_state_machine.state(("r", 0, 3)) == RS.NON_EXISTENT
    assert h.state("r", 0).leader == 1
    assert _run(h, controller.alter_partition_reassignments({("r", 0): None})) == {
        ("r", 0): (85, "No partition reassignment is in progress.")}


def test_a_new_target_replaces_a_running_reassignment():
    h, controller = _moving()
    _run(h, controller.alter_partition_reassignments({("r", 0): [3, 2]}))
    _run(h, controller.alter_partition_reassignments({("r", 0): [2, 1, 3]}))
    znode = h.admin.get_topic_assignment("r")
    # the origin is still [1, 2]: 3 is being added, nothing is removed
    assert (znode.partitions[0], znode.adding_replicas, znode.removing_replicas) == (
        (2, 1, 3), {0: (3,)}, {})


@pytest.mark.parametrize("target, message", [
    ([], "Empty replica list specified in partition reassignment."),
    ([2, 2], "Duplicate replica ids in partition reassignment replica list: ArrayBuffer(2, 2)"),
    ([2, -1], "Invalid broker id in replica list: ArrayBuffer(2, -1)"),
    ([7, 2], "Replica assignment has brokers that are not alive. Replica list: ArrayBuffer(7), "
             "live broker list: Set(1, 2, 3)"),
])
def test_invalid_targets_are_refused_as_kafka_refuses_them(target, message):
    h, controller = _moving()
    assert _run(h, controller.alter_partition_reassignments({("r", 0): target})) == {
        ("r", 0): (errors.InvalidReplicaAssignmentError.code, message)}
    assert h.admin.get_topic_assignment("r").partitions[0] == (1, 2)


def test_a_partition_that_does_not_exist():
    h, controller = _moving()
    assert _run(h, controller.alter_partition_reassignments({("r", 5): [1], ("x", 0): [1]})) \
        == {("r", 5): (3, "The partition does not exist."),
            ("x", 0): (3, "The partition does not exist.")}


def test_the_api_takes_its_partitions_out_of_the_zookeeper_request():
    h, controller = _moving()
    h.admin.create_partition_reassignment({("r", 0): [3, 2], ("r", 1): [3, 1]})
    h.settle()
    _run(h, controller.alter_partition_reassignments({("r", 0): [3, 1]}))
    assert h.admin.get_partition_reassignments() == {("r", 1): (3, 1)}
    assert h.admin.get_topic_assignment("r").partitions[0] == (3, 1, 2)


def test_a_new_controller_resumes_the_move_from_the_topic_znode():
    h, controller = _moving()
    _run(h, controller.alter_partition_reassignments({("r", 0): [3, 2]}))
    _run(h, controller.stop())
    successor, _ = h.controller(1)
    assert successor.is_active
    assert _run(h, successor.list_partition_reassignments()) == {
        ("r", 0): ReplicaAssignment((3, 2, 1), (3,), (1,))}
    _catch_up(h, [1, 2, 3])
    znode = h.admin.get_topic_assignment("r")
    assert (znode.partitions[0], znode.adding_replicas, znode.removing_replicas) == (
        (3, 2), {}, {})


# --- ElectLeaders --------------------------------------------------------------------------------

def _elections():
    h = ControllerHarness(brokers=(1, 2, 3))
    h.admin.create_topic("e", {0: [1, 2], 1: [2, 1], 2: [3, 1]})
    h.set_state("e", 0, leader=2, isr=[1, 2])          # preferred 1 is in sync: electable
    h.set_state("e", 1, leader=2, isr=[2, 1])          # preferred already leads
    h.set_state("e", 2, leader=1, isr=[1])             # preferred 3 is out of sync
    controller, _ = h.controller(1)
    return h, controller


def test_preferred_elections_per_partition():
    h, controller = _elections()
    controller.channels.clear()
    results = _run(h, controller.elect_leaders([("e", 0), ("e", 1), ("e", 2), ("e", 9)], 0))
    assert results == {
        ("e", 0): 1,
        ("e", 1): (84, "Leader election not needed for topic partition."),
        ("e", 2): (80, "Failed to elect leader for partition e-2 under strategy "
                       "PreferredReplicaPartitionLeaderElectionStrategy"),
        ("e", 9): (3, "The partition does not exist.")}
    assert h.state("e", 0).leader == 1
    assert controller.channels.requests("UpdateMetadataRequest")


def test_unclean_elections_per_partition():
    h, controller = _elections()
    h.kill_broker(1)
    h.settle()
    # e-2's only in-sync replica (1) is gone: only an unclean election gives it a leader
    assert h.state("e", 2).leader == -1
    results = _run(h, controller.elect_leaders([("e", 1), ("e", 2)], 1))
    assert results == {("e", 1): (84, "Leader election not needed for topic partition."),
                       ("e", 2): 3}
    assert (h.state("e", 2).leader, h.state("e", 2).isr) == (3, (3,))
    h.kill_broker(3)
    h.settle()
    assert _run(h, controller.elect_leaders([("e", 2)], 1)) == {
        ("e", 2): (83, "Failed to elect leader for partition e-2 under strategy "
                       "OfflinePartitionLeaderElectionStrategy(true)")}


def test_only_the_active_controller_elects():
    h, controller = _elections()
    follower, _ = h.controller(2)
    assert not follower.is_active
    with pytest.raises(errors.NotControllerError):
        _run(h, follower.elect_leaders([("e", 0)], 0))
    with pytest.raises(errors.NotControllerError):
        _run(h, follower.alter_partition_reassignments({("e", 0): [2, 1]}))
