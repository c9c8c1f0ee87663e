"""The small value types the clients hand to users (names and fields follow kafka-python).

All are ``NamedTuple``s: cheap to build, immutable, hashable, and they unpack like tuples.
``TopicPartition`` (kafkalite.topic_partition: one type for the whole package) compares equal
to any ``(topic, partition)`` tuple, so plain tuples work as keys too.
"""

from __future__ import annotations

from typing import NamedTuple

from kafkalite.topic_partition import TopicPartition  # noqa: F401 - the one type, re-exported


class ConsumerRecord(NamedTuple):
    """One record as a consumer returns it.

    ``timestamp_type`` is 0 for CreateTime (the producer's clock) and 1 for LogAppendTime (the
    broker's clock). ``key``/``value`` are what the deserializers returned (bytes or None
    without them); ``headers`` is a tuple of ``(str, bytes | None)`` pairs.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: object
    value: object
    headers: tuple = ()


class RecordMetadata(NamedTuple):
    """Where a produced record was written. ``offset`` is -1 with acks=0 (nobody told us)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    log_start_offset: int = -1
    serialized_key_size: int = -1
    serialized_value_size: int = -1

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


class OffsetAndMetadata(NamedTuple):
    """A committed position: the offset of the NEXT record to read, plus free-form metadata."""

    offset: int
    metadata: str = ""


class ConsumerGroupMetadata(NamedTuple):
    """A consumer's group membership (``Consumer.group_metadata()``), for a transactional
    producer's ``send_offsets_to_transaction`` (KIP-447: the group coordinator refuses offsets
    from a generation that is over)."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


class OffsetAndTimestamp(NamedTuple):
    """``offsets_for_times`` answer: the earliest offset whose timestamp is >= the asked one."""

    offset: int
    timestamp: int


class BrokerMetadata(NamedTuple):
    node_id: int
    host: str
    port: int
    rack: str | None = None


class PartitionMetadata(NamedTuple):
    """One partition as the cluster metadata describes it (leader -1 = none right now)."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    error_code: int = 0


class NewTopic(NamedTuple):
    """A topic for ``AdminClient.create_topics``.

    Either ``num_partitions``/``replication_factor`` (-1 = the broker's defaults, num.partitions and
    default.replication.factor) or ``replica_assignments`` ``{partition: [broker ids]}``.
    ``topic_configs`` are topic-level overrides such as ``{"retention.ms": "60000"}``.
    """

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignments: dict[int, list[int]] | None = None
    topic_configs: dict[str, str] | None = None


class NewPartitions(NamedTuple):
    """Partitions to add to a topic, for ``AdminClient.create_partitions`` (kafka-python's name).

    ``total_count`` is the topic's new number of partitions (more than it has). ``new_assignments``
    optionally gives one broker-id list per ADDED partition, in partition order (the first
    broker is that partition's preferred leader); None lets the brokers spread them.
    """

    total_count: int
    new_assignments: list[list[int]] | None = None


class PartitionDescription(NamedTuple):
    partition: int
    leader: int                       # -1 when no leader is elected
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int]
    leader_epoch: int = -1
    error_code: int = 0


class TopicDescription(NamedTuple):
    name: str
    partitions: list[PartitionDescription]
    error_code: int = 0
    topic_id: str | None = None       # base64url, as in ZooKeeper; None when the broker has none


class ClusterDescription(NamedTuple):
    cluster_id: str | None
    controller_id: int
    brokers: list[BrokerMetadata]


__all__ = [
    "TopicPartition", "ConsumerRecord", "RecordMetadata", "OffsetAndMetadata",
    "OffsetAndTimestamp", "BrokerMetadata", "PartitionMetadata", "NewTopic",
    "PartitionDescription", "TopicDescription", "ClusterDescription",
]
