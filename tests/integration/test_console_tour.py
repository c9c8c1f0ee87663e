"""``kafkalite tour --non-interactive`` runs every step to the end on a real ``cluster up
--detach`` of three brokers (with its console) and checks each prediction: kill -9 of a leader,
of the controller and of a transaction coordinator included, the killed brokers brought back
with ``cluster restart-broker``. The console said each transaction's commit or abort."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def kafkalite(*args, timeout=600):
    return subprocess.run([sys.executable, "-P", "-m", "kafkalite", *args], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env=dict(os.environ, PYTHONUNBUFFERED="1"))


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
        status = kafkalite("cluster", "status", "--data-dir", data_dir)
        assert status.returncode == 0, status.stdout     # the killed brokers are back
    finally:
        down = kafkalite("cluster", "down", "--data-dir", data_dir, timeout=300)
        assert down.returncode == 0, down.stderr
