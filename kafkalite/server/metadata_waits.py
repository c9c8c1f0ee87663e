"""Answers that wait for this broker's metadata: the admin APIs (CreateTopics, DeleteTopics,
CreatePartitions) write ZooKeeper, the controller acts on it, and the answer leaves once this
broker's metadata cache shows the result (or the request's timeout passes), as Kafka 2.8's
DelayedCreateTopics / DelayedDeleteTopics / DelayedCreatePartitions purgatories do.

The broker owns one ``MetadataWaits``; every UpdateMetadata the broker obeys calls ``check()``,
which completes the waits whose condition now holds.
"""

from __future__ import annotations

from typing import Callable

from twisted.internet import defer

from kafkalite.server.purgatory import DelayedOperation, Purgatory

__all__ = ["MetadataWaits"]

_KEY = "metadata"      # one key: every wait is re-checked on every metadata update


class _DelayedMetadataCondition(DelayedOperation):
    """Completes when ``predicate()`` holds (checked on every UpdateMetadata) or on timeout."""

    def __init__(self, timeout_ms: int, predicate: Callable[[], bool],
                 on_done: Callable[[bool], object]):
        super().__init__(timeout_ms)
        self.predicate = predicate
        self.on_done = on_done

    def try_complete(self) -> bool:
        return self.predicate()

    def on_complete(self, timed_out: bool):
        return self.on_done(timed_out)


class MetadataWaits:
    def __init__(self, reactor):
        self.purgatory = Purgatory("metadata", reactor)

    def wait(self, timeout_ms: int, predicate: Callable[[], bool],
             on_done: Callable[[bool], object]) -> defer.Deferred:
        """Fires with ``on_done(timed_out)`` once ``predicate()`` holds (at once if it does
        already) or after ``timeout_ms``."""
        operation = _DelayedMetadataCondition(timeout_ms, predicate, on_done)
        return self.purgatory.try_complete_else_watch(operation, [_KEY])

    def check(self) -> int:
        """The metadata changed: complete the waits that are now satisfied."""
        return self.purgatory.check(_KEY)

    def watched(self) -> int:
        return self.purgatory.watched()
