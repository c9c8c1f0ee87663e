"""The CreateTopics, DeleteTopics, CreatePartitions and DeleteRecords converters
(protocol/kafka/convert/admin.py), alone: every version the API table advertises reads requests
into the model and writes the model's answers that kio encodes and a client decodes."""

from __future__ import annotations

import uuid

import pytest

from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka.convert import admin as convert
from kafkalite.protocol.kafka.entities import topic_uuid

from kafka_wire import (advertised_versions as _versions, request_entity as _request,
                        response_round_trip as _round_trip)

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"        # base64url of UUID int 1


def test_topic_ids_read_as_kafkalite_keeps_them():
    assert convert.topic_id_text(uuid.UUID(int=1)) == TOPIC_ID
    assert topic_uuid(convert.topic_id_text(uuid.UUID(int=12345))) == uuid.UUID(int=12345)
    assert convert.topic_id_text(uuid.UUID(int=0)) is None
    assert convert.topic_id_text(None) is None


# --- CreateTopics ----------------------------------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.CREATE_TOPICS))
def test_create_topics_request(version):
    entity = _request(19, version, {"topics": [
        {"name": "a", "num_partitions": 3, "replication_factor": 2, "assignments": [],
         "configs": [{"name": "retention.ms", "value": "1000"},
                     {"name": "segment.ms", "value": None}]},
        {"name": "b", "num_partitions": -1, "replication_factor": -1,
         "assignments": [{"partition_index": 0, "broker_ids": [1, 2]},
                         {"partition_index": 1, "broker_ids": [2, 1]}], "configs": []}],
        "timeout": 1500, "validate_only": True})
    request = convert.CREATE_TOPICS.request(entity, version)
    assert request == m.CreateTopicsRequest(topics=[
        m.CreatableTopic("a", 3, 2, {}, {"retention.ms": "1000", "segment.ms": None}),
        m.CreatableTopic("b", -1, -1, {0: [1, 2], 1: [2, 1]}, {})],
        timeout_ms=1500, validate_only=True)


CREATED = m.CreateTopicsResponse(topics=[
    m.CreatableTopicResult("a", 0, None, 3, 2, [
        m.CreatableTopicConfig("retention.ms", "1000", False, 1, False),
        m.CreatableTopicConfig("sasl.secret", None, False, 5, True)]),
    m.CreatableTopicResult("b", 29, "Authorization failed.", topic_config_error_code=29),
    m.CreatableTopicResult("c", 41, "")])


@pytest.mark.parametrize("version", _versions(ApiKey.CREATE_TOPICS))
def test_create_topics_response(version):
    answer = _round_trip(19, version, convert.CREATE_TOPICS.response(CREATED, version))
    assert [(t.name, t.error_code, t.error_message) for t in answer.topics] == [
        ("a", 0, None), ("b", 29, "Authorization failed."), ("c", 41, "")]
    if version >= 5:          # KIP-525
        a, b, _ = answer.topics
        assert (a.num_partitions, a.replication_factor, a.topic_config_error_code) == (3, 2, 0)
        assert [(c.name, c.value, c.read_only, c.config_source, c.is_sensitive)
                for c in a.configs] == [("retention.ms", "1000", False, 1, False),
                                        ("sasl.secret", None, False, 5, True)]
        assert (b.num_partitions, b.replication_factor, list(b.configs),
                b.topic_config_error_code) == (-1, -1, [], 29)
    if version >= 7:
        assert answer.topics[0].topic_id in (None, uuid.UUID(int=0))    # the zero id: none


# --- DeleteTopics ----------------------------------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.DELETE_TOPICS))
def test_delete_topics_request(version):
    if version >= 6:
        body = {"topics": [{"name": "a", "topic_id": None},
                           {"name": None, "topic_id": uuid.UUID(int=1)},
                           {"name": "b", "topic_id": None}], "timeout": 2500}
    else:
        body = {"topic_names": ["a", "b"], "timeout": 2500}
    request = convert.DELETE_TOPICS.request(_request(20, version, body), version)
    assert request.topic_names == ["a", "b"] and request.timeout_ms == 2500
    assert request.topic_ids == ([TOPIC_ID] if version >= 6 else [])


@pytest.mark.parametrize("version", _versions(ApiKey.DELETE_TOPICS))
def test_delete_topics_response(version):
    response = m.DeleteTopicsResponse(responses=[
        m.DeletableTopicResult("a", 0), m.DeletableTopicResult("b", 3, "topic 'b' does not exist")]
        + ([m.DeletableTopicResult(None, 29, None, TOPIC_ID)] if version >= 6 else []))
    answer = _round_trip(20, version, convert.DELETE_TOPICS.response(response, version))
    got = [(r.name, r.error_code) for r in answer.responses]
    assert got[:2] == [("a", 0), ("b", 3)]
    if version >= 5:
        assert answer.responses[1].error_message == "topic 'b' does not exist"
    if version >= 6:
        assert got[2] == (None, 29) and answer.responses[2].topic_id == uuid.UUID(int=1)
        assert answer.responses[0].topic_id in (None, uuid.UUID(int=0))   # asked by name


# --- CreatePartitions ------------------------------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.CREATE_PARTITIONS))
def test_create_partitions_request(version):
    entity = _request(37, version, {"topics": [
        {"name": "a", "count": 4, "assignments": None},
        {"name": "b", "count": 3, "assignments": [{"broker_ids": [1, 2]}]}],
        "timeout": 900, "validate_only": False})
    assert convert.CREATE_PARTITIONS.request(entity, version) == m.CreatePartitionsRequest(
        topics=[m.CreatePartitionsTopic("a", 4, None),
                m.CreatePartitionsTopic("b", 3, [[1, 2]])], timeout_ms=900)


@pytest.mark.parametrize("version", _versions(ApiKey.CREATE_PARTITIONS))
def test_create_partitions_response(version):
    response = m.CreatePartitionsResponse(results=[
        m.CreatePartitionsTopicResult("a", 0),
        m.CreatePartitionsTopicResult("b", 42, "Duplicate topic in request.")])
    answer = _round_trip(37, version, convert.CREATE_PARTITIONS.response(response, version))
    assert [(r.name, r.error_code, r.error_message) for r in answer.results] == [
        ("a", 0, None), ("b", 42, "Duplicate topic in request.")]


# --- DeleteRecords ---------------------------------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.DELETE_RECORDS))
def test_delete_records_request(version):
    entity = _request(21, version, {"topics": [{"name": "a", "partitions": [
        {"partition_index": 0, "offset": 5}, {"partition_index": 1, "offset": -1}]}],
        "timeout": 3000})
    assert convert.DELETE_RECORDS.request(entity, version) == m.DeleteRecordsRequest(
        topics=[m.DeleteRecordsTopic("a", [m.DeleteRecordsPartition(0, 5),
                                           m.DeleteRecordsPartition(1, -1)])],
        timeout_ms=3000)


@pytest.mark.parametrize("version", _versions(ApiKey.DELETE_RECORDS))
def test_delete_records_response(version):
    response = m.DeleteRecordsResponse(topics=[m.DeleteRecordsTopicResult("a", [
        m.DeleteRecordsPartitionResult(0, 5, 0), m.DeleteRecordsPartitionResult(1, -1, 29)])])
    answer = _round_trip(21, version, convert.DELETE_RECORDS.response(response, version))
    assert [(t.name, [(p.partition_index, p.low_watermark, p.error_code) for p in t.partitions])
            for t in answer.topics] == [("a", [(0, 5, 0), (1, -1, 29)])]
