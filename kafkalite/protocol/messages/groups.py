"""Consumer groups (the broker-side coordinator): FindCoordinator (10), JoinGroup (11),
Heartbeat (12), LeaveGroup (13), SyncGroup (14), DescribeGroups (15), ListGroups (16),
OffsetCommit (8), OffsetFetch (9), DeleteGroups (42) and OffsetDelete (47).
"""

from __future__ import annotations

from dataclasses import field
from typing import NamedTuple

from kafkalite.errors import NONE
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.messages.base import Int16, Int32, Int64, Int8, Request, Response, _message


# ================================================================================================
# Consumer groups, the 0.9+ broker-side coordinator (docs/architecture.md, 9. Consumer groups):
# FindCoordinator (10), JoinGroup (11), Heartbeat (12), LeaveGroup (13), SyncGroup (14),
# DescribeGroups (15), ListGroups (16), OffsetCommit (8), OffsetFetch (9), DeleteGroups (42),
# OffsetDelete (47).
# Fields are those of Kafka 2.8's newest versions (per-topic entries say ``topic``/``partition``
# as the other native messages do); protocol metadata and assignments are opaque bytes (for
# consumers, Kafka's ConsumerProtocol: ``kafkalite.client.consumer_protocol``).
# ================================================================================================

COORDINATOR_KEY_GROUP = 0            # FindCoordinator key types (Kafka's CoordinatorType)
COORDINATOR_KEY_TRANSACTION = 1


@_message(ApiKey.FIND_COORDINATOR)
class FindCoordinatorRequest(Request):
    key: str
    key_type: Int8 = COORDINATOR_KEY_GROUP

    def error_response(self, error_code, error_message=None):
        return FindCoordinatorResponse(error_code=error_code, error_message=error_message)


@_message(ApiKey.FIND_COORDINATOR)
class FindCoordinatorResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    error_message: str | None = None
    node_id: Int32 = -1
    host: str = ""
    port: Int32 = -1


class JoinGroupProtocol(NamedTuple):
    name: str                            # e.g. "range"
    metadata: bytes                      # for consumers: a ConsumerProtocolSubscription


class JoinGroupMember(NamedTuple):
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@_message(ApiKey.JOIN_GROUP)
class JoinGroupRequest(Request):
    group_id: str
    session_timeout_ms: Int32 = 10000
    rebalance_timeout_ms: Int32 = 300000
    member_id: str = ""                  # "" on a first join: the coordinator answers
                                         # MEMBER_ID_REQUIRED with one to join again with
    group_instance_id: str | None = None  # static membership (KIP-345)
    protocol_type: str = "consumer"
    protocols: list[JoinGroupProtocol] = field(default_factory=list)
    # a first join ("" member id) is answered MEMBER_ID_REQUIRED with an id to join again with
    # (KIP-394); Kafka-protocol clients before JoinGroup v4 do not know that answer
    require_known_member_id: bool = True

    def error_response(self, error_code, error_message=None):
        return JoinGroupResponse(error_code=error_code)


@_message(ApiKey.JOIN_GROUP)
class JoinGroupResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    generation_id: Int32 = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: list[JoinGroupMember] = field(default_factory=list)   # the leader's answer only


@_message(ApiKey.HEARTBEAT)
class HeartbeatRequest(Request):
    group_id: str
    generation_id: Int32
    member_id: str
    group_instance_id: str | None = None

    def error_response(self, error_code, error_message=None):
        return HeartbeatResponse(error_code=error_code)


@_message(ApiKey.HEARTBEAT)
class HeartbeatResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE


class LeaveGroupMember(NamedTuple):
    member_id: str
    group_instance_id: str | None = None


class LeaveGroupMemberResponse(NamedTuple):
    member_id: str
    group_instance_id: str | None
    error_code: Int16


@_message(ApiKey.LEAVE_GROUP)
class LeaveGroupRequest(Request):
    group_id: str
    members: list[LeaveGroupMember] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return LeaveGroupResponse(error_code=error_code)


@_message(ApiKey.LEAVE_GROUP)
class LeaveGroupResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    members: list[LeaveGroupMemberResponse] = field(default_factory=list)


class SyncGroupAssignment(NamedTuple):
    member_id: str
    assignment: bytes                    # for consumers: a ConsumerProtocolAssignment


@_message(ApiKey.SYNC_GROUP)
class SyncGroupRequest(Request):
    group_id: str
    generation_id: Int32
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: list[SyncGroupAssignment] = field(default_factory=list)  # the leader's only

    def error_response(self, error_code, error_message=None):
        return SyncGroupResponse(error_code=error_code)


@_message(ApiKey.SYNC_GROUP)
class SyncGroupResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


class DescribedGroupMember(NamedTuple):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


class DescribedGroup(NamedTuple):
    error_code: Int16
    group_id: str
    group_state: str                     # Empty, PreparingRebalance, CompletingRebalance,
                                         # Stable, Dead
    protocol_type: str
    protocol_data: str                   # the chosen protocol (assignor), "" when none
    members: list[DescribedGroupMember]
    authorized_operations: Int32 = -(1 << 31)


@_message(ApiKey.DESCRIBE_GROUPS)
class DescribeGroupsRequest(Request):
    groups: list[str] = field(default_factory=list)
    include_authorized_operations: bool = False

    def error_response(self, error_code, error_message=None):
        return DescribeGroupsResponse(groups=[DescribedGroup(error_code, g, "", "", "", [])
                                              for g in self.groups])


@_message(ApiKey.DESCRIBE_GROUPS)
class DescribeGroupsResponse(Response):
    throttle_time_ms: Int32 = 0
    groups: list[DescribedGroup] = field(default_factory=list)


class ListedGroup(NamedTuple):
    group_id: str
    protocol_type: str
    group_state: str


@_message(ApiKey.LIST_GROUPS)
class ListGroupsRequest(Request):
    states_filter: list[str] = field(default_factory=list)   # [] = every state

    def error_response(self, error_code, error_message=None):
        return ListGroupsResponse(error_code=error_code)


@_message(ApiKey.LIST_GROUPS)
class ListGroupsResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    groups: list[ListedGroup] = field(default_factory=list)


class OffsetCommitPartition(NamedTuple):
    partition: Int32
    committed_offset: Int64
    committed_leader_epoch: Int32 = -1
    committed_metadata: str | None = None


class OffsetCommitTopic(NamedTuple):
    topic: str
    partitions: list[OffsetCommitPartition]


class OffsetCommitPartitionResponse(NamedTuple):
    partition: Int32
    error_code: Int16


class OffsetCommitTopicResponse(NamedTuple):
    topic: str
    partitions: list[OffsetCommitPartitionResponse]


@_message(ApiKey.OFFSET_COMMIT)
class OffsetCommitRequest(Request):
    group_id: str
    generation_id: Int32 = -1            # -1 with member_id "": an admin's commit for a group
    member_id: str = ""                  # without members
    group_instance_id: str | None = None
    retention_time_ms: Int64 = -1        # -1: the broker's offsets.retention.minutes
    topics: list[OffsetCommitTopic] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return OffsetCommitResponse(topics=[
            OffsetCommitTopicResponse(t.topic, [OffsetCommitPartitionResponse(p.partition,
                                                                              error_code)
                                                for p in t.partitions])
            for t in self.topics])


@_message(ApiKey.OFFSET_COMMIT)
class OffsetCommitResponse(Response):
    throttle_time_ms: Int32 = 0
    topics: list[OffsetCommitTopicResponse] = field(default_factory=list)


class OffsetFetchTopic(NamedTuple):
    topic: str
    partitions: list[Int32]


class OffsetFetchPartitionResponse(NamedTuple):
    partition: Int32
    committed_offset: Int64              # -1 when nothing is committed
    committed_leader_epoch: Int32 = -1
    metadata: str | None = None
    error_code: Int16 = NONE


class OffsetFetchTopicResponse(NamedTuple):
    topic: str
    partitions: list[OffsetFetchPartitionResponse]


@_message(ApiKey.OFFSET_FETCH)
class OffsetFetchRequest(Request):
    group_id: str
    topics: list[OffsetFetchTopic] | None = None    # None = every partition with an offset
    require_stable: bool = False

    def error_response(self, error_code, error_message=None):
        return OffsetFetchResponse(error_code=error_code, topics=[
            OffsetFetchTopicResponse(t.topic, [OffsetFetchPartitionResponse(p, -1, -1, None,
                                                                            error_code)
                                               for p in t.partitions])
            for t in self.topics or ()])


@_message(ApiKey.OFFSET_FETCH)
class OffsetFetchResponse(Response):
    throttle_time_ms: Int32 = 0
    topics: list[OffsetFetchTopicResponse] = field(default_factory=list)
    error_code: Int16 = NONE


class DeletableGroupResult(NamedTuple):
    group_id: str
    error_code: Int16


@_message(ApiKey.DELETE_GROUPS)
class DeleteGroupsRequest(Request):
    groups_names: list[str] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return DeleteGroupsResponse(results=[DeletableGroupResult(g, error_code)
                                             for g in self.groups_names])


@_message(ApiKey.DELETE_GROUPS)
class DeleteGroupsResponse(Response):
    throttle_time_ms: Int32 = 0
    results: list[DeletableGroupResult] = field(default_factory=list)


class OffsetDeleteTopic(NamedTuple):
    topic: str
    partitions: list[Int32]


class OffsetDeletePartitionResponse(NamedTuple):
    partition: Int32
    error_code: Int16


class OffsetDeleteTopicResponse(NamedTuple):
    topic: str
    partitions: list[OffsetDeletePartitionResponse]


@_message(ApiKey.OFFSET_DELETE)
class OffsetDeleteRequest(Request):
    group_id: str
    topics: list[OffsetDeleteTopic] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return OffsetDeleteResponse(error_code=error_code)


@_message(ApiKey.OFFSET_DELETE)
class OffsetDeleteResponse(Response):
    error_code: Int16 = NONE
    throttle_time_ms: Int32 = 0
    topics: list[OffsetDeleteTopicResponse] = field(default_factory=list)
