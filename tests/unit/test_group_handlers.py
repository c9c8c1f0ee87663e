"""The 11 group APIs through the API table and the real connection pipeline, for both wire
protocols: a broker whose group coordinator is either a stand-in that records its calls or a
real ``GroupCoordinator`` over an in-memory store (test_coordinator's), a real MetadataCache,
and a fake authorizer that refuses the group ``secret-group``, the topic ``secret``, the
transactional id ``tx-secret`` and, when told, the cluster.

Each API: served, refused per resource (Kafka 2.8's answers), and the malformed and failing
cases of the pipeline. The offset APIs' own tests are in test_group_offset_handlers."""

from types import SimpleNamespace

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalite import errors
from kafkalite.coordinator import coordinator as coordinator_module
from kafkalite.coordinator import types as t
from kafkalite.coordinator.coordinator import GroupCoordinator
from kafkalite.coordinator.types import OFFSETS_TOPIC
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.envelope import encode_request_payload
from kafkalite.protocol.framing import encode_frame
from kafkalite.protocol.messages import RequestErrorResponse
from kafkalite.security.acl import (
    ANONYMOUS, AccessControlEntry as Ace, AclOperation as Op, AclPermissionType as Perm,
    ResourcePattern, ResourceType,
)
from kafkalite.security.acl_authorizer import AclAuthorizer
from kafkalite.security.authorizer import AclSnapshot, AuthorizerSettings
from kafkalite.server.dispatch import ApiDispatcher
from kafkalite.server.metadata_cache import MetadataCache

from pipeline_driver import (connect, kafka_frame, native_frame, read_frames,
                             read_kafka_responses, read_native_responses)
from test_coordinator import FakeCodec, FakeStore, subscription

GROUP_DENIED = errors.GroupAuthorizationFailedError.code
TOPIC_DENIED = errors.TopicAuthorizationFailedError.code
NOT_AVAILABLE = errors.CoordinatorNotAvailableError.code
UNKNOWN_PARTITION = errors.UnknownTopicOrPartitionError.code
PEER = "/192.168.1.1"          # StringTransport's peer, as Kafka shows a client's host


class FakeAuthorizer:
    def __init__(self, cluster_allowed=True):
        self.cluster_allowed = cluster_allowed
        self.asked = []

    def authorize(self, principal, host, operation, resource_type, name, log_denied=True):
        self.asked.append((operation, resource_type, name))
        if resource_type == ResourceType.CLUSTER:
            return self.cluster_allowed
        return name not in ("secret-group", "secret", "tx-secret")

    def authorize_by_resource_type(self, principal, host, operation, resource_type):
        return True


class StandIn:
    """A group coordinator that records every call and answers what the test set."""

    def __init__(self):
        self.calls = []
        self.answers = {}

    def __getattr__(self, name):
        def call(*args):
            self.calls.append((name, args))
            answer = self.answers[name]
            if isinstance(answer, Exception):
                raise answer
            return defer.succeed(answer)
        return call


def _metadata_cache():
    cache = MetadataCache(1)
    cache.update(m.UpdateMetadataRequest(
        controller_id=1, controller_epoch=1,
        partition_states=[m.UpdateMetadataPartitionState(name, p, 1, 1, 0, [1], 0, [1], [])
                          for name in ("t", "secret", OFFSETS_TOPIC) for p in (0, 1)],
        live_brokers=[m.UpdateMetadataBroker(1, "10.0.0.1", 9092, None, [
            "PLAINTEXT://10.0.0.1:9092", "EXTERNAL://kafka.example.com:19092"])]))
    return cache


def _broker(coordinator, authorizer=None):
    return SimpleNamespace(
        group_coordinator=coordinator, metadata_cache=_metadata_cache(),
        offsets_store=SimpleNamespace(partition_for=lambda group: 0),
        security=SimpleNamespace(authorizer=authorizer))


@pytest.fixture
def standin():
    return StandIn()


@pytest.fixture
def authorizer():
    return FakeAuthorizer()


@pytest.fixture
def broker(standin, authorizer):
    return _broker(standin, authorizer)


def kafka(broker, api_key, version, values, listener=None):
    """The decoded Kafka answer to one request."""
    protocol, transport = connect(ApiDispatcher(broker), listener=listener)
    protocol.dataReceived(kafka_frame(api_key, version, 7, values, client_id="app"))
    [(cid, entity)] = read_kafka_responses(transport, [(api_key, version)])
    assert cid == 7
    return entity


def native(broker, request):
    """The decoded native answer to one request."""
    protocol, transport = connect(ApiDispatcher(broker))
    protocol.dataReceived(native_frame(request, 8, client_id="app"))
    [(cid, response)] = read_native_responses(transport, [request.API_KEY])
    assert cid == 8
    return response


# --- FindCoordinator ------------------------------------------------------------------------------

def test_find_coordinator_answers_the_address_on_the_clients_listener(broker):
    found = kafka(broker, ApiKey.FIND_COORDINATOR, 3, {"key": "g", "key_type": 0},
                  listener="EXTERNAL")
    assert (found.error_code, found.node_id, found.host, found.port) == (
        0, 1, "kafka.example.com", 19092)
    found = native(broker, m.FindCoordinatorRequest(key="g"))
    assert (found.error_code, found.host, found.port) == (0, "10.0.0.1", 9092)


def test_find_coordinator_refuses_by_key_type(broker):
    for protocol_answer in (
            lambda key, key_type: kafka(broker, ApiKey.FIND_COORDINATOR, 3,
                                        {"key": key, "key_type": key_type}),
            lambda key, key_type: native(broker, m.FindCoordinatorRequest(key=key,
                                                                          key_type=key_type))):
        group = protocol_answer("secret-group", 0)
        assert (group.error_code, group.node_id) == (GROUP_DENIED, -1)
        transaction = protocol_answer("tx-secret", 1)
        assert transaction.error_code == errors.TransactionalIdAuthorizationFailedError.code
        # Kafka's getErrorResponse: the error's standard message, no node
        assert (group.error_message, transaction.error_message, transaction.node_id) == (
            "Group authorization failed.", "Transactional Id authorization failed.", -1)


# --- JoinGroup, SyncGroup, Heartbeat, LeaveGroup --------------------------------------------------

def _join_values(group="g", member_id=""):
    return {"group_id": group, "session_timeout": 10000, "rebalance_timeout": 60000,
            "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"sub"}]}


@pytest.mark.parametrize("version, required", [(7, True), (4, True), (3, False), (0, False)])
def test_kafka_join_passes_the_client_and_whether_a_member_id_is_required(broker, standin,
                                                                          version, required):
    standin.answers["join_group"] = t.JoinResult(errors.MemberIdRequiredError.code,
                                                 member_id="app-1")
    answer = kafka(broker, ApiKey.JOIN_GROUP, version, _join_values())
    rebalance = 60000 if version >= 1 else 10000
    assert standin.calls == [("join_group", ("g", "", None, "app", PEER, rebalance, 10000,
                                             "consumer", [("range", b"sub")], required))]
    assert (answer.error_code, answer.member_id) == (79, "app-1")


def test_native_join_requires_a_member_id_and_converts_the_answer(broker, standin):
    standin.answers["join_group"] = t.JoinResult(0, 3, "consumer", "range", "m-1", "m-1",
                                                 (t.JoinMember("m-1", None, b"sub"),))
    response = native(broker, m.JoinGroupRequest(
        group_id="g", member_id="m-1", session_timeout_ms=10000, rebalance_timeout_ms=60000,
        protocols=[m.JoinGroupProtocol("range", b"sub")]))
    assert standin.calls == [("join_group", ("g", "m-1", None, "app", PEER, 60000, 10000,
                                             "consumer", [("range", b"sub")], True))]
    assert response == m.JoinGroupResponse(error_code=0, generation_id=3,
                                           protocol_type="consumer", protocol_name="range",
                                           leader="m-1", member_id="m-1",
                                           members=[m.JoinGroupMember("m-1", None, b"sub")])


def test_sync_heartbeat_leave(broker, standin):
    standin.answers["sync_group"] = t.SyncResult(0, "consumer", "range", b"mine")
    answer = kafka(broker, ApiKey.SYNC_GROUP, 5, {
        "group_id": "g", "generation_id": 3, "member_id": "m-1", "group_instance_id": None,
        "protocol_type": "consumer", "protocol_name": "range",
        "assignments": [{"member_id": "m-1", "assignment": b"mine"},
                        {"member_id": "m-2", "assignment": b""}]})
    assert standin.calls[-1] == ("sync_group", ("g", 3, "m-1", None, "consumer", "range",
                                                {"m-1": b"mine", "m-2": b""}))
    assert (answer.error_code, answer.assignment) == (0, b"mine")
    standin.answers["heartbeat"] = errors.RebalanceInProgressError.code
    assert native(broker, m.HeartbeatRequest(group_id="g", generation_id=3,
                                             member_id="m-1")).error_code == 27
    standin.answers["leave_group"] = (0, [t.LeaveMemberResult("m-1", None, 0),
                                          t.LeaveMemberResult("", "i", 25)])
    response = native(broker, m.LeaveGroupRequest(
        group_id="g", members=[m.LeaveGroupMember("m-1"), m.LeaveGroupMember("", "i")]))
    assert standin.calls[-1] == ("leave_group", ("g", [("m-1", None), ("", "i")]))
    assert response.members == [m.LeaveGroupMemberResponse("m-1", None, 0),
                                m.LeaveGroupMemberResponse("", "i", 25)]
    # LeaveGroup v0-2: one member, whose error is the answer's
    standin.answers["leave_group"] = (0, [t.LeaveMemberResult("m-1", None, 25)])
    answer = kafka(broker, ApiKey.LEAVE_GROUP, 2, {"group_id": "g", "member_id": "m-1"})
    assert standin.calls[-1] == ("leave_group", ("g", [("m-1", None)]))
    assert answer.error_code == 25


MEMBERSHIP = {
    ApiKey.JOIN_GROUP: (7, _join_values("secret-group"),
                        m.JoinGroupRequest(group_id="secret-group")),
    ApiKey.SYNC_GROUP: (5, {"group_id": "secret-group", "generation_id": 1, "member_id": "m",
                            "group_instance_id": None, "protocol_type": None,
                            "protocol_name": None, "assignments": []},
                        m.SyncGroupRequest(group_id="secret-group", generation_id=1,
                                           member_id="m")),
    ApiKey.HEARTBEAT: (4, {"group_id": "secret-group", "generation_id": 1, "member_id": "m",
                           "group_instance_id": None},
                       m.HeartbeatRequest(group_id="secret-group", generation_id=1,
                                          member_id="m")),
    ApiKey.LEAVE_GROUP: (4, {"group_id": "secret-group", "members": [
        {"member_id": "m", "group_instance_id": None}]},
        m.LeaveGroupRequest(group_id="secret-group", members=[m.LeaveGroupMember("m")])),
}


@pytest.mark.parametrize("api_key", list(MEMBERSHIP))
def test_membership_of_a_refused_group_is_refused_unasked(broker, standin, api_key):
    version, values, request = MEMBERSHIP[api_key]
    assert kafka(broker, api_key, version, values).error_code == GROUP_DENIED
    assert native(broker, request).error_code == GROUP_DENIED
    assert standin.calls == []


# --- OffsetCommit's requests (here and in test_group_offset_handlers) ----------------------------

def _commit_values(group="g"):
    return {"group_id": group, "generation_id_or_member_epoch": 2, "member_id": "m",
            "group_instance_id": None, "topics": [
                {"name": name, "partitions": [{"partition_index": 0, "committed_offset": 5,
                                               "committed_leader_epoch": 1,
                                               "committed_metadata": "md"}]}
                for name in ("t", "secret", "gone")]}


def _commit_request(group="g"):
    return m.OffsetCommitRequest(group_id=group, generation_id=2, member_id="m", topics=[
        m.OffsetCommitTopic(name, [m.OffsetCommitPartition(0, 5, 1, "md")])
        for name in ("t", "secret", "gone")])


def _codes(topics, name="name", partition="partition_index"):
    return {(getattr(x, name), getattr(p, partition)): p.error_code
            for x in topics for p in x.partitions}


# --- DescribeGroups, ListGroups, DeleteGroups -----------------------------------------------------

def test_describe_groups_keeps_the_requests_order(broker, standin):
    standin.answers["describe_groups"] = [
        t.DescribedGroup(0, "g", "Stable", "consumer", "range",
                         (t.DescribedMember("m-1", None, "app", PEER, b"s", b"a"),)),
        t.DescribedGroup(0, "x", "Dead", "", "")]
    answer = kafka(broker, ApiKey.DESCRIBE_GROUPS, 5, {
        "groups": ["g", "secret-group", "x"], "include_authorized_operations": False})
    assert standin.calls == [("describe_groups", (["g", "x"],))]
    assert [(g.group_id, g.error_code, g.group_state) for g in answer.groups] == [
        ("g", 0, "Stable"), ("secret-group", GROUP_DENIED, ""), ("x", 0, "Dead")]
    response = native(broker, m.DescribeGroupsRequest(groups=["g", "secret-group", "x"]))
    assert response.groups[0] == m.DescribedGroup(
        0, "g", "Stable", "consumer", "range",
        [m.DescribedGroupMember("m-1", None, "app", PEER, b"s", b"a")])
    assert response.groups[1] == m.DescribedGroup(GROUP_DENIED, "secret-group", "", "", "", [])


def test_list_groups_with_and_without_describe_on_the_cluster(standin):
    standin.answers["list_groups"] = (0, [t.ListedGroup("g", "consumer", "Stable"),
                                          t.ListedGroup("secret-group", "consumer", "Empty")])
    everything = _broker(standin, FakeAuthorizer(cluster_allowed=True))
    assert [g.group_id for g in kafka(everything, ApiKey.LIST_GROUPS, 4,
                                      {"states_filter": []}).groups] == ["g", "secret-group"]
    describable = _broker(standin, FakeAuthorizer(cluster_allowed=False))
    assert [g.group_id for g in kafka(describable, ApiKey.LIST_GROUPS, 4,
                                      {"states_filter": ["Stable"]}).groups] == ["g"]
    response = native(describable, m.ListGroupsRequest())
    assert (response.error_code, response.groups) == (0, [m.ListedGroup("g", "consumer",
                                                                        "Stable")])
    assert [args for _, args in standin.calls] == [(None,), (["Stable"],), (None,)]


def test_delete_groups(broker, standin):
    standin.answers["delete_groups"] = {"g": 0, "h": errors.NonEmptyGroupError.code}
    answer = kafka(broker, ApiKey.DELETE_GROUPS, 2, {
        "groups_names": ["g", "secret-group", "h", "g"]})
    assert standin.calls == [("delete_groups", (["g", "h"],))]
    assert [(r.group_id, r.error_code) for r in answer.results] == [
        ("g", 0), ("secret-group", GROUP_DENIED), ("h", 68)]
    response = native(broker, m.DeleteGroupsRequest(groups_names=["secret-group"]))
    assert response.results == [m.DeletableGroupResult("secret-group", GROUP_DENIED)]


# --- without a coordinator; malformed requests ----------------------------------------------------

def test_without_a_coordinator_everything_is_not_available():
    broker = _broker(None)
    broker.offsets_store = None
    samples = [
        m.JoinGroupRequest(group_id="g"),
        m.SyncGroupRequest(group_id="g", generation_id=1, member_id="m"),
        m.HeartbeatRequest(group_id="g", generation_id=1, member_id="m"),
        m.LeaveGroupRequest(group_id="g"),
        m.ListGroupsRequest(),
        m.OffsetDeleteRequest(group_id="g"),
        m.FindCoordinatorRequest(key="g"),
    ]
    for request in samples:
        assert native(broker, request).error_code == NOT_AVAILABLE, request
    fetch = native(broker, m.OffsetFetchRequest(group_id="g", topics=[
        m.OffsetFetchTopic("t", [0])]))
    assert fetch.error_code == 15 and fetch.topics[0].partitions[0].error_code == 15
    commit = native(broker, m.OffsetCommitRequest(group_id="g", topics=[
        m.OffsetCommitTopic("t", [m.OffsetCommitPartition(0, 1)])]))
    assert commit.topics[0].partitions[0].error_code == 15
    assert native(broker, m.DescribeGroupsRequest(groups=["g"])).groups[0].error_code == 15
    assert native(broker, m.DeleteGroupsRequest(groups_names=["g"])).results == [
        m.DeletableGroupResult("g", 15)]
    for version in range(0, 8):   # every JoinGroup version encodes "no protocol"
        answer = kafka(broker, ApiKey.JOIN_GROUP, version, _join_values())
        assert (answer.error_code, answer.protocol_name) == (
            15, None if version >= 7 else "")


def test_a_malformed_kafka_request_closes_the_connection(broker, standin):
    protocol, transport = connect(ApiDispatcher(broker))
    frame = kafka_frame(ApiKey.OFFSET_COMMIT, 8, 7, _commit_values())
    cut = frame[4:-6]                       # the body ends inside the topics
    protocol.dataReceived(encode_frame(cut))
    assert read_frames(transport) == [] and transport.disconnecting
    assert standin.calls == []


def test_a_malformed_native_request_answers_what_is_wrong(broker, standin):
    protocol, transport = connect(ApiDispatcher(broker))
    body = {"group_id": 7, "topics": []}    # a group id must be a string
    protocol.dataReceived(encode_frame(encode_request_payload(ApiKey.OFFSET_DELETE, 0, 9, "app",
                                                              body)))
    [(cid, response)] = read_native_responses(transport, [ApiKey.OFFSET_DELETE])
    assert cid == 9 and isinstance(response, RequestErrorResponse)
    assert response.error_code == errors.InvalidRequestError.code
    assert "group_id" in response.error_message
    assert standin.calls == []


# --- a real coordinator: one group's life over both protocols -------------------------------------

def test_a_group_served_by_a_real_coordinator(monkeypatch, authorizer):
    monkeypatch.setattr(coordinator_module, "_codec", lambda: FakeCodec)
    clock, store = Clock(), FakeStore()
    coordinator = GroupCoordinator(1, clock, store, SimpleNamespace(
        group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=1000))
    coordinator.start()
    coordinator.on_elected(0, 1)
    store.loads[-1][1].callback(({}, {}))
    broker = _broker(coordinator, authorizer)

    # a Kafka v7 client joins twice (MEMBER_ID_REQUIRED first), and is the leader
    values = dict(_join_values(), protocols=[{"name": "range", "metadata": subscription("t")}])
    first = kafka(broker, ApiKey.JOIN_GROUP, 7, values)
    assert first.error_code == errors.MemberIdRequiredError.code
    protocol, transport = connect(ApiDispatcher(broker))
    protocol.dataReceived(kafka_frame(ApiKey.JOIN_GROUP, 7, 1, dict(
        values, member_id=first.member_id), client_id="app"))
    clock.advance(0)
    [(_cid, joined)] = read_kafka_responses(transport, [(ApiKey.JOIN_GROUP, 7)])
    assert (joined.error_code, joined.leader, joined.generation_id) == (
        0, first.member_id, 1)
    synced = kafka(broker, ApiKey.SYNC_GROUP, 5, {
        "group_id": "g", "generation_id": 1, "member_id": first.member_id,
        "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
        "assignments": [{"member_id": first.member_id, "assignment": b"mine"}]})
    assert (synced.error_code, synced.assignment) == (0, b"mine")

    # it commits over Kafka's protocol; a native client reads the offsets back
    commit = dict(_commit_values(), generation_id_or_member_epoch=1, member_id=first.member_id)
    assert _codes(kafka(broker, ApiKey.OFFSET_COMMIT, 8, commit).topics)[("t", 0)] == 0
    fetched = native(broker, m.OffsetFetchRequest(group_id="g"))
    assert fetched.topics == [m.OffsetFetchTopicResponse("t", [
        m.OffsetFetchPartitionResponse(0, 5, 1, "md", 0)])]
    described = native(broker, m.DescribeGroupsRequest(groups=["g"])).groups[0]
    assert (described.group_state, [x.client_id for x in described.members],
            [x.client_host for x in described.members]) == ("Stable", ["app"], [PEER])
    listed = native(broker, m.ListGroupsRequest())
    assert listed.groups == [m.ListedGroup("g", "consumer", "Stable")]

    # it leaves (v4), and the empty group is deleted
    left = kafka(broker, ApiKey.LEAVE_GROUP, 4, {"group_id": "g", "members": [
        {"member_id": first.member_id, "group_instance_id": None}]})
    assert (left.error_code, [x.error_code for x in left.members]) == (0, [0])
    deleted = native(broker, m.DeleteGroupsRequest(groups_names=["g"]))
    assert deleted.results == [m.DeletableGroupResult("g", 0)]


# --- with kafkalite's AclAuthorizer: KIP-430 and FindCoordinator's key types ----------------------

GROUP_OPS = sum(1 << op for op in (3, 8, 6))       # Read, Describe, Delete
NOT_REQUESTED = -(1 << 31)


def _acl_authorizer(acls: dict, allow_if_no_acl: bool = True):
    authorizer = AclAuthorizer(AuthorizerSettings(allow_everyone_if_no_acl_found=allow_if_no_acl),
                               None, None)
    authorizer.snapshot = AclSnapshot(acls)
    return authorizer


def _deny(name: str, *operations) -> dict:
    """ACLs allowing the anonymous client All on group ``name`` but ``operations`` (an ACL that
    applies ends allow.everyone.if.no.acl.found's grant for that group)."""
    return {ResourcePattern(ResourceType.GROUP, name): [Ace(ANONYMOUS, "*", Op.ALL, Perm.ALLOW)]
            + [Ace(ANONYMOUS, "*", op, Perm.DENY) for op in operations]}


def test_describe_groups_reports_operations_of_groups_described_without_error():
    class Groups:
        def describe_groups(self, group_ids):
            return defer.succeed([t.DescribedGroup(0 if g != "broken" else 15, g, "Empty", "",
                                                   "") for g in group_ids])
    broker = _broker(Groups(), _acl_authorizer({**_deny("ops", Op.DELETE),
                                                **_deny("secret", Op.DESCRIBE)}))

    def described(include, version=3):
        answer = kafka(broker, ApiKey.DESCRIBE_GROUPS, version, {
            "groups": ["ops", "plain", "broken", "secret"],
            "include_authorized_operations": include})
        return {g.group_id: (g.error_code, g.authorized_operations) for g in answer.groups}

    assert described(True) == {
        "ops": (0, GROUP_OPS & ~(1 << Op.DELETE)), "plain": (0, GROUP_OPS),
        "broken": (15, NOT_REQUESTED), "secret": (GROUP_DENIED, NOT_REQUESTED)}
    assert {g: ops for g, (_, ops) in described(False).items()} == dict.fromkeys(
        ["ops", "plain", "broken", "secret"], NOT_REQUESTED)
    response = native(broker, m.DescribeGroupsRequest(groups=["ops"],
                                                      include_authorized_operations=True))
    assert response.groups[0].authorized_operations == GROUP_OPS & ~(1 << Op.DELETE)


def test_find_coordinator_of_an_unknown_key_type_is_an_invalid_request_asking_no_acl(standin):
    everything_denied = _acl_authorizer({}, allow_if_no_acl=False)
    for authorizer in (None, everything_denied):
        answer = kafka(_broker(standin, authorizer), ApiKey.FIND_COORDINATOR, 3,
                       {"key": "g", "key_type": 7})
        assert answer.error_code == errors.InvalidRequestError.code
        assert (answer.node_id, answer.host, answer.port) == (-1, "", -1)
        assert answer.error_message.startswith("This most likely occurs because of a request")


def test_find_coordinator_of_the_empty_group_id(standin):
    answer = kafka(_broker(standin), ApiKey.FIND_COORDINATOR, 3, {"key": "", "key_type": 0})
    assert (answer.error_code, answer.node_id, answer.host, answer.port) == (
        0, 1, "10.0.0.1", 9092)
    denied = kafka(_broker(standin, _acl_authorizer({}, allow_if_no_acl=False)),
                   ApiKey.FIND_COORDINATOR, 3, {"key": "", "key_type": 0})
    assert denied.error_code == GROUP_DENIED
