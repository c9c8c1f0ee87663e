"""Record batches: build them (producer, log cleaner, tests) and read them (consumer, tools).

A batch is byte for byte Apache Kafka's magic-2 batch: the 61-byte header (``header.py``) and
Kafka's varint records (``v2.py``), compressed together by the codec in ``attributes``. Records
are written and parsed by aiokafka's compiled codec; this module validates what callers pass,
keeps the batch-level bookkeeping (offset deltas, first and max timestamps) and writes the header.

Building avoids per-record Python work where it can: ``build_batch`` checks each column with
C-level ``map``/``set`` passes and feeds aiokafka's ``append`` through ``map``; ``BatchBuilder``
is the incremental form the log cleaner uses (explicit offset deltas) and produces the same bytes.

The readers (``read_batch``, ``iter_batches``, ``iter_records``, ``validate_batch_bytes``) live in
``reader.py`` and are re-exported here.
"""

from __future__ import annotations

from collections import deque
from itertools import repeat
from operator import sub

from kafkalite.errors import IllegalStateError
from kafkalite.record import compression as _codec
from kafkalite.record.header import CONTROL_BIT, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT
from kafkalite.record.reader import iter_batches, iter_records, read_batch, validate_batch_bytes
from kafkalite.record.v2 import (
    CREATE_TIME,
    I32_MAX,
    I32_MIN,
    I64_MAX,
    I64_MIN,
    LOG_APPEND_TIME,
    Record,
    new_builder,
    seal,
)

__all__ = [
    "Record", "BatchBuilder", "build_batch", "build_batch_columns", "rebuild_batch", "read_batch",
    "iter_batches", "iter_records", "validate_batch_bytes", "CREATE_TIME", "LOG_APPEND_TIME",
]

_I16_MIN, _I16_MAX = -(1 << 15), (1 << 15) - 1

_NoneType = type(None)
_INT = frozenset({int})
#: what a builder accepts for a key or value (aiokafka copies any contiguous buffer)
_IN_BYTES = frozenset({bytes, bytearray, memoryview, _NoneType})
_RECORD_SHAPE = frozenset({4})
_NO_HEADERS: list = []  # shared by every header-less record: aiokafka only reads it
# validated header settings of build_batch_columns (the producer's: a handful of (codec, producer
# id, epoch, sequence) combinations; an idempotent producer's sequences fill it, then it stops)
_SEALERS: dict = {}
# what aiokafka raises for a value it cannot write: a non-contiguous buffer (BufferError), a
# header name that is not encodable as UTF-8 (UnicodeEncodeError, a ValueError), a huge length
_ENCODE_ERRORS = (BufferError, ValueError, OverflowError)


def _check_int(name: str, value, lo: int, hi: int) -> int:
    if type(value) is not int:
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not lo <= value <= hi:
        raise ValueError(f"{name}={value} is out of range [{lo}, {hi}]")
    return value


def _resolve_codec(compression) -> int:
    if type(compression) is int and compression in _codec.SUPPORTED:
        return compression
    return _codec.compression_id(compression)


class _Sealer:
    """The header fields a builder fixes up front, validated once."""

    __slots__ = ("codec", "level", "base_offset", "partition_leader_epoch", "producer_id",
                 "producer_epoch", "base_sequence", "attributes")

    def __init__(self, compression, base_offset, partition_leader_epoch, producer_id,
                 producer_epoch, base_sequence, timestamp_type, compression_level,
                 transactional: bool = False, control: bool = False):
        self.codec = _resolve_codec(compression)
        self.level = compression_level
        self.base_offset = _check_int("base_offset", base_offset, I64_MIN, I64_MAX)
        self.partition_leader_epoch = _check_int(
            "partition_leader_epoch", partition_leader_epoch, I32_MIN, I32_MAX)
        self.producer_id = _check_int("producer_id", producer_id, I64_MIN, I64_MAX)
        self.producer_epoch = _check_int("producer_epoch", producer_epoch, _I16_MIN, _I16_MAX)
        self.base_sequence = _check_int("base_sequence", base_sequence, I32_MIN, I32_MAX)
        if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME) or type(timestamp_type) is not int:
            raise ValueError(f"timestamp_type must be 0 (CreateTime) or 1 (LogAppendTime), "
                             f"got {timestamp_type!r}")
        self.attributes = ((TIMESTAMP_TYPE_BIT if timestamp_type else 0)
                           | (TRANSACTIONAL_BIT if transactional else 0)
                           | (CONTROL_BIT if control else 0))

    def seal(self, built: bytearray, count: int, last_offset_delta: int, first_ts: int,
             max_ts: int) -> bytes:
        return seal(built, self.codec, self.level, self.base_offset, self.partition_leader_epoch,
                    self.attributes, last_offset_delta, first_ts, max_ts, self.producer_id,
                    self.producer_epoch, self.base_sequence, count)


def _header_list(headers) -> list:
    """None, ``[(str, bytes|None), ...]`` or ``{str: bytes|None}`` -> a list of pairs as aiokafka
    takes them (tuples, values bytes or None)."""
    if not headers:
        return _NO_HEADERS
    if isinstance(headers, dict):
        pairs = headers.items()
    elif isinstance(headers, (list, tuple)):
        pairs = headers
    else:
        raise TypeError(f"headers must be a list of (str, bytes) pairs, got "
                        f"{type(headers).__name__}")
    out = []
    for pair in pairs:
        try:
            name, value = pair
        except (TypeError, ValueError):
            raise TypeError(f"each header must be a (str, bytes) pair, got {pair!r}") from None
        if type(name) is not str:
            raise TypeError(f"header name must be str, got {type(name).__name__}")
        if type(value) is not bytes and value is not None:
            if type(value) not in _IN_BYTES:
                raise TypeError(f"header {name!r} value must be bytes or None, got "
                                f"{type(value).__name__}")
            value = bytes(value)  # aiokafka takes exactly bytes for header values
        out.append((name, value))
    return out


def _check_bytes_field(what: str, value) -> None:
    if type(value) not in _IN_BYTES:
        raise TypeError(f"record {what} must be bytes or None, got {type(value).__name__}")


def _check_timestamp_spread(first: int, lo: int, hi: int) -> None:
    if lo < I64_MIN or hi > I64_MAX:
        raise ValueError(f"timestamp out of the int64 range: {lo if lo < I64_MIN else hi}")
    if lo - first < I64_MIN or hi - first > I64_MAX:
        raise ValueError(f"timestamps {lo} and {hi} are too far apart to share a batch")


class BatchBuilder:
    """Accumulates records, then ``build()`` returns one sealed batch.

    ``compression`` is a codec name ("none", "gzip", "snappy", "lz4", "zstd") or Kafka id (0-4).
    ``append`` returns the record's offset delta; offsets run 0, 1, 2, ... unless an explicit,
    strictly increasing ``offset_delta`` is given (the log cleaner keeps original offsets).
    """

    __slots__ = ("_sealer", "_builder", "_count", "_first_ts", "_max_ts", "_last_delta")

    def __init__(self, compression="none", base_offset: int = 0, partition_leader_epoch: int = -1,
                 producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                 timestamp_type: int = CREATE_TIME, *, compression_level: int | None = None,
                 transactional: bool = False, control: bool = False):
        self._sealer = _Sealer(compression, base_offset, partition_leader_epoch, producer_id,
                               producer_epoch, base_sequence, timestamp_type, compression_level,
                               transactional, control)
        self._builder = new_builder()
        self._count = 0
        self._first_ts: int | None = None
        self._max_ts = I64_MIN
        self._last_delta = -1

    def append(self, timestamp_ms: int, key: bytes | None, value: bytes | None,
               headers=None, *, offset_delta: int | None = None) -> int:
        """Add one record; returns its offset delta. TypeError/ValueError for bad arguments (and
        the record is not added)."""
        # (the checks are inlined: this runs once per record in the cleaner's Python loop)
        if type(timestamp_ms) is not int:
            raise TypeError(f"timestamp_ms must be an int, got {type(timestamp_ms).__name__}")
        if type(key) not in _IN_BYTES:
            _check_bytes_field("key", key)
        if type(value) not in _IN_BYTES:
            _check_bytes_field("value", value)
        hdrs = _header_list(headers) if headers else _NO_HEADERS
        if offset_delta is None:
            delta = self._last_delta + 1
            if delta > I32_MAX:
                raise ValueError("batch is full: offset delta would exceed int32")
        else:
            delta = _check_int("offset_delta", offset_delta, 0, I32_MAX)
            if delta <= self._last_delta:
                raise ValueError(f"offset_delta {delta} must exceed the previous "
                                 f"{self._last_delta}")
        first = self._first_ts
        if first is None:
            first = timestamp_ms
        ts_delta = timestamp_ms - first
        if not (I64_MIN <= timestamp_ms <= I64_MAX and I64_MIN <= ts_delta <= I64_MAX):
            _check_timestamp_spread(first, timestamp_ms, timestamp_ms)  # raises, saying which
        try:  # aiokafka gets the timestamp delta (see v2.new_builder)
            self._builder.append(delta, ts_delta, key, value, hdrs)
        except _ENCODE_ERRORS as exc:
            raise ValueError(f"cannot encode record: {exc}") from exc
        self._first_ts = first
        if timestamp_ms > self._max_ts:
            self._max_ts = timestamp_ms
        self._last_delta = delta
        self._count += 1
        return delta

    @property
    def record_count(self) -> int:
        return self._count

    def __len__(self) -> int:
        return self._count

    def estimated_size(self) -> int:
        """Bytes the batch takes uncompressed, header included (exact: aiokafka's buffer)."""
        return self._builder.size()

    def build(self) -> bytes:
        """The sealed batch. IllegalStateError if nothing was appended. The builder stays usable."""
        if not self._count:
            raise IllegalStateError("cannot build a record batch with no records")
        return self._sealer.seal(self._builder.build(), self._count, self._last_delta,
                                 self._first_ts, self._max_ts)


def rebuild_batch(header, records, compression) -> bytes:
    """``records`` (decoded from the batch ``header`` describes) built again as one batch with
    ``compression``, keeping the header's base offset, leader epoch, producer id/epoch/sequence,
    timestamp type, transactional bit and each record's offset delta: the log cleaner (fewer
    records, same codec) and a topic's compression.type (same records, another codec) both
    rebuild so."""
    builder = BatchBuilder(
        compression=compression, base_offset=header.base_offset,
        partition_leader_epoch=header.partition_leader_epoch,
        producer_id=header.producer_id, producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence, timestamp_type=header.timestamp_type,
        transactional=bool(header.attributes & TRANSACTIONAL_BIT))
    for record in records:
        builder.append(record.timestamp, record.key, record.value, record.headers,
                       offset_delta=record.offset - header.base_offset)
    return builder.build()


def build_batch(records, compression="none", base_offset: int = 0,
                partition_leader_epoch: int = -1, producer_id: int = -1, producer_epoch: int = -1,
                base_sequence: int = -1, timestamp_type: int = CREATE_TIME, *,
                compression_level: int | None = None, transactional: bool = False,
                control: bool = False) -> bytes:
    """Build one batch from ``(timestamp_ms, key, value, headers)`` tuples in a single pass.

    The producer's fast path: offsets deltas are 0..n-1; headers may be None. Raises
    IllegalStateError for no records, TypeError/ValueError for malformed input. The bytes equal
    what BatchBuilder makes of the same records.
    """
    sealer = _Sealer(compression, base_offset, partition_leader_epoch, producer_id,
                     producer_epoch, base_sequence, timestamp_type, compression_level,
                     transactional, control)
    recs = records if type(records) is list or type(records) is tuple else list(records)
    n = len(recs)
    if n == 0:
        raise IllegalStateError("cannot build a record batch with no records")
    if n > I32_MAX:
        raise ValueError(f"{n} records do not fit one batch")
    try:
        shapes = set(map(len, recs))
    except TypeError:
        shapes = None
    if shapes != _RECORD_SHAPE:
        bad = next(i for i, r in enumerate(recs)
                   if not hasattr(r, "__len__") or len(r) != 4)
        raise TypeError(f"record {bad} must be a (timestamp_ms, key, value, headers) tuple, "
                        f"got {recs[bad]!r:.80}")
    timestamps, keys, values, headers = zip(*recs)
    if not _INT.issuperset(map(type, timestamps)):
        bad = next(i for i, t in enumerate(timestamps) if type(t) is not int)
        raise TypeError(f"record {bad}: timestamp_ms must be an int, got "
                        f"{type(timestamps[bad]).__name__}")
    if not _IN_BYTES.issuperset(map(type, keys)):
        bad = next(i for i, k in enumerate(keys) if type(k) not in _IN_BYTES)
        raise TypeError(f"record {bad}: key must be bytes or None, got {type(keys[bad]).__name__}")
    if not _IN_BYTES.issuperset(map(type, values)):
        bad = next(i for i, v in enumerate(values) if type(v) not in _IN_BYTES)
        raise TypeError(f"record {bad}: value must be bytes or None, got "
                        f"{type(values[bad]).__name__}")
    return _build_columns(sealer, n, timestamps, keys, values, headers)


def _build_columns(sealer: _Sealer, n: int, timestamps, keys, values, headers) -> bytes:
    first = timestamps[0]
    max_ts = max(timestamps)
    _check_timestamp_spread(first, min(timestamps), max_ts)
    hdrs = list(map(_header_list, headers)) if any(headers) else repeat(_NO_HEADERS, n)
    # aiokafka computes the deltas itself, except from a first timestamp of -1, which it takes
    # for "no record yet" (see v2.new_builder): then it gets the deltas
    stamps = timestamps if first != -1 else map(sub, timestamps, repeat(first, n))
    builder = new_builder()
    try:  # one C-level pass: aiokafka's append over the columns
        deque(map(builder.append, range(n), stamps, keys, values, hdrs), maxlen=0)
    except _ENCODE_ERRORS as exc:
        raise ValueError(f"cannot encode records: {exc}") from exc
    return sealer.seal(builder.build(), n, n - 1, first, max_ts)


def build_batch_columns(timestamps: list, keys: list | None, values: list,
                        headers: list | None, compression="none", *, producer_id: int = -1,
                        producer_epoch: int = -1, base_sequence: int = -1,
                        compression_level: int | None = None,
                        transactional: bool = False) -> bytes:
    """``build_batch`` from columns whose types the caller vouches for: the producer's
    accumulator, filled by ``send()``, which checked every key, value, timestamp and header.
    ``keys``/``headers`` None means none at all. The per-record type passes are skipped (the
    timestamps' spread is still checked, encoding errors still raised); the header fields'
    validation is done once per settings and cached. Same bytes as ``build_batch``."""
    n = len(timestamps)
    if n == 0:
        raise IllegalStateError("cannot build a record batch with no records")
    if n > I32_MAX:
        raise ValueError(f"{n} records do not fit one batch")
    settings = (compression, producer_id, producer_epoch, base_sequence, compression_level,
                transactional)
    sealer = _SEALERS.get(settings)
    if sealer is None:
        sealer = _Sealer(compression, 0, -1, producer_id, producer_epoch, base_sequence,
                         CREATE_TIME, compression_level, transactional)
        if len(_SEALERS) < 64:
            _SEALERS[settings] = sealer
    return _build_columns(sealer, n, timestamps, repeat(None, n) if keys is None else keys,
                          values, () if headers is None else headers)
