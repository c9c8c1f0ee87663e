"""Rolled segments fsynced off the reactor thread.

When a log rolls, Kafka schedules the flush of what the roll left behind on its scheduler's
threads ("flush-log"), so appends go on meanwhile. Here the LogManager's roll-flush task takes,
on the reactor, each log's ``RolledFlush`` (``Log.rolled_flush_job``: new descriptors of the
rolled segments' files, pending index entries written first), fsyncs them on the checkpoint
writer's thread (``sync_all``), and gives the outcome back to each log on the reactor
(``Log.rolled_flush_done``), which advances its recovery point or takes the dir offline.

Measured on the bench machine: the fsync of a rolled 1 GB segment blocks for ~0.33 s, and with
1 KB records a segment rolls every ~2 s; on the reactor that was a stall of every request.

Duplicated descriptors stay valid whatever happens to the segment meanwhile (closed, deleted,
truncated), and a log truncated since the job was taken ignores its outcome (``truncations``):
the bytes synced may not be the ones the recovery point would then cover.
"""

from __future__ import annotations

import os
from typing import NamedTuple

__all__ = ["RolledFlush", "sync_all"]


class RolledFlush(NamedTuple):
    target: int                 # the recovery point once the handles are synced
    handles: list[int]          # new descriptors, closed by sync_all
    truncations: int            # the log's truncation count when the job was taken
    error: OSError | None = None


def sync_all(jobs: list[tuple[object, RolledFlush]]) -> list[tuple[object, RolledFlush]]:
    """fsync and close every job's handles (on the writer's thread); each job comes back with
    the first ``OSError`` its fsyncs met, if any. Every handle is closed, whatever fails."""
    out = []
    for owner, job in jobs:
        error = None
        for handle in job.handles:
            try:
                if error is None:
                    os.fsync(handle)
            except OSError as exc:
                error = exc
            finally:
                os.close(handle)
        out.append((owner, job._replace(error=error)))
    return out
