"""One confluent-kafka (librdkafka) member of a consumer group of the brokers' group coordinator,
run as its own process by tests/system/test_kafka_consumer_groups.py and
bench/group_rebalance_bench.py (no test functions here; ``MemberProcess`` starts this script and
reads its events). The Kafka-client counterpart of group_member.py (kafkalite's ZooKeeper groups).

    python kafka_group_member.py --bootstrap HOST:PORT,... --group G --topic T --out events.jsonl
        [--instance-id ID] [--session-timeout-ms 6000] [--heartbeat-interval-ms 1000]
        [--strategy range] [--commit sync|none] [--max-messages 100] [--process-ms 0] ...

It subscribes, consumes, commits synchronously after every batch (``--commit sync``: the offsets
after the batch's last record of each partition, as explicit offsets) and writes one JSON object
per line to ``--out``, each line with one ``write`` straight to the file descriptor, so a
``kill -9`` loses nothing that was written. Events (``t`` is ``time.time()``, comparable across
processes on one machine):

- ``{"ev": "start", "pid": n, "instance": id|null}`` once the consumer subscribed
- ``{"ev": "assigned", "parts": [p, ...], "member": id}`` from librdkafka's ``on_assign``
- ``{"ev": "revoked", "parts": [...]}`` from ``on_revoke``; ``{"ev": "lost", ...}`` from
  ``on_lost`` (the assignment was lost without a chance to commit: session gone, fenced)
- ``{"ev": "recs", "p": p, "offsets": [...]}`` records a ``consume`` handed to the application
- ``{"ev": "commit", "offsets": [[p, next_offset], ...]}`` after a synchronous commit, with the
  partitions the coordinator acknowledged
- ``{"ev": "commit_failed", "error": "...", "offsets": [...]}`` with those it did not (all of
  them when the commit failed as a whole)
- ``{"ev": "error", "error": "...", "fatal": bool}`` from ``error_cb``
- ``{"ev": "closed"}`` after a clean ``close()`` (SIGTERM or SIGINT ends the member cleanly; a
  dynamic member leaves the group there, a static one does not: KIP-345)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
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


class MemberProcess:
    """This script as a child process, and the events it logged (for the tests and the bench).

    ``extra`` are more command-line options (``--instance-id``, ``--process-ms`` ...). The log
    is read incrementally: every call of ``events()`` parses only the lines added since.
    """

    def __init__(self, bootstrap: str, group: str, topic: str, base: str, *extra: str,
                 python: str = sys.executable):
        self.name = os.path.basename(str(base))
        self.out = f"{base}.jsonl"
        self.err = f"{base}.err"
        command = [python, os.path.abspath(__file__), "--bootstrap", bootstrap,
                   "--group", group, "--topic", topic, "--out", self.out, *extra]
        with open(self.err, "ab") as err:
            self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
        self.killed_at: float | None = None
        self.stopped_at: float | None = None
        self._events: list[dict] = []
        self._pos = 0

    def __repr__(self) -> str:
        return f"<member {self.name} pid {self.proc.pid}>"

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    @property
    def gone(self) -> bool:
        """Killed, or told to stop."""
        return self.killed_at is not None or self.stopped_at is not None

    def events(self) -> list[dict]:
        try:
            with open(self.out, "rb") as f:
                f.seek(self._pos)
                data = f.read()
        except FileNotFoundError:
            return self._events
        end = data.rfind(b"\n") + 1          # a line still being written waits for next time
        for line in data[:end].split(b"\n"):
            if line:
                try:
                    self._events.append(json.loads(line))
                except ValueError:          # cut short by SIGKILL (one write(): unlikely)
                    pass
        self._pos += end
        return self._events

    def started(self) -> float | None:
        return next((e["t"] for e in self.events() if e["ev"] == "start"), None)

    def owned(self) -> set[int]:
        """The partitions the member believes it owns now: its last assignment unless revoked
        or lost since; nothing once it was killed or closed. (The eager protocol, where every
        on_assign hands over the whole assignment: range or roundrobin, not cooperative-sticky.)"""
        owned: set[int] = set()
        for e in self.events():
            if e["ev"] == "assigned":
                owned = set(e["parts"])
            elif e["ev"] in ("revoked", "lost", "closed"):
                owned = set()
        return set() if self.gone else owned

    def assignments(self, since: float = 0.0) -> list[dict]:
        return [e for e in self.events() if e["ev"] == "assigned" and e["t"] >= since]

    def callbacks(self, since: float = 0.0) -> list[dict]:
        """Every rebalance callback (assigned, revoked, lost) logged at or after ``since``."""
        return [e for e in self.events()
                if e["ev"] in ("assigned", "revoked", "lost") and e["t"] >= since]

    def reads(self) -> list[tuple[float, int, int]]:
        """``[(t, partition, offset)]`` in delivery order."""
        return [(e["t"], e["p"], o) for e in self.events() if e["ev"] == "recs"
                for o in e["offsets"]]

    def read_count(self) -> int:
        return sum(len(e["offsets"]) if e["ev"] == "recs" else e["n"]
                   for e in self.events() if e["ev"] in ("recs", "count"))

    def acked_commits(self) -> list[tuple[float, int, int]]:
        """``[(t, partition, next_offset)]`` the coordinator acknowledged."""
        return [(e["t"], p, o) for e in self.events() if e["ev"] == "commit"
                for p, o in e["offsets"]]

    def failed_commits(self) -> list[dict]:
        return [e for e in self.events() if e["ev"] == "commit_failed"]

    def check_running(self) -> None:
        if not self.alive and not self.gone:
            raise RuntimeError(f"{self} exited with {self.proc.returncode}:\n"
                               f"{self.stderr_tail()}")

    def stderr_tail(self, n: int = 3000) -> str:
        try:
            with open(self.err, errors="replace") as f:
                return f.read()[-n:]
        except OSError:
            return ""

    def summary(self) -> str:
        """The member's events except records and commits, one line each (for failures)."""
        lines = [f"{self} alive={self.alive} killed_at={self.killed_at} "
                 f"stopped_at={self.stopped_at} read={self.read_count()} "
                 f"commits={len(self.acked_commits())} failed={len(self.failed_commits())}"]
        lines += [f"  {e['t']:.3f} {json.dumps(e)}" for e in self.events()
                  if e["ev"] not in ("recs", "count", "commit")][-30:]
        return "\n".join(lines)

    def kill(self) -> None:
        """kill -9: no close, no LeaveGroup, no last commit."""
        self.proc.kill()
        self.killed_at = time.time()
        self.proc.wait()

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM: the member closes its consumer (a dynamic member leaves the group)."""
        self.stopped_at = time.time()
        if self.alive:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> "MemberProcess":
        return self

    def __exit__(self, *exc) -> None:
        if self.alive:
            self.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--instance-id", default=None, help="group.instance.id (static member)")
    ap.add_argument("--client-id", default=None)
    ap.add_argument("--strategy", default="range")
    ap.add_argument("--commit", choices=("sync", "none"), default="sync")
    ap.add_argument("--session-timeout-ms", type=int, default=6000)
    ap.add_argument("--heartbeat-interval-ms", type=int, default=1000)
    ap.add_argument("--max-messages", type=int, default=100,
                    help="the most records one consume() returns")
    ap.add_argument("--poll-timeout-ms", type=int, default=200)
    ap.add_argument("--process-ms", type=float, default=0.0,
                    help="pretend to work this long per record a consume() returned")
    ap.add_argument("--offset-reset", default="earliest")
    ap.add_argument("--quiet-records", action="store_true",
                    help="log record counts per partition instead of offsets (benchmarks)")
    ap.add_argument("--debug", default=None, help="librdkafka debug contexts, to stderr")
    args = ap.parse_args(argv)

    from confluent_kafka import Consumer, KafkaException, TopicPartition

    log = EventLog(args.out)
    stop = {"now": False}

    def _stop(_signum, _frame):
        stop["now"] = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)

    config = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "client.id": args.client_id or f"member-{os.getpid()}",
        "enable.auto.commit": False,
        "auto.offset.reset": args.offset_reset,
        "partition.assignment.strategy": args.strategy,
        "session.timeout.ms": args.session_timeout_ms,
        "heartbeat.interval.ms": args.heartbeat_interval_ms,
        "enable.partition.eof": False,
        # a lost coordinator is looked up again quickly (tests kill it)
        "reconnect.backoff.ms": 100,
        "reconnect.backoff.max.ms": 1000,
        "retry.backoff.ms": 100,
        "topic.metadata.refresh.interval.ms": 5000,
        "error_cb": lambda err: log.write("error", error=str(err), fatal=err.fatal()),
    }
    if args.instance_id:
        config["group.instance.id"] = args.instance_id
    if args.debug:
        config["debug"] = args.debug
    consumer = Consumer(config)

    def on_assign(c, partitions):
        log.write("assigned", parts=sorted(tp.partition for tp in partitions),
                  member=c.memberid())

    def on_revoke(_c, partitions):
        log.write("revoked", parts=sorted(tp.partition for tp in partitions))

    def on_lost(_c, partitions):
        log.write("lost", parts=sorted(tp.partition for tp in partitions))

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    log.write("start", pid=os.getpid(), instance=args.instance_id, group=args.group)
    try:
        while not stop["now"]:
            messages = consumer.consume(num_messages=args.max_messages,
                                        timeout=args.poll_timeout_ms / 1000.0)
            by_partition: dict[int, list[int]] = {}
            for message in messages:
                if message.error() is not None:
                    log.write("error", error=str(message.error()), fatal=False)
                    continue
                by_partition.setdefault(message.partition(), []).append(message.offset())
            if not by_partition:
                continue
            for partition, offsets in sorted(by_partition.items()):
                if args.quiet_records:
                    log.write("count", p=partition, n=len(offsets))
                else:
                    log.write("recs", p=partition, offsets=offsets)
            if args.process_ms:
                time.sleep(args.process_ms * sum(map(len, by_partition.values())) / 1000.0)
            if args.commit == "sync":
                wanted = sorted([p, offsets[-1] + 1] for p, offsets in by_partition.items())
                try:
                    answer = consumer.commit(offsets=[TopicPartition(args.topic, p, o)
                                                      for p, o in wanted], asynchronous=False)
                except KafkaException as exc:
                    log.write("commit_failed", error=str(exc.args[0]), offsets=wanted)
                    continue
                # per partition: only what the coordinator acknowledged counts as committed
                refused = {tp.partition: str(tp.error) for tp in answer or ()
                           if tp.error is not None}
                acked = [[p, o] for p, o in wanted if p not in refused]
                if acked:
                    log.write("commit", offsets=acked)
                if refused:
                    log.write("commit_failed", error="; ".join(
                        f"{p}: {e}" for p, e in sorted(refused.items())),
                        offsets=[[p, o] for p, o in wanted if p in refused])
    finally:
        consumer.close()
        log.write("closed")
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
