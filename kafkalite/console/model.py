"""The console's picture of the cluster as ZooKeeper shows it, and the changes between pictures.

Pure: the ZooKeeper watcher (:mod:`kafkalite.console.zk_watcher`) feeds decoded znode values in,
on the reactor thread, and each update returns the :class:`Change` values it caused (with the
sentence of :mod:`kafkalite.console.sentences`). Nothing here does I/O, so unit tests drive it
directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from zk_schema.brokers import BrokerRegistration
from zk_schema.topics import PartitionState, TopicAssignment

from kafkalite.console import sentences as say

ZOOKEEPER_KIND = "zookeeper"       # Kafka 0.8 groups, coordinated through ZooKeeper
COORDINATOR_KIND = "coordinator"   # Kafka 0.9+ groups, run by the brokers' group coordinator


class Change(NamedTuple):
    """One change worth a line in the timeline: ``kind`` for machines, ``sentence`` for people."""

    kind: str
    sentence: str
    data: dict


@dataclass
class BrokerInfo:
    broker_id: int
    registration: BrokerRegistration | None = None   # the last one seen (kept after death)
    alive: bool = False


@dataclass
class TopicInfo:
    assignment: dict[int, tuple[int, ...]] = field(default_factory=dict)
    topic_id: str | None = None
    states: dict[int, PartitionState] = field(default_factory=dict)


@dataclass
class ZkGroupInfo:
    members: set[str] = field(default_factory=set)
    owners: dict[tuple[str, int], str] = field(default_factory=dict)    # tp -> owner thread id
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)   # tp -> committed offset


def owner_member(owner: str) -> str:
    """The member id in an owner znode's ``<member>-<thread>``."""
    head, sep, tail = owner.rpartition("-")
    return head if sep and tail.isdigit() else owner


class ClusterModel:
    """Brokers, controller, topics with leader/ISR, and ZooKeeper groups, from ZooKeeper."""

    def __init__(self) -> None:
        self.cluster_id: str | None = None
        self.brokers: dict[int, BrokerInfo] = {}
        self.controller_id: int | None = None
        self.controller_timestamp: int | None = None
        self.controller_epoch: int | None = None
        self._announced_controller: tuple[int | None, int | None, int | None] = (None, None, None)
        self._last_controller: int | None = None      # the controller last announced
        self.topics: dict[str, TopicInfo] = {}
        self.zk_groups: dict[str, ZkGroupInfo] = {}

    # --- brokers ---------------------------------------------------------------------------------
    def dead_brokers(self) -> set[int]:
        return {b for b, info in self.brokers.items() if not info.alive}

    def live_brokers(self) -> list[int]:
        return sorted(b for b, info in self.brokers.items() if info.alive)

    def set_broker_ids(self, broker_ids: list[int]) -> list[Change]:
        """The children of /brokers/ids: new ids are tracked (their registrations arrive through
        ``set_broker``, which also says when one dies)."""
        for broker_id in broker_ids:
            self.brokers.setdefault(broker_id, BrokerInfo(broker_id))
        return []

    def set_broker(self, broker_id: int, registration: BrokerRegistration | None) -> list[Change]:
        """``/brokers/ids/<id>`` now holds ``registration`` (None: the ephemeral znode is gone)."""
        info = self.brokers.setdefault(broker_id, BrokerInfo(broker_id))
        was_alive, seen_before = info.alive, info.registration is not None
        if registration is None:
            info.alive = False
            if not was_alive:
                return []
            led = [(t, p) for t, topic in sorted(self.topics.items())
                   for p, state in sorted(topic.states.items()) if state.leader == broker_id]
            return [Change("broker_died", say.broker_died(broker_id, led),
                           {"broker": broker_id, "led": [say.tp_name(t, p) for t, p in led]})]
        info.registration = registration
        info.alive = True
        if was_alive:
            return []
        return [Change("broker_joined",
                       say.broker_joined(broker_id, registration.host, registration.port,
                                         seen_before),
                       {"broker": broker_id})]

    # --- the controller -----------------------------------------------------------------------------
    def set_controller(self, broker_id: int | None, timestamp_ms: int | None) -> list[Change]:
        previous = self.controller_id
        self.controller_id, self.controller_timestamp = broker_id, timestamp_ms
        if broker_id is None:
            self._announced_controller = (None, None, self._announced_controller[2])
            if previous is None:
                return []
            return [Change("controller_gone", say.controller_gone(previous),
                           {"broker": previous})]
        return self._maybe_announce_controller()

    def set_controller_epoch(self, epoch: int | None) -> list[Change]:
        self.controller_epoch = epoch
        return self._maybe_announce_controller()

    def _maybe_announce_controller(self) -> list[Change]:
        """An election writes /controller and /controller_epoch in one transaction, but their
        watches report one at a time: announce once both are new (a new registration, and an
        epoch other than the one last announced)."""
        last_id, last_ts, last_epoch = self._announced_controller
        if self.controller_id is None or self.controller_epoch is None:
            return []
        new_registration = (self.controller_id, self.controller_timestamp) != (last_id, last_ts)
        if not new_registration or self.controller_epoch == last_epoch:
            return []
        previous = self._last_controller
        self._announced_controller = (self.controller_id, self.controller_timestamp,
                                      self.controller_epoch)
        self._last_controller = self.controller_id
        return [Change("controller_elected",
                       say.controller_elected(self.controller_id, self.controller_epoch,
                                              previous),
                       {"broker": self.controller_id, "epoch": self.controller_epoch})]

    # --- topics --------------------------------------------------------------------------------------
    def set_topics(self, topics: list[str]) -> list[Change]:
        """The children of /brokers/topics: removed topics are dropped (and announced)."""
        out = []
        for topic in sorted(set(self.topics) - set(topics)):
            del self.topics[topic]
            out.append(Change("topic_deleted", say.topic_deleted(topic), {"topic": topic}))
        for topic in topics:
            self.topics.setdefault(topic, TopicInfo())
        return out

    def set_assignment(self, topic: str, assignment: TopicAssignment | None) -> list[Change]:
        info = self.topics.get(topic)
        if info is None or assignment is None:
            return []
        before = dict(info.assignment)
        info.assignment = dict(assignment.partitions)
        info.topic_id = assignment.topic_id
        for p in list(info.states):
            if p not in info.assignment:
                del info.states[p]
        if not before:
            return [Change("topic_created", say.topic_created(topic, info.assignment),
                           {"topic": topic, "partitions": len(info.assignment)})]
        if len(info.assignment) > len(before):
            return [Change("partitions_added",
                           say.partitions_added(topic, len(before), len(info.assignment)),
                           {"topic": topic, "partitions": len(info.assignment)})]
        return []

    def set_partition_state(self, topic: str, partition: int,
                            state: PartitionState | None) -> list[Change]:
        info = self.topics.get(topic)
        if info is None:
            return []
        old = info.states.get(partition)
        if state is None:
            info.states.pop(partition, None)
            return []
        info.states[partition] = state
        sentences = say.partition_changed(topic, partition, old, state, self.dead_brokers())
        kind = "leader_changed" if old is not None and old.leader != state.leader else "isr_changed"
        return [Change(kind, s, {"topic": topic, "partition": partition, "leader": state.leader,
                                 "isr": list(state.isr), "leader_epoch": state.leader_epoch,
                                 "internal": say.is_internal(topic)})
                for s in sentences]

    # --- ZooKeeper consumer groups -------------------------------------------------------------------
    def set_zk_groups(self, groups: list[str]) -> list[Change]:
        out = []
        for group in sorted(set(self.zk_groups) - set(groups)):
            del self.zk_groups[group]
            out.append(Change("group_gone", say.group_gone(group, ZOOKEEPER_KIND),
                              {"group": group, "group_kind": ZOOKEEPER_KIND}))
        for group in groups:
            self.zk_groups.setdefault(group, ZkGroupInfo())
        return out

    def set_zk_members(self, group: str, members: list[str] | None) -> list[Change]:
        info = self.zk_groups.get(group)
        if info is None:
            return []
        new = set(members or ())
        out = []
        for member in sorted(new - info.members):
            out.append(Change("member_joined",
                              say.member_joined(group, ZOOKEEPER_KIND, member, len(new)),
                              {"group": group, "group_kind": ZOOKEEPER_KIND, "member": member}))
        for member in sorted(info.members - new):
            out.append(Change("member_left",
                              say.member_left(group, ZOOKEEPER_KIND, member, len(new)),
                              {"group": group, "group_kind": ZOOKEEPER_KIND, "member": member}))
        info.members = new
        return out

    def set_zk_owner(self, group: str, topic: str, partition: int, owner: str | None) -> bool:
        """An owner znode changed; True when the group's assignment changed (the caller
        announces assignments once they settle: owners change one znode at a time)."""
        info = self.zk_groups.get(group)
        if info is None:
            return False
        tp = (topic, partition)
        before = info.owners.get(tp)
        if owner is None:
            info.owners.pop(tp, None)
        else:
            info.owners[tp] = owner
        return before != owner

    def set_zk_offset(self, group: str, topic: str, partition: int, offset: int | None) -> None:
        info = self.zk_groups.get(group)
        if info is None:
            return
        if offset is None:
            info.offsets.pop((topic, partition), None)
        else:
            info.offsets[(topic, partition)] = offset

    def zk_assignment(self, group: str) -> dict[str, list[tuple[str, int]]]:
        """member -> owned partitions (members that own nothing map to [])."""
        info = self.zk_groups.get(group)
        if info is None:
            return {}
        out: dict[str, list[tuple[str, int]]] = {m: [] for m in info.members}
        for tp, owner in sorted(info.owners.items()):
            out.setdefault(owner_member(owner), []).append(tp)
        return out

    def zk_assignment_complete(self, group: str) -> bool:
        """Every partition of the topics the group owns anything of has an owner, and every
        owner is a live member: a rebalance is over."""
        info = self.zk_groups.get(group)
        if info is None:
            return True
        topics = {t for t, _p in info.owners}
        for topic in topics:
            partitions = self.topics.get(topic, TopicInfo()).assignment
            if any((topic, p) not in info.owners for p in partitions):
                return False
        return all(owner_member(o) in info.members for o in info.owners.values())
