"""Chaos: a randomised schedule of faults against 3 brokers and a 3-node ZooKeeper ensemble
under an acks=all producer and a consumer, with Jepsen-style accounting at the end.

    python bench/chaos.py --minutes N [--seed S] [--leader-kills 100 --each-other 20]
                          [--kinds K1,K2] [--zk-session-ms 5000] [--no-namespaces] [--keep]
                          [--clients python|verifiable [--verifiable-throughput 500]]
                          [--preload-offsets 300000] [--segment-bytes B]

Cluster: 3 brokers, a topic with 3 partitions, replication factor 3, min.insync.replicas 2;
tests/system/replication_tools.BackgroundProducer (acks=all) and a consumer run throughout. As
root every process runs in a network namespace of its own (kafkalite.testing.faults) and broker
3's log dir is a tmpfs; otherwise, or with ``--no-namespaces``, everything runs on loopback and the
faults that need cuts (or the tmpfs) are skipped, which the run says. With ``--clients
verifiable`` Kafka 2.8.2's own VerifiableProducer (acks=all, its retries=0) and VerifiableConsumer
(a group, committing after each poll) replace them (chaos_verifiable.py), accounted the same way
plus "acknowledged but never consumed" and redeliveries. kafkalite only (FaultCluster).

Fault kinds (chaos_faults.py): leader kill -9 (+ restart), leader cut from ZooKeeper, leader cut
from its followers, zombie controller (SIGSTOP past its session, SIGCONT), full disk (broker 3's
tmpfs filled: it halts; freed, restarted), ZooKeeper quorum loss (2 of 3 nodes killed, then back),
session expiry of a broker (SIGSTOP) and of the controller (cut from ZooKeeper), and a leader that
is also the controller cut from ZooKeeper (issue 24's bug 6: its failover beside leader-kill's,
``--kinds leader-kill,leader-controller-cut-zk --leader-kills 3 --each-other 3 --zk-session-ms
6000``). ``--preload-offsets N`` first fills a topic of its own with N records per partition
(chaos_preload.py: librdkafka, acks=all; every one read back at the end) and notes, per leader
kill, what the restart re-verifies (issue 24, bug 5: ``--kinds leader-kill --preload-offsets
300000 --segment-bytes 1048576``); ``--segment-bytes`` is the brokers' log.segment.bytes. The
schedule is ``--leader-kills`` leader kills plus ``--each-other`` of every other kind (of
``--kinds`` only, when given), shuffled with the seed; no new fault starts after ``--minutes``.
After each: heal, wait for recovery, log one line.

At the end: every fault healed, the producer stopped, the consumer caught up, everything read
back, the brokers stopped cleanly and their logs compared at rest. Prints per fault kind the
count and failover/recovery times (min/p50/max), and acknowledged / lost / misplaced /
duplicated / divergent / out-of-order counts (chaos_history.py says what each means), then per
fault window (a fault owns what happens from its start to the next one's) the records acked and
consumed, the failed sends (and their exception classes), and the lost / misplaced / never
consumed records acknowledged in it.

Exit status 1 when records were lost, misplaced or divergent, a live consumer read a record the
log does not hold (or, with the verifiable clients, never got an acknowledged one), a preload record
was not read back, or the cluster did not recover from a fault (the run stops at that fault,
prints what it waited for, and keeps the logs); 0 otherwise.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "system"))

TOPIC, PARTITIONS = "chaos", 3
DISK_BROKER = 3
BROKER_SETTINGS = {"min.insync.replicas": 2, "unclean.leader.election.enable": "false"}

log = logging.getLogger("chaos")


class LoopbackNetwork:
    """Where network namespaces cannot be made: every process on loopback, nothing to cut."""

    def placement(self, _name):
        from kafkalite.local.procs import Placement

        return Placement()

    def heal(self, *_args):
        pass

    def cut(self, *_args, **_kwargs):
        raise RuntimeError("links cannot be cut without network namespaces")

    def describe(self):
        return "loopback (no network namespaces)"

    def rules_text(self):
        return ""

    def close(self):
        pass


def schedule(args, available, rng):
    from chaos_faults import FAULTS

    wanted = set(args.kinds.split(",")) if args.kinds else set(FAULTS)
    unknown = wanted - set(FAULTS)
    if unknown:
        raise SystemExit(f"unknown fault kind(s) {sorted(unknown)}; known: {', '.join(FAULTS)}")
    kinds = []
    for kind in FAULTS:
        if kind in available and kind in wanted:
            kinds += [kind] * (args.leader_kills if kind == "leader-kill" else args.each_other)
    rng.shuffle(kinds)
    return kinds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, required=True,
                        help="start no new fault after this long (then account as usual)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--leader-kills", type=int, default=100)
    parser.add_argument("--each-other", type=int, default=20,
                        help="how many of each other fault kind")
    parser.add_argument("--kinds", default="",
                        help="comma-separated fault kinds to run (default: all)")
    parser.add_argument("--zk-session-ms", type=int, default=None,
                        help="the brokers' zookeeper.session.timeout.ms (default: the fault "
                             "clusters' 5000)")
    parser.add_argument("--no-namespaces", action="store_true",
                        help="run on loopback: process faults only")
    parser.add_argument("--recovery-timeout", type=float, default=180)
    parser.add_argument("--keep", action="store_true", help="keep the work dir (logs, data)")
    parser.add_argument("--clients", choices=("python", "verifiable"), default="python",
                        help="python: replication_tools' producer and a kafkalite consumer; "
                             "verifiable: Kafka 2.8.2's VerifiableProducer/VerifiableConsumer")
    parser.add_argument("--verifiable-throughput", type=int, default=500,
                        help="the VerifiableProducer's --throughput (records/s)")
    parser.add_argument("--preload-offsets", type=int, default=0,
                        help="records per partition of a preload topic written before the faults")
    parser.add_argument("--segment-bytes", type=int, default=None,
                        help="the brokers' log.segment.bytes (default: Kafka's 1 GiB)")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    logging.getLogger("kafkalite").setLevel(logging.CRITICAL)   # clients log every retry
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)

    workdir = tempfile.mkdtemp(prefix="kafkalite-chaos-")
    run = Run(args, seed, workdir)
    try:
        failed = run.run()
    finally:
        run.teardown()
    if failed or args.keep:
        print(f"work dir kept: {workdir} (broker logs broker-N.log, ZooKeeper logs under zk/)")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if failed else 0


class Run:
    def __init__(self, args, seed, workdir):
        self.args, self.seed, self.workdir = args, seed, workdir
        self.started = time.monotonic()
        self.network = self.ensemble = self.cluster = self.disk = None
        self.producer = self.consumer = None
        self.marks, self.failure_marks = [], []    # failure_marks: one Counter per mark
        self.preload_acked, self.preload_problems, self.watch = None, [], None

    def say(self, what):
        log.info("[%7.1f s] %s", time.monotonic() - self.started, what)

    # ------------------------------------------------------------------------------- setup

    def setup(self):
        from chaos_faults import SmallDisk
        from kafkalite.testing.faults.cluster import FaultCluster, start_ensemble
        from kafkalite.testing.faults.network import FaultNetwork, FaultNetworkUnavailable

        available = {"processes"}
        skipped = {}                # what a fault kind needs -> why it is not there
        if self.args.no_namespaces:
            skipped["network"] = "--no-namespaces"
        else:
            try:
                self.network = FaultNetwork().start()
                available.add("network")
            except FaultNetworkUnavailable as exc:
                skipped["network"] = str(exc)
        if self.network is None:
            self.network = LoopbackNetwork()
        self.ensemble = start_ensemble(self.network, os.path.join(self.workdir, "zk"))
        settings = dict(BROKER_SETTINGS)
        if self.args.zk_session_ms:
            settings["zookeeper.session.timeout.ms"] = self.args.zk_session_ms
        if self.args.segment_bytes:
            settings["log.segment.bytes"] = self.args.segment_bytes
        self.cluster = FaultCluster(self.network, self.ensemble,
                                    os.path.join(self.workdir, "brokers"), 3, settings)
        reason = SmallDisk.unavailable_reason()
        if self.args.kinds and "full-disk" not in self.args.kinds.split(","):
            pass        # no tmpfs for a fault not scheduled: broker 3's log on disk as the others
        elif reason is None:
            disk = SmallDisk(self.cluster.kafka.brokers[DISK_BROKER].log_dir, DISK_BROKER)
            try:
                disk.mount()
                self.disk = disk
                available.add("disk")
            except OSError as exc:
                reason = str(exc)
        if reason is not None and "disk" not in available:
            skipped["disk"] = reason
        self.cluster.start()
        return available, skipped

    # --------------------------------------------------------------------------------- run

    def run(self) -> bool:
        from chaos_faults import FAULTS, Chaos, ChaosStuck
        from chaos_history import FaultMark, FaultTiming, timing_table
        from chaos_workload import LiveConsumer, Probes
        from kafkalite.local.cluster import wait_until
        from replication_tools import BackgroundProducer, create_topic

        rng = random.Random(self.seed)
        available, skipped = self.setup()
        kafka = self.cluster.kafka
        kinds = schedule(self.args, {k for k, (_f, need) in FAULTS.items() if need in available},
                         rng)
        self.say(f"seed {self.seed}; 3 brokers {kafka.bootstrap_servers}, ZooKeeper "
                 f"{self.ensemble.connect_string} ({self.network.describe()}); "
                 f"{len(kinds)} faults within {self.args.minutes:g} min")
        for need, reason in skipped.items():
            names = ", ".join(k for k, (_f, n) in FAULTS.items() if n == need)
            self.say(f"SKIPPED {names}: {reason}")
        create_topic(kafka.bootstrap_servers, TOPIC, PARTITIONS, 3, min_insync_replicas=2)
        replicas = {}
        for p in range(PARTITIONS):
            meta = wait_until(lambda: kafka.partition_metadata(TOPIC, p), 30,
                              f"partition {p} in the metadata")
            replicas[p] = list(meta.replicas)
        if self.args.preload_offsets:
            self.run_preload()
        self.probes = Probes(TOPIC)
        if self.args.clients == "verifiable":
            from chaos_verifiable import VerifiableConsumer, VerifiableProducer

            self.producer = VerifiableProducer(kafka.bootstrap_servers, TOPIC, self.workdir,
                                               self.args.verifiable_throughput).start()
            self.consumer = VerifiableConsumer(kafka.bootstrap_servers, TOPIC, PARTITIONS,
                                               self.workdir).start()
        else:
            self.producer = BackgroundProducer(kafka.bootstrap_servers, TOPIC,
                                               pace_every=2).start()
            self.consumer = LiveConsumer(kafka.bootstrap_servers, TOPIC, PARTITIONS).start()
        chaos = Chaos(self.cluster, TOPIC, replicas, rng, self.probes, self.producer,
                      self.disk, self.args.recovery_timeout)
        self.chaos = chaos
        chaos.restart_watch = self.watch
        chaos.recover(time.monotonic())
        chaos.producer_going_on(200)
        # a JVM consumer joins its group seconds after the producer starts: faults wait for it
        chaos.wait(lambda: self.consumer.count() > 0, 180, "the consumer's first records")
        self.say(f"cluster up, topic {TOPIC} ({PARTITIONS} partitions, rf 3, "
                 f"min.insync.replicas 2), {self.args.clients} producer and consumer running")

        timings, stuck = [], None
        self.marks, self.failure_marks = [FaultMark("before the faults", {})], [{}]
        deadline = self.started + self.args.minutes * 60
        for number, kind in enumerate(kinds, 1):
            if time.monotonic() > deadline:
                self.say(f"time is up after {number - 1} of {len(kinds)} faults")
                break
            before = self.producer.acked_count()
            self.marks.append(FaultMark(f"#{number} {kind}", self.client_counters()))
            began = time.monotonic()
            try:
                result = FAULTS[kind][0](chaos)
                chaos.producer_going_on()
            except ChaosStuck as exc:
                stuck = (number, kind, exc)
                self.say(f"#{number} {kind}: STUCK: {exc}")
                break
            timings.append(FaultTiming(kind, result.failover_s, result.recovery_s))
            failover = "-" if result.failover_s is None else f"{result.failover_s:6.2f} s"
            pace = (time.monotonic() - self.started) / number
            self.say(f"#{number}/{len(kinds)} {kind:<26} {result.target:<18} failover "
                     f"{failover:>8}  recovery {result.recovery_s:6.2f} s  "
                     f"({time.monotonic() - began:5.1f} s in all)  acked "
                     f"{self.producer.acked_count()} (+{self.producer.acked_count() - before})"
                     f"  consumed {self.consumer.count()}{self.client_progress()}  {result.note}"
                     f"  [~{pace * (len(kinds) - number) / 60:.0f} min left]")

        self.marks.append(FaultMark("after the faults, accounting", self.client_counters()))
        done = {}
        for timing in timings:
            done[timing.kind] = done.get(timing.kind, 0) + 1
        print("\nfaults completed: " + ", ".join(f"{k} {done.get(k, 0)}/{kinds.count(k)}"
                                                for k in dict.fromkeys(kinds)))
        print(timing_table(timings, list(FAULTS)))
        if self.watch is not None:
            print(self.watch.summary())
        if stuck is not None:
            self.report_stuck(*stuck)
        result = self.account()
        return result.failed or stuck is not None or bool(self.preload_problems)

    def run_preload(self) -> None:
        """``--preload-offsets``: chaos_preload's topic filled before the faults."""
        from chaos_preload import PRELOAD_TOPIC, RestartWatch, preload
        from kafkalite.local.cluster import wait_until
        from replication_tools import create_topic

        kafka = self.cluster.kafka
        create_topic(kafka.bootstrap_servers, PRELOAD_TOPIC, PARTITIONS, 3,
                     min_insync_replicas=2)
        for p in range(PARTITIONS):
            wait_until(lambda: kafka.partition_metadata(PRELOAD_TOPIC, p), 30,
                       f"{PRELOAD_TOPIC} partition {p} in the metadata")
        self.preload_acked, seconds = preload(kafka.bootstrap_servers, PARTITIONS,
                                              self.args.preload_offsets)
        self.watch = RestartWatch(kafka)
        self.say(f"preloaded {PRELOAD_TOPIC}: {PARTITIONS} x {self.args.preload_offsets} records "
                 f"(acks=all) in {seconds:.1f} s; log.segment.bytes "
                 f"{self.args.segment_bytes or 'default (1 GiB)'}")

    def client_counters(self) -> dict[str, int]:
        """The clients' cumulative counts, for the per-fault table."""
        counters = {"acked": self.producer.acked_count(), "consumed": self.consumer.count()}
        self.failure_marks.append(self.producer.failure_kinds())
        if self.args.clients == "verifiable":
            counters.update({"send errors": self.producer.events.failed,
                             "redelivered": self.consumer.events.redelivered,
                             "rebalances": self.consumer.events.assignments})
        else:
            counters["failed sends"] = sum(self.producer.failure_kinds().values())
        return counters

    def print_failures_by_window(self) -> None:
        """The failed sends' exception classes per window (one snapshot per mark, and the
        final one)."""
        lines, snapshots = [], self.failure_marks
        for mark, before, after in zip(self.marks, snapshots, snapshots[1:]):
            grew = {kind: after[kind] - before.get(kind, 0) for kind in after
                    if after[kind] > before.get(kind, 0)}
            if grew:
                lines.append(f"  {mark.label}: " + ", ".join(
                    f"{kind} {n}" for kind, n in sorted(grew.items(), key=lambda kv: -kv[1])))
        if lines:
            print("failed sends by window:\n" + "\n".join(lines))

    def client_progress(self) -> str:
        """The verifiable clients' running counts (send errors, redeliveries, rebalances)."""
        if self.args.clients != "verifiable":
            return ""
        return f" ({self.producer.progress()}; {self.consumer.progress()})"

    def report_stuck(self, number, kind, exc):
        path = os.path.join(self.workdir, "stuck.txt")
        with open(path, "w") as fh:
            fh.write(f"fault #{number} {kind} (seed {self.seed}): {exc}\n\n")
            fh.write(self.cluster.describe())
        print(f"\nTHE CLUSTER DID NOT RECOVER from fault #{number} ({kind}, seed {self.seed}):"
              f"\n  {exc}\n  broker and ZooKeeper log tails, nft rules: {path}")

    # -------------------------------------------------------------------------- accounting

    def account(self):
        from chaos_faults import ChaosStuck
        from chaos_history import (account, accounting_table, consumer_mismatches,
                                   per_fault_table)
        from chaos_workload import end_offsets, read_back
        from replication_tools import replica_divergence

        kafka, chaos = self.cluster.kafka, self.chaos
        self.say("healing everything for the accounting")
        self.cluster.restore()
        for broker_id, broker in kafka.brokers.items():
            if not broker.running:
                kafka.restart(broker_id, wait=False)
        try:
            chaos.recover(time.monotonic())
        except ChaosStuck as exc:
            self.say(f"not recovered before the accounting: {exc}")
        self.producer.stop()
        failures = dict(self.producer.failure_kinds())
        self.say(f"producer stopped: sent {self.producer.sent}, acknowledged "
                 f"{self.producer.acked_count()}, failed sends {failures}")
        acked_ends = {}
        verifiable = self.args.clients == "verifiable"
        python_acked = [] if verifiable else self.producer.acknowledged
        acked_values = self.producer.acknowledged_values if verifiable else []
        for _k, _s, p, o in python_acked:
            acked_ends[p] = max(acked_ends.get(p, 0), o + 1)
        for _v, p, o in [*self.probes.acknowledged, *acked_values]:
            acked_ends[p] = max(acked_ends.get(p, 0), o + 1)
        try:
            ends = chaos.wait(lambda: (lambda e: e if all(e[p] >= acked_ends.get(p, 0)
                                                          for p in e) else None)(
                end_offsets(kafka.bootstrap_servers, TOPIC, PARTITIONS)), 120,
                "high watermarks covering every acknowledged offset")
        except ChaosStuck as exc:
            self.say(str(exc))
            ends = end_offsets(kafka.bootstrap_servers, TOPIC, PARTITIONS)
        try:
            chaos.wait(lambda: all(self.consumer.next_offsets()[p] >= ends[p] for p in ends),
                       300, "the live consumer to read up to the high watermarks")
        except ChaosStuck as exc:
            self.say(f"{exc} (it read {self.consumer.next_offsets()} of {ends})")
        final = self.client_counters()      # its failed sends: the last of failure_marks
        self.consumer.stop()
        reads = read_back(kafka.bootstrap_servers, TOPIC, PARTITIONS, ends)
        if verifiable:
            from chaos_verifiable import verifiable_sequence

            result = account([], self.probes.acknowledged, reads, acked_values=acked_values,
                             sequence_of=verifiable_sequence)
        else:
            result = account(python_acked, self.probes.acknowledged, reads)
        live_reads = self.consumer.reads
        live = {p: {o: v for o, v in r.items() if o < ends[p]} for p, r in live_reads.items()}
        result.consumer_mismatches = consumer_mismatches(live, reads)
        if self.preload_acked is not None:
            from chaos_preload import check_preload

            self.preload_problems = check_preload(kafka.bootstrap_servers, PARTITIONS,
                                                  self.preload_acked)
            self.say(f"preload read back by confluent-kafka: "
                     f"{sum(map(len, self.preload_acked.values()))} acknowledged, "
                     f"{len(self.preload_problems)} problems {self.preload_problems[:5]}")
        self.say(f"read back {result.read} records below the high watermarks {ends}; "
                 f"stopping the brokers to compare their logs at rest")
        kafka.stop()
        for partition, mark in sorted(ends.items()):
            dirs = {b: os.path.join(kafka.brokers[b].log_dir, f"{TOPIC}-{partition}")
                    for b in chaos.replicas[partition]}
            result.divergent += [f"partition {partition} {problem}"
                                 for problem in replica_divergence(dirs, mark)]
        print()
        if verifiable:
            self.verifiable_table(acked_values, live_reads, result)
        print(accounting_table(result))
        acked_order = acked_values or [(b"%s:%d" % (k, s), p, o) for k, s, p, o in python_acked]
        attributed = {"lost": [(v, p, o) for p, o, v in result.lost],
                      "misplaced": [(v, p, o) for p, o, v, _f in result.misplaced]}
        if result.not_consumed is not None:
            attributed["never consumed"] = result.not_consumed
        print("\nper fault (each owns what happened from its start to the next one's):")
        print(per_fault_table(self.marks, final, acked_order, attributed))
        self.print_failures_by_window()
        for name, items in (("lost", result.lost), ("misplaced", result.misplaced),
                            ("divergent", result.divergent),
                            ("out of order", result.out_of_order),
                            ("live consumer mismatches", result.consumer_mismatches),
                            ("acknowledged, never consumed", result.not_consumed or [])):
            for item in items[:10]:
                print(f"  {name}: {item}")
        failed = result.failed or bool(self.preload_problems)
        print(f"\nseed {self.seed}; {'FAILED' if failed else 'OK'}")
        return result

    def verifiable_table(self, acked_values, live_reads, result) -> None:
        """What Kafka's system tests check of the verifiable clients beside the log: every
        acknowledged record consumed; redeliveries, rebalances and failed sends counted."""
        from chaos_verifiable import unconsumed

        produced, consumed = self.producer.events, self.consumer.events
        result.not_consumed = unconsumed(acked_values, live_reads)
        result.consumer_mismatches += [(p, o, f"{a!r} then {b!r}")
                                       for p, o, a, b in consumed.conflicts]
        rows = [("VerifiableProducer acknowledged / failed sends",
                 f"{len(produced.acknowledged)} / {produced.failed} {dict(produced.errors)}"),
                ("  its own tool_data at shutdown", produced.tool_data or "-"),
                ("VerifiableConsumer consumed (distinct offsets)", consumed.count()),
                ("  redelivered (at-least-once, counted)", consumed.redelivered),
                ("  one offset, two values", len(consumed.conflicts)),
                ("  rebalances / failed commits / restarts",
                 f"{consumed.assignments} / {consumed.commit_failures} / {self.consumer.restarts}"),
                ("  committed offsets at the end", dict(sorted(consumed.committed.items())))]
        width = max(len(name) for name, _ in rows)
        print("\n".join(f"{name:<{width}}  {value}" for name, value in rows))

    def teardown(self):
        for part in (self.producer, self.consumer):
            if part is not None:
                try:
                    part.stop()
                except Exception:  # noqa: BLE001 - tearing down anyway
                    pass
        if self.cluster is not None:
            try:
                self.cluster.network.heal()
            except Exception:  # noqa: BLE001
                pass
            self.cluster.stop()
        if self.ensemble is not None:
            self.ensemble.stop()
        if self.disk is not None:
            self.disk.unmount()
        if self.network is not None:
            self.network.close()


if __name__ == "__main__":
    sys.exit(main())
