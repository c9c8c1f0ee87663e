"""A disk that fails under a Log at each write step: segment append, index write, roll,
checkpoint write, fsync. Whatever step fails, the data dir goes offline (LogDirFailureChannel),
the caller gets KafkaStorageError, and the log reopened after the failure holds exactly the
batches whose appends succeeded: no torn batch, no lost one, indexes that find every offset.

The faults are injected at the system-call level (os.write, os.writev, os.pwrite, os.fsync,
os.ftruncate, os.open with O_CREAT, os.replace), only for files under the test's data dir.
"""

from __future__ import annotations

import errno
import os

import pytest
from logtools import FakeClock, make_batch, offsets_of, topic_config

from kafkalite.errors import KafkaStorageError
from kafkalite.log import Log, LogManager, read_checkpoint
from kafkalite.log.checkpoint import RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT
from kafkalite.log.dir_failure import LogDirFailureChannel

_WRITES = ("write", "writev", "pwrite")
_ALL = _WRITES + ("fsync", "ftruncate", "open", "replace")


class FailingDisk:
    """Counts the I/O calls on files under ``root`` and fails them from call number ``fail_at``
    on (1-based; 0: never), like a disk that fills up (``ENOSPC``: only writes fail, the first
    failing one after writing half of its bytes, as a short write does) or breaks (``EIO``: every
    call fails). ``only`` restricts the faults to files whose name contains it."""

    def __init__(self, monkeypatch, root, fail_at: int = 0, error: int = errno.ENOSPC,
                 only: str | None = None):
        self.root = os.path.realpath(root)
        self.fail_at = fail_at
        self.error = error
        self.only = only
        self.calls: list[tuple[str, str]] = []   # (operation, file name) of every counted call
        self.failed: list[tuple[str, str]] = []
        self._short_write_done = False
        real = {name: getattr(os, name) for name in _ALL}
        self._real = real
        for name in _ALL:
            monkeypatch.setattr(os, name, self._wrapper(name))

    def _path_of(self, name: str, args) -> str | None:
        if name in ("open", "replace"):
            path = os.path.realpath(os.fspath(args[0]))
        else:
            try:
                path = os.readlink(f"/proc/self/fd/{args[0]}")
            except OSError:
                return None
        if not path.startswith(self.root + os.sep):
            return None
        if self.only is not None and self.only not in os.path.basename(path):
            return None
        return path

    def _wrapper(self, name: str):
        real = self._real[name]

        def call(*args, **kwargs):
            if name == "open" and not (len(args) > 1 and args[1] & os.O_CREAT):
                return real(*args, **kwargs)
            path = self._path_of(name, args)
            if path is None:
                return real(*args, **kwargs)
            self.calls.append((name, os.path.basename(path)))
            if not self.fail_at or len(self.calls) < self.fail_at:
                return real(*args, **kwargs)
            if self.error == errno.ENOSPC and name not in _WRITES:
                return real(*args, **kwargs)   # a full disk still syncs, shrinks and opens
            self.failed.append(self.calls[-1])
            if self.error == errno.ENOSPC and not self._short_write_done:
                self._short_write_done = True
                written = self._short_write(name, args)
                if written:
                    return written
            raise OSError(self.error, os.strerror(self.error))
        return call

    def _short_write(self, name, args) -> int:
        """Half of the bytes reach the file, as when the last free blocks are used up; the
        next write fails. Returns the count written (0: nothing to split)."""
        if name == "writev":
            data = b"".join(bytes(b) for b in args[1])
        else:
            data = bytes(args[1])
        half = data[:len(data) // 2]
        if not half:
            return 0
        if name == "pwrite":
            return self._real["pwrite"](args[0], half, args[2])
        return self._real["write"](args[0], half)


def _config():
    # small segments and a dense index: the workload rolls and writes index entries often
    return topic_config(segment_bytes=700, index_interval_bytes=100)


def _workload(log: Log, acknowledged: list[bytes]) -> None:
    """Appends (leader and follower-style), flushes and rolls; records what succeeded."""
    for round_ in range(4):
        for n in (1, 3, 2):
            batch = make_batch(n, value_size=40 + round_)
            try:
                info = log.append(batch, leader_epoch=round_)
            except KafkaStorageError:
                continue
            acknowledged.append(log.read(info.first_offset, 1 << 20,
                                         max_offset=info.last_offset + 1).records)
        try:
            log.flush()
        except KafkaStorageError:
            pass


def _batches_of(log: Log) -> list[bytes]:
    from kafkalite.record.header import iter_headers

    data = log.read(log.log_start_offset, 1 << 30).records
    return [bytes(data[pos:pos + h.size]) for pos, h in iter_headers(data, 0, None, True)]


def _check_reopened(path: str, acknowledged: list[bytes], recovery_point: int) -> Log:
    """Reopen as the next broker start would (no clean-shutdown marker) and check it."""
    reopened = Log(path, _config(), FakeClock(), recovery_point=recovery_point,
                   clean_shutdown=False)
    assert _batches_of(reopened) == acknowledged
    expected_end = offsets_of(b"".join(acknowledged))[-1][1] + 1 if acknowledged else 0
    assert reopened.log_end_offset == expected_end
    for offset in range(expected_end):   # the rebuilt indexes find every offset
        first = offsets_of(reopened.read(offset, 1).records)[0]
        assert first[0] <= offset <= first[1]
    for segment in reopened.segments:
        assert segment.index.sane_for(segment.size)
        assert segment.time_index.sane_for(segment.next_offset)
    return reopened


def _count_calls(tmp_path, monkeypatch) -> int:
    log = Log(str(tmp_path / "dry" / "t-0"), _config(), FakeClock())
    with monkeypatch.context() as patch:
        disk = FailingDisk(patch, tmp_path / "dry")
        _workload(log, [])
    log.close()
    return len(disk.calls)


@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EIO], ids=["ENOSPC", "EIO"])
def test_every_failing_call_leaves_a_consistent_log(tmp_path, monkeypatch, error):
    """Fail the workload's 1st, 2nd, ... I/O call on the dir: each time the dir goes offline
    at once and the reopened log holds exactly the acknowledged batches."""
    total = _count_calls(tmp_path, monkeypatch)
    assert total > 30   # appends, index writes, rolls and fsyncs were all exercised
    steps_seen = set()
    for fail_at in range(1, total + 1):
        root = tmp_path / f"{error}-{fail_at}"
        channel = LogDirFailureChannel()
        acknowledged: list[bytes] = []
        log = Log(str(root / "t-0"), _config(), FakeClock(), log_dir_failure_channel=channel)
        with monkeypatch.context() as patch:
            disk = FailingDisk(patch, root, fail_at=fail_at, error=error)
            _workload(log, acknowledged)
        if not disk.failed:   # only fsyncs were left to fail, and a full disk still syncs
            assert error == errno.ENOSPC and all(name == "fsync" for name, _f in
                                                 disk.calls[fail_at - 1:]), disk.calls
            log.close()
            _check_reopened(str(root / "t-0"), acknowledged, 0).close()
            continue
        steps_seen.add(disk.failed[0])
        assert channel.offline_dirs == [str(root)], disk.failed
        with pytest.raises(KafkaStorageError, match="offline log dir"):
            log.append(make_batch(1))
        with pytest.raises(KafkaStorageError, match="offline log dir"):
            log.read(0, 100)
        if error == errno.ENOSPC:   # a full disk can still shrink files: the torn write is gone
            assert [os.path.getsize(s.log_path) for s in log.segments] == \
                [s.size for s in log.segments]
        recovery_point = log.recovery_point
        log.close_handlers()   # what the log manager does with a failed dir: no more writes
        _check_reopened(str(root / "t-0"), acknowledged, recovery_point).close()
    kinds = {name for name, _file in steps_seen}
    files = {os.path.splitext(f)[1] for _name, f in steps_seen}
    assert {".log", ".index", ".timeindex"} <= files, steps_seen
    assert "writev" in kinds and "pwrite" in kinds


def test_segment_append_cut_back_after_a_short_write(tmp_path, monkeypatch):
    channel = LogDirFailureChannel()
    log = Log(str(tmp_path / "t-0"), _config(), FakeClock(), log_dir_failure_channel=channel)
    log.append(make_batch(2))
    kept = [log.read(0, 1 << 20).records]
    size = log.active_segment.size
    disk = FailingDisk(monkeypatch, tmp_path, fail_at=1, only=".log")
    with pytest.raises(KafkaStorageError, match="No space left.*free space") as info:
        log.append(make_batch(3), assign_offsets=True)
    assert "restart the broker" in info.value.message
    assert disk.failed[0][0] == "writev"
    assert os.path.getsize(log.active_segment.log_path) == size   # the half batch is gone
    assert log.log_end_offset == 2 and channel.offline_dirs == [str(tmp_path)]
    monkeypatch.undo()
    log.close_handlers()
    _check_reopened(log.dir, kept, 0).close()


def test_follower_append_fails_the_same_way(tmp_path, monkeypatch):
    leader = Log(str(tmp_path / "leader" / "t-0"), _config(), FakeClock())
    leader.append(make_batch(2))
    leader.append(make_batch(4))
    replicated = leader.read(0, 1 << 20).records
    channel = LogDirFailureChannel()
    follower = Log(str(tmp_path / "follower" / "t-0"), _config(), FakeClock(),
                   log_dir_failure_channel=channel)
    first = make_batch(2)
    follower.append(replicated[:len(first)], assign_offsets=False)
    FailingDisk(monkeypatch, tmp_path / "follower", fail_at=1)
    with pytest.raises(KafkaStorageError):
        follower.append(replicated[len(first):], assign_offsets=False)
    assert follower.log_end_offset == 2
    assert channel.offline_dirs == [str(tmp_path / "follower")]
    monkeypatch.undo()
    follower.close_handlers()
    _check_reopened(follower.dir, [replicated[:len(first)]], 0).close()
    leader.close()


def test_roll_failing_keeps_the_active_segment(tmp_path, monkeypatch):
    """The roll seals the old segment (index writes) and creates the new files: either failing
    leaves the old segment active and the append unwritten."""
    for only, step in ((".index", "seal"), ("00000000000000000006.log", "new segment")):
        root = tmp_path / step.replace(" ", "-")
        channel = LogDirFailureChannel()
        log = Log(str(root / "t-0"), topic_config(segment_bytes=1000, index_interval_bytes=50),
                  FakeClock(), log_dir_failure_channel=channel)
        acknowledged = []
        for n in (2, 2, 2):
            info = log.append(make_batch(n, value_size=30))
            acknowledged.append(log.read(info.first_offset, 1 << 20,
                                         max_offset=info.last_offset + 1).records)
        assert len(log.segments) == 1 and log.active_segment.index.entries > 0
        with monkeypatch.context() as patch:
            disk = FailingDisk(patch, root, fail_at=1, error=errno.EIO, only=only)
            with pytest.raises(KafkaStorageError, match="roll"):
                log.append(make_batch(2, value_size=600))
            assert disk.failed, step
        assert len(log.segments) == 1 and log.log_end_offset == 6, step
        assert channel.offline_dirs == [str(root)]
        log.close_handlers()
        _check_reopened(log.dir, acknowledged, 0).close()


def test_index_write_failing_in_flush_keeps_the_recovery_point(tmp_path, monkeypatch):
    channel = LogDirFailureChannel()
    log = Log(str(tmp_path / "t-0"), _config(), FakeClock(), log_dir_failure_channel=channel)
    acknowledged = []
    for _ in range(5):
        info = log.append(make_batch(2, value_size=60))
        acknowledged.append(log.read(info.first_offset, 1 << 20,
                                     max_offset=info.last_offset + 1).records)
    assert log.active_segment.index.entries > 0 and log.recovery_point == 0
    disk = FailingDisk(monkeypatch, tmp_path, fail_at=1, only=".index")
    with pytest.raises(KafkaStorageError, match="flush"):
        log.flush()
    assert disk.failed[0][0] == "pwrite"
    assert log.recovery_point == 0     # nothing claims to be durable that was not fsynced
    monkeypatch.undo()
    log.close_handlers()
    # the torn index entry on disk is noticed and the index rebuilt from the log
    _check_reopened(log.dir, acknowledged, 0).close()


def test_checkpoint_write_failing_keeps_the_old_file(tmp_path, monkeypatch):
    channel = LogDirFailureChannel()
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = LogManager([str(d) for d in dirs], _config(), reactor=None,
                         clock_ms=FakeClock(), log_dir_failure_channel=channel)
    manager.load_logs()
    for p in range(2):     # one partition per dir
        manager.get_or_create_log("t", p).append(make_batch(3))
        manager.get_log("t", p).flush()
    manager.checkpoint_logs()
    manager.write_high_watermarks({("t", 0): 3, ("t", 1): 3})
    a = manager.log_dir_of("t", 0)
    before = read_checkpoint(os.path.join(a, RECOVERY_POINT_CHECKPOINT))
    assert before == {("t", 0): 3}
    manager.get_log("t", 0).append(make_batch(2))
    manager.get_log("t", 0).flush()
    with monkeypatch.context() as patch:
        FailingDisk(patch, a, fail_at=1, only="checkpoint")
        manager.checkpoint_logs()            # the periodic task: logs, takes the dir offline
        manager.write_high_watermarks({("t", 0): 5, ("t", 1): 4})
    assert channel.offline_dirs == [a]
    assert read_checkpoint(os.path.join(a, RECOVERY_POINT_CHECKPOINT)) == before
    assert not [f for f in os.listdir(a) if f.endswith(".tmp")]
    b = manager.log_dir_of("t", 1)
    assert read_checkpoint(os.path.join(b, REPLICATION_OFFSET_CHECKPOINT)) == {("t", 1): 4}
    assert read_checkpoint(os.path.join(a, REPLICATION_OFFSET_CHECKPOINT)) == {("t", 0): 3}
