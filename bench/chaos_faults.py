"""The fault kinds of bench/chaos.py, each one run: inject, hold until the cluster reacted (a
condition, never a fixed time), heal, wait for recovery; with the failover and recovery times.

- failover: fault start -> every partition the victim led has a *new* leader that acknowledged an
  acks=all probe sent straight to it (None when no leadership had to move);
- recovery: heal start -> every broker registered, every partition led with its full replica set
  in the ISR (ZooKeeper's leader/ISR znodes), and each leader acknowledged an acks=all probe.

A victim still alive after its failover (cut from ZooKeeper, frozen, ...) gets an acks=all probe
of its own on the partitions it led: what it acknowledges joins the loss check, so a stale leader
acknowledging a write that its successor then drops shows up as lost.

``ChaosStuck``: the cluster never got where it should (the run stops there and says what it
waited for). Every choice of victim comes from ``chaos.rng``: a seed replays the schedule.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Callable

log = logging.getLogger("chaos")

HOLD_TIMEOUT_S = 90         # a fault's effect (session expiry, ISR shrink, halt) to show
FILLER_LEAVES = 96 * 1024   # what the full-disk filler leaves free for the broker


class ChaosStuck(RuntimeError):
    """The cluster did not get where it should within the time allowed."""


@dataclass
class FaultResult:
    kind: str
    target: str
    failover_s: float | None
    recovery_s: float | None
    note: str = ""


class Chaos:
    """What the faults act on and read: the FaultCluster, the topic, the probes, the producer."""

    def __init__(self, cluster: Any, topic: str, replicas: dict[int, list[int]], rng: Any,
                 probes: Any, producer: Any, disk: "SmallDisk | None" = None,
                 recovery_timeout_s: float = 180):
        self.cluster, self.kafka = cluster, cluster.kafka
        self.topic, self.partitions, self.rng = topic, len(replicas), rng
        self.replicas = {p: sorted(r) for p, r in replicas.items()}
        self.probes, self.producer, self.disk = probes, producer, disk
        self.recovery_timeout_s = recovery_timeout_s
        self.down: set[int] = set()        # brokers a fault stopped on purpose
        #: chaos_preload.RestartWatch (``--preload-offsets``): what a killed leader re-verifies
        self.restart_watch: Any = None

    # ------------------------------------------------------------------------------ reading

    def state(self, partition: int) -> Any:
        return self.cluster.partition_state(self.topic, partition)

    def leaders(self) -> dict[int, int]:
        return {p: self.state(p).leader for p in range(self.partitions)}

    def led_by(self, broker: int) -> list[int]:
        return [p for p, leader in self.leaders().items() if leader == broker]

    def broker(self, broker_id: int) -> Any:
        return self.kafka.brokers[broker_id]

    # -------------------------------------------------------------------------------- waits

    def wait(self, condition: Callable[[], Any], timeout_s: float, what: str) -> Any:
        """Poll ``condition`` until truthy; ChaosStuck after ``timeout_s`` (or at once when a
        broker we did not stop has exited)."""
        deadline = time.monotonic() + timeout_s
        last = None
        while True:
            self._check_brokers_alive()
            try:
                value = condition()
                if value:
                    return value
            except Exception as exc:  # noqa: BLE001 - ZooKeeper or a broker may be away
                last = exc
            if time.monotonic() > deadline:
                raise ChaosStuck(f"waited {timeout_s:.0f} s for {what}"
                                 + (f" (last error: {last!r})" if last else ""))
            time.sleep(0.2)

    def _check_brokers_alive(self) -> None:
        for broker_id, broker in self.kafka.brokers.items():
            if broker_id not in self.down and not broker.running:
                code = broker.process.returncode if broker.process else None
                raise ChaosStuck(f"broker {broker_id} exited by itself (code {code}):\n"
                                 f"{broker.log_tail(30)}")

    def probe(self, broker_id: int, partition: int, timeout_s: float = 3.0) -> int | None:
        broker = self.broker(broker_id)
        return self.probes.write(broker.host, broker.port, partition, timeout_s)

    def failover(self, partitions: list[int], old: int, started: float) -> float | None:
        """Seconds from ``started`` until each of ``partitions`` has a leader other than ``old``
        that acknowledged an acks=all probe; None for no partitions."""
        pending = set(partitions)

        def moved():
            for p in sorted(pending):
                leader = self.state(p).leader
                if leader not in (-1, old) and self.probe(leader, p) == 0:
                    pending.discard(p)
            return not pending
        if not partitions:
            return None
        self.wait(moved, HOLD_TIMEOUT_S, f"new leaders of partitions {sorted(pending)} "
                                         f"(away from broker {old}) accepting acks=all")
        return time.monotonic() - started

    def stale_leader_probes(self, broker_id: int, partitions: list[int]) -> str:
        """acks=all probes to a deposed leader; what it answered (acknowledged ones are checked
        for loss at the end)."""
        codes = [self.probe(broker_id, p, timeout_s=2.0) for p in partitions]
        acked = sum(code == 0 for code in codes)
        return f"deposed leader acked {acked}/{len(codes)} probes" if codes else ""

    def recover(self, started: float) -> float:
        """Seconds from ``started`` until every broker is registered, every partition is led
        with a full ISR, and each leader acknowledges an acks=all probe."""
        self.down.clear()
        expected = sorted(self.kafka.brokers)

        def recovered():
            if sorted(self.cluster.registered_brokers()) != expected:
                return False
            states = [self.state(p) for p in range(self.partitions)]
            if any(s is None or s.leader < 0 or sorted(s.isr) != self.replicas[p]
                   for p, s in enumerate(states)):
                return False
            return all(self.probe(s.leader, p) == 0 for p, s in enumerate(states))
        self.wait(recovered, self.recovery_timeout_s,
                  "recovery: every broker registered, every partition led with a full ISR, "
                  "acks=all accepted")
        return time.monotonic() - started

    def producer_going_on(self, records: int = 20, timeout_s: float = 90) -> None:
        acked = self.producer.acked_count()
        self.wait(lambda: self.producer.acked_since(acked) >= records, timeout_s,
                  f"the background producer to have {records} more records acknowledged")


# ------------------------------------------------------------------------------ the faults

def leader_kill(chaos: Chaos) -> FaultResult:
    """kill -9 of a random partition's leader, then restart it."""
    partition = chaos.rng.randrange(chaos.partitions)
    victim = chaos.state(partition).leader
    led = chaos.led_by(victim)
    started = time.monotonic()
    chaos.down.add(victim)
    chaos.cluster.kill(victim)
    failover = chaos.failover(led, victim, started)
    watch = chaos.restart_watch
    note = watch.killed(victim) if watch else ""   # from the files, before the restart reads them
    healing = time.monotonic()
    chaos.cluster.restart(victim, wait=False)
    if watch:   # the restart's first part: process start, log recovery, ZooKeeper registration
        chaos.wait(lambda: victim in chaos.cluster.registered_brokers(),
                   chaos.recovery_timeout_s, f"broker {victim} registered again")
        note += watch.registered(victim, time.monotonic() - healing)
    recovery = chaos.recover(healing)
    if watch:
        note += watch.recovered(victim)
    return FaultResult("leader-kill", f"b{victim} (led {led})", failover, recovery, note)


def leader_cut_from_zookeeper(chaos: Chaos) -> FaultResult:
    """A partition leader (not the controller, when there is one) cut from every ZooKeeper node:
    its session expires, its partitions move; healed after the failover."""
    controller = chaos.cluster.controller_id()
    leaders = chaos.leaders()
    victim = chaos.rng.choice(sorted({b for b in leaders.values() if b != controller}
                                     or set(leaders.values())))
    led = [p for p, b in leaders.items() if b == victim]
    started = time.monotonic()
    chaos.cluster.cut(victim, "zookeeper")
    chaos.wait(lambda: victim not in chaos.cluster.registered_brokers(), HOLD_TIMEOUT_S,
               f"broker {victim}'s session to expire")
    failover = chaos.failover(led, victim, started)
    note = chaos.stale_leader_probes(victim, led)
    healing = time.monotonic()
    chaos.cluster.heal()
    return FaultResult("leader-cut-from-zookeeper", f"b{victim} (led {led})", failover,
                       chaos.recover(healing), note)


def leader_cut_from_followers(chaos: Chaos) -> FaultResult:
    """A partition leader cut from the other brokers (not from ZooKeeper): it keeps leading and
    shrinks the ISR to itself; acks=all must then be refused. No failover."""
    partition = chaos.rng.randrange(chaos.partitions)
    leader = chaos.state(partition).leader
    followers = [b for b in chaos.kafka.brokers if b != leader]
    chaos.cluster.cut(leader, followers)
    chaos.wait(lambda: list(chaos.state(partition).isr) == [leader], HOLD_TIMEOUT_S,
               f"leader {leader} to shrink partition {partition}'s ISR to itself")
    code = chaos.probe(leader, partition)
    note = f"acks=all with ISR [{leader}] answered {code}"
    if code == 0:
        note += " (ACKNOWLEDGED with one in-sync replica, below min.insync.replicas)"
    healing = time.monotonic()
    chaos.cluster.heal()
    return FaultResult("leader-cut-from-followers", f"b{leader} (p{partition})", None,
                       chaos.recover(healing), note)


def zombie_controller(chaos: Chaos) -> FaultResult:
    """SIGSTOP of the controller past its session: another broker takes over; then SIGCONT,
    and the zombie is probed on the partitions it led before it learns it lost them."""
    victim = chaos.cluster.controller_id()
    led = chaos.led_by(victim)
    started = time.monotonic()
    chaos.down.add(victim)
    chaos.cluster.pause(victim)
    chaos.wait(lambda: chaos.cluster.controller_id() not in (None, victim), HOLD_TIMEOUT_S,
               f"another controller than the frozen broker {victim}")
    failover = chaos.failover(led, victim, started)
    healing = time.monotonic()
    chaos.cluster.resume(victim)
    chaos.down.discard(victim)
    note = chaos.stale_leader_probes(victim, led)
    return FaultResult("zombie-controller", f"b{victim} (led {led})", failover,
                       chaos.recover(healing), note)


def broker_session_expiry(chaos: Chaos) -> FaultResult:
    """SIGSTOP of a broker that is not the controller (a leader, when one is) until ZooKeeper
    expires its session; resumed, it must register again and rejoin."""
    controller = chaos.cluster.controller_id()
    leaders = chaos.leaders()
    others = sorted(b for b in chaos.kafka.brokers if b != controller)
    leading = sorted({b for b in leaders.values() if b in others})
    victim = chaos.rng.choice(leading or others)
    led = [p for p, b in leaders.items() if b == victim]
    started = time.monotonic()
    chaos.down.add(victim)
    chaos.cluster.pause(victim)
    chaos.wait(lambda: victim not in chaos.cluster.registered_brokers(), HOLD_TIMEOUT_S,
               f"frozen broker {victim}'s session to expire")
    failover = chaos.failover(led, victim, started)
    healing = time.monotonic()
    chaos.cluster.resume(victim)
    chaos.down.discard(victim)
    note = chaos.stale_leader_probes(victim, led)
    return FaultResult("broker-session-expiry", f"b{victim} (led {led})", failover,
                       chaos.recover(healing), note)


def controller_session_expiry(chaos: Chaos) -> FaultResult:
    """The controller cut from ZooKeeper until /controller names another broker; healed, it must
    step down and rejoin as a plain broker."""
    victim = chaos.cluster.controller_id()
    led = chaos.led_by(victim)
    started = time.monotonic()
    chaos.cluster.cut(victim, "zookeeper")
    chaos.wait(lambda: chaos.cluster.controller_id() not in (None, victim), HOLD_TIMEOUT_S,
               f"another controller than broker {victim}, cut from ZooKeeper")
    failover = chaos.failover(led, victim, started)
    note = chaos.stale_leader_probes(victim, led)
    healing = time.monotonic()
    chaos.cluster.heal()
    return FaultResult("controller-session-expiry", f"b{victim} (led {led})", failover,
                       chaos.recover(healing), note)


def leader_controller_cut_from_zookeeper(chaos: Chaos) -> FaultResult:
    """The controller, leading a partition, cut from every ZooKeeper node (issue 24, bug 6):
    both its session's ephemerals go at once, so another broker becomes controller and moves
    the partitions away from it. When the controller leads nothing (an earlier fault moved its
    leaderships), a preferred-leader election gives each broker its preferred partitions first.
    Failover is timed as for a kill -9 of a leader: fault start -> the new leaders acknowledge."""
    victim = chaos.cluster.controller_id()
    if not chaos.led_by(victim):
        from kafkalite.client import AdminClient

        admin = AdminClient(chaos.kafka.bootstrap_servers)
        try:
            admin.elect_preferred_leaders([(chaos.topic, p) for p in range(chaos.partitions)])
        finally:
            admin.close()
        chaos.wait(lambda: chaos.led_by(victim), HOLD_TIMEOUT_S,
                   f"controller {victim} to lead its preferred partitions")
    led = chaos.led_by(victim)
    started = time.monotonic()
    chaos.cluster.cut(victim, "zookeeper")
    failover = chaos.failover(led, victim, started)
    chaos.wait(lambda: chaos.cluster.controller_id() not in (None, victim), HOLD_TIMEOUT_S,
               f"another controller than broker {victim}, cut from ZooKeeper")
    note = chaos.stale_leader_probes(victim, led)
    healing = time.monotonic()
    chaos.cluster.heal()
    return FaultResult("leader-controller-cut-zk", f"b{victim} (led {led})", failover,
                       chaos.recover(healing), note)


def zookeeper_quorum_loss(chaos: Chaos) -> FaultResult:
    """Two of the three ZooKeeper nodes killed: no quorum. The brokers must go on serving (the
    producer's acks=all writes go on while the ISRs stay as they are); the two come back."""
    ensemble = chaos.cluster.zookeeper
    nodes = sorted(chaos.rng.sample(range(ensemble.size), 2))
    names = [f"zk{i + 1}" for i in nodes]
    for name in names:
        chaos.cluster.kill(name)
    chaos.wait(lambda: ensemble.serving() == [], HOLD_TIMEOUT_S,
               f"the ZooKeeper node left to stop serving once {names} are killed")
    acked = chaos.producer.acked_count()
    try:
        chaos.wait(lambda: chaos.producer.acked_since(acked) >= 50, 30,
                   "acks=all writes without ZooKeeper")
        note = "writes went on without ZooKeeper"
    except ChaosStuck:
        note = "no 50 writes acknowledged in 30 s without ZooKeeper"
    healing = time.monotonic()
    for name in names:
        chaos.cluster.restart(name, wait=False)
    chaos.wait(lambda: len(ensemble.serving()) == ensemble.size, chaos.recovery_timeout_s,
               "every ZooKeeper node serving again")
    return FaultResult("zookeeper-quorum-loss", "+".join(names), None, chaos.recover(healing),
                       note)


def full_disk(chaos: Chaos) -> FaultResult:
    """The log dir of one broker (its only one, on a small tmpfs) filled up: the broker halts
    (Kafka's choice with no log dir left) and its partitions fail over; freed and restarted, it
    recovers its logs and rejoins."""
    disk = chaos.disk
    victim = disk.broker_id
    led = chaos.led_by(victim)
    started = time.monotonic()
    chaos.down.add(victim)
    disk.fill()
    chaos.wait(lambda: not chaos.broker(victim).running, HOLD_TIMEOUT_S,
               f"broker {victim} to halt on its full log dir")
    code = chaos.broker(victim).process.returncode
    failover = chaos.failover(led, victim, started)
    healing = time.monotonic()
    disk.free()
    chaos.cluster.restart(victim, wait=False)
    return FaultResult("full-disk", f"b{victim} (led {led})", failover, chaos.recover(healing),
                       f"halted with exit code {code}")


class SmallDisk:
    """A tmpfs mounted on one broker's log dir. ``fill`` shrinks it to what is used plus a few
    MiB and fills that with a filler file (so filling costs MiB of memory, not the run's whole
    log); ``free`` deletes the filler and gives the size back."""

    def __init__(self, path: str, broker_id: int, size_bytes: int = 1 << 30):
        self.path, self.broker_id, self.size_bytes = path, broker_id, size_bytes
        self.filler = os.path.join(path, "chaos-filler")
        self.mounted = False

    @staticmethod
    def unavailable_reason() -> str | None:
        if os.geteuid() != 0:
            return "mounting the tmpfs that fills up needs root"
        return None

    def _mount(self, *options: str) -> subprocess.CompletedProcess:
        return subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs",
                               self.path], capture_output=True, text=True)

    def mount(self) -> None:
        os.makedirs(self.path, exist_ok=True)
        done = self._mount(f"size={self.size_bytes}")
        if done.returncode != 0:
            raise OSError(f"cannot mount a tmpfs on {self.path}: {done.stderr.strip()}")
        self.mounted = True

    def fill(self) -> None:
        for headroom in (8 << 20, 32 << 20, 128 << 20):
            stat = os.statvfs(self.path)
            used = (stat.f_blocks - stat.f_bfree) * stat.f_frsize
            if self._mount("remount", f"size={used + headroom}").returncode == 0:
                break
        else:
            raise ChaosStuck(f"cannot shrink the tmpfs on {self.path} to fill it")
        stat = os.statvfs(self.path)
        remaining = stat.f_bavail * stat.f_frsize - FILLER_LEAVES
        chunk = b"\0" * (64 * 1024)
        with open(self.filler, "wb") as f:
            while remaining > 0:
                try:
                    remaining -= f.write(chunk[:remaining])
                except OSError:
                    break

    def free(self) -> None:
        if os.path.exists(self.filler):
            os.unlink(self.filler)
        done = self._mount("remount", f"size={self.size_bytes}")
        if done.returncode != 0:
            raise ChaosStuck(f"cannot give the tmpfs on {self.path} its size back: "
                             f"{done.stderr.strip()}")

    def unmount(self) -> None:
        if self.mounted and subprocess.run(["umount", self.path],
                                           capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", self.path], capture_output=True)
        self.mounted = False


# what each kind needs: "processes" (always there), "network" (namespaces), "disk" (a tmpfs)
FAULTS: dict[str, tuple[Callable[[Chaos], FaultResult], str]] = {
    "leader-kill": (leader_kill, "processes"),
    "leader-cut-from-zookeeper": (leader_cut_from_zookeeper, "network"),
    "leader-cut-from-followers": (leader_cut_from_followers, "network"),
    "zombie-controller": (zombie_controller, "processes"),
    "full-disk": (full_disk, "disk"),
    "zookeeper-quorum-loss": (zookeeper_quorum_loss, "processes"),
    "broker-session-expiry": (broker_session_expiry, "processes"),
    "controller-session-expiry": (controller_session_expiry, "network"),
    "leader-controller-cut-zk": (leader_controller_cut_from_zookeeper, "network"),
}
