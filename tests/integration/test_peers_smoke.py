"""bench/peers.py runs end to end (issue 26): Redis Streams, kafkalite's own clients and
confluent-kafka against kafkalite, each with a producer paced at 1,000 records/s and a consumer in
a process of its own, and every peer's JSON line carries positive percentiles in order. Nothing
here judges a time: the bench prints figures, this only checks that each peer was measured.
Apache Kafka's peer is left to the bench itself (its JVM's start-up is the vs_kafka smoke test's)."""

from __future__ import annotations

import shutil

import pytest
from bench_tools import run_bench

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PEERS = ["redis", "kafkalite-native", "kafkalite"]


@pytest.mark.timeout(300)
def test_peers_measures_every_peer(tmp_path):
    if shutil.which("redis-server") is None:     # never a skip: scripts/setup.sh installs it
        pytest.fail("redis-server is missing: run scripts/setup.sh --apache-kafka "
                    "(or apt-get install redis-server)", pytrace=False)
    stdout, rows = run_bench("peers.py", "--peers", *PEERS, "--rates", "1000", "--seconds", "2",
                             "--reps", "1", json_path=tmp_path / "peers.jsonl", timeout_s=280)
    assert [row["peer"] for row in rows] == PEERS
    for row in rows:
        assert 0 < row["p50"] <= row["p99"] <= row["p99.9"], row
        assert row["cold"]["p50"] > 0 and len(row["passes"]) == 1
        assert f"| {row['peer']} | 1,000 rec/s |" in stdout
