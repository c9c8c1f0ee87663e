"""The blocking consumer (kafka-python's ``KafkaConsumer`` API).

Everything runs on the caller's thread: a Consumer is NOT thread-safe (as in Kafka), use it from
one thread (``close()`` included).

The parts, as aiokafka's and the Java client's are cut (the producer's are Producer,
RecordAccumulator and Sender):

* ``subscription_state.SubscriptionState``: the subscription or manual assignment, each
  partition's position, pause flag and backoff, the user's rebalance listener;
* ``fetcher.Fetcher``: pipelined Fetch requests, the buffer of fetched data, decoding, and
  finding positions (committed offset or ``auto_offset_reset``); its select loop is
  ``io_loop.IoLoop``, the same code the producer's sender runs;
* ``offsets_lookup.OffsetsLookup``: ListOffsets (``beginning_offsets``, ``end_offsets``,
  ``offsets_for_times``, position resets), shared with ``AdminClient``;
* the group coordinator (``coordinator_factory.make_coordinator``): membership and committed
  offsets.

Positions: ``position(tp)`` is the offset of the next record the application will get. A poll
moves it past the records it returns; iteration moves it record by record (as kafka-python's
iterator does), so breaking out of ``for record in consumer`` and then committing loses nothing.
A partition without a position gets its committed offset, else ``auto_offset_reset``
("earliest", "latest", or "none": NoOffsetForPartitionError). A fetch answered OFFSET_OUT_OF_RANGE
resets by the same policy ("none": OffsetOutOfRangeError naming the partition and the log's range).

Groups (docs/architecture.md, 9. Consumer groups; ``coordinator_factory.make_coordinator``
picks the kind):
``group_id`` alone joins through the brokers' group coordinator (``broker_coordinator``, Kafka
0.9+), ``group_id`` with ``zookeeper`` joins a Kafka 0.8 ZooKeeper group (``zk_coordinator``),
and without a ``group_id`` a subscription gets every partition of its topics, commits kept in
memory.
Auto-commit (every ``auto_commit_interval_ms``, at close, and before partitions are revoked)
only runs with a ``group_id``.

Transactions: ``isolation_level="read_committed"`` reads only committed transactions' records
(Fetch and ListOffsets at isolation level 1: up to the last stable offset, aborted transactions'
records dropped as Kafka's Java consumer drops them); "read_uncommitted" (the default) reads
every record. Transaction markers are never returned. ``group_metadata()`` is what a
transactional producer's ``send_offsets_to_transaction`` takes.

Deserializers are applied to non-None keys and values only. ``_clock``/``_sleep`` (monotonic
seconds) time backoffs, deadlines and auto-commits; tests may override them in a subclass.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Iterable

from kafkalite import errors
from kafkalite.client.cluster import ClusterMetadata
from kafkalite.client.connection import DEFAULT_CLIENT_ID
from kafkalite.client.coordinator import Coordinator
from kafkalite.client.coordinator_factory import consumer_group_options, make_coordinator
from kafkalite.client.fetcher import Fetcher, FetchSettings
from kafkalite.client.offsets_lookup import OffsetsLookup
from kafkalite.client.structs import (
    ConsumerGroupMetadata,
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    TopicPartition,
)
from kafkalite.client.subscription_state import SubscriptionState
from kafkalite.errors import IllegalStateError, KafkaError, KafkaTimeoutError
from kafkalite.protocol.messages import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    READ_COMMITTED,
    READ_UNCOMMITTED,
)
from kafkalite.security.settings import ClientSecurity
from kafkalite.topics import validate_topic_name

log = logging.getLogger(__name__)

__all__ = ["Consumer"]

_RESET_POLICIES = ("earliest", "latest", "none")
_ISOLATION_LEVELS = {"read_uncommitted": READ_UNCOMMITTED, "read_committed": READ_COMMITTED}


class Consumer:
    """Reads records from assigned or subscribed partitions; see the module doc."""

    _clock = staticmethod(time.monotonic)
    _sleep = staticmethod(time.sleep)

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
                 rebalance_debounce_ms: int = 300, isolation_level: str = "read_uncommitted",
                 **security_options):
        if auto_offset_reset == "smallest":
            auto_offset_reset = "earliest"
        elif auto_offset_reset == "largest":
            auto_offset_reset = "latest"
        if auto_offset_reset not in _RESET_POLICIES:
            raise errors.ConfigError(f"auto_offset_reset must be one of {_RESET_POLICIES}, got "
                                     f"{auto_offset_reset!r}")
        if isolation_level not in _ISOLATION_LEVELS:
            raise errors.ConfigError(f"isolation_level must be one of "
                                     f"{tuple(_ISOLATION_LEVELS)}, got {isolation_level!r}")
        isolation = _ISOLATION_LEVELS[isolation_level]
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
            default_api_timeout_ms=default_api_timeout_ms, isolation_level=isolation_level)
        self._auto_commit = bool(enable_auto_commit and group_id is not None)
        self._auto_commit_interval = auto_commit_interval_ms / 1000
        self._max_poll_records = max_poll_records
        self._retry_backoff = retry_backoff_ms / 1000
        self._consumer_timeout = (math.inf if consumer_timeout_ms is None
                                  else consumer_timeout_ms / 1000)
        self._api_timeout = default_api_timeout_ms / 1000
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
            allow_auto_topic_creation=allow_auto_create_topics,
            security=ClientSecurity.from_kwargs(**security_options))
        group_options = consumer_group_options(
            group_id, zookeeper, self._cluster, self.config["client_id"],
            partition_assignment_strategy, session_timeout_ms, heartbeat_interval_ms,
            max_poll_interval_ms, group_instance_id, request_timeout_ms, retry_backoff_ms,
            default_api_timeout_ms, rebalance_max_retries, rebalance_backoff_ms,
            rebalance_debounce_ms)
        try:
            self._coordinator = coordinator or make_coordinator(group_id, zookeeper,
                                                                **group_options)
        except BaseException:
            self._close_cluster()
            raise
        if hasattr(self._coordinator, "require_stable"):     # the brokers' group coordinator
            self._coordinator.require_stable = isolation == READ_COMMITTED
        clock, sleep = self._clock, self._sleep
        self._subscriptions = SubscriptionState(clock)
        # ListOffsets on a pool of its own: never behind a long poll
        self._offsets = OffsetsLookup(self._cluster, self._cluster.pool(), self._retry_backoff,
                                      clock, sleep, isolation)
        self._fetcher = Fetcher(self._cluster, self._subscriptions, self._offsets, FetchSettings(
            fetch_min_bytes, fetch_max_wait_ms, fetch_max_bytes, max_partition_fetch_bytes,
            check_crcs, key_deserializer, value_deserializer, retry_backoff_ms,
            auto_offset_reset, isolation), clock, sleep)
        self._subscriptions.on_assignment_change = self._fetcher.retain
        self._metadata_backoff_until = 0.0
        self._iterator = None
        self._chunk_iter = None
        self._next_auto_commit = clock() + self._auto_commit_interval
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
        if isinstance(topics, str):
            topics = [topics]
        topics = set(topics)
        subs = self._subscriptions
        subs.subscribe(topics, pattern, listener, validate_topic_name)
        if pattern is not None:
            self._cluster.want_all_topics(True)
        else:
            self._cluster.want_all_topics(False)
            self._cluster.set_topics(topics)
        self._coordinator.subscribe(set(subs.topics), self)
        self._cluster.request_update()

    def subscription(self) -> set[str] | None:
        topics = self._subscriptions.topics
        return None if topics is None else set(topics)

    def unsubscribe(self) -> None:
        """Drop the subscription or manual assignment (and everything buffered)."""
        self._settle_iterator()
        if self._subscriptions.subscribed:
            self._coordinator.unsubscribe()
        self._subscriptions.unsubscribe()
        self._cluster.want_all_topics(False)

    def assign(self, partitions: Iterable) -> None:
        """Consume exactly these partitions (no group management)."""
        self._check_open()
        if self._subscriptions.subscribed:
            raise IllegalStateError("assign() while subscribed: call unsubscribe() first")
        tps = [TopicPartition(*tp) for tp in partitions]
        for tp in tps:
            validate_topic_name(tp.topic)
            if type(tp.partition) is not int or tp.partition < 0:
                raise ValueError(f"invalid partition {tp.partition!r} for topic {tp.topic!r}")
        self._settle_iterator()
        self._cluster.set_topics({tp.topic for tp in tps})
        self._subscriptions.assign(tps)

    def assignment(self) -> set[TopicPartition]:
        return set(self._subscriptions.assignment)

    # rebalance listener hooks, called by the coordinator
    def on_partitions_revoked(self, revoked: set) -> None:
        subs = self._subscriptions
        if self._auto_commit:
            offsets = {tp: OffsetAndMetadata(ps.position, "")
                       for tp, ps in subs.assignment.items()
                       if tp in revoked and ps.position is not None}
            if offsets:
                try:
                    self._coordinator.commit(offsets)
                except KafkaError as exc:   # as Kafka's consumer: the rebalance goes on
                    log.warning("auto-commit of %s before revoking them failed: %s",
                                sorted(offsets), exc)
        listener = subs.listener
        if listener is not None and hasattr(listener, "on_partitions_revoked"):
            listener.on_partitions_revoked(revoked)
        for tp in revoked:
            if tp in subs.assignment:
                self._fetcher.drop_buffered(tp)
        subs.revoke(revoked)

    def on_partitions_assigned(self, assigned: set) -> None:
        # the new assignment is in place before the user's listener runs, so it may pause(),
        # seek() or position() the partitions it was just given, as the Java client allows
        self._subscriptions.set_assignment(set(assigned))
        listener = self._subscriptions.listener
        if listener is not None and hasattr(listener, "on_partitions_assigned"):
            listener.on_partitions_assigned(assigned)

    def pause(self, *partitions) -> None:
        self._subscriptions.pause(*partitions)

    def resume(self, *partitions) -> None:
        self._subscriptions.resume(*partitions)

    def paused(self) -> set[TopicPartition]:
        return self._subscriptions.paused()

    # --- positions --------------------------------------------------------------------------
    def seek(self, partition, offset: int) -> None:
        """Read ``partition`` from ``offset`` on at the next poll."""
        if type(offset) is not int or offset < 0:
            raise ValueError(f"offset must be a non-negative int, got {offset!r}")
        self._settle_iterator()
        self._fetcher.drop_buffered(partition)
        self._subscriptions.state(partition).seek(offset)

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
        for ps in self._subscriptions.seek_reset(partitions, policy):
            self._fetcher.drop_buffered(ps.tp)

    def position(self, partition) -> int:
        """The offset of the next record to be returned (resolving a pending reset)."""
        self._check_open()
        self._settle_iterator()
        ps = self._subscriptions.state(partition)
        if ps.position is None:
            deadline = self._clock() + self._api_timeout
            while ps.position is None:
                self._update_metadata()
                self._fetcher.reset_positions(self._coordinator.committed)
                if ps.position is not None:
                    break
                if self._clock() >= deadline:
                    raise KafkaTimeoutError(f"could not find a position for {ps.tp} within "
                                            f"{self._api_timeout * 1000:.0f} ms")
                self._sleep(self._retry_backoff)
        return ps.position

    def highwater(self, partition) -> int | None:
        """The high watermark the last fetch saw (None before any)."""
        hw = self._subscriptions.state(partition).high_watermark
        return None if hw < 0 else hw

    # --- offsets lookups (offsets_lookup, shared with AdminClient) ---------------------------
    def _list_offsets(self, timestamps: dict, timeout: float | None) -> dict:
        if not timestamps:
            return {}
        self._check_open()
        result = self._offsets.list_offsets(
            timestamps, self._api_timeout if timeout is None else timeout)
        if result.missing:
            raise KafkaTimeoutError(f"could not list offsets of {result.missing} within "
                                    f"the timeout")
        return result.found

    def beginning_offsets(self, partitions: Iterable, timeout_ms: int | None = None) -> dict:
        """``{tp: earliest offset}`` (the log start offset)."""
        timeout = None if timeout_ms is None else timeout_ms / 1000
        found = self._list_offsets({tp: EARLIEST_TIMESTAMP for tp in partitions}, timeout)
        return {tp: off for tp, (off, _ts) in found.items()}

    def end_offsets(self, partitions: Iterable, timeout_ms: int | None = None) -> dict:
        """``{tp: high watermark}`` (the offset the next visible record will get; the last
        stable offset with read_committed)."""
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
            offsets = {tp: OffsetAndMetadata(position, "")
                       for tp, position in self._subscriptions.positions().items()}
        else:
            offsets = {TopicPartition(*tp): (om if isinstance(om, OffsetAndMetadata)
                                             else OffsetAndMetadata(int(om), ""))
                       for tp, om in offsets.items()}
        if offsets:
            self._coordinator.commit(offsets)
        self._next_auto_commit = self._clock() + self._auto_commit_interval

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

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The consumer's group, generation and member id, for a transactional producer's
        ``send_offsets_to_transaction`` (Java's ``groupMetadata()``). InvalidGroupIdError
        without a ``group_id``."""
        coordinator = self._coordinator
        group_id = self.config["group_id"]
        if group_id is None:
            raise errors.InvalidGroupIdError("group_metadata() needs a consumer with a group_id")
        lock = getattr(coordinator, "_cv", None)
        if lock is None:
            return ConsumerGroupMetadata(group_id)
        with lock:
            return ConsumerGroupMetadata(group_id, coordinator.generation_id,
                                         coordinator.member_id, coordinator.group_instance_id)

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
        now = self._clock()
        if self._cluster.stale() and now >= self._metadata_backoff_until:
            self._metadata_backoff_until = now + self._retry_backoff
            try:
                self._cluster.refresh()
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                log.warning("consumer metadata refresh failed: %s", exc)
        subs = self._subscriptions
        if not subs.subscribed:
            return
        snap = self._cluster.snapshot
        if subs.match_pattern(snap.topics):
            self._coordinator.subscribe(set(subs.topics), self)
        new = self._coordinator.poll(self._cluster)
        if new is not None:
            subs.set_assignment(new)
        if any(t not in snap.topics for t in subs.topics):
            self._cluster.request_update()   # e.g. being auto-created: ask again after backoff

    # --- polling ----------------------------------------------------------------------------
    def _poll_chunks(self, timeout: float, max_records: int | None) -> list:
        self._check_open()
        self._settle_iterator()
        now = self._clock()
        deadline = now + timeout
        self._maybe_auto_commit(now)
        fetcher = self._fetcher
        looked = False
        while True:
            self._update_metadata()
            if self._subscriptions.needs_reset:
                fetcher.reset_positions(self._coordinator.committed)
            # pipelining: ask for the next chunk before decoding this one, so the broker reads
            # and ships it while the records are decoded and processed
            fetcher.send_fetches()
            chunks, n = fetcher.drain(max_records)
            if n:
                fetcher.send_fetches()      # draining may have made room for another fetch
                return chunks
            remaining = deadline - self._clock()
            if remaining <= 0:
                if looked or not fetcher.in_flight:
                    return []
                # poll(timeout_ms=0) still reads what has arrived, as kafka-python's does:
                # one look at the sockets without waiting, then one more drain
                looked = True
                remaining = 0
            fetcher.wait(remaining)

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
            idle_since = self._clock()
            while not self._closed:
                remaining = self._consumer_timeout - (self._clock() - idle_since)
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
                idle_since = self._clock()
        finally:
            self._chunk_iter = None
            self._iterator = None

    def _settle_iterator(self) -> None:
        """An abandoned iteration left records un-yielded: give them back (positions too)."""
        it = self._chunk_iter
        if it is None:
            return
        rest = list(it)
        if rest:
            self._fetcher.push_back(rest)

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
            if autocommit and self._auto_commit and self._subscriptions.assignment:
                try:
                    self.commit()
                except KafkaError as exc:
                    log.warning("commit at close failed: %s", exc)
        finally:
            self._closed = True
            try:
                self._coordinator.close()
            finally:
                self._fetcher.close()
                self._offsets.pool.close()
                self._close_cluster()

    def _close_cluster(self) -> None:
        self._cluster.close()
        close_bootstrap = getattr(self._cluster.bootstrap, "close", None)
        if close_bootstrap is not None:
            close_bootstrap()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def metrics(self) -> dict:
        return {"assigned_partitions": len(self._subscriptions.assignment),
                **self._fetcher.metrics()}
