"""Exactly-once copy throughput (issue 22): the txn copier process (``kafkalite.testing.
txn_copier``, confluent-kafka's consume-transform-produce loop) copying N records, one
transaction per batch, against the cluster named by ``--bootstrap-server`` (Apache Kafka or
kafkalite) or 3 fresh kafkalite brokers (``bench_cluster``'s defaults); the topics have 3
partitions, rf 3.

Prints records/s, transactions/s and the copy's check by kcat (read_committed: every input
exactly once). Run ``python bench/txn_copier_bench.py --records 20000 --batch 500``; on a
shared 2-core machine, 3 kafkalite brokers copied 20,000 records in 40 transactions in about
14 s (the copier's start included).
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid

from bench_cluster import bootstrap_servers

from kafkalite.testing.txn_copier import (CopierProcess, exactly_once_problems, prepare_topics,
                                          read_committed_with_kcat)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap-server", default=None)
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args(argv)
    with bootstrap_servers(args.bootstrap_server, num_brokers=3) as bootstrap:
        tag = uuid.uuid4().hex[:8]
        source, sink = f"bench-eos-in-{tag}", f"bench-eos-out-{tag}"
        ends = prepare_topics(bootstrap, source, sink, args.records)
        started = time.monotonic()
        copier = CopierProcess(bootstrap, source, sink, f"bench-eos-{tag}", f"bench-eos-{tag}",
                               "--batch", str(args.batch))
        try:
            code = copier.wait_exit(1800)
        finally:
            copier.close()
        elapsed = time.monotonic() - started
        if code != 0:
            print(f"copier exited with {code}\n{copier.describe()}", file=sys.stderr)
            return 1
        problems = exactly_once_problems(read_committed_with_kcat(bootstrap, sink), ends)
    print(f"{args.records} records in {copier.committed()} transactions of up to {args.batch}: "
          f"{elapsed:.1f} s (process start included), {args.records / elapsed:.0f} records/s, "
          f"{copier.committed() / elapsed:.1f} transactions/s; exactly once: "
          f"{'yes' if not problems else problems}")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
