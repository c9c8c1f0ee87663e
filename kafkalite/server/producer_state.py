"""Idempotent producers: the broker's sequence checks per partition (pure, no I/O).

An idempotent producer gets a producer id and epoch (InitProducerId) and numbers its records per
partition. For each producer the partition remembers its last five batches (first and last
sequence, and where they were stored). A retried batch that was already written gets its original
offsets back instead of being written twice; a gap in the sequence is OUT_OF_ORDER_SEQUENCE_NUMBER;
an older epoch is fenced (INVALID_PRODUCER_EPOCH). Leaders check; followers and recovery replay the
batch headers to keep the same table, so a new leader deduplicates retries as well.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kafkalite.errors import InvalidProducerEpochError, OutOfOrderSequenceNumberError
from kafkalite.record.header import I64, PRODUCER_ID_POS

CACHED_BATCHES = 5


def first_producer_id(records) -> int:
    """The producer id of the first batch in ``records`` (-1: not idempotent), cheaply."""
    if len(records) < PRODUCER_ID_POS + I64.size:
        return -1
    return I64.unpack_from(records, PRODUCER_ID_POS)[0]


@dataclass
class CachedBatch:
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int


@dataclass
class ProducerEntry:
    epoch: int
    batches: deque = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1


class ProducerStateTable:
    def __init__(self):
        self.producers: dict[int, ProducerEntry] = {}

    def check(self, producer_id: int, epoch: int, first_sequence: int,
              record_count: int) -> CachedBatch | None:
        """Before appending: the cached batch if this one is a duplicate, None if it may be
        appended; raises on a fenced epoch or a sequence gap."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return None
        if epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {producer_id} epoch {epoch} is older than the current {entry.epoch}: "
                "a newer instance of this producer took over")
        if epoch > entry.epoch:
            if first_sequence != 0:
                raise OutOfOrderSequenceNumberError(
                    f"producer {producer_id} starts epoch {epoch} at sequence {first_sequence}, "
                    "expected 0")
            return None
        last_sequence = first_sequence + record_count - 1
        for cached in entry.batches:
            if (cached.first_sequence, cached.last_sequence) == (first_sequence, last_sequence):
                return cached
        if first_sequence != entry.last_sequence + 1:
            raise OutOfOrderSequenceNumberError(
                f"producer {producer_id} sent sequence {first_sequence}, expected "
                f"{entry.last_sequence + 1}: records in between were lost")
        return None

    def update(self, producer_id: int, epoch: int, first_sequence: int, record_count: int,
               first_offset: int, last_offset: int) -> None:
        """After an append (or when replaying the log): remember the batch."""
        entry = self.producers.get(producer_id)
        if entry is None or epoch > entry.epoch:
            entry = self.producers[producer_id] = ProducerEntry(epoch)
        elif epoch < entry.epoch:
            return
        entry.batches.append(CachedBatch(first_sequence, first_sequence + record_count - 1,
                                         first_offset, last_offset))

    def replay(self, header) -> None:
        """Feed one stored batch header (followers, recovery)."""
        if header.producer_id >= 0 and header.base_sequence >= 0:
            self.update(header.producer_id, header.producer_epoch, header.base_sequence,
                        header.record_count, header.base_offset, header.last_offset)

    def truncate(self, offset: int) -> None:
        """Forget batches at or after ``offset`` (the log was cut there)."""
        for producer_id in list(self.producers):
            entry = self.producers[producer_id]
            kept = [b for b in entry.batches if b.last_offset < offset]
            entry.batches.clear()
            entry.batches.extend(kept)
