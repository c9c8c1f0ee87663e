"""The consumer's fast path from fetched bytes to ``ConsumerRecord`` tuples.

``decode_rows`` gives each record as a plain tuple with ConsumerRecord's fields; the fetcher
turns them into ConsumerRecords only as it hands them out (``as_records``, a C-level ``map``).
Why: CPython's collector untracks a plain tuple of untracked values (ints, bytes, str, None)
at its first young collection, but never a tuple subclass such as a NamedTuple. A fetch's
thousands of decoded records, kept as ConsumerRecords while the application takes them 500 at a
time, lived through the young collections into the oldest generation and set off full
collections of the whole heap (about 40% of a ``poll()`` loop's CPU, gc on); plain rows leave
the collector nothing to walk, and the ConsumerRecords handed out die young in a plain loop.

A fetch response's ``records`` are stored batches, back to back; the last one may be cut short by
the size limit, and the first may start before the requested offset (a fetch from inside a batch
returns the whole batch). ``decode_records`` walks the batch headers, skips whole batches below
the position and control batches (transaction markers) without decoding them, checks each
remaining batch's CRC, has aiokafka's compiled codec parse its Kafka v2 records (``record.v2``),
drops the records below the position, and builds the tuples in one comprehension over the
records -- no other per-record Python code unless deserializers are set.

read_committed (``aborted_transactions`` given: the fetch response's list of (producer id, first
offset) of the aborted transactions the fetched range overlaps) also drops the batches of aborted
transactions exactly as Kafka's Java ``Fetcher`` does: walking the batches in order, every
aborted transaction that starts at or before a batch's last offset puts its producer in the
aborted set (a queue sorted by first offset); a transactional batch of a producer in the set is
skipped; that producer's ABORT marker takes it out again. This runs over every batch of the
response, also those before the position, so the set is right when the position is reached.

A topic of an old ``message.format.version`` holds magic 0/1 messages instead of batches: each
(a compressed wrapper with its inner messages) is read by ``record.entries.read_entry``.

Errors are the strict reader's: a header that is not a batch's is handed to
``kafkalite.record.read_batch``, which raises CorruptRecordError saying what is wrong, and
``record.v2`` raises it for a records section that does not parse.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from itertools import repeat
from operator import attrgetter, itemgetter
from typing import NamedTuple

from crc32c import crc32c

from kafkalite.client.structs import ConsumerRecord
from kafkalite.errors import CorruptRecordError
from kafkalite.record import read_batch
from kafkalite.record.header import (
    ATTRIBUTES_POS,
    CONTROL_BIT,
    F_ATTRIBUTES,
    F_BASE_OFFSET,
    HEADER,
    I64,
    HEADER_SIZE,
    LENGTH_POS,
    LOG_OVERHEAD,
    MAGIC,
    MAGIC_POS,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
)
from kafkalite.record.control import ABORT, control_type
from kafkalite.record.entries import read_entry
from kafkalite.record.legacy_convert import legacy_fields
from kafkalite.record.v2 import check_offsets, not_records, open_batch

__all__ = ["DecodedFetch", "as_records", "decode_records", "decode_rows", "scan_batches"]

_unpack_header = HEADER.unpack_from
_new = tuple.__new__
_offset_of = attrgetter("offset")
_offset_in = itemgetter(2)                 # a row's (or ConsumerRecord's) offset


class DecodedFetch(NamedTuple):
    records: list            # records (rows from decode_rows) with offset >= the position
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
        if end - pos > MAGIC_POS and view[pos + MAGIC_POS] < MAGIC:  # a magic 0/1 message
            size = _length_at(view, pos)
            if size > end - pos:
                return next_offset, pos, size
            next_offset = max(next_offset, I64.unpack_from(view, pos)[0] + 1)
            pos += size
            continue
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


def as_records(rows) -> list:
    """ConsumerRecords of ``decode_rows``' rows (or of ConsumerRecords: copies)."""
    return list(map(_new, repeat(ConsumerRecord), rows))


def decode_records(data, topic: str, partition: int, position: int, check_crcs: bool = True,
                   key_deserializer=None, value_deserializer=None,
                   aborted_transactions=None) -> DecodedFetch:
    """Every record at or after ``position`` in ``data`` (a fetch response's record bytes) as
    ConsumerRecords, without those of the aborted transactions among ``aborted_transactions``
    (read_committed: ``(producer_id, first_offset)`` pairs; see the module doc)."""
    decoded = decode_rows(data, topic, partition, position, check_crcs, key_deserializer,
                          value_deserializer, aborted_transactions)
    return decoded._replace(records=as_records(decoded.records))


def decode_rows(data, topic: str, partition: int, position: int, check_crcs: bool = True,
                key_deserializer=None, value_deserializer=None,
                aborted_transactions=None) -> DecodedFetch:
    """``decode_records`` with each record as a plain tuple of ConsumerRecord's fields (a
    *row*; ``as_records`` makes ConsumerRecords of them)."""
    aborted = None
    aborted_pids: set = set()
    if aborted_transactions:
        aborted = [(t[1], t[0]) for t in aborted_transactions]   # (first offset, producer id)
        heapq.heapify(aborted)
    view = memoryview(data)
    end = len(view)
    pos = 0
    out: list = []
    next_offset = position
    partial = 0
    while pos < end:
        remaining = end - pos
        if remaining > MAGIC_POS and view[pos + MAGIC_POS] < MAGIC:
            # a magic 0/1 message (or wrapper): a topic of an old message.format.version
            size = _length_at(view, pos)
            if size > remaining:
                partial = size
                break
            records, nxt = _legacy_records(view, pos, check_crcs, topic, partition, position)
            out.extend(records)
            next_offset = max(next_offset, nxt)
            pos += size
            continue
        if remaining < HEADER_SIZE:
            partial = _length_at(view, pos) if remaining >= LOG_OVERHEAD else HEADER_SIZE
            if remaining > MAGIC_POS and view[pos + MAGIC_POS] != MAGIC:
                read_batch(view, pos)  # raises the precise CorruptRecordError
            break
        (base, length, _epoch, magic, crc, attributes, last_delta, _first_ts, _max_ts,
         pid, _pepoch, _seq, count) = _unpack_header(view, pos)
        size = LOG_OVERHEAD + length
        if magic != MAGIC or length < HEADER_SIZE - LOG_OVERHEAD or last_delta < 0 or count < 0:
            read_batch(view, pos)
            raise CorruptRecordError(f"malformed batch at byte {pos}")  # pragma: no cover
        if size > remaining:
            partial = size
            break
        nxt = base + last_delta + 1
        if aborted is not None and pid >= 0:
            # Java's Fetcher: the aborted transactions begun by this batch's last offset
            while aborted and aborted[0][0] < nxt:
                aborted_pids.add(heapq.heappop(aborted)[1])
            if attributes & CONTROL_BIT:
                if pid in aborted_pids and _is_abort_marker(view, pos, size, base, attributes):
                    aborted_pids.discard(pid)
            elif attributes & TRANSACTIONAL_BIT and pid in aborted_pids:
                if nxt > next_offset:     # an aborted transaction's batch: never handed out
                    next_offset = nxt
                pos += size
                continue
        if nxt <= position:               # wholly before the position: skip, undecoded
            pos += size
            continue
        if check_crcs and crc32c(view[pos + ATTRIBUTES_POS:pos + size]) != crc:
            read_batch(view, pos)         # raises the CRC mismatch error
        if attributes & CONTROL_BIT:      # transaction markers carry no user records
            next_offset = max(next_offset, nxt)
            pos += size
            continue
        records = _decode_batch(view, pos, size, base, attributes, last_delta, topic, partition,
                                position)
        if records:
            out.extend(records)
        if nxt > next_offset:
            next_offset = nxt
        pos += size
    if key_deserializer is not None or value_deserializer is not None:
        out = _deserialize(out, key_deserializer, value_deserializer)
    return DecodedFetch(out, next_offset, partial)


def _legacy_records(view, pos: int, check_crcs: bool, topic: str, partition: int,
                    position: int) -> tuple[list, int]:
    """The records at or after ``position`` of the magic 0/1 entry at ``pos`` and the offset
    after it (a wrapper counts at its last offset)."""
    fields = legacy_fields(view, pos, verify_crc=check_crcs)
    _header, records = read_entry(view, pos)
    tstype = 1 if fields[F_ATTRIBUTES] & TIMESTAMP_TYPE_BIT else 0
    return [(topic, partition, r.offset, r.timestamp, tstype, r.key, r.value, ())
            for r in records if r.offset >= position], fields[F_BASE_OFFSET] + 1


def _is_abort_marker(view, pos: int, size: int, base: int, attributes: int) -> bool:
    """Whether a control batch's (first) record is an ABORT marker (Java's
    ``containsAbortMarker``)."""
    try:
        for record in open_batch(view, pos, size, base, attributes):
            return control_type(record.key) == ABORT
    except CorruptRecordError:
        raise
    except Exception as exc:  # noqa: BLE001 - aiokafka raises several kinds for bad bytes
        raise not_records(exc, pos, base) from None
    return False


def _decode_batch(view, pos, size, base, attributes, last_delta, topic, partition, position):
    # Streamed: aiokafka makes one record object (and a headers list) per record, and each is
    # gone as soon as its row is built, so none lives through the garbage collector's
    # young collections (materialising them first cost more than the decoding, gc on). One
    # comprehension reading each record's fields once is cheaper than the column readers over
    # itertools.tee it replaces (whose buffers the five readers walked once each).
    batch = open_batch(view, pos, size, base, attributes)
    tstype = 1 if attributes & TIMESTAMP_TYPE_BIT else 0
    try:
        records = _rows(batch, topic, partition, tstype)
    except Exception as exc:  # CorruptRecordException, UnicodeDecodeError (a header name), ...
        raise not_records(exc, pos, base) from None
    offsets = list(map(_offset_in, records))
    check_offsets(offsets, pos, base, last_delta)
    if base < position:  # a fetch from inside this batch: drop what comes before the position
        start = bisect_left(offsets, position)
        if start:
            records = records[start:]
    return records


def _rows(batch, topic: str, partition: int, tstype: int, _tuple=tuple) -> list:
    # plain tuples (see the module doc); tuple bound as a default: no builtin lookup per record
    return [(topic, partition, r.offset, r.timestamp, tstype, r.key, r.value, _tuple(r.headers))
            for r in batch]


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
        append((r[0], r[1], r[2], r[3], r[4], key, value, r[7]))
    return out
