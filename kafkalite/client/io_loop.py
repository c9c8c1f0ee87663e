"""The select loop the producer's sender and the consumer's fetcher both run (Java's
``NetworkClient.poll``, aiokafka's ``AIOKafkaClient``): one implementation, one instance per client.

An ``IoLoop`` watches one connection per broker id. ``poll(timeout, on_ready)`` waits until a
watched socket is readable, the loop is woken (``wakeup()``, from another thread), the oldest
request of some connection passes its deadline, or ``timeout`` passes; then it calls
``on_ready(node)`` for each readable node and for each node whose oldest request is overdue (its
``receive_available`` then raises RequestTimedOutError). ``on_ready`` reads with the connection's
own non-blocking ``receive_available``.

Request deadlines are the connections' (``time.monotonic``), not the injected clock of the
logic around the loop: a fake clock in a unit test does not time sockets out.

Why one instance per client and not one loop (thread) for every client of a process: a
Consumer does its I/O on the caller's thread, as kafka-python's and the Java client's do (so a
poll hands out what its own thread read, and a consumer needs no lock), while a Producer's I/O runs
on its sender thread so ``send()`` never waits for the network. Sharing one thread between them
would put a lock on the consumer's every fetch and make a slow user callback on the sender thread
stall the consumer; what they share is this code.
"""

from __future__ import annotations

import selectors
import socket
import time
from typing import Callable

__all__ = ["IoLoop"]


class IoLoop:
    """One selector over broker connections, one per node id, and an optional wakeup pipe."""

    def __init__(self, wakeable: bool = False):
        self.selector = selectors.DefaultSelector()
        self.registered: dict[int, object] = {}      # node -> connection
        self._wake_r = self._wake_w = None
        self._wake_pending = False
        if wakeable:
            self._wake_r, self._wake_w = socket.socketpair()
            self._wake_r.setblocking(False)
            self._wake_w.setblocking(False)
            self.selector.register(self._wake_r, selectors.EVENT_READ, None)

    # --- connections --------------------------------------------------------------------------
    def register(self, node: int, conn) -> None:
        """Watch ``conn`` for ``node`` (replacing the node's previous connection)."""
        if self.registered.get(node) is conn:
            return
        self.unregister(node)
        self.selector.register(conn, selectors.EVENT_READ, node)
        self.registered[node] = conn

    def unregister(self, node: int):
        conn = self.registered.pop(node, None)
        if conn is not None:
            try:
                self.selector.unregister(conn)
            except (KeyError, ValueError):
                pass
        return conn

    # --- waking -------------------------------------------------------------------------------
    def wakeup(self) -> None:
        """Make a ``poll`` in another thread return now (no-op without a wakeup pipe)."""
        if self._wake_w is not None and not self._wake_pending:
            self._wake_pending = True
            try:
                self._wake_w.send(b"\0")
            except OSError:  # buffer full (already awake) or closed
                pass

    def clear_wakeup(self) -> None:
        """Forget a pending wakeup that no poll has consumed (a close wakes once more)."""
        self._wake_pending = False

    def _drain_wakeup(self) -> None:
        # drain first, then clear: a wakeup landing in between must not leave the flag set
        # with the pipe empty (every later wakeup would be dropped)
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:
            pass
        self._wake_pending = False

    # --- waiting ------------------------------------------------------------------------------
    def deadline_delay(self, timeout: float | None) -> float | None:
        """``timeout`` shortened to the time left before the earliest request deadline."""
        now = time.monotonic()
        for conn in self.registered.values():
            deadline = conn.oldest_deadline()
            if deadline is not None:
                delay = deadline - now if deadline > now else 0.0
                if timeout is None or delay < timeout:
                    timeout = delay
        return timeout

    def poll(self, timeout: float | None, on_ready: Callable[[int], None]) -> None:
        """Wait (at most ``timeout`` s, None: until something happens) and dispatch."""
        timeout = self.deadline_delay(timeout)
        if timeout is not None and timeout < 0:
            timeout = 0
        for key, _mask in self.selector.select(timeout):
            if key.data is None:
                self._drain_wakeup()
            else:
                on_ready(key.data)
        now = time.monotonic()
        for node, conn in list(self.registered.items()):
            deadline = conn.oldest_deadline()
            if deadline is not None and deadline < now:
                on_ready(node)

    def close(self) -> None:
        self.selector.close()
        for s in (self._wake_r, self._wake_w):
            if s is not None:
                try:
                    s.close()
                except OSError:  # pragma: no cover
                    pass
