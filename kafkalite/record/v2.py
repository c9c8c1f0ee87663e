"""Kafka's v2 records section, encoded and decoded by aiokafka's compiled (Cython) codec.

After the 61-byte header (``header.py``) a batch holds ``record_count`` records, compressed
together by the codec in ``attributes``; each record is Kafka's

    length varint | attributes i8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value | headerCount varint |
    [headerKeyLength varint | headerKey utf-8 | headerValueLength varint | headerValue]...

with zigzag varints and -1 lengths for null. Nothing here loops over records in Python: aiokafka
writes and parses them in C, and the columns readers need are pulled out with C-level ``map``.

kafkalite uses aiokafka for the records only. Headers are written by ``seal`` (aiokafka's builder
always writes base offset 0, no timestamp type and its own compression), and compression goes
through ``compression.py``: Kafka's default gzip level 6 through zlib (aiokafka's level 9 through
the gzip module built 1000 x 100 B records ~5x slower for a batch ~3% smaller; its lz4 ~25x
slower, bench/record_bench.py), snappy read both xerial-framed and raw, every codec strict about
truncation and trailing bytes. So aiokafka only ever sees uncompressed batches: ``decode``
decompresses first and hands it a copy of the header with the codec bits cleared.
"""

from __future__ import annotations

import sys
from collections import deque
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, lt

from aiokafka.errors import CorruptRecordException
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from crc32c import crc32c

from kafkalite.errors import CorruptRecordError
from kafkalite.record import compression as _codec
from kafkalite.record.header import (
    ATTRIBUTES_POS,
    COMPRESSION_MASK,
    CRC_COVERED,
    HEADER_SIZE,
    I16,
    LAST_OFFSET_DELTA_POS,
    LOG_OVERHEAD,
    MAGIC,
    PREFIX,
)

#: True when aiokafka's C extension is in use (not its pure-Python fallback, ~20x slower)
COMPILED = DefaultRecordBatch.__module__.startswith("aiokafka.record._crecords")

CREATE_TIME = 0
LOG_APPEND_TIME = 1

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class Record:
    """One decoded record: absolute offset and timestamp, key, value, headers."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


# Readers make records in bulk by filling the slots directly (about 2.5x faster than calling the
# frozen dataclass __init__ once per record); every slot is set, so the objects are complete.
_new_object = object.__new__
_SLOT_SETTERS = tuple(getattr(Record, name).__set__
                      for name in ("offset", "timestamp", "key", "value", "headers"))


def make_records(n: int, *columns) -> list[Record]:
    records = list(map(_new_object, repeat(Record, n)))
    for setter, column in zip(_SLOT_SETTERS, columns):
        deque(map(setter, records, column), maxlen=0)
    return records


# --------------------------------------------------------------------------------------- building

# aiokafka's builder refuses a record once the batch would pass batch_size; kafkalite's callers
# size their batches themselves, so the limit is never the one that applies.
_NO_LIMIT = sys.maxsize


def new_builder() -> DefaultRecordBatchBuilder:
    """An aiokafka builder for an uncompressed batch (magic 2, not transactional).

    Callers pass each record's *timestamp delta* as its timestamp, so the builder's own first
    timestamp is 0. (It treats a first timestamp of -1 as "none yet", which would misplace every
    delta of a batch whose first record has timestamp -1; and the header is rewritten anyway.)
    """
    return DefaultRecordBatchBuilder(MAGIC, 0, 0, -1, -1, -1, _NO_LIMIT)


def seal(built: bytearray, codec: int, level: int | None, base_offset: int,
         partition_leader_epoch: int, attributes: int, last_offset_delta: int, first_ts: int,
         max_ts: int, producer_id: int, producer_epoch: int, base_sequence: int,
         count: int) -> bytes:
    """The finished batch from what aiokafka built: compress the records, write the header.

    ``built`` is aiokafka's internal buffer; only its header bytes are overwritten (aiokafka
    rewrites them on every build), so its builder stays usable.
    """
    fields = (attributes | codec, last_offset_delta, first_ts, max_ts, producer_id,
              producer_epoch, base_sequence, count)
    if codec == _codec.NONE:  # patch the header in place: one copy of the batch in all
        if len(built) - LOG_OVERHEAD > I32_MAX:
            raise ValueError(f"batch of {len(built)} bytes exceeds the 2 GiB format limit")
        CRC_COVERED.pack_into(built, ATTRIBUTES_POS, *fields)
        with memoryview(built) as view:
            crc = crc32c(view[ATTRIBUTES_POS:])
        PREFIX.pack_into(built, 0, base_offset, len(built) - LOG_OVERHEAD,
                         partition_leader_epoch, MAGIC, crc)
        return bytes(built)
    with memoryview(built) as view:  # released before the builder may resize its buffer
        payload = _codec.compress(codec, view[HEADER_SIZE:], level)
    batch_length = HEADER_SIZE - LOG_OVERHEAD + len(payload)
    if batch_length > I32_MAX:
        raise ValueError(f"batch of {batch_length} bytes exceeds the 2 GiB format limit")
    tail = CRC_COVERED.pack(*fields)
    crc = crc32c(payload, crc32c(tail))
    return b"".join((PREFIX.pack(base_offset, batch_length, partition_leader_epoch, MAGIC, crc),
                     tail, payload))


# ---------------------------------------------------------------------------------------- reading

_offset_of = attrgetter("offset")
_timestamp_of = attrgetter("timestamp")
_key_of = attrgetter("key")
_value_of = attrgetter("value")
_headers_of = attrgetter("headers")
# Exporters whose memory is NUL-terminated: aiokafka bounds-checks only the first byte of a
# varint, so a varint running off the end of the buffer reads on; with these it stops at the NUL.
_SAFE_EXPORTERS = (bytes, bytearray)


def _where(pos: int, base_offset: int) -> str:
    return f"batch at byte {pos} (base offset {base_offset})"


def decode(view: memoryview, pos: int, size: int, base_offset: int, attributes: int,
           last_offset_delta: int) -> tuple[list, list[int]]:
    """aiokafka's records of the (length/CRC-checked) batch at ``view[pos:pos + size]``, and
    their absolute offsets.

    Checks what aiokafka does not: offset deltas strictly increasing within
    ``0..last_offset_delta``. CorruptRecordError for anything malformed. (A timestamp delta that
    overflows int64 wraps around, as in aiokafka and Kafka's Java reader: it is not detected.)
    """
    batch = open_batch(view, pos, size, base_offset, attributes)
    try:
        records = list(batch)
    except Exception as exc:  # CorruptRecordException, UnicodeDecodeError (a header name), ...
        raise not_records(exc, pos, base_offset) from None
    offsets = list(map(_offset_of, records))
    check_offsets(offsets, pos, base_offset, last_offset_delta)
    return records, offsets


def open_batch(view: memoryview, pos: int, size: int, base_offset: int,
               attributes: int) -> DefaultRecordBatch:
    """aiokafka's reader over the batch at ``view[pos:pos + size]`` (decompressed first): its
    records come out one by one as it is iterated, and the errors it raises then are
    ``not_records``' to explain."""
    codec = attributes & COMPRESSION_MASK
    if codec:
        if codec not in _codec.SUPPORTED:
            raise CorruptRecordError(f"{_where(pos, base_offset)}: cannot decode compression "
                                     f"codec {codec} ({_codec.CODEC_NAMES.get(codec, 'unknown')})")
        try:
            section = _codec.decompress(codec, view[pos + HEADER_SIZE:pos + size])
        except CorruptRecordError as exc:
            raise CorruptRecordError(f"{_where(pos, base_offset)}: {exc.message}") from exc
        buf = b"".join((view[pos:pos + ATTRIBUTES_POS],
                        I16.pack(attributes & ~COMPRESSION_MASK),
                        view[pos + LAST_OFFSET_DELTA_POS:pos + HEADER_SIZE], section))
    elif type(view.obj) in _SAFE_EXPORTERS:
        buf = view[pos:pos + size]
    else:  # e.g. an mmap: copy, so no read can run past the end of mapped memory
        buf = bytes(view[pos:pos + size])
    return DefaultRecordBatch(buf)


def not_records(exc: Exception, pos: int, base_offset: int) -> CorruptRecordError:
    """The CorruptRecordError for what aiokafka raised while reading a records section."""
    detail = (exc.args[0] if type(exc) is CorruptRecordException and exc.args
              else f"{type(exc).__name__}: {exc}")
    return CorruptRecordError(f"{_where(pos, base_offset)}: records section is not valid "
                              f"Kafka v2 records ({detail})")


def check_offsets(offsets: list[int], pos: int, base_offset: int,
                  last_offset_delta: int) -> None:
    """CorruptRecordError unless the offsets increase strictly within the batch's range."""
    if not offsets:
        return
    if offsets[0] < base_offset or offsets[-1] > base_offset + last_offset_delta:
        raise CorruptRecordError(
            f"{_where(pos, base_offset)}: offset deltas {offsets[0] - base_offset}.."
            f"{offsets[-1] - base_offset} fall outside 0..{last_offset_delta} "
            f"(last_offset_delta)")
    if not all(map(lt, offsets, offsets[1:])):
        bad = next(i for i in range(1, len(offsets)) if offsets[i] <= offsets[i - 1])
        raise CorruptRecordError(
            f"{_where(pos, base_offset)}: record {bad} has offset delta "
            f"{offsets[bad] - base_offset} after {offsets[bad - 1] - base_offset}; "
            f"deltas must increase")


def columns(records: list):
    """``(timestamps, keys, values, headers)`` iterators over aiokafka ``records``; headers as
    tuples of ``(str, bytes | None)`` pairs, as Record and ConsumerRecord hold them."""
    return (map(_timestamp_of, records), map(_key_of, records), map(_value_of, records),
            map(tuple, map(_headers_of, records)))


__all__ = ["Record", "CREATE_TIME", "LOG_APPEND_TIME", "COMPILED", "make_records", "new_builder",
           "seal", "decode", "open_batch", "not_records", "check_offsets", "columns"]
