"""Recognising kafkalite's old record format, so a broker refuses old data dirs by name.

Before it adopted Kafka's v2 records, kafkalite stored the same 61-byte header followed by ONE
msgpack array of ``[offset_delta, timestamp_delta, key, value, headers]`` records (compressed by
the same codecs). Headers and CRCs of such batches still check out, so nothing fails until a record
is decoded -- by a consumer, long after startup. ``is_msgpack_batch`` tells the two apart from one
batch; the log loader calls it on the first batch of each partition when a log is opened
(docs/architecture.md, 6. Storage).
"""

from __future__ import annotations

import msgpack

from kafkalite.errors import CorruptRecordError
from kafkalite.record import compression as _codec
from kafkalite.record.header import COMPRESSION_MASK, HEADER_SIZE, parse_header
from kafkalite.record.reader import as_view, read_batch

__all__ = ["is_msgpack_batch"]

_OLD_RECORD_FIELDS = (4, 5)  # records without headers were written as 4-element arrays


def is_msgpack_batch(data, pos: int = 0) -> bool:
    """True if the whole batch at ``data[pos:]`` is not Kafka v2 records but the old msgpack
    records section. False for a good v2 batch and for bytes that are neither (those are left
    to the readers and recovery to report)."""
    view = as_view(data)
    try:
        read_batch(view, pos, verify_crc=False)
        return False
    except CorruptRecordError:
        pass
    try:
        header = parse_header(view, pos)
        section = view[pos + HEADER_SIZE:pos + header.size]
        codec = header.attributes & COMPRESSION_MASK
        if codec:
            section = _codec.decompress(codec, section)
        rows = msgpack.unpackb(section, use_list=False, raw=False)
    except Exception:  # noqa: BLE001 - not msgpack either: not ours to explain
        return False
    return (type(rows) is tuple and len(rows) == header.record_count
            and all(type(row) is tuple and len(row) in _OLD_RECORD_FIELDS
                    and type(row[0]) is int for row in rows))
