"""Opening and recovering a log segment: the ``LogSegment`` methods that check its files
against each other when it is opened, and rebuild its indexes from the ``.log`` file.

``SegmentLoading`` is mixed into ``LogSegment`` (a module of its own to keep ``segment`` short):

* ``_load``: an existing segment opened cheaply -- sane indexes are trusted and only the bytes
  after the last index entry are scanned; anything inconsistent means ``recover``;
* ``_check_txn_index``: Kafka's sanity check of the ``.txnindex`` on loading;
* ``recover``: every batch verified (length, CRC, increasing offsets), both indexes rebuilt, the
  file cut at the first invalid or torn batch; the txn index is emptied, to be rebuilt by the
  loader from the producer state (``txn_recovery``);
* ``_load_after_truncate``: the in-memory offsets and timestamps after a truncation.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from kafkalite.errors import CorruptRecordError
from kafkalite.log.txn_index import CorruptIndexError
from kafkalite.record import header as hdr
from kafkalite.record.header import F_BASE_OFFSET, F_LAST_DELTA, F_LENGTH, F_MAX_TS

if TYPE_CHECKING:
    from kafkalite.log.index import OffsetIndex, TimeIndex
    from kafkalite.log.txn_index import TransactionIndex

# the segment's logger: these messages keep the logger name they have always had
log = logging.getLogger("kafkalite.log.segment")

_OVERHEAD = hdr.LOG_OVERHEAD
_MAX_RELATIVE = 0x7FFFFFFF


class SegmentLoading:
    """Mixed into ``LogSegment``, whose state it works on (declared here, set by it)."""

    base_offset: int
    config: object
    log_path: str
    index: OffsetIndex
    time_index: TimeIndex
    txn_index: TransactionIndex
    truncated_bytes: int
    recovered: bool
    _fd: int
    _size: int
    _next_offset: int
    _tail_hint: tuple[int, int]
    _max_timestamp: int
    _offset_of_max_timestamp: int
    _bytes_since_index: int

    def _load(self) -> None:
        """Open an existing segment cheaply: trust sane indexes, rescan after the last entry."""
        if not self.index.sane_for(self._size):
            log.warning("offset index of %s is corrupt or stale; rebuilding", self.log_path)
            self.truncated_bytes = self.recover()
            return
        last_offset, last_pos = self.index.last_entry
        max_ts, offset_of_max = self.time_index.last_entry
        next_offset = self.base_offset
        if self.index.entries:
            next_offset = last_offset
        try:
            for pos, f in self._batches(last_pos):
                if pos == last_pos and self.index.entries and f[F_BASE_OFFSET] != last_offset:
                    raise _error(pos, f"the last index entry says offset {last_offset} is at "
                                      f"byte {pos}, the batch there starts at "
                                      f"{f[F_BASE_OFFSET]}")
                next_offset = f[F_BASE_OFFSET] + f[F_LAST_DELTA] + 1
                if f[F_MAX_TS] > max_ts:
                    max_ts = f[F_MAX_TS]
                    offset_of_max = next_offset - 1
        except CorruptRecordError as exc:
            log.warning("segment %s is damaged after its last index entry (%s); recovering",
                        self.log_path, exc.message)
            self.truncated_bytes = self.recover()
            return
        self._next_offset = next_offset
        if not self.time_index.sane_for(next_offset):
            log.warning("time index of %s is corrupt; rebuilding", self.log_path)
            self.truncated_bytes = self.recover()
            return
        self._max_timestamp = max_ts
        self._offset_of_max_timestamp = offset_of_max
        self._bytes_since_index = self._size - last_pos if self.index.entries else self._size
        self._update_full()

    def _check_txn_index(self) -> None:
        """Kafka's sanity check of the txn index on loading: a bad one means recovery."""
        if self.recovered:
            return
        try:
            self.txn_index.sanity_check()
        except CorruptIndexError as exc:
            log.warning("%s; recovering %s", exc.message, self.log_path)
            self.truncated_bytes = self.recover()

    def recover(self) -> int:
        """Verify every batch (length, CRC, offsets increasing), rebuild both indexes, and cut the
        file at the first invalid or torn batch. Returns the number of bytes truncated. The txn
        index is emptied: its entries need the producer state, so the loader rebuilds it
        (``txn_recovery``)."""
        self.recovered = True
        self.index.reset()
        self.time_index.reset()
        self.txn_index.reset()
        file_size = os.fstat(self._fd).st_size
        self._size = file_size
        self._next_offset = self.base_offset
        self._tail_hint = (-1, 0)            # positions are re-verified: no hint survives
        self._max_timestamp = -1
        self._offset_of_max_timestamp = self.base_offset
        self._bytes_since_index = 0
        valid = 0
        interval = self.config.index_interval_bytes
        try:
            for pos, f in self._batches(0, file_size, verify=True):
                base = f[F_BASE_OFFSET]
                last = base + f[F_LAST_DELTA]
                if base < self._next_offset or last - self.base_offset > _MAX_RELATIVE:
                    raise _error(pos, f"batch at byte {pos} has offsets {base}..{last}, "
                                      f"expected them to start at or after {self._next_offset}")
                self._index_batch(pos, base, last, f[F_MAX_TS], _OVERHEAD + f[F_LENGTH],
                                  interval)
                self._next_offset = last + 1
                valid = pos + _OVERHEAD + f[F_LENGTH]
        except CorruptRecordError as exc:
            log.warning("recovery of %s: %s; truncating at byte %d", self.log_path, exc.message,
                        exc.position)
        truncated = file_size - valid
        if truncated:
            os.ftruncate(self._fd, valid)
            os.fsync(self._fd)
        self._size = valid
        self.index.write()
        self.time_index.write()
        self._update_full()
        return truncated

    def _load_after_truncate(self) -> None:
        last_offset, last_pos = self.index.last_entry
        max_ts, offset_of_max = self.time_index.last_entry
        next_offset = last_offset if self.index.entries else self.base_offset
        for _pos, f in self._batches(last_pos):
            next_offset = f[F_BASE_OFFSET] + f[F_LAST_DELTA] + 1
            if f[F_MAX_TS] > max_ts:
                max_ts, offset_of_max = f[F_MAX_TS], next_offset - 1
        self._next_offset = next_offset
        self._max_timestamp = max_ts
        self._offset_of_max_timestamp = offset_of_max
        self._bytes_since_index = self._size - last_pos if self.index.entries else self._size
        self._update_full()


def _error(position: int, message: str) -> CorruptRecordError:
    exc = CorruptRecordError(message)
    exc.position = position
    return exc


def _corrupt(position: int, message: str):
    raise _error(position, message)

