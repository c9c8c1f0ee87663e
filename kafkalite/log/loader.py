"""Opening a partition's log at start-up: recovery, as Kafka's LogLoader.

``load_log`` scans ``<data dir>/<topic>-<partition>/`` and returns the open segments with the
log start offset and recovery point the Log starts from:

* stray ``.deleted``/``.cleaned`` files are removed; ``.swap`` files (a compaction that reached
  its commit point before a crash) replace the segment they were made from;
* index files without a log are dropped and missing indexes rebuilt from the log;
* the ``.txnindex`` of every segment recovery re-verified (or whose txn index failed its sanity
  check) is rebuilt from its batches and the producer snapshots (``txn_recovery``); a completed
  swap is re-verified so, as Kafka's ``completeSwapOperations`` recovers the swapped segment;
* after an unclean shutdown every segment from the one holding the recovery point on is
  re-verified (lengths and CRCs); the first bad or torn batch and everything after it --
  including later segments -- is removed, as Kafka does; the segments and bytes rescanned are
  counted (``LoadedLog.recovered_segments``/``recovered_bytes``) and logged;
* the log then starts with its recovery point at the log end offset, as Kafka 2.8's
  ``Log.recoverLog`` ends with ``recoveryPoint = activeSegment.readNextOffset``: what was just
  verified (or closed cleanly) is not verified again after the next crash once the LogManager's
  checkpoint task has written the new point;
* a log written in kafkalite's old msgpack record format is refused by name;
* an empty directory gets one empty segment at the log start offset.
"""

from __future__ import annotations

import logging
import os
from bisect import bisect_right
from dataclasses import dataclass
from typing import Callable

from kafkalite.errors import UnsupportedLogFormatError
from kafkalite.log.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    segment_paths,
    txn_index_path,
)
from kafkalite.log.producer_snapshot import SnapshotFiles
from kafkalite.log.txn_index import TXN_INDEX_SUFFIX
from kafkalite.log.txn_recovery import rebuild_recovered
from kafkalite.record.legacy import is_msgpack_batch

# the Log's logger: recovery messages keep the logger name they have always had
log = logging.getLogger("kafkalite.log.log")


@dataclass(slots=True)
class LoadedLog:
    """What recovery left: the open segments (oldest first) and the offsets to start from."""

    segments: list[LogSegment]
    log_start_offset: int
    recovery_point: int
    #: bytes cut off by recovery (torn or corrupt tails, and the segments after them)
    truncated_bytes: int
    #: segments re-verified batch by batch (past the recovery point, or with a missing index)
    recovered_segments: int = 0
    #: bytes of the .log files of those segments, as found before recovery cut them
    recovered_bytes: int = 0


def load_log(dir: str, config, clock: Callable[[], int], name: str, recovery_point: int,
             clean_shutdown: bool, log_start_offset: int | None,
             snapshots: SnapshotFiles | None = None) -> LoadedLog:
    """Recover and open the segments of the partition directory ``dir`` (which exists).

    ``recovery_point`` is the checkpointed offset below which everything was fsynced; segments
    from the one holding it on are re-verified unless ``clean_shutdown`` (Kafka's
    ``logSegments(recoveryPoint, Long.MaxValue)``). ``log_start_offset`` (checkpointed, None if
    unknown) raises the start above the first segment's base offset. The returned recovery
    point is the log end offset, as Kafka's. ``snapshots`` (the directory's producer
    snapshots) serve the rebuilding of txn indexes.
    """
    bases, swapped = _complete_pending_files(dir, config, clock, name)
    ordered = sorted(bases)
    segments: list[LogSegment] = []
    truncated_bytes = 0
    recovered_segments = recovered_bytes = 0
    first_to_recover = len(ordered)
    if not clean_shutdown and ordered:
        first_to_recover = max(0, bisect_right(ordered, recovery_point) - 1)
    for i, base in enumerate(ordered):
        log_path, index_path, time_index_path = segment_paths(dir, base)
        missing = not (os.path.exists(index_path) and os.path.exists(time_index_path))
        recover = i >= first_to_recover or missing or base in swapped
        if recover:
            recovered_segments += 1
            recovered_bytes += _size_of(log_path)
        segment = LogSegment(dir, base, config, clock, recover=recover)
        segments.append(segment)
        if segment.truncated_bytes:
            truncated_bytes += segment.truncated_bytes
            truncated_bytes += _delete_later_segments(dir, name, segment, ordered[i + 1:])
            break
    _refuse_old_record_format(dir, segments)
    rebuild_recovered(segments, snapshots if snapshots is not None else SnapshotFiles(dir), name)
    if recovered_segments:
        log.info("%s: re-verified %d segment(s), %d bytes (recovery point %d)", name,
                 recovered_segments, recovered_bytes, recovery_point)

    if not segments:
        start = max(log_start_offset or 0, 0)
        segments.append(LogSegment(dir, start, config, clock))
    leo = segments[-1].next_offset
    start = segments[0].base_offset
    if log_start_offset is not None:
        start = max(start, log_start_offset)
    return LoadedLog(segments, min(start, leo), leo, truncated_bytes, recovered_segments,
                     recovered_bytes)


def _complete_pending_files(dir: str, config, clock: Callable[[], int], name: str
                            ) -> tuple[set[int], set[int]]:
    """Finish what a crash interrupted (stray files, swaps, orphan indexes) and return the base
    offsets of the segments' ``.log`` files, and of those a completed swap put in place."""
    bases: set[int] = set()
    indexes: list[tuple[int, str]] = []
    swaps: list[int] = []
    for file_name in sorted(os.listdir(dir)):
        path = os.path.join(dir, file_name)
        if file_name.endswith(DELETED_SUFFIX) or file_name.endswith(CLEANED_SUFFIX):
            log.info("%s: removing stray file %s", name, file_name)
            _unlink(path)
            continue
        if file_name.endswith(SWAP_SUFFIX):
            stem = file_name[:-len(SWAP_SUFFIX)]
            if stem.endswith(LOG_SUFFIX) and _is_base(stem[:-len(LOG_SUFFIX)]):
                swaps.append(int(stem[:-len(LOG_SUFFIX)]))
            else:  # swapped indexes are rebuilt from the swapped log
                _unlink(path)
            continue
        stem, ext = os.path.splitext(file_name)
        if not _is_base(stem):
            continue
        if ext == LOG_SUFFIX:
            bases.add(int(stem))
        elif ext in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            indexes.append((int(stem), path))
    for base in swaps:
        _complete_swap(dir, config, clock, name, base)
        bases.add(base)
    for base, path in indexes:
        if base not in bases:
            log.info("%s: removing index file without a log: %s", name, path)
            _unlink(path)
    return bases, set(swaps)


def _delete_later_segments(dir: str, name: str, truncated: LogSegment, later: list[int]) -> int:
    """Recovery cut ``truncated`` short: remove every later segment (what follows a torn batch
    cannot be trusted). Returns the bytes of the removed ``.log`` files."""
    log.warning("%s: recovery truncated %d bytes of segment %d at offset %d%s",
                name, truncated.truncated_bytes, truncated.base_offset, truncated.next_offset,
                f"; deleting {len(later)} later segment(s) {later}" if later else "")
    removed = 0
    for later_base in later:
        for path in (*segment_paths(dir, later_base), txn_index_path(dir, later_base)):
            removed += _size_of(path) if path.endswith(LOG_SUFFIX) else 0
            _unlink(path)
    return removed


def _refuse_old_record_format(dir: str, segments: list[LogSegment]) -> None:
    """Refuse a partition written in kafkalite's old msgpack record format: its headers and
    CRCs still pass every check, so it would otherwise fail only when a consumer decodes it.
    The first batch of the first non-empty segment tells (one read per partition)."""
    segment = next((s for s in segments if s.size), None)
    if segment is None:
        return
    first = segment.read(segment.base_offset, 1)
    if first and is_msgpack_batch(first):
        for opened in segments:
            opened.close()
        raise UnsupportedLogFormatError(
            f"log dir {dir} holds batches in kafkalite's old msgpack record format "
            f"(before Kafka's v2 records); this version does not migrate them: delete the "
            f"directory or keep the old kafkalite")


def _complete_swap(dir: str, config, clock: Callable[[], int], name: str, base: int) -> None:
    """A compaction finished writing ``<base>.log.swap`` before a crash: put it in place of
    the segment it was made from."""
    swapped = LogSegment(dir, base, config, clock, recover=True, suffix=SWAP_SUFFIX)
    for path in (*segment_paths(dir, base), txn_index_path(dir, base)):
        _unlink(path)
    swapped.change_suffix(SWAP_SUFFIX, "")
    swapped.close()
    log.info("%s: completed the interrupted compaction of segment %d", name, base)


def _is_base(stem: str) -> bool:
    return len(stem) == 20 and stem.isdigit()


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _size_of(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
