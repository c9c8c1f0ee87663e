"""OffsetForLeaderEpoch's answer, by the rules of Kafka's LeaderEpochFileCache.endOffsetFor, and
the follower truncation built on it (over real logs, task.Clock)."""

from kafkalite.protocol import messages as m
from kafkalite.server.offset_values import EpochQuery
from kafkalite.server.partition import PartitionState

from test_server_replica_manager import Harness, _resolved


def _leader_with_epochs_0_and_3(tmp_path):
    h = Harness(tmp_path)
    h.lead([1], [1], epoch=0)
    h.produce(acks=1)                # offsets 0-2 in epoch 0
    h.lead([1], [1], epoch=3)
    h.produce(acks=1)                # offsets 3-5 in epoch 3
    return h, h.manager.partitions[("t", 0)]


def test_the_latest_epoch_ends_at_the_log_end(tmp_path):
    _h, partition = _leader_with_epochs_0_and_3(tmp_path)
    assert partition.end_offset_for_epoch(3) == (3, 6)


def test_an_epoch_above_the_latest_is_undefined(tmp_path):
    _h, partition = _leader_with_epochs_0_and_3(tmp_path)
    assert partition.end_offset_for_epoch(4) == (-1, -1)
    assert partition.end_offset_for_epoch(50) == (-1, -1)


def test_an_earlier_epoch_ends_where_the_next_known_one_starts(tmp_path):
    _h, partition = _leader_with_epochs_0_and_3(tmp_path)
    assert partition.end_offset_for_epoch(0) == (0, 3)
    assert partition.end_offset_for_epoch(2) == (0, 3)      # the floor epoch answers


def test_no_epoch_asked_is_undefined(tmp_path):
    _h, partition = _leader_with_epochs_0_and_3(tmp_path)
    assert partition.end_offset_for_epoch(-1) == (-1, -1)


def test_an_epoch_below_every_known_one_ends_at_the_first_known_start(tmp_path):
    h = Harness(tmp_path)
    h.lead([1], [1], epoch=2)
    h.produce(acks=1)                # offsets 0-2 in epoch 2
    h.lead([1], [1], epoch=4)
    partition = h.manager.partitions[("t", 0)]
    assert partition.end_offset_for_epoch(1) == (1, 0)


def test_the_request_answers_undefined_for_an_epoch_above_the_leaders(tmp_path):
    h, _partition = _leader_with_epochs_0_and_3(tmp_path)
    answers = [tuple(h.manager.offsets_for_leader_epoch({("t", 0): query})[("t", 0)])
               for query in (EpochQuery(-1, 7), EpochQuery(3, 3))]
    assert answers == [(0, -1, -1), (0, 3, 6)]      # (error code, leader epoch, end offset)


def test_a_follower_told_undefined_keeps_what_is_committed(tmp_path):
    """A follower whose latest epoch the leader does not know truncates to its own high
    watermark (the fetcher's fallback): committed records stay."""
    leader_h = Harness(tmp_path / "leader")
    follower_h = Harness(tmp_path / "follower", broker_id=2)
    leader_h.lead([1, 2], [1, 2], epoch=0)
    leader_h.produce(acks=1, n=4)
    shipped = _resolved(leader_h.fetch(0, replica_id=2))[("t", 0)].records
    follower_h.manager.become_leader_or_follower(m.LeaderAndIsrRequest(
        controller_id=1, controller_epoch=1, partition_states=[m.LeaderAndIsrPartitionState(
            "t", 0, 1, 1, 0, [1, 2], 0, [1, 2])]))
    follower = follower_h.manager.partitions[("t", 0)]
    follower.append_as_follower(shipped, 4)
    follower.make_follower(PartitionState(1, 0, [1, 2], [1, 2]))
    leader = leader_h.manager.partitions[("t", 0)]
    assert leader.end_offset_for_epoch(5) == (-1, -1)
    follower.truncate_to(follower.high_watermark)
    assert follower.log_end_offset == 4
