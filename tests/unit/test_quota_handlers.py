"""DescribeClientQuotas and AlterClientQuotas driven through the API table and the real connection
pipeline, for both protocols, over an in-memory ZooKeeper (``controller_fakes``): what lands in
``/config/users``, ``/config/clients`` and ``/config/changes``, and Kafka 2.8's answers (filters,
strictness, validate_only), refusals and errors."""

from __future__ import annotations

import json
import struct
from types import SimpleNamespace

import pytest
from controller_fakes import DeferredZk, ZkTree
from handler_fakes import AclTakingZk
from handler_fakes import ClusterAuthorizer as FakeAuthorizer
from pipeline_driver import (connect, kafka_frame, native_frame, read_frames,
                             read_kafka_responses, read_native_responses)
from twisted.internet.task import Clock

from kafkalite.config import BrokerConfig
from kafkalite.protocol import messages as m
from kafkalite.protocol.envelope import encode_request_payload
from kafkalite.protocol.framing import encode_frame
from kafkalite.security.acl import ResourceType
from kafkalite.server.dispatch import ApiDispatcher
from kafkalite.server.quota_values import java_double_to_string

KAFKA, NATIVE = "kafka", "native"
PROTOCOLS = [KAFKA, NATIVE]
EXACT, DEFAULT, ANY = 0, 1, 2


def _sorted(items):
    return sorted(items, key=repr)         # names may be None (a default entity)


def _broker(authorizer=None):
    clock = Clock()
    tree = ZkTree(clock)
    zk = AclTakingZk(tree)
    return SimpleNamespace(
        broker_id=1, config=BrokerConfig(broker_id=1, zookeeper_connect="zk"), reactor=clock,
        zk=zk, deferred_zk=DeferredZk(zk), controller=SimpleNamespace(is_active=False),
        security=SimpleNamespace(authorizer=authorizer), tree=tree)


def _call(broker, protocol, api_key, kafka_body, native_request, version=1):
    connection, transport = connect(ApiDispatcher(broker))
    if protocol == KAFKA:
        connection.dataReceived(kafka_frame(api_key, version, 7, kafka_body))
    else:
        connection.dataReceived(native_frame(native_request, 7))
    broker.reactor.advance(0)
    if protocol == KAFKA:
        [(correlation_id, answer)] = read_kafka_responses(transport, [(api_key, version)])
    else:
        [(correlation_id, answer)] = read_native_responses(transport, [api_key])
    assert correlation_id == 7
    return answer


def _alter(broker, protocol, entries, validate_only=False):
    """entries: [(entity as [(type, name)], ops as [(key, value or None to remove)])]"""
    body = {"validate_only": validate_only, "entries": [
        {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
         "ops": [{"key": k, "value": 0.0 if v is None else float(v), "remove": v is None}
                 for k, v in ops]} for entity, ops in entries]}
    native = m.AlterClientQuotasRequest(validate_only=validate_only, entries=[
        m.QuotaAlteration([m.QuotaEntityPart(t, n) for t, n in entity],
                          [m.QuotaOp(k, 0.0 if v is None else float(v), v is None)
                           for k, v in ops]) for entity, ops in entries])
    answer = _call(broker, protocol, 49, body, native)
    return [(int(e.error_code), e.error_message,
             [(p.entity_type, p.entity_name) for p in e.entity]) for e in answer.entries]


def _describe(broker, protocol, components, strict=False):
    body = {"strict": strict, "components": [
        {"entity_type": t, "match_type": k, "match": n} for t, k, n in components]}
    native = m.DescribeClientQuotasRequest(
        strict=strict, components=[m.QuotaFilterComponent(t, k, n) for t, k, n in components])
    answer = _call(broker, protocol, 48, body, native)
    entries = None if answer.entries is None else _sorted(
        (tuple((p.entity_type, p.entity_name) for p in e.entity),
         {v.key: v.value for v in e.values}) for e in answer.entries)
    return int(answer.error_code), answer.error_message, entries


def _znode(broker, path):
    return json.loads(broker.tree.nodes[path].data)


def _notifications(broker):
    return [json.loads(broker.tree.nodes[f"/config/changes/{c}"].data)["entity_path"]
            for c in broker.tree.children("/config/changes")]


def _populate(broker, protocol):
    assert _alter(broker, protocol, [
        ([("user", "alice")], [("producer_byte_rate", 1024)]),
        ([("client-id", "c1")], [("consumer_byte_rate", 2048)]),
        ([("user", "alice"), ("client-id", "c1")], [("request_percentage", 50)]),
        ([("user", None)], [("producer_byte_rate", 10)]),
        ([("client-id", None)], [("producer_byte_rate", 20)]),
        ([("user", "CN=bob,O=x"), ("client-id", None)], [("consumer_byte_rate", 30)]),
    ]) == [(0, None, [("user", "alice")]), (0, None, [("client-id", "c1")]),
           (0, None, [("client-id", "c1"), ("user", "alice")]),
           (0, None, [("user", None)]), (0, None, [("client-id", None)]),
           (0, None, [("client-id", None), ("user", "CN=bob,O=x")])]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_quotas_are_written_where_kafka_keeps_them(protocol):
    broker = _broker()
    # a user's SCRAM credential shares its znode with its quotas
    broker.zk.create("/config/users/alice", json.dumps(
        {"version": 1, "config": {"SCRAM-SHA-256": "salt=x"}}).encode(), makepath=True)
    _populate(broker, protocol)
    assert _znode(broker, "/config/users/alice") == {"version": 1, "config": {
        "SCRAM-SHA-256": "salt=x", "producer_byte_rate": "1024"}}
    assert _znode(broker, "/config/clients/c1")["config"] == {"consumer_byte_rate": "2048"}
    assert _znode(broker, "/config/users/alice/clients/c1")["config"] == {
        "request_percentage": "50.0"}
    assert _znode(broker, "/config/users/<default>")["config"] == {"producer_byte_rate": "10"}
    assert _znode(broker, "/config/clients/<default>")["config"] == {"producer_byte_rate": "20"}
    assert _znode(broker, "/config/users/CN%3Dbob%2CO%3Dx/clients/<default>")["config"] == {
        "consumer_byte_rate": "30"}
    assert _notifications(broker) == [
        "users/alice", "clients/c1", "users/alice/clients/c1", "users/<default>",
        "clients/<default>", "users/CN%3Dbob%2CO%3Dx/clients/<default>"]
    # removing the last quota keeps the znode, empty, as Kafka's changeConfigs
    assert _alter(broker, protocol, [([("client-id", "c1")], [("consumer_byte_rate", None)])])[
        0][0] == 0
    assert _znode(broker, "/config/clients/c1") == {"version": 1, "config": {}}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_describe_filters_as_kafka(protocol):
    broker = _broker()
    _populate(broker, protocol)
    alice = ((("user", "alice"),), {"producer_byte_rate": 1024.0})
    c1 = ((("client-id", "c1"),), {"consumer_byte_rate": 2048.0})
    both = ((("user", "alice"), ("client-id", "c1")), {"request_percentage": 50.0})
    user_default = ((("user", None),), {"producer_byte_rate": 10.0})
    client_default = ((("client-id", None),), {"producer_byte_rate": 20.0})
    bob = ((("user", "CN=bob,O=x"), ("client-id", None)), {"consumer_byte_rate": 30.0})
    everything = _sorted([alice, c1, both, user_default, client_default, bob])
    assert _describe(broker, protocol, []) == (0, None, everything)
    assert _describe(broker, protocol, [], strict=True) == (0, None, [])
    assert _describe(broker, protocol, [("user", EXACT, "alice")], strict=True) == (
        0, None, [alice])
    assert _describe(broker, protocol, [("user", EXACT, "alice")]) == (
        0, None, _sorted([alice, both]))
    assert _describe(broker, protocol, [("user", DEFAULT, None)], strict=True) == (
        0, None, [user_default])
    assert _describe(broker, protocol, [("user", ANY, None)], strict=True) == (
        0, None, _sorted([alice, user_default]))
    assert _describe(broker, protocol, [("client-id", ANY, None)]) == (
        0, None, _sorted([c1, client_default, both, bob]))
    assert _describe(broker, protocol, [("user", ANY, None), ("client-id", DEFAULT, None)],
                     strict=True) == (0, None, [bob])
    assert _describe(broker, protocol, [("user", EXACT, "nobody")], strict=True) == (0, None, [])
    assert _describe(broker, protocol, [("ip", ANY, None)]) == (0, None, [])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_describe_errors_as_kafka(protocol):
    broker = _broker()
    assert _describe(broker, protocol, [("user", ANY, None), ("user", EXACT, "a")]) == (
        42, "Duplicate user filter component entity type", None)
    assert _describe(broker, protocol, [("", ANY, None)]) == (
        42, "Unexpected empty filter component entity type", None)
    assert _describe(broker, protocol, [("group", ANY, None)]) == (
        35, "Custom entity type 'group' not supported", None)
    assert _describe(broker, protocol, [("user", ANY, None), ("ip", ANY, None)]) == (
        42, "Invalid entity filter component combination, IP filter component should not be "
            "used with user or clientId filter component.", None)
    assert _describe(broker, protocol, [("user", 7, None)]) == (-1, None, None)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_alter_errors_as_kafka(protocol):
    broker = _broker()
    assert _alter(broker, protocol, [
        ([("user", "a")], [("producer_byte_rate", 1.5)]),
        ([("client-id", "c")], [("nonsense", 1)]),
        ([], [("producer_byte_rate", 1)]),
        ([("user", "")], [("producer_byte_rate", 1)]),
        ([("group", "g")], [("producer_byte_rate", 1)]),
        ([("user", "a"), ("ip", "1.2.3.4")], [("producer_byte_rate", 1)]),
        ([("ip", "no such host.invalid")], [("connection_creation_rate", 1)]),
        ([("user", "b")], [("SCRAM-SHA-256", 1)]),
        ([("client-id", "d")], [("producer_byte_rate", -5)]),
    ]) == [
        (42, "Configuration producer_byte_rate must be a LONG value", [("user", "a")]),
        (42, "Invalid configuration key nonsense", [("client-id", "c")]),
        (42, "Invalid empty client quota entity", []),
        (42, "Empty user not supported", [("user", "")]),
        (42, "Unhandled client quota entity type: group", [("group", "g")]),
        (42, "Invalid quota entity combination, IP entity should not be used with user/client "
             "ID entity.", [("user", "a"), ("ip", "1.2.3.4")]),
        (42, "no%20such%20host.invalid is not a valid IP or resolvable host.",
         [("ip", "no such host.invalid")]),
        (-1, None, [("user", "b")]),
        (42, "Configuration producer_byte_rate must be a LONG value", [("client-id", "d")]),
    ]
    assert "/config/users/a" not in broker.tree.nodes
    # validate_only checks and writes nothing
    assert _alter(broker, protocol, [([("ip", "1.2.3.4")], [("connection_creation_rate", 5)])],
                  validate_only=True) == [(0, None, [("ip", "1.2.3.4")])]
    assert "/config/ips/1.2.3.4" not in broker.tree.nodes and _notifications(broker) == []
    assert _alter(broker, protocol, [([("ip", "1.2.3.4")], [("connection_creation_rate", 5)])]
                  ) == [(0, None, [("ip", "1.2.3.4")])]
    assert _describe(broker, protocol, [("ip", EXACT, "1.2.3.4")]) == (
        0, None, [((("ip", "1.2.3.4"),), {"connection_creation_rate": 5.0})])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_refused_without_the_cluster_config_operations(protocol):
    authorizer = FakeAuthorizer(deny_cluster=True)
    broker = _broker(authorizer=authorizer)
    assert _alter(broker, protocol, [([("user", "a")], [("producer_byte_rate", 1)])]) == [
        (31, "Cluster authorization failed.", [("user", "a")])]
    assert _describe(broker, protocol, []) == (31, None, None)
    assert authorizer.asked == [("ALTER_CONFIGS", ResourceType.CLUSTER),
                                ("DESCRIBE_CONFIGS", ResourceType.CLUSTER)]
    assert "/config/users/a" not in broker.tree.nodes


@pytest.mark.parametrize("api_key", [48, 49])
def test_a_malformed_native_request_is_answered_with_an_error(api_key):
    connection, transport = connect(ApiDispatcher(_broker()))
    connection.dataReceived(encode_frame(encode_request_payload(
        api_key, 0, 7, "test", {"components": 5, "entries": 5})))
    [(correlation_id, answer)] = read_native_responses(transport, [api_key])
    assert isinstance(answer, m.RequestErrorResponse) and answer.error_code == 42


@pytest.mark.parametrize("api_key", [48, 49])
def test_a_malformed_kafka_request_closes_the_connection(api_key):
    connection, transport = connect(ApiDispatcher(_broker()))
    payload = struct.pack(">hhih", api_key, 0, 7, 4) + b"test" + b"\x00\x05"
    connection.dataReceived(encode_frame(payload))
    assert read_frames(transport) == []
    assert transport.disconnecting


def test_doubles_are_stored_as_java_writes_them():
    assert [java_double_to_string(v) for v in (50.0, 1e7, 1.5e-4, 0.001, 123.456, -2.5)] == [
        "50.0", "1.0E7", "1.5E-4", "0.001", "123.456", "-2.5"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_user_made_only_for_its_client_quotas_has_no_credentials(protocol):
    """/config/users/<user>, made with no data as the parent of a (user, client-id) quota (as
    Kafka makes it), is read as a user with no configs by the SCRAM APIs too."""
    broker = _broker()
    _alter(broker, protocol, [([("user", "carol"), ("client-id", "c")],
                               [("producer_byte_rate", 1)])])
    assert broker.tree.nodes["/config/users/carol"].data == b""
    body = {"users": None}
    answer = _call(broker, protocol, 50, body, m.DescribeUserScramCredentialsRequest(users=None),
                   version=0)
    assert (int(answer.error_code), list(answer.results)) == (0, [])
    assert _describe(broker, protocol, [("user", EXACT, "carol")], strict=True) == (0, None, [])
