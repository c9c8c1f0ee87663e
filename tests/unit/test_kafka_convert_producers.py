"""The DescribeProducers converter (protocol/kafka/convert/producers.py), alone: the version the
API table advertises (Kafka 2.8's v0) reads a request into the model and writes the model's
answer, which kio encodes and a client decodes, field for field."""

from __future__ import annotations

import pytest

from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka.convert import producers as convert

from kafka_wire import advertised_versions as _versions
from kafka_wire import request_entity, response_round_trip


def test_describe_producers_is_advertised_as_kafka_28():
    assert _versions(ApiKey.DESCRIBE_PRODUCERS) == [0]


@pytest.mark.parametrize("version", _versions(ApiKey.DESCRIBE_PRODUCERS))
def test_request(version):
    entity = request_entity(61, version, {"topics": [
        {"name": "a", "partition_indexes": [0, 2, 0]}, {"name": "b", "partition_indexes": []}]})
    assert convert.DESCRIBE_PRODUCERS.request(entity, version) == m.DescribeProducersRequest(
        topics=[m.DescribeProducersTopic("a", [0, 2, 0]), m.DescribeProducersTopic("b", [])])


ANSWER = m.DescribeProducersResponse(throttle_time_ms=4, topics=[
    m.DescribeProducersTopicResponse("a", [
        m.DescribeProducersPartitionResponse(0, 0, None, [
            m.ProducerState(1000, 3, 41, 1_700_000_000_123, 7, 55),
            m.ProducerState(1001, 0, -1, -1, -1, -1)]),
        m.DescribeProducersPartitionResponse(2, 6)]),
    m.DescribeProducersTopicResponse("b", [
        m.DescribeProducersPartitionResponse(0, 29, "denied", [])])])


@pytest.mark.parametrize("version", _versions(ApiKey.DESCRIBE_PRODUCERS))
def test_response(version):
    answer = response_round_trip(61, version, convert.DESCRIBE_PRODUCERS.response(ANSWER,
                                                                                  version))
    assert answer.throttle_time.total_seconds() * 1000 == 4
    assert [(t.name, [(p.partition_index, int(p.error_code), p.error_message, [
        (s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp,
         s.coordinator_epoch, s.current_txn_start_offset) for s in p.active_producers])
        for p in t.partitions]) for t in answer.topics] == [
        ("a", [(0, 0, None, [(1000, 3, 41, 1_700_000_000_123, 7, 55),
                             (1001, 0, -1, -1, -1, -1)]),
               (2, 6, None, [])]),
        ("b", [(0, 29, "denied", [])])]


def test_error_response_has_the_code_in_every_partition_and_no_message():
    request = m.DescribeProducersRequest(topics=[m.DescribeProducersTopic("a", [1, 0]),
                                                 m.DescribeProducersTopic("b", [])])
    assert request.error_response(58, "boom") == m.DescribeProducersResponse(topics=[
        m.DescribeProducersTopicResponse("a", [m.DescribeProducersPartitionResponse(1, 58),
                                               m.DescribeProducersPartitionResponse(0, 58)]),
        m.DescribeProducersTopicResponse("b", [])])
