"""One member of a ZooKeeper-coordinated consumer group, run as its own process by the consumer
group system tests and the rebalance benchmark (no test functions here).

    python group_member.py --zookeeper HOST:PORT/CHROOT --group G --topic T --out events.jsonl
        [--strategy range|roundrobin|sticky] [--commit manual|auto|none] ...

It joins the group, consumes, commits, and writes one JSON object per line to ``--out``. Every
line is written with one ``write`` and flushed at once, so a ``kill -9`` loses nothing that was
written (only, at worst, the line being built). Events (``t`` is ``time.time()``, comparable
across processes on one machine):

- ``{"ev": "start", "member": id, "pid": n}`` once the member registered itself
- ``{"ev": "revoked", "parts": [[t, p], ...]}`` from ``on_partitions_revoked`` (before the member
  releases its owner znodes; with auto-commit the consumer has committed by then)
- ``{"ev": "assigned", "parts": [...]}`` from ``on_partitions_assigned`` (after the claims)
- ``{"ev": "rebalance", "owned": [...], "seconds": s, "n": k}`` when the coordinator finished one
- ``{"ev": "recs", "tp": [t, p], "offsets": [...]}`` records handed to the application by a poll
- ``{"ev": "commit", "offsets": [[t, p, next_offset], ...]}`` after a commit reached ZooKeeper
  (manual, automatic or on revocation)
- ``{"ev": "closed"}`` after a clean close (SIGTERM or SIGINT ends the member cleanly)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time


class EventLog:
    def __init__(self, path: str):
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, ev: str, **fields) -> None:
        fields = {"ev": ev, "t": time.time(), **fields}
        # one write() per line straight to the file descriptor: nothing is buffered in this
        # process, so a SIGKILL cannot lose a line that was written
        os.write(self._fd, (json.dumps(fields, separators=(",", ":")) + "\n").encode())

    def close(self) -> None:
        os.close(self._fd)


def _parts(tps) -> list:
    return sorted([tp[0], tp[1]] for tp in tps)


class Listener:
    def __init__(self, log: EventLog):
        self.log = log

    def on_partitions_revoked(self, revoked) -> None:
        self.log.write("revoked", parts=_parts(revoked))

    def on_partitions_assigned(self, assigned) -> None:
        self.log.write("assigned", parts=_parts(assigned))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zookeeper", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--topic", action="append", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--strategy", default="range")
    ap.add_argument("--commit", choices=("manual", "auto", "none"), default="manual",
                    help="manual: commit after every poll that returned records")
    ap.add_argument("--auto-commit-interval-ms", type=int, default=1000)
    ap.add_argument("--session-timeout-ms", type=int, default=4000)
    ap.add_argument("--rebalance-backoff-ms", type=int, default=300)
    ap.add_argument("--rebalance-max-retries", type=int, default=8)
    ap.add_argument("--rebalance-debounce-ms", type=int, default=300)
    ap.add_argument("--max-poll-records", type=int, default=200)
    ap.add_argument("--poll-timeout-ms", type=int, default=200)
    ap.add_argument("--process-ms", type=float, default=0.0,
                    help="pretend to work this long per record returned by a poll")
    ap.add_argument("--offset-reset", default="earliest")
    ap.add_argument("--quiet-records", action="store_true",
                    help="log record counts per poll instead of offsets (benchmarks)")
    args = ap.parse_args(argv)

    import logging

    from kafkalite import Consumer

    logging.basicConfig(level=os.environ.get("GROUP_MEMBER_LOGLEVEL", "WARNING"),
                        stream=sys.stderr,
                        format="%(asctime)s %(process)d %(name)s %(levelname)s %(message)s")

    log = EventLog(args.out)
    stop = {"now": False}

    def _stop(_signum, _frame):
        stop["now"] = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)

    consumer = Consumer(
        group_id=args.group, zookeeper=args.zookeeper,
        partition_assignment_strategy=args.strategy,
        enable_auto_commit=args.commit == "auto",
        auto_commit_interval_ms=args.auto_commit_interval_ms,
        auto_offset_reset=args.offset_reset, max_poll_records=args.max_poll_records,
        fetch_max_wait_ms=100, session_timeout_ms=args.session_timeout_ms,
        rebalance_backoff_ms=args.rebalance_backoff_ms,
        rebalance_max_retries=args.rebalance_max_retries,
        rebalance_debounce_ms=args.rebalance_debounce_ms,
        client_id=f"member-{os.getpid()}")
    coordinator = consumer._coordinator

    plain_commit = coordinator.commit

    def logged_commit(offsets):
        plain_commit(offsets)
        log.write("commit", offsets=sorted(
            [tp[0], tp[1], om.offset if hasattr(om, "offset") else int(om)]
            for tp, om in offsets.items()))

    coordinator.commit = logged_commit
    coordinator.on_rebalance_done = lambda owned, seconds: log.write(
        "rebalance", owned=_parts(owned), seconds=round(seconds, 4), n=coordinator.rebalances)

    consumer.subscribe(args.topic, listener=Listener(log))
    log.write("start", member=coordinator.member_id, pid=os.getpid(), group=args.group,
              strategy=args.strategy)
    try:
        while not stop["now"]:
            batch = consumer.poll(timeout_ms=args.poll_timeout_ms)
            if not batch:
                continue
            for tp, records in sorted(batch.items()):
                if args.quiet_records:
                    log.write("count", tp=[tp[0], tp[1]], n=len(records))
                else:
                    log.write("recs", tp=[tp[0], tp[1]], offsets=[r.offset for r in records])
            if args.process_ms:
                time.sleep(args.process_ms * sum(len(r) for r in batch.values()) / 1000.0)
            if args.commit == "manual":
                consumer.commit({tp: records[-1].offset + 1 for tp, records in batch.items()})
    finally:
        consumer.close()
        log.write("closed")
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
