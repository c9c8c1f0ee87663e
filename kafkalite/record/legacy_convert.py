"""Message formats v0 and v1 (magic 0/1): a topic's ``message.format.version``, the leader's
conversion of v2 batches to them, and reading their shallow entries beside v2 batches.

Kafka 2.8 still stores the pre-0.11 formats when a topic's ``message.format.version`` (or the
broker's ``log.message.format.version``) names an older ApiVersion: ``0.8.x``/``0.9.0`` store
magic 0, ``0.10.x`` magic 1 (``config_defs.record_magic``). The leader converts what producers
send (LogValidator): each record of an uncompressed batch becomes one message with its absolute
offset (and, at magic 1, its timestamp); the records of a compressed request become inner messages of ONE wrapper message,
whose offset is the last inner offset and whose timestamp is the greatest inner timestamp (inner
offsets are relative at magic 1, absolute at magic 0). A legacy message cannot carry headers
(UNKNOWN_SERVER_ERROR, as Kafka's IllegalArgumentException) nor a producer id
(UNSUPPORTED_FOR_MESSAGE_FORMAT), and zstd needs magic 2 (UNSUPPORTED_COMPRESSION_TYPE).
Unlike Kafka, LZ4 at magic 0 is refused the same way: Kafka writes it with the old clients'
wrong frame checksum (KAFKA-3160), a variant kafkalite does not write.

The log, segments and replication treat a legacy message as a "batch" of one entry: offset
and length sit where a v2 batch has them and the magic byte at the same position (16), so
``legacy_fields`` gives the tuple ``header.HEADER`` would give for a v2 batch (offset as base
offset, delta 0, no producer, leader epoch -1), as Kafka's FileChannelRecordBatch does for a
legacy entry (a wrapper counts at its last offset: Kafka's ``firstOrLastOffsetOfFirstBatch``).

Inner messages are written by aiokafka's LegacyRecordBatchBuilder (Kafka's layout, zlib CRC32);
the wrapper is written here, because its offset and timestamp are the broker's; codecs are
``record.compression``'s, the ones v2 batches use.
"""

from __future__ import annotations

import struct
from zlib import crc32

from aiokafka.record.legacy_records import LegacyRecordBatchBuilder

from kafkalite.errors import (
    CorruptRecordError,
    UnknownServerError,
    UnsupportedCompressionTypeError,
    UnsupportedForMessageFormatError,
)
from kafkalite.record import compression as _codec

__all__ = ["legacy_fields", "chunk_fields", "to_legacy", "legacy_set", "is_legacy_at",
           "HEADER_SIZES", "MIN_SIZE"]

MAGIC_POS = 16
TIMESTAMP_TYPE_BIT = 0x08
COMPRESSION_MASK = 0x07
_V0 = struct.Struct(">qiIbb")      # offset, length, crc, magic, attributes
_V1 = struct.Struct(">qiIbbq")     # ... and timestamp
_LEN = struct.Struct(">i")
_CRC = struct.Struct(">I")
_OVERHEAD = 12
#: smallest legacy message: header, key length, value length
MIN_SIZE = {0: _V0.size + 8, 1: _V1.size + 8}

def is_legacy_at(buf, pos: int) -> bool:
    """Whether the entry at ``pos`` has magic 0 or 1 (at least 17 bytes must be there)."""
    return buf[pos + MAGIC_POS] in (0, 1)


#: bytes of a legacy message's header, by magic: what ``legacy_fields(whole=False)`` reads
HEADER_SIZES = {0: _V0.size, 1: _V1.size}


def legacy_fields(buf, pos: int = 0, verify_crc: bool = False, whole: bool = True) -> tuple:
    """The v2 header tuple (``header.HEADER``'s field order) of the legacy message at ``pos``;
    CorruptRecordError if it is short, malformed or (``verify_crc``) fails its CRC32. With
    ``whole`` False only its header need be in ``buf`` (a segment scan reading in chunks)."""
    n = len(buf) - pos
    if n < _OVERHEAD + 5:
        raise CorruptRecordError(f"truncated message at byte {pos}")
    magic = buf[pos + MAGIC_POS]
    if magic not in (0, 1):
        raise CorruptRecordError(f"message at byte {pos} has magic {magic}, expected 0 or 1")
    head = _V1 if magic else _V0
    if n < head.size:
        raise CorruptRecordError(f"truncated message header at byte {pos}")
    values = head.unpack_from(buf, pos)
    offset, length, crc, _magic, attributes = values[:5]
    timestamp = values[5] if magic else -1
    size = _OVERHEAD + length
    if size < MIN_SIZE[magic]:
        raise CorruptRecordError(f"message at byte {pos} declares length {length}, below the "
                                 f"smallest magic {magic} message")
    if whole and size > n:
        raise CorruptRecordError(f"truncated message at byte {pos}: declares {size} bytes, "
                                 f"{n} present")
    if verify_crc:
        actual = crc32(memoryview(buf)[pos + MAGIC_POS:pos + size])
        if actual != crc:
            raise CorruptRecordError(f"CRC mismatch in message at byte {pos} (offset {offset}): "
                                     f"stored {crc:#010x}, computed {actual:#010x}")
    return (offset, length, -1, magic, crc, attributes, 0, timestamp, timestamp, -1, -1, -1, 1)


def chunk_fields(buf, off: int, room: int, verify: bool) -> tuple[tuple | None, int]:
    """For a segment scan reading in chunks: ``(fields, 0)`` of the legacy message at ``off``,
    or ``(None, bytes needed)`` when ``buf`` holds too little of it (its header; with
    ``verify``, all of it, whose CRC is then checked). CorruptRecordError if it is malformed
    or longer than the ``room`` left in the segment."""
    head = HEADER_SIZES.get(buf[off + MAGIC_POS], 0)
    if len(buf) - off < head:
        return None, head
    fields = legacy_fields(buf, off, whole=False)
    size = _OVERHEAD + fields[1]
    if size > room:
        raise CorruptRecordError(f"message at byte {off} declares {size} bytes, only {room} "
                                 "present")
    if verify:
        if size > len(buf) - off:
            return None, size
        legacy_fields(buf, off, verify_crc=True)
    return fields, 0


def _message(magic: int, offset: int, timestamp: int, attributes: int, key, value) -> bytes:
    """One legacy message (the wrapper of a compressed set)."""
    key_part = _LEN.pack(-1) if key is None else _LEN.pack(len(key)) + bytes(key)
    value_part = _LEN.pack(-1) if value is None else _LEN.pack(len(value)) + bytes(value)
    body = bytes((magic, attributes)) + (struct.pack(">q", timestamp) if magic else b"")
    body += key_part + value_part
    return struct.pack(">qiI", offset, 4 + len(body), crc32(body)) + body


def to_legacy(batches, magic: int, first_offset: int, log_append_time: int | None) -> bytes:
    """The legacy messages a leader stores for ``batches`` (``(header, records)`` pairs of
    validated v2 batches, in order) with offsets from ``first_offset``; ``log_append_time``
    stamps every message (LogAppendTime topics) unless None.

    The batches' codec (after the topic's ``compression.type``) decides: none gives one message
    per record, any other codec one wrapper for all of them, as Kafka's LogValidator.
    """
    records = []
    codec = 0
    for header, batch_records in batches:
        if header.producer_id >= 0:
            raise UnsupportedForMessageFormatError(
                f"Idempotent records cannot be used with magic version {magic}")
        codec = header.attributes & COMPRESSION_MASK
        for record in batch_records:
            if record.headers:
                raise UnknownServerError(f"Magic v{magic} does not support record headers")
            records.append(record)
    return legacy_set([(first_offset + i, r.timestamp, r.key, r.value)
                       for i, r in enumerate(records)], magic, codec, log_append_time)


def legacy_set(records, magic: int, codec: int, log_append_time: int | None) -> bytes:
    """Magic ``magic`` messages of ``records`` (``(offset, timestamp, key, value)``, offsets
    increasing): one each without ``codec``, else one wrapper at the last offset holding them
    (inner offsets relative to the first at magic 1, absolute at magic 0), as Kafka's
    MemoryRecordsBuilder. ``log_append_time`` (not None) stamps them all as LogAppendTime."""
    if codec == _codec.ZSTD:
        raise UnsupportedCompressionTypeError(
            f"zstd-compressed records cannot be written with magic {magic}")
    if codec == _codec.LZ4 and not magic:
        # Kafka writes magic 0 LZ4 with the 0.8/0.9 clients' wrong frame checksum
        # (KAFKA-3160); kafkalite does not write that variant
        raise UnsupportedCompressionTypeError("kafkalite does not write LZ4 at magic 0")
    ts_type = TIMESTAMP_TYPE_BIT if log_append_time is not None and magic else 0
    stamped = [(o, log_append_time if log_append_time is not None else t, k, v)
               for o, t, k, v in records]
    builder = LegacyRecordBatchBuilder(magic, 0, 2**31 - 1)
    base = stamped[0][0] if codec and magic else 0
    for offset, timestamp, key, value in stamped:
        builder.append(offset - base, timestamp, key, value)
    out = builder.build()
    if ts_type:
        out = _set_timestamp_type(out)
    if not codec:
        return bytes(out)
    max_ts = max(t for _o, t, _k, _v in stamped) if magic else -1
    return _message(magic, stamped[-1][0], max_ts, codec | ts_type, None,
                    _codec.compress(codec, bytes(out)))


def _set_timestamp_type(data) -> bytearray:
    """Every uncompressed magic 1 message of ``data`` marked LogAppendTime, its CRC re-sealed."""
    buf = bytearray(data)
    pos = 0
    while pos < len(buf):
        size = _OVERHEAD + _LEN.unpack_from(buf, pos + 8)[0]
        buf[pos + MAGIC_POS + 1] |= TIMESTAMP_TYPE_BIT
        _CRC.pack_into(buf, pos + 12, crc32(memoryview(buf)[pos + MAGIC_POS:pos + size]))
        pos += size
    return buf
