"""Log compaction (``cleanup.policy=compact``): keep only the newest record per key.

``compact_segments`` rewrites the non-active segments a log hands it; the Log decides when (the
dirty ratio against ``min.cleanable.dirty.ratio``) and puts each rewritten copy in place of its
segment. The rules are Kafka's cleaner's:

* the newest record of each key (over all the segments cleaned) stays, older ones go;
* a tombstone (null value) that is the newest for its key stays for ``delete.retention.ms``
  after its batch's max timestamp;
* records without a key are kept;
* transactions (``txn_cleaning``, Kafka's rules): the batches of aborted transactions go and stay
  out of the key map, markers stay while their transaction has batches and then until
  ``delete.retention.ms`` after their segment's last modification, each producer's last batch
  stays (emptied of its records if need be), and a rewritten segment's ``.txnindex`` keeps the
  aborted transactions whose batches were still there;
* each segment is rewritten on its own, with the same base offset: batches wholly kept are copied
  byte for byte, partly kept ones re-encoded with their codec, emptied ones dropped (magic 0/1
  messages of an old ``message.format.version`` likewise, in their own format: ``record.entries``).

A rewritten copy is written as ``<base>.log.cleaned``, fsynced, then renamed ``.swap``: that
rename is the commit point (recovery at the next start completes a swap it finds).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from kafkalite.log.checkpoint import fsync_dir
from kafkalite.log.segment import CLEANED_SUFFIX, SWAP_SUFFIX, LogSegment
from kafkalite.log.txn_cleaning import CleanedTxns, LastRecord, empty_batch, is_last_record
from kafkalite.log.txn_index import AbortedTxn
from kafkalite.record import header as hdr
from kafkalite.record.entries import read_entry, rebuild_entry

#: what compaction asks of its log: the aborted transactions overlapping [start, end)
CollectAborted = Callable[[int, int], list[AbortedTxn]]
#: puts the compacted copy of a segment in its place: (segment, chunks, batches, txn entries)
Replace = Callable[[LogSegment, list[bytes], list, list[AbortedTxn]], None]


@dataclass(slots=True)
class CompactionResult:
    segments: int
    bytes_before: int
    bytes_after: int
    records_removed: int


def dirty_ratio(inactive: list[LogSegment], cleaned_up_to: int) -> float:
    """Share of the bytes of ``inactive`` (the non-active segments) not compacted yet, i.e. at
    or past ``cleaned_up_to``."""
    total = sum(s.size for s in inactive)
    if not total:
        return 0.0
    dirty = sum(s.size for s in inactive if s.next_offset > cleaned_up_to)
    return dirty / total


def compact_if_dirty(inactive: list[LogSegment], now: int, config, force: bool,
                     cleaned_up_to: int, replace: Replace,
                     collect_aborted: CollectAborted | None = None,
                     last: dict[int, LastRecord] | None = None) -> CompactionResult | None:
    """``compact_segments`` when the dirty ratio of ``inactive`` reaches
    ``min.cleanable.dirty.ratio`` (or ``force``); None when there was nothing to do."""
    if not inactive:
        return None
    if not force and dirty_ratio(inactive, cleaned_up_to) < config.min_cleanable_dirty_ratio:
        return None
    return compact_segments(inactive, now, config.delete_retention_ms, replace,
                            collect_aborted, last)


def compact_segments(inactive: list[LogSegment], now: int, delete_retention_ms: int,
                     replace: Replace, collect_aborted: CollectAborted | None = None,
                     last: dict[int, LastRecord] | None = None) -> CompactionResult:
    """Compact ``inactive`` (oldest first, wholly below any open transaction). Each segment
    that loses records or txn index entries is handed to ``replace`` with its kept batches:
    the chunks to write, per chunk ``(position, base offset, last offset, max timestamp)``,
    and the entries of its new ``.txnindex``. ``collect_aborted`` reads the log's txn
    indexes; ``last`` is each producer's LastRecord (its batch stays)."""
    collect = collect_aborted or (lambda _start, _end: [])
    end = inactive[-1].next_offset if inactive else 0
    latest = _latest_offsets(inactive, collect(inactive[0].base_offset, end) if inactive else [])
    horizon = now - delete_retention_ms
    result = CompactionResult(0, 0, 0, 0)
    txns = CleanedTxns()
    for i, segment in enumerate(inactive):
        upper = inactive[i + 1].base_offset if i + 1 < len(inactive) else segment.next_offset
        txns.add_aborted(collect(segment.base_offset, upper))
        txns.cleaned_index = []
        retain_markers = segment.last_modified_ms() > horizon
        chunks, batches, removed, size_after = _kept_batches(
            segment, latest, horizon, txns, retain_markers, last or {})
        result.bytes_before += segment.size
        if (removed == 0 and size_after == segment.size
                and txns.cleaned_index == segment.txn_index.all_aborted()):
            result.bytes_after += segment.size
            continue
        replace(segment, chunks, batches, txns.cleaned_index)
        result.segments += 1
        result.records_removed += removed
        result.bytes_after += size_after
    return result


def _latest_offsets(inactive: list[LogSegment], aborted: list[AbortedTxn]) -> dict[bytes, int]:
    """The offset of the newest record of each key, aborted transactions and markers left out
    (Kafka's buildOffsetMap)."""
    latest: dict[bytes, int] = {}
    txns = CleanedTxns()
    txns.add_aborted(aborted)
    for segment in inactive:
        data = segment.read_all()
        pos = 0
        while pos < len(data):
            header, records = read_entry(data, pos)
            pos += header.size
            if header.attributes & hdr.CONTROL_BIT:
                txns.on_marker(header, records)
                continue
            if txns.on_batch(header):
                continue
            for record in records:
                if record.key is not None:
                    latest[record.key] = record.offset
    return latest


def _kept_batches(segment: LogSegment, latest: dict[bytes, int], horizon: int,
                  txns: CleanedTxns, retain_markers: bool, last: dict[int, LastRecord]):
    """``(chunks, batches, records removed, bytes kept)`` of ``segment`` after compaction
    (no record removed and as many bytes kept as there were: every batch was kept whole)."""
    data = segment.read_all()
    chunks: list[bytes] = []
    batches = []
    out_pos = 0
    removed = 0
    pos = 0
    while pos < len(data):
        header, records = read_entry(data, pos)
        if header.attributes & hdr.CONTROL_BIT:
            discard = txns.on_marker(header, records) and not retain_markers
            keep = [] if discard else records
        elif txns.on_batch(header):
            keep = []  # an aborted transaction's batch
        else:
            keep = [r for r in records
                    if r.key is None or (latest.get(r.key) == r.offset
                                         and (r.value is not None
                                              or header.max_timestamp >= horizon))]
        removed += len(records) - len(keep)
        if len(keep) == len(records) and records:
            chunk = bytes(data[pos:pos + header.size])
        elif keep:
            chunk = rebuild_entry(header, keep, header.compression)
        elif is_last_record(header, last):
            chunk = empty_batch(header)  # the producer's state lives on in its header
        else:
            chunk = b""
        if chunk:
            fields = next(hdr.iter_headers(chunk, verify_crc=False))[1]
            batches.append((out_pos, fields.base_offset, fields.last_offset,
                            fields.max_timestamp))
            chunks.append(chunk)
            out_pos += len(chunk)
        pos += header.size
    return chunks, batches, removed, out_pos


def write_swap_copy(old: LogSegment, chunks: list[bytes], batches: list, config,
                    clock: Callable[[], int], aborted: list[AbortedTxn] = ()) -> LogSegment:
    """Write the compacted copy of ``old`` (with ``aborted`` as its txn index) as
    ``.cleaned``, fsync it and rename it ``.swap`` (the commit point). On any failure the copy
    is removed and the error raised."""
    dir, base = old.dir, old.base_offset
    cleaned = LogSegment(dir, base, config, clock, suffix=CLEANED_SUFFIX)
    try:
        cleaned.txn_index.reset()  # a stale .txnindex.cleaned of an interrupted run
        if chunks:
            max_ts = max(b[3] for b in batches)
            offset_of_max = next(b[2] for b in batches if b[3] == max_ts)
            cleaned.append(b"".join(chunks), batches[-1][2], max_ts, offset_of_max, batches)
        for entry in aborted:
            cleaned.txn_index.append(entry)
        cleaned.seal()
        cleaned.flush()
        # the copy keeps the old file's mtime, as Kafka's cleaner does: retention times a
        # segment left empty by its mtime, which must not restart at every compaction
        modified = os.stat(old.log_path).st_mtime_ns
        os.utime(cleaned.log_path, ns=(modified, modified))
        cleaned.change_suffix(CLEANED_SUFFIX, SWAP_SUFFIX)
        fsync_dir(dir)
    except BaseException:
        cleaned.delete()
        raise
    return cleaned
