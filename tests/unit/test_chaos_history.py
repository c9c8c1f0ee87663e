"""bench/chaos_history.py: the accounting that decides whether a chaos run lost anything."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))

from chaos_history import (FaultTiming, account, consumer_mismatches,  # noqa: E402
                           timing_table)


def _acked(*pairs):
    """(sequence, partition, offset) -> the producer's (key, sequence, partition, offset)."""
    return [(b"key-%d" % (s % 20), s, p, o) for s, p, o in pairs]


def _value(sequence):
    return b"key-%d:%d" % (sequence % 20, sequence)


def test_every_acknowledged_record_at_its_offset_is_clean():
    reads = {0: {0: _value(0), 1: _value(2), 2: b"probe-0"}, 1: {0: _value(1)}}
    result = account(_acked((0, 0, 0), (2, 0, 1), (1, 1, 0)), [(b"probe-0", 0, 2)], reads)
    assert (result.acknowledged, result.probes, result.read) == (3, 1, 4)
    assert not result.failed
    assert (result.lost, result.misplaced, result.duplicated, result.out_of_order) == \
        ([], [], 0, [])


def test_a_record_missing_from_the_log_is_lost_and_one_elsewhere_misplaced():
    reads = {0: {0: _value(0), 1: _value(3)}}
    result = account(_acked((0, 0, 0), (2, 0, 1), (3, 0, 2)), [(b"probe-7", 0, 5)], reads)
    assert result.lost == [(0, 1, _value(2)), (0, 5, b"probe-7")]
    assert result.misplaced == [(0, 2, _value(3), [(0, 1)])]
    assert result.failed


def test_a_retried_batch_is_a_duplicate_and_an_older_sequence_later_is_out_of_order():
    reads = {0: {0: _value(4), 1: _value(6), 2: _value(4), 3: _value(6), 4: _value(5)}}
    result = account([], [], reads)
    assert result.duplicated == 2
    assert result.out_of_order == [(0, 4, 5, 6)]
    assert not result.failed             # order and duplicates are reported, not failures


def test_a_live_read_that_the_final_log_does_not_hold_is_a_mismatch():
    live = {0: {0: _value(0), 1: _value(9)}}
    final = {0: {0: _value(0), 1: _value(1)}}
    assert consumer_mismatches(live, final) == [(0, 1, _value(9), _value(1))]


def test_timing_table_gives_count_and_min_median_max_per_kind():
    table = timing_table([FaultTiming("leader-kill", 1.0, 4.0),
                          FaultTiming("leader-kill", 3.0, 2.0),
                          FaultTiming("leader-kill", 2.0, 6.0),
                          FaultTiming("zookeeper-quorum-loss", None, 9.5)],
                         ["leader-kill", "full-disk", "zookeeper-quorum-loss"])
    rows = {line.split()[0]: line.split()[1:] for line in table.splitlines()[2:]}
    assert rows["leader-kill"] == ["3", "3", "1.00", "2.00", "3.00", "2.00", "4.00", "6.00"]
    assert rows["full-disk"] == ["0", "0", "-", "-", "-", "-", "-", "-"]
    assert rows["zookeeper-quorum-loss"] == ["1", "0", "-", "-", "-", "9.50", "9.50", "9.50"]
