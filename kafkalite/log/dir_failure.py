"""Where a data dir's disk failures are reported: Kafka's LogDirFailureChannel.

Everything that does I/O in a data dir (a Log's appends, rolls, flushes, truncations and reads,
the LogManager's checkpoints and clean-shutdown markers, the high watermark checkpoint) reports an
``OSError`` -- ENOSPC above all, also EIO, EROFS, EDQUOT -- with ``maybe_add_offline_log_dir``.
The first report marks the dir offline and queues it, once, for the broker's handler
(``kafkalite.server.log_dir_failure``), which takes it with ``take_next_offline_log_dir()``.

An offline dir stays offline until the broker restarts, as in Kafka: after a failed write nothing
in memory about that dir can be trusted, and only log recovery at the next start makes its logs
consistent again. From the moment of the report every Log in the dir refuses appends and reads
(``is_offline``), before the handler has even run, so no later produce reaches the failing disk.

Reactor-thread only, like the rest of the log layer. ``take_next_offline_log_dir`` returns a
Deferred that may fire *inside* the failing call that reported the dir: the taker must not do its
work synchronously in that callback (the handler defers it with ``callLater(0)``).
"""

from __future__ import annotations

import errno
import logging
import os

from twisted.internet.defer import Deferred, DeferredQueue

log = logging.getLogger(__name__)


def normalize_dir(path) -> str:
    """The one spelling of a data dir used as a key (``a/b/`` and ``a/b`` are the same dir)."""
    return os.path.normpath(os.fspath(path))


def storage_error_hint(exc: BaseException, data_dir: str) -> str:
    """What went wrong with the disk under ``data_dir`` and what the operator should do."""
    code = getattr(exc, "errno", None)
    what = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    if code in (errno.ENOSPC, errno.EDQUOT):
        fix = "free space on its filesystem, then restart the broker"
    elif code == errno.EROFS:
        fix = "remount its filesystem read-write, then restart the broker"
    else:
        fix = "check the disk, then restart the broker"
    return f"{what} in log dir {data_dir} (offline until the broker restarts): {fix}"


class LogDirFailureChannel:
    """The set of offline data dirs, and a queue that hands each one over once."""

    def __init__(self):
        self._offline: dict[str, str] = {}   # dir -> the first failure's message
        self._queue: DeferredQueue = DeferredQueue()

    def maybe_add_offline_log_dir(self, data_dir, message: str,
                                  exc: BaseException | None = None) -> bool:
        """Report an I/O failure in ``data_dir``. True if this report took the dir offline
        (the first one); later reports of the same dir are only logged."""
        key = normalize_dir(data_dir)
        first = key not in self._offline
        if first:
            self._offline[key] = message
            log.error("%s", message)
            self._queue.put(key)
        else:
            log.debug("%s (log dir %s already offline)", message, key)
        return first

    def is_offline(self, data_dir) -> bool:
        return bool(self._offline) and normalize_dir(data_dir) in self._offline

    @property
    def offline_dirs(self) -> list[str]:
        """Offline dirs in the order they failed."""
        return list(self._offline)

    def failure_of(self, data_dir) -> str | None:
        """The message of the failure that took ``data_dir`` offline (None if it is online)."""
        return self._offline.get(normalize_dir(data_dir))

    def take_next_offline_log_dir(self) -> Deferred:
        """A Deferred firing with the next dir that went offline (each dir comes out once)."""
        return self._queue.get()
