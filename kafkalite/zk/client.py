"""Typed, blocking ZooKeeper operations on the zk_schema tree (the only kazoo user besides the bridge).

``ZkClient`` wraps one kazoo session. Its methods block (call them from threads, blocking clients, or
through :mod:`kafkalite.zk.twisted_bridge` from the reactor). Watch and session callbacks are delivered
on the reactor thread (``reactor.callFromThread``) when a reactor was given, else directly on kazoo's
threads (then they must not block).

Failures raise :mod:`kafkalite.zk.errors` classes (all :class:`kafkalite.errors.ZooKeeperError`) or
kafkalite's wire errors (``TopicAlreadyExistsError`` ...); kazoo exceptions never escape.

Reads retry through connection losses (bounded by ``connection_timeout_s``); writes do not, because a
write whose answer was lost may have happened: callers decide (the typed writes below that can be
made idempotent are, e.g. ephemeral registrations recognise their own session's znode).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError, ConnectionClosedError, ConnectionLoss, KazooException, NodeExistsError,
    NoNodeError, NotEmptyError, OperationTimeoutError, RolledBackError, SessionExpiredError,
    ZookeeperError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType, KazooState
from kazoo.retry import KazooRetry, RetryFailedError

import zk_schema
from zk_schema import admin as s_admin
from zk_schema import brokers as s_brokers
from zk_schema import cluster as s_cluster
from zk_schema import config as s_config
from zk_schema import consumers as s_consumers
from zk_schema import controller as s_controller
from zk_schema import isr as s_isr
from zk_schema import producer_ids as s_pids
from zk_schema import topics as s_topics
from zk_schema.brokers import BrokerRegistration
from zk_schema.consumers import ConsumerRegistration
from zk_schema.controller import ControllerEpoch, ControllerRegistration
from zk_schema.topics import PartitionState, TopicAssignment

from kafkalite.errors import (
    InvalidPartitionsError, KafkaError, TopicAlreadyExistsError, UnknownTopicOrPartitionError,
    ZooKeeperError, NonEmptyGroupError,
)
from kafkalite.zk.errors import (
    ControllerMovedError, ZkBadVersionError, ZkClientClosedError, ZkConnectionLossError,
    ZkNodeExistsError, ZkNoNodeError, ZkNotEmptyError, ZkSessionExpiredError,
)

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

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


# ----------------------------------------------------------------------------------- multi-op types

@dataclass(frozen=True)
class ZkCreate:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequence: bool = False


@dataclass(frozen=True)
class ZkSetData:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True)
class ZkDelete:
    path: str
    version: int = -1


@dataclass(frozen=True)
class ZkCheck:
    path: str
    version: int


ZkOp = ZkCreate | ZkSetData | ZkDelete | ZkCheck


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


def _no_node_ok(fn: Callable[[], Any], default: Any = None) -> Any:
    try:
        return fn()
    except NoNodeError:
        return default


# ------------------------------------------------------------------------------------------ watches

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


# ------------------------------------------------------------------------------------------- client

class ZkClient:
    """One ZooKeeper session with kafkalite's typed operations.

    ``connect_string`` may carry a chroot (``"h1:2181,h2:2181/kafkalite"``); it is created at
    ``start()`` when missing. ``reactor``: when given, watch and state callbacks hop onto it.
    """

    def __init__(self, connect_string: str, session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
                 reactor: Any = None, connection_timeout_s: float = DEFAULT_CONNECTION_TIMEOUT_S):
        self.connect_string = connect_string
        self.hosts, self.chroot = split_connect_string(connect_string)
        self.session_timeout_ms = int(session_timeout_ms)
        self.connection_timeout_s = float(connection_timeout_s)
        self._reactor = reactor
        self._kazoo = KazooClient(
            hosts=connect_string,
            timeout=self.session_timeout_ms / 1000.0,
            connection_retry=self._new_retry(max_tries=-1),
        )
        self._retry_template = self._new_retry(max_tries=-1, deadline=self.connection_timeout_s)
        self._listeners: list[Callable[[ZkState], Any]] = []
        self._watches: set[ZkWatch] = set()
        self._watches_lock = threading.Lock()
        self._closing = False
        self._started = False
        self._seen_connected = False
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

    def _ensure_chroot(self) -> None:
        boot = KazooClient(hosts=self.hosts, timeout=self.session_timeout_ms / 1000.0,
                           connection_retry=self._new_retry(max_tries=-1))
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
            for w in self._watches:
                w._cancelled = True
            self._watches.clear()
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
            zs = ZkState.CONNECTED
            if self._seen_connected:
                self._spawn(self._rearm_watches)  # kazoo drops all watches on a disconnect
            self._seen_connected = True
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

    def _spawn(self, fn: Callable[[], Any]) -> None:
        self._kazoo.handler.spawn(fn)

    # -------------------------------------------------------------------------- watches

    def watch_children(self, path: str, callback: Callable[[list[str] | None], Any]) -> ZkWatch:
        """Call ``callback(sorted_children)`` now and whenever the children change; ``None`` while
        the znode does not exist. The watch survives reconnections and session expiry."""
        return self._add_watch(ZkWatch(self, path, "children", callback))

    def watch_data(self, path: str,
                   callback: Callable[[bytes | None, int | None], Any]) -> ZkWatch:
        """Call ``callback(data, zk_version)`` now and on every change; ``(None, None)`` while the
        znode does not exist (so deletion and creation are both seen)."""
        return self._add_watch(ZkWatch(self, path, "data", callback))

    def _add_watch(self, watch: ZkWatch) -> ZkWatch:
        self._require_started()
        with self._watches_lock:
            self._watches.add(watch)
        watch._arm()
        return watch

    def _forget_watch(self, watch: ZkWatch) -> None:
        with self._watches_lock:
            self._watches.discard(watch)

    def _rearm_watches(self) -> None:
        with self._watches_lock:
            watches = list(self._watches)
        for w in watches:
            w._arm()

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
               sequence: bool = False, makepath: bool = False) -> str:
        """Create a znode; returns its path (with the sequence suffix for sequential ones)."""
        return self._write(self._kazoo.create_async, path, data, ephemeral=ephemeral, sequence=sequence,
                           makepath=makepath, what=path)

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

    def _create_or_set(self, path: str, data: bytes) -> int:
        """Write ``data`` whether or not the znode exists; returns the zk_version."""
        while True:
            try:
                return self.set_data(path, data)
            except ZkNoNodeError:
                pass
            try:
                self.create(path, data, makepath=True)
                return 0
            except ZkNodeExistsError:
                continue

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

    def multi(self, ops: Sequence[ZkOp]) -> list[Any]:
        """Run ``ops`` atomically. Results: created path / new zk_version / True / True per op.
        On failure raises the first failing op's error (as kafkalite errors) naming its path."""
        self._require_started()
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
        with _translated("multi"):
            results = self._wait(tx.commit_async)
        failures = [(op, r) for op, r in zip(ops, results)
                    if isinstance(r, Exception) and not isinstance(r, RolledBackError)]
        if failures:
            op, exc = failures[0]
            err = translate_error(exc, f"{type(op).__name__} {op.path}")
            err.failed_op = op  # type: ignore[attr-defined]
            err.failed_index = list(ops).index(op)  # type: ignore[attr-defined]
            raise err
        if any(isinstance(r, Exception) for r in results):
            raise ZooKeeperError("multi rolled back without a reason")
        out: list[Any] = []
        for op, r in zip(ops, results):
            if isinstance(op, ZkCreate):
                out.append(self._kazoo.unchroot(r) if isinstance(r, str) else r)
            elif isinstance(op, ZkSetData):
                out.append(r.version)
            else:
                out.append(True)
        return out

    # ------------------------------------------------------------------------- cluster / paths

    def ensure_persistent_paths(self) -> None:
        """Create the persistent znodes every broker expects (zk_schema.PERSISTENT_PATHS)."""
        for path in zk_schema.PERSISTENT_PATHS:
            self.ensure_path(path)

    def get_cluster_id(self) -> str | None:
        got = self.get_data(s_cluster.CLUSTER_ID_PATH)
        return s_cluster.ClusterId.decode(got[0], got[1]).id if got else None

    def get_or_create_cluster_id(self, proposed: str | None = None) -> str:
        existing = self.get_cluster_id()
        if existing is not None:
            return existing
        cid = s_cluster.ClusterId(proposed or s_cluster.new_cluster_id())
        try:
            self.create(s_cluster.CLUSTER_ID_PATH, cid.encode(), makepath=True)
            return cid.id
        except ZkNodeExistsError:
            return self.get_cluster_id() or cid.id

    # --------------------------------------------------------------------------------- brokers

    def register_broker(self, registration: BrokerRegistration) -> int:
        """Create the ephemeral ``/brokers/ids/<id>``; returns the broker epoch (its czxid).
        Raises ZkNodeExistsError when another live session holds that broker id."""
        path = s_brokers.broker_path(registration.broker_id)
        stat = self._create_ephemeral_checked(path, registration.encode())
        return stat.czxid

    def unregister_broker(self, broker_id: int) -> bool:
        return self.delete(s_brokers.broker_path(broker_id))

    def get_broker_ids(self) -> list[int]:
        ids = []
        for child in self.get_children(s_brokers.BROKER_IDS_PATH):
            with contextlib.suppress(zk_schema.SchemaError):
                ids.append(s_brokers.parse_broker_id(child))
        return sorted(ids)

    list_broker_ids = get_broker_ids

    def get_broker(self, broker_id: int) -> BrokerRegistration | None:
        try:
            data, stat = self._read(self._kazoo.get_async, s_brokers.broker_path(broker_id))
        except ZkNoNodeError:
            return None
        return BrokerRegistration.decode(data, stat.version, broker_id=broker_id,
                                         broker_epoch=stat.czxid)

    def get_brokers(self) -> dict[int, BrokerRegistration]:
        """Every registered broker, by id (pipelined reads)."""
        ids = self.get_broker_ids()
        out: dict[int, BrokerRegistration] = {}
        for bid, got in zip(ids, self._get_many([s_brokers.broker_path(b) for b in ids])):
            if got is not None:
                out[bid] = BrokerRegistration.decode(got[0], got[1].version, broker_id=bid,
                                                     broker_epoch=got[1].czxid)
        return out

    def next_broker_sequence_id(self) -> int:
        """A cluster-unique number (Kafka's broker.id generation via /brokers/seqid)."""
        try:
            return self.set_data(s_brokers.BROKER_SEQID_PATH, b"")
        except ZkNoNodeError:
            self.ensure_path(s_brokers.BROKER_SEQID_PATH)
            return self.set_data(s_brokers.BROKER_SEQID_PATH, b"")

    # ---------------------------------------------------------------------------------- topics

    def list_topics(self) -> list[str]:
        return self.get_children(s_topics.TOPICS_PATH)

    def topic_exists(self, topic: str) -> bool:
        return self.exists(s_topics.topic_path(topic))

    def create_topic(self, topic: str,
                     assignment: TopicAssignment | Mapping[int, Sequence[int]],
                     config: Mapping[str, str] | None = None) -> TopicAssignment:
        """Write the topic's config and replica assignment (one transaction). The controller sees
        the new ``/brokers/topics/<t>`` and does the rest. Raises TopicAlreadyExistsError."""
        if not isinstance(assignment, TopicAssignment):
            assignment = TopicAssignment(
                partitions={int(p): tuple(int(r) for r in reps) for p, reps in assignment.items()})
        if assignment.topic_id is None:
            assignment = TopicAssignment(partitions=assignment.partitions,
                                         topic_id=s_topics.new_topic_id(),
                                         adding_replicas=assignment.adding_replicas,
                                         removing_replicas=assignment.removing_replicas)
        topic_path = s_topics.topic_path(topic)
        config_path = s_config.topic_config_path(topic)
        config_data = s_config.EntityConfig(dict(config or {})).encode()
        if self.exists(topic_path):
            raise TopicAlreadyExistsError(f"Topic '{topic}' already exists.")
        self.ensure_path(s_topics.TOPICS_PATH)
        self.ensure_path(s_config.config_entity_type_path(s_config.TOPICS))
        for _ in range(5):
            config_op: ZkOp = (ZkSetData(config_path, config_data) if self.exists(config_path)
                               else ZkCreate(config_path, config_data))
            try:
                self.multi([config_op, ZkCreate(topic_path, assignment.encode())])
            except ZkNodeExistsError as exc:
                if getattr(exc, "failed_op", None) == config_op:
                    continue  # config appeared in between: set it instead
                raise TopicAlreadyExistsError(f"Topic '{topic}' already exists.") from None
            except ZkNoNodeError as exc:
                if getattr(exc, "failed_op", None) == config_op:
                    continue  # config vanished in between: create it instead
                raise
            return TopicAssignment(partitions=assignment.partitions, topic_id=assignment.topic_id,
                                   adding_replicas=assignment.adding_replicas,
                                   removing_replicas=assignment.removing_replicas, zk_version=0)
        raise ZooKeeperError(f"could not create topic {topic!r}: its config kept changing")

    def get_topic_assignment(self, topic: str) -> TopicAssignment | None:
        got = self.get_data(s_topics.topic_path(topic))
        return TopicAssignment.decode(got[0], got[1], topic=topic) if got else None

    def get_topic_assignments(self, topics: Iterable[str] | None = None
                              ) -> dict[str, TopicAssignment]:
        names = sorted(topics) if topics is not None else self.list_topics()
        out = {}
        for t, got in zip(names, self._get_many([s_topics.topic_path(t) for t in names])):
            if got is not None:
                out[t] = TopicAssignment.decode(got[0], got[1].version, topic=t)
        return out

    def set_topic_assignment(self, topic: str, assignment: TopicAssignment,
                             expected_zk_version: int = -1,
                             controller_epoch_zk_version: int | None = None) -> int:
        """Rewrite a topic's assignment (partition additions, reassignment); returns the new version."""
        op = ZkSetData(s_topics.topic_path(topic), assignment.encode(), expected_zk_version)
        if controller_epoch_zk_version is not None:
            return self.fenced_multi(controller_epoch_zk_version, [op])[0]
        return self.set_data(op.path, op.data, op.version)

    def add_partitions(self, topic: str, additions: Mapping[int, Sequence[int]],
                       expected_version: int = -1) -> TopicAssignment:
        """Add partitions to ``/brokers/topics/<t>`` (Kafka's AdminZkClient.addPartitions): one
        write of the whole assignment, conditional on the zkVersion read here and, unless -1, on
        ``expected_version`` (the version the caller's decision was based on). Existing
        partitions, the topic id and adding/removing replicas are kept; the controller sees the
        data change and brings the new partitions online. Returns the written assignment.

        ``additions`` must number the new partitions right after the existing ones. Raises
        UnknownTopicOrPartitionError (no such topic), InvalidPartitionsError (nothing to add, an
        existing partition or a gap in the numbering), ZkBadVersionError (the assignment changed
        since ``expected_version``, or while this ran: re-read and decide again)."""
        path = s_topics.topic_path(topic)
        got = self.get_data(path)
        if got is None:
            raise UnknownTopicOrPartitionError(f"topic '{topic}' does not exist")
        current = TopicAssignment.decode(got[0], got[1], topic=topic)
        if expected_version >= 0 and got[1] != expected_version:
            raise ZkBadVersionError(
                f"the assignment of topic '{topic}' is at zkVersion {got[1]}, not the expected "
                f"{expected_version} ({path})")
        added = {int(p): tuple(int(b) for b in replicas) for p, replicas in additions.items()}
        old_count = len(current.partitions)
        wanted = list(range(old_count, old_count + len(added)))
        if not added or sorted(added) != wanted:
            raise InvalidPartitionsError(
                f"topic '{topic}' has partitions 0..{old_count - 1}; partitions to add must be "
                f"numbered {old_count}.., got {sorted(added)}")
        merged = TopicAssignment(partitions={**current.partitions, **added},
                                 topic_id=current.topic_id,
                                 adding_replicas=current.adding_replicas,
                                 removing_replicas=current.removing_replicas)
        try:
            version = self.set_data(path, merged.encode(), got[1])
        except ZkNoNodeError:
            raise UnknownTopicOrPartitionError(f"topic '{topic}' does not exist") from None
        return TopicAssignment(partitions=merged.partitions, topic_id=merged.topic_id,
                               adding_replicas=merged.adding_replicas,
                               removing_replicas=merged.removing_replicas, zk_version=version)

    def get_partition_reassignments(self) -> dict[TopicPartition, tuple[int, ...]]:
        """Reassignments requested in ``/admin/reassign_partitions`` and not finished yet:
        ``{(topic, partition): target replicas}`` ({} when none, or when it is malformed)."""
        try:
            pending = self.get_partition_reassignment()
        except zk_schema.SchemaError:
            return {}
        return dict(pending.partitions) if pending is not None else {}

    # ------------------------------------------------------------------------ partition states

    def get_partition_state(self, topic: str, partition: int) -> PartitionState | None:
        path = s_topics.partition_state_path(topic, partition)
        got = self.get_data(path)
        return PartitionState.decode(got[0], got[1], path=path) if got else None

    def get_partition_states(self, partitions: Iterable[TopicPartition]
                             ) -> dict[TopicPartition, PartitionState]:
        """States of many partitions at once (pipelined); missing ones are left out."""
        tps = list(partitions)
        paths = [s_topics.partition_state_path(t, p) for t, p in tps]
        out = {}
        for tp, path, got in zip(tps, paths, self._get_many(paths)):
            if got is not None:
                out[tp] = PartitionState.decode(got[0], got[1].version, path=path)
        return out

    def create_partition_state(self, topic: str, partition: int, state: PartitionState,
                               controller_epoch_zk_version: int | None = None) -> int:
        """Create ``.../partitions/<p>/state`` and its missing parents in one transaction (fenced by
        the controller epoch when ``controller_epoch_zk_version`` is given, parents included, as
        Kafka's createTopicPartitionStatesRaw); returns its zk_version (0). ZkNodeExistsError when
        the state exists already."""
        path = s_topics.partition_state_path(topic, partition)
        for _ in range(5):
            parents = [p for p in (s_topics.partitions_path(topic),
                                   s_topics.partition_path(topic, partition))
                       if not self.exists(p)]
            ops: list[ZkOp] = [ZkCreate(p) for p in parents] + [ZkCreate(path, state.encode())]
            try:
                if controller_epoch_zk_version is not None:
                    self.fenced_multi(controller_epoch_zk_version, ops)
                else:
                    self.multi(ops)
                return 0
            except ZkNodeExistsError as exc:
                if getattr(exc, "failed_op", None) is ops[-1]:
                    raise
                # a parent appeared in between: look again
        raise ZooKeeperError(f"could not create the state of {topic}-{partition}: its parent "
                             "znodes kept changing")

    def set_partition_state(self, topic: str, partition: int, state: PartitionState,
                            expected_zk_version: int,
                            controller_epoch_zk_version: int | None = None) -> int:
        """Conditional write of a partition's leader/ISR at ``expected_zk_version``; returns the new
        zk_version. ZkBadVersionError when someone wrote first (re-read and retry);
        ControllerMovedError when fenced."""
        path = s_topics.partition_state_path(topic, partition)
        try:
            if controller_epoch_zk_version is not None:
                return self.fenced_multi(controller_epoch_zk_version,
                                         [ZkSetData(path, state.encode(), expected_zk_version)])[0]
            return self.set_data(path, state.encode(), expected_zk_version)
        except ZkBadVersionError:
            raise ZkBadVersionError(
                f"partition state of {topic}-{partition} is no longer at zkVersion "
                f"{expected_zk_version}: re-read it and retry") from None

    def set_partition_states(self, updates: Mapping[TopicPartition, tuple[PartitionState, int]],
                             controller_epoch_zk_version: int | None = None
                             ) -> dict[TopicPartition, int | KafkaError]:
        """Many conditional writes, pipelined: {tp: (state, expected_zk_version)} ->
        {tp: new zk_version, or the error for that partition}."""
        self._require_started()
        pending = []
        with _translated("partition state updates"):
            for (topic, partition), (state, version) in updates.items():
                path = s_topics.partition_state_path(topic, partition)
                if controller_epoch_zk_version is None:
                    ar = self._kazoo.set_async(path, state.encode(), version)
                else:
                    tx = self._kazoo.transaction()
                    tx.check(s_controller.CONTROLLER_EPOCH_PATH, controller_epoch_zk_version)
                    tx.set_data(path, state.encode(), version)
                    ar = tx.commit_async()
                pending.append(((topic, partition), ar))
        out: dict[TopicPartition, int | KafkaError] = {}
        for tp, ar in pending:
            try:
                r = ar.get(timeout=self.connection_timeout_s)
            except Exception as exc:  # noqa: BLE001 - translated per partition
                out[tp] = translate_error(exc, f"{tp[0]}-{tp[1]}")
                continue
            if controller_epoch_zk_version is None:
                out[tp] = r.version
            elif isinstance(r[0], Exception) and not isinstance(r[0], RolledBackError):
                out[tp] = ControllerMovedError(
                    f"controller epoch zkVersion is no longer {controller_epoch_zk_version}")
            elif isinstance(r[1], Exception):
                out[tp] = translate_error(r[1], f"partition state of {tp[0]}-{tp[1]}")
            else:
                out[tp] = r[1].version
        return out

    # ------------------------------------------------------------------------------ controller

    def get_controller(self) -> ControllerRegistration | None:
        got = self.get_data(s_controller.CONTROLLER_PATH)
        return ControllerRegistration.decode(got[0], got[1]) if got else None

    def get_controller_id(self) -> int | None:
        reg = self.get_controller()
        return reg.broker_id if reg else None

    def get_controller_epoch(self) -> ControllerEpoch | None:
        got = self.get_data(s_controller.CONTROLLER_EPOCH_PATH)
        return ControllerEpoch.decode(got[0], got[1]) if got else None

    def _get_or_create_controller_epoch(self) -> ControllerEpoch:
        while True:
            current = self.get_controller_epoch()
            if current is not None:
                return current
            initial = ControllerEpoch(s_controller.INITIAL_CONTROLLER_EPOCH)
            try:
                self.create(s_controller.CONTROLLER_EPOCH_PATH, initial.encode())
                return ControllerEpoch(initial.epoch, 0)
            except ZkNodeExistsError:
                continue

    def try_elect_controller(self, broker_id: int, timestamp_ms: int | None = None,
                             attempts: int = 5) -> ControllerEpoch | None:
        """Try to become controller: ONE transaction creates the ephemeral ``/controller`` and sets
        ``/controller_epoch`` to epoch+1 at its expected zkVersion.

        Returns the new :class:`ControllerEpoch` (``.epoch``, and ``.zk_version`` for fenced writes),
        or None when another broker is controller.
        """
        ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
        reg = ControllerRegistration(broker_id, ts).encode()
        for _ in range(max(1, attempts)):
            current = self._get_or_create_controller_epoch()
            new_epoch = ControllerEpoch(current.epoch + 1)
            try:
                results = self.multi([
                    ZkCreate(s_controller.CONTROLLER_PATH, reg, ephemeral=True),
                    ZkSetData(s_controller.CONTROLLER_EPOCH_PATH, new_epoch.encode(),
                              current.zk_version if current.zk_version is not None else -1),
                ])
                return ControllerEpoch(new_epoch.epoch, results[1])
            except (ZkNodeExistsError, ZkBadVersionError):
                mine = self._my_controllership(broker_id)
                if mine is not None:
                    return mine  # an earlier attempt of ours won but its answer was lost
                if self.exists(s_controller.CONTROLLER_PATH):
                    return None  # someone else is controller
                # the epoch moved but nobody holds /controller (a controller came and went): retry
            except ZkConnectionLossError:
                mine = self._my_controllership(broker_id)
                if mine is not None:
                    return mine
                raise
        return None

    def _my_controllership(self, broker_id: int) -> ControllerEpoch | None:
        try:
            data, stat = self._read(self._kazoo.get_async, s_controller.CONTROLLER_PATH)
        except ZkNoNodeError:
            return None
        if stat.ephemeralOwner != self.session_id:
            return None
        if ControllerRegistration.decode(data).broker_id != broker_id:
            return None
        return self.get_controller_epoch()

    def resign_controller(self, controller_epoch_zk_version: int) -> bool:
        """Delete ``/controller`` if we still are the controller (fenced); False when fenced out."""
        try:
            self.fenced_multi(controller_epoch_zk_version, [ZkDelete(s_controller.CONTROLLER_PATH)])
            return True
        except (ControllerMovedError, ZkNoNodeError):
            return False

    def fenced_multi(self, controller_epoch_zk_version: int, ops: Sequence[ZkOp]) -> list[Any]:
        """``ops`` in one transaction that first checks ``/controller_epoch`` is still at
        ``controller_epoch_zk_version``. Raises ControllerMovedError when it is not; other failures
        as :meth:`multi`. Returns the results of ``ops`` (without the check)."""
        check = ZkCheck(s_controller.CONTROLLER_EPOCH_PATH, controller_epoch_zk_version)
        try:
            return self.multi([check, *ops])[1:]
        except (ZkBadVersionError, ZkNoNodeError) as exc:
            if getattr(exc, "failed_op", None) is check:
                raise ControllerMovedError(
                    f"/controller_epoch is no longer at zkVersion {controller_epoch_zk_version}: "
                    "another broker is controller") from None
            raise

    # ------------------------------------------------------- admin requests to the controller

    def create_partition_reassignment(self, partitions: Mapping[TopicPartition, Sequence[int]]
                                      ) -> None:
        """Ask the controller to move replicas: create ``/admin/reassign_partitions`` with the
        target replica lists. ZkNodeExistsError while an earlier reassignment still runs."""
        request = s_admin.PartitionReassignment(
            {(t, int(p)): tuple(int(b) for b in replicas)
             for (t, p), replicas in partitions.items()})
        self._create_admin_request(s_admin.REASSIGN_PARTITIONS_PATH, request.encode())

    def get_partition_reassignment(self) -> s_admin.PartitionReassignment | None:
        """The pending ``/admin/reassign_partitions`` request (None when there is none, no
        partitions when it is empty); SchemaError when it is malformed."""
        got = self.get_data(s_admin.REASSIGN_PARTITIONS_PATH)
        if got is None:
            return None
        if not got[0]:
            return s_admin.PartitionReassignment({}, got[1])
        return s_admin.PartitionReassignment.decode(got[0], got[1])

    def update_partition_reassignment(self, remaining: Mapping[TopicPartition, Sequence[int]],
                                      controller_epoch_zk_version: int) -> bool:
        """The controller's rewrite of ``/admin/reassign_partitions`` to the reassignments still
        running, or its deletion when none remain (fenced). False when it was gone already."""
        if not remaining:
            return self.delete_partition_reassignment(controller_epoch_zk_version)
        data = s_admin.PartitionReassignment(
            {tp: tuple(replicas) for tp, replicas in remaining.items()}).encode()
        try:
            self.fenced_multi(controller_epoch_zk_version,
                              [ZkSetData(s_admin.REASSIGN_PARTITIONS_PATH, data)])
            return True
        except ZkNoNodeError:
            return False

    def delete_partition_reassignment(self, controller_epoch_zk_version: int) -> bool:
        """The controller's deletion of ``/admin/reassign_partitions`` (fenced)."""
        return self._fenced_delete(s_admin.REASSIGN_PARTITIONS_PATH, controller_epoch_zk_version)

    def create_preferred_replica_election(self, partitions: Iterable[TopicPartition]) -> None:
        """Ask the controller for a preferred replica election of ``partitions``: create
        ``/admin/preferred_replica_election``. ZkNodeExistsError while an earlier one is pending."""
        request = s_admin.PreferredReplicaElection(tuple((t, int(p)) for t, p in partitions))
        self._create_admin_request(s_admin.PREFERRED_REPLICA_ELECTION_PATH, request.encode())

    def preferred_replica_election_pending(self) -> bool:
        """True while ``/admin/preferred_replica_election`` exists (the controller has not acted)."""
        return self.exists(s_admin.PREFERRED_REPLICA_ELECTION_PATH)

    def delete_preferred_replica_election(self, controller_epoch_zk_version: int) -> bool:
        """The controller's deletion of ``/admin/preferred_replica_election`` once it acted
        (fenced). False when it was gone already."""
        return self._fenced_delete(s_admin.PREFERRED_REPLICA_ELECTION_PATH,
                                   controller_epoch_zk_version)

    def _create_admin_request(self, path: str, data: bytes) -> None:
        try:
            self.create(path, data)
        except ZkNoNodeError:
            self.ensure_path(s_admin.ADMIN_PATH)
            self.create(path, data)

    def _fenced_delete(self, path: str, controller_epoch_zk_version: int) -> bool:
        try:
            self.fenced_multi(controller_epoch_zk_version, [ZkDelete(path)])
            return True
        except ZkNoNodeError:
            return False

    # ------------------------------------------------------------------------- topic deletion

    def mark_topic_for_deletion(self, topic: str) -> None:
        """Create ``/admin/delete_topics/<t>`` (idempotent). UnknownTopicOrPartitionError when
        the topic does not exist."""
        if not self.topic_exists(topic):
            raise UnknownTopicOrPartitionError(f"Topic '{topic}' does not exist.")
        with contextlib.suppress(ZkNodeExistsError):
            self.create(s_admin.delete_topic_path(topic), s_admin.DELETE_TOPIC_MARKER,
                        makepath=True)

    def topics_marked_for_deletion(self) -> list[str]:
        return self.get_children(s_admin.DELETE_TOPICS_PATH)

    def remove_topic_deletion_marker(self, topic: str,
                                     controller_epoch_zk_version: int | None = None) -> bool:
        path = s_admin.delete_topic_path(topic)
        if controller_epoch_zk_version is None:
            return self.delete(path)
        return self._fenced_delete(path, controller_epoch_zk_version)

    def delete_topic_znodes(self, topic: str,
                            controller_epoch_zk_version: int | None = None) -> None:
        """Remove the topic's assignment and partition states, its config and its deletion marker
        (the end of a topic deletion). Atomic; fenced when an epoch zkVersion is given."""
        paths = self._subtree(s_topics.topic_path(topic))
        paths += [p for p in (s_config.topic_config_path(topic), s_admin.delete_topic_path(topic))
                  if self.exists(p)]
        ops = [ZkDelete(p) for p in paths]
        if not ops:
            return
        if controller_epoch_zk_version is not None:
            self.fenced_multi(controller_epoch_zk_version, ops)
        else:
            self.multi(ops)

    def _subtree(self, path: str) -> list[str]:
        """``path`` and its descendants, deepest first (empty when it does not exist)."""
        if not self.exists(path):
            return []
        out: list[str] = []
        for child in self.get_children(path):
            out.extend(self._subtree(f"{path}/{child}"))
        out.append(path)
        return out

    # --------------------------------------------------------------------- ISR notifications

    def create_isr_change_notification(self, partitions: Iterable[TopicPartition]) -> str:
        """Announce ISR changes to the controller; returns the sequential znode's name."""
        data = s_isr.IsrChangeNotification(tuple((t, int(p)) for t, p in partitions)).encode()
        try:
            path = self.create(s_isr.isr_change_prefix_path(), data, sequence=True)
        except ZkNoNodeError:
            self.ensure_path(s_isr.ISR_CHANGE_NOTIFICATION_PATH)
            path = self.create(s_isr.isr_change_prefix_path(), data, sequence=True)
        return path.rsplit("/", 1)[-1]

    def get_isr_change_notifications(self) -> dict[str, s_isr.IsrChangeNotification]:
        """{child name: notification}, in sequence order (vanished ones left out)."""
        names = self.get_children(s_isr.ISR_CHANGE_NOTIFICATION_PATH)
        out = {}
        for name, got in zip(names, self._get_many([s_isr.isr_change_path(n) for n in names])):
            if got is not None:
                try:
                    out[name] = s_isr.IsrChangeNotification.decode(got[0], got[1].version)
                except zk_schema.SchemaError:
                    log.warning("ignoring malformed ISR change notification %s", name)
        return out

    def delete_isr_change_notifications(self, names: Iterable[str],
                                        controller_epoch_zk_version: int | None = None) -> None:
        for name in names:
            path = s_isr.isr_change_path(name)
            if controller_epoch_zk_version is None:
                self.delete(path)
            else:
                with contextlib.suppress(ZkNoNodeError):
                    self.fenced_multi(controller_epoch_zk_version, [ZkDelete(path)])

    # -------------------------------------------------------------------------------- config

    def get_topic_config(self, topic: str) -> dict[str, str]:
        path = s_config.topic_config_path(topic)
        got = self.get_data(path)
        return dict(s_config.EntityConfig.decode(got[0], got[1], path=path).config) if got else {}

    def set_topic_config(self, topic: str, config: Mapping[str, str], notify: bool = True) -> None:
        """Replace the topic's config overrides and announce the change to the brokers."""
        path = s_config.topic_config_path(topic)
        self._create_or_set(path, s_config.EntityConfig(dict(config)).encode())
        if notify:
            note = s_config.ConfigChangeNotification.for_topic(topic).encode()
            try:
                self.create(s_config.config_change_prefix_path(), note, sequence=True)
            except ZkNoNodeError:
                self.ensure_path(s_config.CONFIG_CHANGES_PATH)
                self.create(s_config.config_change_prefix_path(), note, sequence=True)

    def get_config_change_notifications(self) -> dict[str, s_config.ConfigChangeNotification]:
        names = self.get_children(s_config.CONFIG_CHANGES_PATH)
        out = {}
        for name, got in zip(names, self._get_many([s_config.config_change_path(n)
                                                    for n in names])):
            if got is not None:
                with contextlib.suppress(zk_schema.SchemaError):
                    out[name] = s_config.ConfigChangeNotification.decode(got[0], got[1].version)
        return out

    # --------------------------------------------------------------------------- producer ids

    def claim_producer_id_block(self, broker_id: int,
                                size: int = s_pids.PRODUCER_ID_BLOCK_SIZE) -> s_pids.ProducerIdBlock:
        """Claim the next block of producer ids (conditional update; retried on races)."""
        path = s_pids.LATEST_PRODUCER_ID_BLOCK_PATH
        while True:
            got = self.get_data(path)
            if got is None:
                with contextlib.suppress(ZkNodeExistsError):
                    self.create(path, b"", makepath=True)
                continue
            data, version = got
            block = (s_pids.ProducerIdBlock.decode(data).next(broker_id, size) if data
                     else s_pids.ProducerIdBlock.first(broker_id, size))
            try:
                new_version = self.set_data(path, block.encode(), version)
            except ZkBadVersionError:
                continue
            return s_pids.ProducerIdBlock(block.broker, block.block_start, block.block_end,
                                          new_version)

    # ------------------------------------------------------------------------ consumer groups

    def list_consumer_groups(self) -> list[str]:
        return self.get_children(s_consumers.CONSUMERS_PATH)

    def consumer_group_exists(self, group: str) -> bool:
        return self.exists(s_consumers.group_path(group))

    def register_consumer(self, group: str, member_id: str,
                          registration: ConsumerRegistration) -> None:
        """Create the member's ephemeral ``/consumers/<g>/ids/<member>``."""
        self._create_ephemeral_checked(s_consumers.member_path(group, member_id),
                                       registration.encode())

    def update_consumer_registration(self, group: str, member_id: str,
                                     registration: ConsumerRegistration) -> None:
        """Rewrite a live member's registration (its subscription or recorded assignment)."""
        self.set_data(s_consumers.member_path(group, member_id), registration.encode())

    def unregister_consumer(self, group: str, member_id: str) -> bool:
        return self.delete(s_consumers.member_path(group, member_id))

    def get_consumer_members(self, group: str) -> list[str]:
        return self.get_children(s_consumers.group_ids_path(group))

    def get_consumer_registration(self, group: str, member_id: str
                                  ) -> ConsumerRegistration | None:
        path = s_consumers.member_path(group, member_id)
        got = self.get_data(path)
        return ConsumerRegistration.decode(got[0], got[1], path=path) if got else None

    def get_consumer_registrations(self, group: str) -> dict[str, ConsumerRegistration]:
        members = self.get_consumer_members(group)
        paths = [s_consumers.member_path(group, m) for m in members]
        out = {}
        for m, path, got in zip(members, paths, self._get_many(paths)):
            if got is not None:
                out[m] = ConsumerRegistration.decode(got[0], got[1].version, path=path)
        return out

    def claim_partition_owner(self, group: str, topic: str, partition: int, owner_id: str) -> bool:
        """Create the ephemeral owner znode. True when we own it (now or already), False when
        another consumer still does (release pending: back off and retry)."""
        path = s_consumers.owner_path(group, topic, partition)
        data = s_consumers.PartitionOwner(owner_id).encode()
        try:
            self.create(path, data, ephemeral=True, makepath=True)
            return True
        except ZkNodeExistsError:
            got = self.get_data(path)
            return got is not None and got[0] == data

    def release_partition_owner(self, group: str, topic: str, partition: int,
                                owner_id: str | None = None) -> bool:
        """Delete the owner znode (only if ``owner_id`` holds it, when given)."""
        path = s_consumers.owner_path(group, topic, partition)
        if owner_id is None:
            return self.delete(path)
        got = self.get_data(path)
        if got is None or s_consumers.PartitionOwner.decode(got[0]).owner != owner_id:
            return False
        try:
            return self.delete(path, version=got[1])
        except ZkBadVersionError:
            return False

    def get_partition_owner(self, group: str, topic: str, partition: int) -> str | None:
        got = self.get_data(s_consumers.owner_path(group, topic, partition))
        return s_consumers.PartitionOwner.decode(got[0]).owner if got else None

    def get_partition_owners(self, group: str) -> dict[TopicPartition, str]:
        out = {}
        for topic in self.get_children(s_consumers.group_owners_path(group)):
            parts = self.get_children(s_consumers.topic_owners_path(group, topic))
            tps = [(topic, int(p)) for p in parts if p.isdigit()]
            paths = [s_consumers.owner_path(group, t, p) for t, p in tps]
            for tp, got in zip(tps, self._get_many(paths)):
                if got is not None:
                    out[tp] = s_consumers.PartitionOwner.decode(got[0]).owner
        return out

    def get_consumer_offset(self, group: str, topic: str, partition: int) -> int | None:
        got = self.get_data(s_consumers.offset_path(group, topic, partition))
        return s_consumers.ConsumerOffset.decode(got[0]).offset if got else None

    def get_consumer_offsets(self, group: str, topic: str | None = None
                             ) -> dict[TopicPartition, int]:
        topics = [topic] if topic is not None else self.get_children(
            s_consumers.group_offsets_path(group))
        out = {}
        for t in topics:
            parts = self.get_children(s_consumers.topic_offsets_path(group, t))
            tps = [(t, int(p)) for p in parts if p.isdigit()]
            paths = [s_consumers.offset_path(group, tt, p) for tt, p in tps]
            for tp, got in zip(tps, self._get_many(paths)):
                if got is not None:
                    with contextlib.suppress(zk_schema.SchemaError):
                        out[tp] = s_consumers.ConsumerOffset.decode(got[0]).offset
        return out

    def set_consumer_offset(self, group: str, topic: str, partition: int, offset: int) -> None:
        self._create_or_set(s_consumers.offset_path(group, topic, partition),
                            s_consumers.ConsumerOffset(offset).encode())

    def set_consumer_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        for (topic, partition), offset in offsets.items():
            self.set_consumer_offset(group, topic, partition, offset)

    def delete_consumer_group(self, group: str) -> bool:
        """Remove a group's znodes; NonEmptyGroupError while it has live members."""
        if self.get_consumer_members(group):
            raise NonEmptyGroupError(f"group {group!r} still has members")
        try:
            return self.delete(s_consumers.group_path(group), recursive=True)
        except ZkNotEmptyError:
            raise NonEmptyGroupError(f"group {group!r} gained members while deleting") from None


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
