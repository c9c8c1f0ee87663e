"""Followers pull from leaders: one fetcher per source broker (Kafka's ReplicaFetcherThread).

A partition that becomes a follower first truncates: it asks the leader for the end offset of its
own latest leader epoch (OffsetForLeaderEpoch) and cuts its log there, so a replica that held
records the new leader never had throws exactly those away (KIP-101/279), never blindly to its HW.
Then it fetches from its log end offset with ``replica_id`` set, appends what comes back as is
(offsets already assigned), and takes the leader's high watermark. The fetch offset itself is how
the leader learns this follower's LEO, which moves the HW and the ISR.

A fetch answered OFFSET_OUT_OF_RANGE (the leader answers it without its log start offset, as
Kafka's) is resolved as Kafka's ``fetchOffsetAndTruncate``: the leader's log end and log start
(ListOffsets as a replica); a follower ahead of the leader's end truncates to it, one behind the
leader's log start (DeleteRecords or retention moved it while this replica was away) empties its
log and starts there. Without this such a follower would never catch up nor rejoin the ISR.

Network failures back off ``replica.fetch.backoff.ms`` and reconnect. A partition whose local log
fails (KAFKA_STORAGE_ERROR: its log dir went offline) leaves the fetcher at once; the log dir
failure handler takes it offline.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from twisted.internet import defer, task

from kafkalite import errors
from kafkalite.errors import KafkaError, KafkaStorageError
from kafkalite.protocol import messages as m
from kafkalite.protocol.channel import BrokerChannel

log = logging.getLogger(__name__)


@dataclass
class _FetchState:
    partition: object          # server.partition.Partition
    truncating: bool = True
    out_of_range: bool = False  # the last fetch was OFFSET_OUT_OF_RANGE: ask the leader's offsets
    retry_at: float = 0.0      # reactor time before which this partition is not fetched


class ReplicaFetcher:
    def __init__(self, manager: "ReplicaFetcherManager", leader_id: int, host: str, port: int):
        self.manager = manager
        self.broker = manager.broker
        self.leader_id = leader_id
        self.host, self.port = host, port
        config = self.broker.config
        self.channel = BrokerChannel(self.broker.reactor, host, port,
                                     client_id=f"replica-fetcher-{self.broker.broker_id}",
                                     request_timeout_s=config.replica_socket_timeout_ms / 1000.0,
                                     max_frame_bytes=config.socket_request_max_bytes,
                                     connect=self.broker.security.inter_broker_connect)
        self.partitions: dict[tuple[str, int], _FetchState] = {}
        self.running = False
        self.stopped = False

    def add(self, partition) -> None:
        self.partitions[partition.tp] = _FetchState(partition)
        if not self.running and not self.stopped:
            self.running = True
            self._run().addErrback(lambda f: log.error("fetcher to %d died: %s", self.leader_id,
                                                       f.getTraceback()))

    def remove(self, tp) -> None:
        self.partitions.pop(tp, None)

    def stop(self) -> None:
        self.stopped = True
        self.partitions.clear()
        self.channel.close()

    def _sleep(self, seconds: float) -> defer.Deferred:
        return task.deferLater(self.broker.reactor, seconds, lambda: None)

    @defer.inlineCallbacks
    def _run(self):
        backoff = self.broker.config.replica_fetch_backoff_ms / 1000.0
        failures = 0
        try:
            while self.partitions and not self.stopped:
                try:
                    if any(s.out_of_range for s in self.partitions.values()):
                        yield self._reset_out_of_range()
                    if any(s.truncating for s in self.partitions.values()):
                        yield self._truncate()
                    yield self._fetch_once()
                    failures = 0
                except (errors.NetworkError, errors.RequestTimedOutError) as exc:
                    if self.stopped:
                        break
                    failures += 1
                    (log.info if failures == 1 else log.debug)(
                        "replica fetch from broker %d (%s:%d) failed: %s; retrying every %.1f s",
                        self.leader_id, self.host, self.port, exc, backoff)
                    self.channel.reset()
                    yield self._sleep(backoff)
                except KafkaError as exc:
                    log.warning("replica fetch from broker %d: %s", self.leader_id, exc)
                    yield self._sleep(backoff)
        finally:
            self.running = False

    @defer.inlineCallbacks
    def _truncate(self):
        now = self.broker.reactor.seconds()
        states = {tp: s for tp, s in self.partitions.items()
                  if s.truncating and s.retry_at <= now}
        if not states:
            return
        topics: dict[str, list] = {}
        for (topic, pid), state in states.items():
            partition = state.partition
            latest_epoch = partition.epoch_starts[-1][0] if partition.epoch_starts else -1
            topics.setdefault(topic, []).append(m.OffsetForLeaderEpochPartition(
                pid, partition.leader_epoch, latest_epoch))
        request = m.OffsetForLeaderEpochRequest(
            replica_id=self.broker.broker_id,
            topics=[m.OffsetForLeaderEpochTopic(t, parts) for t, parts in topics.items()])
        response = yield self.channel.request(request)
        for topic in response.topics:
            for p in topic.partitions:
                tp = (topic.topic, p.partition)
                state = self.partitions.get(tp)
                if state is None or tp not in states:
                    continue
                partition = state.partition
                if p.error_code:
                    self._partition_error(tp, p.error_code, "OffsetForLeaderEpoch")
                    continue
                if p.end_offset < 0:
                    # the leader knows no epoch of ours: fall back to the high watermark
                    target = partition.high_watermark
                else:
                    _epoch, own_end = partition.end_offset_for_epoch(p.leader_epoch)
                    target = min(p.end_offset, own_end if own_end >= 0 else p.end_offset)
                try:
                    partition.truncate_to(min(target, partition.log_end_offset))
                except KafkaStorageError as exc:
                    self._storage_failed(tp, exc)
                    continue
                state.truncating = False

    @defer.inlineCallbacks
    def _leader_offsets(self, states: dict, timestamp: int):
        """{tp: offset} from the leader's ListOffsets as this replica (its log end for
        LATEST_TIMESTAMP, its log start for EARLIEST_TIMESTAMP); a partition answered with an
        error is left out and backs off."""
        topics: dict[str, list] = {}
        for (topic, pid), state in states.items():
            topics.setdefault(topic, []).append(m.ListOffsetsPartition(
                pid, timestamp, state.partition.leader_epoch))
        response = yield self.channel.request(m.ListOffsetsRequest(
            replica_id=self.broker.broker_id,
            topics=[m.ListOffsetsTopic(t, parts) for t, parts in topics.items()]))
        found = {}
        for topic in response.topics:
            for p in topic.partitions:
                tp = (topic.topic, p.partition)
                if tp not in states:
                    continue
                if p.error_code:
                    self._partition_error(tp, p.error_code, "ListOffsets")
                else:
                    found[tp] = p.offset
        return found

    @defer.inlineCallbacks
    def _reset_out_of_range(self):
        """Kafka's fetchOffsetAndTruncate for the partitions whose fetch was out of range."""
        now = self.broker.reactor.seconds()
        states = {tp: s for tp, s in self.partitions.items()
                  if s.out_of_range and s.retry_at <= now}
        if not states:
            return
        ends = yield self._leader_offsets(states, m.LATEST_TIMESTAMP)
        starts = yield self._leader_offsets(states, m.EARLIEST_TIMESTAMP)
        for tp, state in states.items():
            if self.partitions.get(tp) is not state or tp not in ends or tp not in starts:
                continue
            partition = state.partition
            try:
                if ends[tp] < partition.log_end_offset:
                    log.info("%s-%d: ahead of the leader's log end %d; truncating to it",
                             tp[0], tp[1], ends[tp])
                    partition.truncate_to(ends[tp])
                elif starts[tp] > partition.log_end_offset:
                    log.info("%s-%d: behind the leader's log start %d; starting there", tp[0],
                             tp[1], starts[tp])
                    partition.truncate_fully_and_start_at(starts[tp])
            except KafkaStorageError as exc:
                self._storage_failed(tp, exc)
                continue
            state.out_of_range = False

    @defer.inlineCallbacks
    def _fetch_once(self):
        config = self.broker.config
        topics: dict[str, list] = {}
        now = self.broker.reactor.seconds()
        for (topic, pid), state in self.partitions.items():
            if state.truncating or state.out_of_range or state.retry_at > now:
                continue
            partition = state.partition
            topics.setdefault(topic, []).append(m.FetchPartition(
                pid, partition.log_end_offset, config.replica_fetch_max_bytes,
                partition.leader_epoch, partition.log_start_offset))
        if not topics:
            # every partition waits out a backoff: do not spin
            yield self._sleep(self.broker.config.replica_fetch_backoff_ms / 1000.0)
            return
        request = m.FetchRequest(
            replica_id=self.broker.broker_id, max_wait_ms=config.replica_fetch_wait_max_ms,
            min_bytes=config.replica_fetch_min_bytes,
            max_bytes=config.replica_fetch_response_max_bytes,
            topics=[m.FetchTopic(t, parts) for t, parts in topics.items()])
        response = yield self.channel.request(
            request, timeout_s=config.replica_socket_timeout_ms / 1000.0
            + config.replica_fetch_wait_max_ms / 1000.0)
        for topic in response.responses:
            for p in topic.partitions:
                tp = (topic.topic, p.partition)
                state = self.partitions.get(tp)
                if state is None or state.truncating:
                    continue
                if p.error_code:
                    self._partition_error(tp, p.error_code, "Fetch")
                    continue
                try:
                    state.partition.append_as_follower(p.records, p.high_watermark,
                                                       p.log_start_offset)
                except KafkaStorageError as exc:
                    self._storage_failed(tp, exc)
                    continue
                except KafkaError as exc:
                    log.warning("%s-%d: follower append failed (%s); truncating again", tp[0],
                                tp[1], exc)
                    state.truncating = True
                    continue
                self.broker.replica_manager.fetch_purgatory.check(tp)

    def _storage_failed(self, tp, exc: KafkaStorageError) -> None:
        """The local log failed: stop fetching it when its dir is offline (until restart);
        any other storage error is retried from a fresh truncation."""
        state = self.partitions.get(tp)
        if state is not None and not state.partition.log.offline:
            backoff = self.broker.config.replica_fetch_backoff_ms / 1000.0
            log.warning("%s-%d: local log failed (%s); truncating again in %.1f s", tp[0],
                        tp[1], exc, backoff)
            state.truncating = True
            state.retry_at = self.broker.reactor.seconds() + backoff
            return
        log.warning("%s-%d: stopped fetching from leader %d: %s", tp[0], tp[1], self.leader_id,
                    exc)
        self.partitions.pop(tp, None)

    def _partition_error(self, tp, code: int, what: str) -> None:
        error = errors.for_code(code)
        state = self.partitions.get(tp)
        if isinstance(error, errors.OffsetOutOfRangeError) and state is not None:
            # the answer carries no log start offset (-1, as Kafka's): ask the leader
            state.out_of_range = True
            return
        if state is None:
            return
        # The leader may not have applied its LeaderAndIsr yet (unknown partition, not leader,
        # an epoch it has not seen), or we are behind on ours (fenced epoch): both clear up on
        # their own or through the controller's next request. Keep the partition and retry after
        # a backoff, as Kafka's fetcher does; a LeaderAndIsr moving us elsewhere replaces it.
        backoff = self.broker.config.replica_fetch_backoff_ms / 1000.0
        state.retry_at = self.broker.reactor.seconds() + backoff
        if what == "OffsetForLeaderEpoch":
            state.truncating = True
        log.info("%s-%d: %s from leader %d: %s; retrying in %.1f s", tp[0], tp[1], what,
                 self.leader_id, error, backoff)


class ReplicaFetcherManager:
    def __init__(self, broker):
        self.broker = broker
        self.fetchers: dict[int, ReplicaFetcher] = {}

    def add_partitions(self, partitions, live_leaders: dict[int, tuple[str, int]]) -> None:
        for partition in partitions:
            self.remove_partitions([partition.tp])
            leader = partition.leader_id
            if leader < 0 or leader == self.broker.broker_id:
                continue
            endpoint = live_leaders.get(leader)
            if endpoint is None:
                cached = self.broker.metadata_cache.brokers.get(leader)
                endpoint = (cached.host, cached.port) if cached else None
            if endpoint is None:
                log.warning("%s-%d: leader %d has no known address", *partition.tp, leader)
                continue
            fetcher = self.fetchers.get(leader)
            if fetcher is None or (fetcher.host, fetcher.port) != tuple(endpoint):
                if fetcher is not None:
                    fetcher.stop()
                fetcher = self.fetchers[leader] = ReplicaFetcher(self, leader, *endpoint)
            fetcher.add(partition)

    def remove_partitions(self, tps) -> None:
        for fetcher in self.fetchers.values():
            for tp in tps:
                fetcher.remove(tp)

    def shutdown(self) -> None:
        for fetcher in self.fetchers.values():
            fetcher.stop()
        self.fetchers.clear()
