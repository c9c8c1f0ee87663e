"""Moving a replica between two data dirs of one broker (server/replica_alter_log_dirs.py,
log/future_logs.py): a real ReplicaManager over a real LogManager with two dirs, time and the
copy driven by task.Clock. Appends go on during the copy; truncation and DeleteRecords under the
copy; a move interrupted by a restart goes on; the per-partition errors are Kafka 2.8's."""

from __future__ import annotations

import os
import time

from twisted.internet.task import Clock

from kafkalite import errors
from kafkalite.config import TopicConfig
from kafkalite.log.manager import LogManager
from kafkalite.protocol import messages as m
from kafkalite.record import build_batch, iter_records
from kafkalite.server.data_values import FetchParams, PartitionData
from kafkalite.server.replica_alter_log_dirs import COPY_INTERVAL_S
from kafkalite.server.replica_manager import ReplicaManager
from kafkalite.topic_partition import TopicPartition

TP = ("t", 0)


def _batch(n=3, tag=b"v"):
    now = int(time.time() * 1000)
    return build_batch([(now + i, b"k", tag + b"%d" % i, None) for i in range(n)])


class Broker:
    """One broker: two data dirs, partition t-0 led here (created in the first dir)."""

    def __init__(self, tmp_path, segment_bytes=1024 * 1024):
        self.dirs = [str(tmp_path / "d1"), str(tmp_path / "d2")]
        self.clock = Clock()
        self.clock.advance(1000)
        self.config = TopicConfig(segment_bytes=segment_bytes, file_delete_delay_ms=0)
        self.start()

    def start(self):
        self.logs = LogManager(self.dirs, self.config, self.clock)
        self.logs.startService()
        self.manager = ReplicaManager(1, self.logs, self.clock,
                                      lambda: int(self.clock.seconds() * 1000),
                                      topic_config=lambda t: self.config)
        self.manager.start()

    def stop(self):
        self.manager.stop()
        self.logs.stopService()

    def lead(self, epoch=0, topic="t"):
        state = m.LeaderAndIsrPartitionState(topic, 0, 1, 1, epoch, [1], 0, [1])
        return self.manager.become_leader_or_follower(m.LeaderAndIsrRequest(
            controller_id=1, controller_epoch=1, partition_states=[state]))

    def produce(self, n=3, tag=b"v"):
        return self.manager.append_records(5000, 1, False, {TP: _batch(n, tag)})

    def values(self):
        start = self.partition.log.log_start_offset
        answer = self.manager.fetch(FetchParams(-1, 0, 1),
                                    {TP: PartitionData(start, max_bytes=1 << 30)})
        return [r.value for r in iter_records(answer[TP].records)]

    def alter(self, path, tp=TP):
        return self.manager.alter_log_dirs.alter({tp: path})[tp]

    def tick(self, times=1):
        for _ in range(times):
            self.clock.advance(COPY_INTERVAL_S)

    @property
    def partition(self):
        return self.manager.partitions[TP]


def test_a_replica_moves_while_appends_go_on(tmp_path):
    broker = Broker(tmp_path, segment_bytes=400)      # several segments to copy
    broker.lead()
    for i in range(20):
        broker.produce(tag=b"a%d-" % i)
    before = broker.values()
    assert broker.logs.log_dir_of(*TP) == broker.dirs[0]
    broker.manager.alter_log_dirs.chunk_bytes = 300    # one batch or so per tick
    assert broker.alter(broker.dirs[1]) == 0
    future = broker.logs.get_future_log(*TP)
    assert future.parent_dir == broker.dirs[1]
    broker.tick()
    assert broker.logs.get_future_log(*TP) is future and future.log_end_offset > 0
    broker.produce(tag=b"during-")                      # the replica keeps serving
    broker.tick(200)
    assert broker.logs.get_future_log(*TP) is None
    assert broker.logs.log_dir_of(*TP) == broker.dirs[1]
    assert broker.partition.log is broker.logs.get_log(*TP)
    assert broker.partition.log.parent_dir == broker.dirs[1]
    assert broker.values() == before + [b"during-0", b"during-1", b"during-2"]
    assert not any(name.startswith("t-0") for name in os.listdir(broker.dirs[0]))
    broker.produce(tag=b"after-")
    assert broker.values()[-3:] == [b"after-0", b"after-1", b"after-2"]
    broker.stop()
    broker.start()                                       # the new place survives a restart
    broker.lead(epoch=1)
    assert broker.logs.log_dir_of(*TP) == broker.dirs[1]
    assert len(broker.values()) == len(before) + 6


def test_the_copy_starts_over_when_the_current_log_is_truncated_below_its_end(tmp_path):
    broker = Broker(tmp_path)
    broker.lead()
    for tag in (b"a", b"b", b"c"):
        broker.produce(tag=tag)
    broker.manager.alter_log_dirs.chunk_bytes = 1       # one batch per tick
    broker.alter(broker.dirs[1])
    broker.tick(2)
    assert broker.logs.get_future_log(*TP).log_end_offset == 6
    broker.partition.truncate_to(3)                      # shorter than the copy
    broker.tick()                                        # a again, and nothing more to copy
    assert broker.logs.log_dir_of(*TP) == broker.dirs[1]
    broker.produce(tag=b"d")
    broker.produce(tag=b"e")
    broker.tick(10)
    assert broker.values() == [b"a0", b"a1", b"a2", b"d0", b"d1", b"d2", b"e0", b"e1", b"e2"]


def test_truncation_under_an_unfinished_copy(tmp_path):
    broker = Broker(tmp_path)
    broker.lead()
    for tag in (b"a", b"b", b"c"):
        broker.produce(tag=tag)
    broker.manager.alter_log_dirs.chunk_bytes = 1
    broker.alter(broker.dirs[1])
    broker.tick(2)                                       # a and b copied, c not yet
    future = broker.logs.get_future_log(*TP)
    assert future is not None and future.log_end_offset == 6
    broker.partition.truncate_to(3)                      # b is replaced by d at 3..5
    broker.produce(tag=b"d")
    broker.tick(10)
    assert broker.logs.log_dir_of(*TP) == broker.dirs[1]
    assert broker.values() == [b"a0", b"a1", b"a2", b"d0", b"d1", b"d2"]


def test_a_log_start_moved_by_delete_records_is_kept(tmp_path):
    broker = Broker(tmp_path)
    broker.lead()
    for tag in (b"a", b"b"):
        broker.produce(tag=tag)
    broker.partition.log.delete_records_before(4)        # inside batch b
    broker.alter(broker.dirs[1])
    broker.tick(5)
    assert broker.logs.log_dir_of(*TP) == broker.dirs[1]
    assert broker.partition.log.log_start_offset == 4
    assert broker.partition.log.log_end_offset == 6


def test_a_move_interrupted_by_a_restart_goes_on(tmp_path):
    broker = Broker(tmp_path)
    broker.lead()
    for tag in (b"a", b"b", b"c"):
        broker.produce(tag=tag)
    broker.manager.alter_log_dirs.chunk_bytes = 1
    broker.alter(broker.dirs[1])
    broker.tick()
    assert broker.logs.get_future_log(*TP) is not None
    broker.stop()
    broker.start()
    future = broker.logs.get_future_log(*TP)
    assert future is not None and future.parent_dir == broker.dirs[1]
    broker.tick(3)
    assert broker.logs.get_future_log(*TP) is not None   # not hosted yet: the copy waits
    broker.lead(epoch=1)
    broker.tick(10)
    assert broker.logs.log_dir_of(*TP) == broker.dirs[1]
    assert broker.values() == [b"a0", b"a1", b"a2", b"b0", b"b1", b"b2", b"c0", b"c1", b"c2"]


def test_a_replica_not_hosted_yet_is_created_in_the_asked_dir(tmp_path):
    broker = Broker(tmp_path)
    assert broker.alter(broker.dirs[1]) == errors.UnknownTopicOrPartitionError.code
    broker.lead()
    assert broker.logs.log_dir_of(*TP) == broker.dirs[1]


def test_errors_per_partition(tmp_path):
    broker = Broker(tmp_path)
    broker.lead()
    assert broker.alter("/no/such/dir") == errors.LogDirNotFoundError.code
    assert broker.alter(broker.dirs[0]) == 0                 # already there: nothing to do
    assert broker.logs.get_future_log(*TP) is None
    assert broker.alter(broker.dirs[1], tp=("x" * 250, 0)) == errors.InvalidTopicError.code
    broker.logs.failure_channel.maybe_add_offline_log_dir(broker.dirs[1], "disk gone")
    assert broker.alter(broker.dirs[1]) == errors.KafkaStorageError.code


def test_redirecting_a_move_drops_the_first_copy(tmp_path):
    broker = Broker(tmp_path)
    broker.dirs.append(str(tmp_path / "d3"))
    broker.stop()
    broker.start()
    broker.lead()
    broker.produce()
    broker.manager.alter_log_dirs.chunk_bytes = 1
    broker.produce()
    broker.alter(broker.dirs[1])
    first = broker.logs.get_future_log(*TP)
    broker.alter(broker.dirs[2])
    second = broker.logs.get_future_log(*TP)
    assert second is not first and second.parent_dir == broker.dirs[2]
    assert not os.path.exists(first.dir)
    broker.tick(10)
    assert broker.logs.log_dir_of(*TP) == broker.dirs[2]


def test_deleting_the_partition_deletes_its_future_log(tmp_path):
    broker = Broker(tmp_path)
    broker.lead()
    broker.produce()
    broker.alter(broker.dirs[1])
    future = broker.logs.get_future_log(*TP)
    broker.manager.stop_replicas(m.StopReplicaRequest(
        controller_id=1, controller_epoch=1, delete_partitions=True,
        partitions=[TopicPartition(*TP)]))
    assert broker.logs.get_future_log(*TP) is None and not os.path.exists(future.dir)


def test_a_copy_never_starts_above_the_current_log_start(tmp_path):
    """The current log truncated fully to an earlier start (a follower reset to its leader's
    log start) while the copy was empty at a later one: the copy restarts there, so the moved
    log lacks nothing."""
    broker = Broker(tmp_path)
    broker.lead()
    broker.partition.log.truncate_fully_and_start_at(6)
    broker.produce(tag=b"a")                             # offsets 6..8
    broker.manager.alter_log_dirs.chunk_bytes = 1
    broker.alter(broker.dirs[1])
    future = broker.logs.get_future_log(*TP)
    future.truncate_fully_and_start_at(6)
    broker.partition.log.truncate_fully_and_start_at(3)  # back to 3, and regrown
    broker.produce(tag=b"b")                             # offsets 3..5
    broker.produce(tag=b"c")                             # offsets 6..8
    broker.tick(10)
    assert broker.logs.log_dir_of(*TP) == broker.dirs[1]
    assert broker.partition.log.log_start_offset == 3
    assert broker.values() == [b"b0", b"b1", b"b2", b"c0", b"c1", b"c2"]
