"""Metadata, ListOffsets, OffsetForLeaderEpoch and InitProducerId between Kafka's protocol and
the model.

Kafka-protocol connections belong to clients: brokers replicate over the native protocol, so a
Kafka-protocol ListOffsets or OffsetForLeaderEpoch is served as a consumer's (replica id -1),
whatever replica id it carries.
"""

from __future__ import annotations

from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka.convert import Converter
from kafkalite.protocol.kafka.convert.transactions import fenced_code
from kafkalite.protocol.kafka.entities import millis

__all__ = ["METADATA", "LIST_OFFSETS", "OFFSET_FOR_LEADER_EPOCH", "INIT_PRODUCER_ID"]


# --- Metadata ------------------------------------------------------------------------------------

def _metadata_request(entity, version: int) -> m.MetadataRequest:
    topics = entity.topics
    if topics is None or (version == 0 and not topics):     # v0: an empty list means every topic
        names = None
    else:
        names = [t.name for t in topics if t.name is not None]
    return m.MetadataRequest(
        topics=names,
        allow_auto_topic_creation=getattr(entity, "allow_auto_topic_creation", True),
        # KIP-430: the cluster's operations only v8-v10 can ask for, the topics' v8+
        include_cluster_authorized_operations=getattr(
            entity, "include_cluster_authorized_operations", False),
        include_topic_authorized_operations=getattr(
            entity, "include_topic_authorized_operations", False))


def _metadata_response(r: m.MetadataResponse, version: int) -> dict:
    return {
        "throttle_time": r.throttle_time_ms,
        "brokers": [{"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                    for b in r.brokers],
        "cluster_id": r.cluster_id,
        "controller_id": r.controller_id,
        "cluster_authorized_operations": r.cluster_authorized_operations,
        "topics": [{
            "error_code": t.error_code, "name": t.name, "topic_id": t.topic_id,
            "is_internal": t.is_internal,
            "topic_authorized_operations": t.topic_authorized_operations,
            "partitions": [{
                "error_code": p.error_code, "partition_index": p.partition,
                "leader_id": p.leader, "leader_epoch": p.leader_epoch,
                "replica_nodes": p.replicas, "isr_nodes": p.isr,
                "offline_replicas": p.offline_replicas} for p in t.partitions],
        } for t in r.topics],
    }


METADATA = Converter(_metadata_request, _metadata_response)


# --- ListOffsets ---------------------------------------------------------------------------------

def _list_offsets_request(entity, version: int) -> m.ListOffsetsRequest:
    return m.ListOffsetsRequest(
        replica_id=m.CONSUMER_REPLICA_ID,
        isolation_level=getattr(entity, "isolation_level", m.READ_UNCOMMITTED),
        topics=[m.ListOffsetsTopic(t.name, [
            m.ListOffsetsPartition(p.partition_index, p.timestamp,
                                   getattr(p, "current_leader_epoch", -1))
            for p in t.partitions]) for t in entity.topics])


def _list_offsets_response(r: m.ListOffsetsResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "topics": [{
        "name": t.topic,
        "partitions": [{"partition_index": p.partition, "error_code": p.error_code,
                        "timestamp": p.timestamp, "offset": p.offset,
                        "leader_epoch": p.leader_epoch} for p in t.partitions],
    } for t in r.topics]}


LIST_OFFSETS = Converter(_list_offsets_request, _list_offsets_response)


# --- OffsetForLeaderEpoch ------------------------------------------------------------------------

def _offset_for_leader_epoch_request(entity, version: int) -> m.OffsetForLeaderEpochRequest:
    return m.OffsetForLeaderEpochRequest(
        replica_id=m.CONSUMER_REPLICA_ID,
        topics=[m.OffsetForLeaderEpochTopic(t.topic, [
            m.OffsetForLeaderEpochPartition(p.partition, getattr(p, "current_leader_epoch", -1),
                                            p.leader_epoch)
            for p in t.partitions]) for t in entity.topics])


def _offset_for_leader_epoch_response(r: m.OffsetForLeaderEpochResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "topics": [{
        "topic": t.topic,
        "partitions": [{"partition": p.partition, "error_code": p.error_code,
                        "leader_epoch": p.leader_epoch, "end_offset": p.end_offset}
                       for p in t.partitions],
    } for t in r.topics]}


OFFSET_FOR_LEADER_EPOCH = Converter(_offset_for_leader_epoch_request,
                                    _offset_for_leader_epoch_response)


# --- InitProducerId ------------------------------------------------------------------------------

INIT_PRODUCER_ID = Converter(
    lambda entity, version: m.InitProducerIdRequest(
        transactional_id=entity.transactional_id,
        transaction_timeout_ms=millis(entity.transaction_timeout),
        producer_id=getattr(entity, "producer_id", -1),
        producer_epoch=getattr(entity, "producer_epoch", -1)),
    # PRODUCER_FENCED is new in v4: older clients are answered INVALID_PRODUCER_EPOCH (KafkaApis)
    lambda r, version: {"throttle_time": r.throttle_time_ms,
                        "error_code": fenced_code(r.error_code, version, 4),
                        "producer_id": r.producer_id, "producer_epoch": r.producer_epoch})
