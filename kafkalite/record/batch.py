"""Record batches: build them (producer, log cleaner, tests) and read them (consumer, tools).

A batch is the 61-byte v2 header (``header.py``) followed by the records section: ONE msgpack array
holding one small array per record,

    [offset_delta, timestamp_delta, key, value, headers]

where ``offset_delta`` counts from the batch's ``base_offset``, ``timestamp_delta`` from its
``first_timestamp`` (the first record's timestamp), ``key``/``value`` are msgpack bin or nil, and
``headers`` is a list of ``[str, bin|nil]`` pairs (a reader also accepts 4-element records, meaning
no headers). The whole section is compressed as one unit by the codec in ``attributes``.

Both directions avoid per-record Python work where they can: building transposes the input with
``zip`` and packs it in one ``msgpack.packb`` call; reading unpacks in one call and checks each
column with C-level ``map``/``set`` passes.

Any malformed input a reader sees -- truncation, bad CRC, bad magic, an undecodable or wrongly
shaped records section -- raises CorruptRecordError saying what is wrong and at which byte; no other
exception escapes a reader for bad bytes. (Passing something that is not a bytes-like object at all,
or a negative position, is a programming error: TypeError / ValueError.)

``validate_batch_bytes`` is the broker's check: whole batches, good CRCs, sane headers, supported
codec -- without decompressing or decoding any record.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass
from itertools import islice, repeat
from operator import add, lt, sub

import msgpack
from crc32c import crc32c

from kafkalite.errors import (
    CorruptRecordError,
    IllegalStateError,
    InvalidRecordError,
    UnsupportedCompressionTypeError,
)
from kafkalite.record import compression as _codec
from kafkalite.record.header import (
    COMPRESSION_MASK,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    MAGIC_POS,
    TIMESTAMP_TYPE_BIT,
    BatchHeader,
    check_batch,
    iter_headers,
    parse_header,
    peek_size,
)

__all__ = [
    "Record", "BatchBuilder", "build_batch", "read_batch", "iter_batches", "iter_records",
    "validate_batch_bytes", "CREATE_TIME", "LOG_APPEND_TIME",
]

CREATE_TIME = 0
LOG_APPEND_TIME = 1

# The header split at the CRC: what precedes it, and what it covers.
_PREFIX = struct.Struct(">qiibI")  # base_offset, batch_length, partition_leader_epoch, magic, crc
_TAIL = struct.Struct(">hiqqqhii")  # attributes .. record_count
assert _PREFIX.size + _TAIL.size == HEADER.size == HEADER_SIZE

_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1
_I32_MAX = (1 << 31) - 1
_I16_MIN, _I16_MAX = -(1 << 15), (1 << 15) - 1
_I32_MIN = -(1 << 31)

_NoneType = type(None)
_INT = frozenset({int})
_TUPLE = frozenset({tuple})
#: what a builder accepts for a key, value or header value (msgpack packs all three as bin)
_IN_BYTES = frozenset({bytes, bytearray, memoryview, _NoneType})
#: what a reader accepts for them (msgpack unpacks bin as bytes)
_OUT_BYTES = frozenset({bytes, _NoneType})
_ROW_4 = frozenset({4})
_ROW_5 = frozenset({5})
_ROW_4_5 = frozenset({4, 5})
_RECORD_SHAPE = frozenset({4})

# Rough msgpack cost of one record besides its key and value bytes (array, deltas, bin headers).
_RECORD_OVERHEAD = 16
_HEADER_OVERHEAD = 6


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


def _make_records(n: int, *columns) -> list[Record]:
    records = list(map(_new_object, repeat(Record, n)))
    for setter, column in zip(_SLOT_SETTERS, columns):
        deque(map(setter, records, column), maxlen=0)
    return records


# --------------------------------------------------------------------------------------- building

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
                 "producer_epoch", "base_sequence", "timestamp_type")

    def __init__(self, compression, base_offset, partition_leader_epoch, producer_id,
                 producer_epoch, base_sequence, timestamp_type, compression_level):
        self.codec = _resolve_codec(compression)
        self.level = compression_level
        self.base_offset = _check_int("base_offset", base_offset, _I64_MIN, _I64_MAX)
        self.partition_leader_epoch = _check_int(
            "partition_leader_epoch", partition_leader_epoch, _I32_MIN, _I32_MAX)
        self.producer_id = _check_int("producer_id", producer_id, _I64_MIN, _I64_MAX)
        self.producer_epoch = _check_int("producer_epoch", producer_epoch, _I16_MIN, _I16_MAX)
        self.base_sequence = _check_int("base_sequence", base_sequence, _I32_MIN, _I32_MAX)
        if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME) or type(timestamp_type) is not int:
            raise ValueError(f"timestamp_type must be 0 (CreateTime) or 1 (LogAppendTime), "
                             f"got {timestamp_type!r}")
        self.timestamp_type = timestamp_type

    def seal(self, rows, count: int, last_offset_delta: int, first_ts: int, max_ts: int) -> bytes:
        try:
            packed = msgpack.packb(rows, use_bin_type=True)
        except (ValueError, TypeError, OverflowError, BufferError) as exc:
            # e.g. a header name that is not encodable as UTF-8, a non-contiguous memoryview
            raise ValueError(f"cannot encode records: {exc}") from exc
        payload = _codec.compress(self.codec, packed, self.level)
        attributes = self.codec | (TIMESTAMP_TYPE_BIT if self.timestamp_type else 0)
        batch_length = HEADER_SIZE - LOG_OVERHEAD + len(payload)
        if batch_length > _I32_MAX:
            raise ValueError(f"batch of {batch_length} bytes exceeds the 2 GiB format limit")
        tail = _TAIL.pack(attributes, last_offset_delta, first_ts, max_ts, self.producer_id,
                          self.producer_epoch, self.base_sequence, count)
        crc = crc32c(payload, crc32c(tail))
        prefix = _PREFIX.pack(self.base_offset, batch_length, self.partition_leader_epoch,
                              MAGIC, crc)
        return b"".join((prefix, tail, payload))


def _normalize_headers(headers) -> tuple:
    """None, ``[(str, bytes|None), ...]`` or ``{str: bytes|None}`` -> a tuple of pairs."""
    if not headers:
        return ()
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
        if type(value) not in _IN_BYTES:
            raise TypeError(f"header {name!r} value must be bytes or None, got "
                            f"{type(value).__name__}")
        out.append((name, value))
    return tuple(out)


def _check_bytes_field(what: str, value) -> None:
    if type(value) not in _IN_BYTES:
        raise TypeError(f"record {what} must be bytes or None, got {type(value).__name__}")


def _check_timestamp_spread(first: int, lo: int, hi: int) -> None:
    if lo < _I64_MIN or hi > _I64_MAX:
        raise ValueError(f"timestamp out of the int64 range: {lo if lo < _I64_MIN else hi}")
    if lo - first < _I64_MIN or hi - first > _I64_MAX:
        raise ValueError(f"timestamps {lo} and {hi} are too far apart to share a batch")


class BatchBuilder:
    """Accumulates records, then ``build()`` returns one sealed batch.

    ``compression`` is a codec name ("none", "gzip", "lz4", "zstd") or Kafka id (0, 1, 3, 4).
    ``append`` returns the record's offset delta; offsets run 0, 1, 2, ... unless an explicit,
    strictly increasing ``offset_delta`` is given (the log cleaner keeps original offsets).
    """

    __slots__ = ("_sealer", "_rows", "_first_ts", "_max_ts", "_last_delta", "_size")

    def __init__(self, compression="none", base_offset: int = 0, partition_leader_epoch: int = -1,
                 producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                 timestamp_type: int = CREATE_TIME, *, compression_level: int | None = None):
        self._sealer = _Sealer(compression, base_offset, partition_leader_epoch, producer_id,
                               producer_epoch, base_sequence, timestamp_type, compression_level)
        self._rows: list[tuple] = []
        self._first_ts: int | None = None
        self._max_ts = _I64_MIN
        self._last_delta = -1
        self._size = HEADER_SIZE

    def append(self, timestamp_ms: int, key: bytes | None, value: bytes | None,
               headers=None, *, offset_delta: int | None = None) -> int:
        """Add one record; returns its offset delta. TypeError/ValueError for bad arguments."""
        if type(timestamp_ms) is not int:
            raise TypeError(f"timestamp_ms must be an int, got {type(timestamp_ms).__name__}")
        _check_bytes_field("key", key)
        _check_bytes_field("value", value)
        hdrs = _normalize_headers(headers)
        if offset_delta is None:
            delta = self._last_delta + 1
            if delta > _I32_MAX:
                raise ValueError("batch is full: offset delta would exceed int32")
        else:
            delta = _check_int("offset_delta", offset_delta, 0, _I32_MAX)
            if delta <= self._last_delta:
                raise ValueError(f"offset_delta {delta} must exceed the previous "
                                 f"{self._last_delta}")
        first = timestamp_ms if self._first_ts is None else self._first_ts
        _check_timestamp_spread(first, timestamp_ms, timestamp_ms)
        self._first_ts = first
        if timestamp_ms > self._max_ts:
            self._max_ts = timestamp_ms
        self._rows.append((delta, timestamp_ms - first, key, value, hdrs))
        self._last_delta = delta
        size = _RECORD_OVERHEAD
        if key is not None:
            size += len(key)
        if value is not None:
            size += len(value)
        for name, hvalue in hdrs:
            size += _HEADER_OVERHEAD + len(name) + (0 if hvalue is None else len(hvalue))
        self._size += size
        return delta

    @property
    def record_count(self) -> int:
        return len(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def estimated_size(self) -> int:
        """Bytes the batch would take uncompressed (an upper-ish estimate, for batch.size)."""
        return self._size

    def build(self) -> bytes:
        """The sealed batch. IllegalStateError if nothing was appended. The builder stays usable."""
        if not self._rows:
            raise IllegalStateError("cannot build a record batch with no records")
        return self._sealer.seal(self._rows, len(self._rows), self._last_delta, self._first_ts,
                                 self._max_ts)


def build_batch(records, compression="none", base_offset: int = 0,
                partition_leader_epoch: int = -1, producer_id: int = -1, producer_epoch: int = -1,
                base_sequence: int = -1, timestamp_type: int = CREATE_TIME, *,
                compression_level: int | None = None) -> bytes:
    """Build one batch from ``(timestamp_ms, key, value, headers)`` tuples in a single pass.

    The producer's fast path: offsets deltas are 0..n-1; headers may be None. Raises
    IllegalStateError for no records, TypeError/ValueError for malformed input.
    """
    sealer = _Sealer(compression, base_offset, partition_leader_epoch, producer_id,
                     producer_epoch, base_sequence, timestamp_type, compression_level)
    recs = records if type(records) is list or type(records) is tuple else list(records)
    n = len(recs)
    if n == 0:
        raise IllegalStateError("cannot build a record batch with no records")
    if n > _I32_MAX:
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
    first = timestamps[0]
    max_ts = max(timestamps)
    _check_timestamp_spread(first, min(timestamps), max_ts)
    hdrs = list(map(_normalize_headers, headers)) if any(headers) else repeat((), n)
    rows = list(zip(range(n), map(sub, timestamps, repeat(first, n)), keys, values, hdrs))
    return sealer.seal(rows, n, n - 1, first, max_ts)


# ---------------------------------------------------------------------------------------- reading

def _as_view(buf) -> memoryview:
    if isinstance(buf, memoryview):
        view = buf
    else:
        try:
            view = memoryview(buf)
        except TypeError:
            raise TypeError(f"expected a bytes-like object, got {type(buf).__name__}") from None
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    return view


def _check_at(view: memoryview, pos: int, verify_crc: bool) -> BatchHeader:
    if type(pos) is not int or pos < 0:
        raise ValueError(f"position must be a non-negative int, got {pos!r}")
    if verify_crc:
        return check_batch(view, pos)
    header = parse_header(view, pos)
    if len(view) - pos < header.size:
        raise CorruptRecordError(
            f"truncated batch at byte {pos}: declares {header.size} bytes, "
            f"{len(view) - pos} present")
    return header


def _first_index(column, ok) -> int:
    for i, item in enumerate(column):
        if not ok(item):
            return i
    return -1  # pragma: no cover - only called once a check has failed


def _decode(view: memoryview, pos: int, header: BatchHeader) -> list[Record]:
    """The records of the (already length/CRC-checked) batch at ``pos``."""
    where = f"batch at byte {pos} (base offset {header.base_offset})"

    def corrupt(what: str) -> CorruptRecordError:
        return CorruptRecordError(f"{where}: {what}")

    section = view[pos + HEADER_SIZE:pos + header.size]
    codec = header.attributes & COMPRESSION_MASK
    if codec:
        if codec not in _codec.SUPPORTED:
            name = _codec.CODEC_NAMES.get(codec, "unknown")
            raise corrupt(f"cannot decode compression codec {codec} ({name})")
        try:
            section = _codec.decompress(codec, section)
        except CorruptRecordError as exc:
            raise corrupt(exc.message) from exc
    try:
        rows = msgpack.unpackb(section, use_list=False, raw=False)
    except Exception as exc:  # msgpack raises ValueError subclasses, UnicodeDecodeError, ...
        raise corrupt(f"records section is not valid msgpack ({type(exc).__name__}: {exc})"
                      ) from None

    if type(rows) is not tuple:
        raise corrupt(f"records section is a msgpack {type(rows).__name__}, not an array")
    n = len(rows)
    if n != header.record_count:
        raise corrupt(f"header says {header.record_count} records, records section holds {n}")
    if n == 0:
        return []
    if not _TUPLE.issuperset(map(type, rows)):
        bad = _first_index(rows, lambda r: type(r) is tuple)
        raise corrupt(f"record {bad} is a msgpack {type(rows[bad]).__name__}, not an array")
    shapes = set(map(len, rows))
    if shapes == _ROW_5:
        deltas, ts_deltas, keys, values, hdrs = zip(*rows)
    elif shapes == _ROW_4:
        deltas, ts_deltas, keys, values = zip(*rows)
        hdrs = repeat((), n)
    elif shapes == _ROW_4_5:
        deltas, ts_deltas, keys, values, hdrs = zip(*(r if len(r) == 5 else r + ((),)
                                                     for r in rows))
    else:
        bad = _first_index(rows, lambda r: len(r) in (4, 5))
        raise corrupt(f"record {bad} has {len(rows[bad])} fields, expected 5")

    # offset deltas: ints, strictly increasing, within [0, last_offset_delta]
    if not _INT.issuperset(map(type, deltas)):
        bad = _first_index(deltas, lambda d: type(d) is int)
        raise corrupt(f"record {bad} has an offset delta of type {type(deltas[bad]).__name__}")
    if deltas[0] < 0 or deltas[-1] > header.last_offset_delta:
        raise corrupt(f"offset deltas {deltas[0]}..{deltas[-1]} fall outside "
                      f"0..{header.last_offset_delta} (last_offset_delta)")
    if not all(map(lt, deltas, islice(deltas, 1, None))):
        bad = next(i for i in range(1, n) if deltas[i] <= deltas[i - 1])
        raise corrupt(f"record {bad} has offset delta {deltas[bad]} after {deltas[bad - 1]}; "
                      f"deltas must increase")

    # timestamps: int deltas from first_timestamp, landing inside int64
    if not _INT.issuperset(map(type, ts_deltas)):
        bad = _first_index(ts_deltas, lambda d: type(d) is int)
        raise corrupt(f"record {bad} has a timestamp delta of type "
                      f"{type(ts_deltas[bad]).__name__}")
    first = header.first_timestamp
    if first + min(ts_deltas) < _I64_MIN or first + max(ts_deltas) > _I64_MAX:
        raise corrupt("a record timestamp falls outside the int64 range")
    if header.attributes & TIMESTAMP_TYPE_BIT:
        timestamps = repeat(header.max_timestamp, n)  # LogAppendTime: the broker's clock rules
    else:
        timestamps = map(add, repeat(first, n), ts_deltas)

    if not _OUT_BYTES.issuperset(map(type, keys)):
        bad = _first_index(keys, lambda k: type(k) in _OUT_BYTES)
        raise corrupt(f"record {bad} has a key of type {type(keys[bad]).__name__}")
    if not _OUT_BYTES.issuperset(map(type, values)):
        bad = _first_index(values, lambda v: type(v) in _OUT_BYTES)
        raise corrupt(f"record {bad} has a value of type {type(values[bad]).__name__}")
    if type(hdrs) is tuple:
        if not _TUPLE.issuperset(map(type, hdrs)):
            bad = _first_index(hdrs, lambda h: type(h) is tuple)
            raise corrupt(f"record {bad} has headers of type {type(hdrs[bad]).__name__}")
        if any(hdrs):
            for i, record_headers in enumerate(hdrs):
                for pair in record_headers:
                    if (type(pair) is not tuple or len(pair) != 2 or type(pair[0]) is not str
                            or type(pair[1]) not in _OUT_BYTES):
                        raise corrupt(f"record {i} has a malformed header {pair!r:.60}; "
                                      f"expected a [str, bytes|nil] pair")

    offsets = map(add, repeat(header.base_offset, n), deltas)
    return _make_records(n, offsets, timestamps, keys, values, hdrs)


def read_batch(buf, pos: int = 0, verify_crc: bool = True) -> tuple[BatchHeader, list[Record]]:
    """Decode the batch at ``buf[pos:]``: its header and its records (absolute offsets/timestamps).

    Bytes after the batch are ignored (advance by ``header.size``). CorruptRecordError for any
    malformed input.
    """
    view = _as_view(buf)
    header = _check_at(view, pos, verify_crc)
    return header, _decode(view, pos, header)


def _partial_tail(view: memoryview, pos: int) -> bool:
    """True if ``view[pos:]`` looks like the start of a batch cut off by a size limit."""
    remaining = len(view) - pos
    size = peek_size(view, pos)
    if size is None:
        return True
    if remaining > MAGIC_POS and view[pos + MAGIC_POS] != MAGIC:
        return False  # not a batch at all: let the checks report it
    return size >= HEADER_SIZE and size > remaining


def iter_batches(buf, pos: int = 0, verify_crc: bool = True, allow_partial: bool = False):
    """Yield ``(header, records)`` for each batch in ``buf[pos:]`` (e.g. a fetch response).

    With ``allow_partial`` a batch cut short at the very end of ``buf`` (as a byte-limited fetch
    may return) ends the iteration silently; otherwise it is CorruptRecordError like any damage.
    """
    view = _as_view(buf)
    end = len(view)
    while pos < end:
        if allow_partial and _partial_tail(view, pos):
            return
        header = _check_at(view, pos, verify_crc)
        yield header, _decode(view, pos, header)
        pos += header.size


def iter_records(buf, verify_crc: bool = True, allow_partial: bool = False):
    """Yield every Record of every batch in ``buf``, in order, with absolute offsets."""
    for _header, records in iter_batches(buf, 0, verify_crc, allow_partial):
        yield from records


def validate_batch_bytes(buf, *, from_producer: bool = False) -> list[BatchHeader]:
    """The broker's check of an incoming record set, without decoding any record.

    ``buf`` must be a sequence of whole v2 batches with good CRCs and consistent headers
    (CorruptRecordError otherwise; snappy gives UnsupportedCompressionTypeError). With
    ``from_producer`` each batch must also look like a producer's: at least one record and
    ``record_count == last_offset_delta + 1`` (InvalidRecordError otherwise). An empty ``buf``
    yields ``[]``. Returns the headers in order; batch ``i`` starts at ``sum(h.size for h in
    headers[:i])``.
    """
    view = _as_view(buf)
    headers = []
    for pos, header in iter_headers(view):
        codec = header.attributes & COMPRESSION_MASK
        if codec not in _codec.SUPPORTED:
            if codec == _codec.SNAPPY:
                raise UnsupportedCompressionTypeError(
                    f"batch at byte {pos} is snappy-compressed, which kafkalite does not support")
            raise CorruptRecordError(f"batch at byte {pos} has invalid compression codec {codec}")
        if header.record_count > header.last_offset_delta + 1:
            raise CorruptRecordError(
                f"batch at byte {pos} claims {header.record_count} records in "
                f"{header.last_offset_delta + 1} offsets")
        if header.batch_length == HEADER_SIZE - LOG_OVERHEAD:
            raise CorruptRecordError(f"batch at byte {pos} has no records section")
        if from_producer and (header.record_count == 0
                              or header.record_count != header.last_offset_delta + 1):
            raise InvalidRecordError(
                f"batch at byte {pos} has {header.record_count} records but last offset delta "
                f"{header.last_offset_delta}; a producer's batch has deltas 0..count-1")
        headers.append(header)
    return headers
