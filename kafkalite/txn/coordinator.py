"""The transaction coordinator (Kafka 2.8's ``TransactionCoordinator``): InitProducerId with a
transactional id, AddPartitionsToTxn / AddOffsetsToTxn, EndTxn, and the periodic abort of
timed-out transactions and expiration of idle ids.

Every decision follows ``TransactionCoordinator.scala`` rule for rule and error for error (the
``_`` helpers below name the Scala method they mirror). A decision prepares a transition on the
id's ``TransactionMetadata`` (``txn.metadata``), the state store writes it to
``__transaction_state`` with acks=all and completes it, and only then is the client answered. An
EndTxn answers once PrepareCommit/PrepareAbort is written; the marker channel then writes the
markers and CompleteCommit/CompleteAbort.

Kafka runs each decision under the metadata's lock; here the reactor thread does (nothing
yields between a decision and its prepared transition). Producer ids come from the broker's
ZooKeeper block (``allocate_producer_id``), which may have to claim a new block: a decision
that needs a new id therefore gets it first and then decides, on the state as it is then.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from twisted.internet import defer, task

from kafkalite import errors
from kafkalite.topic_partition import TopicPartition
from kafkalite.txn.markers import TransactionMarkerChannelManager
from kafkalite.txn.metadata import (NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TransactionMetadata,
                                    TxnState, TxnStateTransitionError, is_epoch_exhausted)
from kafkalite.txn.state_store import TransactionStateManager

log = logging.getLogger(__name__)

NONE = 0
INVALID_REQUEST = errors.InvalidRequestError.code
INVALID_TRANSACTION_TIMEOUT = errors.InvalidTransactionTimeoutError.code
CONCURRENT_TRANSACTIONS = errors.ConcurrentTransactionsError.code
PRODUCER_FENCED = errors.ProducerFencedError.code
INVALID_PRODUCER_ID_MAPPING = errors.InvalidProducerIdMappingError.code
INVALID_TXN_STATE = errors.InvalidTxnStateError.code
NOT_COORDINATOR = errors.NotCoordinatorError.code
UNKNOWN_SERVER_ERROR = errors.UnknownServerError.code

_S = TxnState


class InitProducerIdResult(NamedTuple):
    error_code: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


class _NeedProducerId(Exception):
    """The decision needs a new producer id: get one, then decide again."""


class TransactionCoordinator:
    """One per broker. ``broker`` needs what the state store needs, plus ``reactor``,
    ``allocate_producer_id()`` and (for the marker channel) ``security`` and ``config``.
    ``state``, ``markers`` and ``allocate_producer_id`` may be given (tests)."""

    def __init__(self, broker, state: TransactionStateManager | None = None,
                 markers: TransactionMarkerChannelManager | None = None,
                 allocate_producer_id=None):
        self.broker = broker
        self.state = state if state is not None else TransactionStateManager(broker)
        self.markers = markers if markers is not None else TransactionMarkerChannelManager(
            broker, self.state)
        self._allocate = allocate_producer_id or broker.allocate_producer_id
        self._loops: list[task.LoopingCall] = []
        self.active = False

    def now_ms(self) -> int:
        return self.broker.clock_ms()

    # --- life cycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Schedule the timed-out transaction abort and the transactional id expiration (as
        Kafka's ``startup``)."""
        config = self.broker.config
        self._every(self.abort_timed_out_transactions,
                    config.transaction_abort_timed_out_transaction_cleanup_interval_ms)
        self._every(self.state.remove_expired_transactional_ids,
                    config.transaction_remove_expired_transaction_cleanup_interval_ms)
        self.markers.start()
        self.active = True

    def _every(self, fn, interval_ms: int) -> None:
        def run():
            # a failing run is logged; the loop goes on (a LoopingCall stops on a failure)
            d = defer.maybeDeferred(fn)
            d.addErrback(lambda f: log.error("transaction coordinator task %s failed: %s",
                                             fn.__name__, f.getTraceback()))
            return d
        loop = task.LoopingCall(run)
        loop.clock = self.broker.reactor
        loop.start(interval_ms / 1000.0, now=False).addErrback(
            lambda f: log.error("transaction coordinator task %s failed: %s", fn.__name__,
                                f.getTraceback()))
        self._loops.append(loop)

    def stop(self) -> None:
        self.active = False
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self._loops.clear()
        self.state.shutdown()
        self.markers.shutdown()

    # --- __transaction_state leadership ---------------------------------------------------------
    def partition_for(self, transactional_id: str) -> int:
        return self.state.partition_for(transactional_id)

    def on_elected(self, partition: int, coordinator_epoch: int) -> defer.Deferred:
        """Kafka's onElection: drop stale markers, load the partition, resend the markers of
        its Prepare* transactions."""
        log.info("elected transaction coordinator for partition %d at epoch %d", partition,
                 coordinator_epoch)
        self.markers.remove_markers_for_txn_topic_partition(partition)
        return self.state.load_partition(partition, coordinator_epoch,
                                         self.markers.add_txn_markers_to_send)

    def on_resigned(self, partition: int, coordinator_epoch: int | None = None) -> None:
        log.info("resigned as transaction coordinator for partition %d (epoch %s)", partition,
                 coordinator_epoch)
        self.state.remove_partition(partition, coordinator_epoch)
        self.markers.remove_markers_for_txn_topic_partition(partition)

    # --- InitProducerId -------------------------------------------------------------------------
    def init_producer_id(self, transactional_id: str | None, transaction_timeout_ms: int,
                         expected: tuple[int, int] | None = None) -> defer.Deferred:
        """Kafka's handleInitProducerId; ``expected`` is KIP-360's (producer id, epoch). Fires
        with an InitProducerIdResult."""
        return defer.ensureDeferred(self._init_producer_id(transactional_id,
                                                           transaction_timeout_ms, expected))

    async def _init_producer_id(self, transactional_id, timeout_ms, expected):
        if transactional_id is None:
            return InitProducerIdResult(NONE, await self._allocate(), 0)
        if transactional_id == "":
            return InitProducerIdResult(INVALID_REQUEST)
        if not self.state.validate_transaction_timeout_ms(timeout_ms):
            return InitProducerIdResult(INVALID_TRANSACTION_TIMEOUT)
        new_producer_id = None
        while True:
            code, found = self.state.get_transaction_state(transactional_id)
            if code:
                return InitProducerIdResult(code)
            if found is None:
                if new_producer_id is None:
                    new_producer_id = await self._allocate()
                    continue
                created = TransactionMetadata.new(transactional_id, new_producer_id,
                                                  NO_PRODUCER_EPOCH, timeout_ms, self.now_ms())
                new_producer_id = None
                code, found = self.state.put_transaction_state_if_not_exists(created)
                if code:
                    return InitProducerIdResult(code)
            try:
                decided = self._prepare_init_producer_id_transit(
                    transactional_id, timeout_ms, found.metadata, expected, new_producer_id)
            except _NeedProducerId:
                new_producer_id = await self._allocate()
                continue
            break
        if isinstance(decided, int):
            return InitProducerIdResult(decided)
        transit, coordinator_epoch = decided, found.coordinator_epoch
        if transit.state == _S.PREPARE_EPOCH_FENCE:
            # abort the ongoing transaction of the fenced epoch; the client retries (and gets
            # the epoch bumped once more)
            code = await self._end_transaction(transactional_id, transit.producer_id,
                                               transit.producer_epoch, False, False)
            return InitProducerIdResult(code or CONCURRENT_TRANSACTIONS)
        code = await self.state.append_transaction_to_log(transactional_id, coordinator_epoch,
                                                          transit)
        if code:
            log.info("returning error %d for %s's InitProducerId", code, transactional_id)
            return InitProducerIdResult(code)
        log.info("initialized transactional id %s with producer id %d and epoch %d on "
                 "partition %d", transactional_id, transit.producer_id, transit.producer_epoch,
                 self.partition_for(transactional_id))
        return InitProducerIdResult(NONE, transit.producer_id, transit.producer_epoch)

    def _prepare_init_producer_id_transit(self, transactional_id, timeout_ms,
                                          metadata: TransactionMetadata, expected,
                                          new_producer_id):
        """Kafka's prepareInitProducerIdTransit: a transit, or an error code."""
        def valid_producer_id(producer_id, epoch):
            return (metadata.producer_epoch == NO_PRODUCER_EPOCH
                    or producer_id == metadata.producer_id
                    or (producer_id == metadata.last_producer_id
                        and is_epoch_exhausted(epoch)))

        if metadata.pending_transition_in_progress:
            return CONCURRENT_TRANSACTIONS
        if expected is not None and not valid_producer_id(*expected):
            return PRODUCER_FENCED
        state = metadata.state
        if state in (_S.PREPARE_ABORT, _S.PREPARE_COMMIT):
            return CONCURRENT_TRANSACTIONS
        if state in (_S.COMPLETE_ABORT, _S.COMPLETE_COMMIT, _S.EMPTY):
            now = self.now_ms()
            if metadata.is_producer_epoch_exhausted and (
                    expected is None or expected[1] == metadata.producer_epoch):
                if new_producer_id is None:
                    raise _NeedProducerId()
                return metadata.prepare_producer_id_rotation(new_producer_id, timeout_ms, now,
                                                             expected is not None)
            try:
                return metadata.prepare_increment_producer_epoch(
                    timeout_ms, None if expected is None else expected[1], now)
            except errors.ProducerFencedError:
                return PRODUCER_FENCED
        if state == _S.ONGOING:
            return metadata.prepare_fence_producer_epoch()
        raise TxnStateTransitionError(
            f"Found transactionalId {transactional_id} with state {state}. This is illegal as "
            f"we should never have transitioned to this state.")

    # --- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------------
    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions) -> defer.Deferred:
        """Kafka's handleAddPartitionsToTransaction; fires with an error code."""
        if not transactional_id:
            return defer.succeed(INVALID_REQUEST)
        partitions = {TopicPartition(*tp) for tp in partitions}
        code, found = self.state.get_transaction_state(transactional_id)
        if code:
            return defer.succeed(code)
        if found is None:
            return defer.succeed(INVALID_PRODUCER_ID_MAPPING)
        metadata = found.metadata
        if metadata.producer_id != producer_id:
            return defer.succeed(INVALID_PRODUCER_ID_MAPPING)
        if metadata.producer_epoch != producer_epoch:
            return defer.succeed(PRODUCER_FENCED)
        if metadata.pending_transition_in_progress:
            return defer.succeed(CONCURRENT_TRANSACTIONS)
        if metadata.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            return defer.succeed(CONCURRENT_TRANSACTIONS)
        if metadata.state == _S.ONGOING and partitions <= metadata.topic_partitions:
            return defer.succeed(NONE)     # already in the transaction
        transit = metadata.prepare_add_partitions(partitions, self.now_ms())
        return self.state.append_transaction_to_log(transactional_id, found.coordinator_epoch,
                                                    transit)

    # --- EndTxn ---------------------------------------------------------------------------------
    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int,
                commit: bool) -> defer.Deferred:
        """Kafka's handleEndTransaction; fires with an error code (0 once PrepareCommit or
        PrepareAbort is written: the markers follow)."""
        return self._end_transaction(transactional_id, producer_id, producer_epoch, commit,
                                     True)

    def _end_transaction(self, transactional_id, producer_id, producer_epoch, commit,
                         from_client) -> defer.Deferred:
        if not transactional_id:
            return defer.succeed(INVALID_REQUEST)
        code, found = self.state.get_transaction_state(transactional_id)
        if code:
            return defer.succeed(code)
        if found is None:
            return defer.succeed(INVALID_PRODUCER_ID_MAPPING)
        coordinator_epoch, metadata = found
        is_epoch_fence = False
        if metadata.producer_id != producer_id:
            return defer.succeed(INVALID_PRODUCER_ID_MAPPING)
        # clients must give the current epoch; the coordinator's own aborts bump it
        if ((from_client and producer_epoch != metadata.producer_epoch)
                or producer_epoch < metadata.producer_epoch):
            return defer.succeed(PRODUCER_FENCED)
        if (metadata.pending_transition_in_progress
                and metadata.pending_state != _S.PREPARE_EPOCH_FENCE):
            return defer.succeed(CONCURRENT_TRANSACTIONS)
        state = metadata.state
        if state == _S.ONGOING:
            next_state = _S.PREPARE_COMMIT if commit else _S.PREPARE_ABORT
            if next_state == _S.PREPARE_ABORT and metadata.pending_state == _S.PREPARE_EPOCH_FENCE:
                # the fence becomes this abort: clear it and bump the epoch in the metadata
                is_epoch_fence = True
                metadata.pending_state = None
                metadata.producer_epoch = producer_epoch
                metadata.last_producer_epoch = NO_PRODUCER_EPOCH
            transit = metadata.prepare_abort_or_commit(next_state, self.now_ms())
        elif state == _S.COMPLETE_COMMIT:
            return defer.succeed(NONE if commit else self._invalid_state(transactional_id,
                                                                          state, commit))
        elif state == _S.COMPLETE_ABORT:
            return defer.succeed(self._invalid_state(transactional_id, state, commit)
                                 if commit else NONE)
        elif state == _S.PREPARE_COMMIT:
            return defer.succeed(CONCURRENT_TRANSACTIONS if commit
                                 else self._invalid_state(transactional_id, state, commit))
        elif state == _S.PREPARE_ABORT:
            return defer.succeed(self._invalid_state(transactional_id, state, commit)
                                 if commit else CONCURRENT_TRANSACTIONS)
        elif state == _S.EMPTY:
            return defer.succeed(self._invalid_state(transactional_id, state, commit))
        else:
            raise TxnStateTransitionError(
                f"Found transactionalId {transactional_id} with state {state}. This is illegal "
                f"as we should never have transitioned to this state.")
        d = self.state.append_transaction_to_log(transactional_id, coordinator_epoch, transit)
        return d.addCallback(self._prepare_written, transactional_id, producer_id,
                             producer_epoch, commit, coordinator_epoch, is_epoch_fence)

    def _prepare_written(self, code, transactional_id, producer_id, producer_epoch, commit,
                         coordinator_epoch, is_epoch_fence) -> int:
        """Kafka's sendTxnMarkersCallback: PrepareX is in the log; hand the markers over."""
        if code:
            log.info("not sending %s's markers: writing Prepare%s failed with error %d",
                     transactional_id, "Commit" if commit else "Abort", code)
            if is_epoch_fence:
                lookup, found = self.state.get_transaction_state(transactional_id)
                if not lookup and found is not None and (
                        found.coordinator_epoch == coordinator_epoch):
                    found.metadata.has_failed_epoch_fence = True
                    log.warning("the epoch fence of %s was not written (error %d); its epoch "
                                "was bumped to %d without telling the client",
                                transactional_id, code, producer_epoch)
            return code
        lookup, found = self.state.get_transaction_state(transactional_id)
        if lookup:
            return lookup
        if found is None:
            raise TxnStateTransitionError(
                f"The coordinator still owns the transaction partition for {transactional_id}, "
                f"but there is no metadata in the cache; this is not expected")
        if found.coordinator_epoch != coordinator_epoch:
            return NOT_COORDINATOR
        metadata = found.metadata
        if metadata.producer_id != producer_id:
            return INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != producer_epoch:
            return PRODUCER_FENCED
        if metadata.pending_transition_in_progress:
            return CONCURRENT_TRANSACTIONS
        expected = _S.PREPARE_COMMIT if commit else _S.PREPARE_ABORT
        if metadata.state != expected:
            return self._invalid_state(transactional_id, metadata.state, commit)
        complete = metadata.prepare_complete(self.now_ms())
        self.markers.add_txn_markers_to_send(coordinator_epoch, commit, metadata, complete)
        return NONE

    @staticmethod
    def _invalid_state(transactional_id, state, commit) -> int:
        log.debug("transactional id %s is in state %s, but received transaction marker "
                  "result %s", transactional_id, state, "COMMIT" if commit else "ABORT")
        return INVALID_TXN_STATE

    # --- timeouts -------------------------------------------------------------------------------
    def abort_timed_out_transactions(self) -> defer.Deferred:
        """Kafka's abortTimedOutTransactions: fence (bump the epoch of) and abort each Ongoing
        transaction older than its timeout. Fires once every abort is answered."""
        aborts = []
        for timed_out in self.state.timed_out_transactions():
            code, found = self.state.get_transaction_state(timed_out.transactional_id)
            if code or found is None:
                continue
            metadata = found.metadata
            if metadata.producer_id != timed_out.producer_id:
                log.error("found producer id %d instead of %d when expiring transactional id "
                          "%s", metadata.producer_id, timed_out.producer_id,
                          timed_out.transactional_id)
                continue
            if metadata.pending_transition_in_progress:
                continue
            try:
                fence = metadata.prepare_fence_producer_epoch()
            except TxnStateTransitionError as exc:
                log.error("cannot abort the timed-out transaction of %s: %s",
                          timed_out.transactional_id, exc)
                continue
            log.info("aborting the transaction of %s (producer id %d, epoch %d): older than "
                     "its timeout of %d ms", timed_out.transactional_id, metadata.producer_id,
                     metadata.producer_epoch, metadata.txn_timeout_ms)
            d = defer.maybeDeferred(self._end_transaction, metadata.transactional_id,
                                    fence.producer_id, fence.producer_epoch, False, False)
            aborts.append(d.addCallback(self._timed_out_aborted, timed_out))
        return defer.DeferredList(aborts, consumeErrors=True)

    @staticmethod
    def _timed_out_aborted(code, timed_out) -> int:
        if code == NONE:
            log.info("completed the rollback of %s's transaction after its timeout",
                     timed_out.transactional_id)
        elif code in (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS):
            log.debug("rollback of %s's transaction cancelled (error %d)",
                      timed_out.transactional_id, code)
        else:
            log.warning("rollback of %s's transaction failed (error %d)",
                        timed_out.transactional_id, code)
        return code
