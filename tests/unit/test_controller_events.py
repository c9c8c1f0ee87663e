"""The controller's event handling, against an in-memory ZooKeeper (kafkalite's real typed
operations over versioned in-memory znodes) and a channel manager that records requests; time is
a task.Clock. Failover, broker failure and elections, topic creation, preferred election,
controlled shutdown, refused transitions, and a quiet shutdown."""

import logging

import pytest

import zk_schema
from kafkalite.controller.state_machines import PartitionState as PS, ReplicaState as RS

from controller_fakes import ControllerHarness


def partitions_in(request):
    return sorted((p.topic, p.partition) for p in request.partition_states)


def entry(request, topic, partition):
    return next(p for p in request.partition_states
                if (p.topic, p.partition) == (topic, partition))


def test_becoming_controller_loads_context_and_tells_every_broker():
    h = ControllerHarness(brokers=(1, 2, 3))
    h.admin.create_topic("t", {0: [1, 2], 1: [2, 3]})
    h.set_state("t", 0, leader=1, isr=[1, 2])       # t-1 has no state yet: a new partition
    controller, _ = h.controller(1)

    assert controller.is_active and controller.epoch == 1
    assert h.admin.get_controller_id() == 1
    context = controller.context
    assert sorted(context.live_brokers) == [1, 2, 3]
    assert context.assignments == {"t": {0: (1, 2), 1: (2, 3)}}
    assert h.state("t", 1).leader == 2 and h.state("t", 1).isr == (2, 3)
    channels = controller.channels
    assert channels.brokers() == [1, 2, 3]
    # every live replica hears its partitions' leader and ISR, in one request per broker
    assert {b: partitions_in(r) for b, r in channels.sent
            if type(r).__name__ == "LeaderAndIsrRequest"} == {
        1: [("t", 0)], 2: [("t", 0), ("t", 1)], 3: [("t", 1)]}
    lai = channels.requests("LeaderAndIsrRequest", 2)[0]
    assert lai.controller_epoch == 1 and entry(lai, "t", 0).leader == 1
    # and every broker hears the metadata, first as loaded, then the new leader of t-1
    for broker_id in (1, 2, 3):
        updates = channels.requests("UpdateMetadataRequest", broker_id)
        assert [partitions_in(u) for u in updates] == [[("t", 0)], [("t", 1)]]
        assert sorted(b.id for b in updates[0].live_brokers) == [1, 2, 3]
    psm, rsm = controller.partition_state_machine, controller.replica_state_machine
    assert psm.state(("t", 0)) == psm.state(("t", 1)) == PS.ONLINE
    assert all(rsm.state(r) == RS.ONLINE for r in context.replicas_of(context.partitions()))


def test_broker_failure_elects_the_first_live_isr_member():
    h = ControllerHarness(brokers=(1, 2, 3))
    h.admin.create_topic("t", {0: [1, 2, 3], 1: [2, 1, 3]})
    h.set_state("t", 0, leader=1, isr=[1, 3], leader_epoch=4)
    h.set_state("t", 1, leader=2, isr=[2, 1, 3])
    controller, _ = h.controller(3)
    controller.channels.clear()

    h.kill_broker(1)
    h.settle()
    # 2 comes first in the assignment but is not in sync: 3 leads
    assert h.state("t", 0) == zk_schema.PartitionState(3, 5, 1, (3,), 1)
    # broker 1 followed t-1: it leaves the ISR, the leader stays, at a new leader epoch (Kafka's
    # doRemoveReplicasFromIsr): brokers ignore a LeaderAndIsr at the epoch they hold
    epoch_before = 0
    assert h.state("t", 1).leader == 2 and h.state("t", 1).isr == (2, 3)
    assert h.state("t", 1).leader_epoch == epoch_before + 1
    assert controller.replica_state_machine.state(("t", 0, 1)) == RS.OFFLINE
    channels = controller.channels
    assert sorted(b for b, r in channels.sent if type(r).__name__ == "LeaderAndIsrRequest") \
        == [2, 3]
    assert entry(channels.requests("LeaderAndIsrRequest", 3)[0], "t", 0).leader == 3
    told = entry(channels.requests("LeaderAndIsrRequest", 2)[0], "t", 1)
    assert (told.leader, told.leader_epoch, list(told.isr)) == (2, epoch_before + 1, [2, 3])
    assert [b for b, r in channels.sent if type(r).__name__ == "UpdateMetadataRequest"] == [2, 3]
    assert channels.brokers() == [2, 3]


@pytest.mark.parametrize("broker_default,topic_override,leader", [
    (False, None, -1),         # clean only: nobody in sync is alive, the partition is offline
    (True, None, 2),           # unclean allowed: the first live replica, which may lose data
    (True, "false", -1),       # the topic's unclean.leader.election.enable wins
    (False, "true", 2),
])
def test_unclean_election_only_where_allowed(broker_default, topic_override, leader):
    h = ControllerHarness(brokers=(1, 2, 3), unclean_leader_election_enable=broker_default)
    config = {} if topic_override is None else {
        "unclean.leader.election.enable": topic_override}
    h.admin.create_topic("t", {0: [1, 2, 3]}, config=config)
    h.set_state("t", 0, leader=1, isr=[1])
    controller, _ = h.controller(3)

    h.kill_broker(1)
    h.settle()
    state = h.state("t", 0)
    assert state.leader == leader and state.leader_epoch == 1
    if leader == -1:
        assert state.isr == (1,)      # kept, so that a clean election is possible later
        assert controller.partition_state_machine.state(("t", 0)) == PS.OFFLINE
    else:
        assert state.isr == (leader,)
        assert controller.partition_state_machine.state(("t", 0)) == PS.ONLINE


def test_new_topic_goes_new_then_online():
    h = ControllerHarness(brokers=(1, 2, 3))
    controller, _ = h.controller(1)
    psm = controller.partition_state_machine
    seen = []
    original = psm.states.transition
    psm.states.transition = lambda key, target: (seen.append((key, target)),
                                                 original(key, target))
    controller.channels.clear()

    h.admin.create_topic("n", {0: [2, 3], 1: [3, 1]})
    h.settle()
    assert seen == [(("n", 0), PS.NEW), (("n", 1), PS.NEW),
                    (("n", 0), PS.ONLINE), (("n", 1), PS.ONLINE)]
    assert h.state("n", 0) == zk_schema.PartitionState(2, 0, 1, (2, 3), 0)
    assert h.state("n", 1).leader == 3 and h.state("n", 1).isr == (3, 1)
    channels = controller.channels
    assert {b: partitions_in(r) for b, r in channels.sent
            if type(r).__name__ == "LeaderAndIsrRequest"} == {
        2: [("n", 0)], 3: [("n", 0), ("n", 1)], 1: [("n", 1)]}
    assert all(rs == RS.ONLINE for rs in
               map(controller.replica_state_machine.state,
                   controller.context.replicas_of(controller.context.partitions("n"))))
    assert len(channels.requests("UpdateMetadataRequest")) == 3


def test_new_partition_with_a_replica_on_a_dead_broker():
    h = ControllerHarness(brokers=(1, 2))
    controller, _ = h.controller(1)
    controller.channels.clear()
    h.admin.create_topic("n", {0: [4, 1]})            # broker 4 is not registered
    h.settle()
    assert h.state("n", 0) == zk_schema.PartitionState(1, 0, 1, (1,), 0)
    rsm = controller.replica_state_machine
    assert rsm.state(("n", 0, 4)) == RS.OFFLINE and rsm.state(("n", 0, 1)) == RS.ONLINE
    assert [b for b, r in controller.channels.sent
            if type(r).__name__ == "LeaderAndIsrRequest"] == [1]
    h.start_broker(4)                                 # it comes: its replica comes online
    controller.channels.clear()
    h.settle()
    assert rsm.state(("n", 0, 4)) == RS.ONLINE
    assert partitions_in(controller.channels.requests("LeaderAndIsrRequest", 4)[0]) == \
        [("n", 0)]


def test_preferred_replica_election_on_request():
    h = ControllerHarness(brokers=(1, 2))
    h.admin.create_topic("p", {0: [1, 2], 1: [2, 1]})
    h.set_state("p", 0, leader=2, isr=[2, 1], leader_epoch=3)
    h.set_state("p", 1, leader=2, isr=[2, 1])
    controller, _ = h.controller(1)
    controller.channels.clear()

    h.admin.create_preferred_replica_election([("p", 0), ("p", 1)])
    h.settle()
    assert h.state("p", 0).leader == 1 and h.state("p", 0).leader_epoch == 4
    assert h.state("p", 1).leader == 2 and h.state("p", 1).leader_epoch == 0  # already there
    assert not h.admin.preferred_replica_election_pending()
    assert [partitions_in(r) for r in controller.channels.requests("LeaderAndIsrRequest")] == \
        [[("p", 0)], [("p", 0)]]


def test_controlled_shutdown_moves_leadership_then_stops_the_follower():
    h = ControllerHarness(brokers=(1, 2, 3))
    h.admin.create_topic("c", {0: [1, 2], 1: [2, 1], 2: [1]})
    h.set_state("c", 0, leader=1, isr=[1, 2])
    h.set_state("c", 1, leader=2, isr=[2, 1])
    h.set_state("c", 2, leader=1, isr=[1])
    controller, _ = h.controller(3)
    controller.channels.clear()
    epoch = controller.context.live_brokers[1].broker_epoch

    answers = []
    controller.controlled_shutdown(1, epoch).addCallback(answers.append)
    h.settle()
    # c-2 has no other replica: it stays on broker 1 and is reported back
    assert [(p.topic, p.partition) for p in answers[0].remaining_partitions] == [("c", 2)]
    assert h.state("c", 0).leader == 2 and h.state("c", 0).isr == (2,)
    assert h.state("c", 1).leader == 2 and h.state("c", 1).isr == (2,)
    kinds = [(b, type(r).__name__) for b, r in controller.channels.sent if b == 1]
    assert kinds[-1] == (1, "StopReplicaRequest")      # after LeaderAndIsr/UpdateMetadata
    stop = controller.channels.requests("StopReplicaRequest", 1)[0]
    assert not stop.delete_partitions
    assert sorted((p.topic, p.partition) for p in stop.partitions) == [("c", 0), ("c", 1)]
    assert controller.context.shutting_down == {1}


def test_controlled_shutdown_refuses_a_stale_broker_epoch():
    from kafkalite.errors import StaleBrokerEpochError

    h = ControllerHarness(brokers=(1, 2))
    controller, _ = h.controller(2)
    failures = []
    controller.controlled_shutdown(1, 12345).addErrback(failures.append)
    h.settle()
    assert failures and failures[0].check(StaleBrokerEpochError)


def test_invalid_transitions_are_refused_and_logged(caplog):
    h = ControllerHarness(brokers=(1, 2))
    h.admin.create_topic("t", {0: [1, 2]})
    controller, _ = h.controller(1)
    channels, writes = controller.channels, len(h.tree.writes)
    channels.clear()
    psm, rsm = controller.partition_state_machine, controller.replica_state_machine

    with caplog.at_level(logging.ERROR, logger="kafkalite.controller"):
        psm.handle_state_changes([("t", 0)], PS.NEW)                 # Online -> New
        psm.handle_state_changes([("t", 0)], PS.NON_EXISTENT)        # Online -> NonExistent
        psm.handle_state_changes([("ghost", 0)], PS.ONLINE)          # NonExistent -> Online
        rsm.handle_state_changes([("t", 0, 2)], RS.DELETION_STARTED)  # Online -> Started
    assert psm.state(("t", 0)) == PS.ONLINE and psm.state(("ghost", 0)) == PS.NON_EXISTENT
    assert rsm.state(("t", 0, 2)) == RS.ONLINE
    assert channels.sent == [] and len(h.tree.writes) == writes
    assert not h.admin.exists(zk_schema.topics.partitions_path("ghost"))
    refused = [r.getMessage() for r in caplog.records if "controller bug" in r.getMessage()]
    assert len(refused) == 4
    assert "OnlinePartition -> NewPartition" in refused[0]
    assert "OnlineReplica -> ReplicaDeletionStarted" in refused[3]


def test_events_after_stop_are_dropped_quietly(caplog):
    h = ControllerHarness(brokers=(1, 2, 3))
    h.admin.create_topic("t", {0: [1, 2]})
    controller, deferred_zk = h.controller(1)
    deferred_zk.hold("get_brokers")                   # the broker change is under way at stop()
    h.kill_broker(2)
    h.settle()
    assert deferred_zk.held
    h.kill_broker(3)                          # ... and another one is queued behind it
    with caplog.at_level(logging.DEBUG, logger="kafkalite.controller"):
        stopped = controller.stop()
        deferred_zk.release()
        h.settle()
    assert stopped.called and not controller.is_active
    assert h.admin.get_controller_id() is None               # it gave /controller back
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert h.state("t", 0).isr == (1, 2)                      # nothing written after stop
    assert controller.channels.closed


def test_an_override_altered_after_creation_decides_the_next_election():
    """The override is read when the election needs it, not cached from the topic's creation."""
    h = ControllerHarness(brokers=(1, 2, 3))                 # broker default: clean only
    h.admin.create_topic("t", {0: [1, 2, 3]}, config={"unclean.leader.election.enable": "true"})
    h.set_state("t", 0, leader=1, isr=[1])
    h.controller(3)
    h.admin.set_topic_config("t", {"unclean.leader.election.enable": "false"})
    h.settle()
    h.kill_broker(1)
    h.settle()
    assert h.state("t", 0).leader == -1


def test_switching_unclean_election_on_elects_an_offline_partition_at_once():
    h = ControllerHarness(brokers=(1, 2, 3))
    h.admin.create_topic("t", {0: [1, 2, 3]})
    h.set_state("t", 0, leader=1, isr=[1])
    controller, _ = h.controller(3)
    h.kill_broker(1)
    h.settle()
    assert h.state("t", 0).leader == -1
    h.admin.set_topic_config("t", {"unclean.leader.election.enable": "true"})
    h.settle()
    state = h.state("t", 0)
    assert state.leader == 2 and state.isr == (2,)
    assert controller.partition_state_machine.state(("t", 0)) == PS.ONLINE
