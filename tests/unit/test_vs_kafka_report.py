"""bench/vs_kafka.py's arithmetic and table: percentiles of latency samples, medians of passes,
the ratio kafkalite/Kafka, and rows measured on one system only."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))

import vs_kafka  # noqa: E402
import vs_kafka_clients  # noqa: E402


def test_percentiles_in_ms_of_samples_in_us():
    samples = [float(i) for i in range(1, 1001)]          # 1 us .. 1000 us
    got = vs_kafka_clients.percentiles(list(reversed(samples)))
    assert got == {"p50": 0.501, "p99": 0.991, "p99.9": 1.0, "max": 1.0}


def test_percentiles_without_samples_raise():
    with pytest.raises(RuntimeError):
        vs_kafka_clients.percentiles([])


def test_row_median_and_ratio():
    row = vs_kafka.Row("p1", "produce", "rec/s", True)
    row.warm = {"kafkalite": [3.0, 1.0, 2.0], "kafka": [1.0, 1.0, 4.0]}
    assert row.value("kafkalite") == 2.0
    assert row.value("kafka") == 1.0
    assert row.ratio() == 2.0


def test_table_has_both_absolutes_ratio_cold_and_load():
    row = vs_kafka.Row("p1", "produce 1 partition", "rec/s", True)
    row.warm = {"kafkalite": [1_500_000.0], "kafka": [1_200_000.0]}
    row.cold = {"kafkalite": 700_000.0, "kafka": None}
    row.load = {"kafkalite": 1.25, "kafka": 2.5}
    only = vs_kafka.Row("pkl", "kafkalite client loop", "rec/s", True)
    only.warm = {"kafkalite": [600_000.0]}
    only.load = {"kafkalite": 1.0}
    lines = vs_kafka.table([row, only]).splitlines()
    assert lines[2] == ("| produce 1 partition | 1.50M | 1.20M | ×1.25 | 700k | - "
                        "| 1.2 / 2.5 |")
    assert lines[3] == "| kafkalite client loop | 600k | - | - | - | - | 1.0 / 0.0 |"


@pytest.mark.parametrize("value, unit, shown", [
    (0.456, "ms", "0.46 ms"), (123.4, "ms", "123 ms"), (87.2, "MB", "87 MB"),
    (6.34, "s", "6.34 s"), (None, "s", "-"), (91.6, "%", "92 %")])
def test_formats(value, unit, shown):
    assert vs_kafka._fmt(value, unit) == shown
