"""A partition's appends through its producer state, and its aborted transactions.

The glue between ``Partition`` and the pure ``producer_state``: which batches an append holds
(with the offsets they get, and the marker of each control batch), the refusals Kafka's
LogValidator makes for a client's batches, applying a validated append (an aborted transaction
goes to the log's ``.txnindex`` with Kafka's ``lastStableOffset(completedTxn)``), replaying the
log to rebuild the table (from the newest ``.snapshot`` on: recovery, truncation), the
table as snapshot entries, and the read_committed side: the aborted
transactions a fetch's range overlaps.
"""

from __future__ import annotations

from kafkalite.errors import CorruptRecordError, InvalidRecordError
from kafkalite.log.producer_snapshot import ProducerSnapshotEntry
from kafkalite.log.txn_index import AbortedTxn
from kafkalite.record.batch import read_batch
from kafkalite.record.control import parse_control_record
from kafkalite.record.header import (ATTRIBUTES_POS, CONTROL_BIT, I16, I32, I64, LENGTH_POS,
                                     LAST_OFFSET_DELTA_POS, LOG_OVERHEAD, PRODUCER_ID_POS,
                                     iter_headers)
from kafkalite.server.producer_state import (CLIENT, INT32_MAX, REPLICATION, Analysis,
                                             BatchInfo, CachedBatch, ProducerEntry,
                                             ProducerStateTable, analyze, is_control)

__all__ = ["plain_batch", "batch_infos", "analyze", "apply", "replay", "rebuild",
           "aborted_in_range", "next_offset_after", "snapshot_entries", "load_snapshot"]


def plain_batch(records) -> bool:
    """True for the common produce request: one batch, no producer id, not a control batch
    (the producer state has nothing to check)."""
    n = len(records)
    if n < PRODUCER_ID_POS + I64.size:
        return True      # too short for a batch: the log's validation answers it
    size = LOG_OVERHEAD + I32.unpack_from(records, LENGTH_POS)[0]
    return (size == n and I64.unpack_from(records, PRODUCER_ID_POS)[0] < 0
            and not I16.unpack_from(records, ATTRIBUTES_POS)[0] & CONTROL_BIT)


def _marker(records, pos: int, header) -> tuple[bool, int] | None:
    if header.record_count == 0:
        return None      # an empty control batch: the cleaner removed its transaction
    _h, decoded = read_batch(records, pos, verify_crc=False)
    if not decoded:
        return None
    return parse_control_record(decoded[0].key, decoded[0].value)


def batch_infos(records, leo: int | None, origin: str, tp, headers=None) -> list[BatchInfo]:
    """The producers' batches of ``records`` with their offsets: assigned from ``leo`` (a
    leader's append) or their own (``leo`` None: a follower's); ``headers`` are the
    ``(position, header)`` pairs of ``records`` if the caller has them. A client may write
    neither control batches nor idempotent ones without a sequence (INVALID_RECORD, Kafka's
    LogValidator)."""
    out = []
    next_offset = leo
    if headers is None:
        headers = iter_headers(records, verify_crc=False)
    for pos, header in headers:
        control = is_control(header)
        if origin == CLIENT:
            if control:
                raise InvalidRecordError(
                    f"Clients are not allowed to write control records in topic partition "
                    f"{tp[0]}-{tp[1]}.")
            if header.producer_id >= 0 and header.base_sequence < 0:
                raise InvalidRecordError(
                    f"Invalid sequence number {header.base_sequence} in record batch with "
                    f"producerId {header.producer_id} in topic partition {tp[0]}-{tp[1]}.")
        base = header.base_offset if next_offset is None else next_offset
        if next_offset is not None:
            next_offset = base + header.last_offset_delta + 1
        if header.producer_id < 0:
            continue        # nothing for the producer state
        marker = _marker(records, pos, header) if control else None
        out.append(BatchInfo(header, base, marker))
    return out


def apply(partition, analysis: Analysis) -> None:
    """After the append: the producers' new state, and each completed transaction (an aborted
    one into the log's ``.txnindex`` first, as Kafka's Log.append)."""
    table = partition.producer_states
    for info in analysis.infos.values():
        table.apply(info)
    for completed in analysis.completed:
        if completed.is_aborted:
            partition.log.append_aborted_txn(AbortedTxn(
                completed.producer_id, completed.first_offset, completed.last_offset,
                table.last_stable_offset(completed)))
        table.complete(completed)


def replay(table: ProducerStateTable, data, pos: int, header) -> None:
    """One stored batch into ``table`` (recovery: Kafka's loadProducersFromRecords, which
    completes transactions without touching the ``.txnindex``)."""
    if header.producer_id < 0:
        return
    marker = _marker(data, pos, header) if is_control(header) else None
    analysis = analyze(table, [BatchInfo(header, header.base_offset, marker)], REPLICATION)
    for info in analysis.infos.values():
        table.apply(info)
    for completed in analysis.completed:
        table.complete(completed)


def snapshot_entries(table: ProducerStateTable) -> list:
    """The table as ``.snapshot`` entries (Kafka's writeSnapshot: per producer its last batch
    only, -1 for no ongoing transaction)."""
    return [ProducerSnapshotEntry(
        producer_id, entry.epoch, entry.last_sequence, entry.last_data_offset,
        entry.last_offset_delta, entry.last_timestamp, entry.coordinator_epoch,
        -1 if entry.current_txn_first_offset is None else entry.current_txn_first_offset)
        for producer_id, entry in table.producers.items()]


def _decrement_sequence(sequence: int, by: int) -> int:
    if sequence < by:
        return INT32_MAX - (by - sequence) + 1
    return sequence - by


def load_snapshot(table: ProducerStateTable, entries) -> None:
    """Snapshot entries into ``table`` (Kafka's readSnapshot + loadProducerEntry)."""
    for s in entries:
        entry = ProducerEntry(s.producer_epoch, coordinator_epoch=s.coordinator_epoch,
                              last_timestamp=s.timestamp,
                              current_txn_first_offset=(s.current_txn_first_offset
                                                        if s.current_txn_first_offset >= 0
                                                        else None))
        if s.last_offset >= 0:
            entry.batches.append(CachedBatch(
                _decrement_sequence(s.last_sequence, s.offset_delta), s.last_sequence,
                s.last_offset - s.offset_delta, s.last_offset, s.timestamp))
        table.load_entry(s.producer_id, entry)


def rebuild(table: ProducerStateTable, log_, chunk_bytes: int = 4 * 1024 * 1024) -> int:
    """Empty ``table`` and rebuild it (a new replica, recovery, truncation): from the newest
    producer snapshot at or below the log end, then the batches after it (Kafka's
    rebuildProducerState); from the log start without one. Returns where the replay began."""
    table.clear()
    offset = log_.log_start_offset
    end = log_.log_end_offset
    found = log_.latest_producer_snapshot(end)
    if found is not None:
        load_snapshot(table, found[1])
        offset = max(offset, found[0])
    began = offset
    while offset < end:
        data = log_.read(offset, chunk_bytes).records
        last = None
        try:
            for pos, header in iter_headers(data, verify_crc=False):
                last = header
                replay(table, data, pos, header)
        except CorruptRecordError:
            pass     # a partial trailing batch ends this chunk
        if last is None:
            break
        offset = last.next_offset
    return began


def next_offset_after(records) -> int | None:
    """The offset after the last whole batch in ``records`` (None: no batch)."""
    n = len(records)
    pos = 0
    last = None
    while n - pos >= LAST_OFFSET_DELTA_POS + I32.size:
        size = LOG_OVERHEAD + I32.unpack_from(records, pos + LENGTH_POS)[0]
        if pos + size > n:
            break
        last = pos
        pos += size
    if last is None:
        return None
    return (I64.unpack_from(records, last)[0]
            + I32.unpack_from(records, last + LAST_OFFSET_DELTA_POS)[0] + 1)


def aborted_in_range(log_, fetch_offset: int, records) -> list[tuple[int, int]]:
    """``(producer_id, first_offset)`` of the aborted transactions a read_committed fetch of
    ``records`` from ``fetch_offset`` overlaps (Kafka's addAbortedTransactions: up to the
    offset after the last fetched batch); empty when nothing was read."""
    upper = next_offset_after(records)
    if upper is None:
        return []
    return [(a.producer_id, a.first_offset)
            for a in log_.collect_aborted_transactions(fetch_offset, upper)]
