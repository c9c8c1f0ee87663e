"""ReplicaManager over real logs in a temp dir, with time driven by task.Clock."""

import time

import pytest
from twisted.internet.task import Clock

from kafkalite import errors
from kafkalite.config import TopicConfig
from kafkalite.log.manager import LogManager
from kafkalite.protocol import messages as m
from kafkalite.record import build_batch, iter_records
from kafkalite.server.partition import PartitionState
from kafkalite.server.data_values import FetchParams, PartitionData
from kafkalite.server.replica_manager import ReplicaManager
from replica_fakes import live_leaders

TP = ("t", 0)


def _batch(n=3):
    now = int(time.time() * 1000)
    return build_batch([(now + i, b"k", b"v%d" % i, None) for i in range(n)])


class Harness:
    def __init__(self, tmp_path, broker_id=1, min_isr=1):
        self.clock = Clock()
        self.clock.advance(1000)
        config = TopicConfig(min_insync_replicas=min_isr)
        self.logs = LogManager([str(tmp_path / f"b{broker_id}")], config, self.clock)
        self.logs.startService()
        self.isr_changes = []
        self.manager = ReplicaManager(
            broker_id, self.logs, self.clock, lambda: int(self.clock.seconds() * 1000),
            topic_config=lambda t: config, replica_lag_time_max_ms=10000,
            isr_change_callback=lambda p, isr: self.isr_changes.append((p.tp, isr)))
        self.manager.start()

    def lead(self, replicas, isr, epoch=0, leader=1, controller_epoch=1, live=None):
        state = m.LeaderAndIsrPartitionState("t", 0, controller_epoch, leader, epoch, isr, 0,
                                             replicas)
        return self.manager.become_leader_or_follower(m.LeaderAndIsrRequest(
            controller_id=1, controller_epoch=controller_epoch, partition_states=[state],
            live_leaders=live_leaders(replicas if live is None else live)))

    def produce(self, acks, n=3, timeout_ms=5000):
        return self.manager.append_records(timeout_ms, acks, False, {TP: _batch(n)})

    def fetch(self, offset, replica_id=-1, max_wait_ms=0, min_bytes=1):
        return self.manager.fetch(FetchParams(replica_id, max_wait_ms, min_bytes),
                                  {TP: PartitionData(offset, max_bytes=1 << 20)})


def _resolved(result):
    if hasattr(result, "addCallback"):
        box = []

        def keep(value):
            box.append(value)
            return value   # leave the result in place for the next look
        result.addCallback(keep)
        return box[0] if box else None
    return result


def test_acks_all_waits_for_the_isr_then_answers(tmp_path):
    h = Harness(tmp_path)
    h.lead([1, 2], [1, 2])
    pending = h.produce(acks=-1)
    assert _resolved(pending) is None                     # follower 2 has not fetched yet
    consumer = _resolved(h.fetch(0))
    assert consumer[TP].records == b""   # not committed: invisible
    h.fetch(0, replica_id=2)                              # follower fetches the records...
    assert _resolved(pending) is None
    h.fetch(3, replica_id=2)                              # ...and its next fetch says it has them
    response = _resolved(pending)
    assert response[TP].error_code == 0
    assert response[TP].base_offset == 0
    records = list(iter_records(_resolved(h.fetch(0))[TP].records))
    assert [r.offset for r in records] == [0, 1, 2]


def test_acks_all_times_out_with_request_timed_out(tmp_path):
    h = Harness(tmp_path)
    h.lead([1, 2], [1, 2])
    pending = h.produce(acks=-1, timeout_ms=200)
    h.clock.advance(0.2)
    result = _resolved(pending)[TP]
    assert result.error_code == errors.RequestTimedOutError.code


def test_not_enough_replicas_before_append(tmp_path):
    h = Harness(tmp_path, min_isr=2)
    h.lead([1, 2], [1])
    result = _resolved(h.produce(acks=-1))[TP]
    assert result.error_code == errors.NotEnoughReplicasError.code
    assert h.manager.partitions[("t", 0)].log_end_offset == 0     # nothing appended
    assert _resolved(h.produce(acks=1))[TP].error_code == 0


def test_isr_shrinks_after_lag_and_expands_on_catch_up(tmp_path):
    h = Harness(tmp_path)
    h.lead([1, 2], [1, 2])
    h.produce(acks=1)
    h.clock.advance(11)                                    # > replica.lag.time.max.ms
    assert h.isr_changes[-1] == (("t", 0), [1])
    h.manager.isr_changed(h.manager.partitions[("t", 0)], [1], 1)
    h.fetch(3, replica_id=2)                               # caught up to the HW
    assert h.isr_changes[-1] == (("t", 0), [1, 2])


def test_long_poll_wakes_on_append(tmp_path):
    h = Harness(tmp_path)
    h.lead([1], [1])
    waiting = h.fetch(0, max_wait_ms=5000)
    assert _resolved(waiting) is None
    h.produce(acks=1)
    response = _resolved(waiting)
    assert len(list(iter_records(response[TP].records))) == 3


def test_acks_1_append_wakes_followers_after_its_answer(tmp_path):
    h = Harness(tmp_path)
    h.lead([1, 2], [1, 2])
    h.fetch(0, replica_id=2)
    follower = h.fetch(0, replica_id=2, max_wait_ms=5000)
    assert _resolved(follower) is None
    answer = h.produce(acks=1)
    # the producer's answer is ready while the follower's fetch still waits: it is woken on
    # the reactor's next turn (Purgatory.check_soon), so the answer is written first
    assert answer[TP].error_code == 0 and _resolved(follower) is None
    h.clock.advance(0)
    assert len(list(iter_records(_resolved(follower)[TP].records))) == 3


def test_long_poll_wakes_on_acks_all_append_at_once(tmp_path):
    h = Harness(tmp_path)
    h.lead([1], [1])
    waiting = h.fetch(0, max_wait_ms=5000)
    h.produce(acks=-1)
    assert len(list(iter_records(_resolved(waiting)[TP].records))) == 3


def test_long_poll_times_out_empty(tmp_path):
    h = Harness(tmp_path)
    h.lead([1], [1])
    waiting = h.fetch(0, max_wait_ms=500)
    h.clock.advance(0.5)
    assert _resolved(waiting)[TP].records == b""


def test_stale_controller_epoch_is_rejected(tmp_path):
    h = Harness(tmp_path)
    h.lead([1], [1], controller_epoch=5)
    response = h.lead([1], [1], epoch=1, controller_epoch=4)
    assert response.error_code == errors.StaleControllerEpochError.code
    assert h.manager.partitions[("t", 0)].leader_epoch == 0


def test_follower_rejects_produce_and_fetch(tmp_path):
    h = Harness(tmp_path)
    h.lead([1, 2], [1, 2], leader=2)
    assert _resolved(h.produce(acks=1))[TP].error_code == \
        errors.NotLeaderForPartitionError.code
    assert _resolved(h.fetch(0))[TP].error_code == \
        errors.NotLeaderForPartitionError.code


def test_offsets_for_leader_epoch(tmp_path):
    h = Harness(tmp_path)
    h.lead([1], [1], epoch=0)
    h.produce(acks=1)                # offsets 0-2 in epoch 0
    h.lead([1], [1], epoch=3)
    h.produce(acks=1)                # offsets 3-5 in epoch 3
    partition = h.manager.partitions[("t", 0)]
    assert partition.end_offset_for_epoch(0) == (0, 3)
    assert partition.end_offset_for_epoch(1) == (0, 3)
    assert partition.end_offset_for_epoch(3) == (3, 6)


def test_diverged_follower_truncates_to_the_leaders_epoch_end(tmp_path):
    """KIP-101: the old leader wrote records the new leader never got; as a follower it must cut
    exactly those, even though its own log end is past the new leader's batch boundaries."""
    old = Harness(tmp_path / "old")
    new = Harness(tmp_path / "new", broker_id=2)
    old.lead([1, 2], [1, 2], epoch=0)
    first = old.produce(acks=1, n=10)                         # offsets 0-9, epoch 0
    shipped = _resolved(old.fetch(0, replica_id=2))[TP].records
    new.manager.become_leader_or_follower(m.LeaderAndIsrRequest(
        controller_id=1, controller_epoch=1, partition_states=[m.LeaderAndIsrPartitionState(
            "t", 0, 1, 1, 0, [1, 2], 0, [1, 2])]))
    new.manager.partitions[("t", 0)].append_as_follower(shipped, 10)
    old.lead([1, 2], [1, 2], epoch=1)
    old.produce(acks=1, n=10)                                 # offsets 10-19, never shipped
    # broker 2 becomes leader at epoch 2 and writes offsets 10-14
    new.lead([1, 2], [2], epoch=2, leader=2)
    new.produce(acks=1, n=5)
    leader = new.manager.partitions[("t", 0)]
    follower = old.manager.partitions[("t", 0)]
    follower.make_follower(PartitionState(2, 2, [2], [1, 2]))
    assert follower.epoch_starts[-1] == (1, 10)               # no invented epoch-2 start
    epoch, end = leader.end_offset_for_epoch(follower.epoch_starts[-1][0])
    assert (epoch, end) == (0, 10)
    _own_epoch, own_end = follower.end_offset_for_epoch(epoch)
    follower.truncate_to(min(end, own_end))
    assert follower.log_end_offset == 10
    records = _resolved(new.fetch(10, replica_id=1))[TP].records
    follower.append_as_follower(records, 15)
    assert follower.log_end_offset == 15 and follower.epoch_starts[-1] == (2, 10)
    assert _resolved(first)[TP].base_offset == 0


def test_a_caught_up_replica_joins_the_isr_at_its_end(tmp_path):
    """As Kafka's Partition.maybeExpandIsr (isr + replica): kafka-topics --describe after a
    reassignment prints Kafka's ISR order (tests/tools/test_tool_reassign.py), not a sorted one."""
    h = Harness(tmp_path)
    h.lead([1, 3, 2], [1, 3])
    h.produce(acks=1)
    h.fetch(3, replica_id=2)
    assert h.isr_changes[-1] == (("t", 0), [1, 3, 2])


# --- LeaderAndIsr epochs (issue 24): as Kafka 2.8's ReplicaManager.becomeLeaderOrFollower -------

def test_a_state_at_the_current_leader_epoch_is_ignored(tmp_path):
    """The fuzz case: a replayed LeaderAndIsr at the same leader epoch 0 naming ISR [33] (no such
    broker). Kafka ignores it ("leader epoch 0 matches the current leader epoch") and answers
    STALE_CONTROLLER_EPOCH for the partition; the leader's high watermark goes on."""
    h = Harness(tmp_path)
    h.lead([1], [1], epoch=0)
    h.produce(acks=1)
    response = h.lead([1], [33], epoch=0)
    assert response.error_code == 0
    assert response.partition_errors == [
        m.PartitionError("t", 0, errors.StaleControllerEpochError.code)]
    partition = h.manager.partitions[TP]
    assert (partition.leader_id, partition.leader_epoch, partition.isr, partition.replicas) == \
        (1, 0, [1], [1])
    assert _resolved(h.produce(acks=1))[TP].error_code == 0
    assert partition.high_watermark == 6
    assert [r.offset for r in iter_records(_resolved(h.fetch(0))[TP].records)] == list(range(6))


def test_a_state_at_an_older_leader_epoch_is_ignored(tmp_path):
    h = Harness(tmp_path)
    h.lead([1, 2], [1, 2], epoch=2)
    response = h.lead([1, 2], [2], epoch=1, leader=2)
    assert response.partition_errors == [
        m.PartitionError("t", 0, errors.StaleControllerEpochError.code)]
    partition = h.manager.partitions[TP]
    assert (partition.leader_id, partition.leader_epoch, partition.isr) == (1, 2, [1, 2])


def test_a_newer_state_not_naming_this_broker_is_unknown_here(tmp_path):
    """Kafka: "itself is not in assigned replica list" -> UNKNOWN_TOPIC_OR_PARTITION."""
    h = Harness(tmp_path)
    response = h.lead([2, 3], [2, 3], epoch=0, leader=2)
    assert response.partition_errors == [
        m.PartitionError("t", 0, errors.UnknownTopicOrPartitionError.code)]
    assert TP not in h.manager.partitions


def test_an_isr_member_that_is_no_replica_holds_nothing_back(tmp_path):
    """Kafka accepts a newer state whose ISR names a broker outside the replicas; its high
    watermark counts only the assigned replicas (Partition.remoteReplicasMap), so acknowledged
    records stay readable and acks=all is answered."""
    h = Harness(tmp_path)
    h.lead([1], [1], epoch=0)
    assert h.lead([1], [1, 33], epoch=1).partition_errors == [m.PartitionError("t", 0, 0)]
    assert _resolved(h.produce(acks=1))[TP].error_code == 0
    assert _resolved(h.produce(acks=-1))[TP].error_code == 0
    partition = h.manager.partitions[TP]
    assert partition.high_watermark == 6
    assert len(list(iter_records(_resolved(h.fetch(0))[TP].records))) == 6


def test_a_follower_state_whose_leader_is_no_live_broker_changes_nothing_but_the_log(tmp_path):
    """Kafka's makeFollowers: a leader that is no live broker (a forged or corrupt state naming
    broker 33) makes the log and nothing else; the partition keeps its epoch, so the
    controller's own state at that epoch is still taken (the 1,000,000-case fuzz found a
    partition following broker 33 at epoch 0, deaf to the controller's resends)."""
    h = Harness(tmp_path)
    answer = h.lead([1, 33], [1, 33], epoch=0, leader=33, live=[1])
    assert [e.error_code for e in answer.partition_errors] == [0]
    partition = h.manager.partitions[TP]
    assert (partition.is_leader, partition.leader_epoch) == (False, -1)
    assert (tmp_path / "b1" / "t-0").is_dir()
    answer = h.lead([1, 2], [1, 2], epoch=0, leader=1)
    assert [e.error_code for e in answer.partition_errors] == [0]
    assert (partition.is_leader, partition.leader_epoch) == (True, 0)
    # a leader keeps leading when told to follow a broker that is not alive
    h.lead([1, 2], [1, 2], epoch=1, leader=2, live=[1])
    assert (partition.is_leader, partition.leader_epoch) == (True, 0)


def test_a_leader_the_metadata_cache_knows_is_followed(tmp_path):
    """Alive is what the request's live leaders or the metadata cache say."""
    h = Harness(tmp_path)
    h.manager.broker_alive = lambda broker_id: broker_id == 2
    h.lead([1, 2], [1, 2], epoch=0, leader=2, live=[1])
    assert (h.manager.partitions[TP].is_leader, h.manager.partitions[TP].leader_epoch) == \
        (False, 0)
