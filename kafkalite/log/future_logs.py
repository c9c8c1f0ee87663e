"""Future logs (KIP-113): the copy of a partition's log that AlterReplicaLogDirs makes in another
data dir of the same broker, and the swap that makes it the current log.

``FutureLogs`` is a part of ``LogManager`` (which inherits it), as Kafka's LogManager keeps its
``futureLogs`` beside ``currentLogs``:

* a future log lives in ``<dest>/<topic>-<partition>.<uuid>-future`` and is loaded as such when
  the broker starts (the copy goes on once the partition is hosted again);
* ``preferred dirs``: where a partition's log goes when it is created later (AlterReplicaLogDirs
  for a replica this broker does not host yet), used once;
* ``replace_current_with_future``: the future log is renamed to ``<topic>-<partition>`` in its
  dir and becomes the current log; the old one is renamed ``...-delete`` and removed (Kafka's
  order: a crash between the two renames leaves the partition in two dirs, which loading
  refuses, as Kafka's does);
* the log cleaner and retention leave a partition alone while it has a future log (Kafka
  pauses its cleaning), so the copy never chases rewritten segments.

All of it runs on the reactor thread, as the rest of the log manager.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import uuid

from kafkalite.errors import KafkaStorageError, LogDirNotFoundError
from kafkalite.log.checkpoint import fsync_dir
from kafkalite.log.log import Log, log_dir_name, parse_topic_partition
from kafkalite.topic_partition import TopicPartition

log = logging.getLogger(__name__)

FUTURE_DIR_SUFFIX = "-future"
_FUTURE_NAME = re.compile(r"^(?P<name>.+)\.(?P<id>[0-9a-f]{32})" + FUTURE_DIR_SUFFIX + "$")


def future_dir_name(topic: str, partition: int) -> str:
    """``orders-0.<32 hex>-future`` (Kafka's Log.logFutureDirName)."""
    return f"{log_dir_name(topic, partition)}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"


def parse_future_dir(name: str) -> TopicPartition | None:
    """The partition of a future log's directory name; None for any other name."""
    match = _FUTURE_NAME.match(name)
    return parse_topic_partition(match.group("name")) if match else None


class FutureLogs:
    """The future-log half of ``LogManager`` (its attributes are the manager's)."""

    def _init_future_logs(self) -> None:
        self._future_logs: dict[TopicPartition, Log] = {}
        self._preferred_dirs: dict[TopicPartition, str] = {}

    # --- queries ----------------------------------------------------------------------------------
    @property
    def future_logs(self) -> dict[TopicPartition, Log]:
        return dict(self._future_logs)

    def get_future_log(self, topic: str, partition: int) -> Log | None:
        return self._future_logs.get((topic, partition))

    def is_moving(self, tp: TopicPartition) -> bool:
        """Whether the partition has a future log (its cleaning is paused)."""
        return tp in self._future_logs

    def configured_dir(self, path: str) -> str:
        """The data dir ``path`` names (an absolute path, as in Kafka's requests);
        LogDirNotFoundError when ``log.dirs`` has no such dir."""
        for data_dir in self.data_dirs:
            if os.path.abspath(data_dir) == path:
                return data_dir
        raise LogDirNotFoundError(f"Log dir {path} is not found in the config.")

    # --- preferred dirs ---------------------------------------------------------------------------
    def maybe_update_preferred_log_dir(self, tp: TopicPartition, data_dir: str) -> None:
        """Remember where the partition's log goes when it is created, unless its current or
        future log is already there (Kafka's maybeUpdatePreferredLogDir)."""
        current, future = self._dir_of.get(tp), self._future_logs.get(tp)
        if current != data_dir and (future is None or future.parent_dir != data_dir):
            self._preferred_dirs[tp] = data_dir

    def _dir_for_new_log(self, tp: TopicPartition) -> str:
        """The preferred dir if one was asked for and is live (used once), else the live dir
        with the fewest partitions."""
        preferred = self._preferred_dirs.pop(tp, None)
        if preferred is not None and self.is_log_dir_online(preferred):
            return preferred
        return self._choose_dir()

    # --- creating, loading, removing --------------------------------------------------------------
    def create_future_log(self, tp: TopicPartition, data_dir: str) -> Log:
        """An empty future log of ``tp`` in ``data_dir`` (which must differ from the current
        log's); KafkaStorageError while any dir is offline (Kafka will not risk a second future
        log in a dir it cannot see)."""
        if tp in self._future_logs:
            return self._future_logs[tp]
        if self.offline_dirs:
            raise KafkaStorageError(f"cannot create a future log for {tp[0]}-{tp[1]}: log "
                                    f"dirs {', '.join(self.offline_dirs)} are offline")
        if self._dir_of.get(tp) == data_dir:
            raise ValueError(f"{tp[0]}-{tp[1]} is already in {data_dir}")
        path = os.path.join(data_dir, future_dir_name(*tp))
        try:
            created = Log(path, self.config_for(tp[0]), self.clock_ms, clean_shutdown=True,
                          log_dir_failure_channel=self.failure_channel)
            fsync_dir(data_dir)
        except OSError as exc:
            raise KafkaStorageError(self._report(data_dir, exc, f"create the log {path}")) \
                from exc
        self._future_logs[tp] = created
        self._preferred_dirs.pop(tp, None)
        log.info("created future log for %s-%d in %s", tp[0], tp[1], data_dir)
        return created

    def _load_future_log(self, data_dir: str, name: str, tp: TopicPartition,
                         clean: bool) -> Log:
        """A future log found when loading (not in the checkpoints: recovered whole after an
        unclean shutdown)."""
        if tp in self._future_logs:
            raise KafkaStorageError(f"partition {tp[0]}-{tp[1]} has two future logs: "
                                    f"{self._future_logs[tp].dir} and {name} in {data_dir}")
        return Log(os.path.join(data_dir, name), self.config_for(tp[0]), self.clock_ms,
                   clean_shutdown=clean, log_dir_failure_channel=self.failure_channel)

    def remove_future_log(self, tp: TopicPartition) -> bool:
        """Drop the partition's future log and its files (a move cancelled or redirected)."""
        future = self._future_logs.pop(tp, None)
        if future is None:
            return False
        if self.failure_channel.is_offline(future.parent_dir):
            future.close_handlers()
        else:
            future.close()
            shutil.rmtree(future.dir, ignore_errors=True)
        log.info("removed the future log of %s-%d in %s", tp[0], tp[1], future.parent_dir)
        return True

    def _drop_future_logs_in(self, data_dir: str, stopped: list[TopicPartition]) -> None:
        """A dir failed: its future logs go, and so do the future logs of its current logs."""
        for tp, future in list(self._future_logs.items()):
            if future.parent_dir == data_dir or tp in stopped:
                self._future_logs.pop(tp)
                if self.failure_channel.is_offline(future.parent_dir):
                    future.close_handlers()
                else:
                    future.close()

    def _close_future_logs(self) -> None:
        for tp, future in list(self._future_logs.items()):
            try:
                if self.failure_channel.is_offline(future.parent_dir):
                    future.close_handlers()
                else:
                    future.flush()
                    future.close()
            except Exception:  # noqa: BLE001 - the copy starts again from the recovered log
                log.exception("closing the future log of %s-%d failed", *tp)
        self._future_logs.clear()

    # --- the swap ---------------------------------------------------------------------------------
    def replace_current_with_future(self, tp: TopicPartition) -> Log:
        """Make the future log the partition's log (Kafka's replaceCurrentWithFutureLog); the
        caller has checked that it holds everything the current log holds. Returns the new
        current log, with the old log's start offset."""
        current, future = self._logs.get(tp), self._future_logs.get(tp)
        if current is None or future is None:
            raise KafkaStorageError(f"{tp[0]}-{tp[1]}: the current or the future log is offline")
        source, dest = self._dir_of[tp], future.parent_dir
        final = os.path.join(dest, log_dir_name(*tp))
        try:
            future.flush()
            future.close()
            os.rename(future.dir, final)
            fsync_dir(dest)
            swapped = Log(final, self.config_for(tp[0]), self.clock_ms,
                          recovery_point=future.log_end_offset, clean_shutdown=True,
                          log_start_offset=current.log_start_offset,
                          log_dir_failure_channel=self.failure_channel)
            # the copy came batch by batch through replication: index its aborted
            # transactions from its own batches, as Kafka's future log does while appending
            swapped.rebuild_txn_indexes()
        except OSError as exc:
            self._future_logs.pop(tp, None)
            raise KafkaStorageError(self._report(dest, exc, f"swap in the log {final}")) \
                from exc
        del self._future_logs[tp]
        self._logs[tp] = swapped
        self._dir_of[tp] = dest
        high_watermark = self._high_watermarks.get(source, {}).pop(tp, None)
        if high_watermark is not None:
            self._high_watermarks.setdefault(dest, {})[tp] = high_watermark
        self._retire_log(current, source, tp)
        log.info("%s-%d moved from %s to %s", tp[0], tp[1], source, dest)
        return swapped

    def _retire_log(self, old: Log, data_dir: str, tp: TopicPartition) -> None:
        """Close the replaced log and remove its directory (renamed ``...-delete`` first, so a
        crash leaves nothing that loads as the partition)."""
        try:
            old.close()
            doomed = os.path.join(data_dir, f"{log_dir_name(*tp)}.{uuid.uuid4().hex}-delete")
            os.rename(old.dir, doomed)
            fsync_dir(data_dir)
        except OSError as exc:
            old.close_handlers()
            self._report(data_dir, exc, f"retire the moved log {old.dir}")
            return
        shutil.rmtree(doomed, ignore_errors=True)
