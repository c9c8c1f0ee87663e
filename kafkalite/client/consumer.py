"""The blocking consumer (kafka-python's ``KafkaConsumer`` API).

Everything runs on the caller's thread: a Consumer is NOT thread-safe (as in Kafka), use it from
one thread (``close()`` included).

Fetching is pipelined: each broker has at most one Fetch in flight, and a new one is sent as soon
as a response has been read (before the records are handed to the user), so the broker reads and
ships the next chunk while the application processes the previous one. The next fetch offset of a
partition comes from the batch headers of the response (``decoder.scan_batches``), without
decoding records; records are decoded only when ``poll``/iteration hands them out
(``decoder.decode_records``: Kafka v2 records parsed in C per batch, tuples built with
``map``/``zip``). At most two responses' worth of data per partition is buffered.

Positions: ``position(tp)`` is the offset of the next record the application will get. A poll
moves it past the records it returns; iteration moves it record by record (as kafka-python's
iterator does), so breaking out of ``for record in consumer`` and then committing loses nothing.
A partition without a position gets its committed offset, else ``auto_offset_reset``
("earliest", "latest", or "none": NoOffsetForPartitionError). A fetch answered OFFSET_OUT_OF_RANGE
resets by the same policy ("none": OffsetOutOfRangeError naming the partition and the log's range).

Groups (DESIGN section 9; ``coordinator.make_coordinator`` picks the kind): ``group_id`` alone
joins a group through the brokers' group coordinator, as Kafka's 0.9+ consumers do
(``broker_coordinator``: JoinGroup/SyncGroup, heartbeats from a background thread every
``heartbeat_interval_ms``, ``session_timeout_ms``, ``max_poll_interval_ms`` as the rebalance
timeout, ``group_instance_id`` for static membership, offsets committed to the coordinator);
``group_id`` with ``zookeeper`` joins a Kafka 0.8 group through ZooKeeper (``zk_coordinator``);
without a ``group_id`` a subscription gets every partition of its topics and commits are kept in
memory (``coordinator.InMemoryCoordinator``). Auto-commit (every ``auto_commit_interval_ms``, at
close, and before partitions are revoked) only runs with a ``group_id``.

Deserializers are applied to non-None keys and values only.
"""

from __future__ import annotations

import logging
import math
import re
import selectors
import time
from collections import deque
from typing import Iterable

from kafkalite import errors
from kafkalite.client.cluster import ClusterMetadata
from kafkalite.client.connection import DEFAULT_CLIENT_ID, ConnectionSelector
from kafkalite.client.coordinator import Coordinator, make_coordinator
from kafkalite.client.decoder import decode_records, scan_batches
from kafkalite.client.structs import (
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    TopicPartition,
)
from kafkalite.errors import IllegalStateError, KafkaError, KafkaTimeoutError
from kafkalite.protocol.messages import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    FetchPartition,
    FetchRequest,
    FetchTopic,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kafkalite.topics import validate_topic_name

log = logging.getLogger(__name__)

__all__ = ["Consumer"]

_RESET_POLICIES = ("earliest", "latest", "none")
_MAX_BUFFERED_FETCHES = 2


class _PartitionState:
    __slots__ = ("tp", "position", "fetch_position", "reset", "epoch", "paused",
                 "backoff_until", "fetch_size", "high_watermark", "log_start_offset",
                 "last_stable_offset", "buffered")

    def __init__(self, tp: TopicPartition):
        self.tp = tp
        self.position: int | None = None       # next offset the application gets
        self.fetch_position: int | None = None  # next offset to fetch (ahead when buffered)
        self.reset: str | None = None          # pending seek_to_beginning/end
        self.epoch = 0                         # bumped by seeks: stale fetch data is dropped
        self.paused = False
        self.backoff_until = 0.0
        self.fetch_size = 0                    # 0 = max_partition_fetch_bytes
        self.high_watermark = -1
        self.log_start_offset = -1
        self.last_stable_offset = -1
        self.buffered = 0                      # completed fetches not yet fully handed out

    def seek(self, offset: int | None, reset: str | None = None) -> None:
        self.position = offset
        self.fetch_position = offset
        self.reset = reset
        self.epoch += 1
        self.buffered = 0
        self.backoff_until = 0.0


class _CompletedFetch:
    __slots__ = ("tp", "data", "fetch_offset", "next_offset", "epoch", "records", "index")

    def __init__(self, tp, data, fetch_offset, next_offset, epoch):
        self.tp = tp
        self.data = data
        self.fetch_offset = fetch_offset
        self.next_offset = next_offset
        self.epoch = epoch
        self.records: list | None = None
        self.index = 0


class _FetchInFlight:
    __slots__ = ("correlation_id", "offsets", "conn")

    def __init__(self, correlation_id, offsets, conn):
        self.correlation_id = correlation_id
        self.offsets = offsets
        self.conn = conn


class Consumer:
    """Reads records from assigned or subscribed partitions; see the module doc."""

    def __init__(self, *topics: str, bootstrap_servers=None,
                 group_id: str | None = None, zookeeper=None, client_id: str | None = None,
                 auto_offset_reset: str = "latest", enable_auto_commit: bool = True,
                 auto_commit_interval_ms: int = 5000, max_poll_records: int = 500,
                 fetch_min_bytes: int = 1, fetch_max_wait_ms: int = 500,
                 fetch_max_bytes: int = 52428800, max_partition_fetch_bytes: int = 1048576,
                 key_deserializer=None, value_deserializer=None,
                 request_timeout_ms: int = 30000, retry_backoff_ms: int = 100,
                 consumer_timeout_ms: float = float("inf"),
                 partition_assignment_strategy=("range",), metadata_max_age_ms: int = 300000,
                 check_crcs: bool = True, allow_auto_create_topics: bool = True,
                 default_api_timeout_ms: int = 60000, coordinator: Coordinator | None = None,
                 session_timeout_ms: int | None = None, heartbeat_interval_ms: int = 3000,
                 max_poll_interval_ms: int = 300000, group_instance_id: str | None = None,
                 rebalance_max_retries: int = 4, rebalance_backoff_ms: int = 2000,
                 rebalance_debounce_ms: int = 300):
        if auto_offset_reset == "smallest":
            auto_offset_reset = "earliest"
        elif auto_offset_reset == "largest":
            auto_offset_reset = "latest"
        if auto_offset_reset not in _RESET_POLICIES:
            raise errors.ConfigError(f"auto_offset_reset must be one of {_RESET_POLICIES}, got "
                                     f"{auto_offset_reset!r}")
        if max_poll_records < 1:
            raise errors.ConfigError("max_poll_records must be >= 1")
        if request_timeout_ms <= fetch_max_wait_ms:
            raise errors.ConfigError("request_timeout_ms must be larger than fetch_max_wait_ms")
        self.config = dict(
            bootstrap_servers=bootstrap_servers, group_id=group_id, zookeeper=zookeeper,
            client_id=client_id or DEFAULT_CLIENT_ID, auto_offset_reset=auto_offset_reset,
            enable_auto_commit=enable_auto_commit,
            auto_commit_interval_ms=auto_commit_interval_ms, max_poll_records=max_poll_records,
            fetch_min_bytes=fetch_min_bytes, fetch_max_wait_ms=fetch_max_wait_ms,
            fetch_max_bytes=fetch_max_bytes, max_partition_fetch_bytes=max_partition_fetch_bytes,
            request_timeout_ms=request_timeout_ms, retry_backoff_ms=retry_backoff_ms,
            consumer_timeout_ms=consumer_timeout_ms,
            partition_assignment_strategy=partition_assignment_strategy,
            metadata_max_age_ms=metadata_max_age_ms, check_crcs=check_crcs,
            default_api_timeout_ms=default_api_timeout_ms)
        self._group_id = group_id
        self._auto_offset_reset = auto_offset_reset
        self._auto_commit = bool(enable_auto_commit and group_id is not None)
        self._auto_commit_interval = auto_commit_interval_ms / 1000
        self._max_poll_records = max_poll_records
        self._fetch_min_bytes = fetch_min_bytes
        self._fetch_max_wait_ms = fetch_max_wait_ms
        self._fetch_max_bytes = fetch_max_bytes
        self._max_partition_fetch_bytes = max_partition_fetch_bytes
        self._key_deserializer = key_deserializer
        self._value_deserializer = value_deserializer
        self._retry_backoff = retry_backoff_ms / 1000
        self._consumer_timeout = (math.inf if consumer_timeout_ms is None
                                  else consumer_timeout_ms / 1000)
        self._check_crcs = check_crcs
        self._api_timeout = default_api_timeout_ms / 1000
        if isinstance(partition_assignment_strategy, str):
            partition_assignment_strategy = (partition_assignment_strategy,)
        bootstrap = bootstrap_servers
        if bootstrap is None:
            if zookeeper is not None:
                from kafkalite.client.zk_bootstrap import ZooKeeperBootstrap

                bootstrap = ZooKeeperBootstrap(zookeeper)
            else:
                bootstrap = "localhost:9092"
        self._cluster = ClusterMetadata(
            bootstrap, client_id=self.config["client_id"],
            request_timeout_ms=request_timeout_ms, retry_backoff_ms=retry_backoff_ms,
            metadata_max_age_ms=metadata_max_age_ms,
            allow_auto_topic_creation=allow_auto_create_topics)
        group_options: dict = {}
        if group_id is not None and zookeeper is not None:
            group_options = dict(
                assignor=partition_assignment_strategy[0],
                session_timeout_ms=6000 if session_timeout_ms is None else session_timeout_ms,
                rebalance_max_retries=rebalance_max_retries,
                rebalance_backoff_ms=rebalance_backoff_ms,
                rebalance_debounce_ms=rebalance_debounce_ms, client_id=self.config["client_id"])
        elif group_id is not None:
            group_options = dict(
                cluster=self._cluster, client_id=self.config["client_id"],
                assignors=partition_assignment_strategy,
                session_timeout_ms=10000 if session_timeout_ms is None else session_timeout_ms,
                heartbeat_interval_ms=heartbeat_interval_ms,
                max_poll_interval_ms=max_poll_interval_ms, group_instance_id=group_instance_id,
                request_timeout_ms=request_timeout_ms, retry_backoff_ms=retry_backoff_ms,
                default_api_timeout_ms=default_api_timeout_ms)
        try:
            self._coordinator = coordinator or make_coordinator(group_id, zookeeper,
                                                                **group_options)
        except BaseException:
            self._cluster.close()
            close_bootstrap = getattr(self._cluster.bootstrap, "close", None)
            if close_bootstrap is not None:
                close_bootstrap()
            raise
        self._fetch_pool = self._cluster.pool()   # fetches (long polls) only
        self._aux_pool = self._cluster.pool()     # ListOffsets etc., never behind a long poll
        self._connections = ConnectionSelector()
        self._selector = self._connections.selector
        self._registered = self._connections.registered
        self._in_flight: dict[int, _FetchInFlight] = {}
        self._subscription: set[str] | None = None
        self._pattern: re.Pattern | None = None
        self._listener = None
        self._manual = False
        self._assignment: dict[TopicPartition, _PartitionState] = {}
        self._completed: deque[_CompletedFetch] = deque()
        self._pushback: list = []
        self._needs_reset = False
        self._metadata_backoff_until = 0.0
        self._rotation = 0
        self._iterator = None
        self._chunk_iter = None
        self._next_auto_commit = time.monotonic() + self._auto_commit_interval
        self._closed = False
        if topics:
            if len(topics) == 1 and isinstance(topics[0], (list, tuple, set)):
                topics = tuple(topics[0])
            self.subscribe(topics)

    # --- subscription and assignment --------------------------------------------------------
    def subscribe(self, topics: Iterable[str] = (), pattern: str | None = None,
                  listener=None) -> None:
        """Consume every partition of ``topics`` (or of the topics matching ``pattern``).

        New partitions are picked up when the metadata is refreshed. ``listener`` may have
        ``on_partitions_revoked(set)`` and ``on_partitions_assigned(set)``.
        """
        self._check_open()
        if self._manual:
            raise IllegalStateError("subscribe() after assign(): call unsubscribe() first")
        if isinstance(topics, str):
            topics = [topics]
        topics = set(topics)
        if (not topics) == (pattern is None):
            raise IllegalStateError("subscribe() needs either topics or a pattern")
        for topic in topics:
            validate_topic_name(topic)
        self._listener = listener
        if pattern is not None:
            self._pattern = re.compile(pattern)
            self._subscription = set()
            self._cluster.want_all_topics(True)
        else:
            self._pattern = None
            self._subscription = topics
            self._cluster.want_all_topics(False)
            self._cluster.set_topics(topics)
        self._coordinator.subscribe(set(self._subscription), self)
        self._cluster.request_update()

    def subscription(self) -> set[str] | None:
        return None if self._subscription is None else set(self._subscription)

    def unsubscribe(self) -> None:
        """Drop the subscription or manual assignment (and everything buffered)."""
        self._settle_iterator()
        if self._subscription is not None:
            self._coordinator.unsubscribe()
        self._subscription = None
        self._pattern = None
        self._manual = False
        self._cluster.want_all_topics(False)
        self._set_assignment(set())

    def assign(self, partitions: Iterable) -> None:
        """Consume exactly these partitions (no group management)."""
        self._check_open()
        if self._subscription is not None:
            raise IllegalStateError("assign() while subscribed: call unsubscribe() first")
        tps = [TopicPartition(*tp) for tp in partitions]
        for tp in tps:
            validate_topic_name(tp.topic)
            if type(tp.partition) is not int or tp.partition < 0:
                raise ValueError(f"invalid partition {tp.partition!r} for topic {tp.topic!r}")
        self._settle_iterator()
        self._manual = bool(tps)
        self._cluster.set_topics({tp.topic for tp in tps})
        self._set_assignment(set(tps))

    def assignment(self) -> set[TopicPartition]:
        return set(self._assignment)

    def _set_assignment(self, tps: set) -> None:
        new: dict[TopicPartition, _PartitionState] = {}
        for tp in sorted(tps):
            ps = self._assignment.get(tp)
            if ps is None:
                ps = _PartitionState(tp)
                self._needs_reset = True
            new[tp] = ps
        self._assignment = new
        self._pushback = [r for r in self._pushback if (r[0], r[1]) in new]

    # rebalance listener hooks, called by the coordinator
    def on_partitions_revoked(self, revoked: set) -> None:
        if self._auto_commit:
            offsets = {tp: OffsetAndMetadata(ps.position, "")
                       for tp, ps in self._assignment.items()
                       if tp in revoked and ps.position is not None}
            if offsets:
                try:
                    self._coordinator.commit(offsets)
                except KafkaError as exc:   # as Kafka's consumer: the rebalance goes on
                    log.warning("auto-commit of %s before revoking them failed: %s",
                                sorted(offsets), exc)
        if self._listener is not None and hasattr(self._listener, "on_partitions_revoked"):
            self._listener.on_partitions_revoked(revoked)
        for tp in revoked:  # position and fetched data are void now: fetch nothing until it is
            ps = self._assignment.get(tp)   # assigned again, then from the committed offset
            if ps is not None:              # (another member may have moved it meanwhile)
                self._drop_pushback(tp)
                ps.seek(None)
                self._needs_reset = True

    def on_partitions_assigned(self, assigned: set) -> None:
        # the new assignment is in place before the user's listener runs, so it may pause(),
        # seek() or position() the partitions it was just given, as the Java client allows
        self._set_assignment(set(assigned))
        if self._listener is not None and hasattr(self._listener, "on_partitions_assigned"):
            self._listener.on_partitions_assigned(assigned)

    def pause(self, *partitions) -> None:
        for tp in partitions:
            ps = self._state(tp)
            ps.paused = True

    def resume(self, *partitions) -> None:
        for tp in partitions:
            self._state(tp).paused = False

    def paused(self) -> set[TopicPartition]:
        return {tp for tp, ps in self._assignment.items() if ps.paused}

    # --- positions --------------------------------------------------------------------------
    def _state(self, tp) -> _PartitionState:
        ps = self._assignment.get(TopicPartition(*tp))
        if ps is None:
            raise IllegalStateError(f"partition {tp[0]}-{tp[1]} is not assigned to this consumer")
        return ps

    def seek(self, partition, offset: int) -> None:
        """Read ``partition`` from ``offset`` on at the next poll."""
        if type(offset) is not int or offset < 0:
            raise ValueError(f"offset must be a non-negative int, got {offset!r}")
        self._settle_iterator()
        self._drop_pushback(partition)
        self._state(partition).seek(offset)

    def seek_to_beginning(self, *partitions) -> None:
        """Seek to the earliest offset (all assigned partitions when none are given)."""
        self._seek_reset(partitions, "earliest")

    def seek_to_end(self, *partitions) -> None:
        """Seek to the high watermark (all assigned partitions when none are given)."""
        self._seek_reset(partitions, "latest")

    def _seek_reset(self, partitions, policy: str) -> None:
        self._settle_iterator()
        if len(partitions) == 1 and isinstance(partitions[0], (list, set)):
            partitions = tuple(partitions[0])
        targets = partitions or tuple(self._assignment)
        states = [self._state(tp) for tp in targets]
        for ps in states:
            self._drop_pushback(ps.tp)
            ps.seek(None, policy)
        if states:
            self._needs_reset = True

    def _drop_pushback(self, tp) -> None:
        if self._pushback:
            key = (tp[0], tp[1])
            self._pushback = [r for r in self._pushback if (r[0], r[1]) != key]

    def position(self, partition) -> int:
        """The offset of the next record to be returned (resolving a pending reset)."""
        self._check_open()
        self._settle_iterator()
        ps = self._state(partition)
        if ps.position is None:
            deadline = time.monotonic() + self._api_timeout
            while ps.position is None:
                self._update_metadata()
                self._reset_positions()
                if ps.position is not None:
                    break
                if time.monotonic() >= deadline:
                    raise KafkaTimeoutError(f"could not find a position for {ps.tp} within "
                                            f"{self._api_timeout * 1000:.0f} ms")
                time.sleep(self._retry_backoff)
        return ps.position

    def highwater(self, partition) -> int | None:
        """The high watermark the last fetch saw (None before any)."""
        hw = self._state(partition).high_watermark
        return None if hw < 0 else hw

    def _reset_positions(self) -> None:
        """Give every partition without a position its committed offset or the reset policy."""
        need = [ps for ps in self._assignment.values() if ps.position is None]
        if not need:
            self._needs_reset = False
            return
        now = time.monotonic()
        plain = [ps.tp for ps in need if ps.reset is None]
        if plain:
            committed = self._coordinator.committed(plain)
            for tp in plain:
                om = committed.get(tp)
                if om is not None and om.offset >= 0:
                    ps = self._assignment[tp]
                    ps.position = ps.fetch_position = om.offset
        timestamps: dict[TopicPartition, int] = {}
        for ps in need:
            if ps.position is not None or ps.backoff_until > now:
                continue
            policy = ps.reset or self._auto_offset_reset
            if policy == "none":
                raise errors.NoOffsetForPartitionError(
                    f"no committed offset for partition {ps.tp} and auto_offset_reset='none'; "
                    f"seek() to a position first")
            timestamps[ps.tp] = EARLIEST_TIMESTAMP if policy == "earliest" else LATEST_TIMESTAMP
        if timestamps:
            found, failed = self._list_offsets_once(timestamps)
            for tp, (offset, _ts) in found.items():
                ps = self._assignment.get(tp)
                if ps is not None and ps.position is None:
                    ps.position = ps.fetch_position = offset
                    ps.reset = None
            for tp in failed:
                ps = self._assignment.get(tp)
                if ps is not None:
                    ps.backoff_until = now + self._retry_backoff
        self._needs_reset = any(ps.position is None for ps in self._assignment.values())

    # --- offsets lookups --------------------------------------------------------------------
    def _list_offsets_once(self, timestamps: dict) -> tuple[dict, set]:
        """One round of ListOffsets to the leaders: ``({tp: (offset, ts)}, retriable failures)``.

        Non-retriable partition errors are raised.
        """
        snap = self._cluster.snapshot
        by_node: dict[int, dict[str, list[ListOffsetsPartition]]] = {}
        failed: set = set()
        for tp, ts in timestamps.items():
            node = snap.leader_for(tp[0], tp[1])
            if node is None:
                failed.add(tp)
                continue
            by_node.setdefault(node, {}).setdefault(tp[0], []).append(
                ListOffsetsPartition(tp[1], ts, -1))
        found: dict = {}
        for node, topics in by_node.items():
            request = ListOffsetsRequest(topics=[ListOffsetsTopic(t, ps)
                                                 for t, ps in topics.items()])
            try:
                response = self._aux_pool.get(node).request(request)
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                self._aux_pool.drop(node)
                failed.update(TopicPartition(t, p.partition) for t, ps in topics.items()
                              for p in ps)
                continue
            for t in response.topics:
                for p in t.partitions:
                    tp = TopicPartition(t.topic, p.partition)
                    if p.error_code == 0:
                        found[tp] = (p.offset, p.timestamp)
                        continue
                    exc = errors.for_code(p.error_code)
                    if not exc.retriable:
                        raise errors.for_code(p.error_code,
                                              f"listing offsets of {tp}: {exc.description}")
                    failed.add(tp)
        for tp in timestamps:
            if tp not in found:
                failed.add(tp)
        if failed:
            self._cluster.request_update()
        return found, failed

    def _list_offsets(self, timestamps: dict, timeout: float | None) -> dict:
        timestamps = {TopicPartition(*tp): ts for tp, ts in timestamps.items()}
        if not timestamps:
            return {}
        self._check_open()
        self._cluster.add_topics(*{tp.topic for tp in timestamps})
        deadline = time.monotonic() + (self._api_timeout if timeout is None else timeout)
        results: dict = {}
        pending = dict(timestamps)
        while True:
            if self._cluster.stale():
                try:
                    self._cluster.refresh()
                except KafkaError as exc:
                    if not exc.retriable or time.monotonic() >= deadline:
                        raise
            found, _failed = self._list_offsets_once(pending)
            results.update(found)
            pending = {tp: ts for tp, ts in pending.items() if tp not in found}
            if not pending:
                return results
            if time.monotonic() >= deadline:
                raise KafkaTimeoutError(f"could not list offsets of {sorted(pending)} within "
                                        f"the timeout")
            time.sleep(self._retry_backoff)

    def beginning_offsets(self, partitions: Iterable, timeout_ms: int | None = None) -> dict:
        """``{tp: earliest offset}`` (the log start offset)."""
        timeout = None if timeout_ms is None else timeout_ms / 1000
        found = self._list_offsets({tp: EARLIEST_TIMESTAMP for tp in partitions}, timeout)
        return {tp: off for tp, (off, _ts) in found.items()}

    def end_offsets(self, partitions: Iterable, timeout_ms: int | None = None) -> dict:
        """``{tp: high watermark}`` (the offset the next visible record will get)."""
        timeout = None if timeout_ms is None else timeout_ms / 1000
        found = self._list_offsets({tp: LATEST_TIMESTAMP for tp in partitions}, timeout)
        return {tp: off for tp, (off, _ts) in found.items()}

    def offsets_for_times(self, timestamps: dict, timeout_ms: int | None = None) -> dict:
        """``{tp: OffsetAndTimestamp | None}``: the earliest record with timestamp >= the one
        asked, None if there is none."""
        for tp, ts in timestamps.items():
            if type(ts) is not int or ts < 0:
                raise ValueError(f"timestamp for {tp} must be a non-negative int, got {ts!r}")
        timeout = None if timeout_ms is None else timeout_ms / 1000
        found = self._list_offsets(timestamps, timeout)
        return {tp: (OffsetAndTimestamp(off, ts) if off >= 0 else None)
                for tp, (off, ts) in found.items()}

    # --- commits ----------------------------------------------------------------------------
    def commit(self, offsets: dict | None = None) -> None:
        """Commit ``offsets`` ({tp: OffsetAndMetadata or int}) or every current position."""
        self._check_open()
        self._settle_iterator()
        if offsets is None:
            offsets = {tp: OffsetAndMetadata(ps.position, "")
                       for tp, ps in self._assignment.items() if ps.position is not None}
        else:
            offsets = {TopicPartition(*tp): (om if isinstance(om, OffsetAndMetadata)
                                             else OffsetAndMetadata(int(om), ""))
                       for tp, om in offsets.items()}
        if offsets:
            self._coordinator.commit(offsets)
        self._next_auto_commit = time.monotonic() + self._auto_commit_interval

    def commit_async(self, offsets: dict | None = None, callback=None) -> None:
        """``commit`` (done before returning: this client has no commits in flight); then
        ``callback(offsets, exception_or_None)``."""
        error = None
        try:
            self.commit(offsets)
        except KafkaError as exc:
            error = exc
        if callback is not None:
            callback(offsets, error)

    def committed(self, partition, metadata: bool = False):
        """The committed offset of ``partition`` (an OffsetAndMetadata with ``metadata=True``),
        None if nothing was committed."""
        tp = TopicPartition(*partition)
        om = self._coordinator.committed([tp]).get(tp)
        if om is None:
            return None
        return om if metadata else om.offset

    def _maybe_auto_commit(self, now: float) -> None:
        if self._auto_commit and now >= self._next_auto_commit:
            try:
                self.commit()
            except KafkaError as exc:
                log.warning("auto-commit failed: %s", exc)
                self._next_auto_commit = now + self._auto_commit_interval

    # --- metadata ---------------------------------------------------------------------------
    def topics(self) -> set[str]:
        """Every topic in the cluster."""
        self._check_open()
        return set(self._cluster.refresh(topics=None, allow_auto_topic_creation=False).topics)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """The topic's partition ids, None if it does not exist."""
        self._check_open()
        parts = self._cluster.partitions_for(topic)
        if parts is None:
            self._cluster.add_topics(topic)
            self._cluster.refresh()
            parts = self._cluster.partitions_for(topic)
        return parts

    def _update_metadata(self) -> None:
        now = time.monotonic()
        if self._cluster.stale() and now >= self._metadata_backoff_until:
            self._metadata_backoff_until = now + self._retry_backoff
            try:
                self._cluster.refresh()
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                log.warning("consumer metadata refresh failed: %s", exc)
        if self._subscription is None:
            return
        snap = self._cluster.snapshot
        if self._pattern is not None:
            matched = {t for t in snap.topics if self._pattern.match(t)}
            if matched != self._subscription:
                self._subscription = matched
                self._coordinator.subscribe(set(matched), self)
        new = self._coordinator.poll(self._cluster)
        if new is not None:
            self._set_assignment(new)
        if any(t not in snap.topics for t in self._subscription):
            self._cluster.request_update()   # e.g. being auto-created: ask again after backoff

    # --- fetching ---------------------------------------------------------------------------
    def _send_fetches(self) -> None:
        now = time.monotonic()
        snap = self._cluster.snapshot
        default_size = self._max_partition_fetch_bytes
        per_node: dict[int, dict[str, list]] = {}
        offsets: dict[int, dict] = {}
        states = list(self._assignment.values())
        if len(states) > 1:
            self._rotation = (self._rotation + 1) % len(states)
            states = states[self._rotation:] + states[:self._rotation]
        in_flight = self._in_flight
        max_bytes = self._fetch_max_bytes
        for ps in states:
            if (ps.position is None or ps.paused or ps.buffered >= _MAX_BUFFERED_FETCHES
                    or ps.backoff_until > now):
                continue
            tp = ps.tp
            node = snap.leader_for(tp[0], tp[1])
            if node is None:
                self._cluster.request_update()
                continue
            if node in in_flight:
                continue
            offset = ps.fetch_position if ps.fetch_position is not None else ps.position
            size = ps.fetch_size or default_size
            if size > max_bytes:
                max_bytes = size
            per_node.setdefault(node, {}).setdefault(tp[0], []).append(
                FetchPartition(tp[1], offset, size, -1))
            offsets.setdefault(node, {})[tp] = (offset, ps.epoch)
        for node, topics in per_node.items():
            request = FetchRequest(max_wait_ms=self._fetch_max_wait_ms,
                                   min_bytes=self._fetch_min_bytes, max_bytes=max_bytes,
                                   topics=[FetchTopic(t, ps) for t, ps in topics.items()])
            try:
                conn = self._fetch_pool.get(node)
                if self._registered.get(node) is not conn:
                    self._register(node, conn)
                cid = conn.send(request)
            except KafkaError as exc:
                log.warning("fetch from broker %d failed: %s", node, exc)
                self._drop(node)
                self._backoff(offsets[node], now)
                self._cluster.request_update()
                continue
            in_flight[node] = _FetchInFlight(cid, offsets[node], conn)

    def _register(self, node: int, conn) -> None:
        self._connections.register(node, conn)

    def _drop(self, node: int) -> None:
        self._connections.unregister(node)
        self._in_flight.pop(node, None)
        self._fetch_pool.drop(node)

    def _backoff(self, offsets: dict, now: float) -> None:
        for tp in offsets:
            ps = self._assignment.get(tp)
            if ps is not None:
                ps.backoff_until = now + self._retry_backoff

    def _wait(self, timeout: float) -> None:
        """Wait up to ``timeout`` s for fetch responses and handle those that arrive."""
        if not self._in_flight:
            time.sleep(max(min(timeout, self._retry_backoff), 0))
            return
        now = time.monotonic()
        wait = timeout
        for entry in self._in_flight.values():
            deadline = entry.conn.oldest_deadline()
            if deadline is not None:
                wait = min(wait, max(deadline - now, 0))
        events = self._selector.select(max(wait, 0))
        for key, _mask in events:
            self._read(key.data)
        now = time.monotonic()
        for node, entry in list(self._in_flight.items()):
            deadline = entry.conn.oldest_deadline()
            if deadline is not None and deadline < now:
                self._read(node)

    def _read(self, node: int) -> None:
        entry = self._in_flight.get(node)
        if entry is None:
            conn = self._registered.get(node)
            if conn is not None:    # readable with nothing pending: EOF or garbage
                try:
                    conn.receive_available()
                except KafkaError:
                    self._drop(node)
            return
        try:
            results = entry.conn.receive_available()
        except KafkaError as exc:
            log.warning("fetch from broker %d failed: %s", node, exc)
            self._drop(node)
            self._backoff(entry.offsets, time.monotonic())
            self._cluster.request_update()
            return
        for _cid, result in results:
            self._in_flight.pop(node, None)
            self._handle_fetch_response(entry, result)

    def _handle_fetch_response(self, entry: _FetchInFlight, result) -> None:
        if isinstance(result, KafkaError) or result.error_code:
            code = result.code if isinstance(result, KafkaError) else result.error_code
            for tp, (offset, epoch) in entry.offsets.items():
                ps = self._assignment.get(tp)
                if ps is not None and ps.epoch == epoch:
                    self._partition_error(ps, code if code is not None else -1, offset)
            return
        assignment = self._assignment
        sent = entry.offsets
        for topic_response in result.responses:
            topic = topic_response.topic
            for pr in topic_response.partitions:
                tp = TopicPartition(topic, pr.partition)
                info = sent.get(tp)
                ps = assignment.get(tp)
                if info is None or ps is None or ps.epoch != info[1]:
                    continue     # seeked, unassigned or never asked: stale data
                fetch_offset = info[0]
                if pr.error_code:
                    self._partition_error(ps, pr.error_code, fetch_offset)
                    continue
                ps.high_watermark = pr.high_watermark
                ps.log_start_offset = pr.log_start_offset
                ps.last_stable_offset = pr.last_stable_offset
                data = pr.records
                if not data:
                    continue
                next_offset, complete, partial = scan_batches(data, fetch_offset)
                if complete:
                    ps.fetch_position = next_offset
                    ps.buffered += 1
                    self._completed.append(
                        _CompletedFetch(tp, data, fetch_offset, next_offset, ps.epoch))
                elif partial:
                    size = ps.fetch_size or self._max_partition_fetch_bytes
                    if partial > size:
                        log.info("%s: a batch of %d bytes at offset %d exceeds the fetch size "
                                 "%d; fetching it whole", tp, partial, fetch_offset, size)
                        ps.fetch_size = partial
                    else:
                        ps.backoff_until = time.monotonic() + self._retry_backoff
                else:   # damaged bytes: decoding reports the error to the application
                    ps.fetch_position = fetch_offset
                    ps.buffered += 1
                    self._completed.append(
                        _CompletedFetch(tp, data, fetch_offset, fetch_offset, ps.epoch))

    def _partition_error(self, ps: _PartitionState, code: int, fetch_offset: int) -> None:
        exc = errors.for_code(code)
        tp = ps.tp
        if isinstance(exc, errors.OffsetOutOfRangeError):
            policy = self._auto_offset_reset
            if policy == "none":
                raise self._out_of_range(tp, fetch_offset)
            log.info("%s: fetch offset %d is out of range; resetting to %s", tp, fetch_offset,
                     policy)
            self._drop_pushback(tp)
            ps.seek(None, policy)
            self._needs_reset = True
            return
        if exc.retriable or code == errors.UnknownServerError.code:
            log.debug("%s: fetch error %s; refreshing metadata", tp, exc.name)
            ps.backoff_until = time.monotonic() + self._retry_backoff
            self._cluster.request_update()
            return
        raise errors.for_code(code, f"fetching {tp} at offset {fetch_offset}: "
                                    f"{exc.description}")

    def _out_of_range(self, tp: TopicPartition, offset: int) -> KafkaError:
        try:
            lo, _ = self._list_offsets_once({tp: EARLIEST_TIMESTAMP})
            hi, _ = self._list_offsets_once({tp: LATEST_TIMESTAMP})
            span = f"the log holds offsets [{lo[tp][0]}, {hi[tp][0]})"
        except (KafkaError, KeyError):
            span = "the log's range is unknown"
        err = errors.OffsetOutOfRangeError(
            f"fetch offset {offset} is out of range for partition {tp}: {span}; "
            f"auto_offset_reset='none', so seek() to a valid offset")
        err.partition_offsets = {tp: offset}  # type: ignore[attr-defined]
        return err

    # --- handing records out ----------------------------------------------------------------
    def _drain(self, max_records: int | None) -> tuple[list, int]:
        """Take up to ``max_records`` decoded records as ``[(tp, [records])]``, moving positions."""
        chunks: list = []
        n = 0
        assignment = self._assignment
        if self._pushback:
            take = self._pushback if max_records is None else self._pushback[:max_records]
            self._pushback = [] if max_records is None else self._pushback[max_records:]
            by_tp: dict = {}
            for r in take:
                by_tp.setdefault(TopicPartition(r[0], r[1]), []).append(r)
            for tp, recs in by_tp.items():
                ps = assignment.get(tp)
                if ps is not None:
                    ps.position = recs[-1][2] + 1
                    chunks.append((tp, recs))
                    n += len(recs)
        completed = self._completed
        while completed and (max_records is None or n < max_records):
            cf = completed[0]
            ps = assignment.get(cf.tp)
            if ps is None or ps.epoch != cf.epoch:
                completed.popleft()
                continue
            if ps.paused:   # hand nothing out; refetch from the position once resumed
                completed.popleft()
                ps.seek(ps.position)
                continue
            records = cf.records
            if records is None:
                try:
                    decoded = decode_records(cf.data, cf.tp[0], cf.tp[1], ps.position,
                                             self._check_crcs, self._key_deserializer,
                                             self._value_deserializer)
                except Exception:
                    completed.popleft()
                    ps.seek(ps.position)      # refetch (and fail again) unless the app seeks
                    raise
                records = cf.records = decoded.records
                cf.data = None
            i = cf.index
            if max_records is None:
                take = records if i == 0 else records[i:]
            else:
                take = records[i:i + max_records - n]
            if take:
                cf.index = i + len(take)
                chunks.append((cf.tp, take))
                n += len(take)
                ps.position = take[-1][2] + 1
            if cf.index >= len(records):
                completed.popleft()
                ps.buffered -= 1
                if cf.next_offset > ps.position:
                    ps.position = cf.next_offset
        return chunks, n

    def _poll_chunks(self, timeout: float, max_records: int | None) -> list:
        self._check_open()
        self._settle_iterator()
        now = time.monotonic()
        deadline = now + timeout
        self._maybe_auto_commit(now)
        looked = False
        while True:
            self._update_metadata()
            if self._needs_reset:
                self._reset_positions()
            # pipelining: ask for the next chunk before decoding this one, so the broker reads
            # and ships it while the records are decoded and processed
            self._send_fetches()
            chunks, n = self._drain(max_records)
            if n:
                self._send_fetches()      # draining may have made room for another fetch
                return chunks
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if looked or not self._in_flight:
                    return []
                # poll(timeout_ms=0) still reads what has arrived, as kafka-python's does:
                # one look at the sockets without waiting, then one more drain
                looked = True
                remaining = 0
            self._wait(remaining)

    def poll(self, timeout_ms: float = 0, max_records: int | None = None,
             update_offsets: bool = True) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Records fetched so far (waiting up to ``timeout_ms`` for some), by partition."""
        chunks = self._poll_chunks(max(timeout_ms, 0) / 1000, max_records or
                                   self._max_poll_records)
        out: dict[TopicPartition, list[ConsumerRecord]] = {}
        for tp, recs in chunks:
            have = out.get(tp)
            if have is None:
                out[tp] = recs
            else:
                have.extend(recs)
        return out

    # --- iteration --------------------------------------------------------------------------
    def __iter__(self):
        if self._iterator is None:
            self._iterator = self._message_generator()
        return self._iterator

    def __next__(self) -> ConsumerRecord:
        return next(self.__iter__())

    def _message_generator(self):
        try:
            idle_since = time.monotonic()
            while not self._closed:
                remaining = self._consumer_timeout - (time.monotonic() - idle_since)
                if remaining <= 0:
                    return
                chunks = self._poll_chunks(min(remaining, 1.0), None)
                if not chunks:
                    continue
                if len(chunks) == 1:
                    flat = chunks[0][1]
                else:
                    flat = []
                    for _tp, recs in chunks:
                        flat.extend(recs)
                it = iter(flat)
                self._chunk_iter = it
                yield from it
                self._chunk_iter = None
                idle_since = time.monotonic()
        finally:
            self._chunk_iter = None
            self._iterator = None

    def _settle_iterator(self) -> None:
        """An abandoned iteration left records un-yielded: give them back (positions too)."""
        it = self._chunk_iter
        if it is None:
            return
        rest = list(it)
        if not rest:
            return
        first: dict = {}
        for r in rest:
            key = (r[0], r[1])
            if key not in first:
                first[key] = r[2]
        for key, offset in first.items():
            ps = self._assignment.get(TopicPartition(*key))
            if ps is not None and (ps.position is None or offset < ps.position):
                ps.position = offset
        self._pushback = rest + self._pushback

    # --- lifecycle --------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateError("the consumer is closed")

    def close(self, autocommit: bool = True) -> None:
        """Commit (with a group and auto-commit), then release every connection."""
        if self._closed:
            return
        try:
            self._settle_iterator()
            if autocommit and self._auto_commit and self._assignment:
                try:
                    self.commit()
                except KafkaError as exc:
                    log.warning("commit at close failed: %s", exc)
        finally:
            self._closed = True
            try:
                self._coordinator.close()
            finally:
                self._fetch_pool.close()
                self._aux_pool.close()
                self._selector.close()
                self._cluster.close()
                close_bootstrap = getattr(self._cluster.bootstrap, "close", None)
                if close_bootstrap is not None:
                    close_bootstrap()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def metrics(self) -> dict:
        return {"assigned_partitions": len(self._assignment),
                "buffered_fetches": len(self._completed),
                "in_flight_fetches": len(self._in_flight)}
