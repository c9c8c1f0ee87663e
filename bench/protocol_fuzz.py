"""Mutation fuzz of a 3-broker kafkalite cluster over both of its protocols (Kafka's and the
native msgpack one), with live clients beside it: the bench version of
tests/system/test_protocol_fuzz.py.

    python bench/protocol_fuzz.py [--cases 20000] [--seed N] [--workers 16] [--wait 0.5]
                                  [--native-share 0.5] [--no-live]
                                  [--time-budget SECONDS]
                                  [--leave-out-known-bug NAME]

It starts its own ZooKeeper and three brokers (kafkalite.testing), then runs one fuzz session
(tests/system/protocol_fuzz_session.py): live topics for confluent-kafka and for kafkalite's own
clients (rf 3, min.insync.replicas 2), native seeds recorded from a real kafkalite client session,
controller requests ZooKeeper does not back, and ``--cases`` mutated frames, each on a raw socket
of its own. It prints cases/s, outcome counts per protocol and kind, and the invariants (see the
session module). Exit status 1 when an invariant broke (the broker logs are kept then).

Each run takes a fresh seed and prints it first; ``--seed N`` replays one (the same choices in
the same order; see protocol_fuzz_session.fresh_seed for what a replay can and cannot repeat).

``--leave-out-known-bug`` leaves out the cases that trigger a broker bug the fuzz already found
(tests/system/native_fuzz_cases.py KNOWN_BUGS), so a long run still says something about
everything else while that bug is open; the cases left out are counted and printed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
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
    parser.add_argument("--seed", type=int, default=None,
                        help="replay this seed (default: a fresh one, printed)")
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--wait", type=float, default=0.5,
                        help="seconds a case waits for a broker that neither answers nor closes")
    parser.add_argument("--native-share", type=float, default=0.5,
                        help="the share of cases made from native seeds (the rest: Kafka)")
    parser.add_argument("--no-live", action="store_true", help="fuzz without live clients")
    parser.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                        help="start no new chunk of cases after this long (then check the "
                             "invariants as usual); the report says how many cases ran")
    parser.add_argument("--leave-out-known-bug", action="append", default=[], metavar="NAME",
                        help="leave out the triggers of a known broker bug (repeatable)")
    args = parser.parse_args()

    import logging

    from native_fuzz_cases import KNOWN_BUGS
    from protocol_fuzz_session import CLUSTER_OVERRIDES, fresh_seed, run_session

    if args.seed is None:
        args.seed = fresh_seed()
    print(f"seed {args.seed} (replay: python bench/protocol_fuzz.py --cases {args.cases} "
          f"--seed {args.seed})", flush=True)
    unknown = set(args.leave_out_known_bug) - set(KNOWN_BUGS)
    if unknown:
        parser.error(f"unknown bug(s) {sorted(unknown)}; known: {sorted(KNOWN_BUGS)}")
    # the live kafkalite clients log every retry at WARNING: the run's output is the report
    logging.getLogger("kafkalite").setLevel(logging.ERROR)

    from kafkalite.local.cluster import LocalCluster
    from kafkalite.local.zookeeper import start_zookeeper

    # a SIGTERM (kill, timeout) ends the run through the finally below, so its ZooKeeper and
    # brokers stop with it instead of running on
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    workdir = tempfile.mkdtemp(prefix="kafkalite-fuzz-")
    zk = start_zookeeper(os.path.join(workdir, "zk"))
    cluster = LocalCluster(zk.connect_string + "/fuzz-" + uuid.uuid4().hex[:8], num_brokers=3,
                           workdir=os.path.join(workdir, "brokers"),
                           overrides=dict(CLUSTER_OVERRIDES))
    start = time.monotonic()

    shown = [0]

    def progress(report):
        print(f"  ... {report.cases} cases sent, {report.rate:.0f} cases/s, "
              f"{report.problem_count} problems, {len(report.errors)} connection errors "
              f"({time.monotonic() - start:.0f} s)", flush=True)
        for problem in report.problems[shown[0]:]:      # as they come: a long run may die
            print(f"  PROBLEM {problem.describe()}", flush=True)
        shown[0] = len(report.problems)

    try:
        cluster.start()
        print(f"fuzzing {args.cases} cases (seed {args.seed}, {args.workers} workers, "
              f"{args.native_share:.0%} native) against brokers on ports "
              f"{[b.port for b in cluster.brokers.values()]}"
              + ("" if not args.no_live else ", no live clients")
              + (f", leaving out known bugs {args.leave_out_known_bug}"
                 if args.leave_out_known_bug else ""), flush=True)
        result = run_session(cluster, args.cases, seed=args.seed, workers=args.workers,
                             wait_s=args.wait, native_share=args.native_share,
                             live=not args.no_live,
                             known_bugs=frozenset(args.leave_out_known_bug),
                             time_budget_s=args.time_budget, progress=progress)
    finally:
        cluster.stop()
        zk.stop()
    print()
    print(result.describe())
    if result.problems:
        print("\nINVARIANTS BROKEN:")
        for problem in result.problems:
            print(f"  - {problem}")
        print(f"(broker logs kept in {workdir}/brokers)")
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    print("\ninvariants hold: brokers alive and answering Metadata on both protocols, answers "
          "well-formed and in order (Kafka's judged by kio), no connection closed where an "
          "answer was owed, no broker errors, ZooKeeper's assignments whole with live leaders "
          "and the brokers agreeing, no partition advertised that its leader does not host"
          + (", live clients progressing, every acknowledged record read back once"
             if not args.no_live else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
