"""``kafkalite tour --non-interactive`` runs every step to the end on a real ``cluster up
--detach`` of three brokers (with its console) and checks each prediction: kill -9 of a leader,
of the controller and of a transaction coordinator included, the killed brokers brought back
with ``cluster restart-broker``. The console said each transaction's commit or abort.

The tour grades its own predictions; this test does not take its word for them. After the tour,
confluent-kafka (librdkafka) reads what the tour left in the cluster and checks each lesson again,
with kafka-python's murmur2 as the independent partitioner: every key in its partition, each
partition's values ascending, the replicated topic whole after its leader's kill -9, retention's
earliest offset above 0, and read_committed / read_uncommitted seeing exactly the committed (and
aborted) records of the transactions step."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from confluent_kafka import Consumer, TopicPartition
from kafka.partitioner.default import murmur2

from kafkalite.testing.independent_read import read_to_end

pytestmark = [
    pytest.mark.integration, pytest.mark.slow,
    # kafka-python 3 loads its protocol schemas with importlib.resources' legacy functions
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]


def kafkalite(*args, timeout=600):
    return subprocess.run([sys.executable, "-P", "-m", "kafkalite", *args], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env=dict(os.environ, PYTHONUNBUFFERED="1"))


TOUR_KEYS = ["ada", "grace", "linus", "ada", "barbara", "grace", "ada", "ken"]


def read_all(bootstrap: str, topic: str, partitions: int, isolation="read_uncommitted"):
    """Every record of ``topic`` as (partition, offset, key, value), read by confluent-kafka
    (librdkafka's own view, not the tour's numbers)."""
    return [(m.partition(), m.offset(), (m.key() or b"").decode(), m.value().decode())
            for m in read_to_end(bootstrap, topic, partitions, isolation_level=isolation)]


def watermarks(bootstrap: str, topic: str, partition: int) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"tour-check-{topic}"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
    finally:
        consumer.close()


def check_what_the_tour_left(bootstrap: str, run_id: str) -> None:
    rows = read_all(bootstrap, f"orders-{run_id}", 3)
    keyed = [(p, k) for p, _, k, _ in rows if k in TOUR_KEYS]
    assert len(keyed) == len(TOUR_KEYS), rows
    assert all(p == (murmur2(k.encode()) & 0x7FFFFFFF) % 3 for p, k in keyed), keyed
    rows = read_all(bootstrap, f"sequence-{run_id}", 3)
    assert sorted(int(v) for *_, v in rows) == list(range(30))
    for p in range(3):
        values = [int(v) for q, _, _, v in sorted(rows) if q == p]
        assert values == sorted(values), (p, values)
    rows = read_all(bootstrap, f"replicated-{run_id}", 1)
    assert len(rows) == 10 and [o for _, o, _, _ in rows] == list(range(10))
    rows = read_all(bootstrap, f"short-lived-{run_id}", 1)
    low, high = watermarks(bootstrap, f"short-lived-{run_id}", 0)
    assert 0 < low <= high and high == 60 and len(rows) == high - low
    committed = read_all(bootstrap, f"payments-{run_id}", 3, "read_committed")
    paid = sorted([f"paid-{n}" for n in range(6)] + [f"paid-late-{n}" for n in range(6)])
    assert sorted(v for *_, v in committed) == paid
    everything = read_all(bootstrap, f"payments-{run_id}", 3)
    assert sorted(v for *_, v in everything) == sorted(paid + [f"refund-{n}" for n in range(3)])


def test_tour_runs_every_step_and_every_prediction_comes_true(tmp_path):
    data_dir = str(tmp_path / "cluster")
    up = kafkalite("cluster", "up", "--detach", "--brokers", "3", "--zk-port", "0",
                   "--base-port", "0", "--no-zk-force-sync", "--data-dir", data_dir,
                   "--override", "log.retention.check.interval.ms=2000", timeout=300)
    assert up.returncode == 0, up.stderr
    assert "console: http://127.0.0.1:" in up.stderr
    try:
        tour = kafkalite("tour", "--non-interactive", "--data-dir", data_dir)
        print(tour.stdout[-6000:])
        assert tour.returncode == 0, tour.stdout[-3000:] + tour.stderr[-3000:]
        out = tour.stdout
        for number, title in enumerate(["Topics and partitions", "Keys choose partitions",
                                         "Offsets, and replay", "Order within a partition",
                                         "A group is a queue", "Replication, and a leader's",
                                         "Controller failover", "Retention",
                                         "Exactly-once: transactions, and a kill -9"], 1):
            assert f"── {number}. {title}" in out
        assert out.count("✓ as predicted") == 20
        assert "kill -9" in out.split("── 9. ")[1] and "HighWatermark: " in out
        assert "$ kill -9 " in out and "$ kafkalite cluster restart-broker " in out
        assert "skipped" not in out and "Not waiting" not in out
        assert out.rstrip().endswith("every prediction came true.")
        with open(os.path.join(data_dir, "console.log"), errors="replace") as f:
            console = f.read()
        run_id = re.search(r"--transactional-id tx-commit-(\w+)", out).group(1)
        for tid, verb in ((f"tx-commit-{run_id}", "committed"), (f"tx-abort-{run_id}", "aborted"),
                          (f"tx-failover-{run_id}", "committed")):
            said = re.findall(rf"\(transactional id {tid}, epoch \d+\) {verb} a transaction on "
                              rf"payments-{run_id}-", console)
            assert len(said) == 1, (tid, console[-3000:])
        bootstrap = re.search(r"KAFKALITE_BOOTSTRAP_SERVER=(\S+)", up.stdout).group(1)
        check_what_the_tour_left(bootstrap, run_id)
        status = kafkalite("cluster", "status", "--data-dir", data_dir)
        assert status.returncode == 0, status.stdout     # the killed brokers are back
    finally:
        down = kafkalite("cluster", "down", "--data-dir", data_dir, timeout=300)
        assert down.returncode == 0, down.stderr
