"""A failure that repeats every retry, logged once (the producer's metadata refreshes and
connects, InitProducerId).

A producer that cannot reach its brokers retries every backoff; logging each attempt buried
everything else (issue 13: "producer metadata refresh failed" ten times a second). This logs the
first failure at WARNING, and again only when something changes.
"""

from __future__ import annotations

import logging
import threading

__all__ = ["RepeatedFailureLog"]


class RepeatedFailureLog:
    """Logs a failure that repeats (a refresh every retry backoff) once, not at every attempt.

    ``failed(exc)`` logs ``"<what>: <exc>"`` at WARNING the first time, and again only when the
    error differs from the last one logged (another class, or other addresses or reasons) or after
    ``succeeded()`` was called in between; repeats go to DEBUG. ``succeeded()`` after failures
    logs one INFO line. Thread-safe (the producer's user and sender threads both report).
    """

    def __init__(self, logger: logging.Logger, what: str):
        self._log = logger
        self.what = what
        self._lock = threading.Lock()
        self._last = None          # key of the error last logged at WARNING; None: all well
        self.repeats = 0           # failures since that WARNING

    @staticmethod
    def _key(exc: BaseException):
        attempts = getattr(exc, "attempts", None)
        if attempts is not None:   # NoBrokersAvailableError: the addresses and their errors
            return type(exc), frozenset(attempts)
        return type(exc), str(exc)

    def failed(self, exc: BaseException) -> None:
        key = self._key(exc)
        with self._lock:
            if key != self._last:
                self._last = key
                self.repeats = 0
                self._log.warning("%s: %s", self.what, exc)
            else:
                self.repeats += 1
                self._log.debug("%s (again, %d repeat(s)): %s", self.what, self.repeats, exc)

    def succeeded(self) -> None:
        if self._last is None:     # the common case, without the lock
            return
        with self._lock:
            if self._last is not None:
                self._log.info("%s: recovered after %d failure(s) in a row", self.what,
                               self.repeats + 1)
                self._last = None
                self.repeats = 0
