"""The admin handlers (server/topic_apis.py, server/config_apis.py) driven through the API table
and the real connection pipeline, for both protocols: a fake broker (a real BrokerConfig and
metadata cache, a fake ZooKeeper bridge) and, for refusals, a fake authorizer that denies the
topic ``secret`` (and, when asked, the cluster). Each API serves the allowed part and answers
each refused resource with Kafka 2.8's error; malformed requests get the pipeline's answer."""

from __future__ import annotations

import struct
import uuid
from types import SimpleNamespace

import pytest
from pipeline_driver import (connect, kafka_frame, native_frame, read_frames,
                             read_kafka_responses, read_native_responses)
from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalite.config import BrokerConfig
from kafkalite.protocol import messages as m
from kafkalite.protocol.envelope import encode_request_payload
from kafkalite.protocol.framing import encode_frame
from kafkalite.security.acl import ResourceType
from kafkalite.server.dispatch import ApiDispatcher
from kafkalite.server.metadata_cache import MetadataCache
from kafkalite.server.metadata_waits import MetadataWaits
from zk_schema import TopicAssignment

TOPIC, BROKER = 2, 4
KAFKA, NATIVE = "kafka", "native"
DENIED, CLUSTER_DENIED, NOT_CONTROLLER, INVALID_REQUEST = 29, 31, 41, 42


class FakeAuthorizer:
    """Allows everything but the topic ``secret`` (and the cluster, with ``deny_cluster``)."""

    def __init__(self, deny_cluster=False):
        self.deny_cluster = deny_cluster
        self.asked: list = []

    def authorize(self, principal, host, operation, resource_type, name, log_denied=True):
        self.asked.append((operation, resource_type, name))
        if resource_type == ResourceType.TOPIC:
            return name != "secret"
        if resource_type == ResourceType.CLUSTER:
            return not self.deny_cluster
        return True

    def authorize_by_resource_type(self, principal, host, operation, resource_type):
        return True


class FakeTzk:
    def __init__(self, topics):
        self.topics = set(topics)
        self.created, self.marked, self.configs_written = [], [], []

    def list_topics(self):
        return defer.succeed(sorted(self.topics))

    def create_topic(self, name, assignment, overrides):
        self.created.append(name)
        return defer.succeed(None)

    def mark_topic_for_deletion(self, name):
        self.marked.append(name)
        return defer.succeed(None)

    def topics_marked_for_deletion(self):
        return defer.succeed([])

    def get_partition_reassignments(self):
        return defer.succeed({})

    def get_topic_assignment(self, topic):
        return defer.succeed(TopicAssignment({0: (1,)}, "id", zk_version=0))

    def get_broker_ids(self):           # CreatePartitions reads the registered brokers
        return defer.succeed([1])

    def get_topic_config(self, topic):
        return defer.succeed({"retention.ms": "3600000"})

    def set_topic_config(self, topic, config, notify=True):
        self.configs_written.append((topic, dict(config)))
        return defer.succeed(None)


def _broker(authorizer=None, active=True):
    config = BrokerConfig(broker_id=1, zookeeper_connect="zk", num_partitions=1,
                          default_replication_factor=1)
    cache = MetadataCache(1)
    cache.update(m.UpdateMetadataRequest(
        controller_id=1, controller_epoch=1,
        partition_states=[m.UpdateMetadataPartitionState(t, 0, 1, 1, 0, [1], 0, [1], [])
                          for t in ("orders", "secret")],
        live_brokers=[m.UpdateMetadataBroker(1, "h", 9092)]))
    reactor = Clock()
    return SimpleNamespace(
        broker_id=1, config=config, topic_defaults=config.topic_defaults(), reactor=reactor,
        metadata_cache=cache, cluster_id="c", deferred_zk=FakeTzk({"orders", "secret"}),
        controller=SimpleNamespace(is_active=active), dynamic_config=None,
        replica_manager=SimpleNamespace(partitions={}), metadata_waits=MetadataWaits(reactor),
        security=SimpleNamespace(authorizer=authorizer))


def _call(broker, protocol, api_key, version, kafka_body, native_request):
    """One request through the table and the pipeline: the decoded answer."""
    connection, transport = connect(ApiDispatcher(broker))
    if protocol == KAFKA:
        connection.dataReceived(kafka_frame(api_key, version, 7, kafka_body))
        [(correlation_id, answer)] = read_kafka_responses(transport, [(api_key, version)])
    else:
        connection.dataReceived(native_frame(native_request, 7))
        [(correlation_id, answer)] = read_native_responses(transport, [api_key])
    assert correlation_id == 7
    return answer


def _codes(entries, name="name"):
    return [(getattr(e, name), int(e.error_code)) for e in entries]


PROTOCOLS = [KAFKA, NATIVE]


# --- CreateTopics ------------------------------------------------------------------------------

def _create_topics(broker, protocol, names, version=7):
    body = {"topics": [{"name": n, "num_partitions": 2, "replication_factor": 1,
                        "assignments": [], "configs": []} for n in names],
            "timeout": 5000, "validate_only": True}
    native = m.CreateTopicsRequest(topics=[m.CreatableTopic(n, 2, 1, {}, {}) for n in names],
                                   timeout_ms=5000, validate_only=True)
    return _call(broker, protocol, 19, version, body, native).topics


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_create_topics_served_and_refused_per_topic(protocol):
    broker = _broker(FakeAuthorizer(deny_cluster=True))   # Create on the cluster would allow all
    topics = _create_topics(broker, protocol, ["fresh", "secret"])
    assert _codes(topics) == [("fresh", 0), ("secret", DENIED)]
    fresh, secret = topics
    assert (fresh.num_partitions, fresh.replication_factor) == (2, 1)
    assert {c.name for c in fresh.configs} >= {"retention.ms", "cleanup.policy"}
    assert (secret.num_partitions, secret.topic_config_error_code) == (-1, DENIED)
    assert broker.deferred_zk.created == []          # validate_only


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_create_topics_away_from_the_controller(protocol):
    topics = _create_topics(_broker(active=False), protocol, ["fresh"], version=2)
    assert _codes(topics) == [("fresh", NOT_CONTROLLER)]


# --- DeleteTopics ------------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_delete_topics_served_and_refused_per_topic(protocol):
    broker = _broker(FakeAuthorizer())
    body = {"topics": [{"name": n, "topic_id": None} for n in ("orders", "secret", "none")],
            "timeout": 0}
    native = m.DeleteTopicsRequest(topic_names=["orders", "secret", "none"], timeout_ms=0)
    answer = _call(broker, protocol, 20, 6, body, native)
    assert _codes(answer.responses) == [("orders", 0), ("secret", DENIED), ("none", 3)]
    assert broker.deferred_zk.marked == ["orders"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_delete_topics_disabled(protocol):
    broker = _broker()
    broker.config = BrokerConfig(broker_id=1, zookeeper_connect="zk", delete_topic_enable=False)
    body = {"topic_names": ["orders"], "timeout": 0}
    native = m.DeleteTopicsRequest(topic_names=["orders"], timeout_ms=0)
    assert _codes(_call(broker, protocol, 20, 4, body, native).responses) == [("orders", 73)]
    if protocol == KAFKA:          # before v3 Kafka says INVALID_REQUEST
        answer = _call(broker, protocol, 20, 2, body, native)
        assert _codes(answer.responses) == [("orders", INVALID_REQUEST)]


def test_delete_topics_by_id():
    broker = _broker(FakeAuthorizer())
    broker.metadata_cache.update(m.UpdateMetadataRequest(
        controller_id=1, controller_epoch=1,
        partition_states=[m.UpdateMetadataPartitionState(
            t, 0, 1, 1, 0, [1], 0, [1], [], topic_id=i)
            for t, i in (("orders", "AAAAAAAAAAAAAAAAAAAAAQ"),      # ids 1 and 2
                         ("secret", "AAAAAAAAAAAAAAAAAAAAAg"))],
        live_brokers=[m.UpdateMetadataBroker(1, "h", 9092)]))
    body = {"topics": [{"name": None, "topic_id": uuid.UUID(int=n)} for n in (1, 2, 3)],
            "timeout": 0}
    answer = _call(broker, KAFKA, 20, 6, body, None)
    assert [(r.name, int(r.error_code), r.topic_id.int) for r in answer.responses] == [
        ("orders", 0, 1), (None, DENIED, 2), (None, 100, 3)]


# --- CreatePartitions --------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_create_partitions_served_refused_and_duplicates(protocol):
    broker = _broker(FakeAuthorizer())
    names = ["orders", "secret", "twice", "twice"]
    body = {"topics": [{"name": n, "count": 2, "assignments": None} for n in names],
            "timeout": 5000, "validate_only": True}
    native = m.CreatePartitionsRequest(topics=[m.CreatePartitionsTopic(n, 2, None)
                                               for n in names], validate_only=True)
    answer = _call(broker, protocol, 37, 3, body, native)
    assert _codes(answer.results) == [("orders", 0), ("secret", DENIED),
                                      ("twice", INVALID_REQUEST)]
    assert answer.results[2].error_message == "Duplicate topic in request."


# --- DeleteRecords -----------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_delete_records_refused_per_topic(protocol):
    broker = _broker(FakeAuthorizer())
    body = {"topics": [{"name": t, "partitions": [{"partition_index": 0, "offset": 1}]}
                       for t in ("orders", "secret")], "timeout": 1000}
    native = m.DeleteRecordsRequest(topics=[m.DeleteRecordsTopic(t, [m.DeleteRecordsPartition(
        0, 1)]) for t in ("orders", "secret")], timeout_ms=1000)
    answer = _call(broker, protocol, 21, 2, body, native)
    name, partition = ("name", "partition_index") if protocol == KAFKA else ("topic",
                                                                               "partition")
    got = [(getattr(t, name), [(getattr(p, partition), p.low_watermark, int(p.error_code))
                               for p in t.partitions]) for t in answer.topics]
    # orders: served (this broker does not lead it), secret: refused
    assert got == [("orders", [(0, -1, 6)]), ("secret", [(0, -1, DENIED)])]


# --- DescribeConfigs ---------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_describe_configs_served_and_refused_per_resource(protocol):
    broker = _broker(FakeAuthorizer(deny_cluster=True))
    resources = [(TOPIC, "secret"), (TOPIC, "orders"), (BROKER, "1")]
    body = {"resources": [{"resource_type": t, "resource_name": n,
                           "configuration_keys": ["retention.ms"]} for t, n in resources],
            "include_synonyms": True, "include_documentation": True}
    native = m.DescribeConfigsRequest(resources=[m.DescribeConfigsResource(t, n,
                                                                           ["retention.ms"])
                                                 for t, n in resources],
                                      include_synonyms=True, include_documentation=True)
    answer = _call(broker, protocol, 32, 4, body, native)
    # Kafka 2.8: the described resources first, then the refused ones
    assert [(r.resource_name, int(r.error_code), r.error_message) for r in answer.results] == [
        ("orders", 0, None), ("secret", DENIED, "Topic authorization failed."),
        ("1", CLUSTER_DENIED, "Cluster authorization failed.")]
    [entry] = answer.results[0].configs
    assert (entry.name, entry.value, entry.config_source) == ("retention.ms", "3600000", 1)
    assert entry.synonyms and entry.documentation


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_describe_configs_of_an_unknown_resource_type_fails_the_request(protocol):
    body = {"resources": [{"resource_type": 3, "resource_name": "g",
                           "configuration_keys": None},
                          {"resource_type": TOPIC, "resource_name": "orders",
                           "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False}
    native = m.DescribeConfigsRequest(resources=[m.DescribeConfigsResource(3, "g"),
                                                 m.DescribeConfigsResource(TOPIC, "orders")])
    answer = _call(_broker(), protocol, 32, 4, body, native)
    assert [int(r.error_code) for r in answer.results] == [INVALID_REQUEST, INVALID_REQUEST]


# --- AlterConfigs / IncrementalAlterConfigs ----------------------------------------------------

@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_alter_configs_served_and_refused_per_resource(protocol):
    broker = _broker(FakeAuthorizer())
    body = {"resources": [{"resource_type": TOPIC, "resource_name": n,
                           "configs": [{"name": "retention.ms", "value": "1000"}]}
                          for n in ("secret", "orders")], "validate_only": False}
    native = m.AlterConfigsRequest(resources=[m.AlterConfigsResource(
        TOPIC, n, [m.AlterableConfig("retention.ms", "1000")]) for n in ("secret", "orders")])
    answer = _call(broker, protocol, 33, 2, body, native)
    assert [(r.resource_name, int(r.error_code), r.error_message) for r in answer.responses] == [
        ("secret", DENIED, None), ("orders", 0, None)]
    assert broker.deferred_zk.configs_written == [("orders", {"retention.ms": "1000"})]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_incremental_alter_configs_served_and_refused_per_resource(protocol):
    broker = _broker(FakeAuthorizer())
    body = {"resources": [{"resource_type": TOPIC, "resource_name": n,
                           "configs": [{"name": "segment.ms", "config_operation": 0,
                                        "value": "60000"}]}
                          for n in ("orders", "secret")], "validate_only": False}
    native = m.IncrementalAlterConfigsRequest(resources=[m.IncrementalAlterConfigsResource(
        TOPIC, n, [m.AlterableConfigOp("segment.ms", 0, "60000")]) for n in ("orders", "secret")])
    answer = _call(broker, protocol, 44, 1, body, native)
    assert [(r.resource_name, int(r.error_code)) for r in answer.responses] == [
        ("orders", 0), ("secret", DENIED)]
    assert broker.deferred_zk.configs_written == [
        ("orders", {"retention.ms": "3600000", "segment.ms": "60000"})]


def test_alter_configs_of_a_broker_logger_fails_the_request():
    body = {"resources": [{"resource_type": 8, "resource_name": "1", "configs": []}],
            "validate_only": True}
    answer = _call(_broker(), KAFKA, 33, 1, body, None)
    assert [int(r.error_code) for r in answer.responses] == [INVALID_REQUEST]


# --- malformed requests --------------------------------------------------------------------------

@pytest.mark.parametrize("api_key", [19, 20, 21, 32, 33, 37, 44])
def test_a_malformed_kafka_request_closes_the_connection(api_key):
    connection, transport = connect(ApiDispatcher(_broker()))
    # a valid header (api key, version 1, correlation id, client id) and a truncated body
    payload = struct.pack(">hhih", api_key, 1, 7, 4) + b"test" + b"\x00\x00\x00\x05"
    connection.dataReceived(encode_frame(payload))
    assert read_frames(transport) == []
    assert transport.disconnecting


@pytest.mark.parametrize("api_key", [19, 20, 21, 32, 33, 37, 44])
def test_a_malformed_native_request_is_answered_with_an_error(api_key):
    connection, transport = connect(ApiDispatcher(_broker()))
    connection.dataReceived(encode_frame(encode_request_payload(
        api_key, 0, 7, "test", {"not": "a request"})))
    [(correlation_id, answer)] = read_native_responses(transport, [api_key])
    assert correlation_id == 7
    assert isinstance(answer, m.RequestErrorResponse)
    assert answer.error_code == INVALID_REQUEST
