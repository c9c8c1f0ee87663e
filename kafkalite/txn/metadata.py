"""The state machine of one transactional id, Kafka 2.8's ``TransactionMetadata.scala``.

Pure: no I/O, no clock (every time comes in as an argument, in ms), no locks (the coordinator
runs on one reactor thread). The coordinator changes a transactional id's state in two steps, as
Kafka does, because every change must be in ``__transaction_state`` before it takes effect:

1. a ``prepare_*`` method checks the change against Kafka's table of valid previous states,
   records the target as ``pending_state`` (which blocks any other change meanwhile) and returns
   the target as an immutable ``TxnTransitMetadata``, which the coordinator writes to the log;
2. once the write is replicated, ``complete_transition(transit)`` checks the transit against the
   current metadata (Kafka's ``completeTransitionTo`` rules, per target state) and applies it.
   If the write fails, the coordinator clears ``pending_state`` itself, as Kafka's does.

A broken rule is a coordinator bug, as in Kafka: ``TxnStateTransitionError`` (an
IllegalStateError) where Kafka throws IllegalStateException, ValueError where it throws
IllegalArgumentException (a negative producer id or epoch). The one answer a client may
provoke -- InitProducerId with an epoch that is neither the current nor the last one (KIP-360) --
raises ``ProducerFencedError``, which Kafka returns as ``Left(Errors.PRODUCER_FENCED)``.

Fields keep Kafka's meaning; ``txn_start_ms`` is -1 when no transaction has started since the
last InitProducerId, ``last_producer_id``/``last_producer_epoch`` are -1 when unknown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from enum import IntEnum

from kafkalite.errors import IllegalStateError, ProducerFencedError
from kafkalite.topic_partition import TopicPartition

__all__ = ["TxnState", "TxnTransitMetadata", "TransactionMetadata", "TxnStateTransitionError",
           "VALID_PREVIOUS_STATES", "is_valid_transition", "is_epoch_exhausted",
           "NO_PRODUCER_ID", "NO_PRODUCER_EPOCH", "MAX_PRODUCER_EPOCH"]

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
#: Java's Short.MaxValue, the largest producer epoch
MAX_PRODUCER_EPOCH = (1 << 15) - 1


class TxnStateTransitionError(IllegalStateError):
    """A state change Kafka's TransactionMetadata refuses (its IllegalStateException)."""


class TxnState(IntEnum):
    """A transaction's state; the value is Kafka's byte id (``TransactionState.byte``), which is
    what ``__transaction_state`` stores."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """Kafka's name of the state: ``PrepareCommit``, ``CompleteAbort``, ..."""
        return _KAFKA_NAMES[self]

    @property
    def is_expiration_allowed(self) -> bool:
        """Whether an idle transactional id in this state may expire (Kafka's
        ``isExpirationAllowed``): no transaction is in flight."""
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

    def __str__(self) -> str:
        return self.kafka_name


_KAFKA_NAMES = {
    TxnState.EMPTY: "Empty",
    TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}

_S = TxnState
#: Kafka's validPreviousStates: the only states each state may be entered from
VALID_PREVIOUS_STATES: dict[TxnState, frozenset[TxnState]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}


def is_valid_transition(old: TxnState, new: TxnState) -> bool:
    return old in VALID_PREVIOUS_STATES[new]


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """Kafka keeps Short.MaxValue for fencing: a client never gets an epoch above MaxValue - 1,
    so the coordinator can always bump once more to fence it."""
    return producer_epoch >= MAX_PRODUCER_EPOCH - 1


@dataclasses.dataclass(frozen=True)
class TxnTransitMetadata:
    """The target of a prepared transition: what is written to ``__transaction_state``.
    (``last_producer_id`` is the producer id before the transition, as in Kafka.)"""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TxnState
    topic_partitions: frozenset[TopicPartition]
    txn_start_ms: int
    txn_last_update_ms: int


@dataclasses.dataclass(eq=False)
class TransactionMetadata:
    """The coordinator's view of one transactional id (mutable; one object per id)."""

    transactional_id: str
    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TxnState
    topic_partitions: set[TopicPartition]
    txn_start_ms: int
    txn_last_update_ms: int
    #: the state a prepared, not yet completed, transition goes to (None: none in flight)
    pending_state: TxnState | None = None
    #: a fence's epoch bump may not have reached the log: the next fence does not bump again
    #: (safe because a failed fence never returns its epoch to a client)
    has_failed_epoch_fence: bool = False

    @classmethod
    def new(cls, transactional_id: str, producer_id: int, producer_epoch: int,
            txn_timeout_ms: int, now_ms: int, state: TxnState = TxnState.EMPTY,
            last_producer_id: int = NO_PRODUCER_ID,
            last_producer_epoch: int = NO_PRODUCER_EPOCH) -> TransactionMetadata:
        """Kafka's ``TransactionMetadata.apply``: no partitions, start and last update = now."""
        return cls(transactional_id, producer_id, last_producer_id, producer_epoch,
                   last_producer_epoch, txn_timeout_ms, state, set(), now_ms, now_ms)

    # --- plain updates ----------------------------------------------------------------------

    def add_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        self.topic_partitions.update(TopicPartition(*tp) for tp in partitions)

    def remove_partition(self, tp: TopicPartition) -> None:
        """A partition's marker is written: it leaves the transaction (only while preparing)."""
        if self.state not in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            raise TxnStateTransitionError(
                f"Transaction metadata's current state is {self.state}, and its pending state is "
                f"{self.pending_state} while trying to remove partitions whose txn marker has been "
                f"sent, this is not expected")
        self.topic_partitions.discard(TopicPartition(*tp))

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (TxnState.ONGOING, TxnState.PREPARE_ABORT, TxnState.PREPARE_COMMIT)

    # --- preparing transitions --------------------------------------------------------------

    def prepare_no_transit(self) -> TxnTransitMetadata:
        """The current metadata as a transit, without a pending state (Kafka: for tests and for
        the timeout path, whose abort then sets the pending state)."""
        return TxnTransitMetadata(self.producer_id, self.last_producer_id, self.producer_epoch,
                                  self.last_producer_epoch, self.txn_timeout_ms, self.state,
                                  frozenset(self.topic_partitions), self.txn_start_ms,
                                  self.txn_last_update_ms)

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        """Bump the epoch to fence the current producer before aborting its transaction."""
        if self.producer_epoch == MAX_PRODUCER_EPOCH:
            raise TxnStateTransitionError(
                "Cannot fence producer with epoch equal to Short.MaxValue since this would "
                "overflow")
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare_transition_to(
            TxnState.PREPARE_EPOCH_FENCE, self.producer_id, bumped, NO_PRODUCER_EPOCH,
            self.txn_timeout_ms, frozenset(self.topic_partitions), self.txn_start_ms,
            self.txn_last_update_ms)

    def prepare_increment_producer_epoch(self, new_txn_timeout_ms: int,
                                         expected_producer_epoch: int | None,
                                         now_ms: int) -> TxnTransitMetadata:
        """InitProducerId on an existing id: to Empty with the next epoch.

        ``expected_producer_epoch`` is the epoch a KIP-360 producer gives (None: a new producer,
        which fences every older one). Raises ProducerFencedError when the given epoch is
        neither the current nor the last one (Kafka's Left(PRODUCER_FENCED)).
        """
        if self.is_producer_epoch_exhausted:
            raise TxnStateTransitionError(
                f"Cannot allocate any more producer epochs for producerId {self.producer_id}")
        bumped = _to_short(self.producer_epoch + 1)
        if expected_producer_epoch is None:
            # a new producer: bump, forget the last epoch (a new producer is -1 -> 0)
            next_epoch, last_epoch = bumped, NO_PRODUCER_EPOCH
        elif (self.producer_epoch == NO_PRODUCER_EPOCH
              or expected_producer_epoch == self.producer_epoch):
            # the producer carries on after an error and nobody else initialized since: bump,
            # remembering the epoch it had so a retry of this call is recognised
            next_epoch, last_epoch = bumped, self.producer_epoch
        elif expected_producer_epoch == self.last_producer_epoch:
            # a retry of a call that succeeded: answer the current epoch, no bump
            next_epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        else:
            raise ProducerFencedError(
                f"Expected producer epoch {expected_producer_epoch} does not match current "
                f"producer epoch {self.producer_epoch} or previous producer epoch "
                f"{self.last_producer_epoch}")
        return self._prepare_transition_to(TxnState.EMPTY, self.producer_id, next_epoch,
                                           last_epoch, new_txn_timeout_ms, frozenset(), -1, now_ms)

    def prepare_producer_id_rotation(self, new_producer_id: int, new_txn_timeout_ms: int,
                                     now_ms: int, record_last_epoch: bool) -> TxnTransitMetadata:
        """A new producer id at epoch 0, when the epochs of the current one are exhausted."""
        if self.has_pending_transaction:
            raise TxnStateTransitionError(
                "Cannot rotate producer ids while a transaction is still pending")
        last_epoch = self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH
        return self._prepare_transition_to(TxnState.EMPTY, new_producer_id, 0, last_epoch,
                                           new_txn_timeout_ms, frozenset(), -1, now_ms)

    def prepare_add_partitions(self, partitions: Iterable[TopicPartition],
                               now_ms: int) -> TxnTransitMetadata:
        """AddPartitionsToTxn / AddOffsetsToTxn: to Ongoing; a new transaction starts now."""
        if self.state in (TxnState.EMPTY, TxnState.COMPLETE_ABORT, TxnState.COMPLETE_COMMIT):
            start = now_ms
        else:
            start = self.txn_start_ms
        union = frozenset(self.topic_partitions) | {TopicPartition(*tp) for tp in partitions}
        return self._prepare_transition_to(TxnState.ONGOING, self.producer_id,
                                           self.producer_epoch, self.last_producer_epoch,
                                           self.txn_timeout_ms, union, start, now_ms)

    def prepare_abort_or_commit(self, new_state: TxnState, now_ms: int) -> TxnTransitMetadata:
        """EndTxn: to PrepareCommit or PrepareAbort."""
        return self._prepare_transition_to(new_state, self.producer_id, self.producer_epoch,
                                           self.last_producer_epoch, self.txn_timeout_ms,
                                           frozenset(self.topic_partitions), self.txn_start_ms,
                                           now_ms)

    def prepare_complete(self, now_ms: int) -> TxnTransitMetadata:
        """Every marker written: to CompleteCommit (from PrepareCommit) or CompleteAbort."""
        new_state = (TxnState.COMPLETE_COMMIT if self.state == TxnState.PREPARE_COMMIT
                     else TxnState.COMPLETE_ABORT)
        # the fence (if any) reached the log with the prepare: the next fence bumps again
        self.has_failed_epoch_fence = False
        return self._prepare_transition_to(new_state, self.producer_id, self.producer_epoch,
                                           self.last_producer_epoch, self.txn_timeout_ms,
                                           frozenset(), self.txn_start_ms, now_ms)

    def prepare_dead(self) -> TxnTransitMetadata:
        """Expiration of an idle id (its tombstone follows)."""
        return self._prepare_transition_to(TxnState.DEAD, self.producer_id, self.producer_epoch,
                                           self.last_producer_epoch, self.txn_timeout_ms,
                                           frozenset(), self.txn_start_ms,
                                           self.txn_last_update_ms)

    def _prepare_transition_to(self, new_state: TxnState, new_producer_id: int, new_epoch: int,
                               new_last_epoch: int, new_txn_timeout_ms: int,
                               new_partitions: frozenset[TopicPartition], new_txn_start_ms: int,
                               now_ms: int) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise TxnStateTransitionError(
                f"Preparing transaction state transition to {new_state} while it already a "
                f"pending state {self.pending_state}")
        if new_producer_id < 0:
            raise ValueError(f"Illegal new producer id {new_producer_id}")
        if new_epoch < 0:
            raise ValueError(f"Illegal new producer epoch {new_epoch}")
        if not is_valid_transition(self.state, new_state):
            raise TxnStateTransitionError(
                f"Preparing transaction state transition to {new_state} failed since the target "
                f"state {new_state} is not a valid previous state of the current state "
                f"{self.state}")
        transit = TxnTransitMetadata(new_producer_id, self.producer_id, new_epoch, new_last_epoch,
                                     new_txn_timeout_ms, new_state, new_partitions,
                                     new_txn_start_ms, now_ms)
        self.pending_state = new_state
        return transit

    # --- completing a transition ------------------------------------------------------------

    def complete_transition(self, transit: TxnTransitMetadata) -> None:
        """Apply a prepared transition once it is in the log (Kafka's completeTransitionTo).

        Valid only when the target is the pending state, the epoch is the same (or, to Empty,
        the next one, or 0 with a new producer id), and the partitions only grow while Ongoing.
        """
        to_state = self.pending_state
        if to_state is None:
            raise TxnStateTransitionError(
                f"TransactionalId {self.transactional_id} completing transaction state "
                f"transition while it does not have a pending state")
        if to_state != transit.state:
            self._fail(transit)
        if to_state == TxnState.EMPTY:          # from InitProducerId
            if ((self.producer_epoch != transit.producer_epoch
                 and not self._valid_producer_epoch_bump(transit))
                    or transit.topic_partitions or transit.txn_start_ms != -1):
                self._fail(transit)
            self.txn_timeout_ms = transit.txn_timeout_ms
            self.producer_epoch = transit.producer_epoch
            self.last_producer_epoch = transit.last_producer_epoch
            self.producer_id = transit.producer_id
            self.last_producer_id = transit.last_producer_id
        elif to_state == TxnState.ONGOING:      # from AddPartitionsToTxn / AddOffsetsToTxn
            if (not self._valid_producer_epoch(transit)
                    or not self.topic_partitions <= transit.topic_partitions
                    or self.txn_timeout_ms != transit.txn_timeout_ms):
                self._fail(transit)
            self.txn_start_ms = transit.txn_start_ms
            self.add_partitions(transit.topic_partitions)
        elif to_state in (TxnState.PREPARE_ABORT, TxnState.PREPARE_COMMIT):   # from EndTxn
            if (not self._valid_producer_epoch(transit)
                    or self.topic_partitions != transit.topic_partitions
                    or self.txn_timeout_ms != transit.txn_timeout_ms
                    or self.txn_start_ms != transit.txn_start_ms):
                self._fail(transit)
        elif to_state in (TxnState.COMPLETE_ABORT, TxnState.COMPLETE_COMMIT):  # markers written
            if (not self._valid_producer_epoch(transit)
                    or self.txn_timeout_ms != transit.txn_timeout_ms
                    or transit.txn_start_ms == -1):
                self._fail(transit)
            self.txn_start_ms = transit.txn_start_ms
            self.topic_partitions.clear()
        elif to_state == TxnState.PREPARE_EPOCH_FENCE:
            # never completed: the coordinator turns the fence into PrepareAbort at once
            self._fail(transit)
        else:                                   # Dead
            raise TxnStateTransitionError(
                f"TransactionalId {self.transactional_id} is trying to complete a transition to "
                f"{to_state}. This means that the transactionalId was being expired, and the only "
                f"acceptable completion of this operation is to remove the transaction metadata "
                f"from the cache, not to persist the {to_state} in the log.")
        self.txn_last_update_ms = transit.txn_last_update_ms
        self.pending_state = None
        self.state = to_state

    def _valid_producer_epoch(self, transit: TxnTransitMetadata) -> bool:
        return (transit.producer_epoch == self.producer_epoch
                and transit.producer_id == self.producer_id)

    def _valid_producer_epoch_bump(self, transit: TxnTransitMetadata) -> bool:
        return (transit.producer_epoch == self.producer_epoch + 1
                or (transit.producer_epoch == 0 and transit.producer_id != self.producer_id))

    def _fail(self, transit: TxnTransitMetadata):
        raise TxnStateTransitionError(
            f"TransactionalId {self.transactional_id} failed transition to state {transit} "
            f"due to unexpected metadata (current: {self})")


def _to_short(value: int) -> int:
    """Java's ``(x).toShort``: wrap to a signed 16-bit value (MaxValue + 1 becomes negative, which
    the transition then refuses as Kafka's does)."""
    return (value + (1 << 15)) % (1 << 16) - (1 << 15)
