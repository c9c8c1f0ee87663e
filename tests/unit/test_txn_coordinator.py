"""The transaction coordinator's decisions (kafkalite.txn.coordinator, as Kafka 2.8's
TransactionCoordinator), over the real state store and marker channel on an in-memory
``__transaction_state`` and a task.Clock (tests/unit/txn_fakes.py): every answer of
InitProducerId, AddPartitionsToTxn and EndTxn, what each writes to the log, fencing, KIP-360,
epoch exhaustion, timeouts, failed writes, loading and unloading."""

from twisted.internet import defer

from kafkalite import errors
from kafkalite.topic_partition import TopicPartition
from kafkalite.txn import log_records
from kafkalite.txn.metadata import MAX_PRODUCER_EPOCH, TxnState
from txn_fakes import coordinator, flush, result

S = TxnState
TP0, TP1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
CONCURRENT = errors.ConcurrentTransactionsError.code
FENCED = errors.ProducerFencedError.code
MAPPING = errors.InvalidProducerIdMappingError.code
INVALID_STATE = errors.InvalidTxnStateError.code


def ready(**config):
    coord, broker, topic_log, sender = coordinator(**config)
    for tp in (TP0, TP1):
        broker.lead(tp.topic, tp.partition, 2)
    return coord, broker, topic_log, sender


def init(coord, txn_id="tx", timeout_ms=60000, expected=None):
    return tuple(result(coord.init_producer_id(txn_id, timeout_ms, expected)))


def ongoing(coord, txn_id="tx", partitions=(TP0,)):
    code, pid, epoch = init(coord, txn_id)
    assert code == 0
    assert result(coord.add_partitions(txn_id, pid, epoch, partitions)) == 0
    return pid, epoch


def state_of(coord, txn_id="tx"):
    return coord.state.get_transaction_state(txn_id)[1].metadata


# --- InitProducerId ---------------------------------------------------------------------------

def test_init_creates_the_id_at_epoch_0_then_bumps_the_epoch():
    coord, broker, topic_log, _ = ready()
    assert init(coord) == (0, 1000, 0)
    entry = topic_log.last("tx")
    assert (entry.producer_id, entry.producer_epoch, entry.state) == (1000, 0, S.EMPTY)
    assert entry.transaction_timeout_ms == 60000
    assert init(coord, timeout_ms=30000) == (0, 1000, 1)
    assert topic_log.last("tx").transaction_timeout_ms == 30000
    # each transition waits for the ISR up to the transaction's timeout, as Kafka's
    assert topic_log.timeouts == [60000, 30000]
    assert state_of(coord).producer_epoch == 1


def test_init_refuses_an_empty_id_and_a_bad_timeout():
    coord, *_ = ready(transaction_max_timeout_ms=60000)
    assert init(coord, "")[0] == errors.InvalidRequestError.code
    assert init(coord, timeout_ms=60001)[0] == errors.InvalidTransactionTimeoutError.code
    assert init(coord, timeout_ms=0)[0] == errors.InvalidTransactionTimeoutError.code
    assert init(coord, timeout_ms=60000)[0] == 0


def test_without_a_transactional_id_a_new_producer_id_at_epoch_0():
    coord, *_ = ready()
    assert init(coord, None) == (0, 1000, 0)
    assert init(coord, None) == (0, 1001, 0)


def test_not_the_coordinator_and_loading():
    coord, broker, topic_log, _ = ready()
    partition = coord.partition_for("tx")
    coord.on_resigned(partition, 5)
    assert init(coord)[0] == errors.NotCoordinatorError.code
    coord.state.loading[partition] = 6              # as while on_elected reads the log
    assert init(coord)[0] == errors.CoordinatorLoadInProgressError.code
    del coord.state.loading[partition]
    coord.on_elected(partition, 6)
    assert init(coord)[0] == 0


def test_init_during_an_ongoing_transaction_fences_and_aborts_it():
    coord, broker, topic_log, sender = ready()
    pid, epoch = ongoing(coord)
    assert init(coord) == (CONCURRENT, -1, -1)
    prepare = topic_log.last("tx")
    assert (prepare.state, prepare.producer_epoch) == (S.PREPARE_ABORT, epoch + 1)
    flush(broker)
    [(destination, request, _)] = sender.sent
    assert destination == 2
    [marker] = request.markers
    assert (marker.producer_id, marker.producer_epoch, marker.transaction_result,
            marker.coordinator_epoch) == (pid, epoch + 1, False, 5)
    # the old producer is fenced meanwhile
    assert result(coord.end_txn("tx", pid, epoch, True)) == FENCED
    assert init(coord)[0] == CONCURRENT             # markers in flight
    sender.answer()
    assert topic_log.last("tx").state == S.COMPLETE_ABORT
    assert init(coord) == (0, pid, epoch + 2)


def test_kip_360_recovery_with_the_current_or_the_last_epoch():
    coord, *_ = ready()
    assert init(coord) == (0, 1000, 0)
    # the producer carries on with its id and epoch: bumped, the old epoch remembered
    assert init(coord, expected=(1000, 0)) == (0, 1000, 1)
    # a retry of that call (its answer lost): the same epoch again, no bump
    assert init(coord, expected=(1000, 0)) == (0, 1000, 1)
    # another id, or an epoch neither current nor last: fenced
    assert init(coord, expected=(999, 1))[0] == FENCED
    assert init(coord, expected=(1000, 7))[0] == FENCED


def test_an_exhausted_epoch_rotates_to_a_new_producer_id():
    coord, *_ = ready()
    assert init(coord) == (0, 1000, 0)
    metadata = state_of(coord)
    metadata.producer_epoch = MAX_PRODUCER_EPOCH - 1
    assert init(coord) == (0, 1001, 0)
    assert (metadata.producer_id, metadata.last_producer_id) == (1001, 1000)


def test_a_transition_in_flight_answers_concurrent_transactions():
    coord, broker, topic_log, _ = ready()
    init(coord)
    topic_log.holding = True
    pending = coord.init_producer_id("tx", 60000, None)
    assert init(coord)[0] == CONCURRENT
    # the bump to epoch 1 is not applied until written: epoch 0 is still current, and busy
    assert result(coord.add_partitions("tx", 1000, 0, [TP0])) == CONCURRENT
    assert result(coord.end_txn("tx", 1000, 0, True)) == CONCURRENT
    topic_log.release()
    assert tuple(result(pending)) == (0, 1000, 1)


def test_a_failed_write_maps_the_error_and_resets_the_pending_state():
    coord, broker, topic_log, _ = ready()
    topic_log.codes = [errors.NotEnoughReplicasError.code]
    assert init(coord)[0] == errors.CoordinatorNotAvailableError.code
    topic_log.codes = [errors.RequestTimedOutError.code]
    assert init(coord)[0] == errors.CoordinatorNotAvailableError.code
    topic_log.codes = [errors.NotCoordinatorError.code]
    assert init(coord)[0] == errors.NotCoordinatorError.code
    topic_log.codes = [errors.MessageTooLargeError.code]
    assert init(coord)[0] == errors.UnknownServerError.code
    assert state_of(coord).pending_state is None
    assert init(coord) == (0, 1000, 0)


def test_a_write_completed_after_the_coordinator_moved_is_not_applied():
    coord, broker, topic_log, _ = ready()
    init(coord)
    topic_log.holding = True
    pending = coord.init_producer_id("tx", 60000, None)
    partition = coord.partition_for("tx")
    coord.on_resigned(partition, 5)
    topic_log.release()
    assert result(pending)[0] == errors.NotCoordinatorError.code


# --- AddPartitionsToTxn -----------------------------------------------------------------------

def test_add_partitions_checks_the_producer_and_writes_ongoing():
    coord, broker, topic_log, _ = ready()
    assert result(coord.add_partitions("unknown", 1, 0, [TP0])) == MAPPING
    assert result(coord.add_partitions("", 1, 0, [TP0])) == errors.InvalidRequestError.code
    _, pid, epoch = init(coord)
    assert result(coord.add_partitions("tx", pid + 1, epoch, [TP0])) == MAPPING
    assert result(coord.add_partitions("tx", pid, epoch + 1, [TP0])) == FENCED
    written = len(topic_log.entries("tx"))
    assert result(coord.add_partitions("tx", pid, epoch, [TP0])) == 0
    entry = topic_log.last("tx")
    assert (entry.state, entry.partitions) == (S.ONGOING, {TP0})
    start = entry.start_ms
    # already there: answered at once, nothing written
    assert result(coord.add_partitions("tx", pid, epoch, [TP0])) == 0
    assert len(topic_log.entries("tx")) == written + 1
    broker.reactor.advance(5)
    assert result(coord.add_partitions("tx", pid, epoch, [TP1])) == 0
    entry = topic_log.last("tx")
    assert entry.partitions == {TP0, TP1} and entry.start_ms == start


def test_add_partitions_while_committing_is_concurrent():
    coord, broker, topic_log, sender = ready()
    pid, epoch = ongoing(coord)
    assert result(coord.end_txn("tx", pid, epoch, True)) == 0
    assert result(coord.add_partitions("tx", pid, epoch, [TP1])) == CONCURRENT


# --- EndTxn -----------------------------------------------------------------------------------

def test_commit_writes_prepare_sends_markers_then_writes_complete():
    coord, broker, topic_log, sender = ready()
    pid, epoch = ongoing(coord, partitions=(TP0, TP1))
    broker.lead("orders", 1, 3)
    assert result(coord.end_txn("tx", pid, epoch, True)) == 0
    assert topic_log.last("tx").state == S.PREPARE_COMMIT
    flush(broker)
    assert sorted(d for d, _, _ in sender.sent) == [2, 3]
    # while the markers are in flight CompleteCommit is pending: both are concurrent
    assert result(coord.end_txn("tx", pid, epoch, True)) == CONCURRENT
    assert result(coord.end_txn("tx", pid, epoch, False)) == CONCURRENT
    sender.answer(0)
    assert topic_log.last("tx").state == S.PREPARE_COMMIT       # one partition still waits
    sender.answer(1)
    entry = topic_log.last("tx")
    assert (entry.state, entry.partitions) == (S.COMPLETE_COMMIT, frozenset())
    assert result(coord.end_txn("tx", pid, epoch, True)) == 0  # a retry of the commit
    assert result(coord.end_txn("tx", pid, epoch, False)) == INVALID_STATE


def test_abort_and_the_end_txn_errors():
    coord, broker, topic_log, sender = ready()
    assert result(coord.end_txn("tx", 1, 0, True)) == MAPPING
    _, pid, epoch = init(coord)
    assert result(coord.end_txn("tx", pid, epoch, True)) == INVALID_STATE     # Empty
    assert result(coord.end_txn("tx", pid + 1, epoch, True)) == MAPPING
    assert result(coord.add_partitions("tx", pid, epoch, [TP0])) == 0
    assert result(coord.end_txn("tx", pid, epoch + 1, False)) == FENCED
    assert result(coord.end_txn("tx", pid, epoch - 1, False)) == FENCED
    assert result(coord.end_txn("tx", pid, epoch, False)) == 0
    assert result(coord.end_txn("tx", pid, epoch, False)) == CONCURRENT
    assert result(coord.end_txn("tx", pid, epoch, True)) == CONCURRENT
    flush(broker)
    sender.answer()
    assert topic_log.last("tx").state == S.COMPLETE_ABORT
    assert result(coord.end_txn("tx", pid, epoch, False)) == 0
    assert result(coord.end_txn("tx", pid, epoch, True)) == INVALID_STATE


# --- timeouts and expiration ------------------------------------------------------------------

def test_a_timed_out_transaction_is_fenced_and_aborted():
    coord, broker, topic_log, sender = ready()
    pid, epoch = ongoing(coord)
    timeout_s = state_of(coord).txn_timeout_ms / 1000
    result(coord.abort_timed_out_transactions())
    assert topic_log.last("tx").state == S.ONGOING       # not yet
    broker.reactor.advance(timeout_s + 0.001)
    result(coord.abort_timed_out_transactions())
    entry = topic_log.last("tx")
    assert (entry.state, entry.producer_epoch) == (S.PREPARE_ABORT, epoch + 1)
    flush(broker)
    sender.answer()
    assert topic_log.last("tx").state == S.COMPLETE_ABORT
    # the abandoned producer is fenced
    assert result(coord.end_txn("tx", pid, epoch, True)) == FENCED
    assert result(coord.add_partitions("tx", pid, epoch, [TP0])) == FENCED


def test_the_periodic_tasks_run_at_the_configured_intervals():
    coord, broker, topic_log, sender = ready(
        transaction_abort_timed_out_transaction_cleanup_interval_ms=1000,
        transaction_remove_expired_transaction_cleanup_interval_ms=5000,
        transactional_id_expiration_ms=20000)
    coord.start()
    try:
        ongoing(coord, "abandoned")
        init(coord, "idle")
        broker.reactor.advance(61)               # past the 60 s timeout, and an abort tick
        assert topic_log.last("abandoned").state == S.PREPARE_ABORT
        flush(broker)
        sender.answer()
        assert topic_log.last("abandoned").state == S.COMPLETE_ABORT
        # "idle" (Empty) has not been updated for 61 s > 20 s: tombstoned at the next tick
        broker.reactor.advance(5)
        assert topic_log.last("idle") is None and topic_log.entries("idle")[0] is not None
        assert coord.state.get_transaction_state("idle") == (0, None)
        # "abandoned" was updated by its completion less than 20 s ago: kept
        assert coord.state.get_transaction_state("abandoned")[1] is not None
    finally:
        coord.stop()


# --- loading ----------------------------------------------------------------------------------

def _write(topic_log, txn_id, state, partitions, epoch=3, pid=77):
    entry = log_records.TxnLogEntry(pid, epoch, 60000, state, partitions, 10, 5)
    topic_log.logs[topic_log.partition_for(txn_id)].append(
        (log_records.key(txn_id), log_records.value(entry)))


def test_loading_resends_the_markers_of_prepared_transactions():
    coord, broker, topic_log, sender = ready()
    partition = coord.partition_for("tx")
    coord.on_resigned(partition, 5)
    _write(topic_log, "tx", S.ONGOING, {TP0})
    _write(topic_log, "tx", S.PREPARE_COMMIT, {TP0, TP1})
    other = next(i for i in (f"id{n}" for n in range(100))
                 if coord.partition_for(i) == partition)
    _write(topic_log, other, S.COMPLETE_ABORT, ())
    gone = next(i for i in (f"gone{n}" for n in range(100))
                if coord.partition_for(i) == partition)
    _write(topic_log, gone, S.EMPTY, ())
    topic_log.logs[partition].append((log_records.key(gone), None))
    assert result(coord.on_elected(partition, 9)) == 2
    assert coord.state.get_transaction_state(gone) == (0, None)
    flush(broker)
    [(_, request, _)] = sender.sent
    [marker] = request.markers
    assert (marker.producer_id, marker.producer_epoch, marker.transaction_result,
            marker.coordinator_epoch) == (77, 3, True, 9)
    assert sender.partitions() == [TP0, TP1]
    sender.answer()
    entry = topic_log.last("tx")
    assert (entry.state, entry.producer_epoch) == (S.COMPLETE_COMMIT, 3)


def test_a_load_superseded_by_a_resignation_installs_nothing():
    coord, broker, topic_log, sender = ready()
    partition = coord.partition_for("tx")
    coord.on_resigned(partition, 5)
    _write(topic_log, "tx", S.PREPARE_ABORT, {TP0})
    reading = defer.Deferred()
    topic_log.read = lambda p, apply: reading
    d = coord.on_elected(partition, 6)
    assert init(coord)[0] == errors.CoordinatorLoadInProgressError.code
    coord.on_resigned(partition, 6)
    reading.callback(1)
    assert result(d) is None
    assert init(coord)[0] == errors.NotCoordinatorError.code
    flush(broker)
    assert sender.sent == []


def test_a_prepare_state_without_a_transition_in_flight_answers_invalid_txn_state():
    coord, broker, topic_log, sender = ready()
    pid, epoch = ongoing(coord)
    # PrepareCommit is written, CompleteCommit is not (not the coordinator any more, say)
    topic_log.codes = [0, errors.NotCoordinatorError.code]
    assert result(coord.end_txn("tx", pid, epoch, True)) == 0
    flush(broker)
    sender.answer()
    metadata = state_of(coord)
    assert (metadata.state, metadata.pending_state) == (S.PREPARE_COMMIT, None)
    assert result(coord.end_txn("tx", pid, epoch, False)) == INVALID_STATE
    assert result(coord.end_txn("tx", pid, epoch, True)) == CONCURRENT
    assert init(coord)[0] == CONCURRENT
