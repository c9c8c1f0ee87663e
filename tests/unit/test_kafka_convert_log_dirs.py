"""The DescribeLogDirs and AlterReplicaLogDirs converters (protocol/kafka/convert/log_dirs.py),
alone: every version the API table advertises reads requests into the model and writes the
model's answers that kio encodes and a client decodes."""

from __future__ import annotations

import pytest

from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka import codec
from kafkalite.protocol.kafka.convert import log_dirs as convert

from kafka_wire import advertised_versions as _versions, response_round_trip as _round_trip


def _request(api_key: int, version: int, body: dict):
    return codec.decode_request(codec.encode_request(api_key, version, 7, "test", body))[1]


def test_log_dir_apis_are_advertised_as_kafka_28():
    assert _versions(ApiKey.DESCRIBE_LOG_DIRS) == [1, 2]     # kio has no v0
    assert _versions(ApiKey.ALTER_REPLICA_LOG_DIRS) == [1, 2]


@pytest.mark.parametrize("version", _versions(ApiKey.DESCRIBE_LOG_DIRS))
def test_describe_log_dirs_request(version):
    entity = _request(35, version, {"topics": [{"topic": "a", "partitions": [0, 2]},
                                               {"topic": "b", "partitions": []}]})
    assert convert.DESCRIBE_LOG_DIRS.request(entity, version) == m.DescribeLogDirsRequest(
        topics=[m.DescribeLogDirsTopic("a", [0, 2]), m.DescribeLogDirsTopic("b", [])])


@pytest.mark.parametrize("version", _versions(ApiKey.DESCRIBE_LOG_DIRS))
def test_describe_log_dirs_request_of_every_partition(version):
    entity = _request(35, version, {"topics": None})
    assert convert.DESCRIBE_LOG_DIRS.request(entity, version) == m.DescribeLogDirsRequest(
        topics=None)


DESCRIBED = m.DescribeLogDirsResponse(throttle_time_ms=3, results=[
    m.DescribeLogDirsResult(0, "/data/d1", [
        m.DescribeLogDirsTopicResult("a", [m.DescribeLogDirsPartition(0, 1234, 0, False),
                                           m.DescribeLogDirsPartition(0, 100, 7, True)]),
        m.DescribeLogDirsTopicResult("b", [])]),
    m.DescribeLogDirsResult(56, "/data/d2", [])])


@pytest.mark.parametrize("version", _versions(ApiKey.DESCRIBE_LOG_DIRS))
def test_describe_log_dirs_response(version):
    answer = _round_trip(35, version, convert.DESCRIBE_LOG_DIRS.response(DESCRIBED, version))
    assert answer.throttle_time.total_seconds() * 1000 == 3
    assert [(int(d.error_code), d.log_dir, [
        (t.name, [(p.partition_index, p.partition_size, p.offset_lag, p.is_future_key)
                  for p in t.partitions]) for t in d.topics]) for d in answer.results] == [
        (0, "/data/d1", [("a", [(0, 1234, 0, False), (0, 100, 7, True)]), ("b", [])]),
        (56, "/data/d2", [])]


@pytest.mark.parametrize("version", _versions(ApiKey.DESCRIBE_LOG_DIRS))
def test_describe_log_dirs_error_response_has_no_results(version):
    empty = m.DescribeLogDirsRequest(topics=None).error_response(31)
    answer = _round_trip(35, version, convert.DESCRIBE_LOG_DIRS.response(empty, version))
    assert answer.results == ()


@pytest.mark.parametrize("version", _versions(ApiKey.ALTER_REPLICA_LOG_DIRS))
def test_alter_replica_log_dirs_request(version):
    entity = _request(34, version, {"dirs": [
        {"path": "/d2", "topics": [{"name": "a", "partitions": [0, 1]}]},
        {"path": "/d1", "topics": [{"name": "a", "partitions": [2]},
                                   {"name": "b", "partitions": []}]}]})
    assert convert.ALTER_REPLICA_LOG_DIRS.request(entity, version) == (
        m.AlterReplicaLogDirsRequest(dirs=[
            m.AlterReplicaLogDir("/d2", [m.AlterReplicaLogDirTopic("a", [0, 1])]),
            m.AlterReplicaLogDir("/d1", [m.AlterReplicaLogDirTopic("a", [2]),
                                         m.AlterReplicaLogDirTopic("b", [])])]))


@pytest.mark.parametrize("version", _versions(ApiKey.ALTER_REPLICA_LOG_DIRS))
def test_alter_replica_log_dirs_response(version):
    altered = m.AlterReplicaLogDirsResponse(throttle_time_ms=2, results=[
        m.AlterReplicaLogDirTopicResult("a", [m.AlterReplicaLogDirPartitionResult(0, 0),
                                              m.AlterReplicaLogDirPartitionResult(1, 57)]),
        m.AlterReplicaLogDirTopicResult("b", [m.AlterReplicaLogDirPartitionResult(3, 9)])])
    answer = _round_trip(34, version, convert.ALTER_REPLICA_LOG_DIRS.response(altered, version))
    assert answer.throttle_time.total_seconds() * 1000 == 2
    assert [(t.topic_name, [(p.partition_index, int(p.error_code)) for p in t.partitions])
            for t in answer.results] == [("a", [(0, 0), (1, 57)]), ("b", [(3, 9)])]
