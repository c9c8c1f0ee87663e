"""Recovery points after kill -9 (issue 24): the LogManager checkpoints them as Kafka 2.8 does,
so a restart re-verifies only what lies past the last checkpointed point.

Kafka: ``Log.roll`` flushes the rolled segment and ``flush()`` moves ``recoveryPoint`` up;
``LogManager`` writes ``recovery-point-offset-checkpoint`` 30 s after the start
(``InitialTaskDelayMs``) and then every ``log.flush.offset.checkpoint.interval.ms``;
``Log.recoverLog`` re-verifies ``logSegments(recoveryPoint, Long.MaxValue)`` and ends with
``recoveryPoint = activeSegment.readNextOffset``.

Real files in a tmp dir, the reactor and clock a twisted ``task.Clock``; a crash is the files
closed without a write (``close_handlers``) and no clean-shutdown marker.
"""

from __future__ import annotations

import os

import pytest
from logtools import START_MS, make_batch, offsets_of, topic_config
from twisted.internet import task

from kafkalite.log import (
    CLEAN_SHUTDOWN_FILE,
    RECOVERY_POINT_CHECKPOINT,
    LogManager,
    LogSegment,
    read_checkpoint,
)

CONFIG = topic_config(segment_bytes=600)


def _clock():
    clock = task.Clock()
    clock.advance(START_MS / 1000)
    return clock


def _start(data_dir, clock):
    """A LogManager with Kafka's task intervals (checkpoint every 60 s) on ``clock``."""
    manager = LogManager([str(data_dir)], CONFIG, clock, checkpoint_interval_ms=60_000)
    manager.startService()
    return manager


def _crash(manager):
    """kill -9: no flush, no checkpoint, no marker; every file closed without a write."""
    for loop in manager._loops:
        if loop.running:
            loop.stop()
    for call in [*manager._loop_starts, manager._cleaner_call]:
        if call is not None and call.active():
            call.cancel()
    for log_ in manager.all_logs():
        log_.close_handlers()


@pytest.fixture
def recovered(monkeypatch):
    """The base offsets of the segments re-verified batch by batch, in order."""
    bases: list[int] = []
    original = LogSegment.recover

    def spy(self):
        bases.append(self.base_offset)
        return original(self)

    monkeypatch.setattr(LogSegment, "recover", spy)
    return bases


def _append(log_, batches):
    for _ in range(batches):
        log_.append(make_batch(2, value_size=50))


def _checkpointed(data_dir):
    return read_checkpoint(str(data_dir / RECOVERY_POINT_CHECKPOINT)).get(("t", 0))


def test_restart_after_kill_rescans_only_past_the_checkpointed_recovery_point(
        tmp_path, recovered):
    clock = _clock()
    manager = _start(tmp_path, clock)
    log_ = manager.get_or_create_log("t", 0)
    _append(log_, 20)
    flushed_to = log_.active_segment.base_offset
    assert len(log_.segments) >= 4 and log_.recovery_point < flushed_to
    clock.advance(1.0)      # the roll flush: every rolled segment fsynced
    assert log_.recovery_point == flushed_to
    clock.advance(28.0)     # 29 s after the start: no checkpoint yet
    assert _checkpointed(tmp_path) is None
    clock.advance(1.0)      # 30 s: Kafka's first checkpoint
    assert _checkpointed(tmp_path) == flushed_to

    _append(log_, 12)       # rolled but not flushed when the broker dies
    bases = [s.base_offset for s in log_.segments]
    past_point = [b for b in bases if b >= flushed_to]
    assert len(past_point) >= 3
    expected = offsets_of(log_.read(0, 10**9).records)
    last_file = log_.active_segment.log_path
    _crash(manager)
    with open(last_file, "r+b") as f:    # the last write was torn
        f.truncate(os.path.getsize(last_file) - 3)
    assert not os.path.exists(tmp_path / CLEAN_SHUTDOWN_FILE)

    again = _start(tmp_path, clock)
    log_ = again.get_log("t", 0)
    # only the segments from the checkpointed recovery point on, not the flushed ones
    assert recovered == past_point
    assert log_.recovered_segments == len(past_point)
    # the torn tail is still cut off
    assert log_.recovery_truncated_bytes > 0
    assert log_.recovered_bytes == sum(s.size for s in log_.segments
                                       if s.base_offset >= flushed_to) \
        + log_.recovery_truncated_bytes
    assert offsets_of(log_.read(0, 10**9).records) == expected[:-1]
    # what was verified is the new recovery point (Kafka's recoverLog), checkpointed at 30 s
    leo = log_.log_end_offset
    assert log_.recovery_point == leo
    clock.advance(30.0)
    assert _checkpointed(tmp_path) == leo

    # killed again with nothing new: only the active segment is read again
    recovered.clear()
    _crash(again)
    third = _start(tmp_path, clock)
    log_ = third.get_log("t", 0)
    assert recovered == [log_.active_segment.base_offset]
    assert offsets_of(log_.read(0, 10**9).records) == expected[:-1]
    third.stopService()


def test_checkpoint_runs_every_interval_after_the_first_30_seconds(tmp_path):
    clock = _clock()
    manager = _start(tmp_path, clock)
    log_ = manager.get_or_create_log("t", 0)
    clock.advance(30.0)
    assert _checkpointed(tmp_path) == 0
    _append(log_, 20)
    log_.flush()
    clock.advance(59.0)
    assert _checkpointed(tmp_path) == 0
    clock.advance(1.0)      # 90 s: 30 s + one interval
    assert _checkpointed(tmp_path) == log_.log_end_offset
    manager.stopService()
    assert not any(call.active() for call in clock.getDelayedCalls())


def test_a_clean_restart_starts_at_the_log_end(tmp_path, recovered):
    clock = _clock()
    manager = _start(tmp_path, clock)
    log_ = manager.get_or_create_log("t", 0)
    _append(log_, 20)
    leo = log_.log_end_offset
    manager.stopService()
    again = _start(tmp_path, clock)
    log_ = again.get_log("t", 0)
    assert recovered == [] and log_.recovered_segments == 0
    assert log_.recovery_point == leo
    again.stopService()
