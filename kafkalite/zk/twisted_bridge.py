"""Blocking ZooKeeper calls as Deferreds, for code on the reactor thread (docs/architecture.md,
5. Threads and the reactor).

``TwistedZk(zk, reactor)`` runs :class:`~kafkalite.zk.client.ZkClient` methods on a small dedicated
thread pool and fires the Deferred on the reactor thread::

    deferred_zk = TwistedZk(zk, reactor)
    d = deferred_zk.get_partition_state("t", 0)          # any ZkClient method, same arguments
    d = deferred_zk.run(zk.create_topic, "t", {0: [1]})  # or any blocking callable

Errors arrive as the same kafkalite exceptions the blocking call raises. Watch and session callbacks
do not go through here: ZkClient already delivers them on the reactor when it was given one.
"""

from __future__ import annotations

from typing import Any, Callable

from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThreadPool
from twisted.python.threadpool import ThreadPool

from kafkalite.zk.client import ZkClient


class TwistedZk:
    """Deferred-returning facade over a ZkClient, backed by its own thread pool."""

    def __init__(self, zk: ZkClient, reactor: Any, max_threads: int = 4,
                 name: str = "kafkalite-zk"):
        self.zk = zk
        self._reactor = reactor
        self._pool = ThreadPool(minthreads=0, maxthreads=max_threads, name=name)
        self._pool.start()
        self._trigger = reactor.addSystemEventTrigger("during", "shutdown", self._stop_pool)

    def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Deferred:
        """Run the blocking ``fn(*args, **kwargs)`` on the pool; the result fires on the reactor."""
        return deferToThreadPool(self._reactor, self._pool, fn, *args, **kwargs)

    def __getattr__(self, name: str) -> Callable[..., Deferred]:
        if name.startswith("_"):
            raise AttributeError(name)
        attr = getattr(self.zk, name)
        if not callable(attr):
            raise AttributeError(f"{name} is not a ZkClient method")

        def call(*args: Any, **kwargs: Any) -> Deferred:
            return self.run(attr, *args, **kwargs)

        call.__name__ = name
        call.__doc__ = getattr(attr, "__doc__", None)
        return call

    def stop(self) -> None:
        """Stop the pool (queued calls are dropped). The ZkClient itself is left to its owner."""
        if self._trigger is not None:
            self._reactor.removeSystemEventTrigger(self._trigger)
            self._trigger = None
        self._stop_pool()

    def _stop_pool(self) -> None:
        if self._pool.started:
            self._pool.stop()
