"""The console's transactions, pure: the sentences of a commit and an abort, and the tracker that
turns ``__transaction_state`` values into the live state of each transactional id and one
change per commit or abort (history says nothing; a completion written again is said once;
an abort with a bumped epoch is the coordinator's)."""

from kafkalite.console import sentences as say
from kafkalite.console.transactions import TransactionTracker, TxnRecord
from kafkalite.txn.log_records import TxnLogEntry
from kafkalite.txn.metadata import TxnState

S = TxnState
ORDERS = [("orders", 0), ("orders", 1), ("orders", 2)]


def entry(state, partitions=(), epoch=0, pid=4001, start=1000, update=2200):
    return TxnLogEntry(pid, epoch, 60000, state, frozenset(partitions), update, start)


def records(tid, *entries, partition=7, history=False, first_offset=0):
    return [TxnRecord(partition, first_offset + n, tid, e, history)
            for n, e in enumerate(entries)]


def a_commit(tid="copier", partitions=ORDERS, **kw):
    return (entry(S.EMPTY, start=-1, update=900, **kw),
            entry(S.ONGOING, partitions[:1], update=1000, **kw),
            entry(S.ONGOING, partitions, update=1100, **kw),
            entry(S.PREPARE_COMMIT, partitions, update=2100, **kw),
            entry(S.COMPLETE_COMMIT, (), update=2200, **kw))


# --- sentences ---------------------------------------------------------------------------------

def test_partition_ranges():
    assert say.tp_ranges([("orders", 2), ("orders", 0), ("orders", 1)]) == "orders-0..2"
    assert say.tp_ranges([("b", 5), ("a", 0), ("b", 1), ("b", 2), ("b", 3)]) == \
        "a-0, b-1..3, b-5"
    assert say.tp_ranges([("t", 4)]) == "t-4"
    assert say.tp_ranges([]) == ""


def test_commit_and_abort_sentences():
    assert say.txn_committed(4001, 0, "copier", ORDERS, 1200) == (
        "producer 4001 (transactional id copier, epoch 0) committed a transaction on "
        "orders-0..2, 1.2 s after it began: read_committed consumers see its records now")
    assert say.txn_aborted(4001, 2, "copier", [("orders", 1)], None) == (
        "producer 4001 (transactional id copier, epoch 2) aborted a transaction on orders-1: "
        "read_committed consumers skip its records")
    assert say.txn_aborted(4001, 3, "copier", [("orders", 1)], 61000, fenced_epoch=2) == (
        "the transaction coordinator aborted the transaction of producer 4001 (transactional id "
        "copier) on orders-1, 61.0 s after it began: it timed out or a newer producer of the id "
        "fenced it (epoch 2 -> 3); read_committed consumers skip its records")


def test_consumer_offsets_are_said_apart_from_the_data():
    assert say.txn_committed(9, 1, "x", [("out", 0), ("__consumer_offsets", 12)], 0) == (
        "producer 9 (transactional id x, epoch 1) committed a transaction on out-0 with "
        "consumer offsets in __consumer_offsets-12, 0.0 s after it began: read_committed "
        "consumers see its records now")
    assert "a transaction of consumer offsets in __consumer_offsets-3:" in say.txn_committed(
        9, 1, "x", [("__consumer_offsets", 3)], -1)


# --- the tracker -------------------------------------------------------------------------------

def test_a_commit_is_one_change_with_the_partitions_of_its_prepare():
    tracker = TransactionTracker()
    changes = tracker.apply(records("copier", *a_commit()))
    assert [c.kind for c in changes] == ["txn_committed"]
    assert changes[0].sentence == say.txn_committed(4001, 0, "copier", ORDERS, 1200)
    assert changes[0].data == {"transactional_id": "copier", "producer_id": 4001,
                               "producer_epoch": 0,
                               "partitions": ["orders-0", "orders-1", "orders-2"],
                               "duration_ms": 1200}
    (shown,) = tracker.view({7: 2})
    assert shown == {"transactional_id": "copier", "producer_id": 4001, "producer_epoch": 0,
                     "state": "CompleteCommit", "open": False,
                     "partitions": ["orders-0", "orders-1", "orders-2"], "coordinator": 2,
                     "timeout_ms": 60000, "start_ms": 1000, "last_update_ms": 2200}


def test_an_open_transaction_is_shown_open_and_says_nothing_yet():
    tracker = TransactionTracker()
    assert tracker.apply(records("copier", *a_commit()[:3])) == []
    (shown,) = tracker.view()
    assert (shown["state"], shown["open"], shown["coordinator"]) == ("Ongoing", True, None)
    assert shown["partitions"] == ["orders-0", "orders-1", "orders-2"]
    prepare = tracker.apply(records("copier", a_commit()[3], first_offset=3))
    assert prepare == [] and tracker.view()[0]["state"] == "PrepareCommit"
    assert tracker.view()[0]["open"] is True
    done = tracker.apply(records("copier", a_commit()[4], first_offset=4))
    assert [c.kind for c in done] == ["txn_committed"]


def test_history_sets_the_state_but_says_nothing():
    tracker = TransactionTracker()
    assert tracker.apply(records("old", *a_commit(), history=True)) == []
    assert tracker.view()[0]["state"] == "CompleteCommit"
    # the next transaction of the same id is news
    second = (entry(S.ONGOING, [("orders", 1)], epoch=0, start=5000, update=5000),
              entry(S.PREPARE_ABORT, [("orders", 1)], epoch=0, start=5000, update=5400),
              entry(S.COMPLETE_ABORT, (), epoch=0, start=5000, update=5500))
    (change,) = tracker.apply(records("old", *second, first_offset=5))
    assert change.kind == "txn_aborted"
    assert change.sentence == say.txn_aborted(4001, 0, "old", [("orders", 1)], 500)
    assert change.data["fenced_epoch"] is None


def test_a_completion_written_again_is_said_once():
    tracker = TransactionTracker()
    commit = a_commit()
    assert len(tracker.apply(records("copier", *commit))) == 1
    # a re-read after a failure hands the same values again, or a new coordinator rewrites it
    assert tracker.apply(records("copier", commit[4], first_offset=5)) == []


def test_an_abort_with_a_bumped_epoch_is_the_coordinators():
    tracker = TransactionTracker()
    timed_out = (entry(S.ONGOING, [("orders", 2)], epoch=2, start=0, update=0),
                 entry(S.PREPARE_ABORT, [("orders", 2)], epoch=3, start=0, update=61000),
                 entry(S.COMPLETE_ABORT, (), epoch=3, start=0, update=61000))
    (change,) = tracker.apply(records("slow", *timed_out))
    assert change.data["fenced_epoch"] == 2
    assert change.sentence == say.txn_aborted(4001, 3, "slow", [("orders", 2)], 61000,
                                              fenced_epoch=2)


def test_ids_interleave_and_a_tombstone_or_dead_id_leaves_the_view():
    tracker = TransactionTracker()
    a, b = a_commit("a"), a_commit("b", partitions=[("pay", 4)], pid=4002)
    mixed = [TxnRecord(1, n, "a", e) for n, e in enumerate(a[:3])] + \
        [TxnRecord(2, n, "b", e) for n, e in enumerate(b)] + \
        [TxnRecord(1, 3 + n, "a", e) for n, e in enumerate(a[3:])]
    changes = tracker.apply(mixed)
    assert [(c.data["transactional_id"], c.data["partitions"]) for c in changes] == [
        ("b", ["pay-4"]), ("a", ["orders-0", "orders-1", "orders-2"])]
    tracker.apply([TxnRecord(1, 9, "a", None),
                   TxnRecord(2, 9, "b", entry(S.DEAD, pid=4002, update=9000))])
    assert tracker.view() == []
    assert "a" not in tracker.current and tracker.current["b"][1].state == S.DEAD
