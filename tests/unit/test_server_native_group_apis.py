"""The native group requests' handlers (server.native_group_apis) over a stand-in coordinator:
requests become the GroupCoordinator's calls, its answers the native responses, and a broker
without a coordinator answers COORDINATOR_NOT_AVAILABLE."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalite import errors
from kafkalite.coordinator import types as t
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.server import native_group_apis


class StandIn:
    """Records every call; answers what the test set in ``answers``."""

    def __init__(self):
        self.calls = []
        self.answers = {}

    def __getattr__(self, name):
        def call(*args):
            self.calls.append((name, args))
            return defer.succeed(self.answers[name])
        return call


def _result(d):
    out = []
    d.addBoth(out.append)
    assert out, "the Deferred did not fire"
    return out[0]


@pytest.fixture
def broker():
    clock = Clock()
    clock.advance(1700000000)
    return SimpleNamespace(reactor=clock, group_coordinator=StandIn())


def handlers(broker):
    return native_group_apis.handlers(broker)


def test_join_passes_the_client_and_converts_the_answer(broker):
    gc = broker.group_coordinator
    gc.answers["join_group"] = t.JoinResult(0, 3, "consumer", "range", "m-1", "m-1",
                                            (t.JoinMember("m-1", None, b"sub"),))
    header = SimpleNamespace(client_id="app")
    protocol = SimpleNamespace(transport=SimpleNamespace(
        getPeer=lambda: SimpleNamespace(host="10.0.0.7")))
    request = m.JoinGroupRequest(group_id="g", member_id="m-1", session_timeout_ms=10000,
                                 rebalance_timeout_ms=60000,
                                 protocols=[m.JoinGroupProtocol("range", b"sub")])
    response = _result(handlers(broker)[ApiKey.JOIN_GROUP](request, header, protocol))
    assert gc.calls == [("join_group", ("g", "m-1", None, "app", "/10.0.0.7", 60000, 10000,
                                        "consumer", [("range", b"sub")], True))]
    assert response == m.JoinGroupResponse(error_code=0, generation_id=3,
                                           protocol_type="consumer", protocol_name="range",
                                           leader="m-1", member_id="m-1",
                                           members=[m.JoinGroupMember("m-1", None, b"sub")])


def test_sync_heartbeat_leave(broker):
    gc = broker.group_coordinator
    h = handlers(broker)
    gc.answers["sync_group"] = t.SyncResult(0, "consumer", "range", b"mine")
    response = _result(h[ApiKey.SYNC_GROUP](m.SyncGroupRequest(
        group_id="g", generation_id=3, member_id="m-1", protocol_type="consumer",
        protocol_name="range", assignments=[m.SyncGroupAssignment("m-1", b"mine"),
                                            m.SyncGroupAssignment("m-2", b"")])))
    assert gc.calls[-1] == ("sync_group", ("g", 3, "m-1", None, "consumer", "range",
                                           {"m-1": b"mine", "m-2": b""}))
    assert response.assignment == b"mine" and response.error_code == 0
    gc.answers["heartbeat"] = errors.RebalanceInProgressError.code
    assert _result(h[ApiKey.HEARTBEAT](m.HeartbeatRequest(
        group_id="g", generation_id=3, member_id="m-1"))).error_code == 27
    gc.answers["leave_group"] = (0, [t.LeaveMemberResult("m-1", None, 0),
                                     t.LeaveMemberResult("", "i", 25)])
    response = _result(h[ApiKey.LEAVE_GROUP](m.LeaveGroupRequest(
        group_id="g", members=[m.LeaveGroupMember("m-1"), m.LeaveGroupMember("", "i")])))
    assert gc.calls[-1] == ("leave_group", ("g", [("m-1", None), ("", "i")]))
    assert response.members == [m.LeaveGroupMemberResponse("m-1", None, 0),
                                m.LeaveGroupMemberResponse("", "i", 25)]


def test_offsets(broker):
    gc = broker.group_coordinator
    h = handlers(broker)
    gc.answers["commit_offsets"] = {("t", 0): 0, ("t", 1): 12}
    response = _result(h[ApiKey.OFFSET_COMMIT](m.OffsetCommitRequest(
        group_id="g", generation_id=2, member_id="m", topics=[m.OffsetCommitTopic("t", [
            m.OffsetCommitPartition(0, 5, 1, "md"), m.OffsetCommitPartition(1, 6)])])))
    name, args = gc.calls[-1]
    assert args[:5] == ("g", 2, "m", None, -1)
    assert args[5] == {("t", 0): t.OffsetAndMetadata(5, 1, "md"),
                       ("t", 1): t.OffsetAndMetadata(6, -1, "")}
    assert response.topics == [m.OffsetCommitTopicResponse("t", [
        m.OffsetCommitPartitionResponse(0, 0), m.OffsetCommitPartitionResponse(1, 12)])]

    gc.answers["fetch_offsets"] = (0, {("t", 0): t.FetchedOffset(5, 1, "md", 0)})
    response = _result(h[ApiKey.OFFSET_FETCH](m.OffsetFetchRequest(
        group_id="g", topics=[m.OffsetFetchTopic("t", [0, 1])])))
    assert gc.calls[-1] == ("fetch_offsets", ("g", [("t", 0), ("t", 1)]))
    assert response.topics == [m.OffsetFetchTopicResponse("t", [
        m.OffsetFetchPartitionResponse(0, 5, 1, "md", 0),
        m.OffsetFetchPartitionResponse(1, -1, -1, None, 0)])]
    response = _result(h[ApiKey.OFFSET_FETCH](m.OffsetFetchRequest(group_id="g")))
    assert gc.calls[-1] == ("fetch_offsets", ("g", None))
    assert [p.partition for tr in response.topics for p in tr.partitions] == [0]

    gc.answers["delete_offsets"] = (0, {("t", 0): 86})
    response = _result(h[ApiKey.OFFSET_DELETE](m.OffsetDeleteRequest(
        group_id="g", topics=[m.OffsetDeleteTopic("t", [0, 1])])))
    assert response.topics == [m.OffsetDeleteTopicResponse("t", [
        m.OffsetDeletePartitionResponse(0, 86), m.OffsetDeletePartitionResponse(1, 0)])]


def test_group_listings(broker):
    gc = broker.group_coordinator
    h = handlers(broker)
    gc.answers["describe_groups"] = [
        t.DescribedGroup(0, "g", "Stable", "consumer", "range",
                         (t.DescribedMember("m-1", None, "app", "/10.0.0.7", b"s", b"a"),)),
        t.DescribedGroup(0, "x", "Dead", "", "")]
    response = _result(h[ApiKey.DESCRIBE_GROUPS](m.DescribeGroupsRequest(groups=["g", "x"])))
    assert response.groups[0] == m.DescribedGroup(
        0, "g", "Stable", "consumer", "range",
        [m.DescribedGroupMember("m-1", None, "app", "/10.0.0.7", b"s", b"a")])
    assert response.groups[1].group_state == "Dead"
    gc.answers["list_groups"] = (0, [t.ListedGroup("g", "consumer", "Stable")])
    response = _result(h[ApiKey.LIST_GROUPS](m.ListGroupsRequest(states_filter=["Stable"])))
    assert gc.calls[-1] == ("list_groups", (["Stable"],))
    assert response.groups == [m.ListedGroup("g", "consumer", "Stable")]
    _result(h[ApiKey.LIST_GROUPS](m.ListGroupsRequest()))
    assert gc.calls[-1] == ("list_groups", (None,))
    gc.answers["delete_groups"] = {"g": 68, "h": 0}
    response = _result(h[ApiKey.DELETE_GROUPS](m.DeleteGroupsRequest(groups_names=["g", "h"])))
    assert response.results == [m.DeletableGroupResult("g", 68), m.DeletableGroupResult("h", 0)]


def test_without_a_coordinator_everything_is_not_available():
    broker = SimpleNamespace(reactor=Clock())
    h = handlers(broker)
    samples = {
        ApiKey.JOIN_GROUP: m.JoinGroupRequest(group_id="g"),
        ApiKey.SYNC_GROUP: m.SyncGroupRequest(group_id="g", generation_id=1, member_id="m"),
        ApiKey.HEARTBEAT: m.HeartbeatRequest(group_id="g", generation_id=1, member_id="m"),
        ApiKey.LEAVE_GROUP: m.LeaveGroupRequest(group_id="g"),
        ApiKey.LIST_GROUPS: m.ListGroupsRequest(),
        ApiKey.OFFSET_DELETE: m.OffsetDeleteRequest(group_id="g"),
    }
    for key, request in samples.items():
        response = h[key](request)
        assert response.error_code == errors.CoordinatorNotAvailableError.code, key
    fetch = h[ApiKey.OFFSET_FETCH](m.OffsetFetchRequest(group_id="g", topics=[
        m.OffsetFetchTopic("t", [0])]))
    assert fetch.error_code == 15 and fetch.topics[0].partitions[0].error_code == 15
    commit = h[ApiKey.OFFSET_COMMIT](m.OffsetCommitRequest(group_id="g", topics=[
        m.OffsetCommitTopic("t", [m.OffsetCommitPartition(0, 1)])]))
    assert commit.topics[0].partitions[0].error_code == 15
    described = h[ApiKey.DESCRIBE_GROUPS](m.DescribeGroupsRequest(groups=["g"]))
    assert described.groups[0].error_code == 15
    deleted = h[ApiKey.DELETE_GROUPS](m.DeleteGroupsRequest(groups_names=["g"]))
    assert deleted.results == [m.DeletableGroupResult("g", 15)]
    # FindCoordinator goes through coordinator_lookup: no offsets store, not available either
    found = _result(h[ApiKey.FIND_COORDINATOR](m.FindCoordinatorRequest(key="g")))
    assert found.error_code == 15 and found.node_id == -1


def test_kafka_apis_dispatches_the_group_requests():
    from kafkalite.server.apis import KafkaApis

    broker = SimpleNamespace(config=None, replica_manager=None, metadata_cache=None,
                             reactor=Clock())
    apis = KafkaApis(broker)
    header = SimpleNamespace(api_key=ApiKey.JOIN_GROUP, client_id="c")
    response = apis.handle(header, m.JoinGroupRequest(group_id="g"), None)
    assert response.error_code == errors.CoordinatorNotAvailableError.code
    served = {v.api_key for v in apis.handle_api_versions(m.ApiVersionsRequest()).api_versions}
    assert {ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.OFFSET_COMMIT,
            ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE} <= served
