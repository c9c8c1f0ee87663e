"""The marker channel across a coordinator reload (kafkalite.txn.markers): a retry or a late
answer of a marker sent at an older coordinator epoch must not cancel the markers that the reload
at a newer epoch queued for the same transaction. Found by the own-client fault test (kill -9 of
an output partition's leader): the old epoch's retry fired after the reload, dropped the pending
completion, and the transaction stayed in PrepareCommit, every request answered
CONCURRENT_TRANSACTIONS."""

from kafkalite import errors
from kafkalite.topic_partition import TopicPartition
from kafkalite.txn.markers import RETRY_BACKOFF_S
from kafkalite.txn.metadata import TxnState
from txn_fakes import coordinator, flush, result

TPS = [TopicPartition("orders", p) for p in range(2)]


def _prepared_commit():
    coord, broker, topic_log, sender = coordinator()
    for tp in TPS:
        broker.lead(tp.topic, tp.partition, 2)
    _, pid, epoch = result(coord.init_producer_id("tx", 60000, None))
    assert result(coord.add_partitions("tx", pid, epoch, TPS)) == 0
    assert result(coord.end_txn("tx", pid, epoch, True)) == 0
    flush(broker)
    return coord, broker, topic_log, sender


def _reload_at_newer_epoch(coord, broker):
    partition = coord.partition_for("tx")
    coord.on_resigned(partition, 5)
    result(coord.on_elected(partition, 6))
    flush(broker)


def test_an_old_epoch_retry_after_a_reload_does_not_cancel_the_new_markers():
    coord, broker, topic_log, sender = _prepared_commit()
    # the old epoch's marker fails retriably: a retry is scheduled for later
    sender.answer(0, codes={(tp.topic, tp.partition): errors.NotLeaderForPartitionError.code
                            for tp in TPS})
    _reload_at_newer_epoch(coord, broker)
    new_request = len(sender.sent) - 1
    assert sender.sent[new_request][1].markers[0].coordinator_epoch == 6
    flush(broker, RETRY_BACKOFF_S * 2)          # the old epoch's retry fires now
    assert "tx" in coord.markers.pending        # the new epoch's completion still waits
    sender.answer(new_request)
    assert topic_log.last("tx").state == TxnState.COMPLETE_COMMIT


def test_an_old_epoch_answer_after_a_reload_does_not_cancel_the_new_markers():
    coord, broker, topic_log, sender = _prepared_commit()
    _reload_at_newer_epoch(coord, broker)
    new_request = len(sender.sent) - 1
    sender.answer(0)                            # the first request's answer arrives late
    assert "tx" in coord.markers.pending
    sender.answer(new_request)
    assert topic_log.last("tx").state == TxnState.COMPLETE_COMMIT
