"""What Kafka 2.8's KafkaApis answers where kafkalite once differed, with kio requests fed to the
Kafka-protocol handlers and kafkalite's own AclAuthorizer deciding:

- KIP-430's authorized operations (Metadata v8+, DescribeCluster, DescribeGroups v3+): the bit
  field of the operations Kafka lists for the resource type that the principal may do; every one
  of them without an authorizer; "not requested" (Int.MinValue) unless asked or when refused;
- OffsetForLeaderEpoch: ClusterAction on the cluster serves every topic unchecked, else Describe
  per topic;
- FindCoordinator: a key type other than 0 or 1 is INVALID_REQUEST (no ACL is asked), and the
  empty group id has a coordinator.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalite import errors
from kafkalite.coordinator.types import OFFSETS_TOPIC, DescribedGroup
from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka import codec
from kafkalite.security.acl import (
    AccessControlEntry as Ace, AclOperation as Op, AclPermissionType as Perm,
    ResourcePattern, ResourceType as Rt,
)
from kafkalite.security.acl_authorizer import AclAuthorizer
from kafkalite.security.authorizer import AclSnapshot, AuthorizerSettings
from kafkalite.server.apis import KafkaApis
from kafkalite.server.kafka_apis import KafkaProtocolApis
from kafkalite.server.metadata_cache import MetadataCache

NOT_REQUESTED = -(1 << 31)
ALICE = "User:alice"
# Kafka's AclEntry.supportedOperations as bits (1 << AclOperation code)
TOPIC_OPS = sum(1 << op for op in (3, 4, 5, 8, 6, 7, 10, 11))
CLUSTER_OPS = sum(1 << op for op in (5, 9, 10, 11, 12, 7, 8))
GROUP_OPS = sum(1 << op for op in (3, 8, 6))


def _authorizer(acls: dict, allow_if_no_acl: bool = True) -> AclAuthorizer:
    authorizer = AclAuthorizer(AuthorizerSettings(allow_everyone_if_no_acl_found=allow_if_no_acl),
                               None, None)
    authorizer.snapshot = AclSnapshot(acls)
    return authorizer


def _deny(resource_type: Rt, name: str, *operations: Op) -> dict:
    """ACLs allowing alice All on the resource but ``operations`` (an ACL that applies ends
    allow.everyone.if.no.acl.found's grant for that resource)."""
    return {ResourcePattern(resource_type, name): [Ace(ALICE, "*", Op.ALL, Perm.ALLOW)] + [
        Ace(ALICE, "*", op, Perm.DENY) for op in operations]}


class _Replicas:
    """Serves whatever OffsetForLeaderEpoch reaches it: end offset 2 of epoch 0."""

    def offsets_for_leader_epoch(self, request):
        return m.OffsetForLeaderEpochResponse(topics=[m.OffsetForLeaderEpochTopicResponse(
            t.topic, [m.OffsetForLeaderEpochPartitionResponse(p.partition, 0, 0, 2)
                      for p in t.partitions]) for t in request.topics])


class _Groups:
    def describe_groups(self, group_ids):
        return defer.succeed([DescribedGroup(0 if g != "broken" else 15, g, "Empty", "", "")
                              for g in group_ids])


def _apis(authorizer=None) -> KafkaProtocolApis:
    cache = MetadataCache(1)
    cache.update(m.UpdateMetadataRequest(
        controller_id=1, controller_epoch=1,
        partition_states=[m.UpdateMetadataPartitionState(name, 0, 1, 1, 0, [1], 0, [1], [])
                          for name in ("orders", "payments", OFFSETS_TOPIC)],
        live_brokers=[m.UpdateMetadataBroker(1, "10.0.0.1", 9092)]))
    broker = SimpleNamespace(
        config=SimpleNamespace(auto_create_topics_enable=False), reactor=Clock(),
        replica_manager=_Replicas(), metadata_cache=cache, cluster_id="c",
        security=SimpleNamespace(authorizer=authorizer), group_coordinator=_Groups(),
        offsets_store=SimpleNamespace(partition_for=lambda group: 0))
    return KafkaProtocolApis(broker, KafkaApis(broker))


def _answer(result):
    out = []
    defer.maybeDeferred(lambda: result).addBoth(out.append)
    [value] = out
    return value


def _request(api_key: int, version: int, body: dict):
    """A real kio request, as the broker decodes it off the wire."""
    return codec.decode_request(codec.encode_request(api_key, version, 7, "test", body))[1]


def _round_trip(api_key: int, version: int, values: dict):
    """The answer as a client decodes it."""
    return codec.decode_response(api_key, version,
                                 codec.encode_response(api_key, version, 7, values))[1]


ALICE_CONNECTION = SimpleNamespace(principal=ALICE)


def _metadata(apis, version, topics, include_cluster=True, include_topics=True):
    body = {"topics": [{"name": name} for name in topics], "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": include_cluster,
            "include_topic_authorized_operations": include_topics}
    if version >= 10:
        body["topics"] = [{"name": name, "topic_id": None} for name in topics]
    if version >= 11:
        del body["include_cluster_authorized_operations"]
    answer = apis.metadata_request(_request(3, version, body), version, ALICE_CONNECTION)
    response = _round_trip(3, version, answer)
    return (getattr(response, "cluster_authorized_operations", None),
            {t.name: t.topic_authorized_operations for t in response.topics})


# --- KIP-430: authorized operations ------------------------------------------------------------

@pytest.mark.parametrize("version", [8, 9, 10, 11])
def test_metadata_without_an_authorizer_answers_every_operation(version):
    cluster, topics = _metadata(_apis(), version, ["orders"])
    assert cluster == (CLUSTER_OPS if version <= 10 else None)   # v11 cannot ask for it
    assert topics == {"orders": TOPIC_OPS}


def test_metadata_answers_not_requested_unless_asked():
    assert _metadata(_apis(), 9, ["orders"], False, False) == (NOT_REQUESTED,
                                                                {"orders": NOT_REQUESTED})


def test_metadata_operations_are_what_the_authorizer_allows():
    apis = _apis(_authorizer({**_deny(Rt.TOPIC, "orders", Op.WRITE),
                              **_deny(Rt.TOPIC, "payments", Op.DESCRIBE),
                              **_deny(Rt.CLUSTER, "kafka-cluster", Op.ALTER)}))
    cluster, topics = _metadata(apis, 9, ["orders", "payments", "missing"])
    assert cluster == CLUSTER_OPS & ~(1 << Op.ALTER)
    # a refused topic keeps "not requested"; an unknown one the client may Describe is
    # answered (Kafka computes them for every topic it looked up)
    assert topics == {"orders": TOPIC_OPS & ~(1 << Op.WRITE), "payments": NOT_REQUESTED,
                      "missing": TOPIC_OPS}


def test_cluster_operations_are_none_without_describe_on_the_cluster():
    apis = _apis(_authorizer(_deny(Rt.CLUSTER, "kafka-cluster", Op.DESCRIBE)))
    assert _metadata(apis, 9, ["orders"])[0] == 0
    answer = apis.describe_cluster(_request(60, 0, {
        "include_cluster_authorized_operations": True}), 0, ALICE_CONNECTION)
    assert _round_trip(60, 0, answer).cluster_authorized_operations == 0


@pytest.mark.parametrize("include, expected", [(True, CLUSTER_OPS), (False, NOT_REQUESTED)])
def test_describe_cluster(include, expected):
    apis = _apis()
    answer = apis.describe_cluster(_request(60, 0, {
        "include_cluster_authorized_operations": include}), 0, ALICE_CONNECTION)
    assert _round_trip(60, 0, answer).cluster_authorized_operations == expected


def test_describe_groups_reports_operations_of_groups_described_without_error():
    apis = _apis(_authorizer({**_deny(Rt.GROUP, "ops", Op.DELETE),
                              **_deny(Rt.GROUP, "secret", Op.DESCRIBE)}))

    def described(include):
        body = {"groups": ["ops", "plain", "broken", "secret"],
                "include_authorized_operations": include}
        answer = _answer(apis.handle(15, 3, _request(15, 3, body), ALICE_CONNECTION))
        return {g.group_id: (g.error_code, g.authorized_operations)
                for g in _round_trip(15, 3, answer).groups}

    assert described(True) == {
        "ops": (0, GROUP_OPS & ~(1 << Op.DELETE)), "plain": (0, GROUP_OPS),
        "broken": (15, NOT_REQUESTED),
        "secret": (errors.GroupAuthorizationFailedError.code, NOT_REQUESTED)}
    assert {g: ops for g, (_, ops) in described(False).items()} == dict.fromkeys(
        ["ops", "plain", "broken", "secret"], NOT_REQUESTED)


# --- OffsetForLeaderEpoch ------------------------------------------------------------------------

def _epoch_errors(authorizer):
    body = {"replica_id": -1, "topics": [
        {"topic": t, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                     "leader_epoch": 0}]} for t in ("orders", "payments")]}
    answer = _apis(authorizer).offset_for_leader_epoch(_request(23, 3, body), 3,
                                                       ALICE_CONNECTION)
    return {t["topic"]: t["partitions"][0]["error_code"] for t in answer["topics"]}


def test_offset_for_leader_epoch_with_cluster_action_checks_no_topic():
    # ClusterAction granted by allow.everyone.if.no.acl.found, Describe on orders denied
    assert _epoch_errors(_authorizer(_deny(Rt.TOPIC, "orders", Op.DESCRIBE))) == {
        "orders": 0, "payments": 0}


def test_offset_for_leader_epoch_without_cluster_action_checks_describe_per_topic():
    denied = errors.TopicAuthorizationFailedError.code
    acls = {**_deny(Rt.TOPIC, "orders", Op.DESCRIBE),
            **_deny(Rt.CLUSTER, "kafka-cluster", Op.CLUSTER_ACTION)}
    assert _epoch_errors(_authorizer(acls)) == {"orders": denied, "payments": 0}


# --- FindCoordinator -----------------------------------------------------------------------------

def _find(apis, key, key_type):
    answer = _answer(apis.find_coordinator(_request(10, 3, {"key": key, "key_type": key_type}),
                                           3, ALICE_CONNECTION))
    return _round_trip(10, 3, answer)


def test_find_coordinator_of_an_unknown_key_type_is_an_invalid_request_asking_no_acl():
    everything_denied = _authorizer({}, allow_if_no_acl=False)
    for apis in (_apis(), _apis(everything_denied)):
        answer = _find(apis, "g", 7)
        assert answer.error_code == errors.InvalidRequestError.code
        assert (answer.node_id, answer.host, answer.port) == (-1, "", -1)
        assert answer.error_message.startswith("This most likely occurs because of a request")


def test_find_coordinator_of_the_empty_group_id():
    answer = _find(_apis(), "", 0)
    assert (answer.error_code, answer.node_id, answer.host, answer.port) == (
        0, 1, "10.0.0.1", 9092)
    denied = _find(_apis(_authorizer({}, allow_if_no_acl=False)), "", 0)
    assert denied.error_code == errors.GroupAuthorizationFailedError.code
