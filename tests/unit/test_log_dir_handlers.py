"""DescribeLogDirs and AlterReplicaLogDirs (server/log_dir_apis.py) driven through the API table
and the real connection pipeline, for both protocols, over a real LogManager with two data dirs
(one of them taken offline where the test says) and the replica manager's partitions as plain
values. Refused as Kafka 2.8 refuses them: DescribeLogDirs without Describe on the cluster with
an empty answer, AlterReplicaLogDirs without Alter with CLUSTER_AUTHORIZATION_FAILED on every
partition. (The move itself: test_replica_alter_log_dirs.py.)"""

from __future__ import annotations

import os
import struct
from types import SimpleNamespace

import pytest
from logtools import make_batch, topic_config
from pipeline_driver import (connect, kafka_frame, native_frame, read_frames,
                             read_kafka_responses, read_native_responses)
from twisted.internet import task

from kafkalite.log import LogManager
from kafkalite.protocol import messages as m
from kafkalite.protocol.envelope import encode_request_payload
from kafkalite.protocol.framing import encode_frame
from kafkalite.security.acl import AclOperation, ResourceType
from kafkalite.server.dispatch import ApiDispatcher
from kafkalite.server.replica_alter_log_dirs import ReplicaAlterLogDirs

KAFKA, NATIVE = "kafka", "native"
PROTOCOLS = [KAFKA, NATIVE]
STORAGE_ERROR, INVALID_REQUEST = 56, 42
CLUSTER_DENIED, REPLICA_NOT_AVAILABLE, LOG_DIR_NOT_FOUND, UNKNOWN_PARTITION = 31, 9, 57, 3


class ClusterAuthorizer:
    """Allows Describe on the cluster only when told to."""

    def __init__(self, allow: bool):
        self.allow = allow
        self.asked: list = []

    def authorize(self, principal, host, operation, resource_type, name, log_denied=True):
        self.asked.append((operation, resource_type, name))
        return self.allow

    def authorize_by_resource_type(self, principal, host, operation, resource_type):
        return self.allow


@pytest.fixture
def broker(tmp_path):
    """Two data dirs: ``a-0`` and ``b-1`` in the first, ``a-1`` in the second (the log manager
    puts each new log in the dir with the fewest); ``a-0`` holds 3 records, its high
    watermark is 2; ``b-1`` has a log but no partition here (a stray)."""
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    manager = LogManager([str(d) for d in dirs], topic_config(), task.Clock())
    manager.startService()
    a0 = manager.get_or_create_log("a", 0)
    manager.get_or_create_log("a", 1)
    manager.get_or_create_log("b", 1)
    a0.append(make_batch(3))
    partitions = {("a", 0): SimpleNamespace(high_watermark=2, log_end_offset=3),
                  ("a", 1): SimpleNamespace(high_watermark=0, log_end_offset=0)}
    replicas = SimpleNamespace(broker_id=1, partitions=partitions,
                               partition_known=lambda topic, partition: topic != "unknown")
    replicas.alter_log_dirs = ReplicaAlterLogDirs(replicas, manager, task.Clock())
    yield SimpleNamespace(broker_id=1, log_manager=manager, replica_manager=replicas,
                          security=SimpleNamespace(authorizer=None), dirs=dirs)
    manager.stopService()


def _describe(broker, protocol, topics, version=2):
    connection, transport = connect(ApiDispatcher(broker))
    if protocol == KAFKA:
        body = {"topics": None if topics is None else [
            {"topic": t, "partitions": ps} for t, ps in topics.items()]}
        connection.dataReceived(kafka_frame(35, version, 7, body))
        [(correlation_id, answer)] = read_kafka_responses(transport, [(35, version)])
        results = [(int(d.error_code), d.log_dir, [
            (t.name, [(p.partition_index, p.partition_size, p.offset_lag, p.is_future_key)
                      for p in t.partitions]) for t in d.topics]) for d in answer.results]
    else:
        request = m.DescribeLogDirsRequest(topics=None if topics is None else [
            m.DescribeLogDirsTopic(t, ps) for t, ps in topics.items()])
        connection.dataReceived(native_frame(request, 7))
        [(correlation_id, answer)] = read_native_responses(transport, [35])
        results = [(d.error_code, d.log_dir, [
            (t.topic, [(p.partition, p.size, p.offset_lag, p.is_future) for p in t.partitions])
            for t in d.topics]) for d in answer.results]
    assert correlation_id == 7
    return results


def _size(broker, topic, partition):
    return broker.log_manager.get_log(topic, partition).size


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_partition_of_every_dir(broker, protocol):
    d1, d2 = map(str, broker.dirs)
    a0 = _size(broker, "a", 0)
    assert a0 > 0
    assert _describe(broker, protocol, None) == [
        (0, d1, [("a", [(0, a0, 0, False)]), ("b", [(1, 0, -1, False)])]),   # -1: not hosted
        (0, d2, [("a", [(1, 0, 0, False)])])]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_asked_partitions_only_and_their_dirs_other_topics_listed_empty(broker, protocol):
    """Kafka lists each topic the dir has a log of, with only the asked partitions."""
    d1, d2 = map(str, broker.dirs)
    assert _describe(broker, protocol, {"a": [1], "nope": [0]}) == [
        (0, d1, [("a", []), ("b", [])]),
        (0, d2, [("a", [(1, 0, 0, False)])])]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_offline_dir_answers_storage_error(broker, protocol):
    d1, d2 = map(str, broker.dirs)
    broker.log_manager.failure_channel.maybe_add_offline_log_dir(d2, "disk gone")
    broker.log_manager.handle_log_dir_failure(d2)
    assert _describe(broker, protocol, {"a": [0, 1]}) == [
        (0, d1, [("a", [(0, _size(broker, "a", 0), 0, False)]), ("b", [])]),
        (STORAGE_ERROR, d2, [])]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_relative_data_dir_is_answered_absolute(tmp_path, monkeypatch, protocol):
    monkeypatch.chdir(tmp_path)
    manager = LogManager(["rel"], topic_config(), task.Clock())
    manager.startService()
    try:
        broker = SimpleNamespace(log_manager=manager, replica_manager=SimpleNamespace(
            partitions={}), security=SimpleNamespace(authorizer=None))
        assert _describe(broker, protocol, None) == [(0, os.path.join(str(tmp_path), "rel"), [])]
    finally:
        manager.stopService()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_refused_without_describe_on_the_cluster_is_an_empty_answer(broker, protocol):
    broker.security.authorizer = ClusterAuthorizer(allow=False)
    assert _describe(broker, protocol, None) == []
    assert broker.security.authorizer.asked == [
        (AclOperation.DESCRIBE, ResourceType.CLUSTER, "kafka-cluster")]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_served_with_describe_on_the_cluster(broker, protocol):
    broker.security.authorizer = ClusterAuthorizer(allow=True)
    assert [d[0] for d in _describe(broker, protocol, None)] == [0, 0]


def test_version_1_is_served_as_2(broker):
    assert _describe(broker, KAFKA, None, version=1) == _describe(broker, KAFKA, None)


# --- AlterReplicaLogDirs -----------------------------------------------------------------------

def _alter(broker, protocol, dirs, version=2):
    """``dirs``: [(path, {topic: [partitions]})] -> [(topic, [(partition, error code)])]."""
    connection, transport = connect(ApiDispatcher(broker))
    if protocol == KAFKA:
        body = {"dirs": [{"path": path, "topics": [{"name": t, "partitions": ps}
                                                   for t, ps in topics.items()]}
                         for path, topics in dirs]}
        connection.dataReceived(kafka_frame(34, version, 7, body))
        [(correlation_id, answer)] = read_kafka_responses(transport, [(34, version)])
        results = [(t.topic_name, [(p.partition_index, int(p.error_code)) for p in t.partitions])
                   for t in answer.results]
    else:
        request = m.AlterReplicaLogDirsRequest(dirs=[
            m.AlterReplicaLogDir(path, [m.AlterReplicaLogDirTopic(t, ps)
                                        for t, ps in topics.items()]) for path, topics in dirs])
        connection.dataReceived(native_frame(request, 7))
        [(correlation_id, answer)] = read_native_responses(transport, [34])
        results = [(t.topic, [(p.partition, p.error_code) for p in t.partitions])
                   for t in answer.results]
    assert correlation_id == 7
    return results


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_alter_replica_log_dirs_per_partition(broker, protocol):
    """a-0 starts moving to d2 (a future log there); a-1 is already in d2; c-0 is not hosted:
    REPLICA_NOT_AVAILABLE (UNKNOWN_TOPIC_OR_PARTITION when the cluster does not know it either),
    remembered for its creation; a dir not in log.dirs: LOG_DIR_NOT_FOUND; a partition named
    twice goes to the dir named last (Kafka's map)."""
    d1, d2 = map(str, broker.dirs)
    answer = _alter(broker, protocol, [("/elsewhere", {"a": [0]}),
                                       (d2, {"a": [0, 1], "c": [0], "unknown": [0]}),
                                       ("/elsewhere", {"b": [1]})])
    assert dict(answer) == {"a": [(0, 0), (1, 0)], "c": [(0, REPLICA_NOT_AVAILABLE)],
                            "unknown": [(0, UNKNOWN_PARTITION)], "b": [(1, LOG_DIR_NOT_FOUND)]}
    future = broker.log_manager.get_future_log("a", 0)
    assert future is not None and future.parent_dir == d2
    assert broker.log_manager.get_future_log("a", 1) is None
    assert broker.log_manager.get_or_create_log("c", 0).parent_dir == d2
    described = _describe(broker, protocol, {"a": [0]})
    assert described[1] == (0, d2, [("a", [(0, 0, 3, True)]), ("c", [])])   # 3 records behind


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_alter_replica_log_dirs_to_an_offline_dir(broker, protocol):
    d1, d2 = map(str, broker.dirs)
    broker.log_manager.failure_channel.maybe_add_offline_log_dir(d2, "disk gone")
    broker.log_manager.handle_log_dir_failure(d2)
    assert _alter(broker, protocol, [(d2, {"a": [0]})]) == [("a", [(0, STORAGE_ERROR)])]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_alter_replica_log_dirs_refused_without_alter_on_the_cluster(broker, protocol):
    d1, d2 = map(str, broker.dirs)
    broker.security.authorizer = ClusterAuthorizer(allow=False)
    assert _alter(broker, protocol, [(d2, {"a": [0, 1]}), (d1, {"a": [2], "b": [1]})]) == [
        ("a", [(0, CLUSTER_DENIED), (1, CLUSTER_DENIED)]), ("a", [(2, CLUSTER_DENIED)]),
        ("b", [(1, CLUSTER_DENIED)])]
    assert broker.security.authorizer.asked == [
        (AclOperation.ALTER, ResourceType.CLUSTER, "kafka-cluster")]
    assert broker.log_manager.future_logs == {}


@pytest.mark.parametrize("api_key", [34, 35])
def test_a_malformed_kafka_request_closes_the_connection(broker, api_key):
    connection, transport = connect(ApiDispatcher(broker))
    payload = struct.pack(">hhih", api_key, 1, 7, 4) + b"test" + b"\x00\x00\x00\x05"
    connection.dataReceived(encode_frame(payload))
    assert read_frames(transport) == []
    assert transport.disconnecting


@pytest.mark.parametrize("api_key", [34, 35])
def test_a_malformed_native_request_is_answered_with_an_error(broker, api_key):
    connection, transport = connect(ApiDispatcher(broker))
    connection.dataReceived(encode_frame(encode_request_payload(
        api_key, 0, 7, "test", {"topics": "not a list", "dirs": "not a list"})))
    [(correlation_id, answer)] = read_native_responses(transport, [api_key])
    assert correlation_id == 7
    assert isinstance(answer, m.RequestErrorResponse)
    assert answer.error_code == INVALID_REQUEST
