"""How long ``kafkalite cluster up --detach`` takes until the cluster is ready, and ``down`` after.

    python bench/cluster_up_bench.py [--brokers 1 3] [--runs 3] [--no-zk-force-sync-too]

Each run is what a script does: ``cluster up --detach`` as a process of its own (it returns once
ZooKeeper serves and every broker answers Metadata listing all brokers, with a controller), then
``cluster down`` (brokers one by one with a controlled shutdown, then ZooKeeper), each on fresh
free ports and a fresh data dir. Prints the median and the range per broker count.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafkalite.local.ports import free_port  # noqa: E402


def kafkalite(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-P", "-m", "kafkalite", *args],
                            capture_output=True, text=True, stdin=subprocess.DEVNULL,
                            check=False)
    return time.perf_counter() - start, result


def one_run(brokers: int, force_sync: bool) -> tuple[float, float]:
    data_dir = tempfile.mkdtemp(prefix="kafkalite-up-bench-")
    try:
        up_s, result = kafkalite(
            "cluster", "up", "--detach", "--brokers", str(brokers), "--data-dir", data_dir,
            "--zk-port", str(free_port()), "--base-port", "0",
            "--zk-force-sync" if force_sync else "--no-zk-force-sync")
        if result.returncode != 0:
            raise SystemExit(f"cluster up failed:\n{result.stderr}")
        down_s, result = kafkalite("cluster", "down", "--data-dir", data_dir)
        if result.returncode != 0:
            raise SystemExit(f"cluster down failed:\n{result.stderr}")
        return up_s, down_s
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--brokers", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-zk-force-sync-too", action="store_true",
                        help="also measure with ZooKeeper's forceSync off")
    args = parser.parse_args()
    modes = [True, False] if args.no_zk_force_sync_too else [True]
    print(f"{'brokers':>7}  {'forceSync':>9}  {'up --detach (ready)':>24}  {'down':>22}")
    for force_sync in modes:
        for brokers in args.brokers:
            ups, downs = zip(*(one_run(brokers, force_sync) for _ in range(args.runs)))
            print(f"{brokers:>7}  {'yes' if force_sync else 'no':>9}  "
                  f"{statistics.median(ups):>6.2f} s ({min(ups):.2f}-{max(ups):.2f})      "
                  f"{statistics.median(downs):>6.2f} s ({min(downs):.2f}-{max(downs):.2f})",
                  flush=True)


if __name__ == "__main__":
    main()
