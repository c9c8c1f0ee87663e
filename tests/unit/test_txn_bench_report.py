"""bench/txn_bench.py's arithmetic and report: the nearest-rank percentile, how many transactions
a row runs, the medians and ratio per row, the table and the options (no brokers)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))

import txn_bench  # noqa: E402
from txn_bench import METRICS, Plan, parse_args, percentile, summary, table  # noqa: E402


def test_percentile_is_nearest_rank_never_interpolated():
    values = [float(v) for v in range(100, 0, -1)]          # 1..100, unsorted
    assert percentile(values, 0.50) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile([7.0, 3.0, 5.0], 0.99) == 7.0         # a few samples: p99 is the slowest
    assert percentile([4.0], 0.5) == 4.0


def test_transactions_per_row_are_the_budget_bounded_both_ways():
    plan = Plan(records=100_000, min_transactions=3, max_transactions=100)
    assert plan.transactions(1) == 100                       # capped: commits, not records
    assert plan.transactions(100) == 100
    assert plan.transactions(10_000) == 10
    assert Plan(2000, 1, 5).transactions(10_000) == 1        # the floor
    assert Plan(2000, 3, 5).transactions(10_000) == 3


def _samples(scale: float) -> dict:
    return {key: [(scale * (i + 1), 2.0 + i) for i in range(3)] for key in METRICS}


def test_summary_has_medians_loads_and_the_ratio_per_row():
    lines = summary({"kafkalite": _samples(2.0), "kafka": _samples(1.0)})
    assert [(line["row"], line["metric"]) for line in lines] == METRICS
    first = lines[0]
    assert first["kafkalite"] == {"median": 4.0, "values": [2.0, 4.0, 6.0], "load": 3.0}
    assert first["kafka"]["median"] == 2.0
    assert all(line["ratio"] == pytest.approx(2.0) for line in lines)


def test_one_system_has_no_ratio_and_the_table_shows_dashes():
    lines = summary({"kafkalite": _samples(1000.0)})
    assert all(line["ratio"] is None and "kafka" not in line for line in lines)
    text = table(lines, 3)
    row = next(t for t in text.splitlines() if t.startswith("idempotent produce"))
    assert row.split()[3:] == ["2,000", "-", "-", "3.0", "-"]


def test_table_has_one_line_per_row_and_metric_with_both_systems():
    text = table(summary({"kafkalite": _samples(1.5), "kafka": _samples(1.0)}), 3)
    body = text.splitlines()[3:]
    assert len(body) == len(METRICS) == 12
    p99 = next(t for t in body if t.startswith(txn_bench.txn_row(100)) and "p99" in t)
    assert p99.split()[-5:] == ["3.0", "2.0", "1.50", "3.0", "3.0"]


def test_options_quick_defaults_and_refusals():
    quick = parse_args(["--quick", "--systems", "kafkalite"])
    assert (quick.records, quick.repetitions, quick.max_transactions) == (2000, 3, 5)
    assert quick.systems == ["kafkalite"]
    full = parse_args([])
    assert (full.records, full.internal_partitions, full.systems) == \
        (100_000, 50, ["kafkalite", "kafka"])
    with pytest.raises(SystemExit):
        parse_args(["--systems", "redpanda"])
    with pytest.raises(SystemExit):
        parse_args(["--repetitions", "0"])
