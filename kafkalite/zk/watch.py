"""Standing ZooKeeper watches: kazoo's one-shot watches re-armed after every event and every
reconnection, delivering each distinct value once, in order (see ZkClient.watch_children/data)."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from kazoo.exceptions import (
    ConnectionLoss, KazooException, NoNodeError, OperationTimeoutError, SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType

if TYPE_CHECKING:
    from kafkalite.zk.client import ZkClient

log = logging.getLogger("kafkalite.zk.client")


class ZkWatch:
    """A standing watch on one znode's children or data, re-armed after every event and every
    reconnection; the callback sees each distinct value once, in order. ``cancel()`` stops it."""

    def __init__(self, client: "ZkClient", path: str, kind: str, callback: Callable[..., Any]):
        self._client = client
        self.path = path
        self.kind = kind
        self._callback = callback
        self._lock = threading.Lock()
        self._cancelled = False
        self._last: Any = object()

    @property
    def active(self) -> bool:
        return not self._cancelled

    def cancel(self) -> None:
        self._cancelled = True
        self._client._forget_watch(self)

    # kazoo thread: a one-shot watch fired
    def _on_event(self, event: Any) -> None:
        if self._cancelled:
            return
        if event is not None and event.type == EventType.NONE:
            return  # connection state change: the session listener re-arms us on reconnect
        self._client._spawn(self._arm)

    def _arm(self) -> None:
        """Read the znode and leave a watch (runs on a kazoo worker thread or the caller's)."""
        client = self._client
        kz = client._kazoo
        with self._lock:
            while not self._cancelled:
                try:
                    if self.kind == "children":
                        try:
                            value: Any = sorted(client._wait(kz.get_children_async, self.path,
                                                             self._on_event))
                        except NoNodeError:
                            if client._wait(kz.exists_async, self.path, self._on_event) is not None:
                                continue  # created in between: read its children
                            value = None
                    else:
                        try:
                            data, stat = client._wait(kz.get_async, self.path, self._on_event)
                            value = (data, stat.version)
                        except NoNodeError:
                            if client._wait(kz.exists_async, self.path, self._on_event) is not None:
                                continue
                            value = (None, None)
                except (ConnectionLoss, SessionExpiredError, OperationTimeoutError,
                        KazooTimeoutError):
                    if client.connected and not self._cancelled:  # a hiccup: try again soon
                        client._spawn(self._arm_later)
                    return  # otherwise re-armed when the connection comes back
                except KazooException:
                    if not self._cancelled and client._started:
                        log.exception("watch on %s failed", self.path)
                    return
                if value != self._last:
                    self._last = value
                    if self.kind == "children":
                        client._deliver(self._callback, value)
                    else:
                        client._deliver(self._callback, *value)
                return

    def _arm_later(self, delay_s: float = 0.2) -> None:
        time.sleep(delay_s)
        self._arm()
