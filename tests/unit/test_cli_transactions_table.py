"""The pure parts of ``kafkalite transactions``: folding ``__transaction_state`` records (newest
value per id, tombstones, undecodable records) and Kafka 3.0 TransactionsCommand's table."""

from __future__ import annotations

from kafkalite.cli import transactions as tool
from kafkalite.txn import log_records
from kafkalite.txn.log_records import TxnLogEntry
from kafkalite.txn.metadata import TxnState

K = log_records.key


def _v(state, pid=10, epoch=0, partitions=(), start=100, last=200, timeout=60000):
    return log_records.value(TxnLogEntry(pid, epoch, timeout, state, partitions, last, start))


def test_fold_keeps_the_newest_value_and_drops_tombstones():
    warnings = []
    records = [
        (0, 0, K("a"), _v(TxnState.EMPTY, start=-1)),
        (0, 1, K("a"), _v(TxnState.ONGOING, partitions={("t", 1)})),
        (0, 2, K("gone"), _v(TxnState.COMPLETE_COMMIT)),
        (0, 3, K("gone"), None),
        (3, 0, K("b"), _v(TxnState.PREPARE_COMMIT, pid=11, partitions={("t", 0)})),
        (3, 1, b"\x00\x09junk", b"x"),
    ]
    state = tool.fold(records, warnings.append)
    assert set(state) == {"a", "b"}
    assert state["a"][0] == 0 and state["a"][1].state == TxnState.ONGOING
    assert state["b"][0] == 3 and state["b"][1].producer_id == 11
    assert len(warnings) == 1 and "__transaction_state-3 offset 1" in warnings[0]


def test_table_is_kafkas_pretty_print():
    lines = tool.table_lines(("A", "Longer"), [("xyz", "1"), ("", "22")])
    assert lines == ["A  \tLonger\t", "xyz\t1     \t", "   \t22    \t"]


def test_list_rows_leave_out_dead_and_sort_by_coordinator_then_id():
    state = {
        "z": (1, TxnLogEntry(5, 0, 1, TxnState.ONGOING, {("t", 0)}, 1, 1)),
        "y": (2, TxnLogEntry(6, 0, 1, TxnState.COMPLETE_ABORT, (), 1, 1)),
        "x": (1, TxnLogEntry(7, 0, 1, TxnState.EMPTY, (), 1, -1)),
        "dead": (1, TxnLogEntry(8, 0, 1, TxnState.DEAD, (), 1, 1)),
    }
    rows = tool.list_rows(state, {1: 3, 2: 1})
    assert rows == [("y", "1", "6", "CompleteAbort"), ("x", "3", "7", "Empty"),
                    ("z", "3", "5", "Ongoing")]
    lines = tool.table_lines(tool.LIST_HEADERS, rows)
    assert lines[0] == "TransactionalId\tCoordinator\tProducerId\tTransactionState\t"
    assert lines[1] == "y              \t1          \t6         \tCompleteAbort   \t"


def test_describe_row():
    entry = TxnLogEntry(4000, 3, 60000, TxnState.ONGOING, {("b", 0), ("a", 2), ("a", 10)},
                        1_000_500, 1_000_000)
    assert tool.describe_row("tx", 7, entry, {7: 2}, now_ms=1_002_000) == (
        "2", "tx", "4000", "3", "Ongoing", "60000", "1000000", "2000", "a-2,a-10,b-0")
    empty = TxnLogEntry(4000, 4, 60000, TxnState.EMPTY, (), 5, -1)
    assert tool.describe_row("tx", 7, empty, {}, now_ms=9) == (
        "-1", "tx", "4000", "4", "Empty", "60000", "None", "None", "")
