"""The log cleaner's pass runs every log.cleaner.backoff.ms, as Kafka's LogCleaner: it compacts
compacted logs and applies retention to compact,delete ones; retention of the other logs stays
on log.retention.check.interval.ms (LogManager on a task.Clock)."""

from __future__ import annotations

import os
import time

from logtools import START_MS, make_batch, offsets_of, topic_config
from twisted.internet import task

from kafkalite.log import LogManager

DAY = 24 * 3600 * 1000
COMPACT = dict(cleanup_policy=("compact",), segment_bytes=300, min_cleanable_dirty_ratio=0.01)


def _started(tmp_path, configs, cleaner_backoff_ms=15_000):
    clock = task.Clock()
    clock.advance(START_MS / 1000 + DAY / 1000)    # the records below are a day old
    manager = LogManager([str(tmp_path)], topic_config(), clock,
                         retention_check_interval_ms=300_000, flush_check_interval_ms=1000,
                         checkpoint_interval_ms=60_000, cleaner_backoff_ms=cleaner_backoff_ms,
                         topic_configs=configs)
    manager.startService()
    return clock, manager


def _fill(log, rounds=6):
    for _ in range(rounds):
        for k in range(3):
            log.append(make_batch(1, key=b"k%d" % k, value_size=40))


def _records(log) -> int:
    return len(offsets_of(log.read(log.log_start_offset, 10**9).records))


def test_compaction_runs_every_cleaner_backoff(tmp_path):
    clock, manager = _started(tmp_path, {"c": topic_config(**COMPACT)})
    log = manager.get_or_create_log("c", 0)
    _fill(log)
    before = _records(log)
    clock.advance(14)
    assert _records(log) == before
    clock.advance(1)
    assert _records(log) < before
    _fill(log)                                    # the next pass comes one backoff later
    grown = _records(log)
    clock.advance(15)
    assert _records(log) < grown
    manager.stopService()


def test_the_cleaner_applies_retention_to_compact_delete_logs(tmp_path):
    config = topic_config(**{**COMPACT, "cleanup_policy": ("compact", "delete"),
                             "retention_ms": 1000})
    clock, manager = _started(tmp_path, {"cd": config})
    # a segment compaction emptied is timed by its file's mtime (as Kafka's
    # LogSegment.largestTimestamp), a wall-clock time: the task clock starts at the wall clock
    clock.advance(time.time() - clock.seconds())
    log = manager.get_or_create_log("cd", 0)
    _fill(log)
    clock.advance(15)          # compacted, and the segments it emptied kept their old mtime
    assert log.log_start_offset > 0
    manager.stopService()


def test_retention_of_delete_logs_keeps_its_own_interval(tmp_path):
    config = topic_config(segment_bytes=300, retention_ms=1000)
    clock, manager = _started(tmp_path, {"d": config})
    log = manager.get_or_create_log("d", 0)
    _fill(log)
    clock.advance(15)
    assert log.log_start_offset == 0
    clock.advance(300 - 15)
    assert log.log_start_offset > 0
    manager.stopService()


def test_a_new_backoff_applies_from_the_next_wait(tmp_path):
    clock, manager = _started(tmp_path, {"c": topic_config(**COMPACT)}, cleaner_backoff_ms=60_000)
    log = manager.get_or_create_log("c", 0)
    manager.cleaner_backoff_ms = 5_000
    clock.advance(60)                              # the wait already begun
    _fill(log)
    before = _records(log)
    clock.advance(5)
    assert _records(log) < before
    manager.stopService()


def test_a_compacted_segment_keeps_its_files_mtime(tmp_path):
    """As Kafka's cleaner (cleaned.lastModified = the old segment's): else a segment compaction
    emptied would look new to retention, and compact,delete logs would keep it."""
    _clock, manager = _started(tmp_path, {"c": topic_config(**COMPACT)})
    log = manager.get_or_create_log("c", 0)
    _fill(log)
    first = log._segments[0]
    old_ns = 1_000_000_000 * 1_000_000_000          # 2001, in nanoseconds
    os.utime(first.log_path, ns=(old_ns, old_ns))
    assert log.compact(force=True) is not None
    assert log._segments[0].base_offset == first.base_offset
    assert log._segments[0].last_modified_ms() == old_ns // 1_000_000
    manager.stopService()
