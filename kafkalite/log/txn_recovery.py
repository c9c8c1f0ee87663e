"""Rebuilding the ``.txnindex`` of segments that recovery re-verified.

A recovered segment's transaction index is emptied (its entries may describe batches recovery cut
off) and rebuilt from the batches, as Kafka's ``LogSegment.recover`` replays them into a producer
state table. An entry needs the aborted transaction's first offset, which may lie in an earlier
segment: the ongoing transactions at the segment's start come from the newest producer snapshot
at or below it (its ``current_txn_first_offset`` fields), then the batch headers between the
snapshot and the segment (Kafka's ``rebuildProducerState`` up to the segment's base offset).

Only what the index needs is tracked here (the ongoing transaction of each producer); the full
producer state (sequences, epochs) is the partition's, rebuilt by its own replay.
"""

from __future__ import annotations

import logging

from kafkalite.errors import CorruptRecordError, InvalidRecordError
from kafkalite.log.producer_snapshot import SnapshotFiles
from kafkalite.log.segment import LogSegment
from kafkalite.log.txn_index import AbortedTxn
from kafkalite.record import header as hdr
from kafkalite.record.batch import read_batch
from kafkalite.record.control import ABORT, control_type

log = logging.getLogger("kafkalite.log.log")

_TXN_CONTROL = hdr.TRANSACTIONAL_BIT | hdr.CONTROL_BIT


class OngoingTxns:
    """The first offset of each producer's ongoing transaction, replayed batch by batch."""

    def __init__(self):
        self.first_offsets: dict[int, int] = {}

    def seed(self, entries) -> None:
        """Start from a snapshot's entries (ProducerSnapshotEntry)."""
        for entry in entries:
            if entry.current_txn_first_offset >= 0:
                self.first_offsets[entry.producer_id] = entry.current_txn_first_offset

    def replay(self, header: hdr.BatchHeader, is_abort=None) -> AbortedTxn | None:
        """Feed one batch. A transactional data batch opens its producer's transaction; a marker
        closes it, and for an ABORT (``is_abort()`` says, reading the marker) returns the
        index entry, its LSO being the first offset of the next other ongoing transaction (or
        the marker's offset + 1), as Kafka's ``lastStableOffset(completedTxn)``."""
        attributes = header.attributes
        if not attributes & hdr.TRANSACTIONAL_BIT or header.producer_id < 0:
            return None
        producer_id = header.producer_id
        if not attributes & hdr.CONTROL_BIT:
            self.first_offsets.setdefault(producer_id, header.base_offset)
            return None
        if header.record_count == 0:
            return None  # emptied by the cleaner: Kafka's replay leaves the state as it is
        first = self.first_offsets.pop(producer_id, None)
        if first is None or is_abort is None or not is_abort():
            return None  # a marker of an empty transaction changes nothing (Kafka's rule)
        marker = header.base_offset
        others = [o for o in self.first_offsets.values()]
        lso = min(others) if others else marker + 1
        return AbortedTxn(producer_id, first, marker, lso)


def marker_is_abort(segment: LogSegment, header: hdr.BatchHeader) -> bool:
    """Whether the control batch ``header`` describes (in ``segment``) is an ABORT marker."""
    data = segment.read(header.base_offset, header.size)
    try:
        _h, records = read_batch(data, 0, verify_crc=False)
    except CorruptRecordError as exc:  # a sound CRC over undecodable records: not a marker
        log.warning("%s: control batch at offset %d does not decode (%s); not indexed",
                    segment.log_path, header.base_offset, exc.message)
        return False
    if not records:
        return False
    try:
        return control_type(records[0].key) == ABORT
    except InvalidRecordError:
        return False


def ongoing_at(segments: list[LogSegment], snapshots: SnapshotFiles, offset: int
               ) -> OngoingTxns:
    """The ongoing transactions at ``offset`` (a segment's base offset)."""
    ongoing = OngoingTxns()
    found = snapshots.latest(at_or_below=offset)
    start = segments[0].base_offset if segments else offset
    if found is not None and found[0] >= start:
        start = found[0]
        ongoing.seed(found[1])
    for segment in segments:
        if segment.base_offset >= offset:
            break
        if segment.next_offset <= start:
            continue
        for _pos, header in segment.batch_headers():
            if header.base_offset >= offset:
                break
            if header.last_offset >= start:
                ongoing.replay(header)
    return ongoing


def rebuild_txn_index(segment: LogSegment, ongoing: OngoingTxns) -> int:
    """Append the aborted transactions whose markers are in ``segment`` to its (emptied) index;
    ``ongoing`` is the state at its start and moves to its end. Returns the entries added."""
    added = 0
    for _pos, header in segment.batch_headers():
        control = header.attributes & _TXN_CONTROL == _TXN_CONTROL
        aborted = ongoing.replay(
            header, (lambda h=header: marker_is_abort(segment, h)) if control else None)
        if aborted is not None:
            segment.txn_index.append(aborted)
            added += 1
    return added


def rebuild_recovered(segments: list[LogSegment], snapshots: SnapshotFiles, name: str) -> None:
    """Rebuild the transaction index of every segment of ``segments`` (oldest first) that
    recovery re-verified, carrying the ongoing transactions through runs of them."""
    ongoing = None
    for i, segment in enumerate(segments):
        if not segment.recovered:
            ongoing = None
            continue
        if ongoing is None:
            ongoing = ongoing_at(segments[:i], snapshots, segment.base_offset)
        added = rebuild_txn_index(segment, ongoing)
        if added:
            log.info("%s: rebuilt %d aborted transaction(s) in the txn index of segment %d",
                     name, added, segment.base_offset)
