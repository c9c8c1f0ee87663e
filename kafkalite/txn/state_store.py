"""The transaction coordinator's state: ``__transaction_state`` and the metadata cache of the
partitions this broker leads (Kafka 2.8's ``TransactionStateManager``).

* Placement: a transactional id lives in partition ``abs(javaHash(id)) % partitions``, and its
  coordinator is that partition's leader.
* Per led partition: the coordinator epoch (the partition's leader epoch at election) and the
  ``TransactionMetadata`` of each id. While a partition loads, its ids are answered
  COORDINATOR_LOAD_IN_PROGRESS; a partition this broker does not lead, NOT_COORDINATOR.
* Loading (on election) reads the partition from its log start, keeps the newest value per id
  (a tombstone removes it) and then hands every transaction found in PrepareCommit or
  PrepareAbort to ``send_markers``, so a new coordinator finishes what the old one began.
* ``append_transaction_to_log`` writes one prepared transition with acks=all and completes it
  in the cache once replicated, mapping produce errors to the coordinator's answers as Kafka's
  ``appendTransactionToLog`` does.
* ``remove_expired_transactional_ids`` writes tombstones for idle ids
  (``transactional.id.expiration.ms``); ``timed_out_transactions`` lists Ongoing transactions
  older than their timeout. The coordinator runs both periodically.

Everything runs on the reactor thread, so Kafka's locks have no counterpart here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from twisted.internet import defer
from twisted.python.failure import Failure

from kafkalite import errors
from kafkalite.coordinator.internal_topic import InternalTopicLog, TopicSettings
from kafkalite.txn import log_records
from kafkalite.txn.metadata import TransactionMetadata, TxnState, TxnTransitMetadata

log = logging.getLogger(__name__)

TRANSACTION_STATE_TOPIC = "__transaction_state"

TXN_SETTINGS = TopicSettings(
    topic=TRANSACTION_STATE_TOPIC, num_partitions="transaction_state_log_num_partitions",
    replication_factor="transaction_state_log_replication_factor",
    segment_bytes="transaction_state_log_segment_bytes",
    load_buffer_size="transaction_state_log_load_buffer_size",
    required_acks=None,                 # Kafka's TransactionLog.EnforcedRequiredAcks: -1
    timeout_ms="request_timeout_ms",
    replication_factor_name="transaction.state.log.replication.factor",
    min_isr="transaction_state_log_min_isr",
    # Kafka's TransactionStateManager.transactionTopicConfigs
    topic_configs=(("compression.type", "uncompressed"),
                   ("unclean.leader.election.enable", "false")))

NONE = 0
NOT_COORDINATOR = errors.NotCoordinatorError.code
LOAD_IN_PROGRESS = errors.CoordinatorLoadInProgressError.code
NOT_AVAILABLE = errors.CoordinatorNotAvailableError.code

# appendTransactionToLog's mapping of produce errors to the coordinator's answers
_APPEND_ERRORS = {
    errors.UnknownTopicOrPartitionError.code: NOT_AVAILABLE,
    errors.NotEnoughReplicasError.code: NOT_AVAILABLE,
    errors.NotEnoughReplicasAfterAppendError.code: NOT_AVAILABLE,
    errors.RequestTimedOutError.code: NOT_AVAILABLE,
    errors.NotLeaderForPartitionError.code: NOT_COORDINATOR,
    errors.KafkaStorageError.code: NOT_COORDINATOR,
    errors.MessageTooLargeError.code: errors.UnknownServerError.code,
    errors.RecordListTooLargeError.code: errors.UnknownServerError.code,
}


class EpochAndMetadata(NamedTuple):
    coordinator_epoch: int
    metadata: TransactionMetadata


class TimedOutTxn(NamedTuple):
    transactional_id: str
    producer_id: int
    producer_epoch: int


class PendingCompletion(NamedTuple):
    """A transaction loaded in PrepareCommit/PrepareAbort: its markers must be (re)sent."""
    transactional_id: str
    coordinator_epoch: int
    commit: bool
    metadata: TransactionMetadata
    transit: TxnTransitMetadata


@dataclass
class _CacheEntry:
    coordinator_epoch: int
    metadata: dict[str, TransactionMetadata] = field(default_factory=dict)


SendMarkers = Callable[[int, bool, TransactionMetadata, TxnTransitMetadata], None]


class TransactionStateManager:
    """``broker`` needs ``config``, ``reactor``, ``clock_ms()``, ``replica_manager``,
    ``metadata_cache`` and ``deferred_zk`` (those of ``InternalTopicLog``). ``topic_log`` may be
    given (tests)."""

    def __init__(self, broker, topic_log=None):
        self.broker = broker
        self.topic_log = topic_log if topic_log is not None else InternalTopicLog(
            broker, TXN_SETTINGS)
        self.loading: dict[int, int] = {}              # partition -> coordinator epoch
        self.cache: dict[int, _CacheEntry] = {}
        self.shutting_down = False

    @property
    def config(self):
        return self.broker.config

    def now_ms(self) -> int:
        return self.broker.clock_ms()

    # --- placement and lookups ------------------------------------------------------------------
    def partition_for(self, transactional_id: str) -> int:
        return self.topic_log.partition_for(transactional_id)

    def validate_transaction_timeout_ms(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.config.transaction_max_timeout_ms

    def get_transaction_state(self, transactional_id: str
                              ) -> tuple[int, EpochAndMetadata | None]:
        """(0, the id's coordinator epoch and metadata or None when unknown), or
        (COORDINATOR_LOAD_IN_PROGRESS | NOT_COORDINATOR, None)."""
        return self._get_or_add(transactional_id, None)

    def put_transaction_state_if_not_exists(self, metadata: TransactionMetadata
                                            ) -> tuple[int, EpochAndMetadata | None]:
        """As get_transaction_state, adding ``metadata`` when the id is unknown."""
        return self._get_or_add(metadata.transactional_id, metadata)

    def _get_or_add(self, transactional_id, created):
        partition = self.partition_for(transactional_id)
        if partition in self.loading:
            return LOAD_IN_PROGRESS, None
        entry = self.cache.get(partition)
        if entry is None:
            return NOT_COORDINATOR, None
        metadata = entry.metadata.get(transactional_id)
        if metadata is None and created is not None:
            metadata = entry.metadata[transactional_id] = created
        if metadata is None:
            return NONE, None
        return NONE, EpochAndMetadata(entry.coordinator_epoch, metadata)

    def owned_partitions(self) -> dict[int, int]:
        """{partition: coordinator epoch} of the loaded partitions."""
        return {p: e.coordinator_epoch for p, e in self.cache.items()}

    def all_transactions(self):
        """(partition, coordinator epoch, metadata) of every cached transactional id."""
        for partition, entry in self.cache.items():
            for metadata in entry.metadata.values():
                yield partition, entry.coordinator_epoch, metadata

    # --- timeouts and expiration ----------------------------------------------------------------
    def timed_out_transactions(self) -> list[TimedOutTxn]:
        """Ongoing transactions, with no transition in flight, begun longer ago than their
        timeout (Kafka's ``timedOutTransactions``)."""
        now = self.now_ms()
        return [TimedOutTxn(m.transactional_id, m.producer_id, m.producer_epoch)
                for _, _, m in self.all_transactions()
                if m.pending_state is None and m.state == TxnState.ONGOING
                and m.txn_start_ms + m.txn_timeout_ms < now]

    def remove_expired_transactional_ids(self) -> defer.Deferred:
        """Tombstones for the ids whose state allows expiration and whose last update is older
        than ``transactional.id.expiration.ms``; each is removed from the cache once its
        tombstone is replicated. Fires when every partition's write is done."""
        now = self.now_ms()
        expiration_ms = self.config.transactional_id_expiration_ms
        writes = []
        for partition, entry in list(self.cache.items()):
            expired = []
            for metadata in entry.metadata.values():
                if (metadata.pending_state is None and metadata.state.is_expiration_allowed
                        and metadata.txn_last_update_ms <= now - expiration_ms):
                    expired.append((metadata, metadata.prepare_dead()))
            if expired:
                writes.append(self._write_tombstones(partition, entry.coordinator_epoch,
                                                     expired))
        return defer.DeferredList(writes, consumeErrors=True)

    def _write_tombstones(self, partition, coordinator_epoch, expired) -> defer.Deferred:
        records = [(log_records.key(m.transactional_id), None) for m, _ in expired]
        d = defer.maybeDeferred(self.topic_log.append, partition, records)
        d.addErrback(_error_code)

        def written(code):
            entry = self.cache.get(partition)
            for metadata, transit in expired:
                current = entry.metadata.get(metadata.transactional_id) if entry else None
                if current is not metadata:
                    continue
                if (code == NONE and entry.coordinator_epoch == coordinator_epoch
                        and metadata.pending_state == TxnState.DEAD
                        and metadata.producer_epoch == transit.producer_epoch):
                    del entry.metadata[metadata.transactional_id]
                    log.info("transactional id %s expired (idle since %d)",
                             metadata.transactional_id, metadata.txn_last_update_ms)
                else:
                    log.warning("failed to remove expired transactional id %s: tombstone "
                                "append error %d", metadata.transactional_id, code)
                    metadata.pending_state = None
        return d.addCallback(written)

    # --- loading and unloading ------------------------------------------------------------------
    def load_partition(self, partition: int, coordinator_epoch: int,
                       send_markers: SendMarkers) -> defer.Deferred:
        """Kafka's ``loadTransactionsForTxnTopicPartition``: mark the partition loading, read
        it, install the cache and resend the markers of every Prepare* transaction. Fires with
        the number of ids loaded (None when the load was superseded or failed)."""
        self.loading[partition] = coordinator_epoch
        loaded: dict[str, TransactionMetadata] = {}

        def apply_batch(header, records):
            for record in records:
                try:
                    transactional_id, entry = log_records.parse(record.key, record.value)
                except errors.CorruptRecordError as exc:
                    log.error("%s-%d: skipping the undecodable record at offset %d: %s",
                              TRANSACTION_STATE_TOPIC, partition, record.offset, exc)
                    continue
                if entry is None:
                    loaded.pop(transactional_id, None)
                else:
                    loaded[transactional_id] = entry.to_metadata(transactional_id)

        d = self.topic_log.read(partition, apply_batch)

        def done(position):
            if self.loading.get(partition) != coordinator_epoch or self.shutting_down:
                return None      # resigned (or re-elected) meanwhile: that one wins
            return self._install(partition, coordinator_epoch, loaded, send_markers, position)

        def failed(failure):
            if self.loading.get(partition) == coordinator_epoch:
                del self.loading[partition]
            log.warning("loading %s-%d at epoch %d failed: %s", TRANSACTION_STATE_TOPIC,
                        partition, coordinator_epoch, failure.getErrorMessage())
            return None
        return d.addCallbacks(done, failed)

    def _install(self, partition, coordinator_epoch, loaded, send_markers, position) -> int:
        if partition in self.cache:
            log.warning("replacing the cached transactions of %s-%d while loading epoch %d",
                        TRANSACTION_STATE_TOPIC, partition, coordinator_epoch)
        self.cache[partition] = _CacheEntry(coordinator_epoch, loaded)
        pending = []
        now = self.now_ms()
        for transactional_id, metadata in loaded.items():
            if metadata.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                pending.append(PendingCompletion(
                    transactional_id, coordinator_epoch,
                    metadata.state == TxnState.PREPARE_COMMIT, metadata,
                    metadata.prepare_complete(now)))
        del self.loading[partition]
        log.info("loaded %d transactional id(s) from %s-%d up to offset %d at coordinator "
                 "epoch %d; %d transaction(s) to complete", len(loaded),
                 TRANSACTION_STATE_TOPIC, partition, position, coordinator_epoch, len(pending))
        for item in pending:
            send_markers(item.coordinator_epoch, item.commit, item.metadata, item.transit)
        return len(loaded)

    def remove_partition(self, partition: int, coordinator_epoch: int | None = None) -> None:
        """Unload a partition this broker no longer leads (a load of it at this or an older
        epoch is abandoned)."""
        loading = self.loading.get(partition)
        if loading is not None and (coordinator_epoch is None or loading <= coordinator_epoch):
            del self.loading[partition]
        entry = self.cache.pop(partition, None)
        if entry is not None:
            log.info("unloaded %d transactional id(s) of %s-%d (coordinator epoch %d)",
                     len(entry.metadata), TRANSACTION_STATE_TOPIC, partition,
                     entry.coordinator_epoch)

    def shutdown(self) -> None:
        self.shutting_down = True
        self.loading.clear()
        self.cache.clear()

    # --- writing transitions --------------------------------------------------------------------
    def append_transaction_to_log(self, transactional_id: str, coordinator_epoch: int,
                                  transit: TxnTransitMetadata,
                                  retry_on_error: Callable[[int], bool] = lambda code: False
                                  ) -> defer.Deferred:
        """Write ``transit`` for the id with acks=all; on success complete the transition in
        the cache (unless the coordinator epoch moved: NOT_COORDINATOR). On failure clear the
        pending state (unless ``retry_on_error(code)``: the caller retries). Fires with the
        error code (0 on success)."""
        code, found = self.get_transaction_state(transactional_id)
        if code:
            return defer.succeed(code)
        if found is None or found.coordinator_epoch != coordinator_epoch:
            return defer.succeed(NOT_COORDINATOR)
        try:
            record = (log_records.key(transactional_id),
                      log_records.value(log_records.TxnLogEntry.from_transit(transit)))
        except ValueError as exc:
            log.error("cannot write %s's transition %s: %s", transactional_id, transit, exc)
            return defer.succeed(errors.UnknownServerError.code)
        # Kafka waits up to the transaction's timeout for a transition, request.timeout.ms
        # for tombstones
        d = defer.maybeDeferred(self.topic_log.append, self.partition_for(transactional_id),
                                [record], timeout_ms=transit.txn_timeout_ms)
        d.addErrback(_error_code)
        return d.addCallback(self._appended, transactional_id, coordinator_epoch, transit,
                             retry_on_error)

    def _appended(self, code, transactional_id, coordinator_epoch, transit, retry_on_error):
        code = _APPEND_ERRORS.get(code, code)
        lookup, found = self.get_transaction_state(transactional_id)
        if code == NONE:
            if lookup:
                return lookup
            if found is None or found.coordinator_epoch != coordinator_epoch:
                log.info("%s: the coordinator epoch moved from %d while writing %s",
                         transactional_id, coordinator_epoch, transit.state)
                return NOT_COORDINATOR
            found.metadata.complete_transition(transit)
            return NONE
        if not lookup and found is not None and found.coordinator_epoch == coordinator_epoch:
            if not retry_on_error(code):
                log.info("%s: writing the transition to %s failed with error %d; the pending "
                         "state is reset", transactional_id, transit.state, code)
                found.metadata.pending_state = None
        return code


def _error_code(failure: Failure) -> int:
    """A failed append (an exception rather than an error code) as an error code."""
    exc = failure.value
    if isinstance(exc, errors.KafkaError):
        return exc.code
    log.error("append to %s failed: %s", TRANSACTION_STATE_TOPIC, failure.getTraceback())
    return errors.UnknownServerError.code
