"""Rebalance time of consumer groups, both generations side by side (DESIGN.md section 9), with
real processes: a real ZooKeeper, three brokers, and every group member its own process.

    python bench/group_rebalance_bench.py [--rounds 3] [--session-timeout-ms 6000]
                                          [--heartbeat-interval-ms 1000] [--debounce-ms 300]
                                          [--kinds coordinator,zookeeper]

- coordinator groups (Kafka 0.9+, the brokers' group coordinator): confluent-kafka (librdkafka)
  members, tests/system/kafka_group_member.py, range assignor, eager protocol;
- ZooKeeper groups (Kafka 0.8): kafkalite's own members, tests/system/group_member.py, measured
  by bench/rebalance_bench.py's ``rebalance_round`` (its figures, unchanged).

Each round: a group of 3 on a 6-partition topic settles, then
- join: a 4th member starts; from the moment it has subscribed (its "start" event) until every
  member has its new assignment and the assignments cover all partitions, disjoint;
- leave: SIGTERM to one of the 4 (close(): LeaveGroup; for ZooKeeper groups the member
  releases its znodes and unregisters); from the signal until the 3 others have theirs;
- kill: SIGKILL to one of the 3; from the kill until the 2 others have theirs. This includes the
  session timeout (nothing can notice a silent death sooner); also printed without it.

For coordinator groups "assigned" is librdkafka's on_assign callback in the member; the second
figure ("rebalance proper") runs from the first member's on_revoke to the last on_assign, so it
leaves out how long the members took to hear of the rebalance (a heartbeat, or the session
timeout). For ZooKeeper groups it is rebalance_bench's time inside the members' rebalance.

Members that were assigned together heartbeat in step, so an event right after the group
settled would always fall at the same point of their heartbeat cycle (a leave would always wait a
whole heartbeat interval to be noticed, a kill's session expiry would coincide with a heartbeat).
Each coordinator-group event therefore comes after a random pause of 1 s to 1 s + the heartbeat
interval (``--seed``).

The members are idle (the topic is empty): this times the group protocol, not fetching.
Prints numbers; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "system"))

from kafka_group_member import MemberProcess  # noqa: E402

from kafkalite import AdminClient, NewTopic  # noqa: E402
from kafkalite.local.cluster import LocalCluster, wait_until  # noqa: E402
from kafkalite.local.zookeeper import start_zookeeper  # noqa: E402

PARTITIONS = 6
KINDS = ("join", "leave", "kill")
WHAT = {"join": "a 4th member joins 3", "leave": "1 of 4 closes (SIGTERM)",
        "kill": "1 of 3 is killed (SIGKILL)"}


# --- coordinator groups --------------------------------------------------------------------

def settled(members: list[MemberProcess], since: float) -> tuple[float, float] | None:
    """When every live member has been assigned since ``since`` and the assignments cover the
    topic, disjoint and balanced: (seconds from ``since`` to the last assignment, seconds from
    the first revocation since then to the last assignment)."""
    live = [m for m in members if not m.gone]
    owned = [m.owned() for m in live]
    if set().union(*owned) != set(range(PARTITIONS)) or sum(map(len, owned)) != PARTITIONS:
        return None
    if max(map(len, owned)) - min(map(len, owned)) > 1:
        return None
    last_assigned, first_revoked = [], []
    for m in live:
        callbacks = m.callbacks(since)
        assigned = [e["t"] for e in callbacks if e["ev"] == "assigned"]
        if not assigned:
            return None
        last_assigned.append(assigned[-1])
        first_revoked += [e["t"] for e in callbacks if e["ev"] in ("revoked", "lost")]
    end = max(last_assigned)
    return end - since, end - min(first_revoked, default=since)


def measure(members, since: float, what: str) -> tuple[float, float]:
    def check():
        for m in members:
            m.check_running()
        return settled(members, since)
    return wait_until(check, 120, what, interval_s=0.02,
                      on_timeout=lambda: "\n".join(m.summary() for m in members))


def coordinator_round(bootstrap: str, workdir: str, topic: str, index: int,
                      opts: tuple[str, ...], pause) -> dict:
    """One round; ``pause()`` before each event takes it out of step with the heartbeats."""
    group = f"bench-coordinator-{index}"

    def start(name: str) -> MemberProcess:
        return MemberProcess(bootstrap, group, topic, os.path.join(workdir, f"{group}-{name}"),
                             *opts)

    members = [start(f"m{i}") for i in range(3)]
    try:
        measure(members, 0.0, "3 members settled")
        results = {}

        pause()
        joiner = start("m3")
        members.append(joiner)
        joined_at = wait_until(joiner.started, 60, "the 4th member subscribed")
        results["join"] = measure(members, joined_at, "4 members settled")

        pause()
        leaver = members[0]
        leaver.stop()                   # stopped_at: just before SIGTERM
        results["leave"] = measure(members, leaver.stopped_at, "3 members settled")

        pause()
        victim = members[1]
        victim.kill()                   # killed_at: right after SIGKILL
        results["kill"] = measure(members, victim.killed_at, "2 members settled")
        return results
    finally:
        for m in members:
            if m.alive:
                m.stop()


# --- ZooKeeper groups ----------------------------------------------------------------------

def zookeeper_rounds(zk_connect: str, workdir: str, topic: str, rounds: int,
                     opts: tuple[str, ...]) -> list[dict]:
    import rebalance_bench
    from kafkalite.zk import ZkClient

    zk = ZkClient(zk_connect, session_timeout_ms=10000).start()
    try:
        out = []
        for i in range(rounds):
            r = rebalance_bench.rebalance_round(zk, zk_connect, workdir, topic, i, opts)
            out.append({"join": r["join"], "leave": r["leave"], "kill": r["crash"]})
        return out
    finally:
        zk.stop()


# --- report --------------------------------------------------------------------------------

def cell(rounds: list[dict], kind: str, index: int, minus: float = 0.0) -> str:
    if not rounds:
        return "-"
    values = [r[kind][index] - minus for r in rounds]
    return (f"{statistics.median(values):5.2f} s "
            f"[{', '.join(f'{v:.2f}' for v in values)}]")


def report(args, coordinator: list[dict], zookeeper: list[dict]) -> None:
    session_s = args.session_timeout_ms / 1000
    print(f"rebalance of a group on {PARTITIONS} partitions (range), 3 brokers, "
          f"session timeout {args.session_timeout_ms} ms, {args.rounds} rounds: "
          f"median [each round]")
    import confluent_kafka
    print(f"  coordinator groups: confluent-kafka {confluent_kafka.__version__} (librdkafka "
          f"{confluent_kafka.libversion()[0]}) members, eager range, "
          f"heartbeat.interval.ms {args.heartbeat_interval_ms}, "
          f"group.initial.rebalance.delay.ms 300 (Empty groups only)")
    print(f"  ZooKeeper groups: kafkalite members, debounce {args.debounce_ms} ms")
    rows = []
    for kind in KINDS:
        rows.append((f"{kind}: {WHAT[kind]}", cell(coordinator, kind, 0),
                     cell(zookeeper, kind, 0)))
        if kind == "kill":
            rows.append(("  minus the session timeout", cell(coordinator, kind, 0, session_s),
                         cell(zookeeper, kind, 0, session_s)))
        rows.append(("  of which the rebalance proper", cell(coordinator, kind, 1),
                     cell(zookeeper, kind, 1)))
    rows.insert(0, ("", "coordinator groups", "ZooKeeper groups"))
    widths = [max(len(r[i]) for r in rows) + 3 for i in range(3)]
    for n, row in enumerate(rows):
        print("  " + "".join(f"{text:<{w}}" for text, w in zip(row, widths)).rstrip())
        if n == 0:
            print("  " + "-" * (sum(widths) - 3))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=1000,
                        help="coordinator groups: how often members ask whether to rejoin")
    parser.add_argument("--debounce-ms", type=int, default=300,
                        help="ZooKeeper groups: rebalance debounce")
    parser.add_argument("--kinds", default="coordinator,zookeeper")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    kinds = set(args.kinds.split(","))
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)   # "connection dropped" at shutdown

    with tempfile.TemporaryDirectory(prefix="kafkalite-group-rebalance-bench-") as workdir:
        zk_server = start_zookeeper(os.path.join(workdir, "zookeeper"))
        zk_connect = f"{zk_server.connect_string}/group-rebalance-bench"
        cluster = LocalCluster(zk_connect, 3, workdir=os.path.join(workdir, "cluster"),
                               overrides={"group.initial.rebalance.delay.ms": 300,
                                          "min.insync.replicas": 2})
        try:
            cluster.start()
            topic = "bench-group-rebalance"
            with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
                admin.create_topics([NewTopic(topic, PARTITIONS, 3)], timeout_ms=30000)
            wait_until(lambda: all(cluster.leader_of(topic, p) > 0 for p in range(PARTITIONS)),
                       60, "leaders for every partition")
            coordinator, zookeeper = [], []
            if "coordinator" in kinds:
                opts = ("--session-timeout-ms", str(args.session_timeout_ms),
                        "--heartbeat-interval-ms", str(args.heartbeat_interval_ms),
                        "--quiet-records", "--poll-timeout-ms", "100")
                rng = random.Random(args.seed)
                hb_s = args.heartbeat_interval_ms / 1000

                def pause():
                    time.sleep(rng.uniform(1.0, 1.0 + hb_s))
                started = time.monotonic()
                coordinator = [coordinator_round(cluster.bootstrap_servers, workdir, topic, i,
                                                 opts, pause) for i in range(args.rounds)]
                print(f"coordinator groups: {time.monotonic() - started:.0f} s", file=sys.stderr)
            if "zookeeper" in kinds:
                opts = ("--session-timeout-ms", str(args.session_timeout_ms),
                        "--rebalance-debounce-ms", str(args.debounce_ms),
                        "--rebalance-backoff-ms", "300", "--poll-timeout-ms", "100")
                started = time.monotonic()
                zookeeper = zookeeper_rounds(zk_connect, workdir, topic, args.rounds, opts)
                print(f"ZooKeeper groups: {time.monotonic() - started:.0f} s", file=sys.stderr)
        finally:
            cluster.stop()
            zk_server.stop()

    report(args, coordinator, zookeeper)
    return 0


if __name__ == "__main__":
    sys.exit(main())
