"""ListOffsets and OffsetForLeaderEpoch: where a partition's log starts and ends, finds a
timestamp, or ended an epoch, answered by its leader (Kafka 2.8's handleListOffsetRequest and
handleOffsetForLeaderEpochRequest).

Authorization is decided here, per topic, and never changes the request: the allowed topics go to
the ReplicaManager as plain values (``server.offset_values``), each refused one answers
TOPIC_AUTHORIZATION_FAILED in every partition, after the served ones (Kafka's order).

Kafka-protocol requests arrive as a consumer's (replica id -1, ``convert.metadata``): brokers ask
these over the native protocol.
"""

from __future__ import annotations

from collections import Counter

from kafkalite.errors import InvalidRequestError, TopicAuthorizationFailedError
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ResourceType
from kafkalite.server.offset_values import EpochQuery, OffsetQuery

__all__ = ["handle_list_offsets", "handle_offset_for_leader_epoch"]

_TOPIC_DENIED = TopicAuthorizationFailedError.code


def handle_list_offsets(broker, ctx, request: m.ListOffsetsRequest) -> m.ListOffsetsResponse:
    """Describe on each topic. A partition named twice answers INVALID_REQUEST in each place
    (Kafka's duplicatePartitions)."""
    allowed, _ = ctx.authz.split(ApiKey.LIST_OFFSETS, ResourceType.TOPIC,
                                 (t.topic for t in request.topics))
    times_named = Counter((t.topic, p.partition) for t in request.topics for p in t.partitions)
    queries = {(t.topic, p.partition): OffsetQuery(p.timestamp, p.current_leader_epoch)
               for t in request.topics if t.topic in allowed
               for p in t.partitions if times_named[t.topic, p.partition] == 1}
    found = broker.replica_manager.list_offsets(request.replica_id, request.isolation_level,
                                                queries)

    def answer(topic: str, partition: int) -> m.ListOffsetsPartitionResponse:
        if times_named[topic, partition] > 1:
            return m.ListOffsetsPartitionResponse(partition, InvalidRequestError.code)
        return m.ListOffsetsPartitionResponse(partition, *found[topic, partition])

    served = [m.ListOffsetsTopicResponse(t.topic, [answer(t.topic, p.partition)
                                                   for p in t.partitions])
              for t in request.topics if t.topic in allowed]
    refused = [m.ListOffsetsTopicResponse(t.topic, [
        m.ListOffsetsPartitionResponse(p.partition, _TOPIC_DENIED) for p in t.partitions])
        for t in request.topics if t.topic not in allowed]
    return m.ListOffsetsResponse(topics=served + refused)


def handle_offset_for_leader_epoch(broker, ctx, request: m.OffsetForLeaderEpochRequest
                                   ) -> m.OffsetForLeaderEpochResponse:
    """Kafka 2.8's rule, whatever the replica id: ClusterAction on the cluster (asked without
    logging: it was an inter-broker API before KIP-320) serves every topic; else each topic needs
    Describe (a consumer checking for truncation)."""
    authz = ctx.authz
    names = {t.topic for t in request.topics}
    if authz.may(ApiKey.OFFSET_FOR_LEADER_EPOCH, ResourceType.CLUSTER, log_denied=False):
        allowed = names
    else:
        allowed, _ = authz.split(ApiKey.OFFSET_FOR_LEADER_EPOCH, ResourceType.TOPIC, names)
    queries = {(t.topic, p.partition): EpochQuery(p.current_leader_epoch, p.leader_epoch)
               for t in request.topics if t.topic in allowed for p in t.partitions}
    ends = broker.replica_manager.offsets_for_leader_epoch(queries)
    served = [m.OffsetForLeaderEpochTopicResponse(t.topic, [
        m.OffsetForLeaderEpochPartitionResponse(p.partition, *ends[t.topic, p.partition])
        for p in t.partitions]) for t in request.topics if t.topic in allowed]
    refused = [m.OffsetForLeaderEpochTopicResponse(t.topic, [
        m.OffsetForLeaderEpochPartitionResponse(p.partition, _TOPIC_DENIED)
        for p in t.partitions]) for t in request.topics if t.topic not in allowed]
    return m.OffsetForLeaderEpochResponse(topics=served + refused)
