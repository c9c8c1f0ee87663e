"""The Metadata, ListOffsets, OffsetForLeaderEpoch and InitProducerId converters
(protocol/kafka/convert/metadata.py), alone: every version the API table advertises reads
requests into the model and writes the model's answers that kio encodes and a client decodes."""

from __future__ import annotations

import pytest

from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka.convert import metadata as convert
from kafkalite.protocol.kafka.entities import topic_uuid

from kafka_wire import (advertised_versions as _versions, request_entity as _request,
                        response_round_trip as _round_trip)

NOT_REQUESTED = -(1 << 31)
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"        # base64url of UUID int 1


# --- Metadata --------------------------------------------------------------------------------

METADATA_RESPONSE = m.MetadataResponse(
    brokers=[m.MetadataBroker(1, "10.0.0.1", 9092, "rack-a")], cluster_id="c1",
    controller_id=1, cluster_authorized_operations=8096,
    topics=[m.MetadataTopic(0, "orders", [m.MetadataPartition(0, 0, 1, 4, [1, 2], [1], [2])],
                            TOPIC_ID, False, 1234),
            m.MetadataTopic(0, "__consumer_offsets", [], None, True),
            m.MetadataTopic(29, "secret", [])])


def _metadata_body(version: int, topics) -> dict:
    body = {"topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": False, "include_cluster_authorized_operations": True,
            "include_topic_authorized_operations": True}
    if version >= 10 and topics is not None:
        body["topics"] = [{"name": t, "topic_id": None} for t in topics]
    return body


@pytest.mark.parametrize("version", _versions(ApiKey.METADATA))
def test_metadata_response_round_trips(version):
    answer = _round_trip(3, version, convert.METADATA.response(METADATA_RESPONSE, version))
    assert [(b.node_id, b.host, b.port) for b in answer.brokers] == [(1, "10.0.0.1", 9092)]
    assert [(t.name, t.error_code) for t in answer.topics] == [
        ("orders", 0), ("__consumer_offsets", 0), ("secret", 29)]
    orders = answer.topics[0]
    [p] = orders.partitions
    assert (p.partition_index, p.leader_id, list(p.replica_nodes), list(p.isr_nodes)) == (
        0, 1, [1, 2], [1])
    if version >= 1:
        assert [t.is_internal for t in answer.topics] == [False, True, False]
        assert answer.controller_id == 1
    if version >= 5:
        assert list(p.offline_replicas) == [2]
    if version >= 7:
        assert p.leader_epoch == 4
    if version >= 8:
        assert [t.topic_authorized_operations for t in answer.topics] == [
            1234, NOT_REQUESTED, NOT_REQUESTED]
    if 8 <= version <= 10:
        assert answer.cluster_authorized_operations == 8096
    if version >= 10:
        assert orders.topic_id == topic_uuid(TOPIC_ID)


@pytest.mark.parametrize("version", _versions(ApiKey.METADATA))
def test_metadata_request_reads_topics_and_flags(version):
    request = convert.METADATA.request(_request(3, version, _metadata_body(version, ["a", "b"])),
                                       version)
    assert request.topics == ["a", "b"]
    assert request.allow_auto_topic_creation is (version < 4)    # v0-v3 always auto-create
    assert request.include_topic_authorized_operations is (version >= 8)
    assert request.include_cluster_authorized_operations is (8 <= version <= 10)


@pytest.mark.parametrize("version", _versions(ApiKey.METADATA))
def test_metadata_request_for_every_topic(version):
    # v0 has no null array: its empty list means every topic; later ones say null, and their
    # empty list means none (a broker-list request)
    if version == 0:
        assert convert.METADATA.request(_request(3, 0, {"topics": []}), 0).topics is None
        return
    assert convert.METADATA.request(_request(3, version, _metadata_body(version, None)),
                                    version).topics is None
    assert convert.METADATA.request(_request(3, version, _metadata_body(version, [])),
                                    version).topics == []


# --- ListOffsets ------------------------------------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.LIST_OFFSETS))
def test_list_offsets_round_trips_and_is_a_consumers(version):
    body = {"replica_id": 3, "isolation_level": 1, "topics": [{"name": "t", "partitions": [
        {"partition_index": 2, "timestamp": -1, "current_leader_epoch": 5}]}]}
    request = convert.LIST_OFFSETS.request(_request(2, version, body), version)
    assert request.replica_id == m.CONSUMER_REPLICA_ID
    assert request.isolation_level == (1 if version >= 2 else 0)
    assert request.topics == [m.ListOffsetsTopic("t", [
        m.ListOffsetsPartition(2, -1, 5 if version >= 4 else -1)])]
    response = m.ListOffsetsResponse(topics=[m.ListOffsetsTopicResponse("t", [
        m.ListOffsetsPartitionResponse(2, 0, 1000, 42, 5),
        m.ListOffsetsPartitionResponse(3, 29)])])
    answer = _round_trip(2, version, convert.LIST_OFFSETS.response(response, version))
    [topic] = answer.topics
    ok, refused = topic.partitions
    assert (topic.name, ok.partition_index, ok.error_code, ok.timestamp, ok.offset) == (
        "t", 2, 0, 1000, 42)
    assert (refused.partition_index, refused.error_code, refused.offset) == (3, 29, -1)
    if version >= 4:
        assert ok.leader_epoch == 5


# --- OffsetForLeaderEpoch ---------------------------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.OFFSET_FOR_LEADER_EPOCH))
def test_offset_for_leader_epoch_round_trips_and_is_a_consumers(version):
    body = {"replica_id": 2, "topics": [{"topic": "t", "partitions": [
        {"partition": 0, "current_leader_epoch": 3, "leader_epoch": 2}]}]}
    request = convert.OFFSET_FOR_LEADER_EPOCH.request(_request(23, version, body), version)
    assert request.replica_id == m.CONSUMER_REPLICA_ID
    assert request.topics == [m.OffsetForLeaderEpochTopic("t", [
        m.OffsetForLeaderEpochPartition(0, 3, 2)])]
    response = m.OffsetForLeaderEpochResponse(topics=[m.OffsetForLeaderEpochTopicResponse("t", [
        m.OffsetForLeaderEpochPartitionResponse(0, 0, 2, 17)])])
    answer = _round_trip(23, version, convert.OFFSET_FOR_LEADER_EPOCH.response(response, version))
    [p] = answer.topics[0].partitions
    assert (answer.topics[0].topic, p.partition, p.error_code, p.leader_epoch, p.end_offset) == (
        "t", 0, 0, 2, 17)


# --- InitProducerId ---------------------------------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.INIT_PRODUCER_ID))
def test_init_producer_id_round_trips(version):
    body = {"transactional_id": None, "transaction_timeout": 30000, "producer_id": 5,
            "producer_epoch": 2}
    request = convert.INIT_PRODUCER_ID.request(_request(22, version, body), version)
    assert (request.transactional_id, request.transaction_timeout_ms) == (None, 30000)
    assert (request.producer_id, request.producer_epoch) == ((5, 2) if version >= 3 else (-1, -1))
    answer = _round_trip(22, version, convert.INIT_PRODUCER_ID.response(
        m.InitProducerIdResponse(producer_id=4000, producer_epoch=0), version))
    assert (answer.error_code, answer.producer_id, answer.producer_epoch) == (0, 4000, 0)


def test_init_producer_id_keeps_the_transactional_id():
    body = {"transactional_id": "tx", "transaction_timeout": 1000}
    assert convert.INIT_PRODUCER_ID.request(_request(22, 1, body), 1).transactional_id == "tx"
