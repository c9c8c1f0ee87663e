"""Conformance on clusters of its own: ZooKeeper, 3 kafkalite brokers, 3 Apache Kafka 2.8.2
brokers (both with SHARED_SETTINGS), and for the ACL scenarios one broker of each with an
authorizer (conformance.clusters); the whole catalogue, a table on stdout, docs/conformance.md.

    .venv/bin/python bench/conformance.py [--workers 4] [--only NAME ...] [--report PATH]

Exits 1 when a scenario differs without an allowlist entry, an entry is stale, or a scenario
could not run; 0 otherwise. ``--only`` runs some scenarios and writes no report.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from kafkalite.testing.apache_kafka import ApacheKafkaCluster  # noqa: E402
from kafkalite.local.cluster import LocalCluster  # noqa: E402
from kafkalite.testing.conformance import report  # noqa: E402
from kafkalite.testing.conformance.catalogue import BY_NAME, SCENARIOS  # noqa: E402
from kafkalite.testing.conformance.clusters import AuthorizerPair  # noqa: E402
from kafkalite.testing.conformance.runner import run_all  # noqa: E402
from kafkalite.testing.oracle_fixtures import SHARED_SETTINGS  # noqa: E402
from kafkalite.local.zookeeper import create_chroots, start_zookeeper  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--only", nargs="*", default=None, help="scenario names")
    parser.add_argument("--report", default=os.path.join(ROOT, report.DEFAULT_PATH))
    args = parser.parse_args(argv)
    scenarios = [BY_NAME[n] for n in args.only] if args.only else SCENARIOS

    workdir = tempfile.mkdtemp(prefix="kafkalite-conformance-")
    started = time.monotonic()
    zookeeper = start_zookeeper(os.path.join(workdir, "zk"))
    kl_root, ak_root = create_chroots(zookeeper.connect_string, "kl-conformance", "ak-conformance")
    kafkalite = LocalCluster(f"{zookeeper.connect_string}{kl_root}", 3,
                             workdir=os.path.join(workdir, "kafkalite"),
                             overrides=dict(SHARED_SETTINGS), die_with_parent=signal.SIGKILL)
    kafka = ApacheKafkaCluster(f"{zookeeper.connect_string}{ak_root}", 3,
                               workdir=os.path.join(workdir, "kafka"),
                               overrides=dict(SHARED_SETTINGS))
    pair = AuthorizerPair(zookeeper.connect_string, workdir)
    try:
        kafkalite.spawn()
        kafka.start()
        kafkalite.wait_for_brokers(list(kafkalite.brokers))
        pair.start()
        print(f"clusters up in {time.monotonic() - started:.0f} s; running {len(scenarios)} "
              f"scenarios, {args.workers} at a time", flush=True)
        servers = {"shared": {"kafkalite": kafkalite.bootstrap_servers,
                              "kafka": kafka.bootstrap_servers},
                   "authorizer": pair.servers}
        run_started = time.monotonic()
        rows = run_all(scenarios, servers, workers=args.workers,
                       progress=lambda row: print(f"  {row.verdict:<11} {row.seconds:5.1f} s  "
                                                  f"{row.scenario}", flush=True))
        seconds = time.monotonic() - run_started
    finally:
        pair.stop()
        kafkalite.stop()
        kafka.stop()
        zookeeper.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print()
    print(report.table(rows))
    tally = report.counts(rows)
    print(f"\n{len(rows)} scenarios in {seconds:.0f} s: " +
          ", ".join(f"{n} {v}" for v, n in sorted(tally.items())))
    for row in rows:
        if row.failed:
            print("\n" + row.explain())
    if not args.only:
        print(f"report: {report.write(rows, args.report, seconds)}")
    return 1 if any(row.failed for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
