"""One ZooKeeper session over kazoo, with kafkalite's typed operations on the zk_schema tree.

``ZkClient`` implements the raw operations of :class:`~kafkalite.zk.ops.ZnodeOps` over one kazoo
session and inherits the typed operations written on them: :mod:`~kafkalite.zk.cluster_ops`
(cluster id, brokers, topics, configs, producer ids), :mod:`~kafkalite.zk.controller_ops`
(controller election and fenced writes, partition states, deletion, ISR notifications, /admin
requests) and :mod:`~kafkalite.zk.consumer_ops` (ZooKeeper consumer groups). Its methods block
(call them from threads, blocking clients, or through :mod:`kafkalite.zk.twisted_bridge` from the
reactor). Watch and session callbacks are delivered on the reactor thread
(``reactor.callFromThread``) when a reactor was given, else directly on kazoo's threads (then they
must not block).

Failures raise :mod:`kafkalite.zk.errors` classes (all :class:`kafkalite.errors.ZooKeeperError`) or
kafkalite's wire errors (``TopicAlreadyExistsError`` ...); kazoo exceptions never escape.

Reads retry through connection losses (bounded by ``connection_timeout_s``); writes do not, because a
write whose answer was lost may have happened: callers decide (the typed writes that can be
made idempotent are, e.g. ephemeral registrations recognise their own session's znode).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from enum import Enum
from typing import Any, Callable, Iterator, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError, ConnectionClosedError, ConnectionLoss, KazooException, NoAuthError,
    NodeExistsError, NoNodeError, NotEmptyError, OperationTimeoutError, RolledBackError,
    SessionExpiredError, ZookeeperError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState
from kazoo.retry import KazooRetry, RetryFailedError

from kafkalite.errors import KafkaError, ZooKeeperError
from kafkalite.zk.cluster_ops import ClusterZkOps
from kafkalite.zk.consumer_ops import ConsumerZkOps
from kafkalite.zk.controller_ops import ControllerZkOps
from kafkalite.zk.errors import (
    ZkBadVersionError, ZkClientClosedError, ZkConnectionLossError, ZkNoAuthError,
    ZkNodeExistsError, ZkNoNodeError, ZkNotEmptyError, ZkSessionExpiredError,
)
from kafkalite.zk.ops import (  # noqa: F401 - re-exported: the op types' historic home
    TopicPartition, ZkCheck, ZkCreate, ZkDelete, ZkOp, ZkSetData, ZnodeOps,
)
from kafkalite.zk.watch import ChildrenZkWatch, DataZkWatch, ZkWatch

log = logging.getLogger(__name__)

DEFAULT_SESSION_TIMEOUT_MS = 18_000  # Kafka's zookeeper.session.timeout.ms
DEFAULT_CONNECTION_TIMEOUT_S = 15.0


# --------------------------------------------------------------------------------------------- errors

def translate_error(exc: BaseException, what: str = "") -> KafkaError:
    """The kafkalite error for a kazoo exception (anything else comes back as ZooKeeperError)."""
    where = f" ({what})" if what else ""
    if isinstance(exc, KafkaError):
        return exc
    if isinstance(exc, NoNodeError):
        return ZkNoNodeError(f"znode does not exist{where}")
    if isinstance(exc, NodeExistsError):
        return ZkNodeExistsError(f"znode already exists{where}")
    if isinstance(exc, BadVersionError):
        return ZkBadVersionError(f"znode was changed by someone else (zkVersion mismatch){where}")
    if isinstance(exc, NotEmptyError):
        return ZkNotEmptyError(f"znode has children{where}")
    if isinstance(exc, NoAuthError):
        return ZkNoAuthError(f"NoAuth: the znode's ZooKeeper ACL refuses this client{where}; "
                             "give it the cluster's ZooKeeper identity (zookeeper.auth.digest)")
    if isinstance(exc, ConnectionClosedError):
        return ZkClientClosedError(f"the ZooKeeper client is closed{where}")
    if isinstance(exc, SessionExpiredError):
        return ZkSessionExpiredError(f"ZooKeeper session expired{where}")
    if isinstance(exc, (ConnectionLoss, OperationTimeoutError, RetryFailedError, KazooTimeoutError)):
        return ZkConnectionLossError(f"lost the connection to ZooKeeper{where}: "
                                     f"{type(exc).__name__}")
    if isinstance(exc, ZookeeperError):
        return ZooKeeperError(f"ZooKeeper error {type(exc).__name__}{where}")
    if isinstance(exc, KazooException):
        return ZooKeeperError(f"ZooKeeper client error {type(exc).__name__}: {exc}{where}")
    return ZooKeeperError(f"{type(exc).__name__}: {exc}{where}")


@contextlib.contextmanager
def _translated(what: str = "") -> Iterator[None]:
    try:
        yield
    except (KazooException, KazooTimeoutError) as exc:
        raise translate_error(exc, what) from exc


class ZkState(str, Enum):
    """Session states as listeners see them."""
    CONNECTED = "CONNECTED"     # connected (first time, or again after a disconnect / a new session)
    SUSPENDED = "SUSPENDED"     # disconnected; the session may still be alive
    LOST = "LOST"               # the session expired: ephemerals and watches are gone
    CLOSED = "CLOSED"           # we stopped the client ourselves


def split_connect_string(connect_string: str) -> tuple[str, str]:
    """``"h1:1,h2:2/chroot"`` -> ``("h1:1,h2:2", "/chroot")`` (chroot "" when there is none)."""
    hosts, sep, chroot = connect_string.strip().partition("/")
    chroot = ("/" + chroot).rstrip("/") if sep else ""
    if not hosts:
        raise ZooKeeperError(f"bad ZooKeeper connect string {connect_string!r}")
    return hosts, chroot


# ------------------------------------------------------------------------------------------- client

class ZkClient(ClusterZkOps, ControllerZkOps, ConsumerZkOps):
    """One ZooKeeper session with kafkalite's typed operations (the mixins) over kazoo.

    ``connect_string`` may carry a chroot (``"h1:2181,h2:2181/kafkalite"``); it is created at
    ``start()`` when missing. ``reactor``: when given, watch and state callbacks hop onto it.
    """

    def __init__(self, connect_string: str, session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
                 reactor: Any = None, connection_timeout_s: float = DEFAULT_CONNECTION_TIMEOUT_S,
                 auth_data: Sequence[tuple[str, str]] = (),
                 default_acl: Sequence[Any] | None = None):
        self.connect_string = connect_string
        self.hosts, self.chroot = split_connect_string(connect_string)
        self.session_timeout_ms = int(session_timeout_ms)
        self.connection_timeout_s = float(connection_timeout_s)
        self._reactor = reactor
        # ZooKeeper's own ACLs (zookeeper.set.acl): who this client is, and the ACL its znodes
        # get (kafkalite.zk.znode_acls builds both)
        self.auth_data = set(auth_data)
        self.default_acl = list(default_acl) if default_acl else None
        self._kazoo = self._new_kazoo(connect_string)
        self._retry_template = self._new_retry(max_tries=-1, deadline=self.connection_timeout_s)
        self._listeners: list[Callable[[ZkState], Any]] = []
        self._watches: set[ZkWatch] = set()
        self._watches_lock = threading.Lock()
        self._closing = False
        self._started = False
        self._kazoo.add_listener(self._on_kazoo_state)

    @staticmethod
    def _new_retry(max_tries: int, deadline: float | None = None) -> KazooRetry:
        # short, capped backoff: reconnect quickly after a ZooKeeper restart
        return KazooRetry(max_tries=max_tries, delay=0.05, backoff=2, max_delay=1.0,
                          max_jitter=0.2, deadline=deadline)

    # ------------------------------------------------------------------------------- lifecycle

    def start(self) -> "ZkClient":
        """Connect (creating the chroot if missing); raises ZkConnectionLossError on timeout."""
        if self._started:
            return self
        if self.chroot:
            self._ensure_chroot()
        self._closing = False
        with _translated(f"connecting to {self.connect_string}"):
            self._kazoo.start(timeout=self.connection_timeout_s)
        self._started = True
        return self

    def _new_kazoo(self, hosts: str) -> KazooClient:
        return KazooClient(hosts=hosts, timeout=self.session_timeout_ms / 1000.0,
                           connection_retry=self._new_retry(max_tries=-1),
                           auth_data=self.auth_data or None, default_acl=self.default_acl)

    def _ensure_chroot(self) -> None:
        boot = self._new_kazoo(self.hosts)
        try:
            with _translated(f"creating chroot {self.chroot} on {self.hosts}"):
                boot.start(timeout=self.connection_timeout_s)
                boot.ensure_path(self.chroot)
        finally:
            with contextlib.suppress(Exception):
                boot.stop()
                boot.close()

    def stop(self) -> None:
        """Close the session (its ephemeral znodes vanish at once). Idempotent."""
        if not self._started:
            return
        self._closing = True
        self._started = False
        with self._watches_lock:
            watches = list(self._watches)
            self._watches.clear()
        for watch in watches:
            watch.cancel()
        with contextlib.suppress(Exception):
            self._kazoo.stop()
        with contextlib.suppress(Exception):
            self._kazoo.close()

    close = stop

    def __enter__(self) -> "ZkClient":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def connected(self) -> bool:
        return self._kazoo.connected

    @property
    def session_id(self) -> int | None:
        cid = self._kazoo.client_id
        return cid[0] if cid else None

    def session_id_and_password(self) -> tuple[int, bytes]:
        """The live session's (id, password): what it takes to expire it from outside."""
        cid = self._kazoo.client_id
        if not cid:
            raise ZkConnectionLossError("not connected: no session")
        return cid[0], cid[1]

    # ------------------------------------------------------------------- state & callbacks

    def add_state_listener(self, callback: Callable[[ZkState], Any]) -> None:
        """``callback(ZkState)`` on every session state change (on the reactor when there is one)."""
        self._listeners.append(callback)

    def remove_state_listener(self, callback: Callable[[ZkState], Any]) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(callback)

    def _on_kazoo_state(self, state: str) -> None:  # kazoo's connection thread: never block
        if state == KazooState.CONNECTED:
            zs = ZkState.CONNECTED  # watches re-arm themselves (kazoo's recipes listen too)
        elif state == KazooState.SUSPENDED:
            zs = ZkState.SUSPENDED
        else:
            zs = ZkState.CLOSED if self._closing else ZkState.LOST
        for cb in list(self._listeners):
            self._deliver(cb, zs)

    def _deliver(self, callback: Callable[..., Any], *args: Any) -> None:
        if self._reactor is not None:
            self._reactor.callFromThread(_call_logged, callback, *args)
        else:
            _call_logged(callback, *args)

    # -------------------------------------------------------------------------- watches

    def watch_children(self, path: str, callback: Callable[[list[str] | None], Any]) -> ZkWatch:
        """Call ``callback(sorted_children)`` now and whenever the children change; ``None`` while
        the znode does not exist. The watch survives reconnections and session expiry."""
        return self._start_watch(ChildrenZkWatch(self._kazoo, path, callback, self._deliver,
                                                 self._forget_watch))

    def watch_data(self, path: str,
                   callback: Callable[[bytes | None, int | None], Any]) -> ZkWatch:
        """Call ``callback(data, zk_version)`` now and on every change; ``(None, None)`` while the
        znode does not exist (so deletion and creation are both seen)."""
        return self._start_watch(DataZkWatch(self._kazoo, path, callback, self._deliver,
                                             self._forget_watch))

    def _start_watch(self, watch: ZkWatch) -> ZkWatch:
        """Keep ``watch`` (stop() cancels it) and arm it: its first read happens here."""
        self._require_started()
        with self._watches_lock:
            self._watches.add(watch)
        try:
            watch.start()
        except KazooException:  # e.g. NoAuth: as before, logged, and the watch object returned
            log.exception("watch on %s failed", watch.path)
        return watch

    def _forget_watch(self, watch: ZkWatch) -> None:
        with self._watches_lock:
            self._watches.discard(watch)

    # -------------------------------------------------------------------------- raw helpers

    def _require_started(self) -> None:
        if not self._started:
            raise ZkClientClosedError("ZkClient is not started (call start())")

    def _read(self, async_fn: Callable[..., Any], *args: Any, what: str = "") -> Any:
        """A read (an idempotent kazoo ``*_async`` call), retried through connection losses for up
        to connection_timeout_s."""
        self._require_started()
        retry = self._retry_template.copy()  # KazooRetry keeps per-call state: one per call
        with _translated(what):
            return retry(self._wait, async_fn, *args)

    def _write(self, async_fn: Callable[..., Any], *args: Any, what: str = "", **kwargs: Any) -> Any:
        """A write, not retried: when its answer is lost it may or may not have happened."""
        self._require_started()
        with _translated(what):
            return self._wait(async_fn, *args, **kwargs)

    def _wait(self, async_fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        # kazoo queues requests while reconnecting; never wait on one forever
        return async_fn(*args, **kwargs).get(timeout=self.connection_timeout_s)

    def exists(self, path: str) -> bool:
        return self._read(self._kazoo.exists_async, path, what=path) is not None

    def get_data(self, path: str) -> tuple[bytes, int] | None:
        """(data, zk_version), or None when the znode does not exist."""
        try:
            data, stat = self._read(self._kazoo.get_async, path, what=path)
        except ZkNoNodeError:
            return None
        return data, stat.version

    def get_children(self, path: str) -> list[str]:
        """Sorted child names ([] when the znode does not exist)."""
        try:
            return sorted(self._read(self._kazoo.get_children_async, path, what=path))
        except ZkNoNodeError:
            return []

    def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False,
               sequence: bool = False, makepath: bool = False,
               acl: Sequence[Any] | None = None) -> str:
        """Create a znode; returns its path (with the sequence suffix for sequential ones).
        ``acl``: ZooKeeper ACL entries for it (default: the client's default ACL)."""
        return self._write(self._kazoo.create_async, path, data, acl=acl, ephemeral=ephemeral,
                           sequence=sequence, makepath=makepath, what=path)

    def get_acls(self, path: str) -> list[Any]:
        """The znode's ZooKeeper ACL entries (kazoo ACL objects)."""
        acls, _stat = self._read(self._kazoo.get_acls_async, path, what=path)
        return list(acls)

    def set_acls(self, path: str, acls: Sequence[Any]) -> None:
        self._write(self._kazoo.set_acls_async, path, list(acls), what=path)

    def set_data(self, path: str, data: bytes, version: int = -1) -> int:
        """Write at ``version`` (-1: any); returns the new zk_version."""
        return self._write(self._kazoo.set_async, path, data, version, what=path).version

    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> bool:
        """Delete (True), or False when it did not exist."""
        self._require_started()
        try:
            with _translated(path):
                if recursive:
                    self._kazoo.delete(path, version=version, recursive=True)
                else:
                    self._wait(self._kazoo.delete_async, path, version)
            return True
        except ZkNoNodeError:
            return False

    def ensure_path(self, path: str) -> None:
        self._read(self._kazoo.ensure_path_async, path, what=path)

    def _get_many(self, paths: Sequence[str]) -> list[tuple[bytes, Any] | None]:
        """Pipelined reads; None for missing znodes."""
        self._require_started()
        with _translated("bulk read"):
            pending = [self._kazoo.get_async(p) for p in paths]
            out: list[tuple[bytes, Any] | None] = []
            for ar in pending:
                try:
                    out.append(ar.get(timeout=self.connection_timeout_s))
                except NoNodeError:
                    out.append(None)
            return out

    def _create_ephemeral_checked(self, path: str, data: bytes) -> Any:
        """Create an ephemeral znode; if it exists already and belongs to this very session (an
        earlier attempt whose answer got lost), that counts as success. Returns the ZnodeStat."""
        self._require_started()
        with _translated(path):
            try:
                self._wait(self._kazoo.create_async, path, data, ephemeral=True, makepath=True)
            except (NodeExistsError, ConnectionLoss, KazooTimeoutError):
                pass  # exists, or may have been created: look below
            retry = self._retry_template.copy()
            try:
                stored, stat = retry(self._wait, self._kazoo.get_async, path)
            except NoNodeError:
                raise ZkConnectionLossError(f"could not create {path}; retry") from None
            if stat.ephemeralOwner != self.session_id:
                raise ZkNodeExistsError(f"{path} is already held by another ZooKeeper session")
            if stored != data:
                self._wait(self._kazoo.set_async, path, data, stat.version)
                stat = self._wait(self._kazoo.exists_async, path)
            return stat

    def _get_with_stat(self, path: str) -> tuple[bytes, Any] | None:
        try:
            return self._read(self._kazoo.get_async, path, what=path)
        except ZkNoNodeError:
            return None

    def multi_many(self, batches: Sequence[Sequence[ZkOp]]) -> list[list[Any] | KafkaError]:
        """Each batch in one transaction, all pipelined (see ZnodeOps.multi_many)."""
        self._require_started()
        with _translated("multi"):
            pending = [self._transaction(ops).commit_async() for ops in batches]
        out: list[list[Any] | KafkaError] = []
        for ops, ar in zip(batches, pending):
            try:
                results = ar.get(timeout=self.connection_timeout_s)
            except Exception as exc:  # noqa: BLE001 - translated per batch
                out.append(translate_error(exc, "multi"))
                continue
            out.append(self._multi_outcome(ops, results))
        return out

    def _transaction(self, ops: Sequence[ZkOp]) -> Any:
        tx = self._kazoo.transaction()
        for op in ops:
            if isinstance(op, ZkCreate):
                tx.create(op.path, op.data, ephemeral=op.ephemeral, sequence=op.sequence)
            elif isinstance(op, ZkSetData):
                tx.set_data(op.path, op.data, version=op.version)
            elif isinstance(op, ZkDelete):
                tx.delete(op.path, version=op.version)
            elif isinstance(op, ZkCheck):
                tx.check(op.path, op.version)
            else:
                raise TypeError(f"not a ZooKeeper op: {op!r}")
        return tx

    def _multi_outcome(self, ops: Sequence[ZkOp], results: Sequence[Any]
                       ) -> list[Any] | KafkaError:
        for index, (op, r) in enumerate(zip(ops, results)):
            if isinstance(r, Exception) and not isinstance(r, RolledBackError):
                err = translate_error(r, f"{type(op).__name__} {op.path}")
                err.failed_op = op  # type: ignore[attr-defined]
                err.failed_index = index  # type: ignore[attr-defined]
                return err
        if any(isinstance(r, Exception) for r in results):
            return ZooKeeperError("multi rolled back without a reason")
        out: list[Any] = []
        for op, r in zip(ops, results):
            if isinstance(op, ZkCreate):
                out.append(self._kazoo.unchroot(r) if isinstance(r, str) else r)
            elif isinstance(op, ZkSetData):
                out.append(r.version)
            else:
                out.append(True)
        return out


def _call_logged(callback: Callable[..., Any], *args: Any) -> None:
    try:
        callback(*args)
    except Exception:  # noqa: BLE001 - a bad callback must not kill kazoo's threads
        log.exception("ZooKeeper callback %r failed", callback)


# --------------------------------------------------------------------------------- test helpers

def probe(connect_string: str, timeout_s: float = 5.0) -> bool:
    """True when a client can open a session and read ``/`` (no chroot is created)."""
    hosts, _ = split_connect_string(connect_string)
    # kazoo waits up to the session timeout (per host) for a handshake answer; a server that
    # accepted the connection while still starting may never answer it, so keep that short
    handshake_s = min(max(timeout_s / 2, 1.0), 3.0)
    kz = KazooClient(hosts=hosts, timeout=handshake_s * len(hosts.split(",")),
                     connection_retry=KazooRetry(max_tries=-1, delay=0.05, backoff=1.5,
                                                 max_delay=0.5, deadline=timeout_s))
    try:
        kz.start(timeout=timeout_s)
        kz.get_async("/").get(timeout=timeout_s)
        return True
    except Exception:  # noqa: BLE001 - any failure means "not ready"
        return False
    finally:
        with contextlib.suppress(Exception):
            kz.stop()
            kz.close()


def session_credentials(client: Any) -> tuple[int, bytes]:
    """(session id, password) of a ZkClient, a kazoo client, or an (id, password) pair."""
    if isinstance(client, ZkClient):
        return client.session_id_and_password()
    if isinstance(client, KazooClient):
        cid = client.client_id
        if not cid:
            raise ZkConnectionLossError("client has no live session")
        return cid[0], cid[1]
    sid, password = client
    return int(sid), bytes(password)


def expire_session(client: Any, connect_string: str, timeout_s: float = 10.0) -> None:
    """Expire a session the standard way: attach a second connection to the same session (id and
    password), then close that connection, which closes the session on the server. The session's
    ephemeral znodes are gone when this returns; the original client learns of the expiry when it
    reconnects."""
    sid, password = session_credentials(client)
    hosts, _ = split_connect_string(connect_string)
    twin = KazooClient(hosts=hosts, client_id=(sid, password), timeout=timeout_s,
                       connection_retry=KazooRetry(max_tries=3, delay=0.05))
    try:
        with _translated(f"attaching to session 0x{sid:x}"):
            twin.start(timeout=timeout_s)
            if twin.client_id is None or twin.client_id[0] != sid:
                raise ZkSessionExpiredError(f"session 0x{sid:x} is already gone")
    finally:
        with contextlib.suppress(Exception):
            twin.stop()   # sends closeSession for that session id
            twin.close()
