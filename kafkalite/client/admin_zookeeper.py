"""The AdminClient's ZooKeeper half: what Kafka's ZooKeeper-era tools did through ZooKeeper.

Kafka 0.8 consumer groups (``/consumers/<g>``: members, owners, offsets), changing topic config
overrides (``/config/topics``), topics marked for deletion, preferred replica elections and
partition reassignments (requests to the controller in ``/admin/*``). Every ZooKeeper access is a
typed ``ZkClient`` operation (``kafkalite.zk``: ops, cluster_ops, controller_ops,
consumer_ops); no znode path is built here.

The session is opened on first use, with the brokers' ``zookeeper.connect`` (chroot included);
the chroot is looked at before connecting to it, so a mistyped chroot is refused by name rather
than created. The broker half (``admin.py``) routes here; log end offsets for lag come from it
(ListOffsets through the brokers, ``offsets_lookup``).
"""

from __future__ import annotations

import re
import time
import weakref
from typing import Callable, Iterable

from kafkalite import errors
from kafkalite.client import admin_groups as ag
from kafkalite.client.structs import OffsetAndMetadata, TopicPartition
from kafkalite.errors import KafkaError
from kafkalite.topics import validate_topic_name

__all__ = ["ZooKeeperAdmin"]

_ELECTION_POLL_S = 0.05


class ZooKeeperAdmin:
    """ZooKeeper-backed administration for one AdminClient (same thread rules)."""

    def __init__(self, zookeeper: str | None, request_timeout_ms: int,
                 check_open: Callable[[], None], clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.zookeeper = zookeeper
        self.request_timeout_ms = request_timeout_ms
        self._check_open = check_open
        self._clock = clock
        self._sleep = sleep
        self._session = None
        self._finalizer = None

    # --- the session --------------------------------------------------------------------------
    def zk(self):
        """This client's ZooKeeper session (opened on first use; see ``close``)."""
        if self._session is not None:
            return self._session
        self._check_open()
        if self.zookeeper is None:
            raise errors.ConfigError(
                "this operation goes through ZooKeeper: create the AdminClient with "
                "zookeeper='host:2181/chroot' (the brokers' zookeeper.connect)")
        import zk_schema
        from kafkalite.zk.client import split_connect_string
        from kafkalite.zk.errors import ZkConnectionLossError
        from kafkalite.zk.znode_acls import secure_zk_client

        hosts, chroot = split_connect_string(self.zookeeper)
        timeout_s = 10

        def call(fn, *args):
            try:
                return fn(*args)
            except ZkConnectionLossError:
                raise errors.ZooKeeperError(
                    f"cannot reach ZooKeeper at {hosts} within {timeout_s} s") from None
            except KafkaError as exc:
                raise errors.ZooKeeperError(f"ZooKeeper at {hosts}: {exc}") from None

        # look before connecting with the chroot: a mistyped chroot must not get created
        zk = secure_zk_client(hosts, session_timeout_ms=10000, connection_timeout_s=timeout_s)
        try:
            call(zk.start)
            has_cluster = call(zk.exists, chroot + zk_schema.BROKER_IDS_PATH)
        except BaseException:
            zk.stop()
            raise
        if chroot or not has_cluster:
            zk.stop()
        if not has_cluster:
            raise errors.ConfigError(
                f"no kafkalite cluster in ZooKeeper {self.zookeeper} (no "
                f"{zk_schema.BROKER_IDS_PATH}); is the chroot right?")
        if chroot:
            zk = secure_zk_client(self.zookeeper, session_timeout_ms=10000,
                                  connection_timeout_s=timeout_s)
            call(zk.start)
        self._session = zk
        self._finalizer = weakref.finalize(self, zk.stop)
        return zk

    def close(self) -> None:
        finalizer, self._finalizer, self._session = self._finalizer, None, None
        if finalizer is not None:
            finalizer()

    # --- topics -------------------------------------------------------------------------------
    def assignments(self, topics: Iterable[str]) -> dict:
        """{topic: TopicAssignment}; UnknownTopicOrPartitionError for a missing one."""
        names = list(dict.fromkeys(topics))
        for name in names:
            validate_topic_name(name)
        found = self.zk().get_topic_assignments(names)
        for name in names:
            if name not in found:
                raise errors.UnknownTopicOrPartitionError(f"topic '{name}' does not exist")
        return found

    def partitions_of(self, topics: list[str]) -> dict[str, list[int]]:
        return {t: sorted(a.partitions) for t, a in self.assignments(topics).items()}

    def alter_topic_config(self, topic: str, configs: dict) -> dict[str, str]:
        """Set (value) or remove (None) overrides in ``/config/topics/<t>`` (validated against
        the topic config table), announced to the brokers by the ZkClient operation."""
        from kafkalite.config import TopicConfig, check_topic_config_name

        self.assignments([topic])
        zk = self.zk()
        merged = dict(zk.get_topic_config(topic))
        for key, value in configs.items():
            key = str(key)
            if value is None:
                check_topic_config_name(key)   # Kafka's message, naming the closest
                merged.pop(key, None)
            else:
                merged[key] = str(value)
        TopicConfig.from_dict(merged)
        zk.set_topic_config(topic, merged)
        return dict(sorted(merged.items()))

    def topics_marked_for_deletion(self) -> list[str]:
        return sorted(self.zk().topics_marked_for_deletion())

    # --- consumer groups (Kafka 0.8) ----------------------------------------------------------
    @staticmethod
    def check_group_name(group) -> str:
        import zk_schema

        if not isinstance(group, str) or not group:
            raise errors.InvalidRequestError(f"group id must be a non-empty string, got "
                                             f"{group!r}")
        try:
            zk_schema.consumers.group_path(group)
        except zk_schema.SchemaError as exc:
            raise errors.InvalidRequestError(f"bad group id {group!r}: {exc}") from None
        return group

    def require_group(self, group) -> None:
        self.check_group_name(group)
        if not self.zk().consumer_group_exists(group):
            raise errors.GroupIdNotFoundError(f"consumer group '{group}' does not exist")

    def has_group(self, group: str) -> bool:
        """True if ``group`` is a ZooKeeper group (False for a name ZooKeeper cannot hold)."""
        import zk_schema

        try:
            return self.zk().consumer_group_exists(group)
        except zk_schema.SchemaError:
            return False

    def list_groups(self) -> list:
        return [ag.ConsumerGroupListing(name, ag.ZOOKEEPER)
                for name in self.zk().list_consumer_groups()]

    def describe_group(self, group: str) -> ag.ConsumerGroupDescription:
        from zk_schema.consumers import PartitionOwner

        self.require_group(group)
        zk = self.zk()
        registrations = zk.get_consumer_registrations(group)
        owned: dict[str, list[TopicPartition]] = {member: [] for member in registrations}
        for (topic, partition), owner in sorted(zk.get_partition_owners(group).items()):
            member = PartitionOwner(owner).member_id
            owned.setdefault(member, []).append(TopicPartition(topic, partition))
        members = [ag.MemberDescription(member, None, None, ag.member_host(group, member), tps)
                   for member, tps in sorted(owned.items())]
        return ag.ConsumerGroupDescription(
            group, ag.ZOOKEEPER, "Stable" if registrations else "Empty", "consumer", "", None,
            members)

    def describe_offsets(self, group: str, log_end_offsets: Callable[[list], dict]) -> list:
        """Kafka's ``--describe`` rows of a ZooKeeper group: the partitions of the topics it
        committed offsets for, owns or subscribes to, then members owning nothing.
        ``log_end_offsets(tps)`` is ``{tp: high watermark}`` (ListOffsets, the broker half)."""
        from zk_schema.consumers import PartitionOwner

        self.require_group(group)
        zk = self.zk()
        registrations = zk.get_consumer_registrations(group)
        owners = zk.get_partition_owners(group)
        offsets = zk.get_consumer_offsets(group)
        topics = {t for t, _ in offsets} | {t for t, _ in owners}
        all_topics = None
        for registration in registrations.values():
            if registration.pattern == "static":
                topics |= set(registration.subscription)
            else:
                if all_topics is None:
                    all_topics = zk.list_topics()
                patterns = [re.compile(p) for p in registration.subscription]
                topics |= {t for t in all_topics if any(p.fullmatch(t) for p in patterns)}
        assignments = zk.get_topic_assignments(sorted(topics))
        tps = set(offsets) | set(owners)
        for topic, assignment in assignments.items():
            tps |= {(topic, p) for p in assignment.partitions}
        tps = sorted(tps)
        ends = log_end_offsets(tps)
        rows = []
        owning = set()
        for topic, partition in tps:
            current = offsets.get((topic, partition))
            end = ends.get(TopicPartition(topic, partition))
            lag = end - current if current is not None and end is not None else None
            owner = owners.get((topic, partition))
            member = PartitionOwner(owner).member_id if owner else None
            owning.add(member)
            rows.append(ag.ConsumerGroupPartition(
                group, topic, partition, current, end, lag, member,
                ag.member_host(group, member) if member else None, None))
        for member in sorted(registrations):
            if member not in owning:
                rows.append(ag.ConsumerGroupPartition(group, None, None, None, None, None,
                                                      member, ag.member_host(group, member),
                                                      None))
        return rows

    def committed(self, group: str, partitions=None) -> dict:
        self.require_group(group)
        stored = self.zk().get_consumer_offsets(group)
        wanted = None if partitions is None else {(tp[0], tp[1]) for tp in partitions}
        return {TopicPartition(t, p): OffsetAndMetadata(off, "")
                for (t, p), off in sorted(stored.items()) if wanted is None or (t, p) in wanted}

    def stored_offsets(self, group: str) -> dict:
        """``{(topic, partition): offset}`` as ZooKeeper holds them (no existence check)."""
        return self.zk().get_consumer_offsets(group)

    def write_offsets(self, group: str, plan: dict) -> None:
        self.zk().set_consumer_offsets(group, {(tp.topic, tp.partition): off
                                               for tp, off in plan.items()})

    def members(self, group: str) -> list[str]:
        self.check_group_name(group)
        return sorted(self.zk().get_consumer_members(group))

    def delete_group(self, group: str) -> None:
        self.require_group(group)
        try:
            self.zk().delete_consumer_group(group)
        except errors.NonEmptyGroupError:
            raise errors.NonEmptyGroupError(
                f"consumer group '{group}' has live members; stop its consumers before "
                f"deleting it") from None

    def refuse_active_group(self, group: str) -> None:
        members = self.zk().get_consumer_members(group)
        if members:
            shown = ", ".join(members[:3]) + (", ..." if len(members) > 3 else "")
            raise errors.NonEmptyGroupError(
                f"consumer group '{group}' has {len(members)} live member(s) ({shown}); "
                f"offsets can only be reset while the group is inactive: stop its consumers "
                f"first")

    # --- controller requests through /admin ---------------------------------------------------
    def elect_preferred_leaders(self, partitions, timeout_ms: int | None
                                ) -> dict[TopicPartition, KafkaError | None]:
        """See ``AdminClient.elect_preferred_leaders``."""
        import zk_schema
        from kafkalite.zk.errors import ZkNodeExistsError

        zk = self.zk()
        if partitions is None:
            assignments = zk.get_topic_assignments()
            tps = [TopicPartition(t, p) for t, a in sorted(assignments.items())
                   for p in sorted(a.partitions)]
        else:
            tps = list(dict.fromkeys(TopicPartition(*tp) for tp in partitions))
            assignments = self.assignments([tp.topic for tp in tps])
            for tp in tps:
                if tp.partition not in assignments[tp.topic].partitions:
                    raise errors.UnknownTopicOrPartitionError(f"partition {tp} does not exist")
        preferred = {tp: assignments[tp.topic].partitions[tp.partition][0] for tp in tps}
        states = zk.get_partition_states(tps)
        results: dict[TopicPartition, KafkaError | None] = {}
        todo = []
        for tp in tps:
            state = states.get(tp)
            if state is not None and state.leader == preferred[tp]:
                results[tp] = errors.ElectionNotNeededError(
                    f"{tp}: its preferred replica {preferred[tp]} already leads")
            else:
                todo.append(tp)
        if todo:
            try:
                zk.create_preferred_replica_election((tp.topic, tp.partition) for tp in todo)
            except ZkNodeExistsError:
                raise errors.IllegalStateError(
                    f"a preferred replica election is already in progress "
                    f"({zk_schema.PREFERRED_REPLICA_ELECTION_PATH} exists); try again once the "
                    f"controller finished it") from None
            timeout_ms = self.request_timeout_ms if timeout_ms is None else timeout_ms
            deadline = self._clock() + timeout_ms / 1000
            pending = timeout_ms > 0
            while pending and self._clock() < deadline:
                pending = zk.preferred_replica_election_pending()
                if pending:
                    self._sleep(_ELECTION_POLL_S)
            states = zk.get_partition_states(todo)
            for tp in todo:
                state = states.get(tp)
                if state is not None and state.leader == preferred[tp]:
                    results[tp] = None
                elif pending or timeout_ms <= 0:
                    results[tp] = errors.KafkaTimeoutError(
                        f"{tp}: the controller has not acted on the election request yet "
                        f"(still queued in {zk_schema.PREFERRED_REPLICA_ELECTION_PATH})")
                else:
                    isr = list(state.isr) if state is not None else []
                    results[tp] = errors.PreferredLeaderNotAvailableError(
                        f"{tp}: preferred replica {preferred[tp]} is not live or not in the "
                        f"ISR {isr}")
        return {tp: results[tp] for tp in tps}

    def alter_partition_reassignments(self, reassignments: dict
                                      ) -> dict[TopicPartition, list[int]]:
        """See ``AdminClient.alter_partition_reassignments``."""
        import zk_schema
        from kafkalite.zk.errors import ZkNodeExistsError

        targets: dict[TopicPartition, list[int]] = {}
        for tp, replicas in reassignments.items():
            tp = TopicPartition(*tp)
            try:
                replicas = [int(b) for b in replicas]
            except (TypeError, ValueError):
                raise errors.InvalidReplicaAssignmentError(
                    f"{tp}: replicas must be broker ids, got {replicas!r}") from None
            if not replicas or len(set(replicas)) != len(replicas):
                raise errors.InvalidReplicaAssignmentError(
                    f"{tp}: the replica list {replicas} must be non-empty without repeats")
            targets[tp] = replicas
        if not targets:
            raise errors.InvalidReplicaAssignmentError("the reassignment lists no partitions")
        assignments = self.assignments([tp.topic for tp in targets])
        current = {}
        for tp in targets:
            replicas = assignments[tp.topic].partitions.get(tp.partition)
            if replicas is None:
                raise errors.UnknownTopicOrPartitionError(f"partition {tp} does not exist")
            current[tp] = list(replicas)
        zk = self.zk()
        brokers = set(zk.get_broker_ids())
        unknown = sorted({b for r in targets.values() for b in r} - brokers)
        if unknown:
            raise errors.InvalidReplicaAssignmentError(
                f"the reassignment names broker(s) {unknown} that are not registered (live "
                f"brokers: {sorted(brokers)})")
        try:
            zk.create_partition_reassignment(
                {(tp.topic, tp.partition): r for tp, r in targets.items()})
        except ZkNodeExistsError:
            raise errors.IllegalStateError(
                f"a partition reassignment is still running "
                f"({zk_schema.REASSIGN_PARTITIONS_PATH} exists); wait for it to finish "
                f"before starting another") from None
        return current

    def list_partition_reassignments(self) -> dict[TopicPartition, list[int]]:
        import zk_schema

        try:
            pending = self.zk().get_partition_reassignment()
        except zk_schema.SchemaError as exc:
            raise errors.ZooKeeperError(
                f"{zk_schema.REASSIGN_PARTITIONS_PATH} holds a malformed request: {exc}"
            ) from None
        if pending is None:
            return {}
        return {TopicPartition(t, p): list(r)
                for (t, p), r in sorted(pending.partitions.items())}
