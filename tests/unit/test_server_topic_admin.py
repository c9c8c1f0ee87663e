"""CreateTopics (kafkalite.server.topic_apis over topic_admin) as Kafka 2.8 answers it, with kio
requests read by the Kafka converter and native requests given to the same handler, over a real
metadata cache, a real BrokerConfig and a fake ZooKeeper bridge: NOT_CONTROLLER away from the
controller (also for DeleteTopics and CreatePartitions), Kafka's order of checks and its
messages, colliding names, assignments naming unknown brokers, and the KIP-525 fields of the
answer."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalite import errors
from kafkalite.config import BrokerConfig
from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka import codec
from kafkalite.protocol.kafka.convert import admin as convert
from kafkalite.server.metadata_cache import MetadataCache
from kafkalite.server.metadata_waits import MetadataWaits
from kafkalite.server.request_context import NATIVE, RequestContext
from kafkalite.server.topic_apis import (
    handle_create_partitions, handle_create_topics, handle_delete_topics,
)

DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5


class FakeTzk:
    def __init__(self, topics):
        self.topics = set(topics)
        self.created: list = []

    def list_topics(self):
        return defer.succeed(sorted(self.topics))

    def create_topic(self, name, assignment, overrides):
        self.topics.add(name)
        self.created.append((name, assignment, overrides))
        return defer.succeed(None)


def _broker(active=True, live=(1, 2, 3), topics=("orders",)):
    cache = MetadataCache(1)
    config = BrokerConfig(broker_id=1, zookeeper_connect="zk", num_partitions=2,
                          default_replication_factor=3)
    broker = SimpleNamespace(
        broker_id=1, config=config, topic_defaults=config.topic_defaults(), reactor=Clock(),
        replica_manager=None, metadata_cache=cache, cluster_id="c", deferred_zk=FakeTzk(topics),
        controller=SimpleNamespace(is_active=active),
        security=SimpleNamespace(authorizer=None))
    broker.metadata_waits = MetadataWaits(broker.reactor)
    broker.publish = lambda parts: _publish(broker, live, parts)
    broker.publish({(t, 0): [1] for t in topics})
    return broker


def _publish(broker, live, parts):
    """An UpdateMetadata as the controller sends it: {(topic, partition): replicas}."""
    broker.metadata_cache.update(m.UpdateMetadataRequest(
        controller_id=1, controller_epoch=1,
        partition_states=[m.UpdateMetadataPartitionState(t, p, 1, r[0], 0, r, 0, r, [])
                          for (t, p), r in parts.items()],
        live_brokers=[m.UpdateMetadataBroker(b, "h", 9000 + b) for b in live]))
    broker.metadata_waits.check()


def _value(d):
    out = []
    defer.maybeDeferred(lambda: d).addBoth(out.append)
    [value] = out
    if isinstance(value, Exception) or hasattr(value, "raiseException"):
        value.raiseException()
    return value


def _request(api_key, version, body):
    """A real kio request, as the broker decodes it off the wire."""
    return codec.decode_request(codec.encode_request(api_key, version, 7, "test", body))[1]


def _round_trip(api_key, version, values):
    return codec.decode_response(api_key, version,
                                 codec.encode_response(api_key, version, 7, values))[1]


def _topic(name, partitions=-1, rf=-1, assignments=(), configs=()):
    return {"name": name, "num_partitions": partitions, "replication_factor": rf,
            "assignments": [{"partition_index": p, "broker_ids": b} for p, b in assignments],
            "configs": [{"name": k, "value": v} for k, v in configs]}


def _ctx(api_key, version, protocol="kafka"):
    return RequestContext(api_key=api_key, api_version=version, correlation_id=7,
                          protocol=protocol)


NATIVE_CTX = {key: _ctx(key, 0, NATIVE) for key in (19, 20, 37)}


def _kafka_create(broker, body, version=5):
    """The handler's Deferred for a Kafka CreateTopics of ``version``, and the converter."""
    request = convert.CREATE_TOPICS.request(_request(19, version, body), version)
    return handle_create_topics(broker, _ctx(19, version), request)


def _kafka_answer(d, version=5):
    return _round_trip(19, version, convert.CREATE_TOPICS.response(_value(d), version))


def _create(broker, topics, validate_only=True, timeout=15000, version=5):
    body = {"topics": topics, "timeout": timeout, "validate_only": validate_only}
    return _kafka_answer(_kafka_create(broker, body, version), version).topics


def _errors(results):
    return [(r.name, r.error_code, r.error_message) for r in results]


# --- NOT_CONTROLLER ----------------------------------------------------------------------------

def test_a_broker_that_is_not_the_controller_answers_not_controller():
    broker = _broker(active=False)
    results = _create(broker, [_topic("new", 1, 1), _topic("orders", 1, 1)])
    assert _errors(results) == [("new", 41, ""), ("orders", 41, "")]
    assert [(r.num_partitions, r.replication_factor, list(r.configs)) for r in results] == \
        [(-1, -1, [])] * 2
    assert broker.deferred_zk.created == []
    native = _value(handle_create_topics(broker, NATIVE_CTX[19], m.CreateTopicsRequest(
        topics=[m.CreatableTopic("new", 1, 1, {}, {})])))
    assert [(t.name, t.error_code) for t in native.topics] == [("new", 41)]


def test_delete_topics_and_create_partitions_away_from_the_controller():
    broker = _broker(active=False)
    deleted = _value(handle_delete_topics(broker, NATIVE_CTX[20],
                                          m.DeleteTopicsRequest(topic_names=["orders"])))
    assert [(r.name, r.error_code, r.error_message) for r in deleted.responses] == \
        [("orders", 41, None)]
    grown = _value(handle_create_partitions(broker, NATIVE_CTX[37], m.CreatePartitionsRequest(
        topics=[m.CreatePartitionsTopic("orders", 3, None)])))
    assert [(r.name, r.error_code, r.error_message) for r in grown.results] == \
        [("orders", 41, None)]
    body = {"topics": [{"name": "orders", "count": 3, "assignments": None}], "timeout": 1000,
            "validate_only": False}
    request = convert.CREATE_PARTITIONS.request(_request(37, 2, body), 2)
    answer = convert.CREATE_PARTITIONS.response(
        _value(handle_create_partitions(broker, _ctx(37, 2), request)), 2)
    assert [(r.name, r.error_code, r.error_message)
            for r in _round_trip(37, 2, answer).results] == [("orders", 41, None)]


# --- Kafka's checks and messages ---------------------------------------------------------------

def test_kafkas_messages():
    broker = _broker()
    results = _create(broker, [
        _topic("bad name!", 1, 1), _topic("rf4", 1, 4), _topic("p0", 0, 1),
        _topic("neg", -5, 1), _topic("rf0", 1, 0), _topic("rfneg", 1, -3),
        _topic("twice", assignments=[(0, [1, 1])]),
        _topic("uneven", assignments=[(0, [1, 2]), (1, [1])]),
        _topic("gap", assignments=[(0, [1]), (2, [2])]),
        _topic("both", 2, assignments=[(0, [1])]),
        _topic("orders", 1, 1), _topic(""), _topic(".."), _topic("x" * 250)])
    assert _errors(results) == [
        ("bad name!", 17, 'Topic name "bad name!" is illegal, it contains a character other '
                          "than ASCII alphanumerics, '.', '_' and '-'"),
        ("rf4", 38, "Replication factor: 4 larger than available brokers: 3."),
        ("p0", 37, "Number of partitions must be larger than 0."),
        ("neg", 37, "Number of partitions must be larger than 0."),
        ("rf0", 38, "Replication factor must be larger than 0."),
        ("rfneg", 38, "Replication factor must be larger than 0."),
        ("twice", 39, "Duplicate replica assignment found: HashMap(0 -> ArrayBuffer(1, 1))"),
        ("uneven", 39, "All partitions should have the same number of replicas"),
        ("gap", 39, "partitions should be a consecutive 0-based integer sequence"),
        ("both", 42, "Both numPartitions or replicationFactor and replicasAssignments were "
                     "set. Both cannot be used at the same time."),
        ("orders", 36, "Topic 'orders' already exists."),
        ("", 17, "Topic name is illegal, it can't be empty"),
        ("..", 17, 'Topic name cannot be "." or ".."'),
        ("x" * 250, 17, "Topic name is illegal, it can't be longer than 249 characters, "
                        "topic name: " + "x" * 250)]
    # a refused topic answers no counts and no configs
    assert {(r.num_partitions, r.replication_factor, len(r.configs)) for r in results} == \
        {(-1, -1, 0)}


def test_the_counts_are_checked_before_the_name_as_in_kafka():
    [result] = _create(_broker(), [_topic("bad name!", 1, 4)])
    assert result.error_code == errors.InvalidReplicationFactorError.code


def test_null_config_values_and_duplicate_topics():
    broker = _broker()
    results = _create(broker, [_topic("n", 1, 1, configs=[("retention.ms", None),
                                                           ("segment.ms", None)]),
                               _topic("d", 1, 1), _topic("d", 1, 1)], validate_only=False)
    assert _errors(results) == [
        ("n", 42, "Null value not supported for topic configs : retention.ms,segment.ms"),
        ("d", 42, "Found multiple entries for this topic."),
        ("d", 42, "Found multiple entries for this topic.")]
    assert broker.deferred_zk.created == []


@pytest.mark.parametrize("existing,name", [("a.b", "a_b"), ("a_b", "a.b"), ("x.y_z", "x_y.z")])
def test_a_name_colliding_with_an_existing_topic_is_refused(existing, name):
    broker = _broker(topics=("orders",))
    broker.deferred_zk.topics.add(existing)       # in ZooKeeper, not yet in this broker's cache
    [result] = _create(broker, [_topic(name, 1, 1)])
    assert (result.error_code, result.error_message) == (
        17, f"Topic '{name}' collides with existing topics: {existing}")


def test_colliding_names_in_one_request():
    results = _create(_broker(), [_topic("a.b", 1, 1), _topic("a_b", 1, 1)],
                      validate_only=False, timeout=0)
    assert [r.error_code for r in results] == [errors.RequestTimedOutError.code, 17]


def test_a_topic_known_to_zookeeper_only_already_exists():
    broker = _broker()
    broker.deferred_zk.topics.add("fresh")
    [result] = _create(broker, [_topic("fresh", 1, 1)])
    assert (result.error_code, result.error_message) == (36, "Topic 'fresh' already exists.")


def test_an_assignment_may_name_a_broker_that_does_not_exist():
    broker = _broker()
    [result] = _create(broker, [_topic("t", assignments=[(0, [1, 99]), (1, [99, 2])])],
                       validate_only=False, timeout=0)
    assert result.error_code == errors.RequestTimedOutError.code   # created; timeout 0
    assert broker.deferred_zk.created == [("t", {0: [1, 99], 1: [99, 2]}, {})]


# --- the answer (KIP-525) and the wait for leaders --------------------------------------------

def test_a_created_topic_answers_its_counts_and_configs():
    broker = _broker()
    d = _kafka_create(broker, {"topics": [_topic("t", configs=[("retention.ms", "3600000")])],
                               "timeout": 15000, "validate_only": False})
    assert broker.deferred_zk.created[0][0] == "t"
    assert not d.called                                   # waiting for the leaders
    broker.publish({("t", 0): [1, 2, 3], ("t", 1): [2, 3, 1]})
    [result] = _kafka_answer(d).topics
    assert (result.error_code, result.error_message, result.num_partitions,
            result.replication_factor) == (0, None, 2, 3)
    configs = {c.name: (c.value, c.read_only, c.config_source, c.is_sensitive)
               for c in result.configs}
    assert configs["retention.ms"] == ("3600000", False, DYNAMIC_TOPIC_CONFIG, False)
    assert configs["cleanup.policy"] == ("delete", False, DEFAULT_CONFIG, False)
    assignment = broker.deferred_zk.created[0][1]     # the broker defaults: 2 partitions of 3
    assert sorted(assignment) == [0, 1] and all(sorted(r) == [1, 2, 3]
                                                for r in assignment.values())


def test_validate_only_answers_as_a_creation_and_creates_nothing():
    broker = _broker()
    [result] = _create(broker, [_topic("t", 4, 2)])
    assert (result.error_code, result.num_partitions, result.replication_factor) == (0, 4, 2)
    assert result.configs and broker.deferred_zk.created == []


def test_leaders_not_elected_in_time_answer_request_timed_out_without_a_message():
    broker = _broker()
    d = _kafka_create(broker, {"topics": [_topic("t", 1, 1)], "timeout": 500,
                               "validate_only": False})
    broker.reactor.advance(1)
    [result] = _kafka_answer(d).topics
    assert (result.error_code, result.error_message, result.num_partitions,
            list(result.configs)) == (7, None, -1, [])


def test_native_handler_answers_the_same_codes():
    broker = _broker()
    response = _value(handle_create_topics(broker, NATIVE_CTX[19], m.CreateTopicsRequest(
        topics=[m.CreatableTopic("p0", 0, 1, {}, {}),
                m.CreatableTopic("ok", 1, 1, {}, {})], validate_only=True)))
    assert [(t.name, t.error_code) for t in response.topics] == [("p0", 37), ("ok", 0)]
    # the native answer carries KIP-525's counts and configs too
    assert (response.topics[1].num_partitions, response.topics[1].replication_factor) == (1, 1)
    assert response.topics[1].configs and not response.topics[0].configs
