"""The checkpoint half of ``LogManager`` (its attributes are the manager's): recovery points and
log start offsets (``checkpoint_logs``) and the replica manager's high watermarks
(``write_high_watermarks``), one file of each per live data dir.

The periodic writes go through ``checkpoint_writer`` (``log.checkpoint_writer``: off the reactor
thread, Kafka's scheduler threads' job); the writes at shutdown, and any a caller asks for, are
synchronous. A write that fails takes its dir offline (``_report``), whichever thread wrote it.
"""

from __future__ import annotations

import os
from typing import Mapping

from twisted.internet import defer

from kafkalite.errors import KafkaStorageError
from kafkalite.log.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from kafkalite.log.checkpoint_writer import CheckpointFile, CheckpointWriter, write_files
from kafkalite.log.rolled_flush import sync_all
from kafkalite.topic_partition import TopicPartition


ROLLED = "rolled segments"      # the checkpoint writer's lane for them


def _run_here(fn, *args) -> defer.Deferred:
    return defer.maybeDeferred(fn, *args)


class Checkpoints:
    def _init_checkpoints(self, reactor) -> None:
        self._high_watermarks: dict[str, dict[TopicPartition, int]] = {}
        # a reactor without threads (a unit test's task.Clock) writes on the caller's thread
        self.checkpoint_writer = CheckpointWriter(
            reactor, None if hasattr(reactor, "callFromThread") else _run_here)

    # --- recovery points and log start offsets ----------------------------------------------------
    def _log_checkpoint_files(self) -> list[CheckpointFile]:
        files = []
        for data_dir in self.live_dirs:
            hosted = {tp: lg for tp, lg in self._logs.items() if self._dir_of[tp] == data_dir}
            files.append(CheckpointFile(data_dir, os.path.join(data_dir, RECOVERY_POINT_CHECKPOINT),
                                        {tp: lg.recovery_point for tp, lg in hosted.items()}))
            files.append(CheckpointFile(data_dir, os.path.join(data_dir,
                                                               LOG_START_OFFSET_CHECKPOINT),
                                        {tp: lg.log_start_offset for tp, lg in hosted.items()}))
        return files

    def checkpoint_logs(self, raise_errors: bool = False) -> None:
        """Write every live data dir's recovery-point and log-start-offset checkpoints. A
        failure takes that dir offline; ``raise_errors`` also raises it (once every dir was
        tried)."""
        failures = self._written(write_files(self._log_checkpoint_files()), "checkpoints")
        if failures and raise_errors:
            message, exc = failures[0]
            raise KafkaStorageError(message) from exc

    def checkpoint_logs_in_background(self) -> defer.Deferred | None:
        """``checkpoint_logs`` on the checkpoint writer's thread (the periodic task)."""
        d = self.checkpoint_writer.write(self._log_checkpoint_files())
        return None if d is None else d.addCallback(self._written, "checkpoints")

    # --- rolled segments ---------------------------------------------------------------------------
    def flush_rolled_segments_in_background(self) -> defer.Deferred | None:
        """fsync what rolls left behind on the writer's thread (``log.rolled_flush``); None when
        the previous pass is still under way or nothing waits."""
        if not self.checkpoint_writer.can_take(ROLLED):
            return None
        jobs: list = []
        self._each_live_log(lambda log_: jobs.append((log_, log_.rolled_flush_job())), "flush")
        jobs = [(log_, job) for log_, job in jobs if job is not None]
        if not jobs:
            return None
        return self.checkpoint_writer.submit(ROLLED, sync_all, jobs).addCallback(
            self._rolled_synced)

    def _rolled_synced(self, outcome: list) -> None:
        """On the reactor: each log takes its outcome (a failure takes its dir offline)."""
        done = dict(outcome)
        self._each_live_log(lambda log_: log_.rolled_flush_done(done[log_]) if log_ in done
                            else None, "flush")

    # --- high watermarks (owned by the replica manager) -------------------------------------------
    def high_watermark_checkpoint(self, topic: str, partition: int) -> int:
        """The partition's last checkpointed high watermark (0 if none)."""
        data_dir = self._dir_of.get((topic, partition))
        if data_dir is None:
            return 0
        return self._high_watermarks.get(data_dir, {}).get((topic, partition), 0)

    def _high_watermark_files(self, high_watermarks: Mapping[TopicPartition, int]
                              ) -> list[CheckpointFile]:
        by_dir: dict[str, dict[TopicPartition, int]] = {d: {} for d in self.live_dirs}
        for tp, hw in high_watermarks.items():
            data_dir = self._dir_of.get(tp)
            if data_dir in by_dir:
                by_dir[data_dir][tp] = hw
        return [CheckpointFile(d, os.path.join(d, REPLICATION_OFFSET_CHECKPOINT), entries)
                for d, entries in by_dir.items()]

    def write_high_watermarks(self, high_watermarks: Mapping[TopicPartition, int]) -> None:
        """Write ``replication-offset-checkpoint`` in each live data dir for the partitions it
        hosts (partitions without a log here are ignored). An offline dir keeps its last file
        (its high watermarks only ever lag); a dir whose write fails goes offline, the others
        are still written."""
        self._written(write_files(self._high_watermark_files(high_watermarks)),
                      "high watermarks")

    def write_high_watermarks_in_background(self, high_watermarks: Mapping[TopicPartition, int]
                                            ) -> defer.Deferred | None:
        """``write_high_watermarks`` on the checkpoint writer's thread (the periodic task);
        None when the previous periodic write is still under way (this one is skipped)."""
        d = self.checkpoint_writer.write(self._high_watermark_files(high_watermarks))
        return None if d is None else d.addCallback(self._written, "high watermarks")

    def _written(self, outcome: list[CheckpointFile], what: str) -> list[tuple[str, OSError]]:
        """On the reactor: record what was written, take failed dirs offline; returns the
        failures' messages and errors."""
        live = set(self.live_dirs)
        failures = []
        for each in outcome:
            if each.error is not None:
                failures.append((self._report(each.data_dir, each.error,
                                              f"write the {what} in {each.data_dir}"),
                                 each.error))
            elif what == "high watermarks" and each.data_dir in live:
                self._high_watermarks[each.data_dir] = dict(each.offsets)
        return failures
