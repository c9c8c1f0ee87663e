"""Test helpers for the kafkalite.record tests: sample rows, expected Records, and batches written
by hand -- ``reseal`` wraps an arbitrary records section in a header with a correct CRC, and
``kafka_record`` is a small test-side encoder of Kafka's v2 record layout, independent of aiokafka
(which kafkalite uses)."""

from __future__ import annotations

import struct

from crc32c import crc32c

from kafkalite.record import HEADER_SIZE, Record
from kafkalite.record import header as H

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1

SAMPLE = [
    (1_700_000_000_000, b"key-1", b"value-1", None),
    (1_700_000_000_005, None, b"", [("trace", b"abc"), ("empty", b""), ("null", None)]),
    (1_699_999_999_990, b"", None, []),
    (1_700_000_000_003, bytes(range(256)), bytes(range(255, -1, -1)) * 3,
     [("\u00fc\u2603", b"\x00\xff")]),
]


def expected_records(base_offset, rows):
    return [Record(base_offset + i, ts, key, value, tuple((n, v) for n, v in (hdrs or ())))
            for i, (ts, key, value, hdrs) in enumerate(rows)]


def reseal(section: bytes, *, record_count: int, last_offset_delta: int | None = None,
           attributes: int = 0, first_ts: int = 0, max_ts: int = 0, base_offset: int = 0,
           epoch: int = -1, batch_length: int | None = None) -> bytes:
    """A batch with the given (possibly nonsensical) records section and a correct CRC."""
    if last_offset_delta is None:
        last_offset_delta = max(record_count - 1, 0)
    tail = struct.pack(">hiqqqhii", attributes, last_offset_delta, first_ts, max_ts, -1, -1, -1,
                       record_count)
    crc = crc32c(section, crc32c(tail))
    length = HEADER_SIZE - H.LOG_OVERHEAD + len(section) if batch_length is None else batch_length
    return struct.pack(">qiibI", base_offset, length, epoch, 2, crc) + tail + section


def varint(n: int) -> bytes:
    """Kafka's zigzag varint of an int64."""
    z = ((n << 1) ^ (n >> 63)) & ((1 << 64) - 1)
    out = bytearray()
    while z >= 0x80:
        out.append(z & 0x7F | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def blob(data) -> bytes:
    """A varint length and the bytes; None is length -1. str is UTF-8 encoded."""
    if data is None:
        return varint(-1)
    data = data.encode() if isinstance(data, str) else data
    return varint(len(data)) + data


def kafka_record(offset_delta: int, ts_delta: int, key, value, headers=(), *, attributes=0,
                 length=None, header_count=None) -> bytes:
    """One record in Kafka's v2 layout; ``length``/``header_count`` may lie."""
    body = (bytes([attributes]) + varint(ts_delta) + varint(offset_delta) + blob(key)
            + blob(value) + varint(len(headers) if header_count is None else header_count)
            + b"".join(blob(name) + blob(hvalue) for name, hvalue in headers))
    return varint(len(body) if length is None else length) + body


ONE = kafka_record(0, 0, None, b"v")  # a well-formed one-record section
