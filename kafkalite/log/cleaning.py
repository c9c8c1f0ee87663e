"""The cleaner part of a Log: retention by time and size, the log start offset, compaction.

``LogCleaning`` holds the Log's methods for them, run by the LogManager's retention and cleaner
tasks and by DeleteRecords; ``Log`` inherits them. What to delete and how to compact are decided
by ``retention`` and ``compaction``; these methods apply that to the Log's segments and offsets
and report I/O failures as every Log operation does.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

from kafkalite.errors import KafkaStorageError, OffsetOutOfRangeError
from kafkalite.log import compaction
from kafkalite.log.compaction import CompactionResult
from kafkalite.log.retention import deletable_segments
from kafkalite.log.segment import LogSegment
from kafkalite.log.txn_cleaning import LastRecord, from_snapshot_entries, last_records
from kafkalite.log.txn_index import AbortedTxn
from kafkalite.log.txn_recovery import ongoing_at

if TYPE_CHECKING:
    from kafkalite.log.producer_snapshot import SnapshotFiles
    from kafkalite.log.segments import LogSegments

# the Log's logger: these messages keep the logger name they have always had
log = logging.getLogger("kafkalite.log.log")


class LogCleaning:
    """Mixed into ``Log``, whose state it works on (declared here, set by ``Log``)."""

    config: object
    name: str
    log_start_offset: int
    log_end_offset: int
    _clock: Callable[[], int]
    _segments: list[LogSegment]
    _log_segments: LogSegments
    #: the offset below which the segments were compacted (-1: none yet)
    _cleaned_up_to: int
    #: (``LogTransactions``) the producer snapshots of deleted segments go with them
    _delete_snapshots_of: Callable[[list[int]], None]
    collect_aborted_transactions: Callable[[int, int], list[AbortedTxn]]
    producer_snapshots: SnapshotFiles
    producer_state_source: Callable | None
    #: set by the partition: its high watermark, which bounds what retention deletes
    high_watermark_source: Callable[[], int] | None

    def _check_open(self) -> None:
        raise NotImplementedError

    def _storage_error(self, exc: OSError, action: str) -> KafkaStorageError:
        raise NotImplementedError

    def delete_records_before(self, offset: int) -> list[int]:
        """Advance the log start offset to ``offset`` (DeleteRecords) and delete the segments
        wholly below it. Returns the deleted segments' base offsets."""
        self._check_open()
        if offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"cannot move the log start of {self.name} to {offset}, past the log end "
                f"{self.log_end_offset}")
        if offset > self.log_start_offset:
            self.log_start_offset = offset
        return self.delete_old_segments(self._clock(), retention=False)

    def delete_old_segments(self, now_ms: int | None = None, retention: bool = True) -> list[int]:
        """Delete the oldest segments that are past ``retention.ms`` (by their largest
        timestamp), over ``retention.bytes`` (oldest first), or wholly below the log start
        offset (``retention=False``: only those). Only a prefix of the log goes, and with a
        ``high_watermark_source`` only what is below the HW, the active segment included (a
        new one is rolled first); without one, never the active segment. Returns their base
        offsets."""
        self._check_open()
        now = self._clock() if now_ms is None else now_ms
        source = self.high_watermark_source
        doomed = deletable_segments(self._segments, self.config, now, self.log_start_offset,
                                    retention, None if source is None else source(),
                                    self.log_end_offset)
        if not doomed:
            return []
        if len(doomed) == len(self._segments):
            # the active segment goes too: a log always has one, so a new one first (Kafka)
            self.roll()
        bases = [s.base_offset for s in doomed]
        reasons = "retention" if retention else "log start offset"
        log.info("%s: deleting segment(s) %s (%s)", self.name, bases, reasons)
        try:
            self._log_segments.remove(doomed, self.config.file_delete_delay_ms)
            self._delete_snapshots_of(bases)
        except OSError as exc:
            raise self._storage_error(exc, "delete old segments of") from exc
        self.log_start_offset = max(self.log_start_offset, self._segments[0].base_offset)
        return bases

    def delete_expired_files(self, now_ms: int | None = None) -> int:
        """Remove ``.deleted`` files whose delay has passed; returns how many segments went."""
        now = self._clock() if now_ms is None else now_ms
        try:
            return self._log_segments.delete_expired(now)
        except OSError as exc:
            raise self._storage_error(exc, "remove deleted segment files of") from exc

    def dirty_ratio(self) -> float:
        """Share of the non-active bytes not yet compacted."""
        return compaction.dirty_ratio(self._segments[:-1], self._cleaned_up_to)

    def compact(self, now_ms: int | None = None, force: bool = False) -> CompactionResult | None:
        """Keep only the newest record per key in the non-active segments (cleanup.policy
        compact; the rules are ``compaction``'s), up to the first segment holding an open
        transaction (Kafka never cleans past the first unstable offset). Runs only when the
        dirty ratio reaches ``min.cleanable.dirty.ratio`` unless ``force``. Returns None if
        nothing was done."""
        self._check_open()
        now = self._clock() if now_ms is None else now_ms
        try:
            inactive = self._cleanable_segments()
            result = compaction.compact_if_dirty(
                inactive, now, self.config, force, self._cleaned_up_to, self._replace_segment,
                self.collect_aborted_transactions, self._last_records() if inactive else None)
        except OSError as exc:
            raise self._storage_error(exc, "compact") from exc
        if result is not None:
            self._cleaned_up_to = inactive[-1].next_offset
            log.info("%s: compacted %d segment(s), %d -> %d bytes, %d records removed",
                     self.name, result.segments, result.bytes_before, result.bytes_after,
                     result.records_removed)
        return result

    def _cleanable_segments(self) -> list[LogSegment]:
        """The non-active segments wholly below the first offset of an open transaction."""
        inactive = self._segments[:-1]
        if not inactive:
            return inactive
        ongoing = ongoing_at(self._segments, self.producer_snapshots,
                             self._segments[-1].base_offset)
        unstable = min(ongoing.first_offsets.values(), default=None)
        if unstable is None:
            return inactive
        return [s for s in inactive if s.next_offset <= unstable]

    def _last_records(self) -> dict[int, LastRecord]:
        """Each producer's LastRecord: from the partition's producer state when it gives one,
        else from the batch headers."""
        source = self.producer_state_source
        if source is not None:
            return from_snapshot_entries(source())
        return last_records(h for s in self._segments for _p, h in s.batch_headers())

    def _replace_segment(self, old: LogSegment, chunks: list[bytes], batches: list,
                         aborted: list[AbortedTxn]) -> None:
        """Swap in a rewritten copy of ``old`` (``aborted``: its txn index): write
        ``.cleaned``, fsync, rename to ``.swap`` (the commit point: recovery completes it),
        retire the old files, drop the suffix."""
        swapped = compaction.write_swap_copy(old, chunks, batches, self.config, self._clock,
                                             aborted)
        self._log_segments.swap_in(old, swapped, self.config.file_delete_delay_ms)
