"""Reading one stored entry whatever its format: a v2 batch, or a magic 0/1 message (a wrapper
with its inner messages), for the log's record-level work on topics of an old
``message.format.version`` (compaction, the exact record of a timestamp lookup).

A legacy entry comes back as a ``BatchHeader`` of one entry (``legacy_convert.legacy_fields``)
and kafkalite ``Record``s with absolute offsets, read by aiokafka's LegacyRecordBatch; rebuilding
a legacy entry from some of its records writes the same magic and codec again, as Kafka's
cleaner does.
"""

from __future__ import annotations

from aiokafka.record.legacy_records import LegacyRecordBatch

from kafkalite.record.batch import Record, rebuild_batch
from kafkalite.record.header import MAGIC, TIMESTAMP_TYPE_BIT, BatchHeader
from kafkalite.record.legacy_convert import legacy_fields, legacy_set
from kafkalite.record.reader import read_batch

__all__ = ["read_entry", "rebuild_entry"]


def read_entry(data, pos: int = 0) -> tuple[BatchHeader, list[Record]]:
    """The header and records of the stored entry at ``pos`` (CRCs are not checked)."""
    view = memoryview(data)
    if len(view) - pos > 16 and view[pos + 16] < MAGIC:
        header = BatchHeader(*legacy_fields(view, pos))
        batch = LegacyRecordBatch(view[pos:pos + header.size], header.magic)
        return header, [Record(r.offset, -1 if r.timestamp is None else r.timestamp, r.key,
                               r.value, ()) for r in batch]
    return read_batch(view, pos, verify_crc=False)


def rebuild_entry(header: BatchHeader, records: list[Record], codec: int) -> bytes:
    """``records`` of the entry ``header`` written again: a v2 batch, or legacy messages of the
    same magic (one wrapper at their last offset if ``codec``)."""
    if header.magic >= MAGIC:
        return rebuild_batch(header, records, codec)
    log_append_time = header.max_timestamp if header.attributes & TIMESTAMP_TYPE_BIT else None
    return legacy_set([(r.offset, r.timestamp, r.key, r.value) for r in records], header.magic,
                      codec, log_append_time)
