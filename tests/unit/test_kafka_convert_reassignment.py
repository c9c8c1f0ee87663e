"""The ElectLeaders, AlterPartitionReassignments and ListPartitionReassignments converters
(protocol/kafka/convert/reassignment.py), alone: every version the API table advertises reads
requests into the model and writes the model's answers that kio encodes and a client decodes."""

from __future__ import annotations

import pytest

from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka import codec
from kafkalite.protocol.kafka.convert import reassignment as convert
from kafkalite.server.api_table import TABLE


def _versions(api_key):
    low, high = TABLE[api_key].kafka_versions
    return list(range(low, high + 1))


def _request(api_key: int, version: int, body: dict):
    """A kio request entity as the broker decodes it off the wire."""
    return codec.decode_request(codec.encode_request(api_key, version, 7, "test", body))[1]


def _round_trip(api_key: int, version: int, values: dict):
    return codec.decode_response(api_key, version,
                                 codec.encode_response(api_key, version, 7, values))[1]


def test_the_table_advertises_kafka_28s_versions():
    assert TABLE[ApiKey.ELECT_LEADERS].kafka_versions == (0, 2)
    assert TABLE[ApiKey.ALTER_PARTITION_REASSIGNMENTS].kafka_versions == (0, 0)
    assert TABLE[ApiKey.LIST_PARTITION_REASSIGNMENTS].kafka_versions == (0, 0)


# --- ElectLeaders ------------------------------------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.ELECT_LEADERS))
def test_elect_leaders_request(version):
    entity = _request(43, version, {"election_type": 1, "timeout": 2500, "topic_partitions": [
        {"topic": "a", "partitions": [0, 2]}, {"topic": "b", "partitions": []}]})
    assert convert.ELECT_LEADERS.request(entity, version) == m.ElectLeadersRequest(
        election_type=1 if version >= 1 else 0,       # v0 has no election type: preferred
        topic_partitions=[m.ElectLeadersTopic("a", [0, 2]), m.ElectLeadersTopic("b", [])],
        timeout_ms=2500)


@pytest.mark.parametrize("version", _versions(ApiKey.ELECT_LEADERS))
def test_elect_leaders_request_of_every_partition(version):
    entity = _request(43, version, {"election_type": 0, "timeout": 100, "topic_partitions": None})
    assert convert.ELECT_LEADERS.request(entity, version).topic_partitions is None


ELECTED = m.ElectLeadersResponse(error_code=31, results=[
    m.ElectLeadersTopicResult("a", [m.ElectLeadersPartitionResult(0, 0, None),
                                    m.ElectLeadersPartitionResult(2, 84, "not needed")]),
    m.ElectLeadersTopicResult("b", [m.ElectLeadersPartitionResult(1, 3, None)])])


@pytest.mark.parametrize("version", _versions(ApiKey.ELECT_LEADERS))
def test_elect_leaders_response(version):
    answer = _round_trip(43, version, convert.ELECT_LEADERS.response(ELECTED, version))
    assert [(r.topic, [(p.partition_id, p.error_code, p.error_message)
                       for p in r.partition_result]) for r in answer.replica_election_results] \
        == [("a", [(0, 0, None), (2, 84, "not needed")]), ("b", [(1, 3, None)])]
    if version >= 1:
        assert answer.error_code == 31


# --- AlterPartitionReassignments ---------------------------------------------------------------

def test_alter_partition_reassignments_request():
    entity = _request(45, 0, {"timeout": 3000, "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "replicas": [3, 1]},
        {"partition_index": 1, "replicas": None}]}]})
    assert convert.ALTER_PARTITION_REASSIGNMENTS.request(entity, 0) == \
        m.AlterPartitionReassignmentsRequest(timeout_ms=3000, topics=[m.ReassignableTopic("t", [
            m.ReassignablePartition(0, [3, 1]), m.ReassignablePartition(1, None)])])


def test_alter_partition_reassignments_response():
    model = m.AlterPartitionReassignmentsResponse(error_code=41, error_message="not here",
                                                  results=[m.ReassignableTopicResult("t", [
                                                      m.ReassignablePartitionResult(0, 0, None),
                                                      m.ReassignablePartitionResult(1, 85, "no")])])
    answer = _round_trip(45, 0, convert.ALTER_PARTITION_REASSIGNMENTS.response(model, 0))
    assert (answer.error_code, answer.error_message) == (41, "not here")
    assert [(t.name, [(p.partition_index, p.error_code, p.error_message) for p in t.partitions])
            for t in answer.responses] == [("t", [(0, 0, None), (1, 85, "no")])]


# --- ListPartitionReassignments ----------------------------------------------------------------

def test_list_partition_reassignments_request():
    entity = _request(46, 0, {"timeout": 1000, "topics": [{"name": "t",
                                                          "partition_indexes": [0, 3]}]})
    assert convert.LIST_PARTITION_REASSIGNMENTS.request(entity, 0) == \
        m.ListPartitionReassignmentsRequest(timeout_ms=1000,
                                            topics=[m.ListReassignmentsTopic("t", [0, 3])])
    entity = _request(46, 0, {"timeout": 1000, "topics": None})
    assert convert.LIST_PARTITION_REASSIGNMENTS.request(entity, 0).topics is None


def test_list_partition_reassignments_response():
    model = m.ListPartitionReassignmentsResponse(topics=[m.OngoingTopicReassignment("t", [
        m.OngoingPartitionReassignment(0, [3, 1, 2], [3], [2])])])
    answer = _round_trip(46, 0, convert.LIST_PARTITION_REASSIGNMENTS.response(model, 0))
    assert (answer.error_code, answer.error_message) == (0, None)
    assert [(t.name, [(p.partition_index, list(p.replicas), list(p.adding_replicas),
                       list(p.removing_replicas)) for p in t.partitions])
            for t in answer.topics] == [("t", [(0, [3, 1, 2], [3], [2])])]
