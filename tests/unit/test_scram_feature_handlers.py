"""DescribeUserScramCredentials, AlterUserScramCredentials, UpdateFeatures and ApiVersions' features
driven through the API table and the real connection pipeline, for both protocols, over an
in-memory ZooKeeper (``controller_fakes``): what lands in ``/config/users`` and ``/feature``, and
Kafka 2.8's answers, refusals (per request, per user) and errors."""

from __future__ import annotations

import hashlib
import json
import struct
from types import SimpleNamespace

import pytest
from controller_fakes import DeferredZk, ZkTree
from handler_fakes import AclTakingZk
from handler_fakes import ClusterAuthorizer as FakeAuthorizer
from pipeline_driver import (connect, kafka_frame, native_frame, read_frames,
                             read_kafka_responses, read_native_responses)
from scramp.core import hi
from twisted.internet.task import Clock

from kafkalite.config import BrokerConfig
from kafkalite.protocol import messages as m
from kafkalite.protocol.envelope import encode_request_payload
from kafkalite.protocol.framing import encode_frame
from kafkalite.security.acl import ResourceType
from kafkalite.security.scram import credential_from_string, make_credential
from kafkalite.server.dispatch import ApiDispatcher
from kafkalite.server.feature_cache import FinalizedFeatureCache
from zk_schema.features import FeatureZNode

KAFKA, NATIVE = "kafka", "native"
PROTOCOLS = [KAFKA, NATIVE]
SHA256, SHA512 = 1, 2
SALT = b"0123456789abcdef"


def _broker(active=True, authorizer=None, feature_node: FeatureZNode | None = FeatureZNode()):
    clock = Clock()
    tree = ZkTree(clock)
    zk = AclTakingZk(tree)
    if feature_node is not None:          # as the controller leaves it on election
        zk.create("/feature", feature_node.encode())
    cache = FinalizedFeatureCache()
    cache.start(zk)
    clock.advance(0)
    return SimpleNamespace(
        broker_id=1, config=BrokerConfig(broker_id=1, zookeeper_connect="zk"), reactor=clock,
        zk=zk, deferred_zk=DeferredZk(zk), controller=SimpleNamespace(is_active=active),
        feature_cache=cache, security=SimpleNamespace(authorizer=authorizer), tree=tree)


def _call(broker, protocol, api_key, kafka_body, native_request, version=0):
    connection, transport = connect(ApiDispatcher(broker))
    if protocol == KAFKA:
        connection.dataReceived(kafka_frame(api_key, version, 7, kafka_body))
    else:
        connection.dataReceived(native_frame(native_request, 7))
    broker.reactor.advance(0)              # ZooKeeper watches deliver through the clock
    if protocol == KAFKA:
        [(correlation_id, answer)] = read_kafka_responses(transport, [(api_key, version)])
    else:
        [(correlation_id, answer)] = read_native_responses(transport, [api_key])
    assert correlation_id == 7
    return answer


def _salted(mechanism: int, password: str, iterations: int) -> bytes:
    digest = hashlib.sha256 if mechanism == SHA256 else hashlib.sha512
    return hi(digest, password.encode(), SALT, iterations)


def _alter(broker, protocol, upsertions=(), deletions=()):
    body = {"deletions": [{"name": n, "mechanism": k} for n, k in deletions],
            "upsertions": [{"name": n, "mechanism": k, "iterations": i, "salt": SALT,
                            "salted_password": _salted(k, "pw", 4096)}
                           for n, k, i in upsertions]}
    native = m.AlterUserScramCredentialsRequest(
        deletions=[m.ScramCredentialDeletion(n, k) for n, k in deletions],
        upsertions=[m.ScramCredentialUpsertion(n, k, i, SALT, _salted(k, "pw", 4096))
                    for n, k, i in upsertions])
    answer = _call(broker, protocol, 51, body, native)
    return [(r.user, int(r.error_code), r.error_message) for r in answer.results]


def _describe(broker, protocol, users):
    body = {"users": None if users is None else [{"name": u} for u in users]}
    answer = _call(broker, protocol, 50, body, m.DescribeUserScramCredentialsRequest(users=users))
    return (int(answer.error_code), answer.error_message,
            [(r.user, int(r.error_code), r.error_message,
              [(c.mechanism, c.iterations) for c in r.credential_infos])
             for r in answer.results])


def _user_znode(broker, child):
    return json.loads(broker.tree.nodes[f"/config/users/{child}"].data)


def _notifications(broker):
    return [json.loads(broker.tree.nodes[f"/config/changes/{c}"].data)
            for c in broker.tree.children("/config/changes")]


# --- AlterUserScramCredentials / DescribeUserScramCredentials ------------------------------------

@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_credential_written_is_kafkas_and_described(protocol):
    broker = _broker()
    assert _alter(broker, protocol, [("alice", SHA256, 8192), ("alice", SHA512, 4096),
                                     ("CN=bob,O=x", SHA512, 4096)]) == [
        ("alice", 0, ""), ("CN=bob,O=x", 0, "")]
    stored = _user_znode(broker, "alice")
    assert stored["version"] == 1 and sorted(stored["config"]) == ["SCRAM-SHA-256",
                                                                    "SCRAM-SHA-512"]
    # the broker's salt and keys: the same credential as the password would give
    credential = credential_from_string(stored["config"]["SCRAM-SHA-256"])
    assert credential.iterations == 8192
    expected = make_credential("SCRAM-SHA-256", "pw", 4096, salt=SALT)
    assert (credential.salt, credential.stored_key, credential.server_key) == (
        expected.salt, expected.stored_key, expected.server_key)
    assert _notifications(broker) == [{"version": 2, "entity_path": "users/alice"},
                                      {"version": 2, "entity_path": "users/CN%3Dbob%2CO%3Dx"}]
    assert _describe(broker, protocol, ["alice"]) == (0, "", [
        ("alice", 0, "", [(SHA256, 8192), (SHA512, 4096)])])
    # every user: sorted, and named as their znodes are (Kafka 2.8 does not desanitize them)
    assert _describe(broker, protocol, None)[2] == [
        ("CN%3Dbob%2CO%3Dx", 0, "", [(SHA512, 4096)]),
        ("alice", 0, "", [(SHA256, 8192), (SHA512, 4096)])]
    assert _describe(broker, protocol, ["CN=bob,O=x"])[2] == [
        ("CN=bob,O=x", 0, "", [(SHA512, 4096)])]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_deleting_the_last_credential_keeps_an_empty_znode(protocol):
    broker = _broker()
    _alter(broker, protocol, [("alice", SHA256, 4096)])
    assert _alter(broker, protocol, deletions=[("alice", SHA256)]) == [("alice", 0, "")]
    assert _user_znode(broker, "alice") == {"version": 1, "config": {}}
    assert _describe(broker, protocol, None)[2] == []
    assert _describe(broker, protocol, ["alice"])[2] == [
        ("alice", 91, "Attempt to describe a user credential that does not exist: alice", [])]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_alterations_refused_per_user_with_kafkas_errors(protocol):
    broker = _broker()
    _alter(broker, protocol, [("dave", SHA256, 4096)])
    results = _alter(broker, protocol, [
        ("few", SHA256, 4095), ("many", SHA512, 16385), ("odd", 7, 4096), ("", SHA256, 4096),
        ("twice", SHA256, 4096), ("twice", SHA256, 8192), ("ok", SHA256, 4096),
        ("dave", SHA512, 4096)], deletions=[("gone", SHA256), ("dave", SHA256), ("oddd", 0)])
    assert results == [
        ("oddd", 33, "Unknown SCRAM mechanism"),
        ("few", 93, "Too few iterations"), ("many", 93, "Too many iterations"),
        ("odd", 33, "Unknown SCRAM mechanism"), ("", 93, "Username must not be empty"),
        ("twice", 92, "A user credential cannot be altered twice in the same request"),
        ("gone", 91, "Attempt to delete a user credential that does not exist"),
        ("ok", 0, ""), ("dave", 0, "")]
    assert sorted(broker.tree.children("/config/users")) == ["dave", "ok"]
    assert list(_user_znode(broker, "dave")["config"]) == ["SCRAM-SHA-512"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_describe_errors_per_user(protocol):
    broker = _broker()
    _alter(broker, protocol, [("alice", SHA256, 4096)])
    assert _describe(broker, protocol, ["nobody", "", "alice", "x", "x"]) == (0, "", [
        ("nobody", 91, "Attempt to describe a user credential that does not exist: nobody", []),
        ("", 91, "Username must not be empty", []),
        ("alice", 0, "", [(SHA256, 4096)]),
        ("x", 92, "Cannot describe SCRAM credentials for the same user twice in a single "
                  "request: x", [])])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_alter_only_at_the_controller_describe_anywhere(protocol):
    broker = _broker(active=False)
    assert _alter(broker, protocol, [("b", SHA256, 4096), ("a", SHA256, 4096)],
                  deletions=[("b", SHA512)]) == [("a", 41, None), ("b", 41, None)]
    assert "/config/users/a" not in broker.tree.nodes
    assert _describe(broker, protocol, None) == (0, "", [])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_refused_without_the_cluster_operation(protocol):
    authorizer = FakeAuthorizer(deny_cluster=True)
    broker = _broker(authorizer=authorizer)
    assert _alter(broker, protocol, [("a", SHA256, 4096)]) == [("a", 31, None)]
    assert _describe(broker, protocol, ["a"]) == (31, None, [])
    assert authorizer.asked == [("ALTER", ResourceType.CLUSTER),
                                ("DESCRIBE", ResourceType.CLUSTER)]


@pytest.mark.parametrize("api_key", [50, 51, 57])
def test_a_malformed_native_request_is_answered_with_an_error(api_key):
    connection, transport = connect(ApiDispatcher(_broker()))
    connection.dataReceived(encode_frame(encode_request_payload(
        api_key, 0, 7, "test", {"users": 5, "upsertions": 5, "feature_updates": 5})))
    [(correlation_id, answer)] = read_native_responses(transport, [api_key])
    assert isinstance(answer, m.RequestErrorResponse) and answer.error_code == 42


@pytest.mark.parametrize("api_key", [50, 51, 57])
def test_a_malformed_kafka_request_closes_the_connection(api_key):
    connection, transport = connect(ApiDispatcher(_broker()))
    payload = struct.pack(">hhih", api_key, 0, 7, 4) + b"test" + b"\x00\x05"
    connection.dataReceived(encode_frame(payload))
    assert read_frames(transport) == []
    assert transport.disconnecting


# --- UpdateFeatures ------------------------------------------------------------------------------

def _update(broker, protocol, updates, timeout_ms=1000):
    body = {"timeout": timeout_ms, "feature_updates": [
        {"feature": f, "max_version_level": level, "allow_downgrade": down}
        for f, level, down in updates]}
    native = m.UpdateFeaturesRequest(timeout_ms=timeout_ms, feature_updates=[
        m.FeatureUpdate(f, level, down) for f, level, down in updates])
    answer = _call(broker, protocol, 57, body, native)
    return (int(answer.error_code), answer.error_message,
            [(r.feature, int(r.error_code), r.error_message) for r in answer.results])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_kafka_28_supports_no_feature(protocol):
    broker = _broker()
    # in Kafka's order: its results are a Scala HashMap (by the names' hashes)
    assert _update(broker, protocol, [("f", 1, False), ("g", 0, True), ("h", 0, False),
                                      ("", 1, False)]) == (0, None, [
        ("", 42, "Feature name can not be empty."),
        ("f", 42, "Could not apply finalized feature update because the provided feature is "
                  "not supported."),
        ("g", 42, "Can not delete non-existing finalized feature."),
        ("h", 42, "Can not provide maxVersionLevel: 0 less than 1 without setting the "
                  "allowDowngrade flag to true in the request.")])
    assert _update(broker, protocol, []) == (0, None, [])
    assert broker.tree.nodes["/feature"].version == 0          # never rewritten


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_finalized_feature_can_be_deleted_and_checked(protocol):
    broker = _broker(feature_node=FeatureZNode(features={"f": (1, 3)}))
    assert _update(broker, protocol, [("f", 3, False), ("f", 2, False)])[2] == [
        ("f", 42, "Can not downgrade finalized feature from existing maxVersionLevel:3 to "
                  "provided maxVersionLevel:2 without setting the allowDowngrade flag in the "
                  "request.")]
    assert _update(broker, protocol, [("f", 4, True)])[2] == [
        ("f", 42, "When the allowDowngrade flag set in the request, the provided "
                  "maxVersionLevel:4 can not be greater than existing maxVersionLevel:3.")]
    assert _update(broker, protocol, [("f", 0, True)]) == (0, None, [("f", 0, "NONE")])
    node = FeatureZNode.decode(broker.tree.nodes["/feature"].data)
    assert (node.status, node.features) == (1, {})
    assert (broker.feature_cache.features, broker.feature_cache.epoch) == ({}, 1)


def test_a_write_never_read_back_fails_the_valid_updates():
    """The answer waits for this broker's cache to read ``/feature`` back; past the request's
    timeout every valid update is FEATURE_UPDATE_FAILED (Kafka's waitUntilEpochOrThrow)."""
    broker = _broker(feature_node=FeatureZNode(features={"f": (1, 3), "g": (1, 1)}))
    broker.feature_cache.stop()                       # the cache no longer follows the znode
    connection, transport = connect(ApiDispatcher(broker))
    connection.dataReceived(native_frame(m.UpdateFeaturesRequest(
        timeout_ms=2000, feature_updates=[m.FeatureUpdate("f", 0, True),
                                          m.FeatureUpdate("g", 5, False)]), 7))
    broker.reactor.advance(0)
    assert read_frames(transport, clear=False) == []       # waiting for the cache
    broker.reactor.advance(2)
    [(_, answer)] = read_native_responses(transport, [57])
    assert [(r.feature, r.error_code, r.error_message) for r in answer.results] == [
        ("f", 96, "Unable to update finalized features due to an unexpected server error."),
        ("g", 42, "Could not apply finalized feature update because the provided feature is "
                  "not supported.")]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_update_features_refusals(protocol):
    assert _update(_broker(authorizer=FakeAuthorizer(deny_cluster=True)), protocol,
                   [("f", 1, False)]) == (31, "Cluster authorization failed.", [])
    assert _update(_broker(active=False), protocol, [("f", 1, False)]) == (
        41, "This is not the correct controller for this cluster.", [])


def test_results_in_scala_hash_map_order():
    from kafkalite.server.feature_apis import scala_hash_order
    assert scala_hash_order(["h", "g", "f", ""]) == ["", "f", "g", "h"]
    # "a" (97) and "q" (113) share bucket 1 of 16, ordered by hash; "b" (98) is bucket 2
    assert scala_hash_order(["b", "q", "a"]) == ["a", "q", "b"]


# --- ApiVersions ---------------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_api_versions_reports_the_finalized_features(protocol):
    def features(broker):
        answer = _call(broker, protocol, 18, {"client_software_name": "t",
                                              "client_software_version": "1"},
                       m.ApiVersionsRequest(), version=3)
        return (list(answer.supported_features), answer.finalized_features_epoch,
                [(f.name, f.min_version_level, f.max_version_level)
                 for f in answer.finalized_features])
    assert features(_broker()) == ([], 0, [])              # Kafka 2.8 after election
    assert features(_broker(feature_node=None)) == ([], -1, [])
    assert features(_broker(feature_node=FeatureZNode(features={"f": (1, 2)}))) == (
        [], 0, [("f", 1, 2)])
    assert features(_broker(feature_node=FeatureZNode(status=0))) == ([], -1, [])
