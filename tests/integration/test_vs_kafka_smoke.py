"""bench/vs_kafka.py --quick runs end to end (issue 26): kafkalite and Apache Kafka 2.8.2 one after
the other, librdkafka's rdkafka_performance built by the bench's own step, and every row of its
JSON lines carries a positive figure for both systems. Nothing here judges a time: the bench
prints figures, this only checks that each shape was measured on both."""

from __future__ import annotations

import pytest
from bench_tools import require_apache_kafka, run_bench

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.timeout(600)
def test_vs_kafka_quick_measures_every_row_on_both_systems(tmp_path):
    require_apache_kafka()
    stdout, rows = run_bench("vs_kafka.py", "--quick", json_path=tmp_path / "rows.jsonl",
                             timeout_s=580)
    keys = {row["key"] for row in rows}
    # the rows that matter most are there (throughput, acks=all, latency, start-up, memory)
    assert {"p1", "c1", "p6", "p3all", "up3", "rss_end1", "pjava", "pck", "pkl", "p10", "p1000",
            "p1000ratio",
            "lat-delivery-1-1-1000-p50", "lat-delivery-1-1-5000-p99",
            "lat-end-to-end-1-1-1000-p99", "lat-delivery-3--1-1000-p50", "fo_kill",
            "fo_term"} <= keys
    # kafkalite's own client speaks only kafkalite's native protocol: those rows have one system
    assert {row["key"] for row in rows if row["only"]} == {"pkl", "ckl"}
    missing = [(row["key"], system) for row in rows
               for system in ((row["only"],) if row["only"] else ("kafkalite", "kafka"))
               if not (isinstance(row[system], (int, float)) and row[system] > 0)]
    assert not missing, f"rows without a positive figure: {missing}"
    assert all(row["ratio"] > 0 for row in rows if not row["only"])
    # the table printed holds every row
    for row in rows:
        assert row["shape"] in stdout
