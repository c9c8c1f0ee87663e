"""Transactions in log compaction, as Kafka 2.8's LogCleaner has them.

* ``CleanedTxns`` is Kafka's ``CleanedTransactionMetadata``: fed the aborted transactions of the
  range (from the ``.txnindex`` files) and then every batch in offset order, it says which data
  batches belong to an aborted transaction (removed, and kept out of the key map) and which
  markers may go. A marker stays while any batch of its transaction was still seen in this pass
  (an ABORT then keeps its index entry in the cleaned segment), and past that only until
  ``delete.retention.ms`` after its segment was last modified; a COMMIT marker whose
  transaction has no batch left goes on the same terms.
* ``last_records``: the batch each producer's state depends on (its last data batch, or its last
  marker when it has none) stays, emptied of records if need be (``empty_batch``), so a
  producer's sequence and epoch survive compaction (Kafka's RETAIN_EMPTY).
"""

from __future__ import annotations

import heapq
from typing import Iterable, NamedTuple

from crc32c import crc32c

from kafkalite.errors import InvalidRecordError
from kafkalite.log.txn_index import AbortedTxn
from kafkalite.record import header as hdr
from kafkalite.record.control import ABORT, COMMIT
from kafkalite.record.control import control_type as _control_type


class LastRecord(NamedTuple):
    """Kafka's LastRecord: a producer's last data offset (None: only markers) and epoch."""

    last_data_offset: int | None
    producer_epoch: int


def control_type(record) -> int | None:
    """The control record type of ``record`` (Kafka's ControlRecordType.parse), None for a
    key that is not one (Kafka's UNKNOWN: such a batch is kept)."""
    try:
        return _control_type(record.key)
    except InvalidRecordError:
        return None


class CleanedTxns:
    def __init__(self):
        self._pending: list[tuple[int, int, AbortedTxn]] = []  # heap by first offset
        self._seen: set[AbortedTxn] = set()
        #: producer id -> [aborted txn, last offset of a batch of it seen in this pass or None]
        self._ongoing_aborted: dict[int, list] = {}
        self._ongoing_committed: set[int] = set()
        #: the index entries of the segment being written (set per output segment)
        self.cleaned_index: list[AbortedTxn] = []

    def add_aborted(self, aborted: Iterable[AbortedTxn]) -> None:
        for txn in aborted:
            if txn not in self._seen:  # ranges of adjacent segments overlap: once is enough
                self._seen.add(txn)
                heapq.heappush(self._pending, (txn.first_offset, txn.last_offset, txn))

    def _consume_up_to(self, offset: int) -> None:
        pending = self._pending
        while pending and pending[0][0] <= offset:
            txn = heapq.heappop(pending)[2]
            self._ongoing_aborted.setdefault(txn.producer_id, [txn, None])

    def on_batch(self, header: hdr.BatchHeader) -> bool:
        """A data batch: True if it belongs to an aborted transaction (it may go)."""
        self._consume_up_to(header.last_offset)
        if not header.attributes & hdr.TRANSACTIONAL_BIT:
            return False
        ongoing = self._ongoing_aborted.get(header.producer_id)
        if ongoing is not None:
            ongoing[1] = header.last_offset
            return True
        self._ongoing_committed.add(header.producer_id)
        return False

    def on_marker(self, header: hdr.BatchHeader, records: list) -> bool:
        """A control batch: True if it may go (once past the marker retention)."""
        self._consume_up_to(header.last_offset)
        if not records:
            return True  # emptied by an earlier cleaning
        kind = control_type(records[0])
        producer_id = header.producer_id
        if kind == ABORT:
            ongoing = self._ongoing_aborted.pop(producer_id, None)
            if ongoing is not None and ongoing[1] is not None:
                self.cleaned_index.append(ongoing[0])
                return False
            return True
        if kind == COMMIT:
            if producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(producer_id)
                return False
            return True
        return False


def last_records(headers: Iterable[hdr.BatchHeader]) -> dict[int, LastRecord]:
    """Each producer's LastRecord, from every batch header of the log (oldest first): used when
    no producer state table is at hand."""
    out: dict[int, LastRecord] = {}
    for header in headers:
        producer_id = header.producer_id
        if producer_id < 0:
            continue
        previous = out.get(producer_id)
        if header.attributes & hdr.CONTROL_BIT:
            last_data = previous.last_data_offset if previous else None
            out[producer_id] = LastRecord(last_data, header.producer_epoch)
        else:
            out[producer_id] = LastRecord(header.last_offset, header.producer_epoch)
    return out


def from_snapshot_entries(entries) -> dict[int, LastRecord]:
    """LastRecords from the producer state table's snapshot entries (Kafka's
    ``lastRecordsOfActiveProducers``)."""
    return {e.producer_id: LastRecord(e.last_offset if e.last_offset >= 0 else None,
                                      e.producer_epoch) for e in entries}


def is_last_record(header: hdr.BatchHeader, last: dict[int, LastRecord]) -> bool:
    record = last.get(header.producer_id) if header.producer_id >= 0 else None
    if record is None:
        return False
    if record.last_data_offset is not None:
        return header.last_offset == record.last_data_offset
    return bool(header.attributes & hdr.CONTROL_BIT) and \
        header.producer_epoch == record.producer_epoch


def empty_batch(header: hdr.BatchHeader) -> bytes:
    """The batch with its header kept and no records (Kafka's ``writeEmptyHeader``): offsets,
    producer id, epoch, sequence, the transactional and control bits, max timestamp."""
    attributes = header.attributes & (hdr.TIMESTAMP_TYPE_BIT | hdr.TRANSACTIONAL_BIT
                                      | hdr.CONTROL_BIT)
    length = hdr.HEADER_SIZE - hdr.LOG_OVERHEAD
    data = bytearray(hdr.HEADER.pack(
        header.base_offset, length, header.partition_leader_epoch, hdr.MAGIC, 0, attributes,
        header.last_offset_delta, header.max_timestamp, header.max_timestamp,
        header.producer_id, header.producer_epoch, header.base_sequence, 0))
    crc = crc32c(bytes(data[hdr.ATTRIBUTES_POS:]))
    data[hdr.CRC_POS:hdr.CRC_POS + 4] = crc.to_bytes(4, "big")
    return bytes(data)
