"""Kafka-protocol fuzz of a 3-broker kafkalite cluster, with live confluent-kafka clients beside it:
the bench version of tests/system/test_kafka_protocol_fuzz.py.

    python bench/kafka_fuzz.py [--cases 20000] [--seed N] [--workers 16] [--wait 0.5]
                               [--no-live]

It starts its own ZooKeeper and three brokers (kafkalite.testing), creates a replicated topic for
the live clients (rf 3, min.insync.replicas 2) and one for the fuzz, runs ``--cases`` mutated
Kafka request frames (tests/system/kafka_fuzz_tools.py), each on a raw socket of its own, and
prints cases/s, how the brokers met the cases (answered / closed / silent), and the invariants:
brokers alive and answering Metadata, no malformed or misordered answer, no error in the broker
logs, live clients progressing, every acknowledged record readable once.
Exit status 1 when an invariant broke.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "system"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--wait", type=float, default=0.5,
                        help="seconds a case waits for a broker that neither answers nor closes")
    parser.add_argument("--no-live", action="store_true", help="fuzz without live clients")
    args = parser.parse_args()

    from confluent_kafka.admin import AdminClient, NewTopic

    from kafka_fuzz_tools import (LiveTraffic, broker_answers_metadata, log_sizes, run_fuzz,
                                  unexpected_errors, verify_live)
    from kafkalite.testing.cluster import ClusterError, LocalCluster, wait_until
    from kafkalite.testing.zookeeper import start_zookeeper

    workdir = tempfile.mkdtemp(prefix="kafkalite-fuzz-")
    zk = start_zookeeper(os.path.join(workdir, "zk"))
    cluster = LocalCluster(zk.connect_string + "/fuzz-" + uuid.uuid4().hex[:8], num_brokers=3,
                           workdir=os.path.join(workdir, "brokers"),
                           overrides={"replica.lag.time.max.ms": 10000})
    problems: list[str] = []
    try:
        cluster.start()
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([
                NewTopic("live", 3, 3, config={"min.insync.replicas": "2"}),
                NewTopic("fuzz-target", 1, 3)]).values():
            future.result(60)
        del admin
        for p in range(3):
            wait_until(lambda: cluster.leader_of("live", p) > 0, 60, "leaders")
        live = None
        if not args.no_live:
            live = LiveTraffic(bootstrap, "live", 3).start()
            wait_until(lambda: min(live.counts()) > 100, 60, "live clients under way")
        before = live.counts() if live else (0, 0)
        logs = log_sizes([b.log_path for b in cluster.brokers.values()])
        ports = [b.port for b in cluster.brokers.values()]
        print(f"fuzzing {args.cases} cases (seed {args.seed}, {args.workers} workers) against "
              f"brokers on ports {ports}" + ("" if live else ", no live clients"))

        def progress(report):
            print(f"  ... {report.cases} cases, {report.cases / (time.monotonic() - start):.0f}"
                  f" cases/s", flush=True)

        start = time.monotonic()
        report = run_fuzz(ports, "fuzz-target", args.cases, seed=args.seed,
                          workers=args.workers, wait_s=args.wait, progress=progress)
        during = live.counts() if live else (0, 0)
        if live:
            try:
                wait_until(lambda: min(live.counts()) > min(during) + 100, 60,
                           "more live traffic")
            except ClusterError as exc:
                problems.append(f"live clients after the fuzz: {exc}")
            live.stop()
        print(f"\n{report.summary()}")
        print(f"by kind: {dict(sorted(report.kinds.items()))}")

        dead = [b.broker_id for b in cluster.brokers.values() if not b.running]
        if dead:
            problems.append(f"brokers {dead} died")
        for broker in cluster.brokers.values():
            if broker.running:
                try:
                    broker_answers_metadata(broker.port)
                except Exception as exc:  # noqa: BLE001
                    problems.append(f"broker {broker.broker_id} does not answer Metadata: {exc}")
        problems += [f"bad answer: {p}" for p in report.problems[:10]]
        problems += [f"connection error: {e}" for e in report.errors[:10]]
        problems += [f"logged: {e}" for e in unexpected_errors(logs)[:10]]
        if live:
            print(f"live producer: sent {live.sent}, acknowledged {len(live.acked)}, failed "
                  f"{len(live.failed)}; consumer read {len(live.consumed)} (acked/read "
                  f"{before} before the fuzz, {during} right after it)")
            if not (during[0] > before[0] and during[1] > before[1]):
                problems.append("live clients stalled during the fuzz")
            if live.failed:
                problems.append(f"{len(live.failed)} live records failed: {live.failed[:3]}")
            if not problems:
                problems += verify_live(live)
    finally:
        cluster.stop()
        zk.stop()
    if problems:
        print("\nINVARIANTS BROKEN:")
        for problem in problems:
            print(f"  - {problem}")
        print(f"(broker logs kept in {workdir}/brokers)")
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    print("\ninvariants hold: brokers alive and answering, answers well-formed and in order, "
          "no broker errors" + (", every acknowledged record read back once"
                                if not args.no_live else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
