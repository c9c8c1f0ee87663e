"""Test helpers for the kafkalite.log tests: a fake clock, small configs, batch factories."""

from __future__ import annotations

from crc32c import crc32c

from kafkalite.config import TopicConfig
from kafkalite.record import header as hdr
from kafkalite.record.batch import build_batch

START_MS = 1_600_000_000_000


class FakeClock:
    """A millisecond clock the test moves by hand."""

    def __init__(self, now: int = START_MS):
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> int:
        self.now += ms
        return self.now


def topic_config(**overrides) -> TopicConfig:
    """A TopicConfig with files deleted at once unless told otherwise."""
    values = {"file_delete_delay_ms": 0}
    values.update(overrides)
    return TopicConfig(**values)


def make_batch(n: int = 1, timestamp: int = START_MS, value_size: int = 10, key=None,
               timestamps=None, keys=None, values=None, base_offset: int = 0,
               compression="none") -> bytes:
    """A real v2 batch of ``n`` records (kafkalite.record.batch)."""
    ts = list(timestamps) if timestamps is not None else [timestamp] * n
    ks = list(keys) if keys is not None else [key] * n
    vs = list(values) if values is not None else [bytes([i % 251]) * value_size
                                                  for i in range(n)]
    return build_batch(list(zip(ts, ks, vs, [None] * n)), compression=compression,
                       base_offset=base_offset)


def raw_batch(records: bytes = b"x" * 20, count: int = 1, base_offset: int = 0,
              first_timestamp: int = START_MS, max_timestamp: int | None = None,
              attributes: int = 0, leader_epoch: int = -1, last_offset_delta: int | None = None
              ) -> bytes:
    """A structurally valid batch whose records section is arbitrary bytes (the log never
    decodes records)."""
    delta = count - 1 if last_offset_delta is None else last_offset_delta
    max_ts = first_timestamp if max_timestamp is None else max_timestamp
    length = hdr.HEADER_SIZE - hdr.LOG_OVERHEAD + len(records)
    head = bytearray(hdr.HEADER.pack(base_offset, length, leader_epoch, hdr.MAGIC, 0, attributes,
                                     delta, first_timestamp, max_ts, -1, -1, -1, count))
    body = bytes(head) + records
    crc = crc32c(body[hdr.ATTRIBUTES_POS:])
    out = bytearray(body)
    out[hdr.CRC_POS:hdr.CRC_POS + 4] = crc.to_bytes(4, "big")
    return bytes(out)


def headers_of(data) -> list:
    """Every BatchHeader in ``data`` (CRC checked)."""
    return [h for _pos, h in hdr.iter_headers(data, 0, None, True)]


def offsets_of(data) -> list[tuple[int, int]]:
    return [(h.base_offset, h.last_offset) for h in headers_of(data)]
