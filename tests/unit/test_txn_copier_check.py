"""The exactly-once judge of the copier runs (``txn_copier.exactly_once_problems``): it names
duplicates, gaps, copies on the wrong partition and records that copy nothing."""

from __future__ import annotations

from kafkalite.testing.txn_copier import exactly_once_problems, parse_args

ENDS = {0: 3, 1: 2}


def _copy(pairs):
    """Output records (partition, offset, value) copying the input (partition, offset) pairs."""
    return [(p, i, b"%d:%d:record" % (p, o)) for i, (p, o) in enumerate(pairs)]


def test_a_complete_copy_has_no_problem():
    assert exactly_once_problems(_copy([(0, 0), (1, 0), (0, 1), (0, 2), (1, 1)]), ENDS) == []


def test_a_duplicate_is_named():
    problems = exactly_once_problems(_copy([(0, 0), (0, 1), (0, 1), (0, 2), (1, 0), (1, 1)]),
                                     ENDS)
    assert problems == ["1 inputs copied more than once, e.g. [(0, 1)]"]


def test_a_gap_is_named():
    assert exactly_once_problems(_copy([(0, 0), (0, 2), (1, 0), (1, 1)]), ENDS) == [
        "1 inputs missing, e.g. [(0, 1)]"]


def test_a_copy_on_another_partition_and_foreign_records_are_named():
    records = _copy([(0, 0), (0, 1), (0, 2), (1, 0)]) + [(0, 9, b"1:1:record"),
                                                          (1, 10, b"1:7:x"), (1, 11, b"junk")]
    assert exactly_once_problems(records, ENDS) == [
        "output 0@9: a copy of input partition 1",
        "output 1@11: not a copy: b'junk'",
        "1 copies of no input, e.g. [(1, 7)]",
    ]


def test_values_may_hold_the_separator():
    assert exactly_once_problems([(0, 0, b"0:0:a:b:c")], {0: 1}) == []


def test_arguments():
    args = parse_args(["--bootstrap", "b:1", "--input", "i", "--output", "o", "--group", "g",
                       "--transactional-id", "t", "--stop-in-transaction", "3"])
    assert (args.batch, args.transaction_timeout_ms, args.stop_in_transaction) == (500, 60000, 3)
