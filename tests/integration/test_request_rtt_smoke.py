"""bench/request_rtt.py runs end to end (issue 26): one request at a time against kafkalite and
Apache Kafka 2.8.2, produce and fetch, and each system's JSON line carries a round trip, a
request count and the broker's CPU per request. Nothing here judges a time: the bench prints
figures, this only checks that both systems were measured, and answered every request."""

from __future__ import annotations

import pytest
from bench_tools import require_apache_kafka, run_bench

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.timeout(300)
def test_request_rtt_measures_both_systems(tmp_path):
    require_apache_kafka()
    stdout, rows = run_bench("request_rtt.py", "--seconds", "1", "--warm-up", "0.5", "--fetch",
                             json_path=tmp_path / "rtt.jsonl", timeout_s=280)
    assert [row["system"] for row in rows] == ["kafkalite", "kafka"]
    for row in rows:
        assert row["fetch"] and row["requests"] >= 2 and row["requests"] % 2 == 0, row
        assert 0 < row["p50_us"] <= row["p99_us"], row
        assert row["user_us"] + row["system_us"] > 0, row
    assert "| kafkalite / Kafka |" in stdout
