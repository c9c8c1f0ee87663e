"""The transactional producer's state machine: Java's ``TransactionManager`` (Kafka 2.8), without
its I/O.

Pure and thread-safe (one lock): the user's thread moves it (``init_transactions``,
``begin_transaction``, commit, abort) and the producer's sender thread reads it (may this
partition's batch go out yet?) and reports to it (partitions added, a batch failed). The requests
themselves are ``txn_coordinator``'s; this module decides what their answers mean
(``response_action``), so the rules can be tested without a broker.

States and transitions are Java's (``isTransitionValid``): UNINITIALIZED -> INITIALIZING -> READY
-> IN_TRANSACTION -> COMMITTING_TRANSACTION / ABORTING_TRANSACTION -> READY, with
ABORTABLE_ERROR (only an abort leaves it) and FATAL_ERROR (reachable from anywhere, left by
nothing: the producer can only be closed). An abort after an error that left the sequence
numbers unusable bumps the epoch (KIP-360: InitProducerId with the current id and epoch), which is
why ABORTING_TRANSACTION may go back to INITIALIZING.

A partition must be in the transaction before the first batch to it is sent: ``send()`` notes it
(``maybe_add_partition``), the sender adds it with AddPartitionsToTxn (``take_partitions_to_add``
/ ``partitions_added``) and sends its batches once ``is_send_allowed``.
"""

from __future__ import annotations

import threading

from kafkalite import errors
from kafkalite.errors import IllegalStateError, KafkaError

__all__ = [
    "UNINITIALIZED", "INITIALIZING", "READY", "IN_TRANSACTION", "COMMITTING_TRANSACTION",
    "ABORTING_TRANSACTION", "ABORTABLE_ERROR", "FATAL_ERROR", "TransactionManager",
    "TransactionAbortedError", "response_action", "OK", "RETRY", "LOOKUP", "FATAL", "ABORTABLE",
    "ABORTABLE_IF_POSSIBLE", "IGNORE",
]

UNINITIALIZED = "UNINITIALIZED"
INITIALIZING = "INITIALIZING"
READY = "READY"
IN_TRANSACTION = "IN_TRANSACTION"
COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
ABORTABLE_ERROR = "ABORTABLE_ERROR"
FATAL_ERROR = "FATAL_ERROR"

# target -> the states it may be reached from (Java's State.isTransitionValid; FATAL_ERROR from
# any state)
_SOURCES = {
    UNINITIALIZED: {READY},
    INITIALIZING: {UNINITIALIZED, ABORTING_TRANSACTION},
    READY: {INITIALIZING, COMMITTING_TRANSACTION, ABORTING_TRANSACTION},
    IN_TRANSACTION: {READY},
    COMMITTING_TRANSACTION: {IN_TRANSACTION},
    ABORTING_TRANSACTION: {IN_TRANSACTION, ABORTABLE_ERROR},
    ABORTABLE_ERROR: {IN_TRANSACTION, COMMITTING_TRANSACTION, ABORTABLE_ERROR},
}


class TransactionAbortedError(KafkaError):
    """A record of a transaction that was aborted before the record was sent (Java's
    TransactionAbortedException): client-side, never on the wire."""

    name = "TRANSACTION_ABORTED"
    description = "Failing batch since transaction was aborted"


# --- what an answer means -------------------------------------------------------------------
OK = "ok"
RETRY = "retry"                           # the same request again after the backoff
LOOKUP = "lookup"                         # find the coordinator again, then retry
FATAL = "fatal"                           # FATAL_ERROR: close the producer
ABORTABLE = "abortable"                   # ABORTABLE_ERROR: the user must abort
ABORTABLE_IF_POSSIBLE = "abortable_if_possible"   # abortable with an epoch bump (KIP-360)
IGNORE = "ignore"                         # OPERATION_NOT_ATTEMPTED: another partition failed

_FENCED = {errors.InvalidProducerEpochError.code, errors.ProducerFencedError.code}
_GONE = {errors.CoordinatorNotAvailableError.code, errors.NotCoordinatorError.code}
_LOADING = {errors.CoordinatorLoadInProgressError.code, errors.ConcurrentTransactionsError.code}
_PID_LOST = {errors.UnknownProducerIdError.code, errors.InvalidProducerIdMappingError.code}

# Kafka 2.8's TransactionManager handlers, answer by answer (anything not listed is fatal)
_ACTIONS: dict[str, dict[int, str]] = {
    "InitProducerId": {
        **{c: LOOKUP for c in _GONE}, **{c: RETRY for c in _LOADING},
        errors.TransactionalIdAuthorizationFailedError.code: FATAL,
        errors.ClusterAuthorizationFailedError.code: FATAL,
    },
    "AddPartitionsToTxn": {
        **{c: LOOKUP for c in _GONE}, **{c: RETRY for c in _LOADING},
        errors.UnknownTopicOrPartitionError.code: RETRY,
        errors.TopicAuthorizationFailedError.code: ABORTABLE,
        errors.OperationNotAttemptedError.code: IGNORE,
        **{c: ABORTABLE_IF_POSSIBLE for c in _PID_LOST},
    },
    "AddOffsetsToTxn": {
        **{c: LOOKUP for c in _GONE}, **{c: RETRY for c in _LOADING},
        errors.GroupAuthorizationFailedError.code: ABORTABLE,
        **{c: ABORTABLE_IF_POSSIBLE for c in _PID_LOST},
    },
    "EndTxn": {
        **{c: LOOKUP for c in _GONE}, **{c: RETRY for c in _LOADING},
        **{c: ABORTABLE_IF_POSSIBLE for c in _PID_LOST},
    },
    "TxnOffsetCommit": {
        **{c: LOOKUP for c in _GONE}, errors.RequestTimedOutError.code: LOOKUP,
        errors.UnknownTopicOrPartitionError.code: RETRY,
        errors.CoordinatorLoadInProgressError.code: RETRY,
        errors.GroupAuthorizationFailedError.code: ABORTABLE,
        errors.FencedInstanceIdError.code: ABORTABLE,
        errors.UnknownMemberIdError.code: ABORTABLE,
        errors.IllegalGenerationError.code: ABORTABLE,
    },
    "FindCoordinator": {
        errors.CoordinatorNotAvailableError.code: RETRY,
        errors.GroupAuthorizationFailedError.code: ABORTABLE,
    },
}


def response_action(api: str, code: int) -> str:
    """What Kafka 2.8's Java producer does with error ``code`` answered to ``api`` (one of
    ``_ACTIONS``' names): OK, RETRY, LOOKUP, FATAL, ABORTABLE, ABORTABLE_IF_POSSIBLE or IGNORE.
    A fenced producer (INVALID_PRODUCER_EPOCH, PRODUCER_FENCED) is always FATAL."""
    if code == 0:
        return OK
    if code in _FENCED:
        return FATAL
    return _ACTIONS[api].get(code, FATAL)


def error_for(code: int, what: str) -> KafkaError:
    """The exception a failed transactional request raises: a fenced producer's is
    ProducerFencedError (INVALID_PRODUCER_EPOCH from an older coordinator included, as Java)."""
    if code in _FENCED:
        return errors.ProducerFencedError(
            f"{what}: there is a newer producer with the same transactional id")
    exc = errors.for_code(code)
    return errors.for_code(code, f"{what}: {exc.description}")


class TransactionManager:
    """The state of one transactional producer; see the module doc."""

    def __init__(self, transactional_id: str, transaction_timeout_ms: int = 60000):
        if not isinstance(transactional_id, str) or not transactional_id:
            raise errors.ConfigError("transactional_id must be a non-empty string")
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self._lock = threading.RLock()
        self.state = UNINITIALIZED
        self.last_error: KafkaError | None = None
        self.producer_id = -1
        self.producer_epoch = -1
        self.epoch_bump_required = False
        self.transaction_started = False   # something (data or offsets) was added
        self.added: set = set()            # partitions in the transaction (sendable)
        self._new: set = set()             # noted by send(), not yet asked for
        self._pending: set = set()         # being asked for (AddPartitionsToTxn)

    # --- transitions ---------------------------------------------------------------------------
    def transition_to(self, target: str, error: KafkaError | None = None) -> None:
        with self._lock:
            if target != FATAL_ERROR and self.state not in _SOURCES[target]:
                raise IllegalStateError(
                    f"TransactionalId {self.transactional_id}: invalid transition attempted "
                    f"from state {self.state} to state {target}")
            if target in (FATAL_ERROR, ABORTABLE_ERROR):
                if error is None:
                    raise ValueError(f"cannot transition to {target} without an error")
                self.last_error = error
            else:
                self.last_error = None
            self.state = target

    def has_error(self) -> bool:
        return self.state in (ABORTABLE_ERROR, FATAL_ERROR)

    def is_completing(self) -> bool:
        return self.state in (COMMITTING_TRANSACTION, ABORTING_TRANSACTION)

    def maybe_fail_with_error(self) -> None:
        """Raise the error that put the producer in an error state (Java's maybeFailWithError)."""
        with self._lock:
            if not self.has_error():
                return
            error = self.last_error
            if isinstance(error, errors.ProducerFencedError):
                raise errors.ProducerFencedError(
                    "the producer has been rejected from the broker because it tried to use an "
                    "old epoch with the transactional id")
            what = ("the producer is fenced or failed and can only be closed"
                    if self.state == FATAL_ERROR else
                    "the transaction hit an error and must be aborted")
            exc = type(error)(f"cannot execute a transactional method: {what} ({error})")
            raise exc from error

    def begin_init(self, bump: bool = False) -> None:
        """``init_transactions()`` starts: UNINITIALIZED -> INITIALIZING (an epoch bump after an
        abort: ABORTING_TRANSACTION -> INITIALIZING)."""
        with self._lock:
            if not bump:
                self.maybe_fail_with_error()
            self.transition_to(INITIALIZING)

    def initialized(self, producer_id: int, producer_epoch: int) -> None:
        """InitProducerId answered: the id and epoch to use, READY."""
        with self._lock:
            self.producer_id = producer_id
            self.producer_epoch = producer_epoch
            self.epoch_bump_required = False
            self.transition_to(READY)

    def begin_transaction(self) -> None:
        with self._lock:
            self.maybe_fail_with_error()
            if self.state == UNINITIALIZED or self.state == INITIALIZING:
                raise IllegalStateError("cannot begin a transaction before init_transactions() "
                                        "has completed")
            if self.state != READY:
                raise IllegalStateError(f"cannot begin a transaction in state {self.state}: "
                                        f"commit or abort the current one first")
            self.transition_to(IN_TRANSACTION)

    def begin_commit(self) -> None:
        with self._lock:
            self.maybe_fail_with_error()
            if self.state != IN_TRANSACTION:
                raise IllegalStateError(f"cannot commit a transaction in state {self.state}")
            self.transition_to(COMMITTING_TRANSACTION)

    def begin_abort(self) -> None:
        with self._lock:
            if self.state != ABORTABLE_ERROR:
                self.maybe_fail_with_error()
            if self.state not in (IN_TRANSACTION, ABORTABLE_ERROR):
                raise IllegalStateError(f"cannot abort a transaction in state {self.state}")
            self.transition_to(ABORTING_TRANSACTION)
            self._new.clear()       # aborting: nothing more to add

    def complete_transaction(self) -> None:
        """EndTxn succeeded: READY, or INITIALIZING when an epoch bump must follow (KIP-360)."""
        with self._lock:
            self.transition_to(INITIALIZING if self.epoch_bump_required else READY)
            self.transaction_started = False
            self.added.clear()
            self._new.clear()
            self._pending.clear()

    def fatal(self, error: KafkaError) -> None:
        with self._lock:
            self.transition_to(FATAL_ERROR, error)

    def abortable(self, error: KafkaError) -> None:
        """ABORTABLE_ERROR, unless the transaction is being aborted anyway (as Java)."""
        with self._lock:
            if self.state == ABORTING_TRANSACTION or self.state == FATAL_ERROR:
                return
            self.transition_to(ABORTABLE_ERROR, error)

    def abortable_if_possible(self, error: KafkaError) -> None:
        """The producer id is unknown to the broker: abortable with an epoch bump at the abort
        (kafkalite's brokers speak InitProducerId v3, KIP-360, so the bump is always possible)."""
        with self._lock:
            self.epoch_bump_required = True
            self.abortable(error)

    def apply(self, action: str, error: KafkaError) -> None:
        """Move to the error state ``action`` (FATAL, ABORTABLE, ABORTABLE_IF_POSSIBLE) names."""
        if action == FATAL:
            self.fatal(error)
        elif action == ABORTABLE:
            self.abortable(error)
        elif action == ABORTABLE_IF_POSSIBLE:
            self.abortable_if_possible(error)
        else:
            raise ValueError(f"not an error action: {action}")

    # --- sending ---------------------------------------------------------------------------------
    def fail_if_not_ready_for_send(self) -> None:
        """``send()``'s check: only inside a transaction, and never after an error."""
        with self._lock:
            if self.has_error():
                error = self.last_error
                raise type(error)(f"cannot send: a previous transactional request failed "
                                  f"({error})") from error
            if self.producer_id < 0:
                raise IllegalStateError("cannot send before init_transactions() has completed "
                                        "when a transactional_id is set")
            if self.state != IN_TRANSACTION:
                raise IllegalStateError(f"cannot send in state {self.state}: call "
                                        f"begin_transaction() first")

    def maybe_add_partition(self, tp) -> bool:
        """Note a partition a record of the transaction went to; True when it is new to it."""
        if tp in self.added:             # the common case, without the lock (set lookup)
            return False
        with self._lock:
            if tp in self.added or tp in self._pending or tp in self._new:
                return False
            self._new.add(tp)
            return True

    def has_partitions_to_add(self) -> bool:
        return bool(self._new) or bool(self._pending)

    def take_partitions_to_add(self) -> list:
        """The partitions an AddPartitionsToTxn should carry now (new ones join those still
        pending from an answer to retry); empty when nothing is to be added or the state allows
        no adding."""
        with self._lock:
            if self.state not in (IN_TRANSACTION, COMMITTING_TRANSACTION):
                return []
            self._pending |= self._new
            self._new.clear()
            return sorted(self._pending)

    def partitions_added(self, tps) -> None:
        """AddPartitionsToTxn succeeded for ``tps``: their batches may go."""
        with self._lock:
            for tp in tps:
                self._pending.discard(tp)
                self.added.add(tp)
            if tps:
                self.transaction_started = True

    def is_send_allowed(self, tp) -> bool:
        return tp in self.added and self.state != FATAL_ERROR

    def handle_failed_batch(self, error: BaseException) -> None:
        """A produce of this transaction failed for good (Java's maybeTransitionToErrorState):
        fenced or not authorized is fatal, anything else abortable (the epoch is bumped at the
        abort: the failed batch left a gap in the partition's sequence numbers)."""
        if not isinstance(error, KafkaError):
            error = KafkaError(str(error))
        with self._lock:
            if isinstance(error, (errors.ProducerFencedError,
                                  errors.TransactionalIdAuthorizationFailedError,
                                  errors.ClusterAuthorizationFailedError,
                                  errors.UnsupportedVersionError)):
                self.fatal(error)
                return
            if self.state not in (IN_TRANSACTION, COMMITTING_TRANSACTION, ABORTABLE_ERROR):
                return      # aborting anyway, or fatal already
            # Java bumps only outside a commit and rewrites the sequences of the batches behind
            # the failed one instead; this producer keeps no per-batch sequence bookkeeping, so
            # the abort always bumps the epoch, which restarts every partition at sequence 0
            self.epoch_bump_required = True
            self.abortable(error)
