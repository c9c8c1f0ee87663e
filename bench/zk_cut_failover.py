"""Failover of a leader that is also the controller: kill -9 beside a cut from ZooKeeper, on
kafkalite and on Apache Kafka 2.8.2 (issue 24, bug 6).

    python bench/zk_cut_failover.py [--systems kafkalite,kafka] [--rounds 3] [--session-ms 6000]

Per system: one ZooKeeper, 3 brokers, each reaching ZooKeeper through a TCP proxy of its own
(tests/integration/zk_cut_proxy.CutProxy, so a cut works the same for both systems without
network namespaces), a topic of 3 partitions, replication factor 3, min.insync.replicas 2, a
confluent-kafka acks=all producer sending flat out and a consumer group reading it (the load;
the group's ``__consumer_offsets`` has 50 partitions to move too). Each round does both faults
to the broker that is the controller (a preferred-leader election first when it leads nothing):

- ``kill -9``: the process killed, restarted after the failover;
- ``zk cut``: its proxy closes every connection and refuses new ones (the broker is alive and
  reachable by clients and brokers; its session expires on ZooKeeper's side), reconnected after.

Measured from the fault, per fault: ``zk`` when ZooKeeper's leader/ISR znodes name a new leader
for every partition the victim led; ``serving`` when each new leader acknowledged an acks=all
record sent by a fresh confluent-kafka producer bootstrapped from it; ``load`` when the load
producer had a record acknowledged on each of those partitions again. Prints every fault and the
medians per system and fault. The broker logs are kept (``--keep``) to read a failover's steps
(a new kafkalite controller logs them in one line: ``controller: ready at epoch N after ...``).

``load`` is the client's view and swings widely on both systems after a cut: the cut broker still
believes it leads, holds acks=all writes it cannot replicate until their timeout and answers
REQUEST_TIMED_OUT, which librdkafka retries on the same broker without asking for metadata; the
load moves when something else makes librdkafka refresh its metadata (seen from 1 s to over
100 s on Apache Kafka 2.8.2 as on kafkalite).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "integration"))

from kafkalite.local.cluster import wait_until  # noqa: E402

TOPIC, PARTITIONS = "zkcut", 3


class LoadProducer:
    """confluent-kafka, acks=all, flat out on every partition; remembers when each partition
    last had a record acknowledged."""

    def __init__(self, bootstrap: str):
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                  "linger.ms": 5, "message.timeout.ms": 120000,
                                  "queue.buffering.max.messages": 20000, "log_level": 0})
        self.acked: dict[int, list[float]] = {p: [] for p in range(PARTITIONS)}
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _delivered(self, err, msg) -> None:
        if err is None:
            self.acked[msg.partition()].append(time.monotonic())
        else:
            self.errors += 1

    def _run(self) -> None:
        value = b"v" * 200
        i = 0
        while not self._stop.is_set():
            try:
                self.producer.produce(TOPIC, value, partition=i % PARTITIONS,
                                      on_delivery=self._delivered)
                i += 1
            except BufferError:
                self.producer.poll(0.05)
            self.producer.poll(0)

    def acked_after(self, partition: int, moment: float) -> bool:
        return any(t > moment for t in self.acked[partition][-50:])

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.producer.flush(30)


class GroupConsumer:
    """A confluent-kafka consumer in a group reading the topic and committing, throughout: the
    group's __consumer_offsets (50 partitions) is part of what a failover moves."""

    def __init__(self, bootstrap: str):
        from confluent_kafka import Consumer

        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "zkcut-group",
                                  "auto.offset.reset": "earliest", "log_level": 0,
                                  "auto.commit.interval.ms": 500})
        self.consumer.subscribe([TOPIC])
        self.read = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            batch = self.consumer.consume(500, 0.5)
            self.read += sum(1 for msg in batch if msg.error() is None)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.consumer.close()


def probe(address: str, partition: int) -> bool:
    """One acks=all record to ``partition`` through a fresh confluent-kafka producer
    bootstrapped from ``address``: acknowledged or not."""
    from confluent_kafka import Producer

    done: list = []
    producer = Producer({"bootstrap.servers": address, "acks": "all", "message.timeout.ms": 3000,
                         "log_level": 0})
    producer.produce(TOPIC, b"probe", partition=partition,
                     on_delivery=lambda err, _msg: done.append(err))
    producer.flush(5)
    return bool(done) and done[0] is None


class System:
    """One system's brokers behind per-broker ZooKeeper proxies."""

    def __init__(self, name: str, zk_connect: str, workdir: str, session_ms: int):
        from zk_cut_proxy import CutProxy
        from kafkalite.zk import ZkClient

        self.name = name
        host, port = zk_connect.split("/")[0].split(",")[0].rsplit(":", 1)
        chroot = f"/zkcut-{name}-{os.getpid()}"
        self.proxies = {b: CutProxy(host, int(port)) for b in (1, 2, 3)}
        settings = {"zookeeper.session.timeout.ms": session_ms, "min.insync.replicas": 2,
                    "auto.leader.rebalance.enable": "false", "replica.fetch.backoff.ms": 200,
                    "num.partitions": PARTITIONS}
        zk_of = {b: f"127.0.0.1:{proxy.port}{chroot}" for b, proxy in self.proxies.items()}
        self.zk = ZkClient(f"{host}:{port}{chroot}", session_timeout_ms=30_000).start()
        if name == "kafka":
            from kafkalite.testing.apache_kafka import ApacheKafkaCluster

            class Cluster(ApacheKafkaCluster):
                def settings(self, broker):
                    return {**super().settings(broker),
                            "zookeeper.connect": zk_of[broker.broker_id]}
            self.cluster = Cluster(f"{host}:{port}{chroot}", 3, workdir=workdir,
                                   overrides=settings)
        else:
            from kafkalite.local.cluster import LocalCluster

            self.cluster = LocalCluster(f"{host}:{port}{chroot}", 3, workdir=workdir,
                                        overrides=settings)
            for broker_id, broker in self.cluster.brokers.items():
                broker.overrides["zookeeper.connect"] = zk_of[broker_id]
        self.cluster.start()

    def address(self, broker_id: int) -> str:
        return self.cluster.brokers[broker_id].address

    @property
    def bootstrap(self) -> str:
        return ",".join(self.address(b) for b in self.cluster.brokers)

    def leaders(self) -> dict[int, int]:
        states = {p: self.zk.get_partition_state(TOPIC, p) for p in range(PARTITIONS)}
        return {p: (s.leader if s else -1) for p, s in states.items()}

    def settled(self) -> bool:
        """Every broker registered, every partition led with its 3 replicas in the ISR."""
        if sorted(self.zk.get_broker_ids()) != [1, 2, 3]:
            return False
        states = [self.zk.get_partition_state(TOPIC, p) for p in range(PARTITIONS)]
        return all(s and s.leader > 0 and len(s.isr) == 3 for s in states)

    def create_topic(self) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3,
                                      config={"min.insync.replicas": "2"})])[TOPIC].result(60)
        wait_until(self.settled, 60, "the topic led with full ISRs")

    def lead_from_controller(self) -> tuple[int, list[int]]:
        """The controller and the partitions it leads (a preferred election when none)."""
        controller = wait_until(self.zk.get_controller_id, 60, "a controller")
        if controller not in self.leaders().values():
            from confluent_kafka import ElectionType, TopicPartition
            from confluent_kafka.admin import AdminClient

            admin = AdminClient({"bootstrap.servers": self.bootstrap})
            with contextlib.suppress(Exception):    # ELECTION_NOT_NEEDED for some
                admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(TOPIC, p) for p in
                                                             range(PARTITIONS)]).result(30)
            wait_until(lambda: controller in self.leaders().values(), 60,
                       f"controller {controller} to lead a partition")
        return controller, [p for p, b in self.leaders().items() if b == controller]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.cluster.stop()
        for proxy in self.proxies.values():
            proxy.close()
        self.zk.stop()


def one_fault(system: System, load: LoadProducer, fault: str) -> dict:
    victim, led = system.lead_from_controller()
    started, wall = time.monotonic(), time.strftime("%H:%M:%S")
    if fault == "kill -9":
        system.cluster.kill(victim)
    else:
        system.proxies[victim].cut()
    moved = wait_until(lambda: (lambda ls: ls if all(ls[p] not in (-1, victim) for p in led)
                                else None)(system.leaders()), 120, "new leaders in ZooKeeper",
                       interval_s=0.05)
    t_zk = time.monotonic() - started
    pending = set(led)
    while pending:
        pending = {p for p in pending if not probe(system.address(moved[p]), p)}
        if time.monotonic() - started > 120:
            raise RuntimeError(f"new leaders {moved} did not acknowledge in 120 s")
    t_serving = time.monotonic() - started
    wait_until(lambda: all(load.acked_after(p, started + t_zk) for p in led), 120,
               "the load producer to be acknowledged on the new leaders", interval_s=0.05)
    t_load = time.monotonic() - started
    if fault == "kill -9":
        system.cluster.restart(victim)
    else:
        system.proxies[victim].reconnect()
    wait_until(system.settled, 180, "every broker back and every ISR full", interval_s=0.2)
    return {"system": system.name, "fault": fault, "victim": victim, "led": led, "at": wall,
            "zk": t_zk, "serving": t_serving, "load": t_load}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--systems", default="kafkalite,kafka")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--keep", action="store_true", help="keep the work dir (broker logs)")
    args = parser.parse_args()
    import logging
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)   # its dropped connections: the cut
    from kafkalite.local.zookeeper import start_zookeeper

    workdir = tempfile.mkdtemp(prefix="zkcut-failover-")
    zk = start_zookeeper()
    rows: list[dict] = []
    try:
        for name in args.systems.split(","):
            system = System(name, zk.connect_string, os.path.join(workdir, name),
                            args.session_ms)
            load = group = None
            try:
                system.create_topic()
                load = LoadProducer(system.bootstrap)
                group = GroupConsumer(system.bootstrap)
                wait_until(lambda: all(load.acked[p] for p in range(PARTITIONS))
                           and group.read, 120, "the load going, the group consuming")
                for _ in range(args.rounds):
                    for fault in ("kill -9", "zk cut"):
                        row = one_fault(system, load, fault)
                        rows.append(row)
                        print(f"{row['system']:<9} {row['fault']:<7} at {row['at']} broker "
                              f"{row['victim']} (led {row['led']}): zk {row['zk']:5.2f} s, "
                              f"serving {row['serving']:5.2f} s, load {row['load']:5.2f} s",
                              flush=True)
            finally:
                for part in (load, group):
                    if part is not None:
                        part.stop()
                system.close()
    finally:
        zk.stop()
    print(f"\nmedians of {args.rounds} (seconds from the fault; session "
          f"{args.session_ms} ms):")
    print(f"{'system':<10} {'fault':<8} {'zk':>6} {'serving':>8} {'load':>6}")
    for name in args.systems.split(","):
        for fault in ("kill -9", "zk cut"):
            mine = [r for r in rows if r["system"] == name and r["fault"] == fault]
            if mine:
                print(f"{name:<10} {fault:<8} "
                      + " ".join(f"{statistics.median(r[k] for r in mine):{w}.2f}"
                                 for k, w in (("zk", 6), ("serving", 8), ("load", 6))))
    print(f"broker logs: {workdir}" if args.keep else "")
    if not args.keep:
        import shutil
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
