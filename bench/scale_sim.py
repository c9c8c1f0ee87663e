"""Scale past one machine, simulated: 9 brokers, each in a network namespace of its own, on a
3-node ZooKeeper ensemble (3 more namespaces), 10,000 partitions at replication factor 3 --
kafkalite, then Apache Kafka 2.8.2 the same way in the same run (issue 26, item 3).

    .venv/bin/python bench/scale_sim.py [--brokers 9] [--partitions 10000] [--topics 100]
                                        [--systems kafkalite kafka] [--json PATH]
    .venv/bin/python bench/scale_sim.py --report PATH...       # the table of --json files
    .venv/bin/python bench/scale_sim.py --partitions 900 --topics 9     # a quick run

Needs root, ``ip`` and ``nft`` (the fault toolkit, ``kafkalite.testing.faults``, builds the
namespaces and the bridge) and Kafka's jars (``scripts/fetch_apache_kafka.sh``) for the Kafka half.
Both systems get the same settings (``SETTINGS``) and the same ensemble (a chroot each). Measured
per system, each figure from the moment of the action, with the 1-minute load average beside it
(the machine has 2 cores; 9 brokers and 3 ZooKeeper nodes share them):

1. **start**: broker processes spawned until every broker's Metadata lists all of them and names
   a controller;
2. **create**: ``--topics`` topics of ``partitions/topics`` partitions, rf 3, created through
   confluent-kafka's AdminClient in one request, until every broker's Metadata lists all the
   partitions, each with a leader (``create acked``: the AdminClient's answer);
3. **controller kill -9**: until ZooKeeper's ``/controller`` names another broker, and until every
   live broker's Metadata names a live leader for every partition; then the broker is started
   again and the cluster waits for full ISRs (``rejoin``);
4. **broker kill -9** (not the controller): until all the remaining brokers' Metadata shows no
   partition led by the dead broker (each led by a live one);
5. **full restart**: all brokers stopped at once with SIGTERM (``stop``), started again, until
   every broker's Metadata lists every partition led, with full ISRs.

"Every broker's Metadata" is a raw Metadata v1 request (kio) to each broker in turn
(``scale_sim_probe``): a broker's time is that of its first answer meeting the condition, and the
figure is the slowest broker's; the rounds take a while with 10,000 partitions, which bounds the
resolution (printed as ``poll``). Kafka's heap per broker is ``--kafka-heap`` (serial GC, the
launcher's); when Kafka's brokers cannot be held (a JVM dies, or start-up passes
``--kafka-start-timeout``) the bench says so and why, and prints kafkalite's figures alone.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from scale_sim_probe import (TOPIC_PREFIX, Figure, View, fetch_view, read_figures,  # noqa: E402
                             table)

from kafkalite.local.procs import Placement, parent_death_preexec  # noqa: E402

# the same for both systems; Kafka's defaults but a 6 s ZooKeeper session (as the test clusters)
# and no automatic preferred-leader rebalance (it would move leaders in the middle of a phase)
SETTINGS = {
    "zookeeper.session.timeout.ms": 6000,
    "replica.lag.time.max.ms": 30000,
    "auto.leader.rebalance.enable": "false",
    "auto.create.topics.enable": "false",
    "controlled.shutdown.retry.backoff.ms": 500,
    "replica.fetch.backoff.ms": 200,
}


class NotReached(RuntimeError):
    """A phase's condition did not hold within its deadline."""


def load1() -> float:
    return os.getloadavg()[0]


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, ValueError):
            with open(f"/proc/{pid}/status") as fh:
                total += next(int(line.split()[1]) for line in fh if line.startswith("VmRSS"))
    return total / 1024


# ------------------------------------------------------------------------------------ systems

class System:
    """One system's brokers, by id: spawn, kill -9, stop (SIGTERM) and their addresses."""

    name = ""

    def __init__(self, cluster):
        self.cluster = cluster

    @property
    def ids(self) -> list[int]:
        return sorted(self.cluster.brokers)

    def address(self, broker_id: int) -> str:
        return self.cluster.brokers[broker_id].address

    def running(self) -> list[int]:
        return [b for b in self.ids if self.cluster.brokers[b].running]

    def pids(self) -> list[int]:
        return [self.cluster.brokers[b].pid for b in self.running()]

    def kill(self, broker_id: int) -> None:
        self.cluster.kill(broker_id)

    def spawn(self, broker_id: int) -> None:
        raise NotImplementedError

    def stop(self, timeout_s: float) -> None:
        self.cluster.stop(timeout_s=timeout_s)

    def describe(self) -> str:
        return self.cluster.describe_logs()


class Kafkalite(System):
    name = "kafkalite"

    def spawn(self, broker_id: int) -> None:
        self.cluster._spawn(self.cluster.brokers[broker_id])   # LocalCluster's, no waiting


class Kafka(System):
    name = "kafka"

    def spawn(self, broker_id: int) -> None:
        self.cluster._spawn(self.cluster.brokers[broker_id])


def kafka_cluster(zk_connect: str, num_brokers: int, workdir: str, heap: str,
                  placement: Callable[[int], Placement]):
    """Kafka's launcher (``ApacheKafkaCluster``) with each broker placed as kafkalite's are: it
    binds and advertises its namespace's address and runs behind ``ip netns exec``."""
    from kafkalite.testing import apache_kafka as ak

    @dataclasses.dataclass
    class PlacedBroker(ak.KafkaBrokerProcess):
        placement: Placement = dataclasses.field(default_factory=Placement)

        @property
        def address(self) -> str:
            return f"{self.placement.host}:{self.port}"

    class PlacedCluster(ak.ApacheKafkaCluster):
        def settings(self, broker):
            return {**super().settings(broker),
                    "listeners": f"PLAINTEXT://{broker.placement.host}:{broker.port}"}

        def _spawn(self, broker):
            # the launcher's own _spawn with the namespace's prefix in front (same JVM options)
            self._write_config(broker)
            log4j = ak._log4j_file("broker-log4j.properties", ak._BROKER_LOG4J)
            command = ak.java_command("kafka.Kafka", broker.config_path, heap=self.heap,
                                      log4j=log4j)
            command.remove("-XX:TieredStopAtLevel=1")
            command = [*broker.placement.command_prefix, *command]
            with open(broker.log_path, "ab") as log_file:
                broker.process = subprocess.Popen(
                    command, stdout=log_file, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, start_new_session=True,
                    preexec_fn=parent_death_preexec(self.die_with_parent))  # noqa: PLW1509

    cluster = PlacedCluster(zk_connect, num_brokers, workdir=workdir, heap=heap,
                            overrides=dict(SETTINGS))
    for broker_id, broker in list(cluster.brokers.items()):
        values = {f.name: getattr(broker, f.name) for f in dataclasses.fields(broker)}
        cluster.brokers[broker_id] = PlacedBroker(**values, placement=placement(broker_id))
    return cluster


# ------------------------------------------------------------------------------------- waits

class Bench:
    def __init__(self, args, shape: dict):
        self.args = args
        self.shape = shape
        self.figures: list[Figure] = []
        self.expected = args.partitions

    def record(self, system: str, key: str, label: str, seconds: float | None,
               note: str = "", unit: str = "s") -> None:
        figure = Figure(system, key, label, seconds, load1(), note, unit)
        self.figures.append(figure)
        shown = "not reached" if seconds is None else f"{seconds:.1f} {unit}"
        print(f"  {label}: {shown} (load {figure.load1:.1f}){'  ' + note if note else ''}",
              flush=True)
        if self.args.json:
            with open(self.args.json, "a") as fh:
                fh.write(figure.json_line(self.shape) + "\n")

    def wait_views(self, system: System, brokers: list[int], condition: Callable[[View], bool],
                   since: float, what: str, timeout_s: float | None = None) -> float:
        """Poll each of ``brokers`` until its own View meets ``condition``; the seconds from
        ``since`` to the slowest broker's first such answer."""
        timeout_s = timeout_s or self.args.phase_timeout
        done: dict[int, float] = {}
        last: dict[int, object] = {}
        rounds = 0
        while len(done) < len(brokers):
            rounds += 1
            for broker_id in brokers:
                if broker_id in done:
                    continue
                try:
                    view = fetch_view(system.address(broker_id))
                except OSError as exc:
                    last[broker_id] = exc
                    continue
                last[broker_id] = view
                if condition(view):
                    done[broker_id] = time.monotonic() - since
            if time.monotonic() - since > timeout_s:
                detail = "; ".join(f"broker {b}: {_brief(last.get(b))}"
                                   for b in brokers if b not in done)
                raise NotReached(f"{system.name}: {what} not within {timeout_s:.0f} s ({detail})")
            if len(done) < len(brokers):
                time.sleep(0.1)
        return max(done.values())

    def zk_controller(self, zk, since: float, not_broker: int) -> float:
        deadline = since + self.args.phase_timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                found = zk.get_controller_id()
                if found is not None and found != not_broker:
                    return time.monotonic() - since
            time.sleep(0.05)
        raise NotReached(f"no new /controller within {self.args.phase_timeout:.0f} s")

    # -------------------------------------------------------------------------------- phases

    def run(self, system: System, zk, start_timeout_s: float) -> None:
        name, ids, n = system.name, system.ids, self.expected
        print(f"--- {name}: {len(ids)} brokers, {n} partitions in {self.args.topics} topics, "
              f"rf 3", flush=True)
        t0 = time.monotonic()
        for broker_id in ids:
            system.spawn(broker_id)
        secs = self.wait_views(system, ids, lambda v: set(ids) <= v.brokers and v.controller > 0,
                               t0, "every broker listing every broker", start_timeout_s)
        self.record(name, "start", f"start: {len(ids)} brokers answering Metadata", secs)

        secs, acked, note = self.create_topics(system, ids)
        self.record(name, "create_acked", f"create {n} partitions: AdminClient answered", acked,
                    note=note)
        self.record(name, "create", f"create {n} partitions: every broker lists them led", secs)
        self.record(name, "rss", "resident memory of all brokers after creation",
                    rss_mb(system.pids()), unit="MB")

        controller = zk.get_controller_id()
        led = fetch_view(system.address(controller)).leaders
        live = [b for b in ids if b != controller]
        t0 = time.monotonic()
        system.kill(controller)
        self.record(name, "ctl_zk", "controller kill -9: new /controller in ZooKeeper",
                    self.zk_controller(zk, t0, controller))
        secs = self.wait_views(system, live, lambda v: v.all_led(n, live), t0,
                               "a live leader for every partition after the controller's death")
        self.record(name, "ctl_leaders", "controller kill -9: every broker names live leaders",
                    secs, note=f"it led {led.get(controller, 0)} partitions")
        self.rejoin(system, controller, live)

        controller = zk.get_controller_id()
        led = fetch_view(system.address(controller)).leaders
        # the broker leading most partitions (after the rejoin, the restarted one leads none)
        victim = max((b for b in ids if b != controller), key=lambda b: led.get(b, 0))
        live = [b for b in ids if b != victim]
        t0 = time.monotonic()
        system.kill(victim)
        secs = self.wait_views(system, live, lambda v: v.all_led(n, live), t0,
                               f"no partition led by the dead broker {victim}")
        self.record(name, "broker_death", f"broker kill -9: {len(live)} brokers' Metadata "
                    "shows no partition led by it", secs,
                    note=f"it led {led.get(victim, 0)} partitions")

        t0 = time.monotonic()
        system.stop(timeout_s=self.args.phase_timeout)
        self.record(name, "stop", f"full restart: SIGTERM to all {len(ids)}, all exited",
                    time.monotonic() - t0)
        t0 = time.monotonic()
        for broker_id in ids:
            system.spawn(broker_id)
        secs = self.wait_views(system, ids, lambda v: set(ids) <= v.brokers and
                               v.settled(n, ids), t0, "every partition led with full ISRs",
                               max(start_timeout_s, self.args.phase_timeout))
        self.record(name, "restart", f"full restart: all {n} partitions led, full ISRs", secs)

    def rejoin(self, system: System, dead: int, live: list[int]) -> None:
        """Start ``dead`` again once the others dropped it (ZooKeeper expired its session: Kafka
        2.8 exits at start while its old registration is there); timed from the start until
        every partition has its full ISR again."""
        ids, n = system.ids, self.expected
        self.wait_views(system, live, lambda v: dead not in v.brokers, time.monotonic(),
                        "the dead broker's registration gone")
        t0 = time.monotonic()
        system.spawn(dead)
        secs = self.wait_views(system, ids, lambda v: set(ids) <= v.brokers and
                               v.settled(n, ids), t0, "full ISRs after the broker's rejoin")
        self.record(system.name, "rejoin", "the old controller started again: full ISRs "
                    "everywhere", secs)

    def create_topics(self, system: System, ids: list[int]) -> tuple[float, float | None, str]:
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic

        per_topic = self.expected // self.args.topics
        # librdkafka gives up on any request after socket.timeout.ms (60 s by default, 300 s
        # at most): a loaded Kafka controller answered 900 partitions' CreateTopics later
        admin = AdminClient({"bootstrap.servers": ",".join(system.address(b) for b in ids),
                             "socket.timeout.ms": 300_000, "log_level": 0})
        topics = [NewTopic(f"{TOPIC_PREFIX}{i:03d}", per_topic, 3)
                  for i in range(self.args.topics)]
        t0 = time.monotonic()
        futures = admin.create_topics(topics, request_timeout=self.args.phase_timeout)
        acked, note = None, ""
        try:
            for future in futures.values():
                future.result(self.args.phase_timeout)
            acked = time.monotonic() - t0
        except KafkaException as exc:
            # the request may time out in the client while the controller goes on creating:
            # what is measured is when the brokers list the partitions
            if exc.args[0].code() != KafkaError._TIMED_OUT:
                raise
            note = (f"the AdminClient gave up after {time.monotonic() - t0:.0f} s "
                    f"(librdkafka's socket.timeout.ms, 300 s at most): {exc.args[0].str()}")
        secs = self.wait_views(system, ids, lambda v: v.all_led(self.expected, ids), t0,
                               "every partition listed with a leader")
        return secs, acked, note


def _brief(value: object) -> str:
    if isinstance(value, View):
        return (f"lists {value.partitions} partitions, leaders {dict(value.leaders)}, "
                f"{value.full_isr} full ISRs, brokers {sorted(value.brokers)}")
    return str(value)


# -------------------------------------------------------------------------------------- main

def run_system(bench: Bench, which: str, network, ensemble, workdir: str) -> None:
    from kafkalite.local.zookeeper import unique_chroot
    from kafkalite.testing.faults.cluster import FaultCluster, broker_node
    from kafkalite.zk import ZkClient

    args = bench.args
    chroot = unique_chroot(f"scale-{which}")
    zk = ZkClient(f"{ensemble.connect_string}{chroot}", session_timeout_ms=30_000,
                  connection_timeout_s=30).start()
    folder = os.path.join(workdir, which)
    if which == "kafkalite":
        cluster = FaultCluster(network, ensemble, folder, args.brokers, dict(SETTINGS),
                               chroot=chroot)
        system, start_timeout = Kafkalite(cluster.kafka), args.phase_timeout
    else:
        cluster = kafka_cluster(f"{ensemble.connect_string}{chroot}", args.brokers, folder,
                                args.kafka_heap,
                                lambda b: network.placement(broker_node(100 + b)))
        system, start_timeout = Kafka(cluster), args.kafka_start_timeout
    try:
        bench.run(system, zk, start_timeout)
    except Exception as exc:  # noqa: BLE001 - reported as this system's result, the run goes on
        dead = [b for b in system.ids if system.cluster.brokers[b].process is not None
                and not system.cluster.brokers[b].running]
        why = f"{type(exc).__name__}: {exc}; brokers exited: {dead or 'none'}"
        if which == "kafka" and (dead or "start" not in {f.key for f in bench.figures
                                                        if f.system == "kafka"}):
            why = (f"2 cores and this memory did not hold {args.brokers} Kafka JVMs "
                   f"(heap {args.kafka_heap}) for this shape: {why}")
        bench.record(which, "failed", "the run stopped", None, note=why)
        if args.keep:
            print(system.describe()[-6000:])
    finally:
        system.stop(timeout_s=60)
        zk.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=9)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--systems", nargs="+", choices=("kafkalite", "kafka"),
                        default=["kafkalite", "kafka"])
    parser.add_argument("--kafka-heap", default="512m")
    parser.add_argument("--kafka-start-timeout", type=float, default=600.0)
    parser.add_argument("--phase-timeout", type=float, default=900.0)
    parser.add_argument("--json", help="append one JSON line per figure to this file")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (logs)")
    parser.add_argument("--report", metavar="JSONL", nargs="+",
                        help="run nothing: print the table of these --json files' figures (the "
                             "last figure of each system and measure wins)")
    args = parser.parse_args(argv)
    if args.report:
        print(table([f for path in args.report for f in read_figures(path)]))
        return 0
    # kazoo warns of every dropped connection while the ensemble elects a leader: not news here
    logging.basicConfig(level=logging.ERROR)
    if args.partitions % args.topics:
        parser.error("--partitions must be a multiple of --topics")
    if args.brokers < 4:
        parser.error("--brokers: 4 or more (two kills at rf 3 must leave a leader)")

    from kafkalite.testing.faults.cluster import start_ensemble
    from kafkalite.testing.faults.network import FaultNetwork, unavailable_reason

    reason = unavailable_reason()
    if reason:
        raise SystemExit(f"scale_sim needs network namespaces: {reason}")
    shape = {"brokers": args.brokers, "partitions": args.partitions, "topics": args.topics,
             "cpus": os.cpu_count()}
    bench = Bench(args, shape)
    workdir = tempfile.mkdtemp(prefix="scale-sim-")
    started = time.monotonic()
    network = FaultNetwork().start()
    try:
        ensemble = start_ensemble(network, os.path.join(workdir, "zookeeper"))
        try:
            for which in args.systems:
                run_system(bench, which, network, ensemble, workdir)
        finally:
            ensemble.stop()
    finally:
        network.close()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"work dir kept: {workdir}")
    print(f"\n{args.brokers} brokers (each in a network namespace) on a 3-node ZooKeeper "
          f"ensemble, {args.partitions} partitions ({args.topics} topics x "
          f"{args.partitions // args.topics}), rf 3; {time.monotonic() - started:.0f} s; "
          f"{os.cpu_count()} CPUs, load now {load1():.1f}\n")
    print(table(bench.figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
