"""A failed log dir on one broker, Kafka's way: the LogDirFailureChannel, the LogManager dropping
the dir's logs, the ReplicaManager taking its partitions offline (KAFKA_STORAGE_ERROR for them,
the other dir's partitions untouched), and the handler that announces the failure or halts the
broker. Real logs in temp dirs; time is a task.Clock; ZooKeeper and exit are injected."""

from __future__ import annotations

import errno
import os

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalite import errors
from kafkalite.config import TopicConfig
from kafkalite.log.dir_failure import LogDirFailureChannel, storage_error_hint
from kafkalite.log.manager import CLEAN_SHUTDOWN_FILE, LogManager
from kafkalite.protocol import messages as m
from kafkalite.record import build_batch
from kafkalite.server.log_dir_failure import LogDirFailureHandler
from kafkalite.server.offset_values import OffsetQuery
from kafkalite.server.data_values import FetchParams, PartitionData
from kafkalite.server.replica_manager import ReplicaManager
from zk_schema.log_dir_events import (LOG_DIR_FAILURE_EVENT, LogDirEventNotification,
                                      log_dir_event_path, log_dir_event_prefix_path)

STORAGE = errors.KafkaStorageError.code
ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _batch(n=3):
    return build_batch([(1_600_000_000_000 + i, b"k", b"v%d" % i, None) for i in range(n)])


def _taken(deferred):
    """What ``deferred`` fired with so far (in a list), leaving its result in place."""
    box = []

    def keep(value):
        box.append(value)
        return value
    deferred.addCallback(keep)
    return box


# --- the channel ----------------------------------------------------------------------------------

def test_channel_takes_a_dir_offline_once_and_hands_it_over_once(tmp_path):
    channel = LogDirFailureChannel()
    first = _taken(channel.take_next_offline_log_dir())
    assert not first
    assert channel.maybe_add_offline_log_dir(f"{tmp_path}/a/", "disk full", ENOSPC)
    assert not channel.maybe_add_offline_log_dir(f"{tmp_path}/a", "still full", ENOSPC)
    assert first == [f"{tmp_path}/a"]
    assert channel.is_offline(f"{tmp_path}/a") and channel.is_offline(f"{tmp_path}/a/")
    assert not channel.is_offline(f"{tmp_path}/b")
    assert channel.failure_of(f"{tmp_path}/a") == "disk full"
    channel.maybe_add_offline_log_dir(f"{tmp_path}/b", "EIO")
    assert _taken(channel.take_next_offline_log_dir()) == [f"{tmp_path}/b"]
    assert not _taken(channel.take_next_offline_log_dir())     # nothing more to hand over
    assert channel.offline_dirs == [f"{tmp_path}/a", f"{tmp_path}/b"]


@pytest.mark.parametrize("code, fix", [(errno.ENOSPC, "free space"), (errno.EDQUOT, "free space"),
                                       (errno.EROFS, "read-write"), (errno.EIO, "check the disk")])
def test_storage_errors_name_the_fix(code, fix):
    hint = storage_error_hint(OSError(code, os.strerror(code)), "/data/a")
    assert os.strerror(code) in hint and "/data/a" in hint and fix in hint
    assert "restart the broker" in hint


# --- the log manager ------------------------------------------------------------------------------

def _manager(dirs, channel=None):
    manager = LogManager([str(d) for d in dirs], TopicConfig(), reactor=None,
                         clock_ms=lambda: 1_600_000_000_000, log_dir_failure_channel=channel)
    manager.load_logs()
    return manager


def test_manager_stops_the_failed_dir_and_keeps_the_other(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    manager = _manager([a, b])
    in_a = manager.get_or_create_log("t", 0)
    in_b = manager.get_or_create_log("t", 1)
    assert (manager.log_dir_of("t", 0), manager.log_dir_of("t", 1)) == (a, b)
    in_a.append(_batch())
    in_b.append(_batch())
    manager.failure_channel.maybe_add_offline_log_dir(a, "disk full", ENOSPC)
    assert in_a.offline and not in_b.offline
    with pytest.raises(errors.KafkaStorageError, match="offline log dir"):
        in_a.append(_batch())         # refused before the handler has even run
    assert manager.live_dirs == [b] and manager.offline_dirs == [a]
    assert manager.get_or_create_log("t", 2) is not None
    assert manager.log_dir_of("t", 2) == b          # new logs only go to live dirs
    assert manager.handle_log_dir_failure(a) == [("t", 0)]
    assert manager.handle_log_dir_failure(a) == []  # once
    assert manager.get_log("t", 0) is None and in_a.closed
    assert manager.is_offline_log("t", 0) and not manager.is_offline_log("t", 1)
    with pytest.raises(errors.KafkaStorageError, match="t-0 is .*offline"):
        manager.get_or_create_log("t", 0)            # never an empty stand-in in dir b
    manager.write_high_watermarks({("t", 0): 3, ("t", 1): 3})
    assert not os.path.exists(os.path.join(a, "replication-offset-checkpoint"))
    manager.stopService()
    assert os.path.exists(os.path.join(b, CLEAN_SHUTDOWN_FILE))
    assert not os.path.exists(os.path.join(a, CLEAN_SHUTDOWN_FILE))
    # the restart: the dir comes back, its log recovered, nothing lost
    again = _manager([a, b])
    assert again.live_dirs == [a, b] and a not in again.clean_shutdown_dirs
    assert again.get_log("t", 0).log_end_offset == 3 and again.get_log("t", 1).log_end_offset == 3
    again.stopService()


def test_a_dir_failing_at_load_is_skipped_and_its_partitions_stay_offline(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    first = _manager([a, b])
    first.get_or_create_log("t", 0).append(_batch())
    first.get_or_create_log("t", 1).append(_batch())
    first.stopService()
    # a segment the broker cannot open (EISDIR, like an I/O error on the file)
    broken = a / "t-0" / "00000000000000000003.log"
    broken.mkdir()
    second = _manager([a, b])
    assert second.offline_dirs == [str(a)] and second.get_log("t", 0) is None
    assert second.get_log("t", 1).log_end_offset == 3
    with pytest.raises(errors.KafkaStorageError):
        second.get_or_create_log("t", 0)
    assert _taken(second.failure_channel.take_next_offline_log_dir()) == [str(a)]
    second.stopService()
    broken.rmdir()
    with pytest.raises(errors.KafkaStorageError, match="none of the log dirs"):
        (tmp_path / "file").write_text("not a dir")
        _manager([tmp_path / "file"])


# --- the replica manager and the handler ----------------------------------------------------------

class Broker:
    """A ReplicaManager on two data dirs, its log dir failure handler with an injected
    ZooKeeper announcement and halt."""

    def __init__(self, tmp_path, dirs=("a", "b")):
        self.clock = Clock()
        self.clock.advance(1000)
        self.dirs = [str(tmp_path / d) for d in dirs]
        self.logs = LogManager(self.dirs, TopicConfig(), self.clock)
        self.logs.startService()
        self.stopped_fetching = []
        self.leadership = []
        self.manager = ReplicaManager(
            1, self.logs, self.clock, lambda: int(self.clock.seconds() * 1000),
            topic_config=lambda t: TopicConfig(), replica_lag_time_max_ms=10000,
            stop_follower_callback=self.stopped_fetching.append,
            leadership_callback=lambda tp, leader, epoch: self.leadership.append((tp, leader)))
        self.manager.start()
        self.announcements = []
        self.announce_failures = 0
        self.halted = []
        self.handler = LogDirFailureHandler(self.logs.failure_channel, self.manager,
                                            self._announce, self.clock, halt=self.halted.append,
                                            retry_backoff_s=1.0)
        self.handler.start()

    def _announce(self):
        if self.announce_failures:
            self.announce_failures -= 1
            return defer.fail(errors.ZooKeeperError("connection loss"))
        self.announcements.append(LogDirEventNotification(1).encode())
        return defer.succeed(f"log_dir_event_{len(self.announcements):010d}")

    def lead(self, partition, leader=1, replicas=(1, 2), epoch=0):
        state = m.LeaderAndIsrPartitionState("t", partition, 1, leader, epoch, list(replicas), 0,
                                             list(replicas))
        response = self.manager.become_leader_or_follower(m.LeaderAndIsrRequest(
            controller_id=1, controller_epoch=1, partition_states=[state]))
        return response.partition_errors[0].error_code

    def produce(self, partition, acks=1):
        return self.manager.append_records(5000, acks, False, {("t", partition): _batch()})

    def fetch(self, partition, replica_id=-1):
        return self.manager.fetch(FetchParams(replica_id, max_wait_ms=0, min_bytes=1),
                                  {("t", partition): PartitionData(0, max_bytes=1 << 20)})

    def fail_writes_in(self, monkeypatch, data_dir):
        """ENOSPC for every write into ``data_dir`` from now on."""
        real_writev, real_write = os.writev, os.write

        def under(fd):
            return os.readlink(f"/proc/self/fd/{fd}").startswith(data_dir + os.sep)

        def writev(fd, buffers):
            if under(fd):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real_writev(fd, buffers)

        def write(fd, data):
            if under(fd):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real_write(fd, data)
        monkeypatch.setattr(os, "writev", writev)
        monkeypatch.setattr(os, "write", write)


def _code(response, partition=None):
    if hasattr(response, "addCallback"):
        box = _taken(response)
        response = box[0] if box else None
    (result,) = response.values() if partition is None else [response[("t", partition)]]
    return result.error_code


def test_full_dir_stops_its_partitions_and_announces(tmp_path, monkeypatch):
    b = Broker(tmp_path)
    assert b.lead(0) == 0 and b.lead(1) == 0 and b.lead(2, leader=2) == 0
    dirs = {p: b.logs.log_dir_of("t", p) for p in range(3)}
    assert dirs[0] == dirs[2] == b.dirs[0] and dirs[1] == b.dirs[1]
    assert _code(b.produce(0), 0) == 0 and _code(b.produce(1), 1) == 0
    waiting = b.produce(0, acks=-1)        # acks=all, appended, waiting for follower 2
    assert not _taken(waiting)
    b.fail_writes_in(monkeypatch, b.dirs[0])
    assert _code(b.produce(0), 0) == STORAGE              # the failing write itself
    assert b.logs.offline_dirs == [b.dirs[0]]
    assert _code(b.produce(0), 0) == STORAGE              # and every later one, at once
    assert _code(b.produce(1), 1) == 0                    # the other dir goes on
    assert not b.announcements                            # the handler runs on the next turn
    b.clock.advance(0)
    assert b.handler.handled == [b.dirs[0]] and len(b.announcements) == 1
    assert LogDirEventNotification.decode(b.announcements[0]) == \
        LogDirEventNotification(1, LOG_DIR_FAILURE_EVENT)
    assert sorted(b.manager.offline_partitions) == [("t", 0), ("t", 2)]
    assert sorted(b.manager.partitions) == [("t", 1)]
    assert sorted(b.stopped_fetching[-1]) == [("t", 0), ("t", 2)]
    assert (("t", 0), False) in b.leadership              # the coordinator would resign
    assert _code(waiting, 0) == STORAGE                   # the waiting acks=all is answered
    assert _code(b.fetch(0)) == STORAGE and _code(b.fetch(2, replica_id=3)) == STORAGE
    assert _code(b.fetch(1)) == 0
    assert b.lead(0, epoch=1) == STORAGE and b.lead(2, leader=2, epoch=1) == STORAGE
    assert b.lead(3) == 0 and b.logs.log_dir_of("t", 3) == b.dirs[1]
    stop = b.manager.stop_replicas(m.StopReplicaRequest(
        controller_id=1, controller_epoch=1, delete_partitions=False,
        partitions=[m.TopicPartition("t", 0), m.TopicPartition("t", 1)]))
    assert [e.error_code for e in stop.partition_errors] == [STORAGE, 0]
    offsets = b.manager.list_offsets(-1, 0, {("t", 0): OffsetQuery(-1)})
    assert offsets[("t", 0)].error_code == STORAGE
    assert not b.halted
    b.handler.stop()
    b.manager.stop()
    b.logs.stopService()


def test_announcement_is_retried_until_zookeeper_takes_it(tmp_path):
    b = Broker(tmp_path)
    b.announce_failures = 2
    b.logs.failure_channel.maybe_add_offline_log_dir(b.dirs[1], "EIO", OSError(errno.EIO, "EIO"))
    b.clock.advance(0)
    assert b.handler.handled == [b.dirs[1]] and not b.announcements
    b.clock.advance(1.0)
    assert not b.announcements
    b.clock.advance(1.0)
    assert len(b.announcements) == 1 and b.handler.announced == [b.dirs[1]]
    # the next dir is taken only after the previous one was announced
    b.logs.failure_channel.maybe_add_offline_log_dir(b.dirs[0], "EIO", OSError(errno.EIO, "EIO"))
    b.clock.advance(0)
    assert b.halted == [1] and len(b.announcements) == 1   # no log dir left: Kafka halts
    b.handler.stop()


def test_a_dir_failed_at_startup_is_announced_when_the_handler_starts(tmp_path):
    (tmp_path / "a").write_text("a file where a dir should be")
    b = Broker(tmp_path)
    assert b.logs.offline_dirs == [b.dirs[0]]
    b.clock.advance(0)
    assert b.handler.handled == [b.dirs[0]] and len(b.announcements) == 1
    assert not b.halted
    b.handler.stop()


def test_stopped_handler_takes_nothing(tmp_path):
    b = Broker(tmp_path)
    b.handler.stop()
    b.logs.failure_channel.maybe_add_offline_log_dir(b.dirs[0], "EIO", OSError(errno.EIO, "EIO"))
    b.clock.advance(0)
    assert not b.handler.handled and not b.announcements


def test_notification_znode_is_kafkas():
    assert log_dir_event_prefix_path() == "/log_dir_event_notification/log_dir_event_"
    assert log_dir_event_path("log_dir_event_0000000007") == \
        "/log_dir_event_notification/log_dir_event_0000000007"
    assert LogDirEventNotification(3).encode() == b'{"version":1,"broker":3,"event":1}'
    assert LogDirEventNotification.decode(b'{"version":1,"broker":"5"}', 4) == \
        LogDirEventNotification(5, 1, 4)
