"""Checkpoint files written off the reactor thread (Kafka writes them on its scheduler threads).

Each checkpoint write is a write and two fsyncs (the file's and its directory's): 0.3-1.3 ms on
the bench machine when the disk is quiet, and tens of milliseconds to over 100 ms when another
process loads it, measured with py-spy on a broker serving 5,000 records/s. On the reactor
thread, that is a stall of every request the broker is serving. The periodic checkpoints
(high watermarks every ``replica.high.watermark.checkpoint.interval.ms``; recovery points and log
start offsets every ``log.flush.offset.checkpoint.interval.ms``) therefore go to one thread of
their own: the offsets are read on the reactor, the files written on that thread, one batch at a
time and in order, and the outcome (which files were written, which failed with what ``OSError``)
comes back on the reactor, where the caller records it or takes the dir offline.

A batch asked for while the previous one is still being written is skipped: the next period
writes newer offsets anyway, and a slow disk does not pile up writes. The same thread fsyncs
rolled segments (``submit``, ``log.rolled_flush``), in a lane of their own: a slow segment fsync
delays a checkpoint by its length, never skips one for good.

``stop()`` waits for the batch under way, so that the synchronous writes at shutdown never race
it for the same ``.tmp`` file. ``run_in_thread`` is injected: unit tests pass a synchronous one.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from twisted.internet import defer, threads
from twisted.python.threadpool import ThreadPool

from kafkalite.log.checkpoint import write_checkpoint

__all__ = ["CheckpointFile", "CheckpointWriter", "write_files"]


class CheckpointFile(NamedTuple):
    data_dir: str
    path: str
    offsets: dict
    error: OSError | None = None      # set in the outcome: None when written


def write_files(files: list[CheckpointFile]) -> list[CheckpointFile]:
    """Each file in turn (on the writer thread, or the caller's for the synchronous writes);
    returns the outcome of each tried. A dir whose first file failed is not tried again in this
    batch (its disk is failing: the caller takes it offline)."""
    failed: set[str] = set()
    out = []
    for each in files:
        if each.data_dir in failed:
            continue
        try:
            write_checkpoint(each.path, each.offsets)
        except OSError as exc:
            failed.add(each.data_dir)
            out.append(each._replace(error=exc))
            continue
        out.append(each)
    return out


class CheckpointWriter:
    def __init__(self, reactor, run_in_thread: Callable[..., defer.Deferred] | None = None):
        self._reactor = reactor
        self._run_in_thread = run_in_thread
        self._pool: ThreadPool | None = None
        self._busy: set[str] = set()      # lanes with a job under way

    def start(self) -> None:
        if self._run_in_thread is None and self._pool is None:
            self._pool = ThreadPool(minthreads=1, maxthreads=1, name="kafkalite-checkpoints")
            self._pool.start()

    def stop(self) -> None:
        """Wait for the batch under way (blocking the caller: shutdown only)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.stop()

    @property
    def running(self) -> bool:
        return self._run_in_thread is not None or self._pool is not None

    def write(self, files: list[CheckpointFile]) -> defer.Deferred | None:
        """Write ``files`` off the reactor; a Deferred firing on the reactor with their outcome,
        or None when the previous batch is still under way (or the writer is stopped) and this
        one is skipped."""
        return self.submit("checkpoints", write_files, files)

    def can_take(self, lane: str) -> bool:
        """Whether ``submit`` would take a job in ``lane`` now."""
        return self.running and lane not in self._busy

    def submit(self, lane: str, fn: Callable, *args) -> defer.Deferred | None:
        """``fn(*args)`` on the writer's thread; a Deferred firing on the reactor with its
        result, or None (nothing run) while ``lane``'s previous job is under way or the writer
        is stopped."""
        if not self.can_take(lane):
            return None
        self._busy.add(lane)
        if self._run_in_thread is not None:
            d = self._run_in_thread(fn, *args)
        else:
            d = threads.deferToThreadPool(self._reactor, self._pool, fn, *args)

        def done(result):
            self._busy.discard(lane)
            return result
        return d.addBoth(done)
