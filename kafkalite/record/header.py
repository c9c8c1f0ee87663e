"""The fixed 61-byte record batch header (Kafka's v2 layout).

    base_offset i64 | batch_length i32 | partition_leader_epoch i32 | magic i8 | crc u32 |
    attributes i16 | last_offset_delta i32 | first_timestamp i64 | max_timestamp i64 |
    producer_id i64 | producer_epoch i16 | base_sequence i32 | record_count i32 | records...

``batch_length`` counts the bytes after itself, so a batch occupies ``LOG_OVERHEAD + batch_length``
bytes. The CRC32C covers everything from ``attributes`` to the end, which is why a broker may patch
``base_offset`` and ``partition_leader_epoch`` in place without recomputing it.

This module is the only place that knows these byte positions and struct formats: the log scans
and patches stored batches with them, the record codec builds batches with them and the producer
state reads a request's producer id with them. Hot paths keep their speed by binding the
precompiled ``struct.Struct`` objects defined here (``HEADER``, ``PREFIX``, ``CRC_COVERED``,
``PATCHABLE``, the one-field ``I64``/``I32``/``I16``/``U32``) to module globals of their own.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from crc32c import crc32c

from kafkalite.errors import CorruptRecordError
from kafkalite.record.legacy_convert import legacy_fields

HEADER_FORMAT = ">qiibIhiqqqhii"  # every field, in order (see the docstring)
HEADER = struct.Struct(HEADER_FORMAT)
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # base_offset + batch_length: the part outside batch_length
MAGIC = 2

# byte position of each field inside a batch
BASE_OFFSET_POS = 0
LENGTH_POS = 8
LEADER_EPOCH_POS = 12
MAGIC_POS = 16
CRC_POS = 17
ATTRIBUTES_POS = 21  # the CRC covers from here to the end of the batch
LAST_OFFSET_DELTA_POS = 23
FIRST_TIMESTAMP_POS = 27
MAX_TIMESTAMP_POS = 35
PRODUCER_ID_POS = 43
PRODUCER_EPOCH_POS = 51
BASE_SEQUENCE_POS = 53
RECORD_COUNT_POS = 57

# index of each field in the tuple HEADER.unpack_from returns (BatchHeader's field order)
F_BASE_OFFSET, F_LENGTH, F_EPOCH, F_MAGIC, F_CRC, F_ATTRIBUTES, F_LAST_DELTA, F_FIRST_TS, \
    F_MAX_TS, F_PRODUCER_ID, F_PRODUCER_EPOCH, F_BASE_SEQUENCE, F_RECORD_COUNT = range(13)

# the positions above must be where HEADER_FORMAT puts each field (checked once, at import)
for _field, _pos in enumerate((BASE_OFFSET_POS, LENGTH_POS, LEADER_EPOCH_POS, MAGIC_POS, CRC_POS,
                               ATTRIBUTES_POS, LAST_OFFSET_DELTA_POS, FIRST_TIMESTAMP_POS,
                               MAX_TIMESTAMP_POS, PRODUCER_ID_POS, PRODUCER_EPOCH_POS,
                               BASE_SEQUENCE_POS, RECORD_COUNT_POS, HEADER_SIZE)):
    assert struct.calcsize(HEADER_FORMAT[:_field + 1]) == _pos, (_field, _pos)
del _field, _pos
assert HEADER_SIZE == 61 and F_RECORD_COUNT == len(HEADER_FORMAT) - 2

# parts of the header, cut from HEADER_FORMAT so they cannot disagree with it
#: base_offset, batch_length, partition_leader_epoch, magic, crc: what precedes the CRC'd part
PREFIX = struct.Struct(HEADER_FORMAT[:1 + F_ATTRIBUTES])
#: attributes .. record_count: the header fields the CRC covers
CRC_COVERED = struct.Struct(">" + HEADER_FORMAT[1 + F_ATTRIBUTES:])
#: base_offset, batch_length, partition_leader_epoch: the prefix a broker patches in place
PATCHABLE = struct.Struct(HEADER_FORMAT[:1 + F_MAGIC])
assert PREFIX.size == ATTRIBUTES_POS and PATCHABLE.size == MAGIC_POS

# one big-endian field each, packed and unpacked at the positions above
I64 = struct.Struct(">q")  # base_offset, timestamps, producer_id
I32 = struct.Struct(">i")  # batch_length, partition_leader_epoch, deltas, sequence, count
I16 = struct.Struct(">h")  # attributes, producer_epoch
U32 = struct.Struct(">I")  # crc

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
    return LOG_OVERHEAD + I32.unpack_from(buf, pos + LENGTH_POS)[0]


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
    """Yield ``(pos, header)`` for each complete batch in ``buf[pos:end]`` (a magic 0/1 message
    counts as a batch of one entry: ``legacy_convert.legacy_fields``).

    Raises CorruptRecordError at the first batch that is malformed, truncated, or (with
    ``verify_crc``) has a bad CRC. The error's ``position`` attribute tells where the valid prefix
    ends, which is where recovery truncates.
    """
    end = len(buf) if end is None else end
    view = memoryview(buf)[:end]
    while pos < end:
        try:
            if end - pos > MAGIC_POS and view[pos + MAGIC_POS] < MAGIC:
                # a magic 0/1 message (message.format.version below 0.11): one entry
                header = BatchHeader(*legacy_fields(view, pos, verify_crc))
            else:
                header = check_batch(view, pos) if verify_crc else parse_header(view, pos)
            if not verify_crc and end - pos < header.size:
                raise CorruptRecordError(f"truncated batch at byte {pos}")
        except CorruptRecordError as exc:
            exc.position = pos
            raise
        yield pos, header
        pos += header.size


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    I64.pack_into(buf, pos + BASE_OFFSET_POS, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    I32.pack_into(buf, pos + LEADER_EPOCH_POS, epoch)


# --- the broker's in-place rewrite of LogAppendTime batches ----------------------------------

def set_log_append_time(buf: bytearray | memoryview, pos: int, timestamp: int) -> None:
    """Mark the batch at ``pos`` as LogAppendTime with ``timestamp`` and re-seal its CRC.

    Unlike the base offset and leader epoch, the attributes and max_timestamp sit inside the CRC,
    so this rewrites it (as Kafka's broker does when ``message.timestamp.type=LogAppendTime``).
    """
    size = LOG_OVERHEAD + I32.unpack_from(buf, pos + LENGTH_POS)[0]
    (attributes,) = I16.unpack_from(buf, pos + ATTRIBUTES_POS)
    I16.pack_into(buf, pos + ATTRIBUTES_POS, attributes | TIMESTAMP_TYPE_BIT)
    I64.pack_into(buf, pos + MAX_TIMESTAMP_POS, timestamp)
    U32.pack_into(buf, pos + CRC_POS, compute_crc(buf, pos, size))
