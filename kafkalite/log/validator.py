"""Checking a produce or replica request's batches and assigning their offsets, as Kafka's
LogValidator; ``Log.append`` writes what this prepares.

Records are decoded only where they must be (the CreateTime check, re-encoding to the topic's
``compression.type``): batches are checked on their headers and CRCs, offsets assigned by patching
each batch's ``base_offset`` (and ``partition_leader_epoch``), both outside the CRC, so batch
bodies go to the segment straight from the request buffer. With
``message.timestamp.type=LogAppendTime`` the attributes and ``max_timestamp`` must change too,
and they are inside the CRC, so that path copies the request once into a bytearray and recomputes
each batch's CRC (``header.set_log_append_time``).
"""

from __future__ import annotations

from dataclasses import dataclass

from crc32c import crc32c

from kafkalite.config import LONG_MAX
from kafkalite.errors import CorruptRecordError, IllegalStateError, MessageTooLargeError
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
from kafkalite.record.legacy_convert import legacy_fields
from kafkalite.record.recompress import converts, recompress, target_codec

# base_offset, batch_length, partition_leader_epoch: the patchable prefix, outside the CRC
PREFIX = hdr.PATCHABLE
PREFIX_SIZE = PREFIX.size  # 16
_COPY_ABOVE_BATCHES = 256    # more batches than this: one copy beats hundreds of iovecs

_UNPACK = hdr.HEADER.unpack_from
_HEADER_SIZE = hdr.HEADER_SIZE
_OVERHEAD = hdr.LOG_OVERHEAD
_CRC_FROM = hdr.ATTRIBUTES_POS
_MAGIC = hdr.MAGIC


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


def validate_request(records, config, from_producer: bool, clock) -> tuple[memoryview, list]:
    """The request as a byte view and ``(position, size, header fields)`` of its batches.

    Raises before anything is written: CorruptRecordError for a damaged batch,
    InvalidRecordError for a malformed producer batch, InvalidTimestampError for a CreateTime
    out of ``message.timestamp.difference.max.ms``. A leader's batches whose codec differs from
    the topic's ``compression.type`` come back re-encoded (followers copy the leader's bytes).
    """
    view = memoryview(records)
    if type(records) is not bytes and (view.ndim != 1 or view.itemsize != 1):
        view = view.cast("B")
    batches_in = scan_request(view, from_producer)
    if (from_producer and config.message_timestamp_type == "CreateTime"
            and config.message_timestamp_difference_max_ms < LONG_MAX):
        check_create_times(view, batches_in, clock(), config.message_timestamp_difference_max_ms)
    codec = target_codec(config.compression_type) if from_producer else None
    if codec is not None and any(converts(f[F_ATTRIBUTES], codec) for _p, _s, f in batches_in):
        # the topic's compression.type differs from the producer's codec: the leader stores
        # the batches re-encoded (Kafka's LogValidator); followers copy the leader's bytes
        view = memoryview(recompress(view, codec))
        batches_in = scan_request(view, from_producer)
    return view, batches_in


@dataclass(slots=True)
class PreparedAppend:
    """A validated request with its offsets assigned, ready for ``LogSegment.append``."""

    #: the bytes to write: one buffer, or a list of buffers for one ``writev``
    data: object
    #: ``(position in request, base offset, last offset, max timestamp)`` per batch
    batches: list[tuple]
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    record_count: int
    #: the time stamped into every batch, -1 unless the topic uses LogAppendTime
    log_append_time: int


def prepare_append(view: memoryview, batches_in: list, leo: int, from_producer: bool,
                   leader_epoch: int | None, config, clock, name: str) -> PreparedAppend:
    """Offsets and bytes to write for the (validated, non-empty) ``batches_in`` of ``view``.

    MessageTooLargeError for a batch over ``max.message.bytes``. A leader's batches
    (``from_producer``) continue from the log end offset ``leo`` and, with
    ``message.timestamp.type=LogAppendTime``, get the time now; a follower's keep their offsets
    and timestamps, and the offsets must start at or after ``leo`` and increase
    (UnexpectedAppendOffsetError otherwise). ``leader_epoch`` (when given) is stamped into every
    batch.
    """
    for _pos, size, _f in batches_in:
        if size > config.max_message_bytes:
            raise MessageTooLargeError(
                f"batch of {size} bytes exceeds max.message.bytes={config.max_message_bytes} "
                f"of {name}")
    # followers keep the leader's timestamps; only a leader stamps LogAppendTime
    log_append_time = (clock() if from_producer
                       and config.message_timestamp_type == "LogAppendTime" else None)
    if from_producer:
        batches = _assign_offsets(batches_in, leo, log_append_time)
    else:
        batches = _check_follower_offsets(batches_in, leo, name)
    data = _data_to_write(view, batches, batches_in, leader_epoch, from_producer,
                          log_append_time)
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
    count = 0
    for _pos, _size, f in batches_in:
        count += f[F_RECORD_COUNT]
    return PreparedAppend(data, batches, first_offset, last_offset, max_ts, offset_of_max, count,
                          -1 if log_append_time is None else log_append_time)


def _assign_offsets(batches_in: list, leo: int, log_append_time: int | None) -> list[tuple]:
    batches = []
    next_offset = leo
    for pos, _size, f in batches_in:
        last = next_offset + f[F_LAST_DELTA]
        batches.append((pos, next_offset, last, f[F_MAX_TS] if log_append_time is None
                        else log_append_time))
        next_offset = last + 1
    return batches


def _check_follower_offsets(batches_in: list, leo: int, name: str) -> list[tuple]:
    batches = []
    expected = leo
    for pos, _size, f in batches_in:
        base = f[F_BASE_OFFSET]
        if base < expected:
            if pos == 0:
                raise UnexpectedAppendOffsetError(
                    f"{name}: follower append starts at offset {base}, "
                    f"below the log end offset {leo}", base, leo)
            raise UnexpectedAppendOffsetError(
                f"{name}: batch at byte {pos} has base offset {base}, "
                f"expected at least {expected} (offsets must increase)", base, leo)
        last = base + f[F_LAST_DELTA]
        batches.append((pos, base, last, f[F_MAX_TS]))
        expected = last + 1
    return batches


def _data_to_write(view: memoryview, batches: list, batches_in: list, leader_epoch: int | None,
                   from_producer: bool, log_append_time: int | None):
    """Patched prefixes + untouched bodies, or one patched copy. A follower's request without
    a ``leader_epoch`` to stamp is written as it is."""
    if log_append_time is not None:
        buf = bytearray(view)
        for pos, base, _last, _ts in batches:
            hdr.set_base_offset(buf, pos, base)
            if leader_epoch is not None:
                hdr.set_partition_leader_epoch(buf, pos, leader_epoch)
            hdr.set_log_append_time(buf, pos, log_append_time)
        return buf
    if not from_producer and leader_epoch is None:
        return view
    if len(batches) > _COPY_ABOVE_BATCHES:
        buf = bytearray(view)
        for pos, base, _last, _ts in batches:
            hdr.set_base_offset(buf, pos, base)
            if leader_epoch is not None:
                hdr.set_partition_leader_epoch(buf, pos, leader_epoch)
        return buf
    pack = PREFIX.pack
    data = []
    for (pos, base, _last, _ts), (_p, size, f) in zip(batches, batches_in):
        epoch = f[F_EPOCH] if leader_epoch is None else leader_epoch
        data.append(pack(base, f[F_LENGTH], epoch))
        data.append(view[pos + PREFIX_SIZE:pos + size])
    return data


def scan_request(view: memoryview, from_producer: bool) -> list[tuple[int, int, tuple]]:
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
        if not from_producer and n - pos > hdr.MAGIC_POS and view[pos + hdr.MAGIC_POS] < _MAGIC:
            # a leader's magic 0/1 message (message.format.version below 0.11), copied as it is
            f = legacy_fields(view, pos, verify_crc=True)
            out.append((pos, _OVERHEAD + f[F_LENGTH], f))
            pos += _OVERHEAD + f[F_LENGTH]
            continue
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
