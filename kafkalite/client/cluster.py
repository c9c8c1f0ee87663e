"""What a client knows about the cluster: brokers, controller, topics, partition leaders.

``ClusterMetadata`` asks any reachable broker for Metadata and keeps the answer as an immutable
``ClusterSnapshot`` that it swaps in whole, so readers (``leader_for``, ``partitions_for``, ...)
never lock and never see a half-applied update. Refreshes are serialised by a lock and use one
metadata connection of their own, so a producer's user thread and its sender thread may both ask
for a refresh.

Where to find a broker is pluggable: a *bootstrap source* is any object with ``addresses() ->
[(host, port), ...]`` and ``describe() -> str``. ``StaticBootstrap`` parses ``bootstrap_servers``
("h1:9092,h2:9092" or a list); a ZooKeeper-backed source (reading ``/brokers/ids``) can be passed
the same way later. Once a refresh succeeded, the brokers it listed are tried first and the
bootstrap addresses only after them.

``ConnectionPool`` holds one ``BrokerConnection`` per broker id for ONE thread (see the threading
rule in ``connection``); ``ClusterMetadata.pool()`` makes one.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from typing import Callable, Iterable, Protocol, runtime_checkable

from kafkalite import errors
from kafkalite.client.connection import DEFAULT_CLIENT_ID, BrokerConnection, parse_address
from kafkalite.client.structs import BrokerMetadata, PartitionMetadata, TopicPartition
from kafkalite.errors import KafkaError, NoBrokersAvailableError
from kafkalite.protocol.framing import DEFAULT_MAX_FRAME_BYTES
from kafkalite.protocol.messages import MetadataRequest

log = logging.getLogger(__name__)

__all__ = ["BootstrapSource", "StaticBootstrap", "bootstrap_source", "ClusterSnapshot",
           "ClusterMetadata", "ConnectionPool"]

_UNSET = object()
_NO_LEADER = -1


@runtime_checkable
class BootstrapSource(Protocol):
    """Where to find brokers before any metadata is known."""

    def addresses(self) -> list[tuple[str, int]]:
        ...

    def describe(self) -> str:
        ...


class StaticBootstrap:
    """A fixed list of ``host:port`` addresses (``bootstrap_servers``)."""

    def __init__(self, servers: str | Iterable):
        if isinstance(servers, str):
            items = [s for s in servers.replace(" ", ",").split(",") if s]
        elif isinstance(servers, tuple) and len(servers) == 2 and isinstance(servers[1], int):
            items = [servers]
        else:
            items = list(servers)
        if not items:
            raise errors.ConfigError("bootstrap_servers is empty; give at least one host:port")
        self._addresses = [parse_address(item) for item in items]

    def addresses(self) -> list[tuple[str, int]]:
        return list(self._addresses)

    def describe(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in self._addresses)

    def __repr__(self) -> str:
        return f"StaticBootstrap({self.describe()!r})"


def bootstrap_source(value) -> BootstrapSource:
    """A bootstrap source from ``bootstrap_servers`` (str, list) or an existing source."""
    if hasattr(value, "addresses") and callable(value.addresses):
        return value
    if value is None:
        value = "localhost:9092"
    return StaticBootstrap(value)


class ClusterSnapshot:
    """One Metadata answer, frozen. ``topics`` maps name -> {partition: PartitionMetadata};
    ``topic_ids`` name -> topic id (base64url, as in ZooKeeper) for topics the broker knows one."""

    __slots__ = ("brokers", "controller_id", "cluster_id", "topics", "topic_errors",
                 "topic_ids", "partition_ids", "available", "created")

    def __init__(self, brokers: dict[int, BrokerMetadata], controller_id: int,
                 cluster_id: str | None, topics: dict[str, dict[int, PartitionMetadata]],
                 topic_errors: dict[str, int], topic_ids: dict[str, str] | None = None):
        self.brokers = brokers
        self.controller_id = controller_id
        self.cluster_id = cluster_id
        self.topics = topics
        self.topic_errors = topic_errors
        self.topic_ids = topic_ids if topic_ids is not None else {}
        # sorted partition ids per topic, and those with a live leader (for the partitioner)
        self.partition_ids = {t: sorted(ps) for t, ps in topics.items()}
        self.available = {t: [p for p in sorted(ps) if ps[p].leader in brokers]
                          for t, ps in topics.items()}
        self.created = time.monotonic()

    @classmethod
    def empty(cls) -> ClusterSnapshot:
        snap = cls({}, _NO_LEADER, None, {}, {})
        snap.created = 0.0
        return snap

    def leader_for(self, topic: str, partition: int) -> int | None:
        ps = self.topics.get(topic)
        if ps is None:
            return None
        meta = ps.get(partition)
        if meta is None or meta.leader not in self.brokers:
            return None
        return meta.leader

    def has_all_leaders(self, topic: str) -> bool:
        ps = self.topics.get(topic)
        return bool(ps) and all(m.leader in self.brokers for m in ps.values())


class ClusterMetadata:
    """Cluster metadata from any reachable broker, refreshed on demand and by age."""

    def __init__(self, bootstrap_servers="localhost:9092", *, client_id: str | None = None,
                 request_timeout_ms: int = 30000, retry_backoff_ms: int = 100,
                 metadata_max_age_ms: int = 300000, allow_auto_topic_creation: bool = True,
                 max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
                 connect_timeout_ms: int | None = None, security=None):
        self.bootstrap = bootstrap_source(bootstrap_servers)
        self.security = security          # security.settings.ClientSecurity, None: PLAINTEXT
        self.client_id = client_id or DEFAULT_CLIENT_ID
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.metadata_max_age_ms = metadata_max_age_ms
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.max_frame_bytes = max_frame_bytes
        self.connect_timeout_ms = connect_timeout_ms
        self._lock = threading.RLock()
        self._snapshot = ClusterSnapshot.empty()
        self._topics: set[str] = set()
        self._want_all = False
        self._update_requested = True
        self._conn: BrokerConnection | None = None
        self._listeners: list[Callable[[ClusterSnapshot], None]] = []
        self._closed = False
        self.version = 0

    # --- what to track ----------------------------------------------------------------------
    def add_topics(self, *topics: str) -> None:
        """Track these topics: later refreshes ask for them. Requests an update if new."""
        new = set(topics) - self._topics
        if new:
            self._topics |= new
            self._update_requested = True

    def set_topics(self, topics: Iterable[str]) -> None:
        topics = set(topics)
        if topics != self._topics:
            self._topics = topics
            self._update_requested = True

    def want_all_topics(self, value: bool = True) -> None:
        self._want_all = value

    @property
    def tracked_topics(self) -> set[str]:
        return set(self._topics)

    def request_update(self) -> None:
        """Mark the metadata stale; the next ``maybe_refresh`` fetches it."""
        self._update_requested = True

    @property
    def update_requested(self) -> bool:
        return self._update_requested

    def stale(self) -> bool:
        age_ms = (time.monotonic() - self._snapshot.created) * 1000
        return self._update_requested or age_ms >= self.metadata_max_age_ms

    def maybe_refresh(self) -> ClusterSnapshot:
        """Refresh if an update was requested or the metadata is older than its max age."""
        if self.stale():
            return self.refresh()
        return self._snapshot

    def add_listener(self, fn: Callable[[ClusterSnapshot], None]) -> None:
        """``fn(snapshot)`` after every successful refresh (called on the refreshing thread)."""
        self._listeners.append(fn)

    # --- refresh ----------------------------------------------------------------------------
    def refresh(self, topics=_UNSET, allow_auto_topic_creation: bool | None = None
                ) -> ClusterSnapshot:
        """Ask a broker for metadata and swap in the answer.

        ``topics``: a list of names, None for every topic, or (default) the tracked topics (every
        topic after ``want_all_topics()``). NoBrokersAvailableError, naming every address tried,
        if no broker answers; its ``attempts`` lists them with their errors and ``refused`` says
        whether every one refused the connection (nothing listens there).
        """
        if topics is _UNSET:
            topics = None if self._want_all else sorted(self._topics)
        elif topics is not None:
            topics = list(topics)
        auto = (self.allow_auto_topic_creation if allow_auto_topic_creation is None
                else allow_auto_topic_creation)
        request = MetadataRequest(topics=topics, allow_auto_topic_creation=auto)
        with self._lock:
            if self._closed:
                raise errors.IllegalStateError("the client is closed")
            response = self._send_to_any(request)
            snapshot = self._merge(response, topics)
            self._snapshot = snapshot
            self._update_requested = False
            self.version += 1
        for fn in list(self._listeners):
            try:
                fn(snapshot)
            except Exception:  # noqa: BLE001 - a listener must not break refreshes
                log.exception("metadata listener %r failed", fn)
        return snapshot

    def _candidates(self) -> list[tuple[str, int, int | None]]:
        known = list(self._snapshot.brokers.values())
        random.shuffle(known)
        out: list[tuple[str, int, int | None]] = [(b.host, b.port, b.node_id) for b in known]
        seen = {(h, p) for h, p, _ in out}
        for host, port in self.bootstrap.addresses():
            if (host, port) not in seen:
                seen.add((host, port))
                out.append((host, port, None))
        return out

    def _send_to_any(self, request):
        tried: list[str] = []
        refused = True                  # every address tried refused the connection
        failed = None                   # the address of the kept connection that just failed
        conn = self._conn
        if conn is not None and not conn.dead:
            try:
                return conn.request(request)
            except (errors.NetworkError, errors.RequestTimedOutError) as exc:
                tried.append(f"{conn.address} ({exc.message})")
                refused = False
                failed = (conn.host, conn.port)
                conn.close()
                self._conn = None
        for host, port, node_id in self._candidates():
            if (host, port) == failed:
                continue
            conn = None
            try:
                conn = BrokerConnection(host, port, client_id=self.client_id,
                                        request_timeout_ms=self.request_timeout_ms,
                                        max_frame_bytes=self.max_frame_bytes,
                                        connect_timeout_ms=self.connect_timeout_ms,
                                        node_id=node_id, security=self.security)
                response = conn.request(request)
            except (errors.NetworkError, errors.RequestTimedOutError) as exc:
                tried.append(f"{host}:{port} ({exc.message})")
                refused = refused and getattr(exc, "refused", False)
                if conn is not None:
                    conn.close()
                continue
            except (errors.SaslAuthenticationFailedError, errors.SslAuthenticationFailedError,
                    errors.UnsupportedSaslMechanismError):
                raise           # the next broker would say the same: fix the settings
            self._conn = conn
            return response
        exc = NoBrokersAvailableError(
            f"no broker answered a metadata request (bootstrap servers "
            f"{self.bootstrap.describe()}); tried: {'; '.join(tried) or 'nothing'}")
        exc.attempts = tuple(tried)
        exc.refused = bool(tried) and refused
        raise exc

    def _merge(self, response, requested) -> ClusterSnapshot:
        old = self._snapshot
        brokers = {b.node_id: BrokerMetadata(b.node_id, b.host, b.port, b.rack)
                   for b in response.brokers}
        if requested is None:
            topics: dict[str, dict[int, PartitionMetadata]] = {}
            topic_errors: dict[str, int] = {}
            topic_ids: dict[str, str] = {}
        else:
            topics = dict(old.topics)
            topic_errors = dict(old.topic_errors)
            topic_ids = dict(old.topic_ids)
        for t in response.topics:
            topic_errors[t.name] = t.error_code
            if t.error_code and not t.partitions:
                topics.pop(t.name, None)
                topic_ids.pop(t.name, None)
                continue
            if t.topic_id:
                topic_ids[t.name] = t.topic_id
            else:
                topic_ids.pop(t.name, None)
            topics[t.name] = {
                p.partition: PartitionMetadata(t.name, p.partition, p.leader, p.leader_epoch,
                                               tuple(p.replicas), tuple(p.isr),
                                               tuple(p.offline_replicas), p.error_code)
                for p in t.partitions}
        return ClusterSnapshot(brokers, response.controller_id, response.cluster_id, topics,
                               topic_errors, topic_ids)

    # --- queries (lock-free reads of the current snapshot) ----------------------------------
    @property
    def snapshot(self) -> ClusterSnapshot:
        return self._snapshot

    @property
    def controller_id(self) -> int:
        return self._snapshot.controller_id

    @property
    def cluster_id(self) -> str | None:
        return self._snapshot.cluster_id

    def brokers(self) -> list[BrokerMetadata]:
        return sorted(self._snapshot.brokers.values())

    def broker(self, node_id: int) -> BrokerMetadata | None:
        return self._snapshot.brokers.get(node_id)

    def topics(self) -> set[str]:
        return set(self._snapshot.topics)

    def leader_for(self, tp) -> int | None:
        """The leader's broker id for ``(topic, partition)``, None if unknown or not live."""
        return self._snapshot.leader_for(tp[0], tp[1])

    def partition(self, tp) -> PartitionMetadata | None:
        ps = self._snapshot.topics.get(tp[0])
        return None if ps is None else ps.get(tp[1])

    def partitions_for(self, topic: str) -> set[int] | None:
        """The topic's partition ids, None if the topic is not in the metadata."""
        ps = self._snapshot.topics.get(topic)
        return None if ps is None else set(ps)

    def available_partitions_for(self, topic: str) -> set[int]:
        return set(self._snapshot.available.get(topic, ()))

    def partitions_by_leader(self, tps: Iterable) -> dict[int | None, list[TopicPartition]]:
        snap = self._snapshot
        out: dict[int | None, list[TopicPartition]] = {}
        for tp in tps:
            out.setdefault(snap.leader_for(tp[0], tp[1]), []).append(TopicPartition(*tp))
        return out

    def topic_error(self, topic: str) -> KafkaError | None:
        code = self._snapshot.topic_errors.get(topic, 0)
        return errors.for_code(code) if code else None

    def wait_for_topic(self, topic: str, timeout: float, require_all_leaders: bool = True,
                       on_error: Callable[[KafkaError], None] | None = None
                       ) -> dict[int, PartitionMetadata]:
        """Refresh until ``topic`` has partitions (all with a live leader when asked).

        Retries LEADER_NOT_AVAILABLE, an unknown topic (it may be being created) and unreachable
        brokers with exponential backoff (``retry_backoff_ms`` doubling up to 1 s). Raises a
        non-retriable topic error (e.g. InvalidTopicError) at once, and KafkaTimeoutError (or the
        NoBrokersAvailableError) after ``timeout`` seconds.

        One case is not worth waiting for: before any broker ever answered this client, a refresh
        in which every address *refused* the connection (nothing listens on any bootstrap
        address: a wrong port, a cluster that is not up) raises its NoBrokersAvailableError at
        once, as ``topics --list`` fails. A broker that is slow, times out, or refuses after it
        once answered (a restart, a leader moving) is retried until ``timeout``.
        ``on_error(exc)`` is called with every failed refresh (for the caller's logging).
        """
        self.add_topics(topic)
        deadline = time.monotonic() + timeout
        backoff = self.retry_backoff_ms / 1000
        snap = self._snapshot
        last_error: KafkaError | None = None
        first = True
        while True:
            ready = (snap.has_all_leaders(topic) if require_all_leaders
                     else bool(snap.topics.get(topic)))
            if ready:
                return snap.topics[topic]
            code = snap.topic_errors.get(topic, 0)
            if code:
                err = errors.for_code(code)
                if not err.retriable:
                    raise errors.for_code(code, f"topic '{topic}': {err.description}")
                last_error = err
            now = time.monotonic()
            if not first:
                if now >= deadline:
                    break
                time.sleep(min(backoff, max(deadline - now, 0)))
                backoff = min(backoff * 2, 1.0)
            first = False
            try:
                snap = self.refresh()
            except NoBrokersAvailableError as exc:
                last_error = exc
                if on_error is not None:
                    on_error(exc)
                if getattr(exc, "refused", False) and self.version == 0:
                    raise
                if time.monotonic() >= deadline:
                    raise
        if isinstance(last_error, NoBrokersAvailableError):
            raise last_error
        state = "unknown"
        if topic in snap.topics:
            missing = sorted(p for p, m in snap.topics[topic].items()
                             if m.leader not in snap.brokers)
            state = f"no leader for partition(s) {missing}"
        elif last_error is not None:
            state = last_error.name
        raise errors.KafkaTimeoutError(
            f"topic '{topic}' not ready after {timeout * 1000:.0f} ms ({state})")

    # --- connections ------------------------------------------------------------------------
    def connect(self, node_id: int) -> BrokerConnection:
        """A new connection to broker ``node_id`` (NetworkError if unknown or unreachable)."""
        broker = self._snapshot.brokers.get(node_id)
        if broker is None:
            self._update_requested = True
            raise errors.NetworkError(f"broker {node_id} is not in the cluster metadata")
        return BrokerConnection(broker.host, broker.port, client_id=self.client_id,
                                request_timeout_ms=self.request_timeout_ms,
                                max_frame_bytes=self.max_frame_bytes,
                                connect_timeout_ms=self.connect_timeout_ms, node_id=node_id,
                                security=self.security)

    def pool(self, request_timeout_ms: int | None = None) -> ConnectionPool:
        return ConnectionPool(self, request_timeout_ms)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class ConnectionPool:
    """One connection per broker id, for the single thread that owns the pool."""

    def __init__(self, cluster: ClusterMetadata, request_timeout_ms: int | None = None):
        self.cluster = cluster
        self.request_timeout_ms = request_timeout_ms
        self._conns: dict[int, BrokerConnection] = {}

    def get(self, node_id: int) -> BrokerConnection:
        """A live connection to ``node_id``, (re)connecting if needed; NetworkError if not."""
        conn = self._conns.get(node_id)
        if conn is not None and not conn.dead:
            return conn
        conn = self.cluster.connect(node_id)
        if self.request_timeout_ms is not None:
            conn.request_timeout_ms = self.request_timeout_ms
        self._conns[node_id] = conn
        return conn

    def peek(self, node_id: int) -> BrokerConnection | None:
        conn = self._conns.get(node_id)
        return None if conn is None or conn.dead else conn

    def drop(self, node_id: int) -> None:
        conn = self._conns.pop(node_id, None)
        if conn is not None:
            conn.close()

    def connections(self) -> dict[int, BrokerConnection]:
        return {n: c for n, c in self._conns.items() if not c.dead}

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()
