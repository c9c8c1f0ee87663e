"""The transactional producer's state machine (kafkalite.client.transaction_manager) against
Kafka 2.8's Java TransactionManager: every (from, to) transition, the answer table of each
transactional API, the partition bookkeeping the sender relies on, and the error states."""

from __future__ import annotations

import itertools

import pytest

from kafkalite import errors
from kafkalite.client import transaction_manager as txm
from kafkalite.client.structs import TopicPartition
from kafkalite.client.transaction_manager import (
    ABORTABLE_ERROR,
    ABORTING_TRANSACTION,
    COMMITTING_TRANSACTION,
    FATAL_ERROR,
    IN_TRANSACTION,
    INITIALIZING,
    READY,
    UNINITIALIZED,
    TransactionManager,
    response_action,
)
from kafkalite.errors import IllegalStateError

STATES = [UNINITIALIZED, INITIALIZING, READY, IN_TRANSACTION, COMMITTING_TRANSACTION,
          ABORTING_TRANSACTION, ABORTABLE_ERROR, FATAL_ERROR]

# Java 2.8's TransactionManager.State.isTransitionValid, written out pair by pair
VALID = {
    (READY, UNINITIALIZED),
    (UNINITIALIZED, INITIALIZING), (ABORTING_TRANSACTION, INITIALIZING),
    (INITIALIZING, READY), (COMMITTING_TRANSACTION, READY), (ABORTING_TRANSACTION, READY),
    (READY, IN_TRANSACTION),
    (IN_TRANSACTION, COMMITTING_TRANSACTION),
    (IN_TRANSACTION, ABORTING_TRANSACTION), (ABORTABLE_ERROR, ABORTING_TRANSACTION),
    (IN_TRANSACTION, ABORTABLE_ERROR), (COMMITTING_TRANSACTION, ABORTABLE_ERROR),
    (ABORTABLE_ERROR, ABORTABLE_ERROR),
} | {(s, FATAL_ERROR) for s in STATES}

TP = TopicPartition("t", 0)


def manager(state: str = UNINITIALIZED) -> TransactionManager:
    tm = TransactionManager("tid", 1000)
    tm.state = state
    return tm


def ready() -> TransactionManager:
    tm = manager()
    tm.begin_init()
    tm.initialized(7, 3)
    return tm


@pytest.mark.parametrize(("source", "target"), list(itertools.product(STATES, STATES)))
def test_every_transition_as_java(source, target):
    tm = manager(source)
    error = errors.KafkaError("boom")
    if (source, target) in VALID:
        tm.transition_to(target, error)
        assert tm.state == target
        assert tm.last_error is (error if target in (ABORTABLE_ERROR, FATAL_ERROR) else None)
    else:
        with pytest.raises(IllegalStateError, match=f"from state {source} to state {target}"):
            tm.transition_to(target, error)
        assert tm.state == source


def test_error_states_need_an_error():
    with pytest.raises(ValueError):
        manager(IN_TRANSACTION).transition_to(ABORTABLE_ERROR)
    with pytest.raises(ValueError):
        manager(READY).transition_to(FATAL_ERROR)


def test_a_whole_commit_and_abort_cycle():
    tm = ready()
    assert (tm.state, tm.producer_id, tm.producer_epoch) == (READY, 7, 3)
    tm.begin_transaction()
    tm.fail_if_not_ready_for_send()
    tm.maybe_add_partition(TP)
    assert not tm.is_send_allowed(TP)
    assert tm.take_partitions_to_add() == [TP]
    tm.partitions_added([TP])
    assert tm.is_send_allowed(TP) and not tm.has_partitions_to_add()
    tm.begin_commit()
    assert tm.is_completing()
    with pytest.raises(IllegalStateError, match="cannot send in state COMMITTING"):
        tm.fail_if_not_ready_for_send()
    tm.complete_transaction()
    assert tm.state == READY and not tm.added and not tm.transaction_started
    tm.begin_transaction()
    tm.maybe_add_partition(TP)
    tm.begin_abort()
    assert not tm.has_partitions_to_add()      # an abort adds nothing more
    tm.complete_transaction()
    assert tm.state == READY


def test_send_and_begin_before_init_or_outside_a_transaction():
    tm = manager()
    with pytest.raises(IllegalStateError, match="before init_transactions"):
        tm.fail_if_not_ready_for_send()
    with pytest.raises(IllegalStateError, match="before init_transactions"):
        tm.begin_transaction()
    tm = ready()
    with pytest.raises(IllegalStateError, match="begin_transaction"):
        tm.fail_if_not_ready_for_send()
    with pytest.raises(IllegalStateError, match="cannot commit"):
        tm.begin_commit()
    with pytest.raises(IllegalStateError, match="cannot abort"):
        tm.begin_abort()
    tm.begin_transaction()
    with pytest.raises(IllegalStateError, match="commit or abort"):
        tm.begin_transaction()


def test_partitions_pending_an_answer_are_asked_for_again_with_new_ones():
    tm = ready()
    tm.begin_transaction()
    tm.maybe_add_partition(TP)
    assert tm.take_partitions_to_add() == [TP]
    other = TopicPartition("t", 1)
    tm.maybe_add_partition(other)            # noted while the first request is out
    tm.maybe_add_partition(TP)               # pending already: not noted twice
    assert tm.take_partitions_to_add() == [TP, other]   # the retry carries both
    tm.partitions_added([other])
    assert tm.take_partitions_to_add() == [TP]
    tm.partitions_added([TP])
    assert tm.take_partitions_to_add() == []
    assert tm.maybe_add_partition(TP) is False    # in the transaction: nothing to add
    assert not tm.has_partitions_to_add()
    third = TopicPartition("t", 2)
    assert tm.maybe_add_partition(third) is True  # new: the sender is woken for it
    assert tm.maybe_add_partition(third) is False


def test_nothing_is_added_outside_in_transaction_and_committing():
    tm = ready()
    tm.begin_transaction()
    tm.maybe_add_partition(TP)
    tm.abortable(errors.TopicAuthorizationFailedError("no"))
    assert tm.take_partitions_to_add() == []
    tm = ready()
    tm.begin_transaction()
    tm.maybe_add_partition(TP)
    tm.begin_commit()                        # committing still adds (the flush needs it)
    assert tm.take_partitions_to_add() == [TP]


def test_abortable_error_then_abort_works_and_commit_raises():
    tm = ready()
    tm.begin_transaction()
    tm.abortable(errors.GroupAuthorizationFailedError("group g"))
    assert tm.state == ABORTABLE_ERROR
    with pytest.raises(errors.GroupAuthorizationFailedError, match="must be aborted"):
        tm.begin_commit()
    with pytest.raises(errors.GroupAuthorizationFailedError):
        tm.fail_if_not_ready_for_send()
    with pytest.raises(errors.GroupAuthorizationFailedError):
        tm.begin_transaction()
    tm.begin_abort()
    assert tm.state == ABORTING_TRANSACTION and tm.last_error is None
    tm.abortable(errors.KafkaError("late"))  # ignored while aborting, as Java
    assert tm.state == ABORTING_TRANSACTION
    tm.complete_transaction()
    assert tm.state == READY


def test_fenced_is_fatal_and_every_later_call_raises_producer_fenced():
    tm = ready()
    tm.begin_transaction()
    tm.apply(response_action("EndTxn", errors.ProducerFencedError.code),
             errors.ProducerFencedError("fenced"))
    assert tm.state == FATAL_ERROR
    for call in (tm.begin_abort, tm.begin_commit, tm.begin_transaction,
                 tm.fail_if_not_ready_for_send):
        with pytest.raises(errors.ProducerFencedError):
            call()
    assert not tm.is_send_allowed(TP)


def test_failed_batches():
    tm = ready()
    tm.begin_transaction()
    tm.handle_failed_batch(errors.NotEnoughReplicasError("x"))
    assert tm.state == ABORTABLE_ERROR and tm.epoch_bump_required
    tm.begin_abort()
    tm.complete_transaction()
    assert tm.state == INITIALIZING        # KIP-360: the abort bumps the epoch
    tm.initialized(7, 4)
    assert (tm.state, tm.producer_epoch, tm.epoch_bump_required) == (READY, 4, False)
    tm.begin_transaction()
    tm.handle_failed_batch(errors.ProducerFencedError("x"))
    assert tm.state == FATAL_ERROR
    tm = ready()
    tm.begin_transaction()
    tm.handle_failed_batch(errors.TransactionalIdAuthorizationFailedError("x"))
    assert tm.state == FATAL_ERROR
    tm = ready()
    tm.handle_failed_batch(errors.KafkaError("closing"))   # no transaction: nothing moves
    assert tm.state == READY


def test_unknown_producer_id_is_abortable_with_an_epoch_bump():
    tm = ready()
    tm.begin_transaction()
    action = response_action("AddOffsetsToTxn", errors.UnknownProducerIdError.code)
    tm.apply(action, errors.UnknownProducerIdError("gone"))
    assert tm.state == ABORTABLE_ERROR and tm.epoch_bump_required


# Kafka 2.8's handlers in TransactionManager.java, answer by answer
ANSWERS = [
    ("InitProducerId", errors.NotCoordinatorError, txm.LOOKUP),
    ("InitProducerId", errors.CoordinatorNotAvailableError, txm.LOOKUP),
    ("InitProducerId", errors.CoordinatorLoadInProgressError, txm.RETRY),
    ("InitProducerId", errors.ConcurrentTransactionsError, txm.RETRY),
    ("InitProducerId", errors.TransactionalIdAuthorizationFailedError, txm.FATAL),
    ("InitProducerId", errors.ClusterAuthorizationFailedError, txm.FATAL),
    ("InitProducerId", errors.InvalidProducerEpochError, txm.FATAL),
    ("InitProducerId", errors.InvalidTransactionTimeoutError, txm.FATAL),
    ("AddPartitionsToTxn", errors.NotCoordinatorError, txm.LOOKUP),
    ("AddPartitionsToTxn", errors.ConcurrentTransactionsError, txm.RETRY),
    ("AddPartitionsToTxn", errors.UnknownTopicOrPartitionError, txm.RETRY),
    ("AddPartitionsToTxn", errors.ProducerFencedError, txm.FATAL),
    ("AddPartitionsToTxn", errors.InvalidTxnStateError, txm.FATAL),
    ("AddPartitionsToTxn", errors.TopicAuthorizationFailedError, txm.ABORTABLE),
    ("AddPartitionsToTxn", errors.OperationNotAttemptedError, txm.IGNORE),
    ("AddPartitionsToTxn", errors.InvalidProducerIdMappingError, txm.ABORTABLE_IF_POSSIBLE),
    ("AddOffsetsToTxn", errors.CoordinatorLoadInProgressError, txm.RETRY),
    ("AddOffsetsToTxn", errors.GroupAuthorizationFailedError, txm.ABORTABLE),
    ("AddOffsetsToTxn", errors.UnknownProducerIdError, txm.ABORTABLE_IF_POSSIBLE),
    ("EndTxn", errors.NotCoordinatorError, txm.LOOKUP),
    ("EndTxn", errors.ConcurrentTransactionsError, txm.RETRY),
    ("EndTxn", errors.InvalidTxnStateError, txm.FATAL),
    ("EndTxn", errors.InvalidProducerEpochError, txm.FATAL),
    ("EndTxn", errors.UnknownProducerIdError, txm.ABORTABLE_IF_POSSIBLE),
    ("TxnOffsetCommit", errors.RequestTimedOutError, txm.LOOKUP),
    ("TxnOffsetCommit", errors.CoordinatorLoadInProgressError, txm.RETRY),
    ("TxnOffsetCommit", errors.UnknownTopicOrPartitionError, txm.RETRY),
    ("TxnOffsetCommit", errors.IllegalGenerationError, txm.ABORTABLE),
    ("TxnOffsetCommit", errors.UnknownMemberIdError, txm.ABORTABLE),
    ("TxnOffsetCommit", errors.FencedInstanceIdError, txm.ABORTABLE),
    ("TxnOffsetCommit", errors.ProducerFencedError, txm.FATAL),
    ("TxnOffsetCommit", errors.ConcurrentTransactionsError, txm.FATAL),
    ("FindCoordinator", errors.CoordinatorNotAvailableError, txm.RETRY),
    ("FindCoordinator", errors.GroupAuthorizationFailedError, txm.ABORTABLE),
    ("FindCoordinator", errors.TransactionalIdAuthorizationFailedError, txm.FATAL),
]


@pytest.mark.parametrize(("api", "error", "action"), ANSWERS,
                         ids=[f"{a}-{e.name}" for a, e, _ in ANSWERS])
def test_answers_mean_what_they_mean_to_java(api, error, action):
    assert response_action(api, error.code) == action
    assert response_action(api, 0) == txm.OK


def test_fenced_errors_become_producer_fenced():
    for code in (errors.InvalidProducerEpochError.code, errors.ProducerFencedError.code):
        assert isinstance(txm.error_for(code, "EndTxn"), errors.ProducerFencedError)
    assert isinstance(txm.error_for(errors.InvalidTxnStateError.code, "EndTxn"),
                      errors.InvalidTxnStateError)


def test_transactional_id_must_be_a_string():
    with pytest.raises(errors.ConfigError):
        TransactionManager("")
