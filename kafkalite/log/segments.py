"""The segments of one partition's log, oldest first, and the ones awaiting deletion (Kafka's
LogSegments).

The Log decides what happens (roll, truncate, retention, compaction) and keeps the offsets; this
keeps the ordered list consistent with its base offsets, does the segment-level part of rolling
and truncating, reads and flushes across segments, and retires the segments that leave the log: they are renamed ``*.deleted`` and their files removed
``file.delete.delay.ms`` later (``delete_expired``), so a read in flight on another thread never
sees its descriptor closed.

``segments`` and ``bases`` are plain lists, changed in place only (never replaced), so the Log's
append path may hold them without a lookup through this object.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from typing import Callable

from kafkalite.errors import IllegalStateError
from kafkalite.log.checkpoint import fsync_dir
from kafkalite.log.segment import SWAP_SUFFIX, LogSegment


class LogSegments:
    def __init__(self, dir: str, clock: Callable[[], int]):
        self.dir = dir
        self._clock = clock
        #: oldest first; the last one is the active segment
        self.segments: list[LogSegment] = []
        #: the base offset of each segment, for bisecting
        self.bases: list[int] = []
        #: (time its files are due for removal, segment renamed ``*.deleted``)
        self._pending_deletes: list[tuple[int, LogSegment]] = []

    def add(self, segment: LogSegment) -> None:
        i = bisect_right(self.bases, segment.base_offset)
        self.bases.insert(i, segment.base_offset)
        self.segments.insert(i, segment)

    def roll_to(self, segment: LogSegment, replace_empty: bool) -> None:
        """Make the new ``segment`` the active one. With ``replace_empty`` the (empty) active
        segment is not kept: its files are deleted."""
        if replace_empty:
            self.bases.pop()
            self.segments.pop().delete()
        self.add(segment)
        fsync_dir(self.dir)

    def truncate_to(self, offset: int, delay_ms: int) -> None:
        """Remove every segment based above ``offset`` and cut the last one kept at ``offset``
        (a batch containing it goes entirely)."""
        doomed = [s for s in self.segments if s.base_offset > offset]
        self.remove(doomed, delay_ms, allow_all=True)
        self.segments[-1].truncate_to(offset)

    def reset_at(self, offset: int, config, delay_ms: int) -> None:
        """Remove every segment and start again with one empty segment at ``offset``."""
        self.remove(list(self.segments), delay_ms, allow_all=True)
        self.add(LogSegment(self.dir, offset, config, self._clock))
        fsync_dir(self.dir)

    def remove(self, doomed: list[LogSegment], delay_ms: int, allow_all: bool = False) -> None:
        """Take ``doomed`` off the list and delete their files, after ``delay_ms`` if positive.
        The active segment goes only with ``allow_all`` (truncation)."""
        if not doomed:
            return
        if not allow_all and doomed[-1] is self.segments[-1]:
            raise IllegalStateError("the active segment cannot be deleted")
        ids = {id(s) for s in doomed}
        keep = [s for s in self.segments if id(s) not in ids]
        self.segments[:] = keep
        self.bases[:] = [s.base_offset for s in keep]
        now = self._clock()
        for segment in doomed:
            if delay_ms <= 0:
                segment.delete()
            else:
                segment.rename_to_deleted()
                self._pending_deletes.append((now + delay_ms, segment))

    def swap_in(self, old: LogSegment, swapped: LogSegment, delay_ms: int) -> None:
        """Put ``swapped`` (a compacted copy of ``old`` with the same base offset, written as
        ``.swap``) in place of ``old``: ``old`` is renamed ``.deleted``, the copy loses its
        suffix, and ``old``'s files go after ``delay_ms``."""
        i = self.segments.index(old)
        old.rename_to_deleted()
        swapped.change_suffix(SWAP_SUFFIX, "")
        fsync_dir(self.dir)
        self.segments[i] = swapped
        if delay_ms <= 0:
            old.delete()
        else:
            self._pending_deletes.append((self._clock() + delay_ms, old))

    def delete_expired(self, now: int) -> int:
        """Remove the ``.deleted`` files whose delay has passed; returns how many segments went."""
        due = [s for t, s in self._pending_deletes if t <= now]
        if not due:
            return 0
        self._pending_deletes = [(t, s) for t, s in self._pending_deletes if t > now]
        for segment in due:
            segment.delete()
        return len(due)

    # --- across segments ------------------------------------------------------------------------
    def read(self, offset: int, max_bytes: int, limit: int, min_one_batch: bool):
        """Stored bytes of whole batches from the one containing ``offset`` up to (not
        including) the batch holding ``limit``, at most ``max_bytes`` but at least one batch
        with ``min_one_batch``. The caller checked ``offset`` is in the log and below
        ``limit``."""
        segments = self.segments
        i = bisect_right(self.bases, offset) - 1
        if i < 0:
            i = 0
        parts = []
        remaining = max_bytes
        count = len(segments)
        while i < count:
            segment = segments[i]
            last_segment = limit < segment.next_offset
            max_position = segment.position_of(limit) if last_segment else None
            start, data = segment.read_slice(offset, remaining, max_position,
                                             min_one_batch and not parts)
            if data:
                parts.append(data)
                remaining -= len(data)
                # more only if this segment was read to its end and room is left
                if start + len(data) < segment.size or remaining <= 0:
                    break
            elif start >= 0:
                break  # a batch exists here but did not fit
            if last_segment:
                break
            i += 1
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def find_offset_by_timestamp(self, timestamp: int, start: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after offset ``start`` whose timestamp
        is >= ``timestamp``, or None if every record is older."""
        for segment in self.segments:
            if segment.largest_timestamp >= timestamp and segment.next_offset > start:
                found = segment.find_offset_by_timestamp(timestamp, start)
                if found is not None:
                    return found
        return None

    def flush(self, start: int, end: int) -> None:
        """fsync every segment holding data in [``start``, ``end``)."""
        for segment in self.segments:
            if segment.base_offset < end and segment.next_offset > start:
                segment.flush()
            elif segment.base_offset >= end:
                break

    def sync_handles(self, start: int, end: int) -> list[int]:
        """``flush(start, end)``'s files as new descriptors (``LogSegment.sync_handles``)."""
        handles: list[int] = []
        try:
            for segment in self.segments:
                if segment.base_offset >= end:
                    break
                if segment.next_offset > start:
                    segment.sync_handles(handles)
        except OSError:        # none leaks: the caller gets no job
            for handle in handles:
                os.close(handle)
            raise
        return handles

    # --- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        """Close every segment (indexes written, not fsynced) and remove the files awaiting
        deletion."""
        for _t, segment in self._pending_deletes:
            segment.delete()
        self._pending_deletes = []
        for segment in self.segments:
            segment.close()

    def close_handlers(self) -> None:
        """Close every file descriptor without writing anything (the data dir failed)."""
        for _t, segment in self._pending_deletes:
            segment.close_handlers()
        self._pending_deletes = []
        for segment in self.segments:
            segment.close_handlers()

    def delete_files(self) -> None:
        """Delete the files of every segment, live or awaiting deletion."""
        for _t, segment in self._pending_deletes:
            segment.delete()
        for segment in self.segments:
            segment.delete()
