"""The consumer's fast path from fetched bytes to ``ConsumerRecord`` tuples.

A fetch response's ``records`` are stored batches, back to back; the last one may be cut short by
the size limit, and the first may start before the requested offset. ``decode_records`` walks the
batch headers, skips whole batches below the position without decoding them, checks each
remaining batch's CRC, unpacks its records section in one msgpack call and builds the tuples with
C-level ``map``/``zip`` passes -- no per-record Python code unless deserializers are set.

It relies on the record format of ``kafkalite.record`` (header layout from ``record.header``, the
records section as one msgpack array of ``[offset_delta, timestamp_delta, key, value, headers]``).
Anything that does not look exactly like a well-formed batch is handed to the strict reader
``kafkalite.record.read_batch``, which raises CorruptRecordError saying what is wrong, so the fast
path never has to explain errors itself.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import repeat
from operator import add
from typing import NamedTuple

import msgpack
from crc32c import crc32c

from kafkalite.client.structs import ConsumerRecord
from kafkalite.errors import CorruptRecordError
from kafkalite.record import compression as _codec
from kafkalite.record import read_batch
from kafkalite.record.header import (
    ATTRIBUTES_POS,
    COMPRESSION_MASK,
    CONTROL_BIT,
    HEADER,
    HEADER_SIZE,
    LENGTH_POS,
    LOG_OVERHEAD,
    MAGIC,
    MAGIC_POS,
    TIMESTAMP_TYPE_BIT,
)

__all__ = ["DecodedFetch", "decode_records", "scan_batches"]

_unpack_header = HEADER.unpack_from
_new = tuple.__new__
_INT = frozenset({int})
_BYTES_OR_NONE = frozenset({bytes, type(None)})
_FIVE = frozenset({5})
_NO_HEADERS = frozenset({()})


class DecodedFetch(NamedTuple):
    records: list            # ConsumerRecord tuples with offset >= the position asked
    next_offset: int         # where the next fetch starts (after the last complete batch)
    partial_size: int        # declared size of a trailing cut-off batch, 0 if none


def _length_at(view, pos: int) -> int:
    return LOG_OVERHEAD + int.from_bytes(view[pos + LENGTH_POS:pos + LENGTH_POS + 4], "big",
                                         signed=True)


def scan_batches(data, position: int) -> tuple[int, int, int]:
    """Headers only: ``(next_offset, complete_bytes, partial_size)`` for fetched ``data``.

    ``next_offset`` is the offset after the last complete batch (``position`` if there is none),
    ``complete_bytes`` the length of the whole-batch prefix, ``partial_size`` the declared size of
    a trailing cut-off batch (0 if none). No CRC check, no decoding: cheap enough to run as soon
    as a response arrives so the next fetch can go out at once.
    """
    view = memoryview(data)
    end = len(view)
    pos = 0
    next_offset = position
    while pos < end:
        if end - pos < HEADER_SIZE:
            return next_offset, pos, (_length_at(view, pos) if end - pos >= LOG_OVERHEAD
                                      else HEADER_SIZE)
        fields = _unpack_header(view, pos)
        size = LOG_OVERHEAD + fields[1]
        if fields[1] < HEADER_SIZE - LOG_OVERHEAD or fields[3] != MAGIC:
            return next_offset, pos, 0  # damaged: decode_records reports it
        if size > end - pos:
            return next_offset, pos, size
        nxt = fields[0] + fields[6] + 1
        if nxt > next_offset:
            next_offset = nxt
        pos += size
    return next_offset, pos, 0


def decode_records(data, topic: str, partition: int, position: int, check_crcs: bool = True,
                   key_deserializer=None, value_deserializer=None) -> DecodedFetch:
    """Every record at or after ``position`` in ``data`` (a fetch response's record bytes)."""
    view = memoryview(data)
    end = len(view)
    pos = 0
    out: list = []
    next_offset = position
    partial = 0
    while pos < end:
        remaining = end - pos
        if remaining < HEADER_SIZE:
            partial = _length_at(view, pos) if remaining >= LOG_OVERHEAD else HEADER_SIZE
            if remaining > MAGIC_POS and view[pos + MAGIC_POS] != MAGIC:
                read_batch(view, pos)  # raises the precise CorruptRecordError
            break
        (base, length, _epoch, magic, crc, attributes, last_delta, first_ts, max_ts,
         _pid, _pepoch, _seq, count) = _unpack_header(view, pos)
        size = LOG_OVERHEAD + length
        if magic != MAGIC or length < HEADER_SIZE - LOG_OVERHEAD or last_delta < 0 or count < 0:
            read_batch(view, pos)
            raise CorruptRecordError(f"malformed batch at byte {pos}")  # pragma: no cover
        if size > remaining:
            partial = size
            break
        nxt = base + last_delta + 1
        if nxt <= position:               # wholly before the position: skip, undecoded
            pos += size
            continue
        if check_crcs and crc32c(view[pos + ATTRIBUTES_POS:pos + size]) != crc:
            read_batch(view, pos)         # raises the CRC mismatch error
        if attributes & CONTROL_BIT:      # transaction markers carry no user records
            next_offset = max(next_offset, nxt)
            pos += size
            continue
        records = _decode_batch(view, pos, size, base, attributes, last_delta, first_ts,
                                max_ts, count, topic, partition, position)
        if records is None:               # not the expected shape: let the strict reader judge
            header, strict = read_batch(view, pos, verify_crc=False)
            tstype = header.timestamp_type
            records = [ConsumerRecord(topic, partition, r.offset, r.timestamp, tstype, r.key,
                                      r.value, r.headers)
                       for r in strict if r.offset >= position]
        if records:
            out.extend(records)
        if nxt > next_offset:
            next_offset = nxt
        pos += size
    if key_deserializer is not None or value_deserializer is not None:
        out = _deserialize(out, key_deserializer, value_deserializer)
    return DecodedFetch(out, next_offset, partial)


def _decode_batch(view, pos, size, base, attributes, last_delta, first_ts, max_ts, count,
                  topic, partition, position):
    section = view[pos + HEADER_SIZE:pos + size]
    codec = attributes & COMPRESSION_MASK
    try:
        if codec:
            section = _codec.decompress(codec, section)
        rows = msgpack.unpackb(section, use_list=False, raw=False)
    except Exception:  # noqa: BLE001 - the strict reader explains it
        return None
    if type(rows) is not tuple or len(rows) != count:
        return None
    if not count:
        return []
    try:
        if set(map(len, rows)) != _FIVE:
            return None
    except TypeError:
        return None
    deltas, ts_deltas, keys, values, headers = zip(*rows)
    if (not _INT.issuperset(map(type, deltas)) or not _INT.issuperset(map(type, ts_deltas))
            or not _BYTES_OR_NONE.issuperset(map(type, keys))
            or not _BYTES_OR_NONE.issuperset(map(type, values))
            or deltas[0] < 0 or deltas[-1] > last_delta):
        return None
    if not _NO_HEADERS.issuperset(headers):
        for record_headers in headers:
            if type(record_headers) is not tuple:
                return None
            for pair in record_headers:
                if (type(pair) is not tuple or len(pair) != 2 or type(pair[0]) is not str
                        or type(pair[1]) not in _BYTES_OR_NONE):
                    return None
    start = 0
    if base < position:
        start = bisect_left(deltas, position - base)
        if start:
            deltas, ts_deltas = deltas[start:], ts_deltas[start:]
            keys, values, headers = keys[start:], values[start:], headers[start:]
    n = count - start
    if attributes & TIMESTAMP_TYPE_BIT:
        timestamps = repeat(max_ts, n)
        tstype = 1
    else:
        timestamps = map(add, repeat(first_ts, n), ts_deltas)
        tstype = 0
    offsets = map(add, repeat(base, n), deltas)
    return list(map(_new, repeat(ConsumerRecord, n),
                    zip(repeat(topic, n), repeat(partition, n), offsets, timestamps,
                        repeat(tstype, n), keys, values, headers)))


def _deserialize(records: list, key_deserializer, value_deserializer) -> list:
    kd = key_deserializer
    vd = value_deserializer
    out = []
    append = out.append
    for r in records:
        key, value = r[5], r[6]
        if kd is not None and key is not None:
            key = kd(key)
        if vd is not None and value is not None:
            value = vd(value)
        append(_new(ConsumerRecord, (r[0], r[1], r[2], r[3], r[4], key, value, r[7])))
    return out
