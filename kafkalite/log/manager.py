"""LogManager: every partition log of a broker, across its data directories.

A Twisted ``Service``. ``startService`` loads each data dir: it notes (and removes) the
``.kafka_cleanshutdown`` marker, reads ``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint`` and ``replication-offset-checkpoint``, and opens every
``<topic>-<partition>`` directory as a Log -- recovering logs past their recovery point when the
marker was absent. Then three ``LoopingCall``s run on the injected reactor:

* retention (``log.retention.check.interval.ms``): compaction for ``compact`` topics, then
  ``delete_old_segments`` and removal of ``.deleted`` files whose delay passed;
* flush (``log.flush.scheduler.interval.ms``): ``Log.maybe_flush`` -- rolled segments, and
  ``flush.ms``;
* checkpoint (``log.flush.offset.checkpoint.interval.ms``): recovery points and log start
  offsets.

``stopService`` flushes every log, writes the checkpoints, closes the logs and writes the
clean-shutdown marker. All of it runs on the reactor thread (fsyncs included, synchronously).

The replica manager owns high watermarks; it reads the loaded ones with
``high_watermark_checkpoint`` and saves them with ``write_high_watermarks``.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from typing import Callable, Iterable, Mapping

from twisted.application import service
from twisted.internet import task

from kafkalite.errors import InvalidTopicError, KafkaStorageError
from kafkalite.log.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    fsync_dir,
    read_checkpoint,
    write_checkpoint,
)
from kafkalite.log.log import Log, log_dir_name, parse_topic_partition

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
DELETE_DIR_SUFFIX = "-delete"

TopicPartition = tuple[str, int]


class LogManager(service.Service):
    """Owns the Log of every partition hosted on this broker."""

    name = "log-manager"

    def __init__(self, data_dirs: Iterable[str], default_config, reactor,
                 clock_ms: Callable[[], int] | None = None,
                 retention_check_interval_ms: int = 300_000,
                 flush_check_interval_ms: int = 1000,
                 checkpoint_interval_ms: int = 60_000,
                 topic_configs: Mapping[str, object] | None = None):
        self.data_dirs = [os.fspath(d) for d in data_dirs]
        if not self.data_dirs:
            raise ValueError("LogManager needs at least one data directory")
        self.default_config = default_config
        self.reactor = reactor
        self.clock_ms = clock_ms or (lambda: int(reactor.seconds() * 1000))
        self.retention_check_interval_ms = retention_check_interval_ms
        self.flush_check_interval_ms = flush_check_interval_ms
        self.checkpoint_interval_ms = checkpoint_interval_ms
        self._topic_configs: dict[str, object] = dict(topic_configs or {})
        self._logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, str] = {}
        self._high_watermarks: dict[str, dict[TopicPartition, int]] = {}
        self._loops: list[task.LoopingCall] = []
        self.loaded = False
        #: data dirs whose last shutdown was clean (filled by load_logs)
        self.clean_shutdown_dirs: set[str] = set()

    @classmethod
    def from_broker_config(cls, config, reactor, clock_ms=None,
                           topic_configs: Mapping[str, object] | None = None) -> "LogManager":
        """Build one from a BrokerConfig (log.dirs, log.* defaults and intervals)."""
        return cls(config.data_dirs, config.topic_defaults(), reactor, clock_ms,
                   retention_check_interval_ms=config.log_retention_check_interval_ms,
                   flush_check_interval_ms=config.log_flush_scheduler_interval_ms,
                   checkpoint_interval_ms=config.log_flush_offset_checkpoint_interval_ms,
                   topic_configs=topic_configs)

    # --- service ----------------------------------------------------------------------------------
    def startService(self) -> None:
        self.load_logs()
        super().startService()
        self._start_loop(self.cleanup_logs, self.retention_check_interval_ms, "retention")
        self._start_loop(self.flush_dirty_logs, self.flush_check_interval_ms, "flush")
        if self.checkpoint_interval_ms > 0:
            self._start_loop(self.checkpoint_logs, self.checkpoint_interval_ms, "checkpoint")

    def stopService(self):
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self._loops = []
        clean = True
        for tp, log_ in list(self._logs.items()):
            try:
                log_.flush()
            except Exception:  # noqa: BLE001 - keep shutting the others down
                clean = False
                log.exception("flush of %s-%d failed during shutdown", *tp)
        try:
            self.checkpoint_logs(raise_errors=True)
        except Exception:  # noqa: BLE001
            clean = False
            log.exception("writing checkpoints failed during shutdown")
        for tp, log_ in list(self._logs.items()):
            try:
                log_.close()
            except Exception:  # noqa: BLE001
                clean = False
                log.exception("closing %s-%d failed", *tp)
        self._logs.clear()
        self._dir_of.clear()
        self.loaded = False
        if clean:
            for data_dir in self.data_dirs:
                _write_marker(os.path.join(data_dir, CLEAN_SHUTDOWN_FILE))
        else:
            log.warning("unclean log shutdown: logs will be recovered at the next start")
        return super().stopService()

    def _start_loop(self, fn: Callable[[], object], interval_ms: int, what: str) -> None:
        loop = task.LoopingCall(fn)
        loop.clock = self.reactor
        d = loop.start(interval_ms / 1000.0, now=False)
        d.addErrback(lambda f: log.error("log manager %s task stopped: %s", what,
                                         f.getTraceback()))
        self._loops.append(loop)

    # --- loading ----------------------------------------------------------------------------------
    def load_logs(self) -> None:
        """Open every log in every data dir (done by startService; idempotent)."""
        if self.loaded:
            return
        for data_dir in self.data_dirs:
            self._load_dir(data_dir)
        self.loaded = True

    def _load_dir(self, data_dir: str) -> None:
        os.makedirs(data_dir, exist_ok=True)
        marker = os.path.join(data_dir, CLEAN_SHUTDOWN_FILE)
        clean = os.path.exists(marker)
        recovery_points = read_checkpoint(os.path.join(data_dir, RECOVERY_POINT_CHECKPOINT))
        log_starts = read_checkpoint(os.path.join(data_dir, LOG_START_OFFSET_CHECKPOINT))
        self._high_watermarks[data_dir] = read_checkpoint(
            os.path.join(data_dir, REPLICATION_OFFSET_CHECKPOINT))
        if not os.listdir(data_dir):
            state = "a new, empty log dir"
        else:
            state = "clean shutdown" if clean else "unclean shutdown: recovering past recovery points"
        log.info("loading logs from %s (%s)", data_dir, state)
        for name in sorted(os.listdir(data_dir)):
            path = os.path.join(data_dir, name)
            if not os.path.isdir(path):
                continue
            if name.endswith(DELETE_DIR_SUFFIX):
                log.info("removing log directory marked for deletion: %s", path)
                shutil.rmtree(path, ignore_errors=True)
                continue
            tp = parse_topic_partition(name)
            if tp is None:
                log.warning("ignoring directory %s: not <topic>-<partition>", path)
                continue
            if tp in self._logs:
                raise KafkaStorageError(f"partition {name} is in two data dirs: "
                                        f"{self._dir_of[tp]} and {data_dir}")
            log_ = Log(path, self.config_for(tp[0]), self.clock_ms,
                       recovery_point=recovery_points.get(tp, 0), clean_shutdown=clean,
                       log_start_offset=log_starts.get(tp))
            self._logs[tp] = log_
            self._dir_of[tp] = data_dir
        if clean:
            self.clean_shutdown_dirs.add(data_dir)
            os.unlink(marker)
            fsync_dir(data_dir)

    # --- logs -------------------------------------------------------------------------------------
    def config_for(self, topic: str):
        return self._topic_configs.get(topic, self.default_config)

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def get_or_create_log(self, topic: str, partition: int, config=None) -> Log:
        """The partition's log, created in the data dir with the fewest partitions if needed.
        A given ``config`` becomes the topic's config (applied to an existing log too)."""
        tp = (topic, partition)
        if config is not None and self._topic_configs.get(topic) != config:
            self.update_config(topic, config)
        existing = self._logs.get(tp)
        if existing is not None:
            return existing
        _check_topic(topic)
        if partition < 0:
            raise ValueError(f"partition must be >= 0, got {partition}")
        data_dir = self._choose_dir()
        path = os.path.join(data_dir, log_dir_name(topic, partition))
        try:
            created = Log(path, self.config_for(topic), self.clock_ms, clean_shutdown=True)
            fsync_dir(data_dir)
        except OSError as exc:
            raise KafkaStorageError(f"cannot create log {path}: {exc}") from exc
        self._logs[tp] = created
        self._dir_of[tp] = data_dir
        log.info("created log for %s-%d in %s", topic, partition, data_dir)
        return created

    def _choose_dir(self) -> str:
        counts = {d: 0 for d in self.data_dirs}
        for data_dir in self._dir_of.values():
            counts[data_dir] = counts.get(data_dir, 0) + 1
        return min(self.data_dirs, key=lambda d: counts[d])

    def delete_log(self, topic: str, partition: int) -> bool:
        """Close and remove the partition's log. False if there was none."""
        tp = (topic, partition)
        log_ = self._logs.pop(tp, None)
        data_dir = self._dir_of.pop(tp, None)
        if log_ is None:
            return False
        log_.close()
        doomed = os.path.join(data_dir, f"{log_dir_name(topic, partition)}."
                                         f"{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
        try:
            os.rename(log_.dir, doomed)
            fsync_dir(data_dir)
        except OSError:
            doomed = log_.dir
        shutil.rmtree(doomed, ignore_errors=True)
        self._high_watermarks.get(data_dir, {}).pop(tp, None)
        log.info("deleted log %s-%d", topic, partition)
        return True

    def all_logs(self) -> list[Log]:
        return list(self._logs.values())

    @property
    def logs(self) -> dict[TopicPartition, Log]:
        return dict(self._logs)

    def log_dir_of(self, topic: str, partition: int) -> str | None:
        """The data dir holding the partition."""
        return self._dir_of.get((topic, partition))

    def update_config(self, topic: str, config) -> None:
        """New settings for a topic (from /config/topics/<t>), applied to its live logs."""
        self._topic_configs[topic] = config
        for (t, _p), log_ in self._logs.items():
            if t == topic:
                log_.update_config(config)

    # --- periodic work ----------------------------------------------------------------------------
    def cleanup_logs(self) -> int:
        """Compaction and retention over every log; returns the number of segments deleted."""
        now = self.clock_ms()
        deleted = 0
        for tp, log_ in list(self._logs.items()):
            try:
                if log_.config.compact:
                    log_.compact(now)
                deleted += len(log_.delete_old_segments(now))
                log_.delete_expired_files(now)
            except Exception:  # noqa: BLE001 - one bad log must not stop the others
                log.exception("retention of %s-%d failed", *tp)
        return deleted

    def flush_dirty_logs(self) -> None:
        now = self.clock_ms()
        for tp, log_ in list(self._logs.items()):
            try:
                log_.maybe_flush(now)
            except Exception:  # noqa: BLE001
                log.exception("flush of %s-%d failed", *tp)

    def checkpoint_logs(self, raise_errors: bool = False) -> None:
        """Write every data dir's recovery-point and log-start-offset checkpoints."""
        for data_dir in self.data_dirs:
            hosted = {tp: lg for tp, lg in self._logs.items() if self._dir_of[tp] == data_dir}
            try:
                write_checkpoint(os.path.join(data_dir, RECOVERY_POINT_CHECKPOINT),
                                 {tp: lg.recovery_point for tp, lg in hosted.items()})
                write_checkpoint(os.path.join(data_dir, LOG_START_OFFSET_CHECKPOINT),
                                 {tp: lg.log_start_offset for tp, lg in hosted.items()})
            except OSError as exc:
                if raise_errors:
                    raise KafkaStorageError(f"cannot write checkpoints in {data_dir}: "
                                            f"{exc}") from exc
                log.error("cannot write checkpoints in %s: %s", data_dir, exc)

    # --- high watermarks (owned by the replica manager) -------------------------------------------
    def high_watermark_checkpoint(self, topic: str, partition: int) -> int:
        """The partition's last checkpointed high watermark (0 if none)."""
        data_dir = self._dir_of.get((topic, partition))
        if data_dir is None:
            return 0
        return self._high_watermarks.get(data_dir, {}).get((topic, partition), 0)

    def write_high_watermarks(self, high_watermarks: Mapping[TopicPartition, int]) -> None:
        """Write ``replication-offset-checkpoint`` in each data dir for the partitions it
        hosts (partitions without a log here are ignored)."""
        by_dir: dict[str, dict[TopicPartition, int]] = {d: {} for d in self.data_dirs}
        for tp, hw in high_watermarks.items():
            data_dir = self._dir_of.get(tp)
            if data_dir is not None:
                by_dir[data_dir][tp] = hw
        for data_dir, entries in by_dir.items():
            try:
                write_checkpoint(os.path.join(data_dir, REPLICATION_OFFSET_CHECKPOINT), entries)
            except OSError as exc:
                raise KafkaStorageError(f"cannot write high watermarks in {data_dir}: "
                                        f"{exc}") from exc
            self._high_watermarks[data_dir] = dict(entries)


def _check_topic(topic: str) -> None:
    if (not topic or topic in (".", "..") or "/" in topic or "\0" in topic
            or any(ch.isspace() for ch in topic)):
        raise InvalidTopicError(f"topic name {topic!r} cannot name a log directory")


def _write_marker(path: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_dir(os.path.dirname(path))
    except OSError as exc:
        log.error("cannot write clean-shutdown marker %s: %s", path, exc)
