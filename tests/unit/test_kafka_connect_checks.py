"""Unit tests of kafkalite.testing.kafka_connect's pure pieces: the at-least-once shape check that
judges the Kafka Connect copy after a broker kill (tests/jvm/test_kafka_connect.py), and the
reading of whole lines of the sink file."""

from __future__ import annotations

import pytest

from kafkalite.testing.kafka_connect import check_at_least_once, full_lines

SOURCE = [f"line {i}" for i in range(6)]


def test_an_exact_copy_has_no_duplicates():
    assert check_at_least_once(list(SOURCE), SOURCE) == 0


def test_a_rewind_replays_a_contiguous_range_and_is_counted():
    # delivered 0..3, rewound to 2 (the last committed offset), then on to the end
    got = SOURCE[:4] + SOURCE[2:]
    assert check_at_least_once(got, SOURCE) == 2


def test_a_batch_appended_twice_is_counted():
    got = SOURCE[:3] + SOURCE[1:3] + SOURCE[3:]
    assert check_at_least_once(got, SOURCE) == 2


def test_a_lost_line_fails():
    with pytest.raises(AssertionError, match="skips source lines 2..2"):
        check_at_least_once(SOURCE[:2] + SOURCE[3:], SOURCE)


def test_a_lost_tail_fails():
    with pytest.raises(AssertionError, match="4 of 6 source lines delivered"):
        check_at_least_once(SOURCE[:4], SOURCE)


def test_a_line_out_of_order_fails():
    with pytest.raises(AssertionError, match="skips"):
        check_at_least_once([SOURCE[1], SOURCE[0]] + SOURCE[2:], SOURCE)


def test_a_line_not_in_the_source_fails():
    with pytest.raises(AssertionError, match="not in the source"):
        check_at_least_once(SOURCE + ["line 6"], SOURCE)


def test_full_lines_leaves_out_a_line_being_written(tmp_path):
    path = tmp_path / "sink.txt"
    assert full_lines(str(path)) == []
    path.write_text("a\nb\nc")
    assert full_lines(str(path)) == ["a", "b"]
    path.write_text("a\n\nb\n")
    assert full_lines(str(path)) == ["a", "", "b"]
