"""A partition's log: an ordered list of segments in ``<data dir>/<topic>-<partition>/``.

Appends go to the last (active) segment, which is rolled when it would pass ``segment.bytes``,
is older than ``segment.ms`` or has a full index. The leader path validates every batch of a
produce request (lengths, CRCs, codec -- never the records) before writing any, then assigns
offsets by patching each batch's ``base_offset`` (and ``partition_leader_epoch``): both sit
outside the CRC, so the batch bodies are written straight from the request buffer with one
``writev`` and no copy. With ``message.timestamp.type=LogAppendTime`` the attributes and
``max_timestamp`` must change too, and they are inside the CRC, so that path copies the request
once into a bytearray and recomputes each batch's CRC (``header.set_log_append_time``).

Reads return stored bytes of whole batches, located through the sparse offset index; the high
watermark (``max_offset``) excludes every batch whose last offset is at or past it.

Recovery (in the constructor): stray ``.deleted``/``.cleaned`` files are removed, ``.swap`` files
(a finished compaction) replace the segment they were made from, index files without a log are
dropped and missing indexes rebuilt. After an unclean shutdown every segment from the one holding
the recovery point on is re-verified; the first bad or torn batch and everything after it --
including later segments -- is removed, as Kafka does.

Segments leaving the log (retention, truncation, compaction) are renamed ``*.deleted`` and their
files removed ``file.delete.delay.ms`` later (``delete_expired_files``, run by the LogManager) so
a read in flight on another thread never sees its descriptor closed.

Disk failures: any OSError of the log's files is reported to the ``LogDirFailureChannel`` (the
data dir goes offline) and raised as KafkaStorageError. From then on every Log of that dir refuses
appends, reads and maintenance, and the LogManager closes them with ``close_handlers`` (no write).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from bisect import bisect_right
from dataclasses import dataclass
from typing import Callable

from crc32c import crc32c

from kafkalite.config import LONG_MAX
from kafkalite.errors import (
    CorruptRecordError,
    IllegalStateError,
    KafkaStorageError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    UnsupportedLogFormatError,
)
from kafkalite.log.checkpoint import fsync_dir
from kafkalite.log.dir_failure import normalize_dir, storage_error_hint
from kafkalite.log.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    segment_paths,
)
from kafkalite.log.timestamps import check_create_times
from kafkalite.record import header as hdr
from kafkalite.record.batch import validate_batch_bytes
from kafkalite.record.compression import SUPPORTED as _SUPPORTED_CODECS
from kafkalite.record.header import (  # positions in the tuple HEADER.unpack_from returns
    F_ATTRIBUTES,
    F_BASE_OFFSET,
    F_CRC,
    F_EPOCH,
    F_LAST_DELTA,
    F_LENGTH,
    F_MAGIC,
    F_MAX_TS,
    F_RECORD_COUNT,
)
from kafkalite.record.legacy import is_msgpack_batch
from kafkalite.record.recompress import converts, recompress, target_codec

log = logging.getLogger(__name__)

# base_offset, batch_length, partition_leader_epoch: the patchable prefix, outside the CRC
_PREFIX = hdr.PATCHABLE
_PREFIX_SIZE = _PREFIX.size  # 16
_MAX_RELATIVE = 0x7FFFFFFF  # offsets relative to a segment's base are int32
_COPY_ABOVE_BATCHES = 256    # more batches than this: one copy beats hundreds of iovecs

_UNPACK = hdr.HEADER.unpack_from
_HEADER_SIZE = hdr.HEADER_SIZE
_OVERHEAD = hdr.LOG_OVERHEAD
_CRC_FROM = hdr.ATTRIBUTES_POS
_MAGIC = hdr.MAGIC


def _now_ms() -> int:
    return int(time.time() * 1000)


def parse_topic_partition(name: str) -> tuple[str, int] | None:
    """``my-topic-3`` -> ("my-topic", 3): split at the LAST '-'. None if it does not parse."""
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        return None
    return topic, int(partition)


def log_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


class UnexpectedAppendOffsetError(IllegalStateError):
    """A follower tried to append batches that do not continue the log."""

    def __init__(self, message: str, first_offset: int, log_end_offset: int):
        super().__init__(message)
        self.first_offset = first_offset
        self.log_end_offset = log_end_offset


@dataclass(slots=True)
class AppendInfo:
    """What an append wrote. ``log_append_time`` is -1 unless the topic uses LogAppendTime.
    ``first_offset``/``last_offset`` are -1 for an empty append."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time: int
    record_count: int
    num_bytes: int
    offset_of_max_timestamp: int = -1
    log_start_offset: int = 0

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


@dataclass(slots=True)
class FetchData:
    """Stored bytes of whole batches (``records``) read from ``first_offset`` on."""

    records: bytes
    first_offset: int
    log_start_offset: int
    log_end_offset: int

    @property
    def data(self) -> bytes:
        return self.records

    def __len__(self) -> int:
        return len(self.records)


@dataclass(slots=True)
class CompactionResult:
    segments: int
    bytes_before: int
    bytes_after: int
    records_removed: int


class Log:
    """One partition's segmented log. Not thread-safe: call it from one thread (the reactor)."""

    def __init__(self, dir, config, clock: Callable[[], int] | None = None,
                 recovery_point: int = 0, clean_shutdown: bool = False,
                 log_start_offset: int | None = None, log_dir_failure_channel=None):
        self.dir = os.fspath(dir)
        self.config = config
        self._clock = clock or _now_ms
        #: the data dir holding this partition's directory (the unit that goes offline)
        self.parent_dir = normalize_dir(os.path.dirname(os.path.normpath(self.dir)))
        self._failure_channel = log_dir_failure_channel
        parsed = parse_topic_partition(os.path.basename(os.path.normpath(self.dir)))
        self.topic, self.partition = parsed if parsed else (None, None)
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self._roll_flush_offset: int | None = None
        self._cleaned_up_to = -1
        self._closed = False
        #: bytes cut off by recovery when this log was opened
        self.recovery_truncated_bytes = 0
        os.makedirs(self.dir, exist_ok=True)
        self.recovery_point = recovery_point
        self._load(clean_shutdown, log_start_offset)
        self._last_flush_ms = self._clock()

    # --- loading and recovery -------------------------------------------------------------------
    def _load(self, clean_shutdown: bool, log_start_offset: int | None) -> None:
        bases: set[int] = set()
        indexes: list[tuple[int, str]] = []
        swaps: list[int] = []
        for name in sorted(os.listdir(self.dir)):
            path = os.path.join(self.dir, name)
            if name.endswith(DELETED_SUFFIX) or name.endswith(CLEANED_SUFFIX):
                log.info("%s: removing stray file %s", self.name, name)
                _unlink(path)
                continue
            if name.endswith(SWAP_SUFFIX):
                stem = name[:-len(SWAP_SUFFIX)]
                if stem.endswith(LOG_SUFFIX) and _is_base(stem[:-len(LOG_SUFFIX)]):
                    swaps.append(int(stem[:-len(LOG_SUFFIX)]))
                else:  # swapped indexes are rebuilt from the swapped log
                    _unlink(path)
                continue
            stem, ext = os.path.splitext(name)
            if not _is_base(stem):
                continue
            if ext == LOG_SUFFIX:
                bases.add(int(stem))
            elif ext in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                indexes.append((int(stem), path))
        for base in swaps:
            self._complete_swap(base)
            bases.add(base)
        for base, path in indexes:
            if base not in bases:
                log.info("%s: removing index file without a log: %s", self.name, path)
                _unlink(path)

        ordered = sorted(bases)
        first_to_recover = len(ordered)
        if not clean_shutdown and ordered:
            first_to_recover = max(0, bisect_right(ordered, self.recovery_point) - 1)
        for i, base in enumerate(ordered):
            _log_path, index_path, time_index_path = segment_paths(self.dir, base)
            missing = not (os.path.exists(index_path) and os.path.exists(time_index_path))
            recover = i >= first_to_recover or missing
            segment = LogSegment(self.dir, base, self.config, self._clock, recover=recover)
            if segment.truncated_bytes:
                self.recovery_truncated_bytes += segment.truncated_bytes
                later = ordered[i + 1:]
                log.warning("%s: recovery truncated %d bytes of segment %d at offset %d%s",
                            self.name, segment.truncated_bytes, base, segment.next_offset,
                            f"; deleting {len(later)} later segment(s) {later}" if later else "")
                for later_base in later:
                    for path in segment_paths(self.dir, later_base):
                        self.recovery_truncated_bytes += _size_of(path) \
                            if path.endswith(LOG_SUFFIX) else 0
                        _unlink(path)
                self._add_segment(segment)
                break
            self._add_segment(segment)
        self._refuse_old_record_format()

        if not self._segments:
            start = max(log_start_offset or 0, 0)
            self._add_segment(LogSegment(self.dir, start, self.config, self._clock))
            self.recovery_point = start
        leo = self.log_end_offset
        start = self._segments[0].base_offset
        if log_start_offset is not None:
            start = max(start, log_start_offset)
        self.log_start_offset = min(start, leo)
        self.recovery_point = min(max(self.recovery_point, 0), leo)

    def _refuse_old_record_format(self) -> None:
        """Refuse a partition written in kafkalite's old msgpack record format: its headers and
        CRCs still pass every check, so it would otherwise fail only when a consumer decodes it.
        The first batch of the first non-empty segment tells (one read per partition)."""
        segment = next((s for s in self._segments if s.size), None)
        if segment is None:
            return
        first = segment.read(segment.base_offset, 1)
        if first and is_msgpack_batch(first):
            self.close()
            raise UnsupportedLogFormatError(
                f"log dir {self.dir} holds batches in kafkalite's old msgpack record format "
                f"(before Kafka's v2 records); this version does not migrate them: delete the "
                f"directory or keep the old kafkalite")

    def _complete_swap(self, base: int) -> None:
        """A compaction finished writing ``<base>.log.swap`` before a crash: put it in place of
        the segment it was made from."""
        swapped = LogSegment(self.dir, base, self.config, self._clock, recover=True,
                             suffix=SWAP_SUFFIX)
        for path in segment_paths(self.dir, base):
            _unlink(path)
        swapped.change_suffix(SWAP_SUFFIX, "")
        swapped.close()
        log.info("%s: completed the interrupted compaction of segment %d", self.name, base)

    def _add_segment(self, segment: LogSegment) -> None:
        i = bisect_right(self._bases, segment.base_offset)
        self._bases.insert(i, segment.base_offset)
        self._segments.insert(i, segment)

    # --- properties -------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        if self.topic is not None:
            return f"{self.topic}-{self.partition}"
        return os.path.basename(os.path.normpath(self.dir))

    @property
    def log_end_offset(self) -> int:
        """The next offset to be written (LEO)."""
        return self._segments[-1].next_offset

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def segments(self) -> list[LogSegment]:
        """The segments, oldest first (a copy)."""
        return list(self._segments)

    @property
    def size(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def unflushed_messages(self) -> int:
        return self.log_end_offset - self.recovery_point

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def offline(self) -> bool:
        """Closed, or in a data dir that failed: nothing can be done with this log any more."""
        channel = self._failure_channel
        return self._closed or (channel is not None and channel.is_offline(self.parent_dir))

    def update_config(self, config) -> None:
        self.config = config
        for segment in self._segments:
            segment.config = config

    def __repr__(self) -> str:
        return (f"Log({self.name}, start={self.log_start_offset}, end={self.log_end_offset}, "
                f"segments={len(self._segments)})")

    # --- appending --------------------------------------------------------------------------------
    def append(self, records, assign_offsets: bool = True,
               leader_epoch: int | None = None) -> AppendInfo:
        """Validate and append one or more whole batches.

        Leader path (``assign_offsets=True``): offsets continue from the log end offset, each
        batch must look like a producer's (``record_count == last_offset_delta + 1``), and
        ``leader_epoch`` (when given) is stamped into every batch. Follower path
        (``assign_offsets=False``): the batches keep their offsets, which must start at or after
        the log end offset and increase (UnexpectedAppendOffsetError otherwise).

        Nothing is written unless every batch is valid: CorruptRecordError for a damaged batch,
        MessageTooLargeError for one over ``max.message.bytes``, InvalidRecordError for a
        malformed producer batch. An OSError while writing becomes KafkaStorageError and the
        partial write is cut back.
        """
        self._check_open()
        view = memoryview(records)
        if type(records) is not bytes and (view.ndim != 1 or view.itemsize != 1):
            view = view.cast("B")
        batches_in = _scan_request(view, assign_offsets)
        if (assign_offsets and self.config.message_timestamp_type == "CreateTime"
                and self.config.message_timestamp_difference_max_ms < LONG_MAX):
            check_create_times(view, batches_in, self._clock(),
                               self.config.message_timestamp_difference_max_ms)
        codec = target_codec(self.config.compression_type) if assign_offsets else None
        if codec is not None and any(converts(f[F_ATTRIBUTES], codec)
                                     for _p, _s, f in batches_in):
            # the topic's compression.type differs from the producer's codec: the leader stores
            # the batches re-encoded (Kafka's LogValidator); followers copy the leader's bytes
            view = memoryview(recompress(view, codec))
            batches_in = _scan_request(view, assign_offsets)
        if not batches_in:
            return AppendInfo(-1, -1, -1, -1, 0, 0, -1, self.log_start_offset)
        if (len(batches_in) == 1 and assign_offsets
                and self.config.message_timestamp_type != "LogAppendTime"):
            return self._append_one(view, batches_in[0][2], leader_epoch)
        max_message = self.config.max_message_bytes
        for _pos, size, _f in batches_in:
            if size > max_message:
                raise MessageTooLargeError(
                    f"batch of {size} bytes exceeds max.message.bytes={max_message} "
                    f"of {self.name}")

        total = len(view)
        leo = self._segments[-1].next_offset
        # followers keep the leader's timestamps; only a leader stamps LogAppendTime
        log_append_time = (assign_offsets
                           and self.config.message_timestamp_type == "LogAppendTime")
        now = self._clock() if log_append_time else -1
        batches = []  # (position in request, base offset, last offset, max timestamp)
        if assign_offsets:
            next_offset = leo
            for pos, _size, f in batches_in:
                last = next_offset + f[F_LAST_DELTA]
                batches.append((pos, next_offset, last, now if log_append_time else
                                f[F_MAX_TS]))
                next_offset = last + 1
        else:
            expected = leo
            for pos, _size, f in batches_in:
                base = f[F_BASE_OFFSET]
                if base < expected:
                    if pos == 0:
                        raise UnexpectedAppendOffsetError(
                            f"{self.name}: follower append starts at offset {base}, "
                            f"below the log end offset {leo}", base, leo)
                    raise UnexpectedAppendOffsetError(
                        f"{self.name}: batch at byte {pos} has base offset {base}, "
                        f"expected at least {expected} (offsets must increase)", base, leo)
                last = base + f[F_LAST_DELTA]
                batches.append((pos, base, last, f[F_MAX_TS]))
                expected = last + 1

        # the data to write: patched prefixes + untouched bodies, or one patched copy
        if log_append_time:
            buf = bytearray(view)
            for pos, base, _last, _ts in batches:
                hdr.set_base_offset(buf, pos, base)
                if leader_epoch is not None:
                    hdr.set_partition_leader_epoch(buf, pos, leader_epoch)
                hdr.set_log_append_time(buf, pos, now)
            data = buf
        elif not assign_offsets and leader_epoch is None:
            data = view
        elif len(batches) > _COPY_ABOVE_BATCHES:
            buf = bytearray(view)
            for pos, base, _last, _ts in batches:
                hdr.set_base_offset(buf, pos, base)
                if leader_epoch is not None:
                    hdr.set_partition_leader_epoch(buf, pos, leader_epoch)
            data = buf
        else:
            pack = _PREFIX.pack
            data = []
            for (pos, base, _last, _ts), (_p, size, f) in zip(batches, batches_in):
                epoch = f[F_EPOCH] if leader_epoch is None else leader_epoch
                data.append(pack(base, f[F_LENGTH], epoch))
                data.append(view[pos + _PREFIX_SIZE:pos + size])

        first_offset = batches[0][1]
        last_offset = batches[-1][2]
        if len(batches) == 1:
            max_ts = batches[0][3]
            offset_of_max = last_offset
        else:
            max_ts, offset_of_max = -1, first_offset
            for _p, _base, last, ts in batches:
                if ts > max_ts:
                    max_ts, offset_of_max = ts, last

        try:
            segment = self._maybe_roll(total, first_offset, last_offset)
            segment.append(data, last_offset, max_ts, offset_of_max, batches, total)
        except OSError as exc:
            raise self._storage_error(exc, f"append {total} bytes to") from exc

        if last_offset + 1 - self.recovery_point >= self.config.flush_messages:
            self.flush()
        count = 0
        for _pos, _size, f in batches_in:
            count += f[F_RECORD_COUNT]
        return AppendInfo(first_offset, last_offset, max_ts, now, count, total, offset_of_max,
                          self.log_start_offset)

    def _append_one(self, view: memoryview, f: tuple, leader_epoch: int | None) -> AppendInfo:
        """The common case of ``append``: one producer batch, CreateTime."""
        size = len(view)
        config = self.config
        if size > config.max_message_bytes:
            raise MessageTooLargeError(
                f"batch of {size} bytes exceeds max.message.bytes={config.max_message_bytes} "
                f"of {self.name}")
        base = self._segments[-1]._next_offset
        last = base + f[F_LAST_DELTA]
        max_ts = f[F_MAX_TS]
        data = [_PREFIX.pack(base, f[F_LENGTH],
                             f[F_EPOCH] if leader_epoch is None else leader_epoch),
                view[_PREFIX_SIZE:]]
        try:
            segment = self._maybe_roll(size, base, last)
            segment.append(data, last, max_ts, last, ((0, base, last, max_ts),), size)
        except OSError as exc:
            raise self._storage_error(exc, f"append {size} bytes to") from exc
        if last + 1 - self.recovery_point >= config.flush_messages:
            self.flush()
        return AppendInfo(base, last, max_ts, -1, f[F_RECORD_COUNT], size, last,
                          self.log_start_offset)

    def _maybe_roll(self, size: int, first_offset: int, last_offset: int) -> LogSegment:
        segment = self._segments[-1]
        config = self.config
        used = segment._size
        if (last_offset - segment.base_offset > _MAX_RELATIVE
                or used and (used > config.segment_bytes - size or segment.full
                             or self._clock() - segment.created_ms > config.segment_ms)):
            return self.roll(first_offset)
        return segment

    def roll(self, new_base_offset: int | None = None) -> LogSegment:
        """Start a new active segment at ``new_base_offset`` (default: the log end offset).
        An empty active segment is replaced rather than kept. The rolled segment is flushed by
        the LogManager's next flush pass."""
        self._check_open()
        leo = self.log_end_offset
        base = leo if new_base_offset is None else new_base_offset
        active = self._segments[-1]
        replace_empty = active.size == 0
        if replace_empty and active.base_offset == base:
            return active
        if base < leo:
            raise IllegalStateError(f"{self.name}: cannot roll at {base}, below the log end "
                                    f"offset {leo}")
        log_path = segment_paths(self.dir, base)[0]
        if os.path.exists(log_path) and os.path.getsize(log_path) > 0:
            raise KafkaStorageError(f"{self.name}: cannot roll, {log_path} already exists")
        try:
            if not replace_empty:
                active.seal()
            segment = LogSegment(self.dir, base, self.config, self._clock)
        except OSError as exc:  # nothing changed yet: the old active segment stays active
            raise self._storage_error(exc, f"roll a segment at offset {base} for") from exc
        if replace_empty:  # an empty active segment is replaced, not kept
            self._bases.pop()
            self._segments.pop()
            active.delete()
        self._add_segment(segment)
        fsync_dir(self.dir)
        if not replace_empty:
            self._roll_flush_offset = max(self._roll_flush_offset or 0, base)
        log.debug("%s: rolled new segment at offset %d", self.name, base)
        return segment

    # --- reading ----------------------------------------------------------------------------------
    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_batch: bool = True) -> FetchData:
        """Whole batches from the one containing ``offset``, at most ``max_bytes`` (but at least
        one batch with ``min_one_batch``), only batches whose last offset is below
        ``max_offset`` (the high watermark). OffsetOutOfRangeError below the log start or above
        the log end; empty at the log end. KafkaStorageError once the log's dir is offline."""
        self._check_open()
        try:
            return self._read(offset, max_bytes, max_offset, min_one_batch)
        except OSError as exc:
            raise self._storage_error(exc, "read") from exc

    def _read(self, offset: int, max_bytes: int, max_offset: int | None,
              min_one_batch: bool) -> FetchData:
        segments = self._segments
        leo = segments[-1].next_offset
        if offset < self.log_start_offset or offset > leo:
            raise OffsetOutOfRangeError(
                f"offset {offset} is out of range for {self.name}: the log holds "
                f"[{self.log_start_offset}, {leo})")
        limit = leo if max_offset is None or max_offset > leo else max_offset
        if offset >= limit:
            return FetchData(b"", offset, self.log_start_offset, leo)
        i = bisect_right(self._bases, offset) - 1
        if i < 0:
            i = 0
        parts = []
        remaining = max_bytes
        count = len(segments)
        while i < count:
            segment = segments[i]
            last_segment = limit < segment.next_offset
            max_position = segment.position_of(limit) if last_segment else None
            start, data = segment.read_slice(offset, remaining, max_position,
                                             min_one_batch and not parts)
            if data:
                parts.append(data)
                remaining -= len(data)
                # more only if this segment was read to its end and room is left
                if start + len(data) < segment.size or remaining <= 0:
                    break
            elif start >= 0:
                break  # a batch exists here but did not fit
            if last_segment:
                break
            i += 1
        records = parts[0] if len(parts) == 1 else b"".join(parts)
        return FetchData(records, offset, self.log_start_offset, leo)

    def find_offset_by_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record whose timestamp is >= ``timestamp`` (Kafka's
        ListOffsets by time), or None if every record is older."""
        start = self.log_start_offset
        for segment in self._segments:
            if segment.largest_timestamp >= timestamp and segment.next_offset > start:
                found = segment.find_offset_by_timestamp(timestamp, start)
                if found is not None:
                    return found
        return None

    # --- truncation and log start ---------------------------------------------------------------
    def truncate_to(self, offset: int) -> bool:
        """Remove everything at and after ``offset`` (a batch containing it goes entirely).
        Returns True if anything was removed."""
        self._check_open()
        if offset < 0:
            raise ValueError(f"cannot truncate {self.name} to negative offset {offset}")
        leo = self.log_end_offset
        if offset >= leo:
            return False
        log.info("%s: truncating to offset %d (log end was %d)", self.name, offset, leo)
        if offset < self._segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        try:
            doomed = [s for s in self._segments if s.base_offset > offset]
            self._remove_segments(doomed, allow_all=True)
            self._segments[-1].truncate_to(offset)
        except OSError as exc:
            raise self._storage_error(exc, f"truncate to offset {offset}") from exc
        leo = self.log_end_offset
        self.recovery_point = min(self.recovery_point, leo)
        self.log_start_offset = min(self.log_start_offset, leo)
        if self._roll_flush_offset is not None and self._roll_flush_offset > leo:
            self._roll_flush_offset = None
        self._cleaned_up_to = min(self._cleaned_up_to, leo)
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and start empty at ``offset`` (a follower far behind the leader's
        log start)."""
        self._check_open()
        log.info("%s: truncating fully and starting at offset %d", self.name, offset)
        try:
            self._remove_segments(list(self._segments), allow_all=True)
            self._add_segment(LogSegment(self.dir, offset, self.config, self._clock))
            fsync_dir(self.dir)
        except OSError as exc:
            raise self._storage_error(exc, f"truncate fully to offset {offset}") from exc
        self.log_start_offset = offset
        self.recovery_point = offset
        self._roll_flush_offset = None
        self._cleaned_up_to = -1

    def delete_records_before(self, offset: int) -> list[int]:
        """Advance the log start offset to ``offset`` (DeleteRecords) and delete the segments
        wholly below it. Returns the deleted segments' base offsets."""
        self._check_open()
        if offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"cannot move the log start of {self.name} to {offset}, past the log end "
                f"{self.log_end_offset}")
        if offset > self.log_start_offset:
            self.log_start_offset = offset
        return self.delete_old_segments(self._clock(), retention=False)

    # --- retention and compaction ---------------------------------------------------------------
    def delete_old_segments(self, now_ms: int | None = None, retention: bool = True) -> list[int]:
        """Delete the oldest segments that are past ``retention.ms`` (by their largest
        timestamp), over ``retention.bytes`` (oldest first), or wholly below the log start
        offset. Only a prefix of the log goes, never the active segment. Returns their base
        offsets."""
        self._check_open()
        now = self._clock() if now_ms is None else now_ms
        config = self.config
        apply = retention and config.delete
        retention_ms = config.retention_ms if apply else -1
        diff = None
        if apply and config.retention_bytes >= 0:
            diff = self.size - config.retention_bytes
        segments = self._segments
        doomed = []
        for i in range(len(segments) - 1):
            segment = segments[i]
            expired = retention_ms >= 0 and now - _segment_time(segment) > retention_ms
            oversize = diff is not None and diff - segment.size >= 0
            below_start = segments[i + 1].base_offset <= self.log_start_offset
            if not (expired or oversize or below_start):
                break
            doomed.append(segment)
            if diff is not None:
                diff -= segment.size
        if not doomed:
            return []
        bases = [s.base_offset for s in doomed]
        reasons = "retention" if retention else "log start offset"
        log.info("%s: deleting segment(s) %s (%s)", self.name, bases, reasons)
        try:
            self._remove_segments(doomed)
        except OSError as exc:
            raise self._storage_error(exc, "delete old segments of") from exc
        self.log_start_offset = max(self.log_start_offset, self._segments[0].base_offset)
        return bases

    def _remove_segments(self, doomed: list[LogSegment], allow_all: bool = False) -> None:
        if not doomed:
            return
        if not allow_all and doomed[-1] is self._segments[-1]:
            raise IllegalStateError("the active segment cannot be deleted")
        ids = {id(s) for s in doomed}
        keep = [s for s in self._segments if id(s) not in ids]
        self._segments = keep
        self._bases = [s.base_offset for s in keep]
        delay = self.config.file_delete_delay_ms
        now = self._clock()
        for segment in doomed:
            if delay <= 0:
                segment.delete()
            else:
                segment.rename_to_deleted()
                self._pending_deletes.append((now + delay, segment))

    def delete_expired_files(self, now_ms: int | None = None) -> int:
        """Remove ``.deleted`` files whose delay has passed; returns how many segments went."""
        now = self._clock() if now_ms is None else now_ms
        due = [s for t, s in self._pending_deletes if t <= now]
        if not due:
            return 0
        self._pending_deletes = [(t, s) for t, s in self._pending_deletes if t > now]
        try:
            for segment in due:
                segment.delete()
        except OSError as exc:
            raise self._storage_error(exc, "remove deleted segment files of") from exc
        return len(due)

    def dirty_ratio(self) -> float:
        """Share of the non-active bytes not yet compacted."""
        inactive = self._segments[:-1]
        total = sum(s.size for s in inactive)
        if not total:
            return 0.0
        dirty = sum(s.size for s in inactive if s.next_offset > self._cleaned_up_to)
        return dirty / total

    def compact(self, now_ms: int | None = None, force: bool = False) -> CompactionResult | None:
        """Keep only the newest record per key in the non-active segments (cleanup.policy
        compact). Tombstones (null value) that are the newest for their key stay for
        ``delete.retention.ms`` after their batch's max timestamp. Records without a key are
        kept. Each segment is rewritten on its own (same base offset), batches wholly kept are
        copied byte for byte, partly kept ones re-encoded with their codec. Runs only when the
        dirty ratio reaches ``min.cleanable.dirty.ratio`` unless ``force``. Returns None if
        nothing was done."""
        self._check_open()
        try:
            return self._compact(now_ms, force)
        except OSError as exc:
            raise self._storage_error(exc, "compact") from exc

    def _compact(self, now_ms: int | None, force: bool) -> CompactionResult | None:
        from kafkalite.record.batch import read_batch, rebuild_batch

        now = self._clock() if now_ms is None else now_ms
        inactive = self._segments[:-1]
        if not inactive:
            return None
        if not force and self.dirty_ratio() < self.config.min_cleanable_dirty_ratio:
            return None
        latest: dict[bytes, int] = {}
        for segment in inactive:
            data = segment.read_all()
            pos = 0
            while pos < len(data):
                header, records = read_batch(data, pos, verify_crc=False)
                for record in records:
                    if record.key is not None:
                        latest[record.key] = record.offset
                pos += header.size
        horizon = now - self.config.delete_retention_ms
        result = CompactionResult(0, 0, 0, 0)
        for segment in inactive:
            data = segment.read_all()
            chunks: list[bytes] = []
            batches = []
            out_pos = 0
            removed = 0
            pos = 0
            while pos < len(data):
                header, records = read_batch(data, pos, verify_crc=False)
                keep = [r for r in records
                        if r.key is None or (latest.get(r.key) == r.offset
                                             and (r.value is not None
                                                  or header.max_timestamp >= horizon))]
                removed += len(records) - len(keep)
                if len(keep) == len(records):
                    chunk = bytes(data[pos:pos + header.size])
                elif keep:
                    chunk = rebuild_batch(header, keep, header.compression)
                else:
                    chunk = b""
                if chunk:
                    fields = hdr.parse_header(chunk)
                    batches.append((out_pos, fields.base_offset, fields.last_offset,
                                    fields.max_timestamp))
                    chunks.append(chunk)
                    out_pos += len(chunk)
                pos += header.size
            result.bytes_before += segment.size
            if removed == 0:
                result.bytes_after += segment.size
                continue
            self._replace_segment(segment, chunks, batches)
            result.segments += 1
            result.records_removed += removed
            result.bytes_after += out_pos
        self._cleaned_up_to = inactive[-1].next_offset if inactive else self._cleaned_up_to
        log.info("%s: compacted %d segment(s), %d -> %d bytes, %d records removed", self.name,
                 result.segments, result.bytes_before, result.bytes_after,
                 result.records_removed)
        return result

    def _replace_segment(self, old: LogSegment, chunks: list[bytes], batches: list) -> None:
        """Swap in a rewritten copy of ``old``: write ``.cleaned``, fsync, rename to ``.swap``
        (the commit point: recovery completes it), retire the old files, drop the suffix."""
        base = old.base_offset
        cleaned = LogSegment(self.dir, base, self.config, self._clock, suffix=CLEANED_SUFFIX)
        try:
            if chunks:
                max_ts = max(b[3] for b in batches)
                offset_of_max = next(b[2] for b in batches if b[3] == max_ts)
                cleaned.append(b"".join(chunks), batches[-1][2], max_ts, offset_of_max,
                               batches)
            cleaned.seal()
            cleaned.flush()
            # the copy keeps the old file's mtime, as Kafka's cleaner does: retention times a
            # segment left empty by its mtime, which must not restart at every compaction
            modified = os.stat(old.log_path).st_mtime_ns
            os.utime(cleaned.log_path, ns=(modified, modified))
            cleaned.change_suffix(CLEANED_SUFFIX, SWAP_SUFFIX)
            fsync_dir(self.dir)
        except BaseException:
            cleaned.delete()
            raise
        i = self._segments.index(old)
        old.rename_to_deleted()
        cleaned.change_suffix(SWAP_SUFFIX, "")
        fsync_dir(self.dir)
        self._segments[i] = cleaned
        delay = self.config.file_delete_delay_ms
        if delay <= 0:
            old.delete()
        else:
            self._pending_deletes.append((self._clock() + delay, old))

    # --- flushing ---------------------------------------------------------------------------------
    def flush(self, up_to: int | None = None) -> None:
        """fsync every segment holding data in [recovery point, ``up_to``) (default: the log
        end) and advance the recovery point to ``up_to``."""
        self._check_open()
        leo = self.log_end_offset
        target = leo if up_to is None else min(up_to, leo)
        if target <= self.recovery_point:
            self._last_flush_ms = self._clock()
            return
        try:
            for segment in self._segments:
                if segment.base_offset < target and segment.next_offset > self.recovery_point:
                    segment.flush()
                elif segment.base_offset >= target:
                    break
        except OSError as exc:  # the recovery point stays: what it covers was fsynced before
            raise self._storage_error(exc, "flush") from exc
        self.recovery_point = target
        self._last_flush_ms = self._clock()
        if self._roll_flush_offset is not None and self._roll_flush_offset <= target:
            self._roll_flush_offset = None

    def flush_rolled(self) -> bool:
        """Flush what a roll left behind (Kafka flushes a rolled segment at once). True if it
        flushed."""
        if self._closed or self._roll_flush_offset is None:
            return False
        self.flush(self._roll_flush_offset)
        return True

    def maybe_flush(self, now_ms: int | None = None) -> bool:
        """Flush what a roll left behind, or everything when ``flush.ms`` has passed since the
        last flush. Called by the LogManager's flush task. True if it flushed."""
        if self._closed:
            return False
        now = self._clock() if now_ms is None else now_ms
        target = None
        if self._roll_flush_offset is not None:
            target = self._roll_flush_offset
        if self.unflushed_messages > 0 and now - self._last_flush_ms >= self.config.flush_ms:
            target = self.log_end_offset
        if target is None:
            return False
        self.flush(target)
        return True

    # --- lifecycle --------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise KafkaStorageError(f"log {self.name} is closed")
        channel = self._failure_channel
        if channel is not None and channel.is_offline(self.parent_dir):
            raise KafkaStorageError(
                f"{self.name} is in the offline log dir {self.parent_dir} "
                f"({channel.failure_of(self.parent_dir)})")

    def _storage_error(self, exc: OSError, action: str) -> KafkaStorageError:
        """Report an I/O failure to the log dir failure channel (the data dir goes offline)
        and return the error to raise."""
        message = f"cannot {action} {self.name}: {storage_error_hint(exc, self.parent_dir)}"
        if self._failure_channel is not None:
            self._failure_channel.maybe_add_offline_log_dir(self.parent_dir, message, exc)
        return KafkaStorageError(message)

    def close(self) -> None:
        """Close every segment (indexes written, not fsynced: flush first for durability) and
        remove files awaiting deletion."""
        if self._closed:
            return
        self._closed = True
        for _t, segment in self._pending_deletes:
            segment.delete()
        self._pending_deletes = []
        for segment in self._segments:
            segment.close()

    def close_handlers(self) -> None:
        """Close every file descriptor without writing anything (Kafka's closeHandlers): the
        data dir failed. Index entries not yet written are lost; recovery at the next start
        rebuilds them, since no clean-shutdown marker is written for a failed dir."""
        if self._closed:
            return
        self._closed = True
        for _t, segment in self._pending_deletes:
            segment.close_handlers()
        self._pending_deletes = []
        for segment in self._segments:
            segment.close_handlers()

    def delete(self) -> None:
        """Close and remove the whole partition directory."""
        if not self._closed:
            self._closed = True
            for _t, segment in self._pending_deletes:
                segment.delete()
            for segment in self._segments:
                segment.delete()
        shutil.rmtree(self.dir, ignore_errors=True)


def _scan_request(view: memoryview, from_producer: bool) -> list[tuple[int, int, tuple]]:
    """``(position, size, header fields)`` of every batch of a produce/replica request.

    The fast path checks what ``record.batch.validate_batch_bytes`` checks (whole batches, v2
    magic, sane counts, supported codec, CRC32C, and for producers ``record_count ==
    last_offset_delta + 1 > 0``) on plain header tuples; on any doubt it calls
    ``validate_batch_bytes`` itself, which raises the precise error.
    """
    out = []
    n = len(view)
    pos = 0
    unpack = _UNPACK
    while pos < n:
        if n - pos < _HEADER_SIZE:
            break
        f = unpack(view, pos)
        size = _OVERHEAD + f[F_LENGTH]
        delta, count = f[F_LAST_DELTA], f[F_RECORD_COUNT]
        if (f[F_MAGIC] != _MAGIC or size <= _HEADER_SIZE or pos + size > n or delta < 0
                or count < 0 or count > delta + 1
                or (f[F_ATTRIBUTES] & hdr.COMPRESSION_MASK) not in _SUPPORTED_CODECS
                or (from_producer and (count == 0 or count != delta + 1))
                or crc32c(view[pos + _CRC_FROM:pos + size]) != f[F_CRC]):
            break
        out.append((pos, size, f))
        pos += size
    else:
        return out
    validate_batch_bytes(view, from_producer=from_producer)  # raises the precise error
    raise CorruptRecordError(f"invalid record batch at byte {pos}")  # pragma: no cover


def _segment_time(segment: LogSegment) -> int:
    ts = segment.largest_timestamp
    return ts if ts >= 0 else segment.last_modified_ms()


def _is_base(stem: str) -> bool:
    return len(stem) == 20 and stem.isdigit()


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _size_of(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
