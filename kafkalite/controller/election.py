"""Partition leader election (pure decision functions, as Kafka's PartitionLeaderElectionAlgorithms).

Each function takes what the controller knows and returns ``LeaderAndIsr`` or None when no
replica may lead. They do no I/O; the controller writes the result conditionally to ZooKeeper.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

NO_LEADER = -1


@dataclass(frozen=True)
class LeaderAndIsr:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int = 0
    zk_version: int = 0

    def new_leader(self, leader: int, isr, controller_epoch: int) -> "LeaderAndIsr":
        return replace(self, leader=leader, isr=tuple(isr), leader_epoch=self.leader_epoch + 1,
                       controller_epoch=controller_epoch)


@dataclass(frozen=True)
class ElectionResult:
    leader: int
    isr: tuple[int, ...]
    unclean: bool = False


def offline_election(assignment, isr, live, unclean_allowed: bool) -> ElectionResult | None:
    """New or offline partition: first live in-sync replica in assignment order; else, if unclean
    election is allowed, the first live replica (which may lose data)."""
    live_isr = [b for b in isr if b in live]
    for broker in assignment:
        if broker in live and broker in isr:
            return ElectionResult(broker, tuple(live_isr))
    if unclean_allowed:
        for broker in assignment:
            if broker in live:
                return ElectionResult(broker, (broker,), unclean=True)
    return None


def new_partition_election(assignment, live) -> ElectionResult | None:
    """A new partition's ISR is its live replicas; the leader is the first of them."""
    live_replicas = tuple(b for b in assignment if b in live)
    if not live_replicas:
        return None
    return ElectionResult(live_replicas[0], live_replicas)


def reassignment_election(target, isr, live) -> ElectionResult | None:
    """First replica of the target list that is live and in the ISR; the ISR is unchanged."""
    for broker in target:
        if broker in live and broker in isr:
            return ElectionResult(broker, tuple(isr))
    return None


def preferred_election(assignment, isr, live) -> ElectionResult | None:
    """The first assigned replica, only if it is live and in the ISR."""
    if not assignment:
        return None
    preferred = assignment[0]
    if preferred in live and preferred in isr:
        return ElectionResult(preferred, tuple(isr))
    return None


def controlled_shutdown_election(assignment, isr, live, shutting_down) -> ElectionResult | None:
    """First live in-sync replica not shutting down; the ISR loses the brokers shutting down."""
    new_isr = tuple(b for b in isr if b not in shutting_down)
    for broker in assignment:
        if broker in live and broker in isr and broker not in shutting_down:
            return ElectionResult(broker, new_isr)
    return None


def leader_imbalance(assignments: dict, leaders: dict) -> dict[int, float]:
    """Per preferred broker: the share of its preferred partitions that another broker leads."""
    preferred_count: dict[int, int] = {}
    not_led: dict[int, int] = {}
    for tp, replicas in assignments.items():
        if not replicas:
            continue
        preferred = replicas[0]
        preferred_count[preferred] = preferred_count.get(preferred, 0) + 1
        if leaders.get(tp) != preferred:
            not_led[preferred] = not_led.get(preferred, 0) + 1
    return {b: not_led.get(b, 0) / count for b, count in preferred_count.items()}
