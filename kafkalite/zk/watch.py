"""Standing ZooKeeper watches on kazoo's own recipes (:mod:`kazoo.recipe.watchers`).

kazoo's ``DataWatch`` and ``ChildrenWatch`` read a znode and leave a one-shot watch, read again
whenever it fires, and read again on every reconnection, including the new session kazoo opens
after one expired. What kafkalite adds on top:

* delivery through ``deliver(callback, *args)``: ZkClient's, which hops onto the reactor;
* each distinct value once, in order: ``(data, zk_version)``, or the sorted children;
* children of a znode that may not exist: ``ChildrenWatch`` stops for good the first time its
  znode is missing, so a ``DataWatch`` on the same znode follows its existence: ``None`` while it
  is missing, and a fresh ``ChildrenWatch`` for each incarnation of it (its creation zxid);
* ``cancel()``: kazoo's recipes have no stop of their own (one stops when its function returns
  False), so each recipe gets the kazoo client through a :class:`_RecipeClient`, which remembers
  the session listener the recipe adds; ``cancel()`` takes those away, so a cancelled recipe
  reads nothing on later reconnections, and its function returns False if kazoo still calls it.

This module knows nothing of ZkClient: it gets the kazoo client and the delivery hook.
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any, Callable

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

log = logging.getLogger("kafkalite.zk.client")

Deliver = Callable[..., None]    # deliver(callback, *args): runs callback(*args) somewhere
_NOTHING = object()              # the last value before any was delivered


class _RecipeClient:
    """The kazoo client as one recipe sees it: the same client, except that the session
    listeners the recipe adds are remembered, for ``unhook()`` to remove."""

    def __init__(self, kazoo: KazooClient):
        self._kazoo = kazoo
        self._listeners: list[Callable[[str], Any]] = []
        self._unhooked = False
        self._lock = threading.Lock()

    def add_listener(self, listener: Callable[[str], Any]) -> None:
        with self._lock:
            if self._unhooked:      # cancelled while the recipe was being made
                return
            self._listeners.append(listener)
            self._kazoo.add_listener(listener)

    def unhook(self) -> None:
        with self._lock:
            self._unhooked = True
            listeners, self._listeners = self._listeners, []
        for listener in listeners:
            self._kazoo.remove_listener(listener)

    def __getattr__(self, name: str) -> Any:   # get, exists, retry, handler, remove_listener ...
        return getattr(self._kazoo, name)


class ZkWatch:
    """A standing watch on one znode; ``cancel()`` stops it (no callback runs after that)."""

    kind = ""

    def __init__(self, kazoo: KazooClient, path: str, callback: Callable[..., Any],
                 deliver: Deliver, on_cancel: Callable[["ZkWatch"], None] | None = None):
        self.path = path
        self._kazoo = kazoo
        self._callback = callback
        self._deliver = deliver
        self._on_cancel = on_cancel
        # reentrant: without a reactor the callback runs under it, and may cancel its own watch
        self._lock = threading.RLock()
        self._cancelled = False
        self._last: Any = _NOTHING
        self._recipe_clients: list[_RecipeClient] = []

    @property
    def active(self) -> bool:
        return not self._cancelled

    def start(self) -> "ZkWatch":
        """Read the znode, deliver its value and leave the watch (blocks for the first read)."""
        raise NotImplementedError

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            recipe_clients, self._recipe_clients = self._recipe_clients, []
        for recipe_client in recipe_clients:
            recipe_client.unhook()
        if self._on_cancel is not None:
            self._on_cancel(self)

    def _recipe_client(self) -> _RecipeClient:
        """A client for one more recipe of this watch (cancel() unhooks it)."""
        recipe_client = _RecipeClient(self._kazoo)
        with self._lock:
            self._recipe_clients.append(recipe_client)
        return recipe_client

    def _offer(self, *value: Any) -> bool:
        """Deliver ``value`` unless it is the one delivered last; False once cancelled (kazoo's
        signal for a recipe to stop)."""
        with self._lock:
            if self._cancelled:
                return False
            if value != self._last:
                self._last = value
                self._deliver(self._callback, *value)
            return True


class DataZkWatch(ZkWatch):
    """``callback(data, zk_version)``; ``(None, None)`` while the znode does not exist."""

    kind = "data"

    def start(self) -> "DataZkWatch":
        DataWatch(self._recipe_client(), self.path, self._on_data)
        return self

    def _on_data(self, data: bytes | None, stat: Any, event: Any = None) -> bool | None:
        value = (None, None) if stat is None else (data, stat.version)
        return None if self._offer(*value) else False


class ChildrenZkWatch(ZkWatch):
    """``callback(sorted_children)``; ``None`` while the znode does not exist."""

    kind = "children"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._incarnation: int | None = None   # czxid of the znode our ChildrenWatch follows
        self._children_client: _RecipeClient | None = None   # that ChildrenWatch's

    def start(self) -> "ChildrenZkWatch":
        DataWatch(self._recipe_client(), self.path, self._on_existence)
        return self

    def _retire_children_watch(self) -> None:
        """The ChildrenWatch of a deleted (or replaced) znode: no more reads on reconnection
        (it stopped itself when the znode went, but kept its session listener)."""
        if self._children_client is not None:
            self._children_client.unhook()
            if self._children_client in self._recipe_clients:   # not when cancelled meanwhile
                self._recipe_clients.remove(self._children_client)
            self._children_client = None

    def _on_existence(self, data: bytes | None, stat: Any, event: Any = None) -> bool | None:
        with self._lock:
            if self._cancelled:
                return False
            if stat is None:
                self._incarnation = None     # retires the ChildrenWatch of the deleted znode
                self._retire_children_watch()
                self._offer(None)
                return None
            if stat.czxid == self._incarnation:
                return None                  # the znode's data changed, not the znode
            self._incarnation = stat.czxid
            self._retire_children_watch()
            self._children_client = children_client = self._recipe_client()
        try:  # outside the lock: the recipe's first read and callback happen right here
            ChildrenWatch(children_client, self.path,
                          functools.partial(self._on_children, stat.czxid))
        except KazooException:
            with self._lock:
                if self._children_client is children_client:
                    self._incarnation = None     # try again at the znode's next change
                    self._retire_children_watch()
            if self.active:
                log.exception("watch on the children of %s failed", self.path)
        return None

    def _on_children(self, incarnation: int, children: list[str]) -> bool | None:
        with self._lock:
            if incarnation != self._incarnation:
                return False                 # a later incarnation has its own ChildrenWatch
            return None if self._offer(sorted(children)) else False
