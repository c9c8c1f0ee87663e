"""Sparse offset and time indexes of one log segment.

``OffsetIndex`` maps a batch's offset to its byte position in the segment's ``.log`` file; each
entry on disk is 8 bytes: the offset relative to the segment's base offset (i32) and the position
(i32), big-endian. ``TimeIndex`` maps a timestamp to an offset; each entry is 12 bytes: the
timestamp (i64) and the relative offset (i32). Both are sparse: the segment adds an entry once
``index.interval.bytes`` have been appended since the last one.

Storage choice: the files are *appended*, not preallocated. The entries live in memory (two typed
arrays, searched with ``bisect``) and new entries are written to the file only by ``write()``
(called on roll, flush and close) and fsynced by ``flush()``. A crash can therefore leave an index
file shorter than the log; that is harmless, because an index is only trusted for data below the
recovery point (which was flushed together with its index), the segment rescans the tail after the
last entry when it loads, and a segment past the recovery point is rebuilt from its log anyway. An
index that fails its sanity check is rebuilt by the segment.
"""

from __future__ import annotations

import errno
import os
import struct
import sys
from array import array
from bisect import bisect_left, bisect_right

from kafkalite.errors import KafkaStorageError

_OFFSET_ENTRY = struct.Struct(">ii")   # relative offset, position
_TIME_ENTRY = struct.Struct(">qi")     # timestamp, relative offset
_LITTLE = sys.byteorder == "little"


class _Index:
    """Two parallel increasing arrays (``keys``, ``values``) persisted as fixed-size entries."""

    ENTRY = _OFFSET_ENTRY
    KEY_TYPE = "i"
    VALUE_TYPE = "i"

    def __init__(self, path: str, base_offset: int, max_index_bytes: int):
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // self.ENTRY.size)
        self._keys = array(self.KEY_TYPE)
        self._values = array(self.VALUE_TYPE)
        self._persisted = 0      # entries already in the file
        self.corrupt = False     # the file held a torn entry or unsorted entries
        # the file is opened for each operation on it (load, write, fsync, truncate), not held:
        # those happen on roll, flush and close only, and a broker hosting thousands of
        # segments would otherwise hold three descriptors each (EMFILE at 6,661 partitions
        # with ulimit -n 20000; Kafka holds one per segment, its indexes being mapped)
        self._closed = False
        self._on_file(self._load, create=True)

    def _on_file(self, action, create: bool = False):
        """``action(fd)`` on the index file, opened for it and closed after. A closed index
        refuses (as its descriptor would have): a deleted file is never created again."""
        if self._closed:
            raise OSError(errno.EBADF, f"index {self.path} is closed")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT if create else os.O_RDWR, 0o644)
        try:
            return action(fd)
        finally:
            os.close(fd)

    # --- loading --------------------------------------------------------------------------------
    def _load(self, fd: int) -> None:
        size = os.fstat(fd).st_size
        usable = size - size % self.ENTRY.size
        if usable != size:
            self.corrupt = True
        raw = os.pread(fd, usable, 0) if usable else b""
        if len(raw) != usable:
            raise KafkaStorageError(f"short read of index file {self.path}")
        self._decode(raw)
        self._persisted = len(self._keys)
        if not self._is_sorted():
            self.corrupt = True

    def _decode(self, raw: bytes) -> None:
        for key, value in self.ENTRY.iter_unpack(raw):
            self._keys.append(key)
            self._values.append(value)

    def _is_sorted(self) -> bool:
        keys, values = self._keys, self._values
        return all(keys[i] < keys[i + 1] and values[i] <= values[i + 1]
                   for i in range(len(keys) - 1)) and (not values or values[0] >= 0)

    # --- state ----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._keys)

    @property
    def entries(self) -> int:
        return len(self._keys)

    @property
    def is_full(self) -> bool:
        return len(self._keys) >= self.max_entries

    @property
    def size_bytes(self) -> int:
        return len(self._keys) * self.ENTRY.size

    def reset(self) -> None:
        """Drop every entry (memory and file), before a rebuild."""
        del self._keys[:]
        del self._values[:]
        self._truncate_file(0)
        self.corrupt = False

    def _truncate_entries(self, count: int) -> None:
        if count >= len(self._keys):
            return
        del self._keys[count:]
        del self._values[count:]
        if self._persisted > count:
            self._truncate_file(count)

    def _truncate_file(self, count: int) -> None:
        self._on_file(lambda fd: os.ftruncate(fd, count * self.ENTRY.size), create=True)
        self._persisted = count

    def _append(self, key: int, value: int) -> None:
        self._keys.append(key)
        self._values.append(value)

    # --- persistence ----------------------------------------------------------------------------
    def write(self) -> None:
        """Write the entries added since the last write to the file (no fsync)."""
        if self._persisted < len(self._keys):
            self._on_file(self._write_pending, create=True)

    def _write_pending(self, fd: int) -> None:
        count = len(self._keys)
        if self._persisted >= count:
            return
        pack = self.ENTRY.pack
        keys, values = self._keys, self._values
        view = memoryview(b"".join(pack(keys[i], values[i])
                                   for i in range(self._persisted, count)))
        pos = self._persisted * self.ENTRY.size
        while view:
            written = os.pwrite(fd, view, pos)
            view = view[written:]
            pos += written
        self._persisted = count

    def sync_handle(self) -> int:
        """Write pending entries, then a new read-only descriptor of the file, for an fsync on
        another thread (which closes it); -1 when closed."""
        if self._closed:
            return -1
        self.write()
        try:
            return os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:          # never written: nothing to sync
            return -1

    def flush(self) -> None:
        """Write pending entries and fsync the file."""
        def write_and_sync(fd: int) -> None:
            self._write_pending(fd)
            os.fsync(fd)
        self._on_file(write_and_sync, create=True)

    def close(self) -> None:
        if not self._closed:
            try:
                self.write()
            finally:
                self._closed = True

    def close_handlers(self) -> None:
        """Forget the file without writing pending entries (the data dir failed)."""
        self._closed = True

    def delete(self) -> None:
        self._closed = True
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def rename(self, new_path: str) -> None:
        os.rename(self.path, new_path)
        self.path = new_path


class OffsetIndex(_Index):
    """Sparse map offset -> file position; entries strictly increasing in both."""

    ENTRY = _OFFSET_ENTRY

    def _decode(self, raw: bytes) -> None:
        # entries are (i32, i32) big-endian: read them as one int array and de-interleave
        both = array("i")
        both.frombytes(raw)
        if _LITTLE:
            both.byteswap()
        self._keys = both[0::2]
        self._values = both[1::2]

    def _is_sorted(self) -> bool:
        keys, values = self._keys, self._values
        return all(keys[i] < keys[i + 1] and values[i] < values[i + 1]
                   for i in range(len(keys) - 1)) and (not keys or keys[0] >= 0)

    def append(self, offset: int, position: int) -> None:
        """Add an entry; offsets and positions must be strictly increasing."""
        relative = offset - self.base_offset
        if self._keys and (relative <= self._keys[-1] or position <= self._values[-1]):
            raise ValueError(f"index entry ({offset}, {position}) is not after the last entry "
                             f"{self.last_entry} in {self.path}")
        if not 0 <= relative <= 0x7FFFFFFF:
            raise ValueError(f"offset {offset} does not fit in the index of base "
                             f"{self.base_offset}")
        self._append(relative, position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """The entry with the largest offset <= ``offset``, as (offset, position); (base, 0) if
        there is none."""
        i = bisect_right(self._keys, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._keys[i], self._values[i]

    def floor_position(self, position: int) -> int:
        """The largest indexed position <= ``position`` (0 if none): a known batch boundary."""
        i = bisect_right(self._values, position) - 1
        return self._values[i] if i >= 0 else 0

    def entry(self, n: int) -> tuple[int, int]:
        return self.base_offset + self._keys[n], self._values[n]

    @property
    def last_entry(self) -> tuple[int, int]:
        if not self._keys:
            return self.base_offset, 0
        return self.base_offset + self._keys[-1], self._values[-1]

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``."""
        self._truncate_entries(bisect_left(self._keys, offset - self.base_offset))

    def truncate_to_position(self, position: int) -> None:
        """Remove every entry whose position is >= ``position``."""
        self._truncate_entries(bisect_left(self._values, position))

    def sane_for(self, log_size: int) -> bool:
        """Entries sorted, file whole, every position inside the log."""
        return not self.corrupt and (not self._values or self._values[-1] < log_size)


class TimeIndex(_Index):
    """Sparse map timestamp -> offset; timestamps strictly increasing (an entry is added only
    when the segment's max timestamp grows), offsets non-decreasing."""

    ENTRY = _TIME_ENTRY
    KEY_TYPE = "q"
    VALUE_TYPE = "i"

    def maybe_append(self, timestamp: int, offset: int) -> bool:
        """Add (timestamp, offset) if ``timestamp`` is above the last entry's; True if added."""
        if self._keys and timestamp <= self._keys[-1]:
            return False
        relative = offset - self.base_offset
        if self._values and relative < self._values[-1]:
            raise ValueError(f"time index entry ({timestamp}, {offset}) goes back in offsets "
                             f"in {self.path}")
        if not 0 <= relative <= 0x7FFFFFFF:
            raise ValueError(f"offset {offset} does not fit in the time index of base "
                             f"{self.base_offset}")
        self._append(timestamp, relative)
        return True

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """The entry with the largest timestamp <= ``timestamp`` as (timestamp, offset);
        (-1, base_offset) if there is none."""
        i = bisect_right(self._keys, timestamp) - 1
        if i < 0:
            return -1, self.base_offset
        return self._keys[i], self.base_offset + self._values[i]

    def entry(self, n: int) -> tuple[int, int]:
        return self._keys[n], self.base_offset + self._values[n]

    @property
    def last_entry(self) -> tuple[int, int]:
        if not self._keys:
            return -1, self.base_offset
        return self._keys[-1], self.base_offset + self._values[-1]

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``."""
        self._truncate_entries(bisect_left(self._values, offset - self.base_offset))

    def sane_for(self, next_offset: int) -> bool:
        """Entries sorted, file whole, every offset inside the segment."""
        return not self.corrupt and (not self._values
                                     or self.base_offset + self._values[-1] < next_offset)
