"""Which old segments a log deletes: retention by time and size, and the log start offset.

Pure selection (no I/O but a segment's mtime); ``Log.delete_old_segments`` removes what this
picks. As in Kafka, only a prefix of the log goes, and a segment goes when it is past
``retention.ms`` (by its largest timestamp, or its file's mtime when it holds no timestamp), while
the log is over ``retention.bytes`` (oldest first), or when the next segment starts at or below
the log start offset (DeleteRecords, a follower's truncation, compaction).

Kafka 2.8's ``Log.deletableSegments`` bounds this by the high watermark: a segment goes only when
every offset in it is below the HW (so the log start never passes it), and the active segment too
when it is not empty and wholly below the HW (the Log rolls a new, empty one first): an expired
log ends up with its log start at its log end. A log whose HW is not known (no partition) keeps
its active segment and is not bounded.
"""

from __future__ import annotations

from kafkalite.log.segment import LogSegment


def segment_time(segment: LogSegment) -> int:
    """The time retention measures a segment's age from."""
    ts = segment.largest_timestamp
    return ts if ts >= 0 else segment.last_modified_ms()


def deletable_segments(segments: list[LogSegment], config, now: int, log_start_offset: int,
                       retention: bool, high_watermark: int | None = None,
                       log_end_offset: int | None = None) -> list[LogSegment]:
    """The oldest segments of ``segments`` (oldest first, the last one active) to delete.

    With ``retention`` (and ``cleanup.policy`` including delete) ``retention.ms`` and
    ``retention.bytes`` apply; the log start offset always does. With ``high_watermark`` (and
    ``log_end_offset``), only segments wholly below it, the active one included (by retention).
    """
    apply = retention and config.delete
    retention_ms = config.retention_ms if apply else -1
    diff = None
    if apply and config.retention_bytes >= 0:
        diff = sum(s.size for s in segments) - config.retention_bytes
    doomed = []
    for i, segment in enumerate(segments):
        if i + 1 < len(segments):
            upper = segments[i + 1].base_offset
            below_start = upper <= log_start_offset
        elif high_watermark is None or segment.size == 0:
            break           # Kafka never deletes an empty last segment (it would make another)
        else:
            upper = log_end_offset
            below_start = False
        if high_watermark is not None and high_watermark < upper:
            break
        expired = retention_ms >= 0 and now - segment_time(segment) > retention_ms
        oversize = diff is not None and diff - segment.size >= 0
        if not (expired or oversize or below_start):
            break
        doomed.append(segment)
        if diff is not None:
            diff -= segment.size
    return doomed
