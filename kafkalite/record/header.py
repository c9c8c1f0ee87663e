"""The fixed 61-byte record batch header (Kafka's v2 layout, DESIGN section 6).

    base_offset i64 | batch_length i32 | partition_leader_epoch i32 | magic i8 | crc u32 |
    attributes i16 | last_offset_delta i32 | first_timestamp i64 | max_timestamp i64 |
    producer_id i64 | producer_epoch i16 | base_sequence i32 | record_count i32 | records...

``batch_length`` counts the bytes after itself, so a batch occupies ``LOG_OVERHEAD + batch_length``
bytes. The CRC32C covers everything from ``attributes`` to the end, which is why a broker may patch
``base_offset`` and ``partition_leader_epoch`` in place without recomputing it.

This module is the only place that knows these byte positions; the log scans stored files with it
and the record codec builds batches with it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from crc32c import crc32c

from kafkalite.errors import CorruptRecordError

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # base_offset + batch_length: the part outside batch_length
MAGIC = 2

BASE_OFFSET_POS = 0
LENGTH_POS = 8
LEADER_EPOCH_POS = 12
MAGIC_POS = 16
CRC_POS = 17
ATTRIBUTES_POS = 21  # the CRC covers from here to the end of the batch

_BASE_OFFSET = struct.Struct(">q")
_I32 = struct.Struct(">i")
_LENGTH_AND_EPOCH = struct.Struct(">qi")  # base_offset + batch_length

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class BatchHeader:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies on disk and on the wire."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return 1 if self.attributes & TIMESTAMP_TYPE_BIT else 0


def parse_header(buf, pos: int = 0) -> BatchHeader:
    """Parse the header at ``pos``; CorruptRecordError if it is short or not a v2 batch."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecordError(
            f"truncated batch header at byte {pos}: need {HEADER_SIZE} bytes, "
            f"have {max(0, len(buf) - pos)}")
    header = BatchHeader(*HEADER.unpack_from(buf, pos))
    if header.magic != MAGIC:
        raise CorruptRecordError(f"batch at byte {pos} has magic {header.magic}, expected {MAGIC}")
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptRecordError(
            f"batch at byte {pos} declares length {header.batch_length}, "
            f"below the header's own {HEADER_SIZE - LOG_OVERHEAD}")
    if header.last_offset_delta < 0 or header.record_count < 0:
        raise CorruptRecordError(f"batch at byte {pos} has a negative record count or offset delta")
    return header


def peek_size(buf, pos: int = 0) -> int | None:
    """Total size of the batch at ``pos`` from its length field, or None if fewer than 12 bytes."""
    if len(buf) - pos < LOG_OVERHEAD:
        return None
    return LOG_OVERHEAD + _I32.unpack_from(buf, pos + LENGTH_POS)[0]


def compute_crc(buf, pos: int, size: int) -> int:
    return crc32c(memoryview(buf)[pos + ATTRIBUTES_POS:pos + size])


def check_batch(buf, pos: int = 0) -> BatchHeader:
    """Parse and fully validate the batch at ``pos``: header, complete length and CRC."""
    header = parse_header(buf, pos)
    if len(buf) - pos < header.size:
        raise CorruptRecordError(
            f"truncated batch at byte {pos}: declares {header.size} bytes, "
            f"{len(buf) - pos} present")
    actual = compute_crc(buf, pos, header.size)
    if actual != header.crc:
        raise CorruptRecordError(
            f"CRC mismatch in batch at byte {pos} (base offset {header.base_offset}): "
            f"stored {header.crc:#010x}, computed {actual:#010x}")
    return header


def iter_headers(buf, pos: int = 0, end: int | None = None, verify_crc: bool = True):
    """Yield ``(pos, header)`` for each complete batch in ``buf[pos:end]``.

    Raises CorruptRecordError at the first batch that is malformed, truncated, or (with
    ``verify_crc``) has a bad CRC. The error's ``position`` attribute tells where the valid prefix
    ends, which is where recovery truncates.
    """
    end = len(buf) if end is None else end
    view = memoryview(buf)[:end]
    while pos < end:
        try:
            header = check_batch(view, pos) if verify_crc else parse_header(view, pos)
            if not verify_crc and end - pos < header.size:
                raise CorruptRecordError(f"truncated batch at byte {pos}")
        except CorruptRecordError as exc:
            exc.position = pos
            raise
        yield pos, header
        pos += header.size


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    _BASE_OFFSET.pack_into(buf, pos + BASE_OFFSET_POS, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    _I32.pack_into(buf, pos + LEADER_EPOCH_POS, epoch)


# --- the broker's in-place rewrite of LogAppendTime batches ----------------------------------
ATTRIBUTES_FIELD = struct.Struct(">h")
MAX_TIMESTAMP_POS = 35  # after attributes (2), last_offset_delta (4), first_timestamp (8)
_CRC = struct.Struct(">I")


def set_log_append_time(buf: bytearray | memoryview, pos: int, timestamp: int) -> None:
    """Mark the batch at ``pos`` as LogAppendTime with ``timestamp`` and re-seal its CRC.

    Unlike the base offset and leader epoch, the attributes and max_timestamp sit inside the CRC,
    so this rewrites it (as Kafka's broker does when ``message.timestamp.type=LogAppendTime``).
    """
    size = LOG_OVERHEAD + _I32.unpack_from(buf, pos + LENGTH_POS)[0]
    (attributes,) = ATTRIBUTES_FIELD.unpack_from(buf, pos + ATTRIBUTES_POS)
    ATTRIBUTES_FIELD.pack_into(buf, pos + ATTRIBUTES_POS, attributes | TIMESTAMP_TYPE_BIT)
    _BASE_OFFSET.pack_into(buf, pos + MAX_TIMESTAMP_POS, timestamp)
    _CRC.pack_into(buf, pos + CRC_POS, compute_crc(buf, pos, size))
