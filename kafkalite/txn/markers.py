"""The transaction marker channel (Kafka 2.8's ``TransactionMarkerChannelManager`` and
``TransactionMarkerRequestCompletionHandler``).

Once PrepareCommit/PrepareAbort is in ``__transaction_state``, the coordinator hands the
transaction here. Its partitions are grouped by their current leader (``metadata_cache``) and
sent as WriteTxnMarkers requests, one per leader per flush, over the inter-broker listener (a
partition this broker leads goes the same way, to itself). Each partition whose marker is written
leaves the transaction; when none is left, CompleteCommit/CompleteAbort is written.

Failures are retried as Kafka's completion handler does: a lost connection or a retriable
partition error (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS, ...)
sends the partition again to whichever broker then leads it; a partition without a live leader
waits in the unknown-broker queue; a partition the metadata no longer has (a deleted topic) is
dropped; a fenced producer or coordinator epoch, or a coordinator epoch that moved here (another
broker or a newer election took over), stops the transaction's markers. Retries wait
``RETRY_BACKOFF_S`` (Kafka's send thread retries on its next poll).
"""

from __future__ import annotations

import logging
from typing import Callable, NamedTuple

from twisted.internet import defer

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.channel import BrokerChannel
from kafkalite.topic_partition import TopicPartition
from kafkalite.txn.metadata import TransactionMetadata, TxnTransitMetadata

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1
UNKNOWN_BROKER = -1

_NONE = 0
_NOT_COORDINATOR = errors.NotCoordinatorError.code
_LOAD_IN_PROGRESS = errors.CoordinatorLoadInProgressError.code
_NOT_AVAILABLE = errors.CoordinatorNotAvailableError.code
_RETRIABLE = frozenset({
    errors.UnknownTopicOrPartitionError.code, errors.NotLeaderForPartitionError.code,
    errors.NotEnoughReplicasError.code, errors.NotEnoughReplicasAfterAppendError.code,
    errors.RequestTimedOutError.code, errors.KafkaStorageError.code})
_FENCED = frozenset({errors.InvalidProducerEpochError.code,
                     errors.TransactionCoordinatorFencedError.code})
_UNSUPPORTED = frozenset({43, errors.UnsupportedVersionError.code})  # 43: FOR_MESSAGE_FORMAT


class MarkerEntry(NamedTuple):
    """Kafka's TxnIdAndMarkerEntry: one transaction's marker for some partitions."""
    transactional_id: str
    txn_topic_partition: int
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: frozenset


class PendingCompleteTxn(NamedTuple):
    transactional_id: str
    coordinator_epoch: int
    metadata: TransactionMetadata
    transit: TxnTransitMetadata


Send = Callable[[int, object, m.WriteTxnMarkersRequest], defer.Deferred]


class TransactionMarkerChannelManager:
    """``broker`` needs ``reactor``, ``config``, ``metadata_cache`` and ``security``
    (``inter_broker_connect``). ``send(broker_id, endpoint, request)`` may be given (tests);
    by default a BrokerChannel per destination broker carries the requests."""

    def __init__(self, broker, state, send: Send | None = None):
        self.broker = broker
        self.state = state
        self._send = send or self._send_over_channel
        self.queues: dict[int, list[MarkerEntry]] = {}     # broker id (or UNKNOWN_BROKER)
        self.pending: dict[str, PendingCompleteTxn] = {}    # transactional id -> completion
        self.append_retries: list[PendingCompleteTxn] = []
        self._channels: dict[int, BrokerChannel] = {}
        self._flush_call = None
        self._running = True

    # --- life cycle -----------------------------------------------------------------------------
    def start(self) -> None:
        self._running = True

    def shutdown(self) -> None:
        self._running = False
        if self._flush_call is not None and self._flush_call.active():
            self._flush_call.cancel()
        self._flush_call = None
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()
        self.queues.clear()
        self.pending.clear()
        self.append_retries.clear()

    # --- entry points ---------------------------------------------------------------------------
    def add_txn_markers_to_send(self, coordinator_epoch: int, commit: bool,
                                metadata: TransactionMetadata,
                                transit: TxnTransitMetadata) -> None:
        """Send the markers of a transaction whose PrepareCommit/PrepareAbort is written;
        ``transit`` (CompleteCommit/CompleteAbort) is written once they all are."""
        txn_id = metadata.transactional_id
        self.pending[txn_id] = PendingCompleteTxn(txn_id, coordinator_epoch, metadata, transit)
        self.add_txn_markers_to_broker_queue(txn_id, metadata.producer_id,
                                             metadata.producer_epoch, commit, coordinator_epoch,
                                             set(metadata.topic_partitions))
        self.maybe_write_txn_completion(txn_id)

    def remove_markers_for_txn_topic_partition(self, txn_topic_partition: int) -> None:
        """Forget the queued markers of one ``__transaction_state`` partition (its leadership
        moved)."""
        for destination, queue in list(self.queues.items()):
            keep = []
            for entry in queue:
                if entry.txn_topic_partition == txn_topic_partition:
                    self.pending.pop(entry.transactional_id, None)
                else:
                    keep.append(entry)
            self.queues[destination] = keep
        self.append_retries = [p for p in self.append_retries
                               if self.state.partition_for(p.transactional_id)
                               != txn_topic_partition]

    def remove_markers_for_txn_id(self, transactional_id: str,
                                  coordinator_epoch: int | None = None) -> None:
        """Forget the id's pending completion; with ``coordinator_epoch``, only one begun at
        that epoch: a late answer to a marker of an older epoch must not cancel the markers a
        reload at a newer epoch queued for the same transaction."""
        pending = self.pending.get(transactional_id)
        if pending is not None and coordinator_epoch in (None, pending.coordinator_epoch):
            del self.pending[transactional_id]

    def add_txn_markers_to_broker_queue(self, transactional_id: str, producer_id: int,
                                        producer_epoch: int, commit: bool,
                                        coordinator_epoch: int, partitions,
                                        schedule: bool = True) -> None:
        """Queue the marker for each partition at its leader (Kafka's
        addTxnMarkersToBrokerQueue) and flush at once (unless ``schedule`` is False: the
        caller is the flush)."""
        txn_partition = self.state.partition_for(transactional_id)
        by_destination: dict[int | None, set] = {}
        for tp in partitions:
            tp = TopicPartition(*tp)
            by_destination.setdefault(self._leader_of(tp), set()).add(tp)
        for destination, tps in by_destination.items():
            if destination is not None:
                self.queues.setdefault(destination, []).append(MarkerEntry(
                    transactional_id, txn_partition, producer_id, producer_epoch, commit,
                    coordinator_epoch, frozenset(tps)))
                continue
            # the partitions are unknown to the metadata: deleted, nothing to mark
            code, found = self.state.get_transaction_state(transactional_id)
            if code or found is None or found.coordinator_epoch != coordinator_epoch:
                log.info("cancelling %s's markers: the coordinator moved (error %s)",
                         transactional_id, code)
                self.remove_markers_for_txn_id(transactional_id, coordinator_epoch)
                continue
            log.info("no leader endpoint for %s of %s: the partitions are likely deleted and "
                     "are skipped", sorted(tps), transactional_id)
            for tp in tps:
                found.metadata.remove_partition(tp)
            self.maybe_write_txn_completion(transactional_id)
        if schedule:
            self._schedule_flush(0)

    def _leader_of(self, tp: TopicPartition) -> int | None:
        """The partition's leader, UNKNOWN_BROKER when it has none alive, None when the
        metadata does not know the partition."""
        cache = self.broker.metadata_cache
        if not cache.contains_partition(tp.topic, tp.partition):
            return None
        leader = cache.leader_of(tp.topic, tp.partition)
        return leader if leader >= 0 and leader in cache.brokers else UNKNOWN_BROKER

    # --- completion -----------------------------------------------------------------------------
    def maybe_write_txn_completion(self, transactional_id: str) -> None:
        pending = self.pending.get(transactional_id)
        if pending is None or pending.metadata.topic_partitions:
            return
        del self.pending[transactional_id]
        code, found = self.state.get_transaction_state(transactional_id)
        if code:
            log.info("not writing %s for %s: error %d (no longer its coordinator, or "
                     "loading)", pending.transit.state, transactional_id, code)
            return
        if found is None or found.coordinator_epoch != pending.coordinator_epoch:
            log.info("%s changed after its markers were sent at coordinator epoch %d; not "
                     "writing %s", transactional_id, pending.coordinator_epoch,
                     pending.transit.state)
            return
        self._try_append(pending)

    def _try_append(self, pending: PendingCompleteTxn) -> None:
        d = self.state.append_transaction_to_log(
            pending.transactional_id, pending.coordinator_epoch, pending.transit,
            retry_on_error=lambda code: code == _NOT_AVAILABLE)

        def appended(code):
            if code == _NONE:
                log.debug("completed the transaction of %s (%s)", pending.transactional_id,
                          pending.transit.state)
            elif code == _NOT_AVAILABLE:
                log.info("writing %s for %s: coordinator not available; retrying",
                         pending.transit.state, pending.transactional_id)
                self.append_retries.append(pending)
                self._schedule_flush(RETRY_BACKOFF_S)
            elif code in (_NOT_COORDINATOR, _LOAD_IN_PROGRESS):
                log.info("not writing %s for %s: error %d", pending.transit.state,
                         pending.transactional_id, code)
            else:
                log.error("unexpected error %d writing %s for %s", code,
                          pending.transit.state, pending.transactional_id)
        d.addCallback(appended)
        d.addErrback(lambda f: log.error("writing %s for %s failed: %s", pending.transit.state,
                                         pending.transactional_id, f.getTraceback()))

    # --- sending --------------------------------------------------------------------------------
    def _schedule_flush(self, delay_s: float) -> None:
        if not self._running:
            return
        call = self._flush_call
        if call is not None and call.active():
            if call.getTime() <= self.broker.reactor.seconds() + delay_s:
                return
            call.cancel()
        self._flush_call = self.broker.reactor.callLater(delay_s, self.flush)

    def flush(self) -> None:
        """Kafka's generateRequests: retry failed completions, requeue the markers waiting for
        a leader, then send one request per destination broker."""
        self._flush_call = None
        retries, self.append_retries = self.append_retries, []
        for pending in retries:
            self._try_append(pending)
        unknown = self.queues.pop(UNKNOWN_BROKER, [])
        for entry in unknown:
            if entry.transactional_id in self.pending:
                self._queue_again(entry, entry.partitions, schedule=False)
        for destination in list(self.queues):
            if destination == UNKNOWN_BROKER:
                continue
            entries = [e for e in self.queues.pop(destination)
                       if e.transactional_id in self.pending]
            if entries:
                self._send_entries(destination, entries)
        if self.queues.get(UNKNOWN_BROKER):
            self._schedule_flush(RETRY_BACKOFF_S)

    def _send_entries(self, destination: int, entries: list[MarkerEntry]) -> None:
        endpoint = self.broker.metadata_cache.brokers.get(destination)
        if endpoint is None:
            self.queues.setdefault(UNKNOWN_BROKER, []).extend(entries)
            self._schedule_flush(RETRY_BACKOFF_S)
            return
        request = m.WriteTxnMarkersRequest(markers=[_marker(e) for e in entries])
        d = defer.maybeDeferred(self._send, destination, endpoint, request)
        d.addCallbacks(self._on_response, self._on_failure, callbackArgs=(entries,),
                       errbackArgs=(destination, entries))
        d.addErrback(lambda f: log.error("handling WriteTxnMarkers' answer from broker %d "
                                         "failed: %s", destination, f.getTraceback()))

    def _send_over_channel(self, destination: int, endpoint, request) -> defer.Deferred:
        config = self.broker.config
        host, port = endpoint.address(config.inter_broker_listener)
        channel = self._channels.get(destination)
        if channel is not None and (channel.host, channel.port) != (host or "127.0.0.1", port):
            channel.close()
            channel = None
        if channel is None:
            channel = self._channels[destination] = BrokerChannel(
                self.broker.reactor, host, port,
                client_id=f"txn-marker-sender-{self.broker.broker_id}",
                request_timeout_s=config.request_timeout_ms / 1000.0,
                connect=self.broker.security.inter_broker_connect)
        return channel.request(request)

    # --- answers --------------------------------------------------------------------------------
    def _on_failure(self, failure, destination: int, entries: list[MarkerEntry]) -> None:
        """A lost connection (or an answer that is an error as a whole): every entry is sent
        again, to the partitions' leaders of then, unless the coordinator moved."""
        log.info("WriteTxnMarkers to broker %d failed (%s); retrying", destination,
                 failure.getErrorMessage())
        for entry in entries:
            if self._still_coordinating(entry):
                self._requeue(entry, entry.partitions)

    def _on_response(self, response: m.WriteTxnMarkersResponse,
                     entries: list[MarkerEntry]) -> None:
        results: dict[int, dict[TopicPartition, int]] = {}
        for marker in response.markers:
            by_tp = results.setdefault(marker.producer_id, {})
            for topic in marker.topics:
                for p in topic.partitions:
                    by_tp[TopicPartition(topic.name, p.partition_index)] = p.error_code
        for entry in entries:
            self._entry_answered(entry, results.get(entry.producer_id, {}))

    def _entry_answered(self, entry: MarkerEntry, codes: dict) -> None:
        txn_id = entry.transactional_id
        found = self._still_coordinating(entry)
        if found is None:
            return
        metadata = found.metadata
        retry = set()
        for tp in entry.partitions:
            code = codes.get(tp)
            if code is None:
                retry.add(tp)          # not in the answer: send it again
            elif code == _NONE:
                metadata.remove_partition(tp)
            elif code in _RETRIABLE:
                log.info("%s's marker for %s-%d failed with error %d; retrying", txn_id,
                         tp.topic, tp.partition, code)
                retry.add(tp)
            elif code in _FENCED:
                log.info("%s's marker for %s-%d failed for good with error %d; no more "
                         "markers are sent for it", txn_id, tp.topic, tp.partition, code)
                self.remove_markers_for_txn_id(txn_id, entry.coordinator_epoch)
                return
            elif code in _UNSUPPORTED:
                metadata.remove_partition(tp)
            else:
                # Kafka's completion handler throws here: the transaction's markers stop
                log.error("unexpected error %d writing %s's marker for %s-%d", code, txn_id,
                          tp.topic, tp.partition)
                self.remove_markers_for_txn_id(txn_id, entry.coordinator_epoch)
                return
        if retry:
            self._requeue(entry, retry)
        else:
            self.maybe_write_txn_completion(txn_id)

    def _still_coordinating(self, entry: MarkerEntry):
        """The id's cache entry when this broker still coordinates it at the marker's epoch;
        else None, and its markers are dropped."""
        code, found = self.state.get_transaction_state(entry.transactional_id)
        if code or found is None or found.coordinator_epoch != entry.coordinator_epoch:
            log.info("cancelling %s's markers: no longer its coordinator at epoch %d (error "
                     "%s)", entry.transactional_id, entry.coordinator_epoch, code)
            self.remove_markers_for_txn_id(entry.transactional_id, entry.coordinator_epoch)
            return None
        return found

    def _requeue(self, entry: MarkerEntry, partitions) -> None:
        """Queue again, with the leaders of then, after the retry backoff."""
        self.broker.reactor.callLater(RETRY_BACKOFF_S, self._queue_again, entry, partitions)

    def _queue_again(self, entry: MarkerEntry, partitions, schedule: bool = True) -> None:
        pending = self.pending.get(entry.transactional_id)
        if not self._running or pending is None:
            return
        if pending.coordinator_epoch != entry.coordinator_epoch:
            return   # a retry of an older epoch's marker: the newer epoch's markers are queued

        self.add_txn_markers_to_broker_queue(entry.transactional_id, entry.producer_id,
                                             entry.producer_epoch, entry.commit,
                                             entry.coordinator_epoch, partitions, schedule)


def _marker(entry: MarkerEntry) -> m.WritableTxnMarker:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(entry.partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return m.WritableTxnMarker(
        entry.producer_id, entry.producer_epoch, entry.commit,
        [m.WritableTxnMarkerTopic(topic, partitions) for topic, partitions in by_topic.items()],
        entry.coordinator_epoch)
