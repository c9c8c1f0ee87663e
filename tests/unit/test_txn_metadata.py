"""The transaction state machine (kafkalite.txn.metadata) against Kafka 2.8's
TransactionMetadata: every (from, to) pair against Kafka's valid-previous-states table, the
completion rules, and the epoch rules of InitProducerId (KIP-360), fencing and id rotation
(the cases of Kafka's TransactionMetadataTest)."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from kafkalite.errors import IllegalStateError, ProducerFencedError
from kafkalite.topic_partition import TopicPartition
from kafkalite.txn.metadata import (
    MAX_PRODUCER_EPOCH,
    TransactionMetadata,
    TxnState,
    TxnStateTransitionError,
    is_epoch_exhausted,
    is_valid_transition,
)

S = TxnState
PID = 1000
NOW = 50_000
TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)

#: Kafka 2.8's TransactionMetadata.validPreviousStates, written out again from the Scala source
KAFKA_TABLE = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE},
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}


def _md(state=S.EMPTY, epoch=5, last_epoch=-1, partitions=None, start=NOW - 10,
        timeout=30000) -> TransactionMetadata:
    if partitions is None:
        in_txn = state in (S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT, S.PREPARE_EPOCH_FENCE)
        partitions = {TP0} if in_txn else set()
    return TransactionMetadata("tx", PID, -1, epoch, last_epoch, timeout, state, set(partitions),
                               start, NOW - 10)


def _prepare_to(md: TransactionMetadata, target: TxnState):
    """The public prepare call that aims at ``target`` (prepareAbortOrCommit takes any state)."""
    if target == S.EMPTY:
        return md.prepare_increment_producer_epoch(30000, None, NOW)
    if target == S.ONGOING:
        return md.prepare_add_partitions({TP1}, NOW)
    if target == S.DEAD:
        return md.prepare_dead()
    if target == S.PREPARE_EPOCH_FENCE:
        return md.prepare_fence_producer_epoch()
    return md.prepare_abort_or_commit(target, NOW)


def test_state_ids_and_names_are_kafkas():
    assert [(int(s), str(s)) for s in TxnState] == [
        (0, "Empty"), (1, "Ongoing"), (2, "PrepareCommit"), (3, "PrepareAbort"),
        (4, "CompleteCommit"), (5, "CompleteAbort"), (6, "Dead"), (7, "PrepareEpochFence")]
    assert {s for s in TxnState if s.is_expiration_allowed} == {
        S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}


@pytest.mark.parametrize("old,new", list(itertools.product(TxnState, TxnState)),
                         ids=lambda s: str(s))
def test_every_pair_against_kafkas_table(old, new):
    valid = old in KAFKA_TABLE[new]
    assert is_valid_transition(old, new) == valid
    md = _md(old)
    if not valid:
        with pytest.raises(TxnStateTransitionError, match="not a valid previous state"):
            _prepare_to(md, new)
        assert md.pending_state is None and md.state == old
        return
    transit = _prepare_to(md, new)
    assert transit.state == new and md.pending_state == new
    if new in (S.PREPARE_EPOCH_FENCE, S.DEAD):
        # neither is ever completed: the fence goes on to PrepareAbort, Dead to a tombstone
        with pytest.raises(TxnStateTransitionError):
            md.complete_transition(transit)
        return
    md.complete_transition(transit)
    assert md.state == new and md.pending_state is None
    assert md.txn_last_update_ms == transit.txn_last_update_ms
    assert md.producer_epoch == transit.producer_epoch


def test_a_pending_state_blocks_another_prepare():
    md = _md(S.ONGOING)
    md.prepare_abort_or_commit(S.PREPARE_COMMIT, NOW)
    with pytest.raises(TxnStateTransitionError, match="already a pending state PrepareCommit"):
        md.prepare_abort_or_commit(S.PREPARE_ABORT, NOW)


def test_complete_needs_the_pending_state():
    md = _md(S.ONGOING)
    transit = md.prepare_no_transit()
    with pytest.raises(TxnStateTransitionError, match="does not have a pending state"):
        md.complete_transition(transit)
    commit = md.prepare_abort_or_commit(S.PREPARE_COMMIT, NOW)
    md.pending_state = S.PREPARE_ABORT     # a different target than the transit's
    with pytest.raises(TxnStateTransitionError, match="unexpected metadata"):
        md.complete_transition(commit)


def test_full_commit_cycle():
    md = TransactionMetadata.new("tx", PID, -1, 60000, now_ms=10)
    assert (md.state, md.txn_start_ms, md.txn_last_update_ms) == (S.EMPTY, 10, 10)
    md.complete_transition(md.prepare_increment_producer_epoch(60000, None, 20))
    assert (md.producer_epoch, md.last_producer_epoch, md.txn_start_ms) == (0, -1, 10)
    md.complete_transition(md.prepare_add_partitions({TP0}, 30))
    md.complete_transition(md.prepare_add_partitions({("t", 1)}, 35))
    assert md.topic_partitions == {TP0, TP1} and md.txn_start_ms == 30
    md.complete_transition(md.prepare_abort_or_commit(S.PREPARE_COMMIT, 40))
    md.remove_partition(TP0)
    assert md.topic_partitions == {TP1}
    md.complete_transition(md.prepare_complete(50))
    assert (md.state, md.topic_partitions, md.txn_start_ms, md.txn_last_update_ms) == (
        S.COMPLETE_COMMIT, set(), 30, 50)
    # the next transaction starts at its first AddPartitions
    md.complete_transition(md.prepare_add_partitions({TP0}, 60))
    assert md.txn_start_ms == 60


def test_remove_partition_only_while_preparing():
    for state in TxnState:
        md = _md(state, partitions={TP0})
        if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            md.remove_partition(TP0)
            assert md.topic_partitions == set()
        else:
            with pytest.raises(IllegalStateError):
                md.remove_partition(TP0)


def test_prepare_complete_picks_commit_or_abort():
    assert _md(S.PREPARE_COMMIT).prepare_complete(NOW).state == S.COMPLETE_COMMIT
    assert _md(S.PREPARE_ABORT).prepare_complete(NOW).state == S.COMPLETE_ABORT


# --- completion rules -------------------------------------------------------------------------

def test_ongoing_may_not_lose_partitions_or_change_epoch_or_timeout():
    md = _md(S.ONGOING, partitions={TP0, TP1})
    transit = md.prepare_add_partitions(set(), NOW)
    for bad in (dict(topic_partitions=frozenset({TP0})), dict(producer_epoch=6),
                dict(producer_id=PID + 1), dict(txn_timeout_ms=1)):
        with pytest.raises(TxnStateTransitionError):
            md.complete_transition(_replace(transit, **bad))
        assert md.pending_state == S.ONGOING        # a failed completion leaves it pending
    md.complete_transition(transit)


def test_prepare_commit_must_match_the_partitions_and_start():
    md = _md(S.ONGOING)
    transit = md.prepare_abort_or_commit(S.PREPARE_COMMIT, NOW)
    for bad in (dict(topic_partitions=frozenset({TP0, TP1})), dict(txn_start_ms=1),
                dict(producer_epoch=4), dict(txn_timeout_ms=1)):
        with pytest.raises(TxnStateTransitionError):
            md.complete_transition(_replace(transit, **bad))
    md.complete_transition(transit)


def test_complete_needs_a_start_time():
    md = _md(S.PREPARE_ABORT)
    transit = md.prepare_complete(NOW)
    with pytest.raises(TxnStateTransitionError):
        md.complete_transition(_replace(transit, txn_start_ms=-1))
    md.complete_transition(transit)
    assert md.state == S.COMPLETE_ABORT


def test_empty_needs_same_or_next_epoch_or_a_new_id_at_zero():
    md = _md(S.COMPLETE_COMMIT, epoch=5)
    transit = md.prepare_increment_producer_epoch(30000, None, NOW)
    for bad in (dict(producer_epoch=7), dict(topic_partitions=frozenset({TP0})),
                dict(txn_start_ms=NOW)):
        with pytest.raises(TxnStateTransitionError):
            md.complete_transition(_replace(transit, **bad))
    md.complete_transition(_replace(transit, producer_id=PID + 1, producer_epoch=0))
    assert (md.producer_id, md.producer_epoch) == (PID + 1, 0)


def _replace(transit, **changes):
    return dataclasses.replace(transit, **changes)


# --- InitProducerId's epochs (Kafka's TransactionMetadataTest) --------------------------------

def test_initialize_epoch():
    md = TransactionMetadata.new("tx", PID, -1, 30000, now_ms=NOW)
    md.complete_transition(md.prepare_increment_producer_epoch(30000, None, NOW))
    assert (md.producer_id, md.producer_epoch, md.last_producer_epoch) == (PID, 0, -1)


def test_normal_epoch_bump():
    md = _md(S.EMPTY, epoch=735, last_epoch=-1)
    md.complete_transition(md.prepare_increment_producer_epoch(30000, None, NOW))
    assert (md.producer_epoch, md.last_producer_epoch) == (736, -1)


def test_bump_not_allowed_when_epochs_exhausted():
    md = _md(S.EMPTY, epoch=MAX_PRODUCER_EPOCH - 1)
    assert md.is_producer_epoch_exhausted and is_epoch_exhausted(MAX_PRODUCER_EPOCH - 1)
    assert not is_epoch_exhausted(MAX_PRODUCER_EPOCH - 2)
    with pytest.raises(TxnStateTransitionError, match="Cannot allocate any more producer epochs"):
        md.prepare_increment_producer_epoch(30000, None, NOW)


def test_time_shift_tolerated_during_epoch_bump():
    md = _md(S.EMPTY, epoch=735, start=1)
    md.complete_transition(md.prepare_increment_producer_epoch(30000, 735, NOW - 20))
    assert (md.producer_epoch, md.last_producer_epoch, md.txn_start_ms,
            md.txn_last_update_ms) == (736, 735, 1, NOW - 20)


def test_epoch_bump_with_current_epoch_given():
    md = _md(S.EMPTY, epoch=735)
    md.complete_transition(md.prepare_increment_producer_epoch(30000, 735, NOW))
    assert (md.producer_epoch, md.last_producer_epoch) == (736, 735)


def test_epoch_bump_on_new_metadata_with_an_expected_epoch():
    md = _md(S.EMPTY, epoch=-1)
    md.complete_transition(md.prepare_increment_producer_epoch(30000, 735, NOW))
    assert (md.producer_epoch, md.last_producer_epoch) == (0, -1)


def test_retry_with_the_last_epoch_keeps_the_epoch():
    md = _md(S.EMPTY, epoch=736, last_epoch=735)
    transit = md.prepare_increment_producer_epoch(30000, 735, NOW)
    assert (transit.producer_epoch, transit.last_producer_epoch) == (736, 735)
    md.complete_transition(transit)
    assert (md.producer_epoch, md.last_producer_epoch) == (736, 735)


def test_fenced_epoch_is_producer_fenced():
    md = _md(S.EMPTY, epoch=736, last_epoch=735)
    with pytest.raises(ProducerFencedError):
        md.prepare_increment_producer_epoch(30000, 734, NOW)
    assert md.pending_state is None     # nothing prepared


def test_new_timeout_is_taken_on_init():
    md = _md(S.COMPLETE_ABORT, timeout=30000)
    md.complete_transition(md.prepare_increment_producer_epoch(90000, None, NOW))
    # the -1 start of the transit is only written: Kafka keeps the in-memory start time
    assert md.txn_timeout_ms == 90000 and md.txn_start_ms == NOW - 10


# --- fencing and producer id rotation ---------------------------------------------------------

def test_fence_bumps_the_epoch_and_forgets_the_last():
    md = _md(S.ONGOING, epoch=5, last_epoch=4)
    transit = md.prepare_fence_producer_epoch()
    assert (transit.state, transit.producer_epoch, transit.last_producer_epoch) == (
        S.PREPARE_EPOCH_FENCE, 6, -1)
    assert transit.topic_partitions == frozenset(md.topic_partitions)


def test_fence_after_epochs_exhausted_then_abort():
    md = _md(S.ONGOING, epoch=MAX_PRODUCER_EPOCH - 1)
    assert md.is_producer_epoch_exhausted
    transit = md.prepare_fence_producer_epoch()
    assert transit.producer_epoch == MAX_PRODUCER_EPOCH and transit.last_producer_epoch == -1
    assert md.pending_state == S.PREPARE_EPOCH_FENCE
    # what Kafka's coordinator does next: take the bumped epoch and go on to PrepareAbort
    md.pending_state = None
    md.producer_epoch = transit.producer_epoch
    md.last_producer_epoch = -1
    abort = md.prepare_abort_or_commit(S.PREPARE_ABORT, NOW)
    assert (abort.producer_id, abort.producer_epoch) == (PID, MAX_PRODUCER_EPOCH)


def test_fence_not_allowed_if_it_would_overflow():
    md = _md(S.ONGOING, epoch=MAX_PRODUCER_EPOCH)
    with pytest.raises(TxnStateTransitionError, match="Short.MaxValue"):
        md.prepare_fence_producer_epoch()


def test_failed_fence_does_not_bump_again_until_complete():
    md = _md(S.ONGOING, epoch=5)
    md.has_failed_epoch_fence = True
    assert md.prepare_fence_producer_epoch().producer_epoch == 5
    md.pending_state = None
    md.state = S.PREPARE_ABORT
    md.complete_transition(md.prepare_complete(NOW))
    assert md.has_failed_epoch_fence is False


def test_rotate_producer_id():
    md = _md(S.COMPLETE_COMMIT, epoch=MAX_PRODUCER_EPOCH - 1, start=1)
    transit = md.prepare_producer_id_rotation(PID + 1, 30000, NOW - 1, record_last_epoch=True)
    md.complete_transition(transit)
    assert (md.producer_id, md.last_producer_id, md.producer_epoch, md.last_producer_epoch,
            md.txn_start_ms, md.txn_last_update_ms) == (
        PID + 1, PID, 0, MAX_PRODUCER_EPOCH - 1, 1, NOW - 1)


def test_rotate_without_recording_the_last_epoch():
    md = _md(S.EMPTY, epoch=MAX_PRODUCER_EPOCH - 1)
    transit = md.prepare_producer_id_rotation(PID + 1, 30000, NOW, record_last_epoch=False)
    assert transit.last_producer_epoch == -1


@pytest.mark.parametrize("state", [S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT])
def test_rotate_refused_with_a_pending_transaction(state):
    md = _md(state)
    with pytest.raises(TxnStateTransitionError, match="still pending"):
        md.prepare_producer_id_rotation(PID + 1, 30000, NOW, record_last_epoch=False)


def test_negative_producer_id_is_refused():
    md = _md(S.EMPTY)
    with pytest.raises(ValueError, match="Illegal new producer id"):
        md.prepare_producer_id_rotation(-5, 30000, NOW, record_last_epoch=False)
    assert md.pending_state is None


def test_time_shift_tolerated_in_every_phase():
    # Kafka takes each update time as given, even when the clock went back
    md = _md(S.EMPTY, epoch=1, start=1)
    md.complete_transition(md.prepare_add_partitions({TP0}, NOW - 1))
    md.complete_transition(md.prepare_add_partitions({TP1}, NOW - 2))
    assert (md.txn_start_ms, md.txn_last_update_ms) == (NOW - 1, NOW - 2)
    md.complete_transition(md.prepare_abort_or_commit(S.PREPARE_ABORT, NOW - 3))
    md.complete_transition(md.prepare_complete(NOW - 4))
    assert (md.state, md.txn_start_ms, md.txn_last_update_ms) == (
        S.COMPLETE_ABORT, NOW - 1, NOW - 4)
