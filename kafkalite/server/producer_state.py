"""Idempotent and transactional producers: a partition's producer state (pure, no I/O).

Kafka 2.8's ``ProducerStateManager``. An idempotent producer gets a producer id and epoch
(InitProducerId) and numbers its records per partition. For each producer the partition keeps
its last five batches (sequences and where they were stored), its epoch, the coordinator epoch
of its last transaction marker, and the first offset of its ongoing transaction. A retried batch
that was already written gets its original offsets back instead of being written twice; a gap
is OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch INVALID_PRODUCER_EPOCH.

Transactions: a transactional data batch starts (or continues) the producer's transaction; a
control batch (COMMIT/ABORT marker, written only by the coordinator's WriteTxnMarkers) completes
it and yields a ``CompletedTxn``. The partition's *first unstable offset* is the first offset of
the earliest transaction that is ongoing, or completed with its marker not yet below the high
watermark; the last stable offset (LSO) is min(that, HW): read_committed consumers read below it.

Leaders validate (``origin`` "client": sequences and epochs; "coordinator": epochs only, as the
group coordinator's offset batches and the markers carry no sequence); followers and recovery
replay the same batches (``origin`` "replication": never refused, as Kafka only logs there), so
a new leader has the same table and the same ongoing transactions.

As Kafka, validation works on a copy (``ProducerAppendInfo``) that is applied only after the
append succeeded, so a refused request leaves the table untouched.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

from kafkalite.errors import (InvalidProducerEpochError, InvalidTxnStateError,
                              OutOfOrderSequenceNumberError, TransactionCoordinatorFencedError)
from kafkalite.record.header import CONTROL_BIT, I64, PRODUCER_ID_POS, TRANSACTIONAL_BIT

CACHED_BATCHES = 5
NO_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = (1 << 31) - 1

CLIENT = "client"
COORDINATOR = "coordinator"
REPLICATION = "replication"
ORIGINS = (CLIENT, COORDINATOR, REPLICATION)


def first_producer_id(records) -> int:
    """The producer id of the first batch in ``records`` (-1: not idempotent), cheaply."""
    if len(records) < PRODUCER_ID_POS + I64.size:
        return -1
    return I64.unpack_from(records, PRODUCER_ID_POS)[0]


def is_control(header) -> bool:
    return bool(header.attributes & CONTROL_BIT)


def is_transactional(header) -> bool:
    return bool(header.attributes & TRANSACTIONAL_BIT)


@dataclass
class CachedBatch:
    """One of a producer's last batches (Kafka's BatchMetadata)."""
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int
    timestamp: int = -1

    @property
    def offset_delta(self) -> int:
        return self.last_offset - self.first_offset


class CompletedTxn(NamedTuple):
    """A transaction ended by a marker at ``last_offset`` (Kafka's CompletedTxn)."""
    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass
class ProducerEntry:
    """What the partition knows of one producer (Kafka's ProducerStateEntry)."""
    epoch: int = NO_EPOCH
    batches: deque = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int | None = None

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    def copy(self) -> ProducerEntry:
        return ProducerEntry(self.epoch, deque(self.batches, maxlen=CACHED_BATCHES),
                             self.coordinator_epoch, self.last_timestamp,
                             self.current_txn_first_offset)

    def set_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:            # a new epoch starts with no batches
            self.batches.clear()
            self.epoch = epoch

    def find_duplicate(self, epoch: int, first_sequence: int,
                       last_sequence: int) -> CachedBatch | None:
        if epoch != self.epoch:
            return None
        for cached in self.batches:
            if (cached.first_sequence, cached.last_sequence) == (first_sequence, last_sequence):
                return cached
        return None


def _in_sequence(last_sequence: int, next_sequence: int) -> bool:
    return next_sequence == last_sequence + 1 or (next_sequence == 0
                                                  and last_sequence == INT32_MAX)


class ProducerAppendInfo:
    """One producer's batches of one append, validated against a copy of its entry (Kafka's
    ProducerAppendInfo); ``ProducerStateTable.apply`` makes them the table's."""

    def __init__(self, name: str, producer_id: int, current: ProducerEntry | None, origin: str):
        self.name = name
        self.producer_id = producer_id
        self.current = current if current is not None else ProducerEntry()
        self.origin = origin
        self.entry = self.current.copy()
        self.started: list[int] = []        # first offsets of transactions begun here

    def _check_epoch(self, epoch: int, offset: int) -> None:
        if epoch < self.entry.epoch and self.origin != REPLICATION:
            # Kafka 2.7+ answers INVALID_PRODUCER_EPOCH here (not PRODUCER_FENCED), so the
            # producer may abort its transaction and go on
            raise InvalidProducerEpochError(
                f"epoch {epoch} of producer {self.producer_id} at offset {offset} in "
                f"{self.name} is smaller than the last seen epoch {self.entry.epoch}")

    def _check_sequence(self, epoch: int, first_sequence: int, offset: int) -> None:
        if epoch != self.entry.epoch:
            if first_sequence != 0 and self.entry.epoch != NO_EPOCH:
                raise OutOfOrderSequenceNumberError(
                    f"invalid sequence number for new epoch {epoch} of producer "
                    f"{self.producer_id} at offset {offset} in {self.name}: {first_sequence} "
                    f"(expected 0; current epoch {self.entry.epoch})")
            return
        if self.entry.batches:
            last = self.entry.last_sequence
        elif epoch == self.current.epoch:
            last = self.current.last_sequence
        else:
            last = NO_SEQUENCE
        # no epoch known (its records were deleted): any sequence is accepted, as Kafka does
        if self.current.epoch != NO_EPOCH and not _in_sequence(last, first_sequence):
            raise OutOfOrderSequenceNumberError(
                f"out of order sequence number for producer {self.producer_id} at offset "
                f"{offset} in {self.name}: {first_sequence} (incoming), {last} (current end)")

    def append_data(self, epoch: int, first_sequence: int, last_sequence: int, timestamp: int,
                    first_offset: int, last_offset: int, transactional: bool) -> None:
        self._check_epoch(epoch, first_offset)
        if self.origin == CLIENT:
            self._check_sequence(epoch, first_sequence, first_offset)
        entry = self.entry
        entry.set_epoch(epoch)
        entry.batches.append(CachedBatch(first_sequence, last_sequence, first_offset,
                                         last_offset, timestamp))
        entry.last_timestamp = timestamp
        if entry.current_txn_first_offset is not None and not transactional:
            raise InvalidTxnStateError(
                f"expected a transactional write from producer {self.producer_id} at offset "
                f"{first_offset} in {self.name}: its transaction is ongoing")
        if entry.current_txn_first_offset is None and transactional:
            entry.current_txn_first_offset = first_offset
            self.started.append(first_offset)

    def append_marker(self, commit: bool, coordinator_epoch: int, epoch: int, offset: int,
                      timestamp: int) -> CompletedTxn | None:
        self._check_epoch(epoch, offset)
        entry = self.entry
        if entry.coordinator_epoch > coordinator_epoch and self.origin != REPLICATION:
            raise TransactionCoordinatorFencedError(
                f"coordinator epoch {coordinator_epoch} of the marker for producer "
                f"{self.producer_id} at offset {offset} in {self.name} is older than "
                f"{entry.coordinator_epoch} (a zombie coordinator)")
        completed = None
        if entry.current_txn_first_offset is not None:   # an empty transaction changes nothing
            completed = CompletedTxn(self.producer_id, entry.current_txn_first_offset, offset,
                                     not commit)
        entry.set_epoch(epoch)
        entry.current_txn_first_offset = None
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = timestamp
        return completed


class ProducerStateTable:
    def __init__(self, name: str = "partition"):
        self.name = name
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}        # first offset -> producer id
        self.unreplicated: dict[int, tuple[int, int]] = {}   # first offset -> (pid, last offset)

    # --- validation and update (leaders, followers, recovery) ----------------------------------
    def find_duplicate(self, producer_id: int, epoch: int, first_sequence: int,
                       record_count: int) -> CachedBatch | None:
        entry = self.producers.get(producer_id)
        if entry is None:
            return None
        return entry.find_duplicate(epoch, first_sequence, first_sequence + record_count - 1)

    def prepare(self, producer_id: int, origin: str) -> ProducerAppendInfo:
        return ProducerAppendInfo(self.name, producer_id, self.producers.get(producer_id),
                                  origin)

    def apply(self, info: ProducerAppendInfo) -> None:
        """Make a validated append's producer state the table's (Kafka's update)."""
        self.producers[info.producer_id] = info.entry
        for first_offset in info.started:
            self.ongoing[first_offset] = info.producer_id

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO once ``completed`` is complete (for its ``.txnindex`` entry): the first
        offset of the earliest other ongoing transaction, else the offset after the marker."""
        others = [first for first, pid in self.ongoing.items()
                  if pid != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def complete(self, completed: CompletedTxn) -> None:
        """The transaction's marker is written: it stays unstable until the HW passes it."""
        if self.ongoing.pop(completed.first_offset, None) is None:
            raise ValueError(f"{self.name}: completing {completed}, which was not started")
        self.unreplicated[completed.first_offset] = (completed.producer_id,
                                                     completed.last_offset)

    # --- the last stable offset ------------------------------------------------------------------
    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The first offset of the earliest undecided transaction, or of a decided one whose
        marker is at or above ``high_watermark`` (forgotten once below: Kafka's
        onHighWatermarkUpdated)."""
        if self.unreplicated:
            for first in [f for f, (_p, last) in self.unreplicated.items()
                          if last < high_watermark]:
                del self.unreplicated[first]
        if not self.ongoing:
            return min(self.unreplicated) if self.unreplicated else None
        if not self.unreplicated:
            return min(self.ongoing)
        return min(min(self.ongoing), min(self.unreplicated))

    # --- expiry ---------------------------------------------------------------------------------
    def remove_expired(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget producers with no open transaction whose last write is ``expiration_ms``
        old (Kafka's removeExpiredProducers, ``transactional.id.expiration.ms``): their next
        batch is taken as a new producer's. Returns their ids."""
        expired = [pid for pid, entry in self.producers.items()
                   if entry.current_txn_first_offset is None
                   and now_ms - entry.last_timestamp >= expiration_ms]
        for pid in expired:
            del self.producers[pid]
        return expired

    # --- truncation and rebuilding ---------------------------------------------------------------
    def clear(self) -> None:
        self.producers.clear()
        self.ongoing.clear()
        self.unreplicated.clear()

    def load_entry(self, producer_id: int, entry: ProducerEntry) -> None:
        """One producer from a snapshot (Kafka's loadProducerEntry)."""
        self.producers[producer_id] = entry
        if entry.current_txn_first_offset is not None:
            self.ongoing[entry.current_txn_first_offset] = producer_id


class BatchInfo(NamedTuple):
    """What the producer state needs of one batch: its header, where it is (or will be)
    stored, and for a control batch its marker ``(commit, coordinator_epoch)`` (None for a
    control batch whose record was cleaned away, or for a data batch)."""
    header: object
    base_offset: int
    marker: tuple[bool, int] | None = None


class Analysis(NamedTuple):
    infos: dict            # producer id -> ProducerAppendInfo
    completed: list        # CompletedTxn, in marker order
    duplicate: CachedBatch | None


def analyze(table: ProducerStateTable, batches, origin: str) -> Analysis:
    """Validate the batches of one append against ``table`` without changing it (Kafka's
    analyzeAndValidateProducerState): raises the producer errors; for a client's retried batch
    returns the one already written (``duplicate``). Batches without a producer id are
    skipped."""
    infos: dict[int, ProducerAppendInfo] = {}
    completed: list[CompletedTxn] = []
    for batch in batches:
        header = batch.header
        producer_id = header.producer_id
        if producer_id < 0:
            continue
        if origin == CLIENT:
            duplicate = table.find_duplicate(producer_id, header.producer_epoch,
                                             header.base_sequence, header.record_count)
            if duplicate is not None:
                return Analysis(infos, completed, duplicate)
        info = infos.get(producer_id)
        if info is None:
            info = infos[producer_id] = table.prepare(producer_id, origin)
        last_offset = batch.base_offset + header.last_offset_delta
        if is_control(header):
            if batch.marker is not None:
                commit, coordinator_epoch = batch.marker
                done = info.append_marker(commit, coordinator_epoch, header.producer_epoch,
                                          batch.base_offset, header.max_timestamp)
                if done is not None:
                    completed.append(done)
        else:
            last_sequence = (header.base_sequence + header.last_offset_delta
                             if header.base_sequence >= 0 else NO_SEQUENCE)
            if last_sequence > INT32_MAX:
                last_sequence -= INT32_MAX + 1     # sequences wrap (Kafka's incrementSequence)
            info.append_data(header.producer_epoch, header.base_sequence, last_sequence,
                             header.max_timestamp, batch.base_offset, last_offset,
                             is_transactional(header))
    return Analysis(infos, completed, None)
