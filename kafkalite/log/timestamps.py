"""The leader's check of CreateTime record timestamps against its clock, as Kafka's
LogValidator.validateTimestamp: a record whose timestamp differs from now by more than the
topic's ``message.timestamp.difference.max.ms`` refuses its batch with INVALID_TIMESTAMP and one
record error (KIP-467) per such record, worded as Kafka's."""

from __future__ import annotations

from kafkalite.errors import InvalidTimestampError
from kafkalite.record import read_batch

#: a record without a timestamp (Kafka's RecordBatch.NO_TIMESTAMP) is never refused
NO_TIMESTAMP = -1


def check_create_times(view, batches, now_ms: int, max_diff_ms: int) -> None:
    """Raise InvalidTimestampError, with ``record_errors`` [(index in its batch, message)], for
    the first batch of ``batches`` ((position, size, header) in ``view``) holding a record out
    of [now - max, now + max]. Every record is decoded (a record's timestamp delta may be
    negative, so the header's bounds do not bound it): callers check only topics that set a
    limit."""
    low, high = now_ms - max_diff_ms, now_ms + max_diff_ms
    for pos, _size, _fields in batches:
        _header, records = read_batch(view, pos, verify_crc=False)
        found = [(index, f"Timestamp {r.timestamp} of message with offset {r.offset} is out of "
                         f"range. The timestamp should be within [{low}, {high}]")
                 for index, r in enumerate(records)
                 if r.timestamp != NO_TIMESTAMP and abs(r.timestamp - now_ms) > max_diff_ms]
        if found:
            error = InvalidTimestampError(
                "One or more records have been rejected due to invalid timestamp")
            error.record_errors = found
            raise error
