"""Delayed operations: requests that wait for a condition or a timeout (Kafka's purgatory).

A fetch with ``min_bytes`` waits until enough data arrives; a produce with acks=all waits until every
in-sync replica has the records. Each delayed operation watches one or more keys (topic-partitions).
When something happens to a key (an append, a high-watermark move), ``check(key)`` re-tests the
operations that watch it; each completes exactly once, either because ``try_complete`` said so or
because its timer fired. Everything runs on the reactor thread, so no locks are needed.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Hashable, Iterable

from twisted.internet import defer


class DelayedOperation:
    """One waiting request. Subclasses implement ``try_complete`` and ``on_complete``."""

    def __init__(self, timeout_ms: int):
        self.timeout_ms = timeout_ms
        self.deferred: defer.Deferred = defer.Deferred()
        self.completed = False
        self._timer = None

    def try_complete(self) -> bool:
        """Return True when the operation's condition holds (it is then completed)."""
        raise NotImplementedError

    def on_complete(self, timed_out: bool):
        """Build the result the waiting request answers with."""
        raise NotImplementedError

    def force_complete(self, timed_out: bool = False) -> None:
        if self.completed:
            return
        self.completed = True
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        try:
            result = self.on_complete(timed_out)
        except Exception as exc:  # noqa: BLE001 - the waiting request gets the error
            self.deferred.errback(exc)
            return
        self.deferred.callback(result)


class Purgatory:
    """Holds delayed operations by key until they complete or time out."""

    def __init__(self, name: str, reactor):
        self.name = name
        self._reactor = reactor
        self._watchers: dict[Hashable, list[DelayedOperation]] = defaultdict(list)

    def try_complete_else_watch(self, operation: DelayedOperation,
                                keys: Iterable[Hashable]) -> defer.Deferred:
        """Complete at once if possible; otherwise watch ``keys`` until done or timed out."""
        if operation.try_complete():
            operation.force_complete()
            return operation.deferred
        keys = list(keys)
        for key in keys:
            self._watchers[key].append(operation)
        # a negative timeout (a client may send one) means "do not wait", never an error
        operation._timer = self._reactor.callLater(
            max(0, operation.timeout_ms) / 1000.0, self._expire, operation, keys)
        return operation.deferred

    def check(self, key: Hashable) -> int:
        """Re-test the operations watching ``key``; return how many completed."""
        watchers = self._watchers.get(key)
        if not watchers:
            return 0
        completed = 0
        remaining = []
        for operation in watchers:
            if operation.completed:
                continue
            if operation.try_complete():
                operation.force_complete()
                completed += 1
            else:
                remaining.append(operation)
        if remaining:
            self._watchers[key] = remaining
        else:
            self._watchers.pop(key, None)
        return completed

    def complete_all(self, key: Hashable | None = None,
                     predicate: Callable[[DelayedOperation], bool] | None = None) -> None:
        """Force-complete watchers (e.g. leadership moved away): they answer with what they have."""
        keys = [key] if key is not None else list(self._watchers)
        for each in keys:
            for operation in self._watchers.pop(each, []):
                if predicate is None or predicate(operation):
                    operation.force_complete()
                elif not operation.completed:
                    self._watchers[each].append(operation)

    def _expire(self, operation: DelayedOperation, keys: list[Hashable]) -> None:
        operation._timer = None
        operation.force_complete(timed_out=True)
        for key in keys:
            watchers = self._watchers.get(key)
            if watchers is not None:
                watchers[:] = [op for op in watchers if not op.completed]
                if not watchers:
                    del self._watchers[key]

    def watched(self) -> int:
        return sum(len(ops) for ops in self._watchers.values())
