"""One log segment: ``<20-digit base offset>.log`` plus its ``.index``, ``.timeindex`` and, once
a transaction aborted in it, ``.txnindex`` (``txn_index``).

The ``.log`` file is a plain concatenation of record batches exactly as they travel on the wire.
The segment keeps one file descriptor opened ``O_APPEND``: appends are unbuffered ``write``/
``writev`` calls (one system call per append, so a failed write can be cut back with
``ftruncate``), and reads use ``os.pread``, which never moves the append position. ``flush()``
fsyncs the log and writes and fsyncs both indexes.

Index entries point at batch *base* offsets and batch start positions; one is added for a batch
when more than ``index.interval.bytes`` were appended since the last entry (Kafka's rule). The time
index gets an entry at the same moments, holding the segment's running max timestamp and the last
offset of the batch that first reached it, plus a final one when the segment is sealed.

Opening an existing segment and recovering it are ``segment_loading``'s (``SegmentLoading``,
which ``LogSegment`` inherits).

Scanning (``_batches``) reads the file in chunks and unpacks only batch headers with
``header.HEADER``; the records are never decoded here, except by ``find_offset_by_timestamp`` which
decodes the one batch it lands in to return the exact record.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from typing import Callable, Iterator, Sequence

from kafkalite.errors import CorruptRecordError, KafkaStorageError
from kafkalite.log.index import OffsetIndex, TimeIndex
from kafkalite.log.segment_loading import SegmentLoading, _corrupt
from kafkalite.log.txn_index import TXN_INDEX_SUFFIX, TransactionIndex
from kafkalite.record import header as hdr
from kafkalite.record.legacy_convert import MIN_SIZE, chunk_fields
from kafkalite.record.header import (  # positions in the tuple HEADER.unpack_from returns
    F_ATTRIBUTES,
    F_BASE_OFFSET,
    F_LAST_DELTA,
    F_LENGTH,
    F_MAGIC,
    F_MAX_TS,
)

log = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"

_HEADER = hdr.HEADER
_HEADER_SIZE = hdr.HEADER_SIZE
_OVERHEAD = hdr.LOG_OVERHEAD
_MIN_BATCH = hdr.HEADER_SIZE
_MAGIC = hdr.MAGIC
_MAGIC_POS = hdr.MAGIC_POS
_MIN_ENTRY = min(MIN_SIZE.values())  # magic 0/1 messages may be shorter than a v2 header
SCAN_CHUNK = 16 * 1024          # bytes read per pread while walking headers
RECOVER_CHUNK = 4 * 1024 * 1024  # bytes read per pread while verifying CRCs
_MAX_RELATIVE = 0x7FFFFFFF
_IOV_MAX = 1024


def _now_ms() -> int:
    return int(time.time() * 1000)


def filename_prefix(base_offset: int) -> str:
    """Kafka's 20-digit zero-padded base offset."""
    return f"{base_offset:020d}"


def segment_paths(dir: str, base_offset: int, suffix: str = "") -> tuple[str, str, str]:
    prefix = os.path.join(dir, filename_prefix(base_offset))
    return (prefix + LOG_SUFFIX + suffix, prefix + INDEX_SUFFIX + suffix,
            prefix + TIME_INDEX_SUFFIX + suffix)


def txn_index_path(dir: str, base_offset: int, suffix: str = "") -> str:
    return os.path.join(dir, filename_prefix(base_offset)) + TXN_INDEX_SUFFIX + suffix


class LogSegment(SegmentLoading):
    """A segment of a partition's log. Not thread-safe: one owner (the reactor thread) at a time.

    Opening an existing segment trusts its indexes after a sanity check and rescans only the bytes
    after the last index entry (to learn the next offset and max timestamp); ``recover=True``
    instead verifies every batch (``recover()``), as the Log does for segments past its recovery
    point after an unclean shutdown. ``truncated_bytes`` tells what opening cut off.
    """

    def __init__(self, dir: str, base_offset: int, config, clock: Callable[[], int] | None = None,
                 recover: bool = False, suffix: str = ""):
        self.dir = dir
        self.base_offset = base_offset
        self.config = config
        self._clock = clock or _now_ms
        self.log_path, index_path, time_index_path = segment_paths(dir, base_offset, suffix)
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            self.index = OffsetIndex(index_path, base_offset, config.segment_index_bytes)
            self.time_index = TimeIndex(time_index_path, base_offset, config.segment_index_bytes)
            self.txn_index = TransactionIndex(txn_index_path(dir, base_offset, suffix),
                                              base_offset)
        except BaseException:
            os.close(self._fd)
            raise
        self._size = os.fstat(self._fd).st_size
        self._next_offset = base_offset
        # where the last append began, and the segment's next offset before it: every batch
        # before that position ends below that offset, so a read from it or later (a consumer
        # or follower at the log's end, woken by the append) scans from there, not from the
        # index entry before it (tens of batches apart with small batches); (-1, 0) when unset.
        # A truncation keeps it true: it removes a suffix, so either the hinted append survives
        # whole or every offset at or past the hint is past the end
        self._tail_hint = (-1, 0)
        self._max_timestamp = -1
        self._offset_of_max_timestamp = base_offset
        self._bytes_since_index = 0
        #: an index is full: the Log must roll before the next append
        self.full = False
        self.created_ms = self._clock()
        self.truncated_bytes = 0
        #: recover() re-verified this segment (its txn index was emptied, to be rebuilt)
        self.recovered = False
        self._closed = False
        if recover:
            self.truncated_bytes = self.recover()
        else:
            if self._size or self.index.entries or self.time_index.entries:
                self._load()
            self._check_txn_index()

    # --- properties -------------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """Bytes of whole batches in the .log file."""
        return self._size

    @property
    def next_offset(self) -> int:
        """One past the last offset stored here (the base offset while empty)."""
        return self._next_offset

    @property
    def largest_timestamp(self) -> int:
        """The max timestamp of any batch here (-1 if none has one)."""
        return self._max_timestamp

    @property
    def offset_of_max_timestamp(self) -> int:
        return self._offset_of_max_timestamp

    @property
    def is_empty(self) -> bool:
        return self._size == 0

    def index_full(self) -> bool:
        return self.full

    def can_hold(self, last_offset: int) -> bool:
        """Whether ``last_offset`` fits the 32-bit relative offsets of the indexes."""
        return 0 <= last_offset - self.base_offset <= _MAX_RELATIVE

    def last_modified_ms(self) -> int:
        return int(os.stat(self.log_path).st_mtime * 1000)

    def __repr__(self) -> str:
        return (f"LogSegment(base={self.base_offset}, next={self._next_offset}, "
                f"size={self._size})")

    # --- scanning ---------------------------------------------------------------------------------
    def _batches(self, pos: int, end: int | None = None,
                 verify: bool = False) -> Iterator[tuple[int, tuple]]:
        """Yield ``(position, header_fields)`` for each batch in ``[pos, end)``.

        Raises CorruptRecordError (with ``.position``) at the first batch that is malformed or
        runs past ``end`` and, with ``verify``, whose CRC is wrong.
        """
        end = self._size if end is None else end
        fd = self._fd
        chunk = RECOVER_CHUNK if verify else SCAN_CHUNK
        unpack = _HEADER.unpack_from
        need = 0
        while pos < end:
            want = min(max(chunk, need), end - pos)
            buf = os.pread(fd, want, pos)
            n = len(buf)
            if n < want:
                _corrupt(pos + n, f"file ends at byte {pos + n}, before the expected {end}")
            off = 0
            need = 0
            while n - off > _MAGIC_POS:
                if buf[off + _MAGIC_POS] < _MAGIC:  # a magic 0/1 message: one entry
                    try:
                        fields, need = chunk_fields(buf, off, end - pos - off, verify)
                    except CorruptRecordError as exc:
                        _corrupt(pos + off, exc.message)
                    if fields is None:
                        break
                    yield pos + off, fields
                    off += _OVERHEAD + fields[F_LENGTH]
                    continue
                if n - off < _HEADER_SIZE:
                    break
                fields = unpack(buf, off)
                size = _OVERHEAD + fields[F_LENGTH]
                if fields[F_MAGIC] != _MAGIC or size < _MIN_BATCH:
                    _corrupt(pos + off, f"no valid batch header at byte {pos + off}")
                if pos + off + size > end:
                    _corrupt(pos + off, f"batch at byte {pos + off} declares {size} bytes, "
                                        f"only {end - pos - off} present")
                if verify:
                    if off + size > n:
                        need = size
                        break
                    try:
                        hdr.check_batch(buf, off)
                    except CorruptRecordError as exc:
                        _corrupt(pos + off, exc.message)
                yield pos + off, fields
                off += size
            if off == 0:
                if n < _HEADER_SIZE:
                    _corrupt(pos, f"torn batch header at byte {pos}")
                need = max(need, _HEADER_SIZE)
                if need <= want:  # pragma: no cover - defensive
                    _corrupt(pos, f"cannot parse batch at byte {pos}")
                continue
            pos += off

    def _translate(self, offset: int, start: int | None = None) -> tuple[int, tuple] | None:
        """The first batch whose last offset is >= ``offset``: (position, fields), or None."""
        if offset >= self._next_offset:
            return None
        if start is None:
            hint_offset, hint_position = self._tail_hint
            if 0 <= hint_offset <= offset:
                start = hint_position
            else:
                _, start = self.index.lookup(offset)
        for pos, fields in self._batches(start):
            if fields[F_BASE_OFFSET] + fields[F_LAST_DELTA] >= offset:
                return pos, fields
        return None

    def position_of(self, offset: int) -> int:
        """Byte position of the batch containing (or first after) ``offset``; ``size`` if none."""
        found = self._translate(offset)
        return self._size if found is None else found[0]

    def batch_headers(self, start_position: int = 0):
        """Yield ``(position, BatchHeader)`` for every batch from ``start_position`` (tools)."""
        for pos, fields in self._batches(start_position):
            yield pos, hdr.BatchHeader(*fields)

    def _update_full(self) -> None:
        self.full = self.index.is_full or self.time_index.is_full

    def _index_batch(self, pos: int, base: int, last: int, max_ts: int, size: int,
                     interval: int) -> None:
        if max_ts > self._max_timestamp:
            self._max_timestamp = max_ts
            self._offset_of_max_timestamp = last
        if self._bytes_since_index > interval:
            index = self.index
            index.append(base, pos)
            self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
            self._bytes_since_index = 0
            if len(index) >= index.max_entries or self.time_index.is_full:
                self.full = True
        self._bytes_since_index += size

    # --- appending --------------------------------------------------------------------------------
    def append(self, data, last_offset: int, max_timestamp: int, offset_of_max_timestamp: int,
               batches: Sequence[tuple[int, int, int, int]] | None = None,
               size: int | None = None) -> int:
        """Append whole batches; returns the position they start at.

        ``data`` is a bytes-like object or a list of them (written with one ``writev``);
        ``size`` may give its total length. ``batches`` lists ``(position_in_data,
        base_offset, last_offset, max_timestamp)`` per batch so that index entries land on
        batch boundaries (the time index records a batch's last offset with its max timestamp,
        as Kafka does without decoding records); without it ``data`` (then one bytes-like
        object) is indexed as one unit starting at its first batch's base offset, with
        ``max_timestamp`` at ``offset_of_max_timestamp``. On an OSError the file is cut back to
        its previous size and the error re-raised.
        """
        if self._closed:
            raise KafkaStorageError(f"segment {self.log_path} is closed")
        start = self._size
        is_list = type(data) is list or type(data) is tuple
        total = size if size is not None else sum(map(len, data)) if is_list else len(data)
        if total == 0:
            return start
        if start + total > 0x7FFFFFFF:
            raise KafkaStorageError(f"segment {self.log_path} would exceed 2 GiB")
        try:
            self._write(data, total, is_list)
        except OSError:
            self._cut_back(start)
            raise
        self._size = start + total
        interval = self.config.index_interval_bytes
        if batches is None:
            if is_list:
                raise ValueError("a list of buffers needs its batches listed")
            first = int.from_bytes(memoryview(data)[:8], "big", signed=True)
            self._index_batch(start, first, offset_of_max_timestamp, max_timestamp, total,
                              interval)
        elif len(batches) == 1:
            _rel, base, last, max_ts = batches[0]
            self._index_batch(start, base, last, max_ts, total, interval)
        else:
            index_batch = self._index_batch
            ends = [b[0] for b in batches[1:]]
            ends.append(total)
            for (rel, base, last, max_ts), end in zip(batches, ends):
                index_batch(start + rel, base, last, max_ts, end - rel, interval)
        self._tail_hint = (self._next_offset, start)
        self._next_offset = last_offset + 1
        return start

    def _write(self, data, total: int, is_list: bool) -> None:
        fd = self._fd
        if is_list:
            if len(data) <= _IOV_MAX:
                written = os.writev(fd, data)
                if written == total:
                    return
                data = b"".join(data)[written:]
            else:
                data = b"".join(data)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            if written <= 0:  # pragma: no cover - write(2) reports errors by raising
                raise OSError(errno.EIO, "write returned 0")
            view = view[written:]

    def _cut_back(self, size: int) -> None:
        try:
            os.ftruncate(self._fd, size)
        except OSError as exc:  # the segment can no longer be trusted
            self._closed = True
            log.error("cannot truncate %s back to %d bytes after a failed write: %s",
                      self.log_path, size, exc)

    # --- reading ----------------------------------------------------------------------------------
    def read(self, start_offset: int, max_bytes: int, max_position: int | None = None,
             min_one: bool = True) -> bytes:
        """Stored bytes of whole batches from the one containing ``start_offset``, at most
        ``max_bytes`` -- but at least one whole batch with ``min_one`` -- and never past
        ``max_position``. Empty if nothing here is at or after ``start_offset``."""
        return self.read_slice(start_offset, max_bytes, max_position, min_one)[1]

    def read_slice(self, start_offset: int, max_bytes: int, max_position: int | None = None,
                   min_one: bool = True) -> tuple[int, bytes]:
        """Like ``read``, also returning the start position (-1 if no batch was found)."""
        found = self._translate(start_offset)
        if found is None:
            return -1, b""
        start, fields = found
        limit = self._size if max_position is None else min(max_position, self._size)
        if start >= limit:
            return start, b""
        want = min(max_bytes, limit - start)
        data = os.pread(self._fd, want, start) if want > 0 else b""
        if len(data) == limit - start:
            return start, data  # everything up to a batch boundary
        cut = self._whole_batches(data, start)
        if cut == 0:
            if not min_one:
                return start, b""
            return start, os.pread(self._fd, _OVERHEAD + fields[F_LENGTH], start)
        return start, data if cut == len(data) else data[:cut]

    def _whole_batches(self, data: bytes, start: int) -> int:
        """Length of the prefix of ``data`` (read at ``start``) that holds whole batches."""
        n = len(data)
        off = self.index.floor_position(start + n) - start
        if off < 0:
            off = 0
        peek = hdr.peek_size
        while n - off >= _OVERHEAD:
            size = peek(data, off)
            if size < _MIN_ENTRY or off + size > n:
                break
            off += size
        return off

    def read_all(self) -> bytes:
        return os.pread(self._fd, self._size, 0) if self._size else b""

    # --- timestamps -------------------------------------------------------------------------------
    def find_batch_by_timestamp(self, timestamp: int,
                                min_offset: int = 0) -> tuple[int, tuple] | None:
        """The first batch whose max timestamp is >= ``timestamp`` and whose last offset is >=
        ``min_offset``: (position, header fields), or None."""
        if self._max_timestamp < timestamp:
            return None
        _, ts_offset = self.time_index.lookup(timestamp)
        _, pos = self.index.lookup(max(ts_offset, min_offset))
        for p, f in self._batches(pos):
            if f[F_MAX_TS] >= timestamp and f[F_BASE_OFFSET] + f[F_LAST_DELTA] >= min_offset:
                return p, f
        return None

    def find_offset_by_timestamp(self, timestamp: int,
                                 min_offset: int = 0) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= ``timestamp`` and offset >=
        ``min_offset``, or None (Kafka's ListOffsets by time, within this segment)."""
        found = self.find_batch_by_timestamp(timestamp, min_offset)
        if found is None:
            return None
        pos, f = found
        base = f[F_BASE_OFFSET]
        if f[F_ATTRIBUTES] & hdr.TIMESTAMP_TYPE_BIT:  # LogAppendTime: all records share it
            return max(base, min_offset), f[F_MAX_TS]
        data = os.pread(self._fd, _OVERHEAD + f[F_LENGTH], pos)
        try:
            from kafkalite.record.entries import read_entry   # a v2 batch or magic 0/1 entry
            _, records = read_entry(data, 0)
        except (ImportError, CorruptRecordError) as exc:
            log.debug("cannot decode batch at %d of %s (%s); answering at batch level", pos,
                      self.log_path, exc)
            return max(base, min_offset), f[F_MAX_TS]
        for record in records:
            if record.timestamp >= timestamp and record.offset >= min_offset:
                return record.offset, record.timestamp
        return max(base, min_offset), f[F_MAX_TS]  # pragma: no cover - header/records disagree

    # --- truncation, flushing, lifecycle ----------------------------------------------------------
    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is >= ``offset`` (a batch containing ``offset``
        goes entirely). Returns the number of bytes removed."""
        self.txn_index.truncate_to(offset)
        found = self._translate(offset)
        if found is None:
            return 0
        pos, fields = found
        removed = self._size - pos
        os.ftruncate(self._fd, pos)
        self._size = pos
        self.index.truncate_to_position(pos)
        self.time_index.truncate_to(fields[F_BASE_OFFSET])
        self._max_timestamp = -1
        self._offset_of_max_timestamp = self.base_offset
        self._load_after_truncate()
        return removed

    def seal(self) -> None:
        """The segment stops being active: record its final max timestamp and write indexes."""
        if self._max_timestamp >= 0:
            self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
        self.index.write()
        self.time_index.write()

    def flush(self) -> None:
        """fsync the log file, then write and fsync the indexes."""
        os.fsync(self._fd)
        self.index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def sync_handles(self, into: list[int]) -> None:
        """Add to ``into`` new descriptors of the log file and its indexes (pending index
        entries written first), for ``flush``'s fsyncs on another thread, which closes them: a
        duplicate stays valid however the segment is closed or deleted meanwhile."""
        into.append(os.dup(self._fd))
        for index in (self.index, self.time_index, self.txn_index):
            handle = index.sync_handle()
            if handle >= 0:
                into.append(handle)

    def close(self) -> None:
        if self._fd < 0:
            return
        try:
            self.seal()
        finally:
            self.index.close()
            self.time_index.close()
            self.txn_index.close()
            os.close(self._fd)
            self._fd = -1
            self._closed = True

    def close_handlers(self) -> None:
        """Close the descriptors without writing anything (the data dir failed)."""
        self._closed = True
        self.index.close_handlers()
        self.time_index.close_handlers()
        self.txn_index.close_handlers()
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            try:
                os.close(fd)
            except OSError:
                pass

    def rename_to_deleted(self) -> None:
        """Add the ``.deleted`` suffix to every file (open descriptors stay valid, so readers
        in flight finish)."""
        self._add_suffix(DELETED_SUFFIX)

    def _add_suffix(self, suffix: str) -> None:
        os.rename(self.log_path, self.log_path + suffix)
        self.log_path += suffix
        self.index.rename(self.index.path + suffix)
        self.time_index.rename(self.time_index.path + suffix)
        self.txn_index.rename(self.txn_index.path + suffix)

    def change_suffix(self, old: str, new: str) -> None:
        """Rename the files from ``*<old>`` to ``*<new>`` (e.g. ``.swap`` -> '')."""
        def swap(path: str) -> str:
            if old and not path.endswith(old):
                raise ValueError(f"{path} does not end with {old}")
            return (path[:-len(old)] if old else path) + new
        new_log = swap(self.log_path)
        os.rename(self.log_path, new_log)
        self.log_path = new_log
        self.index.rename(swap(self.index.path))
        self.time_index.rename(swap(self.time_index.path))
        self.txn_index.rename(swap(self.txn_index.path))

    def delete(self) -> None:
        """Close and remove the files."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._closed = True
        self.index.delete()
        self.time_index.delete()
        self.txn_index.delete()
        try:
            os.unlink(self.log_path)
        except FileNotFoundError:
            pass

