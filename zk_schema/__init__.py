"""The znode tree kafkalite shares with Kafka's ZooKeeper era: paths and payloads, nothing else.

One module per znode family; each has path builders, a frozen payload dataclass with ``encode()``
and ``decode(data, zk_version=None)`` (the znode's version is kept in ``zk_version``), and raises
:class:`SchemaError` on bytes that are not the promised payload. Imports neither kazoo nor kafkalite.
Paths are absolute within the cluster's chroot; the chroot lives in the connect string.
"""

from __future__ import annotations

from zk_schema._codec import SchemaError
from zk_schema import (admin, brokers, cluster, config, consumers, controller, features, isr,
                       log_dir_events, producer_ids, topics)
from zk_schema.admin import (
    ADMIN_PATH, DELETE_TOPICS_PATH, PREFERRED_REPLICA_ELECTION_PATH, REASSIGN_PARTITIONS_PATH,
    PartitionReassignment, PreferredReplicaElection, delete_topic_path,
)
from zk_schema.brokers import (
    BROKER_IDS_PATH, BROKER_SEQID_PATH, BROKERS_PATH, BrokerRegistration, broker_path,
    parse_broker_id,
)
from zk_schema.cluster import CLUSTER_ID_PATH, ClusterId, new_cluster_id
from zk_schema.config import (
    CONFIG_CHANGES_PATH, CONFIG_PATH, ConfigChangeNotification, EntityConfig, TopicConfig,
    config_entity_type_path, topic_config_path,
)
from zk_schema.consumers import (
    CONSUMERS_PATH, ConsumerOffset, ConsumerRegistration, PartitionOwner, member_path, offset_path,
    owner_path,
)
from zk_schema.controller import (
    CONTROLLER_EPOCH_PATH, CONTROLLER_PATH, INITIAL_CONTROLLER_EPOCH, ControllerEpoch,
    ControllerRegistration,
)
from zk_schema.features import FEATURE_PATH, FeatureZNode
from zk_schema.isr import ISR_CHANGE_NOTIFICATION_PATH, IsrChangeNotification
from zk_schema.log_dir_events import LOG_DIR_EVENT_NOTIFICATION_PATH, LogDirEventNotification
from zk_schema.producer_ids import LATEST_PRODUCER_ID_BLOCK_PATH, ProducerIdBlock
from zk_schema.topics import (
    TOPICS_PATH, PartitionState, TopicAssignment, partition_state_path, topic_path,
    validate_topic_name,
)

#: Persistent znodes a broker makes sure exist when it starts (Kafka's ZkData.PersistentZkPaths).
PERSISTENT_PATHS: tuple[str, ...] = (
    CONSUMERS_PATH,
    BROKER_IDS_PATH,
    TOPICS_PATH,
    CONFIG_CHANGES_PATH,
    DELETE_TOPICS_PATH,
    BROKER_SEQID_PATH,
    ISR_CHANGE_NOTIFICATION_PATH,
    LATEST_PRODUCER_ID_BLOCK_PATH,
    LOG_DIR_EVENT_NOTIFICATION_PATH,
) + tuple(config_entity_type_path(t) for t in config.ENTITY_TYPES)

__all__ = [
    "SchemaError", "PERSISTENT_PATHS",
    "admin", "brokers", "cluster", "config", "consumers", "controller", "features", "isr",
    "producer_ids", "topics", "FEATURE_PATH", "FeatureZNode",
    "ADMIN_PATH", "DELETE_TOPICS_PATH", "PREFERRED_REPLICA_ELECTION_PATH",
    "REASSIGN_PARTITIONS_PATH", "PartitionReassignment", "PreferredReplicaElection",
    "delete_topic_path",
    "BROKER_IDS_PATH", "BROKER_SEQID_PATH", "BROKERS_PATH", "BrokerRegistration", "broker_path",
    "parse_broker_id",
    "CLUSTER_ID_PATH", "ClusterId", "new_cluster_id",
    "CONFIG_CHANGES_PATH", "CONFIG_PATH", "ConfigChangeNotification", "EntityConfig", "TopicConfig",
    "config_entity_type_path", "topic_config_path",
    "CONSUMERS_PATH", "ConsumerOffset", "ConsumerRegistration", "PartitionOwner", "member_path",
    "offset_path", "owner_path",
    "CONTROLLER_EPOCH_PATH", "CONTROLLER_PATH", "INITIAL_CONTROLLER_EPOCH", "ControllerEpoch",
    "ControllerRegistration",
    "ISR_CHANGE_NOTIFICATION_PATH", "IsrChangeNotification",
    "LOG_DIR_EVENT_NOTIFICATION_PATH", "LogDirEventNotification", "log_dir_events",
    "LATEST_PRODUCER_ID_BLOCK_PATH", "ProducerIdBlock",
    "TOPICS_PATH", "PartitionState", "TopicAssignment", "partition_state_path", "topic_path",
    "validate_topic_name",
]
