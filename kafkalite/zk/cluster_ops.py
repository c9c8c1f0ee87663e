"""Typed ZooKeeper operations on the cluster's own znodes: cluster id, broker registrations, topic
assignments, topic configs and producer id blocks (Kafka's KafkaZkClient/AdminZkClient parts).

A mixin over :class:`~kafkalite.zk.ops.ZnodeOps`: it only uses the raw operations, never kazoo.
"""

from __future__ import annotations

import contextlib
from typing import Iterable, Mapping, Sequence

import zk_schema
from zk_schema import brokers as s_brokers
from zk_schema import cluster as s_cluster
from zk_schema import config as s_config
from zk_schema import producer_ids as s_pids
from zk_schema import topics as s_topics
from zk_schema.brokers import BrokerRegistration
from zk_schema.topics import TopicAssignment

from kafkalite.errors import (
    InvalidPartitionsError, TopicAlreadyExistsError, UnknownTopicOrPartitionError, ZooKeeperError,
)
from kafkalite.zk.errors import ZkBadVersionError, ZkNodeExistsError, ZkNoNodeError
from kafkalite.zk.ops import ZkCreate, ZkOp, ZkSetData, ZnodeOps


class ClusterZkOps(ZnodeOps):
    """Cluster id, brokers, topics, topic configs, producer ids."""

    # ------------------------------------------------------------------------- cluster / paths

    def ensure_persistent_paths(self) -> None:
        """Create the persistent znodes every broker expects (zk_schema.PERSISTENT_PATHS)."""
        for path in zk_schema.PERSISTENT_PATHS:
            self.ensure_path(path)

    def get_cluster_id(self) -> str | None:
        got = self.get_data(s_cluster.CLUSTER_ID_PATH)
        return s_cluster.ClusterId.decode(got[0], got[1]).id if got else None

    def get_or_create_cluster_id(self, proposed: str | None = None) -> str:
        existing = self.get_cluster_id()
        if existing is not None:
            return existing
        cid = s_cluster.ClusterId(proposed or s_cluster.new_cluster_id())
        try:
            self.create(s_cluster.CLUSTER_ID_PATH, cid.encode(), makepath=True)
            return cid.id
        except ZkNodeExistsError:
            return self.get_cluster_id() or cid.id

    # --------------------------------------------------------------------------------- brokers

    def register_broker(self, registration: BrokerRegistration) -> int:
        """Create the ephemeral ``/brokers/ids/<id>``; returns the broker epoch (its czxid).
        Raises ZkNodeExistsError when another live session holds that broker id."""
        path = s_brokers.broker_path(registration.broker_id)
        stat = self._create_ephemeral_checked(path, registration.encode())
        return stat.czxid

    def unregister_broker(self, broker_id: int) -> bool:
        return self.delete(s_brokers.broker_path(broker_id))

    def get_broker_ids(self) -> list[int]:
        ids = []
        for child in self.get_children(s_brokers.BROKER_IDS_PATH):
            with contextlib.suppress(zk_schema.SchemaError):
                ids.append(s_brokers.parse_broker_id(child))
        return sorted(ids)

    list_broker_ids = get_broker_ids

    list_broker_ids = get_broker_ids

    def get_broker(self, broker_id: int) -> BrokerRegistration | None:
        got = self._get_with_stat(s_brokers.broker_path(broker_id))
        if got is None:
            return None
        data, stat = got
        return BrokerRegistration.decode(data, stat.version, broker_id=broker_id,
                                         broker_epoch=stat.czxid)

    def get_brokers(self) -> dict[int, BrokerRegistration]:
        """Every registered broker, by id (pipelined reads)."""
        ids = self.get_broker_ids()
        out: dict[int, BrokerRegistration] = {}
        for bid, got in zip(ids, self._get_many([s_brokers.broker_path(b) for b in ids])):
            if got is not None:
                out[bid] = BrokerRegistration.decode(got[0], got[1].version, broker_id=bid,
                                                     broker_epoch=got[1].czxid)
        return out

    def next_broker_sequence_id(self) -> int:
        """A cluster-unique number (Kafka's broker.id generation via /brokers/seqid)."""
        try:
            return self.set_data(s_brokers.BROKER_SEQID_PATH, b"")
        except ZkNoNodeError:
            self.ensure_path(s_brokers.BROKER_SEQID_PATH)
            return self.set_data(s_brokers.BROKER_SEQID_PATH, b"")

    # ---------------------------------------------------------------------------------- topics

    def list_topics(self) -> list[str]:
        return self.get_children(s_topics.TOPICS_PATH)

    def topic_exists(self, topic: str) -> bool:
        return self.exists(s_topics.topic_path(topic))

    def create_topic(self, topic: str,
                     assignment: TopicAssignment | Mapping[int, Sequence[int]],
                     config: Mapping[str, str] | None = None) -> TopicAssignment:
        """Write the topic's config and replica assignment (one transaction). The controller sees
        the new ``/brokers/topics/<t>`` and does the rest. Raises TopicAlreadyExistsError."""
        if not isinstance(assignment, TopicAssignment):
            assignment = TopicAssignment(
                partitions={int(p): tuple(int(r) for r in reps) for p, reps in assignment.items()})
        if assignment.topic_id is None:
            assignment = TopicAssignment(partitions=assignment.partitions,
                                         topic_id=s_topics.new_topic_id(),
                                         adding_replicas=assignment.adding_replicas,
                                         removing_replicas=assignment.removing_replicas)
        topic_path = s_topics.topic_path(topic)
        config_path = s_config.topic_config_path(topic)
        config_data = s_config.EntityConfig(dict(config or {})).encode()
        if self.exists(topic_path):
            raise TopicAlreadyExistsError(f"Topic '{topic}' already exists.")
        self.ensure_path(s_topics.TOPICS_PATH)
        self.ensure_path(s_config.config_entity_type_path(s_config.TOPICS))
        for _ in range(5):
            config_op: ZkOp = (ZkSetData(config_path, config_data) if self.exists(config_path)
                               else ZkCreate(config_path, config_data))
            try:
                self.multi([config_op, ZkCreate(topic_path, assignment.encode())])
            except ZkNodeExistsError as exc:
                if getattr(exc, "failed_op", None) == config_op:
                    continue  # config appeared in between: set it instead
                raise TopicAlreadyExistsError(f"Topic '{topic}' already exists.") from None
            except ZkNoNodeError as exc:
                if getattr(exc, "failed_op", None) == config_op:
                    continue  # config vanished in between: create it instead
                raise
            return TopicAssignment(partitions=assignment.partitions, topic_id=assignment.topic_id,
                                   adding_replicas=assignment.adding_replicas,
                                   removing_replicas=assignment.removing_replicas, zk_version=0)
        raise ZooKeeperError(f"could not create topic {topic!r}: its config kept changing")

    def get_topic_assignment(self, topic: str) -> TopicAssignment | None:
        got = self.get_data(s_topics.topic_path(topic))
        return TopicAssignment.decode(got[0], got[1], topic=topic) if got else None

    def get_topic_assignments(self, topics: Iterable[str] | None = None
                              ) -> dict[str, TopicAssignment]:
        names = sorted(topics) if topics is not None else self.list_topics()
        out = {}
        for t, got in zip(names, self._get_many([s_topics.topic_path(t) for t in names])):
            if got is not None:
                out[t] = TopicAssignment.decode(got[0], got[1].version, topic=t)
        return out

    def set_topic_assignment(self, topic: str, assignment: TopicAssignment,
                             expected_zk_version: int = -1,
                             controller_epoch_zk_version: int | None = None) -> int:
        """Rewrite a topic's assignment (partition additions, reassignment); returns the new version."""
        op = ZkSetData(s_topics.topic_path(topic), assignment.encode(), expected_zk_version)
        if controller_epoch_zk_version is not None:
            return self.fenced_multi(controller_epoch_zk_version, [op])[0]
        return self.set_data(op.path, op.data, op.version)

    def add_partitions(self, topic: str, additions: Mapping[int, Sequence[int]],
                       expected_version: int = -1) -> TopicAssignment:
        """Add partitions to ``/brokers/topics/<t>`` (Kafka's AdminZkClient.addPartitions): one
        write of the whole assignment, conditional on the zkVersion read here and, unless -1, on
        ``expected_version`` (the version the caller's decision was based on). Existing
        partitions, the topic id and adding/removing replicas are kept; the controller sees the
        data change and brings the new partitions online. Returns the written assignment.

        ``additions`` must number the new partitions right after the existing ones. Raises
        UnknownTopicOrPartitionError (no such topic), InvalidPartitionsError (nothing to add, an
        existing partition or a gap in the numbering), ZkBadVersionError (the assignment changed
        since ``expected_version``, or while this ran: re-read and decide again)."""
        path = s_topics.topic_path(topic)
        got = self.get_data(path)
        if got is None:
            raise UnknownTopicOrPartitionError(f"topic '{topic}' does not exist")
        current = TopicAssignment.decode(got[0], got[1], topic=topic)
        if expected_version >= 0 and got[1] != expected_version:
            raise ZkBadVersionError(
                f"the assignment of topic '{topic}' is at zkVersion {got[1]}, not the expected "
                f"{expected_version} ({path})")
        added = {int(p): tuple(int(b) for b in replicas) for p, replicas in additions.items()}
        old_count = len(current.partitions)
        wanted = list(range(old_count, old_count + len(added)))
        if not added or sorted(added) != wanted:
            raise InvalidPartitionsError(
                f"topic '{topic}' has partitions 0..{old_count - 1}; partitions to add must be "
                f"numbered {old_count}.., got {sorted(added)}")
        merged = TopicAssignment(partitions={**current.partitions, **added},
                                 topic_id=current.topic_id,
                                 adding_replicas=current.adding_replicas,
                                 removing_replicas=current.removing_replicas)
        try:
            version = self.set_data(path, merged.encode(), got[1])
        except ZkNoNodeError:
            raise UnknownTopicOrPartitionError(f"topic '{topic}' does not exist") from None
        return TopicAssignment(partitions=merged.partitions, topic_id=merged.topic_id,
                               adding_replicas=merged.adding_replicas,
                               removing_replicas=merged.removing_replicas, zk_version=version)

    # -------------------------------------------------------------------------------- config

    def get_topic_config(self, topic: str) -> dict[str, str]:
        path = s_config.topic_config_path(topic)
        got = self.get_data(path)
        return dict(s_config.EntityConfig.decode(got[0], got[1], path=path).config) if got else {}

    def set_topic_config(self, topic: str, config: Mapping[str, str], notify: bool = True) -> None:
        """Replace the topic's config overrides and announce the change to the brokers."""
        path = s_config.topic_config_path(topic)
        self._create_or_set(path, s_config.EntityConfig(dict(config)).encode())
        if notify:
            self._notify_config_change(s_config.ConfigChangeNotification.for_topic(topic))

    def _notify_config_change(self, notification: s_config.ConfigChangeNotification) -> None:
        note = notification.encode()
        try:
            self.create(s_config.config_change_prefix_path(), note, sequence=True)
        except ZkNoNodeError:
            self.ensure_path(s_config.CONFIG_CHANGES_PATH)
            self.create(s_config.config_change_prefix_path(), note, sequence=True)

    def get_broker_config(self, broker_id: int | None) -> dict[str, str]:
        """Dynamic configs of one broker (``/config/brokers/<id>``) or, for None, the cluster
        default (``/config/brokers/<default>``); {} when the znode is absent."""
        path = s_config.broker_config_path(broker_id)
        got = self.get_data(path)
        return dict(s_config.EntityConfig.decode(got[0], got[1], path=path).config) if got else {}

    def set_broker_config(self, broker_id: int | None, config: Mapping[str, str]) -> None:
        """Replace a broker's (or, for None, the cluster default's) dynamic configs and announce
        it, as Kafka's AdminZkClient.changeBrokerConfig: entity znode, then notification."""
        path = s_config.broker_config_path(broker_id)
        self._create_or_set(path, s_config.EntityConfig(dict(config)).encode())
        self._notify_config_change(s_config.ConfigChangeNotification.for_broker(broker_id))

    def get_config_change_notifications(self) -> dict[str, s_config.ConfigChangeNotification]:
        names = self.get_children(s_config.CONFIG_CHANGES_PATH)
        out = {}
        for name, got in zip(names, self._get_many([s_config.config_change_path(n)
                                                    for n in names])):
            if got is not None:
                with contextlib.suppress(zk_schema.SchemaError):
                    out[name] = s_config.ConfigChangeNotification.decode(got[0], got[1].version)
        return out

    # --------------------------------------------------------------------------- producer ids

    def claim_producer_id_block(self, broker_id: int,
                                size: int = s_pids.PRODUCER_ID_BLOCK_SIZE) -> s_pids.ProducerIdBlock:
        """Claim the next block of producer ids (conditional update; retried on races)."""
        path = s_pids.LATEST_PRODUCER_ID_BLOCK_PATH
        while True:
            got = self.get_data(path)
            if got is None:
                with contextlib.suppress(ZkNodeExistsError):
                    self.create(path, b"", makepath=True)
                continue
            data, version = got
            block = (s_pids.ProducerIdBlock.decode(data).next(broker_id, size) if data
                     else s_pids.ProducerIdBlock.first(broker_id, size))
            try:
                new_version = self.set_data(path, block.encode(), version)
            except ZkBadVersionError:
                continue
            return s_pids.ProducerIdBlock(block.broker, block.block_start, block.block_end,
                                          new_version)
