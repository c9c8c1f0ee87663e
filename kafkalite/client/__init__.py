"""Blocking clients for users (names follow kafka-python): Producer, Consumer, AdminClient.

Plain sockets and threads, no Twisted: user code stays blocking. See ``producer``, ``consumer``
and ``admin`` for the behaviour; ``connection`` and ``cluster`` for the plumbing they share.
"""

from kafkalite.client.admin import AdminClient
from kafkalite.client.cluster import ClusterMetadata, StaticBootstrap
from kafkalite.client.connection import BrokerConnection
from kafkalite.client.consumer import Consumer
from kafkalite.client.future import FutureRecordMetadata
from kafkalite.client.producer import Producer
from kafkalite.client.structs import (
    BrokerMetadata,
    ClusterDescription,
    ConsumerGroupMetadata,
    ConsumerRecord,
    NewPartitions,
    NewTopic,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    PartitionDescription,
    RecordMetadata,
    TopicDescription,
    TopicPartition,
)

__all__ = [
    "Producer", "Consumer", "AdminClient", "TopicPartition", "ConsumerRecord", "RecordMetadata",
    "OffsetAndMetadata", "NewTopic", "NewPartitions", "OffsetAndTimestamp", "FutureRecordMetadata",
    "BrokerMetadata", "ClusterDescription", "TopicDescription", "PartitionDescription",
    "BrokerConnection", "ClusterMetadata", "StaticBootstrap", "ConsumerGroupMetadata",
]
