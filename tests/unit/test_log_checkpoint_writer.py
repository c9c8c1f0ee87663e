"""The checkpoint writer (log.checkpoint_writer) and LogManager's periodic checkpoints through it:
files written off the caller's thread, outcomes recorded back on it, a failed dir taken offline,
a batch asked for while one is under way skipped. The thread is replaced by a runner whose
Deferred the test fires, so the order of events is the test's."""

from __future__ import annotations

import os

from twisted.internet import defer

from kafkalite.log.checkpoint import (RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT,
                                      read_checkpoint)
from kafkalite.log.checkpoint_writer import CheckpointFile, CheckpointWriter
from kafkalite.log.dir_failure import LogDirFailureChannel
from kafkalite.log.manager import LogManager
from logtools import FakeClock, make_batch, topic_config


class HeldRunner:
    """run_in_thread whose work runs only when the test says so."""

    def __init__(self):
        self.held: list[tuple] = []

    def __call__(self, fn, *args) -> defer.Deferred:
        d = defer.Deferred()
        self.held.append((d, fn, args))
        return d

    def run_next(self):
        d, fn, args = self.held.pop(0)
        d.callback(fn(*args))


def test_a_batch_is_written_when_its_thread_runs_and_the_next_waits_for_it(tmp_path):
    runner = HeldRunner()
    writer = CheckpointWriter(reactor=None, run_in_thread=runner)
    path = str(tmp_path / "cp")
    outcomes = []
    d = writer.write([CheckpointFile(str(tmp_path), path, {("t", 0): 7})])
    d.addCallback(outcomes.append)
    assert not os.path.exists(path)
    # asked again while the first is under way: skipped (the next period writes newer offsets)
    assert writer.write([CheckpointFile(str(tmp_path), path, {("t", 0): 8})]) is None
    runner.run_next()
    assert read_checkpoint(path) == {("t", 0): 7}
    assert [o.error for o in outcomes[0]] == [None]
    assert writer.write([CheckpointFile(str(tmp_path), path, {("t", 0): 9})]) is not None
    runner.run_next()
    assert read_checkpoint(path) == {("t", 0): 9}


def test_a_failing_dir_is_reported_once_and_the_others_written(tmp_path):
    runner = HeldRunner()
    writer = CheckpointWriter(reactor=None, run_in_thread=runner)
    gone = str(tmp_path / "gone")          # never created: every write there fails
    files = [CheckpointFile(gone, os.path.join(gone, "a"), {("t", 0): 1}),
             CheckpointFile(gone, os.path.join(gone, "b"), {("t", 0): 1}),
             CheckpointFile(str(tmp_path), str(tmp_path / "c"), {("t", 1): 2})]
    outcomes = []
    writer.write(files).addCallback(outcomes.append)
    runner.run_next()
    [failed, written] = outcomes[0]
    assert failed.path.endswith("a") and isinstance(failed.error, FileNotFoundError)
    assert written.error is None and read_checkpoint(str(tmp_path / "c")) == {("t", 1): 2}


def test_a_real_writer_writes_on_its_own_thread_and_stop_waits_for_it(tmp_path):
    import threading

    from twisted.internet import reactor
    writer = CheckpointWriter(reactor)
    assert writer.write([CheckpointFile(str(tmp_path), str(tmp_path / "x"), {})]) is None
    writer.start()
    seen = []
    real = CheckpointFile(str(tmp_path), str(tmp_path / "x"), {("t", 0): 1})
    try:
        import kafkalite.log.checkpoint_writer as module
        original = module.write_checkpoint
        module.write_checkpoint = lambda *a: (seen.append(threading.current_thread().name),
                                              original(*a))
        writer.write([real])
    finally:
        writer.stop()           # joins the thread: the write under way is done after it
        module.write_checkpoint = original
    assert seen == ["PoolThread-kafkalite-checkpoints-0"]     # not the caller's thread
    assert read_checkpoint(real.path) == {("t", 0): 1}
    assert not writer.running


def test_log_manager_periodic_checkpoints_record_back_and_take_failed_dirs_offline(tmp_path):
    channel = LogDirFailureChannel()
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    manager = LogManager(dirs, topic_config(), reactor=None, clock_ms=FakeClock(),
                         log_dir_failure_channel=channel)
    runner = HeldRunner()
    manager.checkpoint_writer = CheckpointWriter(None, run_in_thread=runner)
    manager.load_logs()
    for p in range(2):     # one partition per dir
        manager.get_or_create_log("t", p).append(make_batch(3))
        manager.get_log("t", p).flush()
    a, b = manager.log_dir_of("t", 0), manager.log_dir_of("t", 1)
    assert manager.write_high_watermarks_in_background({("t", 0): 3, ("t", 1): 2}) is not None
    assert manager.high_watermark_checkpoint("t", 0) == 0      # not written yet
    runner.run_next()
    assert manager.high_watermark_checkpoint("t", 0) == 3
    assert read_checkpoint(os.path.join(b, REPLICATION_OFFSET_CHECKPOINT)) == {("t", 1): 2}
    manager.checkpoint_logs_in_background()
    runner.run_next()
    assert read_checkpoint(os.path.join(a, RECOVERY_POINT_CHECKPOINT)) == {("t", 0): 3}
    # a dir whose disk fails while the thread writes goes offline when the outcome comes back
    manager.write_high_watermarks_in_background({("t", 0): 5, ("t", 1): 4})
    os.rename(a, a + "-moved")
    runner.run_next()
    assert channel.offline_dirs == [a]
    assert read_checkpoint(os.path.join(b, REPLICATION_OFFSET_CHECKPOINT)) == {("t", 1): 4}


def test_rolled_segments_sync_in_their_own_lane_and_the_recovery_point_follows(tmp_path):
    manager = LogManager([str(tmp_path / "a")], topic_config(segment_bytes=600), reactor=None,
                         clock_ms=FakeClock())
    runner = HeldRunner()
    manager.checkpoint_writer = CheckpointWriter(None, run_in_thread=runner)
    manager.load_logs()
    log_ = manager.get_or_create_log("t", 0)
    while len(log_.segments) < 3:
        log_.append(make_batch(2))
    rolled = log_.segments[-1].base_offset
    # a checkpoint batch under way does not hold the rolled segments back: another lane
    assert manager.write_high_watermarks_in_background({("t", 0): 1}) is not None
    assert manager.flush_rolled_segments_in_background() is not None
    assert manager.flush_rolled_segments_in_background() is None   # its own lane is busy
    runner.run_next()                     # the checkpoints
    assert log_.recovery_point == 0
    runner.run_next()                     # the fsyncs; the outcome comes back to the log
    assert log_.recovery_point == rolled < log_.log_end_offset
    assert manager.flush_rolled_segments_in_background() is None   # nothing left to sync
    assert not runner.held
