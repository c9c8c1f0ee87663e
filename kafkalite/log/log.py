"""A partition's log: an ordered list of segments in ``<data dir>/<topic>-<partition>/``.

The log itself: append, read, roll, truncate and flush, and the offsets it keeps (log start, log
end, recovery point). Its other jobs have modules of their own (see the package docstring):
recovery on opening (``loader``), a request's validation and offsets (``validator``), the segment
list (``segments``), and the cleaner part -- retention, the log start offset, compaction -- whose
methods ``Log`` inherits from ``cleaning`` (deciding with ``retention`` and ``compaction``), as
it inherits the aborted transaction indexes and producer snapshots from ``transactions``.

Appends go to the last (active) segment, which is rolled when it would pass ``segment.bytes``,
is older than ``segment.ms`` or has a full index. Every batch of a request is validated (lengths,
CRCs, codec -- never the records) before any is written, and batch bodies are written straight
from the request buffer with one ``writev`` and no copy. Reads return stored bytes of whole
batches, located through the sparse offset index; the high watermark (``max_offset``) excludes
every batch whose last offset is at or past it.

Disk failures: any OSError of the log's files is reported to the ``LogDirFailureChannel`` (the
data dir goes offline) and raised as KafkaStorageError. From then on every Log of that dir refuses
appends, reads and maintenance, and the LogManager closes them with ``close_handlers`` (no write).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from dataclasses import dataclass
from typing import Callable

from kafkalite.config_defs import record_magic
from kafkalite.errors import (
    IllegalStateError,
    KafkaStorageError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
)
from kafkalite.log.cleaning import LogCleaning
from kafkalite.log.dir_failure import normalize_dir, storage_error_hint
from kafkalite.log.loader import load_log
from kafkalite.log.producer_snapshot import SnapshotFiles
from kafkalite.log.rolled_flush import RolledFlush
from kafkalite.log.segment import LogSegment, segment_paths, txn_index_path
from kafkalite.log.segments import LogSegments
from kafkalite.log.transactions import LogTransactions, SnapshotSource
from kafkalite.log.validator import (
    PREFIX,
    PREFIX_SIZE,
    AppendInfo,
    prepare_append,
    scan_request,
    validate_request,
)
from kafkalite.record.batch import read_batch
from kafkalite.record.header import (  # positions in the tuple HEADER.unpack_from returns
    F_EPOCH,
    F_LAST_DELTA,
    F_LENGTH,
    F_MAGIC,
    F_MAX_TS,
    F_RECORD_COUNT,
)
from kafkalite.record.legacy_convert import to_legacy

log = logging.getLogger(__name__)

_MAX_RELATIVE = 0x7FFFFFFF  # offsets relative to a segment's base are int32


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


class Log(LogCleaning, LogTransactions):
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
        self._log_segments = LogSegments(self.dir, self._clock)
        # the segment list itself (changed in place only), for the append path's speed
        self._segments: list[LogSegment] = self._log_segments.segments
        self._roll_flush_offset: int | None = None
        self._truncations = 0           # voids a rolled flush taken before (rolled_flush.py)
        self._cleaned_up_to = -1
        self._closed = False
        os.makedirs(self.dir, exist_ok=True)
        self.producer_snapshots = SnapshotFiles(self.dir)
        #: set by the partition: its producer state as snapshot entries (rolls and close)
        self.producer_state_source: SnapshotSource | None = None
        #: set by the partition: its high watermark (retention deletes only below it)
        self.high_watermark_source: Callable[[], int] | None = None
        loaded = load_log(self.dir, config, self._clock, self.name, recovery_point,
                          clean_shutdown, log_start_offset, self.producer_snapshots)
        for segment in loaded.segments:
            self._log_segments.add(segment)
        self.log_start_offset = loaded.log_start_offset
        self.recovery_point = loaded.recovery_point
        #: bytes cut off by recovery when this log was opened
        self.recovery_truncated_bytes = loaded.truncated_bytes
        #: segments (and their bytes) re-verified when this log was opened
        self.recovered_segments = loaded.recovered_segments
        self.recovered_bytes = loaded.recovered_bytes
        self._last_flush_ms = self._clock()
        self._prune_snapshots_after_load()

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
        view, batches_in = validate_request(records, self.config, assign_offsets, self._clock)
        if not batches_in:
            return AppendInfo(-1, -1, -1, -1, 0, 0, -1, self.log_start_offset)
        if assign_offsets and record_magic(self.config.message_format_version) < 2:
            return self._append_legacy(view, batches_in)
        if leader_epoch is not None and any(f[F_MAGIC] < 2 for _p, _s, f in batches_in):
            leader_epoch = None  # a magic 0/1 message has its CRC where v2 has the epoch
        if (len(batches_in) == 1 and assign_offsets
                and self.config.message_timestamp_type != "LogAppendTime"):
            return self._append_one(view, batches_in[0][2], leader_epoch)
        new = prepare_append(view, batches_in, self._segments[-1].next_offset, assign_offsets,
                             leader_epoch, self.config, self._clock, self.name)
        total = len(view)
        try:
            segment = self._maybe_roll(total, new.first_offset, new.last_offset)
            segment.append(new.data, new.last_offset, new.max_timestamp,
                           new.offset_of_max_timestamp, new.batches, total)
        except OSError as exc:
            raise self._storage_error(exc, f"append {total} bytes to") from exc
        if new.last_offset + 1 - self.recovery_point >= self.config.flush_messages:
            self.flush()
        return AppendInfo(new.first_offset, new.last_offset, new.max_timestamp,
                          new.log_append_time, new.record_count, total,
                          new.offset_of_max_timestamp, self.log_start_offset)

    def _append_legacy(self, view: memoryview, batches_in: list) -> AppendInfo:
        """A leader's append to a topic of ``message.format.version`` below 0.11: the batches
        converted to magic 0/1 messages with their offsets (``record.legacy_convert``), then
        written as a follower writes a leader's bytes."""
        config = self.config
        now = self._clock() if config.message_timestamp_type == "LogAppendTime" else None
        leo = self._segments[-1].next_offset
        data = memoryview(to_legacy([read_batch(view, pos, verify_crc=False)
                                     for pos, _s, _f in batches_in],
                                    record_magic(config.message_format_version), leo, now))
        new = prepare_append(data, scan_request(data, False), leo, False, None, config,
                             self._clock, self.name)
        total = len(data)
        try:
            # a compressed wrapper counts at its last offset, as Kafka rolls on it
            segment = self._maybe_roll(total, new.first_offset, new.last_offset)
            segment.append(data, new.last_offset, new.max_timestamp,
                           new.offset_of_max_timestamp, new.batches, total)
        except OSError as exc:
            raise self._storage_error(exc, f"append {total} bytes to") from exc
        if new.last_offset + 1 - self.recovery_point >= config.flush_messages:
            self.flush()
        count = sum(f[F_RECORD_COUNT] for _p, _s, f in batches_in)
        return AppendInfo(leo, new.last_offset, new.max_timestamp,
                          -1 if now is None else now, count, total,
                          new.offset_of_max_timestamp, self.log_start_offset)

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
        data = [PREFIX.pack(base, f[F_LENGTH],
                            f[F_EPOCH] if leader_epoch is None else leader_epoch),
                view[PREFIX_SIZE:]]
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
        the LogManager's next roll-flush pass, off the reactor (``rolled_flush_job``)."""
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
        # the producer state up to the new segment, so its recovery can start there (Kafka)
        self._snapshot_from_source(base)
        try:
            if not replace_empty:
                active.seal()
            stale = txn_index_path(self.dir, base)
            if os.path.exists(stale):  # left by a segment once based here (Kafka deletes it)
                os.unlink(stale)
            segment = LogSegment(self.dir, base, self.config, self._clock)
        except OSError as exc:  # nothing changed yet: the old active segment stays active
            raise self._storage_error(exc, f"roll a segment at offset {base} for") from exc
        self._log_segments.roll_to(segment, replace_empty)
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
        leo = self._segments[-1].next_offset
        if offset < self.log_start_offset or offset > leo:
            raise OffsetOutOfRangeError(
                f"offset {offset} is out of range for {self.name}: the log holds "
                f"[{self.log_start_offset}, {leo})")
        limit = leo if max_offset is None or max_offset > leo else max_offset
        if offset >= limit:
            return FetchData(b"", offset, self.log_start_offset, leo)
        try:
            records = self._log_segments.read(offset, max_bytes, limit, min_one_batch)
        except OSError as exc:
            raise self._storage_error(exc, "read") from exc
        return FetchData(records, offset, self.log_start_offset, leo)

    def find_offset_by_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record whose timestamp is >= ``timestamp`` (Kafka's
        ListOffsets by time), or None if every record is older."""
        return self._log_segments.find_offset_by_timestamp(timestamp, self.log_start_offset)

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
            self._log_segments.truncate_to(offset, self.config.file_delete_delay_ms)
        except OSError as exc:
            raise self._storage_error(exc, f"truncate to offset {offset}") from exc
        self._truncations += 1
        leo = self.log_end_offset
        self.recovery_point = min(self.recovery_point, leo)
        self.log_start_offset = min(self.log_start_offset, leo)
        self._prune_snapshots_out_of_range()
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
            self._log_segments.reset_at(offset, self.config, self.config.file_delete_delay_ms)
            self.producer_snapshots.delete_where(lambda _o: True)
        except OSError as exc:
            raise self._storage_error(exc, f"truncate fully to offset {offset}") from exc
        self._truncations += 1
        self.log_start_offset = offset
        self.recovery_point = offset
        self._roll_flush_offset = None
        self._cleaned_up_to = -1

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
            self._log_segments.flush(self.recovery_point, target)
        except OSError as exc:  # the recovery point stays: what it covers was fsynced before
            raise self._storage_error(exc, "flush") from exc
        self.recovery_point = target
        self._last_flush_ms = self._clock()
        if self._roll_flush_offset is not None and self._roll_flush_offset <= target:
            self._roll_flush_offset = None

    def rolled_flush_job(self) -> RolledFlush | None:
        """The fsyncs of what rolls left unsynced (the segments from the recovery point to the
        last roll), as a job for another thread (``log.rolled_flush``); None when none."""
        if self._closed or self._roll_flush_offset is None:
            return None
        target = min(self._roll_flush_offset, self.log_end_offset)
        if target <= self.recovery_point:
            self._roll_flush_offset = None
            return None
        try:
            handles = self._log_segments.sync_handles(self.recovery_point, target)
        except OSError as exc:
            raise self._storage_error(exc, "flush") from exc
        return RolledFlush(target, handles, self._truncations)

    def rolled_flush_done(self, job: RolledFlush) -> None:
        """On the reactor, once ``job``'s fsyncs ran: the recovery point advances to its target
        (unless the log was closed or truncated since); a failed fsync raises
        KafkaStorageError, the dir going offline."""
        if job.error is not None:
            raise self._storage_error(job.error, "flush")
        if self._closed or job.truncations != self._truncations:
            return
        self.recovery_point = max(self.recovery_point, job.target)
        self._last_flush_ms = self._clock()
        if self._roll_flush_offset is not None and self._roll_flush_offset <= job.target:
            self._roll_flush_offset = None

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
        try:  # the state at the log end, so the next start replays nothing (Kafka's close)
            self._snapshot_from_source(self.log_end_offset)
        except KafkaStorageError as exc:  # the log still closes; the next start replays more
            log.warning("%s: no producer snapshot at close: %s", self.name, exc)
        self._closed = True
        self._log_segments.close()

    def close_handlers(self) -> None:
        """Close every file descriptor without writing anything (Kafka's closeHandlers): the
        data dir failed. Index entries not yet written are lost; recovery at the next start
        rebuilds them, since no clean-shutdown marker is written for a failed dir."""
        if self._closed:
            return
        self._closed = True
        self._log_segments.close_handlers()

    def delete(self) -> None:
        """Close and remove the whole partition directory."""
        if not self._closed:
            self._closed = True
            self._log_segments.delete_files()
        shutil.rmtree(self.dir, ignore_errors=True)
