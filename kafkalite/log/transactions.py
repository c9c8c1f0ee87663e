"""The transaction part of a Log: its aborted transaction indexes and producer state snapshots.

``LogTransactions`` holds the Log's methods for them; ``Log`` inherits them. The producer state
table itself is the partition's (it checks sequences and tracks ongoing transactions): it tells
the log of each aborted transaction (``append_aborted_txn``), and hands its entries for snapshots
through ``producer_state_source``, which the Log calls when it rolls a segment and when it
closes, as Kafka's Log takes a snapshot then.

Snapshot files follow Kafka 2.8's rules: one at each rolled segment's base offset and one at the
log end at close; the one at a segment's base offset goes with the segment (retention,
DeleteRecords), those above the log end on truncation, all of them on a full truncation, and
strays (at no segment's base offset, except the newest above all) when the log is loaded.
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from typing import TYPE_CHECKING, Callable, Iterable

from kafkalite.errors import KafkaStorageError
from kafkalite.log.producer_snapshot import ProducerSnapshotEntry, SnapshotFiles
from kafkalite.log.segment import LogSegment
from kafkalite.log.txn_index import AbortedTxn
from kafkalite.log.txn_recovery import ongoing_at, rebuild_txn_index

if TYPE_CHECKING:
    from kafkalite.log.segments import LogSegments

log = logging.getLogger("kafkalite.log.log")

SnapshotSource = Callable[[], Iterable[ProducerSnapshotEntry]]


class LogTransactions:
    """Mixed into ``Log``, whose state it works on (declared here, set by ``Log``)."""

    name: str
    log_start_offset: int
    log_end_offset: int
    _segments: list[LogSegment]
    _log_segments: LogSegments
    producer_snapshots: SnapshotFiles
    #: the partition's producer state, as snapshot entries (None: no snapshots are taken)
    producer_state_source: SnapshotSource | None

    def _check_open(self) -> None:
        raise NotImplementedError

    def _storage_error(self, exc: OSError, action: str) -> KafkaStorageError:
        raise NotImplementedError

    # --- the aborted transaction index ----------------------------------------------------------
    def append_aborted_txn(self, aborted: AbortedTxn) -> None:
        """Index an aborted transaction in the segment holding its marker (``last_offset``),
        normally the active one."""
        self._check_open()
        i = max(0, bisect_right(self._log_segments.bases, aborted.last_offset) - 1)
        try:
            self._segments[i].txn_index.append(aborted)
        except OSError as exc:
            raise self._storage_error(exc, "append to the transaction index of") from exc

    def collect_aborted_transactions(self, start_offset: int,
                                     upper_bound_offset: int) -> list[AbortedTxn]:
        """Every aborted transaction overlapping ``[start_offset, upper_bound_offset)``, from
        the segment holding ``start_offset`` on, until an entry's LSO reaches the upper bound
        (Kafka's ``Log.collectAbortedTransactions``)."""
        self._check_open()
        i = max(0, bisect_right(self._log_segments.bases, start_offset) - 1)
        found: list[AbortedTxn] = []
        try:
            for segment in self._segments[i:]:
                aborted, complete = segment.txn_index.collect_aborted(start_offset,
                                                                      upper_bound_offset)
                found.extend(aborted)
                if complete:
                    break
        except OSError as exc:
            raise self._storage_error(exc, "read the transaction index of") from exc
        return found

    def rebuild_txn_indexes(self) -> int:
        """Rebuild every segment's txn index from the batches (a log copied by replication into
        another data dir has none of its own). Returns the entries written."""
        self._check_open()
        segments = self._segments
        if not segments:
            return 0
        added = 0
        try:
            ongoing = ongoing_at([], self.producer_snapshots, segments[0].base_offset)
            for segment in segments:
                segment.txn_index.reset()
                added += rebuild_txn_index(segment, ongoing)
        except OSError as exc:
            raise self._storage_error(exc, "rebuild the transaction indexes of") from exc
        return added

    # --- producer state snapshots ---------------------------------------------------------------
    def take_producer_snapshot(self, entries: Iterable[ProducerSnapshotEntry],
                               offset: int | None = None) -> bool:
        """Write ``<offset>.snapshot`` (default: at the log end) unless one at or above that
        offset exists. True if it wrote."""
        self._check_open()
        at = self.log_end_offset if offset is None else offset
        try:
            return self.producer_snapshots.take(at, entries)
        except OSError as exc:
            raise self._storage_error(exc, f"write the producer snapshot at {at} of") from exc

    def latest_producer_snapshot(self, at_or_below: int | None = None
                                 ) -> tuple[int, list[ProducerSnapshotEntry]] | None:
        """``(offset, entries)`` of the newest readable snapshot (at or below ``at_or_below``);
        corrupt ones are deleted on the way. The state it holds is that of the log before
        ``offset``: replay the batches from ``offset`` on."""
        try:
            return self.producer_snapshots.latest(at_or_below)
        except OSError as exc:
            raise self._storage_error(exc, "read the producer snapshots of") from exc

    def producer_snapshot_offsets(self) -> list[int]:
        return list(self.producer_snapshots.offsets)

    def _snapshot_from_source(self, offset: int) -> None:
        """Kafka's snapshot at a roll (``offset``: the new segment's base) or at close."""
        source = self.producer_state_source
        if source is None:
            return
        try:
            self.producer_snapshots.take(offset, source())
        except OSError as exc:
            raise self._storage_error(exc, f"write the producer snapshot at {offset} of") from exc

    def _prune_snapshots_after_load(self) -> None:
        """Strays go; so do those above the log end or at or below the log start (Kafka's
        ``removeStraySnapshots`` then ``truncateAndReload``)."""
        snapshots = self.producer_snapshots
        snapshots.remove_strays(s.base_offset for s in self._segments)
        self._prune_snapshots_out_of_range()

    def _prune_snapshots_out_of_range(self) -> None:
        leo, start = self.log_end_offset, self.log_start_offset
        self.producer_snapshots.delete_where(lambda o: o > leo or o <= start)

    def _delete_snapshots_of(self, bases: Iterable[int]) -> None:
        """The segments based at ``bases`` left the log: so do their snapshots."""
        for base in bases:
            self.producer_snapshots.delete(base)
