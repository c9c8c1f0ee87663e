"""Rolled segments fsynced off the reactor (``log/rolled_flush.py``): the job a log hands out,
the fsyncs on another thread, and the outcome back on the log.

Real files in a tmp dir; the "other thread" is the test itself, calling ``sync_all`` between
the log's two halves, so the orderings that matter (a truncation, a deletion or a close while
the fsyncs run) are set up exactly.
"""

from __future__ import annotations

import errno
import os

import pytest
from logtools import make_batch, topic_config

from kafkalite import errors
from kafkalite.log import Log
from kafkalite.log.dir_failure import LogDirFailureChannel
from kafkalite.log.rolled_flush import RolledFlush, sync_all

CONFIG = topic_config(segment_bytes=600)


def _rolled_log(tmp_path, channel=None) -> Log:
    """A log with rolled segments the roll left unsynced."""
    log_ = Log(tmp_path / "t-0", CONFIG, log_dir_failure_channel=channel)
    while len(log_.segments) < 3:
        log_.append(make_batch(2))
    assert log_.recovery_point == 0
    return log_


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_job_syncs_the_rolled_segments_and_moves_the_recovery_point(tmp_path):
    log_ = _rolled_log(tmp_path)
    fds = _open_fds()
    job = log_.rolled_flush_job()
    active = log_.segments[-1].base_offset
    assert job.target == active and job.handles
    assert _open_fds() == fds + len(job.handles)
    assert log_.recovery_point == 0              # nothing moves before the fsyncs ran
    [(owner, done)] = sync_all([(log_, job)])
    assert owner is log_ and done.error is None
    assert _open_fds() == fds                    # every handle closed by sync_all
    log_.rolled_flush_done(done)
    assert log_.recovery_point == active < log_.log_end_offset
    assert log_.rolled_flush_job() is None       # nothing left until the next roll
    log_.close()


def test_the_handles_outlive_deleted_and_closed_segments(tmp_path):
    log_ = _rolled_log(tmp_path)
    job = log_.rolled_flush_job()
    first = log_.segments[0]
    log_.close()                                 # the log's own descriptors are gone
    first.delete()
    [(_owner, done)] = sync_all([(log_, job)])
    assert done.error is None                    # a duplicate still syncs the unlinked file
    log_.rolled_flush_done(done)                 # a closed log takes nothing
    assert log_.recovery_point == 0


def test_a_truncation_meanwhile_voids_the_job(tmp_path):
    log_ = _rolled_log(tmp_path)
    job = log_.rolled_flush_job()
    log_.truncate_to(1)
    while log_.log_end_offset < job.target + 2:  # other bytes now lie below the job's target
        log_.append(make_batch(2))
    log_.rolled_flush_done(sync_all([(log_, job)])[0][1])
    assert log_.recovery_point <= 1
    log_.close()


def test_a_failed_fsync_takes_the_dir_offline_and_every_handle_is_closed(tmp_path):
    channel = LogDirFailureChannel()
    log_ = _rolled_log(tmp_path, channel)
    job = log_.rolled_flush_job()
    read_end, write_end = os.pipe()              # fsync on a pipe fails with EINVAL
    broken = job._replace(handles=[read_end, *job.handles, write_end])
    [(_owner, done)] = sync_all([(log_, broken)])
    assert isinstance(done.error, OSError) and done.error.errno == errno.EINVAL
    for handle in broken.handles:                # closed, the failed one and the rest
        with pytest.raises(OSError):
            os.fstat(handle)
    with pytest.raises(errors.KafkaStorageError, match="cannot flush"):
        log_.rolled_flush_done(done)
    assert channel.is_offline(log_.parent_dir) and log_.recovery_point == 0


def test_no_job_without_a_roll(tmp_path):
    log_ = Log(tmp_path / "t-0", CONFIG)
    log_.append(make_batch(1))
    assert log_.rolled_flush_job() is None
    log_.close()
    assert log_.rolled_flush_job() is None
    assert RolledFlush(5, [], 0).error is None
