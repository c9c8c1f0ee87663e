"""Topic deletion (the deletion manager and the replica state machine's deletion states) and
partition reassignment (both phases), against the in-memory ZooKeeper and recording channels."""

import zk_schema
from kafkalite.errors import NetworkError
from kafkalite.controller.state_machines import PartitionState as PS, ReplicaState as RS

from controller_fakes import ControllerHarness


def stop_replicas(channels, broker_id):
    return [sorted((p.topic, p.partition) for p in r.partitions)
            for r in channels.requests("StopReplicaRequest", broker_id)]


def test_topic_deletion_goes_through_the_replica_deletion_states():
    h = ControllerHarness(brokers=(1, 2, 3))
    h.admin.create_topic("doomed", {0: [1, 2], 1: [2, 3]}, config={"retention.ms": "5"})
    h.admin.create_topic("kept", {0: [1, 3]})
    controller, _ = h.controller(1)
    channels = controller.channels
    channels.clear()
    channels.hold = True                  # the brokers answer when the test says so
    rsm = controller.replica_state_machine
    doomed = controller.context.replicas_of(controller.context.partitions("doomed"))

    h.admin.mark_topic_for_deletion("doomed")
    h.settle()
    # every broker hears that the topic is going (leader -2), each replica's broker is told to
    # delete it, and the queue does not wait for the answers
    for broker_id in (1, 2, 3):
        update = channels.requests("UpdateMetadataRequest", broker_id)[0]
        assert {(p.topic, p.partition, p.leader) for p in update.partition_states} == {
            ("doomed", 0, -2), ("doomed", 1, -2)}
    assert stop_replicas(channels, 1) == [[("doomed", 0)]]
    assert stop_replicas(channels, 2) == [[("doomed", 0), ("doomed", 1)]]
    assert stop_replicas(channels, 3) == [[("doomed", 1)]]
    answers = {b: d for b, r, d in channels.pending if type(r).__name__ == "StopReplicaRequest"}
    assert all(r.delete_partitions for r in channels.requests("StopReplicaRequest"))
    assert [rsm.state(r) for r in doomed] == [RS.DELETION_STARTED] * 4
    assert h.admin.topic_exists("doomed")

    answers[2].callback(None)
    h.settle()
    assert [rsm.state(r) for r in doomed] == [RS.DELETION_STARTED, RS.DELETION_SUCCESSFUL,
                                              RS.DELETION_SUCCESSFUL, RS.DELETION_STARTED]
    assert h.admin.topic_exists("doomed")                 # not before every replica is gone
    answers[1].callback(None)
    answers[3].callback(None)
    h.settle()
    assert not h.admin.topic_exists("doomed")
    assert not h.admin.exists(zk_schema.topic_config_path("doomed"))
    assert h.admin.topics_marked_for_deletion() == []
    assert h.admin.get_partition_state("doomed", 0) is None
    assert "doomed" not in controller.context.assignments
    assert [rsm.state(r) for r in doomed] == [RS.NON_EXISTENT] * 4
    assert controller.partition_state_machine.state(("doomed", 0)) == PS.NON_EXISTENT
    assert h.admin.topic_exists("kept") and rsm.state(("kept", 0, 1)) == RS.ONLINE


def test_deletion_waits_for_an_offline_replica_and_retries_a_failed_one():
    h = ControllerHarness(brokers=(1, 2, 3))
    h.admin.create_topic("d", {0: [1, 2]})
    controller, _ = h.controller(3)
    channels = controller.channels
    rsm = controller.replica_state_machine
    h.kill_broker(2)
    h.settle()
    channels.clear()
    channels.hold = True

    h.admin.mark_topic_for_deletion("d")
    h.settle()
    assert channels.requests("StopReplicaRequest") == []     # broker 2 holds a replica: wait
    h.start_broker(2)
    h.settle()
    assert stop_replicas(channels, 1) == stop_replicas(channels, 2) == [[("d", 0)]]
    answers = {b: d for b, r, d in channels.pending if type(r).__name__ == "StopReplicaRequest"}
    answers[1].errback(NetworkError("broker 1 did not answer"))
    answers[2].callback(None)
    h.settle()
    assert rsm.state(("d", 0, 1)) == RS.DELETION_INELIGIBLE
    assert rsm.state(("d", 0, 2)) == RS.DELETION_SUCCESSFUL and h.admin.topic_exists("d")
    h.kill_broker(1)
    h.settle()
    assert rsm.state(("d", 0, 1)) == RS.OFFLINE and h.admin.topic_exists("d")

    channels.hold = False              # broker 1 returns: only its replica is asked again
    channels.clear()
    h.start_broker(1)
    h.settle()
    assert stop_replicas(channels, 1) == [[("d", 0)]] and stop_replicas(channels, 2) == []
    assert not h.admin.topic_exists("d")


def test_reassignment_adds_the_target_then_drops_the_old_replicas():
    h = ControllerHarness(brokers=(1, 2, 3))
    h.admin.create_topic("r", {0: [1, 2], 1: [2, 1]})
    h.set_state("r", 0, leader=1, isr=[1, 2], leader_epoch=2)
    controller, _ = h.controller(2)
    channels = controller.channels
    rsm = controller.replica_state_machine
    channels.clear()

    h.admin.create_partition_reassignment({("r", 0): [3, 2]})
    h.settle()
    # phase 1: replicas = target + old, the new one starts following
    assert h.admin.get_topic_assignment("r").partitions[0] == (3, 2, 1)
    assert h.state("r", 0).leader == 1 and h.state("r", 0).leader_epoch == 3
    assert rsm.state(("r", 0, 3)) == RS.NEW
    assert sorted(b for b, r in channels.sent if type(r).__name__ == "LeaderAndIsrRequest") \
        == [1, 2, 3]
    assert h.admin.get_partition_reassignments() == {("r", 0): (3, 2)}
    channels.clear()

    # broker 3 caught up: the leader puts it in the ISR and tells the controller
    h.set_state("r", 0, leader=1, isr=[1, 2, 3], leader_epoch=3)
    h.admin.create_isr_change_notification([("r", 0)])
    h.settle()
    state = h.state("r", 0)
    assert state.leader == 3 and state.isr == (2, 3)          # led from the target now
    assert h.admin.get_topic_assignment("r").partitions == {0: (3, 2), 1: (2, 1)}
    stop = channels.requests("StopReplicaRequest", 1)
    assert len(stop) == 1 and stop[0].delete_partitions
    assert [(p.topic, p.partition) for p in stop[0].partitions] == [("r", 0)]
    assert rsm.state(("r", 0, 1)) == RS.NON_EXISTENT and rsm.state(("r", 0, 3)) == RS.ONLINE
    assert h.admin.get_partition_reassignment() is None       # finished: the request is gone
    assert h.admin.get_isr_change_notifications() == {}
    assert controller.context.reassignments == {}


def test_reassignment_to_a_dead_broker_is_refused():
    h = ControllerHarness(brokers=(1, 2))
    h.admin.create_topic("r", {0: [1, 2]})
    controller, _ = h.controller(1)
    h.admin.create_partition_reassignment({("r", 0): [1, 7]})
    h.settle()
    assert h.admin.get_topic_assignment("r").partitions[0] == (1, 2)
    assert controller.context.reassignments == {}
    assert h.admin.get_partition_reassignment() is None       # the refused partition left it
