"""delete_records over a ReplicaManager with real logs, time driven by task.Clock; followers are
simulated by their fetch requests (and, for the follower side, by a second ReplicaManager)."""

import time
from types import SimpleNamespace

from twisted.internet.task import Clock

from kafkalite import errors
from kafkalite.config import TopicConfig
from kafkalite.log.manager import LogManager
from kafkalite.protocol import messages as m
from kafkalite.record import build_batch
from kafkalite.server.delete_records import delete_records
from kafkalite.server.offset_values import OffsetQuery
from kafkalite.server.data_values import FetchParams, PartitionData
from kafkalite.server.replica_manager import ReplicaManager

TP = ("t", 0)


def _batch(n):
    now = int(time.time() * 1000)
    return build_batch([(now + i, b"k", b"v%d" % i, None) for i in range(n)])


class Harness:
    def __init__(self, tmp_path, broker_id=1, live=(1, 2), config=None):
        self.clock = Clock()
        self.clock.advance(1000)
        config = config or TopicConfig(segment_bytes=200)   # small segments: some get deleted
        self.logs = LogManager([str(tmp_path / f"b{broker_id}")], config, self.clock)
        self.logs.startService()
        self.manager = ReplicaManager(
            broker_id, self.logs, self.clock, lambda: int(self.clock.seconds() * 1000),
            topic_config=lambda t: config, replica_lag_time_max_ms=10000,
            isr_change_callback=lambda p, isr: None)
        self.broker = SimpleNamespace(
            broker_id=broker_id, replica_manager=self.manager,
            metadata_cache=SimpleNamespace(
                brokers={b: None for b in live}, contains=lambda t: t == "t",
                partition_count=lambda t: 2))

    def become(self, leader, replicas, isr):
        state = m.LeaderAndIsrPartitionState("t", 0, 1, leader, 0, isr, 0, replicas)
        self.manager.become_leader_or_follower(m.LeaderAndIsrRequest(
            controller_id=1, controller_epoch=1, partition_states=[state]))

    def produce(self, batches=4, n=3):
        for _ in range(batches):
            response = self.manager.append_records(1000, 1, False, {("t", 0): _batch(n)})
            assert response[("t", 0)].error_code == 0

    def follower_fetch(self, replica_id, offset, log_start_offset=-1):
        return self.manager.fetch(FetchParams(replica_id, max_wait_ms=0), {
            ("t", 0): PartitionData(offset, log_start_offset, 1 << 20)})[("t", 0)]

    def consumer_fetch(self, offset):
        return self.manager.fetch(FetchParams(max_wait_ms=0), {
            ("t", 0): PartitionData(offset, max_bytes=1 << 20)})[("t", 0)]

    def earliest(self):
        return self.manager.list_offsets(-1, 0, {("t", 0): OffsetQuery(-2)})[("t", 0)].offset


def fired(d):
    box = []

    def keep(value):
        box.append(value)
        return value           # leave the result in place for the next look
    d.addBoth(keep)
    return box[0] if box else None


def test_single_replica_deletes_at_once(tmp_path):
    h = Harness(tmp_path, live=(1,))
    h.become(1, [1], [1])
    h.produce()                                           # offsets 0..11, HW 12
    assert fired(delete_records(h.broker, {TP: 7}, 1000)) == {TP: (7, 0)}
    partition = h.manager.partitions[TP]
    assert partition.log_start_offset == 7
    assert partition.log.segments[0].base_offset > 0      # whole segments below 7 are gone
    assert h.consumer_fetch(3).error_code == errors.OffsetOutOfRangeError.code
    assert h.consumer_fetch(7).error_code == 0
    assert h.earliest() == 7
    # an offset below the log start changes nothing; -1 means the high watermark
    assert fired(delete_records(h.broker, {TP: 2}, 1000)) == {TP: (7, 0)}
    assert fired(delete_records(h.broker, {TP: -1}, 1000)) == {TP: (12, 0)}
    assert h.earliest() == 12


def test_offsets_out_of_range_unknown_and_policy(tmp_path):
    h = Harness(tmp_path, live=(1,))
    h.become(1, [1], [1])
    h.produce(batches=1)                                  # HW 3
    out = fired(delete_records(h.broker, {TP: 4, ("t", 1): 0, ("x", 0): 0, ("t", 0 + 0): 4,
                                          ("__consumer_offsets", 0): 0}, 1000))
    assert out[TP] == (-1, errors.OffsetOutOfRangeError.code)
    assert out[("t", 1)] == (-1, errors.NotLeaderForPartitionError.code)   # exists, not here
    assert out[("x", 0)] == (-1, errors.UnknownTopicOrPartitionError.code)
    assert out[("__consumer_offsets", 0)] == (-1, errors.InvalidTopicError.code)
    assert fired(delete_records(h.broker, {TP: -7}, 1000))[TP][1] == \
        errors.OffsetOutOfRangeError.code
    compacted = Harness(tmp_path / "c", live=(1,), config=TopicConfig(cleanup_policy=("compact",)))
    compacted.become(1, [1], [1])
    compacted.produce(batches=1)
    assert fired(delete_records(compacted.broker, {TP: 1}, 1000)) == \
        {TP: (-1, errors.PolicyViolationError.code)}


def test_follower_is_not_leader(tmp_path):
    h = Harness(tmp_path, broker_id=2)
    h.become(1, [1, 2], [1, 2])
    assert fired(delete_records(h.broker, {TP: 0}, 1000)) == \
        {TP: (-1, errors.NotLeaderForPartitionError.code)}


def test_waits_for_every_live_replica_log_start(tmp_path):
    h = Harness(tmp_path, live=(1, 2, 3))
    h.become(1, [1, 2, 3], [1, 2, 3])
    h.produce()
    for follower in (2, 3):
        h.follower_fetch(follower, 12, log_start_offset=0)  # both caught up: HW 12
    assert h.manager.partitions[TP].high_watermark == 12
    pending = delete_records(h.broker, {TP: 5}, 5000)
    assert fired(pending) is None
    assert h.manager.partitions[TP].log_start_offset == 5   # the leader moved at once
    h.follower_fetch(2, 12, log_start_offset=5)
    assert fired(pending) is None                         # broker 3 still starts at 0
    h.follower_fetch(3, 12, log_start_offset=5)
    assert fired(pending) == {TP: (5, 0)}


def test_dead_replicas_do_not_hold_it_up_and_timeouts(tmp_path):
    h = Harness(tmp_path, live=(1, 2))                    # broker 3 is not live
    h.become(1, [1, 2, 3], [1, 2])
    h.produce()
    h.follower_fetch(2, 12, log_start_offset=0)
    pending = delete_records(h.broker, {TP: 6}, 500)
    h.follower_fetch(2, 12, log_start_offset=6)
    assert fired(pending) == {TP: (6, 0)}
    slow = delete_records(h.broker, {TP: 9}, 500)
    assert fired(slow) is None
    h.clock.advance(0.5)
    assert fired(slow) == {TP: (6, errors.RequestTimedOutError.code)}


def test_follower_takes_the_leaders_log_start_from_fetches(tmp_path):
    leader = Harness(tmp_path / "leader", broker_id=1)
    leader.become(1, [1, 2], [1, 2])
    leader.produce()
    follower = Harness(tmp_path / "follower", broker_id=2)
    follower.become(1, [1, 2], [1, 2])
    replica = follower.manager.partitions[TP]
    # what the replica fetcher does with a fetch response: append, take HW and log start
    data = leader.follower_fetch(2, 0, replica.log_start_offset)
    replica.append_as_follower(data.records, data.high_watermark, data.log_start_offset)
    leader.follower_fetch(2, replica.log_end_offset, replica.log_start_offset)   # HW -> 12
    pending = delete_records(leader.broker, {TP: 8}, 5000)
    data = leader.follower_fetch(2, replica.log_end_offset,
                                 replica.log_start_offset)
    assert data.log_start_offset == 8
    replica.append_as_follower(data.records, data.high_watermark, data.log_start_offset)
    assert replica.log_start_offset == 8
    assert fired(pending) is None
    leader.follower_fetch(2, replica.log_end_offset, replica.log_start_offset)
    assert fired(pending) == {TP: (8, 0)}
