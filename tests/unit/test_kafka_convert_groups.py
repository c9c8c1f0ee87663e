"""The group converters (protocol/kafka/convert/groups.py), alone: every version Kafka 2.8
advertises round-trips through kio, and Kafka's per-version quirks land where the handlers and
clients expect them (JoinGroup v0's rebalance timeout and v4's MEMBER_ID_REQUIRED, LeaveGroup
v0-2's one member, OffsetCommit v2-4's retention, OffsetFetch's all-partitions request and
version-dependent error answer)."""

import pytest

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka import codec
from kafkalite.protocol.kafka.convert import groups as convert
from kafkalite.server.api_table import TABLE

NOT_REQUESTED = -(1 << 31)


def _versions(api_key):
    low, high = TABLE[api_key].kafka_versions
    return range(low, high + 1)


def _request(api_key, version, values):
    """The kio entity of ``values`` as the broker decodes it off the wire (fields the version
    lacks are dropped)."""
    payload = codec.encode_request(api_key, version, 5, "test", values)
    return codec.decode_request(payload)[1]


def _response(api_key, converter, model, version):
    payload = codec.encode_response(api_key, version, 1, converter.response(model, version))
    correlation_id, entity = codec.decode_response(api_key, version, payload)
    assert correlation_id == 1
    return entity


def test_the_table_advertises_kafka_2_8s_versions():
    assert {key: TABLE[key].kafka_versions[1] for key in (
        ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP,
        ApiKey.SYNC_GROUP, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.OFFSET_COMMIT,
        ApiKey.OFFSET_FETCH, ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE)} == {
        10: 3, 11: 7, 12: 4, 13: 4, 14: 5, 15: 5, 16: 4, 8: 8, 9: 7, 42: 2, 47: 0}


# --- FindCoordinator ------------------------------------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.FIND_COORDINATOR))
def test_find_coordinator(version):
    request = convert.FIND_COORDINATOR.request(
        _request(10, version, {"key": "billing", "key_type": 1}), version)
    assert request == m.FindCoordinatorRequest(key="billing",
                                               key_type=1 if version >= 1 else 0)
    found = _response(10, convert.FIND_COORDINATOR, m.FindCoordinatorResponse(
        node_id=2, host="b2", port=9093), version)
    assert (found.error_code, found.node_id, found.host, found.port) == (0, 2, "b2", 9093)
    refused = _response(10, convert.FIND_COORDINATOR, m.FindCoordinatorResponse(
        error_code=errors.GroupAuthorizationFailedError.code), version)
    assert (refused.error_code, refused.node_id) == (30, -1)


# --- JoinGroup, SyncGroup, Heartbeat, LeaveGroup --------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.JOIN_GROUP))
def test_join_group_request(version):
    entity = _request(11, version, {
        "group_id": "g", "session_timeout": 10000, "rebalance_timeout": 60000, "member_id": "",
        "group_instance_id": "i-1", "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"sub"}]})
    request = convert.JOIN_GROUP.request(entity, version)
    assert request == m.JoinGroupRequest(
        group_id="g", session_timeout_ms=10000,
        rebalance_timeout_ms=60000 if version >= 1 else 10000,   # v0: the session timeout
        member_id="", group_instance_id="i-1" if version >= 5 else None,
        protocol_type="consumer", protocols=[m.JoinGroupProtocol("range", b"sub")],
        require_known_member_id=version >= 4)
    assert type(request.protocols[0].metadata) is bytes


@pytest.mark.parametrize("version", _versions(ApiKey.JOIN_GROUP))
def test_join_group_response(version):
    leader = _response(11, convert.JOIN_GROUP, m.JoinGroupResponse(
        generation_id=3, protocol_type="consumer", protocol_name="range", leader="m-1",
        member_id="m-1", members=[m.JoinGroupMember("m-1", "i-1", b"sub")]), version)
    assert (leader.generation_id, leader.protocol_name, leader.leader, leader.member_id) == (
        3, "range", "m-1", "m-1")
    assert [(x.member_id, x.metadata) for x in leader.members] == [("m-1", b"sub")]
    # MEMBER_ID_REQUIRED and the other errors carry no protocol: "" before v7 (not nullable)
    first = _response(11, convert.JOIN_GROUP, m.JoinGroupResponse(
        error_code=errors.MemberIdRequiredError.code, member_id="app-1"), version)
    assert (first.error_code, first.member_id) == (79, "app-1")
    assert first.protocol_name == (None if version >= 7 else "")


@pytest.mark.parametrize("version", _versions(ApiKey.SYNC_GROUP))
def test_sync_group(version):
    entity = _request(14, version, {
        "group_id": "g", "generation_id": 3, "member_id": "m-1", "group_instance_id": None,
        "protocol_type": "consumer", "protocol_name": "range",
        "assignments": [{"member_id": "m-1", "assignment": b"mine"}]})
    request = convert.SYNC_GROUP.request(entity, version)
    assert request == m.SyncGroupRequest(
        group_id="g", generation_id=3, member_id="m-1",
        protocol_type="consumer" if version >= 5 else None,
        protocol_name="range" if version >= 5 else None,
        assignments=[m.SyncGroupAssignment("m-1", b"mine")])
    answer = _response(14, convert.SYNC_GROUP, m.SyncGroupResponse(
        protocol_type="consumer", protocol_name="range", assignment=b"mine"), version)
    assert (answer.error_code, answer.assignment) == (0, b"mine")


@pytest.mark.parametrize("version", _versions(ApiKey.HEARTBEAT))
def test_heartbeat(version):
    entity = _request(12, version, {"group_id": "g", "generation_id": 3, "member_id": "m-1",
                                    "group_instance_id": "i-1"})
    assert convert.HEARTBEAT.request(entity, version) == m.HeartbeatRequest(
        group_id="g", generation_id=3, member_id="m-1",
        group_instance_id="i-1" if version >= 3 else None)
    answer = _response(12, convert.HEARTBEAT, m.HeartbeatResponse(error_code=27), version)
    assert answer.error_code == 27


@pytest.mark.parametrize("version", _versions(ApiKey.LEAVE_GROUP))
def test_leave_group_request(version):
    entity = _request(13, version, {
        "group_id": "g", "member_id": "m-1",
        "members": [{"member_id": "m-1", "group_instance_id": None},
                    {"member_id": "", "group_instance_id": "i-2"}]})
    members = convert.LEAVE_GROUP.request(entity, version).members
    if version >= 3:      # KIP-345's batch
        assert members == [m.LeaveGroupMember("m-1", None), m.LeaveGroupMember("", "i-2")]
    else:
        assert members == [m.LeaveGroupMember("m-1", None)]


@pytest.mark.parametrize("version", _versions(ApiKey.LEAVE_GROUP))
def test_leave_group_response(version):
    unknown = errors.UnknownMemberIdError.code
    answer = _response(13, convert.LEAVE_GROUP, m.LeaveGroupResponse(members=[
        m.LeaveGroupMemberResponse("m-1", None, unknown)]), version)
    if version >= 3:
        assert answer.error_code == 0
        assert [(x.member_id, x.error_code) for x in answer.members] == [("m-1", unknown)]
    else:                 # v0-2: the one member's error is the answer's
        assert answer.error_code == unknown
    refused = _response(13, convert.LEAVE_GROUP, m.LeaveGroupResponse(error_code=30), version)
    assert refused.error_code == 30


# --- DescribeGroups, ListGroups, DeleteGroups -----------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.DESCRIBE_GROUPS))
def test_describe_groups(version):
    entity = _request(15, version, {"groups": ["g", "h"], "include_authorized_operations": True})
    assert convert.DESCRIBE_GROUPS.request(entity, version) == m.DescribeGroupsRequest(
        groups=["g", "h"], include_authorized_operations=version >= 3)
    answer = _response(15, convert.DESCRIBE_GROUPS, m.DescribeGroupsResponse(groups=[
        m.DescribedGroup(0, "g", "Stable", "consumer", "range", [
            m.DescribedGroupMember("m-1", "i-1", "app", "/10.0.0.7", b"s", b"a")], 264),
        m.DescribedGroup(30, "h", "", "", "", [])]), version)
    g, h = answer.groups
    assert (g.group_id, g.group_state, g.protocol_type, g.protocol_data) == (
        "g", "Stable", "consumer", "range")
    member = g.members[0]
    assert (member.member_id, member.client_id, member.client_host, member.member_metadata,
            member.member_assignment) == ("m-1", "app", "/10.0.0.7", b"s", b"a")
    if version >= 4:
        assert member.group_instance_id == "i-1"
    if version >= 3:
        assert (g.authorized_operations, h.authorized_operations) == (264, NOT_REQUESTED)
    assert (h.group_id, h.error_code) == ("h", 30)


@pytest.mark.parametrize("version", _versions(ApiKey.LIST_GROUPS))
def test_list_groups(version):
    entity = _request(16, version, {"states_filter": ["Stable", "Empty"]})
    assert convert.LIST_GROUPS.request(entity, version) == m.ListGroupsRequest(
        states_filter=["Stable", "Empty"] if version >= 4 else [])
    answer = _response(16, convert.LIST_GROUPS, m.ListGroupsResponse(groups=[
        m.ListedGroup("g", "consumer", "Stable")]), version)
    assert [(g.group_id, g.protocol_type) for g in answer.groups] == [("g", "consumer")]
    if version >= 4:
        assert answer.groups[0].group_state == "Stable"


@pytest.mark.parametrize("version", _versions(ApiKey.DELETE_GROUPS))
def test_delete_groups(version):
    entity = _request(42, version, {"groups_names": ["g", "h"]})
    assert convert.DELETE_GROUPS.request(entity, version) == m.DeleteGroupsRequest(
        groups_names=["g", "h"])
    answer = _response(42, convert.DELETE_GROUPS, m.DeleteGroupsResponse(results=[
        m.DeletableGroupResult("g", 0), m.DeletableGroupResult("h", 68)]), version)
    assert [(r.group_id, r.error_code) for r in answer.results] == [("g", 0), ("h", 68)]


# --- OffsetCommit, OffsetFetch, OffsetDelete ------------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.OFFSET_COMMIT))
def test_offset_commit_request(version):
    entity = _request(8, version, {
        "group_id": "g", "generation_id_or_member_epoch": 3, "member_id": "m-1",
        "group_instance_id": "i-1", "retention_time": 86_400_000,
        "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": 2,
             "committed_metadata": "md"},
            {"partition_index": 1, "committed_offset": 6, "committed_leader_epoch": -1,
             "committed_metadata": None}]}]})
    assert convert.OFFSET_COMMIT.request(entity, version) == m.OffsetCommitRequest(
        group_id="g", generation_id=3, member_id="m-1",
        group_instance_id="i-1" if version >= 7 else None,
        retention_time_ms=86_400_000 if version <= 4 else -1,    # v5+: the broker's
        topics=[m.OffsetCommitTopic("t", [
            m.OffsetCommitPartition(0, 5, 2 if version >= 6 else -1, "md"),
            m.OffsetCommitPartition(1, 6, -1, None)])])


def test_offset_commit_v2_without_a_retention_time_keeps_the_brokers():
    entity = _request(8, 2, {"group_id": "g", "generation_id_or_member_epoch": -1,
                             "member_id": "", "retention_time": -1, "topics": []})
    assert convert.OFFSET_COMMIT.request(entity, 2).retention_time_ms == -1


@pytest.mark.parametrize("version", _versions(ApiKey.OFFSET_COMMIT))
def test_offset_commit_response(version):
    answer = _response(8, convert.OFFSET_COMMIT, m.OffsetCommitResponse(topics=[
        m.OffsetCommitTopicResponse("t", [m.OffsetCommitPartitionResponse(0, 0),
                                          m.OffsetCommitPartitionResponse(1, 29)])]), version)
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions])
            for t in answer.topics] == [("t", [(0, 0), (1, 29)])]


@pytest.mark.parametrize("version", _versions(ApiKey.OFFSET_FETCH))
def test_offset_fetch_request(version):
    named = _request(9, version, {"group_id": "g", "require_stable": True, "topics": [
        {"name": "t", "partition_indexes": [0, 2]}]})
    assert convert.OFFSET_FETCH.request(named, version) == m.OffsetFetchRequest(
        group_id="g", topics=[m.OffsetFetchTopic("t", [0, 2])], require_stable=version >= 7)
    if version >= 2:      # null topics: every partition the group has an offset for
        every = _request(9, version, {"group_id": "g", "topics": None})
        assert convert.OFFSET_FETCH.request(every, version).topics is None


@pytest.mark.parametrize("version", _versions(ApiKey.OFFSET_FETCH))
def test_offset_fetch_response(version):
    answer = _response(9, convert.OFFSET_FETCH, m.OffsetFetchResponse(topics=[
        m.OffsetFetchTopicResponse("t", [m.OffsetFetchPartitionResponse(0, 5, 2, "md", 0),
                                         m.OffsetFetchPartitionResponse(1, -1, -1, "", 29)])]),
        version)
    [t] = answer.topics
    assert [(p.partition_index, p.committed_offset, p.metadata, p.error_code)
            for p in t.partitions] == [(0, 5, "md", 0), (1, -1, "", 29)]
    if version >= 5:
        assert t.partitions[0].committed_leader_epoch == 2


@pytest.mark.parametrize("version", _versions(ApiKey.OFFSET_FETCH))
def test_offset_fetch_error_of_the_whole_request(version):
    """Kafka's getErrorResponse: the top-level error alone from v2; before, in every
    partition (v1 has no top-level error)."""
    request = m.OffsetFetchRequest(group_id="g", topics=[m.OffsetFetchTopic("t", [0, 1])])
    answer = _response(9, convert.OFFSET_FETCH, request.error_response(30), version)
    if version >= 2:
        assert (answer.error_code, answer.topics) == (30, ())
    else:
        assert [p.error_code for t in answer.topics for p in t.partitions] == [30, 30]


@pytest.mark.parametrize("version", _versions(ApiKey.OFFSET_DELETE))
def test_offset_delete(version):
    entity = _request(47, version, {"group_id": "g", "topics": [
        {"name": "t", "partitions": [{"partition_index": 0}, {"partition_index": 1}]}]})
    assert convert.OFFSET_DELETE.request(entity, version) == m.OffsetDeleteRequest(
        group_id="g", topics=[m.OffsetDeleteTopic("t", [0, 1])])
    answer = _response(47, convert.OFFSET_DELETE, m.OffsetDeleteResponse(topics=[
        m.OffsetDeleteTopicResponse("t", [m.OffsetDeletePartitionResponse(0, 0),
                                          m.OffsetDeletePartitionResponse(1, 86)])]), version)
    assert [(p.partition_index, p.error_code) for t in answer.topics for p in t.partitions] \
        == [(0, 0), (1, 86)]
    refused = _response(47, convert.OFFSET_DELETE, m.OffsetDeleteRequest(
        group_id="g").error_response(30), version)
    assert (refused.error_code, refused.topics) == (30, ())
