"""Reading stored batches: whole batches to Records, and the broker's no-decode validation.

Any malformed input a reader sees -- truncation, bad CRC, bad magic, an unknown codec, a records
section that does not decompress or does not parse as Kafka's v2 records -- raises
CorruptRecordError saying what is wrong and at which byte; no other exception escapes a reader for
bad bytes. (Passing something that is not a bytes-like object at all, or a negative position, is a
programming error: TypeError / ValueError.)
"""

from __future__ import annotations

from kafkalite.errors import CorruptRecordError, InvalidRecordError
from kafkalite.record import compression as _codec
from kafkalite.record.header import (
    COMPRESSION_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    MAGIC_POS,
    BatchHeader,
    check_batch,
    iter_headers,
    parse_header,
    peek_size,
)
from kafkalite.record.v2 import Record, columns, decode, make_records

__all__ = ["read_batch", "iter_batches", "iter_records", "validate_batch_bytes"]


def as_view(buf) -> memoryview:
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


def _records(view: memoryview, pos: int, header: BatchHeader) -> list[Record]:
    records, offsets = decode(view, pos, header.size, header.base_offset, header.attributes,
                              header.last_offset_delta)
    if not records:
        return []
    # aiokafka already applies LogAppendTime (every record gets the batch's max_timestamp)
    return make_records(len(records), offsets, *columns(records))


def read_batch(buf, pos: int = 0, verify_crc: bool = True) -> tuple[BatchHeader, list[Record]]:
    """Decode the batch at ``buf[pos:]``: its header and its records (absolute offsets/timestamps).

    Bytes after the batch are ignored (advance by ``header.size``). CorruptRecordError for any
    malformed input.
    """
    view = as_view(buf)
    header = _check_at(view, pos, verify_crc)
    return header, _records(view, pos, header)


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
    view = as_view(buf)
    end = len(view)
    while pos < end:
        if allow_partial and _partial_tail(view, pos):
            return
        header = _check_at(view, pos, verify_crc)
        yield header, _records(view, pos, header)
        pos += header.size


def iter_records(buf, verify_crc: bool = True, allow_partial: bool = False):
    """Yield every Record of every batch in ``buf``, in order, with absolute offsets."""
    for _header, records in iter_batches(buf, 0, verify_crc, allow_partial):
        yield from records


def validate_batch_bytes(buf, *, from_producer: bool = False) -> list[BatchHeader]:
    """The broker's check of an incoming record set, without decoding any record.

    ``buf`` must be a sequence of whole v2 batches with good CRCs and consistent headers and a
    codec Kafka defines (CorruptRecordError otherwise). With ``from_producer`` each batch must
    also look like a producer's: at least one record and ``record_count == last_offset_delta + 1``
    (InvalidRecordError otherwise). An empty ``buf`` yields ``[]``. Returns the headers in order;
    batch ``i`` starts at ``sum(h.size for h in headers[:i])``.
    """
    view = as_view(buf)
    headers = []
    for pos, header in iter_headers(view):
        codec = header.attributes & COMPRESSION_MASK
        if codec not in _codec.SUPPORTED:
            raise CorruptRecordError(f"batch at byte {pos} has invalid compression codec {codec}")
        if header.record_count > header.last_offset_delta + 1:
            raise CorruptRecordError(
                f"batch at byte {pos} claims {header.record_count} records in "
                f"{header.last_offset_delta + 1} offsets")
        if header.batch_length == HEADER_SIZE - LOG_OVERHEAD:
            # (Kafka's cleaner can leave such empty batches; kafkalite's drops them, and a log
            # append must never carry one, so the log's fast path refuses them too.)
            raise CorruptRecordError(f"batch at byte {pos} has no records section")
        if from_producer and (header.record_count == 0
                              or header.record_count != header.last_offset_delta + 1):
            raise InvalidRecordError(
                f"batch at byte {pos} has {header.record_count} records but last offset delta "
                f"{header.last_offset_delta}; a producer's batch has deltas 0..count-1")
        headers.append(header)
    return headers

