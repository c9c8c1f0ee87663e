"""DescribeProducers (KIP-664): the producers a partition's replica on this broker knows, read
from its producer state table (``server.producer_state``), as Kafka 2.8's
``KafkaApis.handleDescribeProducersRequest`` and ``ReplicaManager.activeProducerState``.

Per topic: Read on it (else TOPIC_AUTHORIZATION_FAILED in each of its partitions), and a topic
the metadata cache does not know is UNKNOWN_TOPIC_OR_PARTITION. Per partition, Kafka's
getPartitionOrError: a hosted replica answers, leader or follower alike (Kafka 2.8 reads any
local log, so a tool may ask a follower what it replicated); a partition in a failed log dir is
KAFKA_STORAGE_ERROR; one the metadata knows but this broker does not host is
NOT_LEADER_OR_FOLLOWER; any other (a partition the topic lacks) UNKNOWN_TOPIC_OR_PARTITION.
The answer keeps the request's order, a topic or partition named twice answered twice.
"""

from __future__ import annotations

from kafkalite.errors import (TopicAuthorizationFailedError, UnknownTopicOrPartitionError,
                              code_of)
from kafkalite.jvm_hashing import scala_hash_map_order
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ResourceType

__all__ = ["handle_describe_producers", "active_producers"]

_TOPIC_DENIED = TopicAuthorizationFailedError.code
_UNKNOWN = UnknownTopicOrPartitionError.code


def _long_hash(value: int) -> int:
    """Scala's ``##`` of a Long (Statics.longHash): the Int itself when it fits, else Java's
    Long.hashCode."""
    if -(1 << 31) <= value < (1 << 31):
        return value
    u = value & 0xFFFFFFFFFFFFFFFF
    h = (u ^ (u >> 32)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def active_producers(table) -> list[m.ProducerState]:
    """A producer state table's producers (Kafka's Log.activeProducers): the last cached
    batch's sequence, the last write's or marker's timestamp, the coordinator epoch of the last
    marker, the open transaction's first offset (-1 for none). In the order of Kafka's
    ``mutable.Map`` of producers (its ``toMap`` keeps it up to 4 entries; beyond, Scala's
    immutable HashMap has an order of its own, not copied)."""
    producers = table.producers
    return [m.ProducerState(
        producer_id, entry.epoch, entry.last_sequence, entry.last_timestamp,
        entry.coordinator_epoch,
        -1 if entry.current_txn_first_offset is None else entry.current_txn_first_offset)
        for producer_id in scala_hash_map_order(producers, _long_hash)
        for entry in (producers[producer_id],)]


def _partition_state(replica_manager, topic: str, partition: int
                     ) -> m.DescribeProducersPartitionResponse:
    hosted = replica_manager.partitions.get((topic, partition))
    if hosted is None:
        return m.DescribeProducersPartitionResponse(
            partition, code_of(replica_manager.not_hosted_error(topic, partition)))
    return m.DescribeProducersPartitionResponse(partition, 0, None,
                                                active_producers(hosted.producer_states))


def handle_describe_producers(broker, ctx, request: m.DescribeProducersRequest
                              ) -> m.DescribeProducersResponse:
    allowed, _ = ctx.authz.split(ApiKey.DESCRIBE_PRODUCERS, ResourceType.TOPIC,
                                 (t.name for t in request.topics))
    topics = []
    for t in request.topics:
        if t.name not in allowed:
            code = _TOPIC_DENIED
        elif not broker.metadata_cache.contains(t.name):
            code = _UNKNOWN
        else:
            code = None
        topics.append(m.DescribeProducersTopicResponse(t.name, [
            _partition_state(broker.replica_manager, t.name, p) if code is None
            else m.DescribeProducersPartitionResponse(p, code)
            for p in t.partition_indexes]))
    return m.DescribeProducersResponse(topics=topics)
