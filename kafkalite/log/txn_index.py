"""The aborted transaction index of a segment: ``<20-digit base offset>.txnindex`` (Kafka's
TransactionIndex, ``core/.../log/TransactionIndex.scala`` at 2.8.2).

One fixed-size entry per transaction aborted by a marker written in the segment, in the order
the markers were written: version int16 (0), producer id int64, first offset int64, last offset
int64 (the marker's offset) and the partition's last stable offset when the marker was written,
34 bytes, big-endian. A read_committed Fetch collects the entries overlapping its range to answer
``aborted_transactions``; the consumer skips those producers' records from each first offset on.

Why lazily created: as Kafka's, the file exists only once a segment has an aborted transaction,
so a log without transactions keeps its three files per segment. Why entries are appended
unbuffered: each is one ``write`` at the end, which ``truncate_to`` and recovery can cut back.

Not thread-safe: the Log's one owner (the reactor thread) uses it.
"""

from __future__ import annotations

import os
import struct
from typing import NamedTuple

from kafkalite.errors import CorruptRecordError

TXN_INDEX_SUFFIX = ".txnindex"
CURRENT_VERSION = 0
ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = ENTRY.size  # 34
assert ENTRY_SIZE == 34


class CorruptIndexError(CorruptRecordError):
    """An index file fails its sanity check (Kafka's CorruptIndexException): the segment is
    recovered, which rebuilds it."""


class AbortedTxn(NamedTuple):
    """One ``.txnindex`` entry. ``last_offset`` is the abort marker's offset;
    ``last_stable_offset`` the partition's LSO once that marker was written."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def pack(self) -> bytes:
        return ENTRY.pack(CURRENT_VERSION, self.producer_id, self.first_offset,
                          self.last_offset, self.last_stable_offset)

    @classmethod
    def unpack(cls, buf, pos: int = 0) -> AbortedTxn:
        version, producer_id, first, last, lso = ENTRY.unpack_from(buf, pos)
        if version > CURRENT_VERSION:
            raise CorruptIndexError(f"unexpected aborted transaction version {version}, "
                                    f"current version is {CURRENT_VERSION}")
        return cls(producer_id, first, last, lso)


class TransactionIndex:
    """The ``.txnindex`` of the segment based at ``start_offset``, at ``path``.

    Opening an existing file cuts a partial trailing entry (a crash mid-write: what follows can
    only be appended whole again) and remembers the last entry's offset, so appends keep the
    offsets increasing as Kafka requires.
    """

    def __init__(self, path: str, start_offset: int):
        self.path = path
        self.start_offset = start_offset
        self._fd = -1
        self._size = 0
        self._last_offset: int | None = None
        #: the entries, read on first use and kept in step with the file (fetches read them)
        self._cache: list[AbortedTxn] | None = None
        if os.path.exists(path):
            self._open()
            whole = self._size - self._size % ENTRY_SIZE
            if whole != self._size:
                os.ftruncate(self._fd, whole)
                self._size = whole
            if whole:
                self._last_offset = self._entry_at(whole - ENTRY_SIZE).last_offset

    # --- files ------------------------------------------------------------------------------------
    def _open(self) -> int:
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            self._size = os.fstat(self._fd).st_size
        return self._fd

    @property
    def exists(self) -> bool:
        """Whether the file was created (an entry was ever appended, or it was there)."""
        return self._fd >= 0 or os.path.exists(self.path)

    @property
    def size(self) -> int:
        return self._size

    def __len__(self) -> int:
        return self._size // ENTRY_SIZE

    @property
    def last_offset(self) -> int | None:
        return self._last_offset

    # --- writing ----------------------------------------------------------------------------------
    def append(self, aborted: AbortedTxn) -> None:
        """Add an entry; its last offset must be above the previous entry's (ValueError)."""
        if self._last_offset is not None and self._last_offset >= aborted.last_offset:
            raise ValueError(
                f"the last offset of appended transactions must increase, but "
                f"{aborted.last_offset} is not above {self._last_offset} in {self.path}")
        data = aborted.pack()
        fd = self._open()
        written = os.pwrite(fd, data, self._size)
        if written != ENTRY_SIZE:  # pragma: no cover - a short write on a regular file
            os.ftruncate(fd, self._size)
            raise OSError(f"short write to {self.path}")
        self._size += ENTRY_SIZE
        self._last_offset = aborted.last_offset
        if self._cache is not None:
            self._cache.append(aborted)

    def truncate_to(self, offset: int) -> None:
        """Drop every entry whose last offset is >= ``offset`` (the log was cut there)."""
        for i, aborted in enumerate(self._entries()):
            if aborted.last_offset >= offset:
                position = i * ENTRY_SIZE
                os.ftruncate(self._fd, position)
                self._size = position
                del self._cache[i:]
                self._last_offset = self._cache[-1].last_offset if self._cache else None
                return

    def reset(self) -> None:
        """Remove every entry (the segment is being recovered and will append them again)."""
        if self._fd >= 0 or os.path.exists(self.path):
            os.ftruncate(self._open(), 0)
        self._size = 0
        self._last_offset = None
        self._cache = []

    def flush(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)

    def sync_handle(self) -> int:
        """A duplicate of the descriptor, for an fsync on another thread; -1 when none."""
        return os.dup(self._fd) if self._fd >= 0 else -1

    # --- reading ----------------------------------------------------------------------------------
    def _entry_at(self, position: int) -> AbortedTxn:
        data = os.pread(self._fd, ENTRY_SIZE, position)
        if len(data) != ENTRY_SIZE:
            raise CorruptIndexError(f"{self.path} ends inside the entry at byte {position}")
        return AbortedTxn.unpack(data)

    def _entries(self) -> list[AbortedTxn]:
        """Every entry, oldest first (read from the file once)."""
        if self._cache is None:
            if self._fd < 0 or not self._size:
                self._cache = []
            else:
                data = os.pread(self._fd, self._size, 0)
                if len(data) != self._size:
                    raise CorruptIndexError(f"{self.path} is shorter than its {self._size} bytes")
                self._cache = [AbortedTxn.unpack(data, pos)
                               for pos in range(0, self._size, ENTRY_SIZE)]
        return self._cache

    def all_aborted(self) -> list[AbortedTxn]:
        return list(self._entries())

    def collect_aborted(self, fetch_offset: int,
                        upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """The entries overlapping ``[fetch_offset, upper_bound_offset)`` and whether the search
        is complete (an entry's LSO reached the upper bound: no later segment can hold a
        transaction overlapping the range), as Kafka's ``collectAbortedTxns``."""
        found = []
        for aborted in self._entries():
            if aborted.last_offset >= fetch_offset and aborted.first_offset < upper_bound_offset:
                found.append(aborted)
            if aborted.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False

    def sanity_check(self) -> None:
        """CorruptIndexError if an entry ends before the segment starts (Kafka's check)."""
        for aborted in self._entries():
            if aborted.last_offset < self.start_offset:
                raise CorruptIndexError(
                    f"last offset of aborted transaction {aborted} in index {self.path} is "
                    f"less than start offset {self.start_offset}")

    # --- lifecycle --------------------------------------------------------------------------------
    def rename(self, new_path: str) -> None:
        """Move the file (if it exists) to ``new_path``; the index follows it either way."""
        try:
            if os.path.exists(self.path):
                os.rename(self.path, new_path)
        finally:
            self.path = new_path

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def close_handlers(self) -> None:
        """Close without raising (the data dir failed)."""
        try:
            self.close()
        except OSError:
            pass

    def delete(self) -> None:
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
