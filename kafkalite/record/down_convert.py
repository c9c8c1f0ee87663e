"""Down-conversion of fetched records for Fetch v0-v3 (clients that read only magic 0/1), as
Kafka 2.8's ``RecordsUtil.downConvert``.

Fetch v0/v1 get magic 0, v2/v3 magic 1. A batch already at or below that magic goes out as
stored; control batches are dropped; a newer batch becomes legacy messages of the same codec and
timestamp type (its records' headers dropped, LogAppendTime batches stamped with their max
timestamp), and an uncompressed batch's records below the fetch offset are left out (a
compressed one is converted whole, as Kafka). A zstd batch cannot be converted:
UNSUPPORTED_COMPRESSION_TYPE, as Kafka.

aiokafka's LegacyRecordBatch reads a magic 1 message that a magic 0 client needs converted.

Pure: bytes in, bytes out.
"""

from __future__ import annotations

from aiokafka.record.legacy_records import LegacyRecordBatch

from kafkalite.record.header import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    MAGIC,
    TIMESTAMP_TYPE_BIT,
    iter_headers,
)
from kafkalite.record.legacy_convert import legacy_set
from kafkalite.record.reader import read_batch

__all__ = ["fetch_magic", "down_convert"]


def fetch_magic(fetch_version: int) -> int | None:
    """The newest magic a Fetch of ``fetch_version`` can read; None from v4 on (any)."""
    if fetch_version <= 1:
        return 0
    if fetch_version <= 3:
        return 1
    return None


def down_convert(data, magic: int, fetch_offset: int) -> bytes:
    """``data`` (whole stored batches and magic 0/1 messages) as a client of ``magic`` reads
    it."""
    view = memoryview(data)
    out = []
    for pos, header in iter_headers(view, verify_crc=False):
        if header.magic <= magic:
            out.append(view[pos:pos + header.size])
            continue
        if header.attributes & CONTROL_BIT:
            continue
        codec = header.attributes & COMPRESSION_MASK
        if header.magic < MAGIC:   # a magic 1 message (or wrapper) for a magic 0 client
            records = LegacyRecordBatch(view[pos:pos + header.size], header.magic)
        else:
            records = read_batch(view, pos, verify_crc=False)[1]
        kept = [(r.offset, r.timestamp, r.key, r.value) for r in records
                if codec or r.offset >= fetch_offset]
        if not kept:
            continue
        log_append_time = (header.max_timestamp if header.attributes & TIMESTAMP_TYPE_BIT
                           else None)
        out.append(legacy_set(kept, magic, codec, log_append_time))
    return b"".join(out)
