"""The transaction marker channel (kafkalite.txn.markers, as Kafka 2.8's
TransactionMarkerChannelManager and its completion handler) on a task.Clock: markers grouped by
leader, and each way a partition's marker is retried, dropped or stopped before
CompleteCommit/CompleteAbort is written."""

from kafkalite import errors
from kafkalite.topic_partition import TopicPartition
from kafkalite.txn.markers import RETRY_BACKOFF_S
from kafkalite.txn.metadata import TxnState
from txn_fakes import coordinator, flush, result

S = TxnState
TPS = [TopicPartition("orders", p) for p in range(3)]


def committing(leaders=(2, 2, 3), commit=True, deleted=False):
    """A transaction on orders-0..2 whose EndTxn is answered; markers not flushed yet."""
    coord, broker, topic_log, sender = coordinator()
    for tp, leader in zip(TPS, leaders):
        broker.lead(tp.topic, tp.partition, leader)
    _, pid, epoch = result(coord.init_producer_id("tx", 60000, None))
    assert result(coord.add_partitions("tx", pid, epoch, TPS)) == 0
    if deleted:
        broker.forget("orders")
    assert result(coord.end_txn("tx", pid, epoch, commit)) == 0
    return coord, broker, topic_log, sender


def by_destination(sender):
    return {d: sender.partitions(i) for i, (d, _, _) in enumerate(sender.sent)}


def test_one_request_per_leader_and_complete_once_all_are_written():
    coord, broker, topic_log, sender = committing()
    flush(broker)
    assert by_destination(sender) == {2: TPS[:2], 3: TPS[2:]}
    sender.answer(0)
    assert topic_log.last("tx").state == S.PREPARE_COMMIT
    sender.answer(1)
    assert topic_log.last("tx").state == S.COMPLETE_COMMIT
    assert coord.markers.pending == {}


def test_a_retriable_error_resends_that_partition_to_its_new_leader():
    coord, broker, topic_log, sender = committing(leaders=(2, 2, 2))
    flush(broker)
    for code in (errors.NotLeaderForPartitionError.code, errors.NotEnoughReplicasError.code):
        broker.lead("orders", 1, 3)
        sent = len(sender.sent)
        sender.answer(-1, codes={("orders", 1): code})
        flush(broker)
        assert len(sender.sent) == sent                 # not before the retry backoff
        flush(broker, RETRY_BACKOFF_S)
        assert sender.sent[-1][0] == 3 and sender.partitions() == [TPS[1]]
        assert topic_log.last("tx").state == S.PREPARE_COMMIT
    sender.answer()
    assert topic_log.last("tx").state == S.COMPLETE_COMMIT


def test_a_lost_connection_resends_every_marker_of_the_request():
    coord, broker, topic_log, sender = committing(leaders=(2, 2, 2))
    flush(broker)
    sender.fail()
    flush(broker, RETRY_BACKOFF_S)
    assert len(sender.sent) == 2 and sender.partitions() == TPS
    sender.answer()
    assert topic_log.last("tx").state == S.COMPLETE_COMMIT


def test_a_partition_without_a_leader_waits_for_one():
    coord, broker, topic_log, sender = committing(leaders=(2, -1, 2))
    flush(broker)
    assert by_destination(sender) == {2: [TPS[0], TPS[2]]}
    sender.answer()
    flush(broker, RETRY_BACKOFF_S * 3)
    assert len(sender.sent) == 1
    broker.lead("orders", 1, 1)                   # this broker: the same path, to itself
    flush(broker, RETRY_BACKOFF_S)
    assert sender.sent[-1][0] == 1 and sender.partitions() == [TPS[1]]
    sender.answer()
    assert topic_log.last("tx").state == S.COMPLETE_COMMIT


def test_a_deleted_partition_is_dropped():
    coord, broker, topic_log, sender = committing(leaders=(2, 2, 2), commit=False, deleted=True)
    flush(broker)
    assert sender.sent == []
    entry = topic_log.last("tx")
    assert (entry.state, entry.partitions) == (S.COMPLETE_ABORT, frozenset())


def test_a_fenced_producer_stops_the_markers():
    coord, broker, topic_log, sender = committing(leaders=(2, 2, 2))
    flush(broker)
    sender.answer(code=errors.InvalidProducerEpochError.code)
    flush(broker, RETRY_BACKOFF_S * 3)
    assert len(sender.sent) == 1
    assert topic_log.last("tx").state == S.PREPARE_COMMIT
    assert coord.markers.pending == {}


def test_answers_after_the_coordinator_moved_are_ignored():
    coord, broker, topic_log, sender = committing(leaders=(2, 2, 2))
    flush(broker)
    partition = coord.partition_for("tx")
    coord.on_resigned(partition, 5)
    sender.answer()
    assert topic_log.last("tx").state == S.PREPARE_COMMIT
    # elected again at a newer epoch: the load resends the markers itself
    result(coord.on_elected(partition, 6))
    flush(broker)
    assert len(sender.sent) == 2
    assert sender.sent[-1][1].markers[0].coordinator_epoch == 6
    sender.answer()
    assert topic_log.last("tx").state == S.COMPLETE_COMMIT


def test_a_complete_write_without_enough_replicas_is_retried():
    coord, broker, topic_log, sender = committing(leaders=(2, 2, 2))
    flush(broker)
    topic_log.codes = [errors.NotEnoughReplicasError.code]
    sender.answer()
    assert topic_log.last("tx").state == S.PREPARE_COMMIT
    flush(broker, RETRY_BACKOFF_S)
    assert topic_log.last("tx").state == S.COMPLETE_COMMIT
