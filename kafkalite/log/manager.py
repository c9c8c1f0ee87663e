"""LogManager: every partition log of a broker, across its data directories.

A Twisted ``Service``. ``startService`` loads each data dir: it notes (and removes) the
``.kafka_cleanshutdown`` marker, reads ``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint`` and ``replication-offset-checkpoint``, and opens every
``<topic>-<partition>`` directory as a Log -- recovering logs past their recovery point when the
marker was absent. Then four tasks run on the injected reactor:

* retention (``log.retention.check.interval.ms``): ``delete_old_segments`` of the logs that are
  not compacted, and removal of ``.deleted`` files whose delay passed;
* the cleaner (every ``log.cleaner.backoff.ms``, read again each time, as Kafka's log cleaner
  backs off between passes): compaction of ``compact`` logs, then their ``delete_old_segments``
  (retention for ``compact,delete``; the log start offset for all), as Kafka's cleaner owns
  the retention of compacted logs;
* flush (``log.flush.scheduler.interval.ms``, Kafka's default Long.MAX: never): ``Log.maybe_flush``
  of the logs whose ``flush.ms`` has passed; rolled segments are flushed apart, within a second
  (``ROLL_FLUSH_INTERVAL_MS``, or the flush interval if shorter), as Kafka flushes a rolled
  segment at once on its scheduler;
* checkpoint (``log.flush.offset.checkpoint.interval.ms``): recovery points and log start
  offsets, the first time 30 s after the start (Kafka's ``InitialTaskDelayMs``) or one interval
  after it if that is shorter. A log opens with its recovery point at its end (Kafka's
  ``Log.recoverLog``) and a flush moves it up, so after a kill -9 only what was appended since
  the last checkpoint (from the segment holding the checkpointed point on) is re-verified.

``stopService`` flushes every log, writes the checkpoints, closes the logs and writes the
clean-shutdown marker. All of it runs on the reactor thread (fsyncs included, synchronously),
apart from the periodic checkpoint writes (``manager_checkpoints``: on a thread of their own).

Future logs (AlterReplicaLogDirs' copies in another dir, and where a partition not hosted yet is
to be created) are ``log.future_logs``' part of the manager.

The replica manager owns high watermarks; it reads the loaded ones with
``high_watermark_checkpoint`` and saves them with ``write_high_watermarks``.

Disk failures (Kafka's JBOD handling): every I/O error in a data dir -- a log's, a checkpoint's --
goes to ``failure_channel`` (``log.dir_failure.LogDirFailureChannel``) and takes that dir offline
until the broker restarts. ``handle_log_dir_failure`` (called by the replica manager's handler)
drops the dir's logs, closing their files without writing. An offline dir gets no new logs, no
checkpoints and no clean-shutdown marker, so the next start recovers its logs; the other dirs go
on as before. A dir that fails while loading is skipped the same way; if no dir is left, loading
fails (Kafka halts the broker then).
"""

from __future__ import annotations

import contextlib
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
)
from kafkalite.log.dir_failure import LogDirFailureChannel, normalize_dir, storage_error_hint
from kafkalite.log.future_logs import FutureLogs, parse_future_dir
from kafkalite.log.log import Log, log_dir_name, parse_topic_partition
from kafkalite.log.manager_checkpoints import Checkpoints
from kafkalite.topic_partition import TopicPartition

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
#: rolled segments are flushed within this long (Kafka flushes them at once, on its scheduler)
ROLL_FLUSH_INTERVAL_MS = 1000
#: Kafka's LogManager.InitialTaskDelayMs: the checkpoint task first runs this long after the start
INITIAL_TASK_DELAY_MS = 30_000
#: a task interval above this (about 24.8 days; Kafka's default flush interval is Long.MAX) is
#: never scheduled: the reactor's poll cannot wait that long
MAX_LOOP_INTERVAL_MS = 2**31 - 1
DELETE_DIR_SUFFIX = "-delete"


class LogManager(FutureLogs, Checkpoints, service.Service):
    """Owns the Log of every partition hosted on this broker."""

    name = "log-manager"

    def __init__(self, data_dirs: Iterable[str], default_config, reactor,
                 clock_ms: Callable[[], int] | None = None,
                 retention_check_interval_ms: int = 300_000,
                 flush_check_interval_ms: int = 1000,
                 checkpoint_interval_ms: int = 60_000,
                 cleaner_backoff_ms: int = 15_000,
                 topic_configs: Mapping[str, object] | None = None,
                 log_dir_failure_channel: LogDirFailureChannel | None = None):
        self.data_dirs = [normalize_dir(d) for d in data_dirs]
        if not self.data_dirs:
            raise ValueError("LogManager needs at least one data directory")
        self.failure_channel = log_dir_failure_channel or LogDirFailureChannel()
        self._stopped_dirs: set[str] = set()   # offline dirs whose logs were dropped
        # partitions whose logs are in an offline dir: never recreated elsewhere before restart
        self._offline_logs: set[TopicPartition] = set()
        # dirs that failed before their partitions could even be listed
        self._unlisted_offline_dirs: set[str] = set()
        self.default_config = default_config
        self.reactor = reactor
        self.clock_ms = clock_ms or (lambda: int(reactor.seconds() * 1000))
        self.retention_check_interval_ms = retention_check_interval_ms
        self.flush_check_interval_ms = flush_check_interval_ms
        self.checkpoint_interval_ms = checkpoint_interval_ms
        self.cleaner_backoff_ms = cleaner_backoff_ms   # dynamic: read before each wait
        self._cleaner_call = None
        self._topic_configs: dict[str, object] = dict(topic_configs or {})
        self._logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, str] = {}
        self._batched_syncs: set[str] | None = None     # see dir_syncs_batched
        self._init_future_logs()    # AlterReplicaLogDirs' copies (log.future_logs)
        self._init_checkpoints(reactor)   # checkpoint files (log.manager_checkpoints)
        self._loops: list[task.LoopingCall] = []
        self._loop_starts: list = []     # delayed calls starting a loop after its first delay
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
                   cleaner_backoff_ms=config.log_cleaner_backoff_ms,
                   topic_configs=topic_configs)

    # --- data dirs --------------------------------------------------------------------------------
    @property
    def live_dirs(self) -> list[str]:
        """The data dirs that have not failed (in ``log.dirs`` order)."""
        return [d for d in self.data_dirs if not self.failure_channel.is_offline(d)]

    @property
    def offline_dirs(self) -> list[str]:
        return [d for d in self.data_dirs if self.failure_channel.is_offline(d)]

    def is_log_dir_online(self, data_dir) -> bool:
        return not self.failure_channel.is_offline(data_dir)

    def is_offline_log(self, topic: str, partition: int) -> bool:
        """Whether the partition's log is in a failed dir (Kafka's HostedPartition.Offline)."""
        return (topic, partition) in self._offline_logs

    @property
    def offline_logs(self) -> set[TopicPartition]:
        return set(self._offline_logs)

    def _report(self, data_dir: str, exc: OSError, action: str) -> str:
        message = f"cannot {action}: {storage_error_hint(exc, data_dir)}"
        self.failure_channel.maybe_add_offline_log_dir(data_dir, message, exc)
        return message

    def handle_log_dir_failure(self, data_dir) -> list[TopicPartition]:
        """Stop serving logs in the failed ``data_dir`` (Kafka's LogManager.handleLogDirFailure):
        drop them and close their files without writing. Returns their partitions ([] if the
        dir was handled before)."""
        data_dir = normalize_dir(data_dir)
        if data_dir in self._stopped_dirs:
            return []
        self._stopped_dirs.add(data_dir)
        gone = sorted(tp for tp, d in self._dir_of.items() if d == data_dir)
        for tp in gone:
            self._dir_of.pop(tp, None)
            self._logs.pop(tp).close_handlers()
        self._offline_logs.update(gone)
        self._drop_future_logs_in(data_dir, gone)
        self._high_watermarks.pop(data_dir, None)
        log.warning("stopped serving %d log(s) in the failed log dir %s; live log dirs: %s",
                    len(gone), data_dir, ", ".join(self.live_dirs) or "none")
        return gone

    # --- service ----------------------------------------------------------------------------------
    def startService(self) -> None:
        self.load_logs()
        self.checkpoint_writer.start()
        super().startService()
        self._start_loop(self.cleanup_logs, self.retention_check_interval_ms, "retention")
        self._schedule_cleaner()
        self._start_loop(self.flush_rolled_segments_in_background,
                         min(self.flush_check_interval_ms, ROLL_FLUSH_INTERVAL_MS), "roll flush")
        if self.flush_check_interval_ms <= MAX_LOOP_INTERVAL_MS:
            self._start_loop(self.flush_dirty_logs, self.flush_check_interval_ms, "flush")
        if self.checkpoint_interval_ms > 0:
            self._start_loop(self.checkpoint_logs_in_background, self.checkpoint_interval_ms,
                             "checkpoint", first_ms=INITIAL_TASK_DELAY_MS)

    def stopService(self):
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self._loops = []
        for call in self._loop_starts:
            if call.active():
                call.cancel()
        self._loop_starts = []
        if self._cleaner_call is not None and self._cleaner_call.active():
            self._cleaner_call.cancel()
        self._cleaner_call = None
        self._close_future_logs()
        self.checkpoint_writer.stop()     # its batch under way first: the writes below follow
        clean = True
        for tp, log_ in list(self._logs.items()):
            if self.failure_channel.is_offline(self._dir_of[tp]):
                continue
            try:
                log_.flush()
            except Exception:  # noqa: BLE001 - keep shutting the others down
                clean = clean and self.failure_channel.is_offline(self._dir_of[tp])
                log.exception("flush of %s-%d failed during shutdown", *tp)
        try:
            self.checkpoint_logs(raise_errors=True)
        except Exception:  # noqa: BLE001
            clean = False
            log.exception("writing checkpoints failed during shutdown")
        for tp, log_ in list(self._logs.items()):
            try:
                if self.failure_channel.is_offline(self._dir_of[tp]):
                    log_.close_handlers()
                else:
                    log_.close()
            except Exception:  # noqa: BLE001
                clean = False
                log.exception("closing %s-%d failed", *tp)
        self._logs.clear()
        self._dir_of.clear()
        self.loaded = False
        # an offline dir gets no marker: its logs are recovered at the next start
        for data_dir in self.offline_dirs:
            log.warning("log dir %s is offline (%s): no clean-shutdown marker, its logs will be "
                        "recovered at the next start", data_dir,
                        self.failure_channel.failure_of(data_dir))
        if clean:
            for data_dir in self.live_dirs:
                _write_marker(os.path.join(data_dir, CLEAN_SHUTDOWN_FILE))
        else:
            log.warning("unclean log shutdown: logs will be recovered at the next start")
        return super().stopService()

    def _schedule_cleaner(self) -> None:
        self._cleaner_call = self.reactor.callLater(max(self.cleaner_backoff_ms, 0) / 1000.0,
                                                    self._cleaner_pass)

    def _cleaner_pass(self) -> None:
        self._cleaner_call = None
        try:
            self.clean_compacted_logs()
        finally:
            if self.running:
                self._schedule_cleaner()

    def _start_loop(self, fn: Callable[[], object], interval_ms: int, what: str,
                    first_ms: int | None = None) -> None:
        """Run ``fn`` every ``interval_ms``, the first time after ``first_ms`` if that is
        shorter than the interval."""
        loop = task.LoopingCall(fn)
        loop.clock = self.reactor
        self._loops.append(loop)
        if first_ms is None or first_ms >= interval_ms:
            self._run_loop(loop, interval_ms, what, now=False)
        else:
            self._loop_starts.append(self.reactor.callLater(
                first_ms / 1000.0, self._run_loop, loop, interval_ms, what, True))

    @staticmethod
    def _run_loop(loop: task.LoopingCall, interval_ms: int, what: str, now: bool) -> None:
        d = loop.start(interval_ms / 1000.0, now=now)
        d.addErrback(lambda f: log.error("log manager %s task stopped: %s", what,
                                         f.getTraceback()))

    # --- loading ----------------------------------------------------------------------------------
    def load_logs(self) -> None:
        """Open every log in every data dir (done by startService; idempotent)."""
        if self.loaded:
            return
        for data_dir in self.data_dirs:
            loaded: dict[TopicPartition, Log] = {}
            try:
                self._load_dir(data_dir, loaded)
            except OSError as exc:  # this dir's disk fails: go on with the others (Kafka's JBOD)
                for log_ in loaded.values():
                    log_.close_handlers()
                self._drop_future_logs_in(data_dir, [])
                self._report(data_dir, exc, f"load the logs in {data_dir}")
                self._stopped_dirs.add(data_dir)
                hosted = _partition_dirs(data_dir)
                if hosted is None:
                    self._unlisted_offline_dirs.add(data_dir)
                else:
                    self._offline_logs.update(hosted)
                continue
            for tp, log_ in loaded.items():
                self._logs[tp] = log_
                self._dir_of[tp] = data_dir
        if not self.live_dirs:
            failures = filter(None, map(self.failure_channel.failure_of, self.data_dirs))
            raise KafkaStorageError(f"none of the log dirs {', '.join(self.data_dirs)} can be "
                                    f"used ({'; '.join(failures)})")
        self.loaded = True

    def _load_dir(self, data_dir: str, loaded: dict) -> None:
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
            future = parse_future_dir(name)
            if future is not None:       # a move interrupted by the restart: it goes on
                self._future_logs[future] = self._load_future_log(
                    data_dir, name, future, clean)
                continue
            tp = parse_topic_partition(name)
            if tp is None:
                log.warning("ignoring directory %s: not <topic>-<partition>", path)
                continue
            if tp in self._logs:
                raise KafkaStorageError(f"partition {name} is in two data dirs: "
                                        f"{self._dir_of[tp]} and {data_dir}")
            loaded[tp] = Log(path, self.config_for(tp[0]), self.clock_ms,
                             recovery_point=recovery_points.get(tp, 0), clean_shutdown=clean,
                             log_start_offset=log_starts.get(tp),
                             log_dir_failure_channel=self.failure_channel)
        if loaded and not clean:
            log.info("recovered %d log(s) in %s: re-verified %d segment(s), %d bytes, past "
                     "their recovery points", len(loaded), data_dir,
                     sum(lg.recovered_segments for lg in loaded.values()),
                     sum(lg.recovered_bytes for lg in loaded.values()))
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
        if tp in self._offline_logs or self._unlisted_offline_dirs:
            # a second, empty log elsewhere would pass for this replica's data
            offline = sorted(self._unlisted_offline_dirs) or self.offline_dirs
            raise KafkaStorageError(
                f"the log of {topic}-{partition} is (or may be) in the offline log dir(s) "
                f"{', '.join(offline)}: it comes back when the broker restarts with the disk fixed")
        _check_topic(topic)
        if partition < 0:
            raise ValueError(f"partition must be >= 0, got {partition}")
        data_dir = self._dir_for_new_log(tp)
        path = os.path.join(data_dir, log_dir_name(topic, partition))
        try:
            created = Log(path, self.config_for(topic), self.clock_ms, clean_shutdown=True,
                          log_dir_failure_channel=self.failure_channel)
            self._sync_dir(data_dir)
        except OSError as exc:
            raise KafkaStorageError(self._report(data_dir, exc, f"create the log {path}")) \
                from exc
        self._logs[tp] = created
        self._dir_of[tp] = data_dir
        log.info("created log for %s-%d in %s", topic, partition, data_dir)
        return created

    @contextlib.contextmanager
    def dir_syncs_batched(self):
        """Within: each data dir a new log was created in is fsynced once, at the end, instead
        of once per log (a LeaderAndIsr creating 3,000 logs spent a third of the broker's time
        in those fsyncs, on the reactor). The caller answers after the block: what is durable
        by then is the same. Nested blocks sync at the end of the outer one."""
        if self._batched_syncs is not None:
            yield
            return
        self._batched_syncs = set()
        try:
            yield
        finally:
            dirs, self._batched_syncs = self._batched_syncs, None
            for data_dir in sorted(dirs):
                fsync_dir(data_dir)

    def _sync_dir(self, data_dir: str) -> None:
        if self._batched_syncs is not None:
            self._batched_syncs.add(data_dir)
        else:
            fsync_dir(data_dir)

    def _choose_dir(self) -> str:
        """The live data dir with the fewest partitions (Kafka's choice)."""
        live = self.live_dirs
        if not live:
            raise KafkaStorageError(f"every log dir of this broker is offline "
                                    f"({', '.join(self.data_dirs)}): restart it after fixing "
                                    f"the disks")
        if len(live) == 1:      # no count needed: counting each time was O(logs) per new log
            return live[0]
        counts = {d: 0 for d in live}
        for data_dir in self._dir_of.values():
            if data_dir in counts:
                counts[data_dir] += 1
        return min(live, key=lambda d: counts[d])

    def delete_log(self, topic: str, partition: int) -> bool:
        """Close and remove the partition's log. False if there was none."""
        tp = (topic, partition)
        self.remove_future_log(tp)
        log_ = self._logs.pop(tp, None)
        data_dir = self._dir_of.pop(tp, None)
        if log_ is None:
            return False
        # no producer snapshot, index write or flush for files about to go (Kafka's asyncDelete
        # renames the dir and closes the handlers): 1,000 partitions of a deleted topic held
        # the reactor for 20 s when each was closed as for a restart
        log_.close_handlers()
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
        for (t, _p), log_ in [*self._logs.items(), *self._future_logs.items()]:
            if t == topic:
                log_.update_config(config)

    # --- periodic work ----------------------------------------------------------------------------
    def cleanup_logs(self) -> int:
        """Retention over the logs that are not compacted (the cleaner's pass handles those,
        as in Kafka's LogManager.cleanupLogs), and ``.deleted`` files of every log; returns the
        number of segments deleted."""
        return self._each_log(lambda log_: not log_.config.compact, compact=False)

    def clean_compacted_logs(self) -> int:
        """The log cleaner's pass (Kafka's LogCleaner): compact each ``compact`` log that is
        dirty enough, then delete its old segments; returns the number deleted."""
        return self._each_log(lambda log_: log_.config.compact, compact=True)

    def _each_log(self, chosen: Callable[[Log], bool], compact: bool) -> int:
        now = self.clock_ms()
        deleted = 0
        for tp, log_ in list(self._logs.items()):
            if self.failure_channel.is_offline(log_.parent_dir) or self.is_moving(tp):
                continue     # a moving log is left alone, as Kafka pauses its cleaning
            try:
                if chosen(log_):
                    if compact:
                        log_.compact(now)
                    deleted += len(log_.delete_old_segments(now))
                log_.delete_expired_files(now)
            except Exception:  # noqa: BLE001 - one bad log must not stop the others
                log.exception("%s of %s-%d failed", "cleaning" if compact else "retention",
                              *tp)
        return deleted

    def flush_dirty_logs(self) -> None:
        now = self.clock_ms()
        self._each_live_log(lambda log_: log_.maybe_flush(now), "flush")

    def _each_live_log(self, action: Callable, what: str) -> None:
        for tp, log_ in list(self._logs.items()):
            if self.failure_channel.is_offline(log_.parent_dir):
                continue
            try:
                action(log_)
            except Exception:  # noqa: BLE001
                log.exception("%s of %s-%d failed", what, *tp)


def _partition_dirs(data_dir: str) -> set[TopicPartition] | None:
    """The partitions with a directory in ``data_dir``; None if it cannot be listed."""
    try:
        names = os.listdir(data_dir)
    except OSError:
        return None
    return {tp for tp in map(parse_topic_partition, names) if tp is not None}


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
