"""Consumer group benchmarks through ZooKeeper, with real processes: a real ZooKeeper, one broker,
and every group member its own process (tests/system/group_member.py).

    python bench/rebalance_bench.py [--rounds 3] [--records 300000] [--record-size 100]
                                    [--session-timeout-ms 4000] [--debounce-ms 300]

1. Rebalance time of a group of 3 on 6 partitions (range assignor), measured from the members'
   own event logs:
   - join: from the moment a 4th member has registered until every member has finished the
     rebalance that gives the group its new assignment (owner znodes and members agree);
   - leave: from SIGTERM to a member (it revokes, releases and unregisters) until the 3 others
     have finished theirs;
   - crash: from SIGKILL to a member until the others have finished theirs. This includes the
     ZooKeeper session timeout: nothing can notice a silent death sooner. Also printed without it.
   Each figure is also given as the time spent inside the coordinator's rebalance (revoke, read
   the group, assign, claim), the rest being the debounce and the watch delivery.
2. Consumer throughput of one group of 3 members on 6 partitions: ``--records`` records of
   ``--record-size`` bytes, produced beforehand, read by the group (auto-commit every second),
   counted from the group's final assignment to the last record (and, for comparison, from the
   start of the member processes).

Prints numbers; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from kafkalite import AdminClient, NewTopic, Producer
from kafkalite.client.assignors import range_assign
from kafkalite.local.cluster import LocalCluster, wait_until
from kafkalite.local.zookeeper import start_zookeeper
from kafkalite.zk import ZkClient

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEMBER_SCRIPT = os.path.join(ROOT, "tests", "system", "group_member.py")
PARTITIONS = 6


class Member:
    def __init__(self, zk_connect: str, group: str, topic: str, out: str, *extra: str):
        self.out = out
        self.proc = subprocess.Popen(
            [sys.executable, MEMBER_SCRIPT, "--zookeeper", zk_connect, "--group", group,
             "--topic", topic, "--out", out, *extra],
            stdout=subprocess.DEVNULL, stderr=open(out + ".err", "ab"))
        self.gone = False
        self._id = None

    def events(self) -> list[dict]:
        try:
            with open(self.out, "rb") as f:
                return [json.loads(line) for line in f.read().split(b"\n") if line]
        except (FileNotFoundError, ValueError):
            return []

    @property
    def member_id(self):
        if self._id is None:
            self._id = next((e["member"] for e in self.events() if e["ev"] == "start"), None)
        return self._id

    def owned(self) -> set:
        owned: set = set()
        for e in self.events():
            if e["ev"] == "assigned":
                owned = {tuple(p) for p in e["parts"]}
            elif e["ev"] == "revoked":
                owned = set()
        return owned

    def rebalances_after(self, t: float) -> list[dict]:
        return [e for e in self.events() if e["ev"] == "rebalance" and e["t"] >= t]

    def end(self, sig=signal.SIGTERM) -> None:
        self.gone = True
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)


def settled(zk: ZkClient, group: str, topic: str, members: list[Member]) -> bool:
    live = [m for m in members if not m.gone]
    ids = [m.member_id for m in live]
    if None in ids or sorted(zk.get_consumer_members(group)) != sorted(ids):
        return False
    expected = range_assign({i: {topic} for i in ids}, {topic: PARTITIONS})
    owners = {tp: o[:-2] for tp, o in zk.get_partition_owners(group).items()}
    for m in live:
        mine = {tp for tp, o in owners.items() if o == m.member_id}
        if mine != set(expected[m.member_id]) or m.owned() != mine:
            return False
        marks = [e["ev"] for e in m.events() if e["ev"] in ("assigned", "rebalance")]
        if not marks or marks[-1] != "rebalance":   # its rebalance event is still to come
            return False
    return True


def measure(zk, group, topic, members, since: float) -> tuple[float, float]:
    """Wait until the group settled; (seconds from ``since`` until the last member finished its
    last rebalance, longest time inside one of those rebalances)."""
    wait_until(lambda: settled(zk, group, topic, members), 120, f"group {group} settled")
    finals = [m.rebalances_after(since)[-1] for m in members if not m.gone
              if m.rebalances_after(since)]
    return max(e["t"] for e in finals) - since, max(e["seconds"] for e in finals)


def rebalance_round(zk, zk_connect, workdir, topic, index, opts) -> dict:
    group = f"bench-rebalance-{index}"
    start = lambda name: Member(zk_connect, group, topic,  # noqa: E731
                                os.path.join(workdir, f"{group}-{name}.jsonl"), *opts)
    members = [start(f"m{i}") for i in range(3)]
    try:
        wait_until(lambda: all(m.member_id for m in members), 60, "members registered")
        wait_until(lambda: settled(zk, group, topic, members), 120, "3 members settled")
        results = {}

        joiner = start("m3")
        members.append(joiner)
        wait_until(lambda: joiner.member_id, 60, "the 4th member registered")
        joined_at = next(e["t"] for e in joiner.events() if e["ev"] == "start")
        results["join"] = measure(zk, group, topic, members, joined_at)

        leaver = members[0]
        left_at = time.time()
        leaver.end(signal.SIGTERM)
        results["leave"] = measure(zk, group, topic, members, left_at)

        victim = members[1]
        victim.gone = True
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait()
        crashed_at = time.time()
        results["crash"] = measure(zk, group, topic, members, crashed_at)
        return results
    finally:
        for m in members:
            m.end()


def throughput(zk_connect, cluster, workdir, records: int, size: int) -> tuple:
    topic = "bench-throughput"
    with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)], timeout_ms=30000)
    value = b"x" * size
    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks=1, linger_ms=5,
                  batch_size=256 * 1024) as producer:
        for i in range(records):
            producer.send(topic, value=value, partition=i % PARTITIONS)
        # leaving the block closes the producer, which delivers everything (rather than flush(),
        # which can miss a sender wakeup and wait forever)
    opts = ("--quiet-records", "--commit", "auto", "--auto-commit-interval-ms", "1000",
            "--max-poll-records", "2000", "--poll-timeout-ms", "500", "--offset-reset",
            "earliest")
    members = [Member(zk_connect, "bench-throughput", topic,
                      os.path.join(workdir, f"throughput-m{i}.jsonl"), *opts) for i in range(3)]
    started = time.time()
    try:
        def counts():
            return [e for m in members for e in m.events() if e["ev"] == "count"]
        wait_until(lambda: sum(e["n"] for e in counts()) >= records, 600, "all records read")
        got = counts()
        last = max(e["t"] for e in got)
        # the group's final assignment: the last rebalance any member finished; what was read
        # before it (by a member that happened to start first) is left out of the steady rate
        settled_at = max(e["t"] for m in members for e in m.events() if e["ev"] == "rebalance")
        steady = sum(e["n"] for e in got if e["t"] > settled_at)
        per_member = [sum(e["n"] for e in m.events() if e["ev"] == "count") for m in members]
        return (steady / max(last - settled_at, 1e-9), steady, records / (last - started),
                per_member)
    finally:
        for m in members:
            m.end()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--session-timeout-ms", type=int, default=4000)
    parser.add_argument("--debounce-ms", type=int, default=300)
    args = parser.parse_args(argv)
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)   # "connection dropped" at shutdown
    opts = ("--session-timeout-ms", str(args.session_timeout_ms), "--rebalance-debounce-ms",
            str(args.debounce_ms), "--rebalance-backoff-ms", "300", "--poll-timeout-ms", "100")
    with tempfile.TemporaryDirectory(prefix="kafkalite-rebalance-bench-") as workdir:
        zk_server = start_zookeeper(os.path.join(workdir, "zookeeper"))
        zk_connect = f"{zk_server.connect_string}/rebalance-bench"
        cluster = LocalCluster(zk_connect, 1, workdir=os.path.join(workdir, "cluster"))
        try:
            cluster.start()
            zk = ZkClient(zk_connect, session_timeout_ms=10000).start()
            topic = "bench-rebalance"
            with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
                admin.create_topics([NewTopic(topic, PARTITIONS, 1)], timeout_ms=30000)
            rounds = [rebalance_round(zk, zk_connect, workdir, topic, i, opts)
                      for i in range(args.rounds)]
            print(f"rebalance of a group on {PARTITIONS} partitions (range), "
                  f"session.timeout.ms={args.session_timeout_ms}, "
                  f"debounce {args.debounce_ms} ms, {args.rounds} rounds:")
            for kind, what in (("join", "a 4th member joins 3"),
                               ("leave", "1 of 4 leaves (SIGTERM)"),
                               ("crash", "1 of 3 is killed (SIGKILL)")):
                total = [r[kind][0] for r in rounds]
                inside = [r[kind][1] for r in rounds]
                line = (f"  {kind:<5} ({what}): median {statistics.median(total):.2f} s "
                        f"[{', '.join(f'{t:.2f}' for t in total)}], of which in the "
                        f"coordinator's rebalance {statistics.median(inside) * 1000:.0f} ms")
                if kind == "crash":
                    line += (f"; minus the session timeout "
                             f"{statistics.median(total) - args.session_timeout_ms / 1000:.2f} s")
                print(line)
            zk.stop()
            per_s, steady, overall, per_member = throughput(
                zk_connect, cluster, workdir, args.records, args.record_size)
            print(f"consumer throughput, one group of 3 on {PARTITIONS} partitions, "
                  f"{args.records:,} records of {args.record_size} bytes (members read "
                  f"{', '.join(f'{n:,}' for n in per_member)}):")
            print(f"  {per_s:12,.0f} records/s once the group had settled ({steady:,} records)")
            print(f"  {overall:12,.0f} records/s including the members' start and the "
                  f"group's first rebalance")
        finally:
            cluster.stop()
            zk_server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
