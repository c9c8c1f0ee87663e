"""The group APIs between Kafka's protocol and the model: FindCoordinator, JoinGroup, Heartbeat,
LeaveGroup, SyncGroup, DescribeGroups, ListGroups, OffsetCommit, OffsetFetch, DeleteGroups and
OffsetDelete.

Kafka's per-version quirks live here, not in the handlers (``server.group_apis``,
``server.group_offset_apis``):

* JoinGroup v0 has no rebalance timeout (the session timeout stands for it), and only v4+
  clients know MEMBER_ID_REQUIRED (``require_known_member_id``);
* LeaveGroup v0-2 name one member and have no per-member answers: their error is the request's,
  else the member's (Kafka's LeaveGroupResponse for those versions);
* OffsetCommit v2-4 carry a retention time (v5+ use the broker's);
* OffsetFetch v2+ may ask for every partition (topics null); an error of the whole request
  answers with no partitions from v2 (Kafka's getErrorResponse), with the error in every
  partition before that (v1 has no top-level error).
"""

from __future__ import annotations

from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka.convert import Converter
from kafkalite.protocol.kafka.entities import millis

__all__ = ["FIND_COORDINATOR", "JOIN_GROUP", "HEARTBEAT", "LEAVE_GROUP", "SYNC_GROUP",
           "DESCRIBE_GROUPS", "LIST_GROUPS", "OFFSET_COMMIT", "OFFSET_FETCH", "DELETE_GROUPS",
           "OFFSET_DELETE"]

_NO_RETENTION = -1      # OffsetCommit: the broker's offsets.retention.minutes

FIND_COORDINATOR = Converter(
    lambda entity, version: m.FindCoordinatorRequest(
        key=entity.key, key_type=getattr(entity, "key_type", m.COORDINATOR_KEY_GROUP)),
    lambda r, version: {"throttle_time": r.throttle_time_ms, "error_code": r.error_code,
                        "error_message": r.error_message, "node_id": r.node_id,
                        "host": r.host, "port": r.port})


def _join_group_request(entity, version: int) -> m.JoinGroupRequest:
    session = millis(entity.session_timeout)
    return m.JoinGroupRequest(
        group_id=entity.group_id, session_timeout_ms=session,
        rebalance_timeout_ms=millis(getattr(entity, "rebalance_timeout", session)),
        member_id=entity.member_id,
        group_instance_id=getattr(entity, "group_instance_id", None),
        protocol_type=entity.protocol_type,
        protocols=[m.JoinGroupProtocol(p.name, bytes(p.metadata)) for p in entity.protocols],
        require_known_member_id=version >= 4)


def _join_group_response(r: m.JoinGroupResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "error_code": r.error_code,
            "generation_id": r.generation_id, "protocol_type": r.protocol_type,
            "protocol_name": r.protocol_name, "leader": r.leader, "member_id": r.member_id,
            "members": [{"member_id": x.member_id, "group_instance_id": x.group_instance_id,
                         "metadata": x.metadata} for x in r.members]}


JOIN_GROUP = Converter(_join_group_request, _join_group_response)

HEARTBEAT = Converter(
    lambda entity, version: m.HeartbeatRequest(
        group_id=entity.group_id, generation_id=entity.generation_id,
        member_id=entity.member_id,
        group_instance_id=getattr(entity, "group_instance_id", None)),
    lambda r, version: {"throttle_time": r.throttle_time_ms, "error_code": r.error_code})


def _leave_group_request(entity, version: int) -> m.LeaveGroupRequest:
    if version >= 3:      # KIP-345: a batch of members, static ones by instance id
        members = [m.LeaveGroupMember(x.member_id, x.group_instance_id) for x in entity.members]
    else:
        members = [m.LeaveGroupMember(entity.member_id, None)]
    return m.LeaveGroupRequest(group_id=entity.group_id, members=members)


def _leave_group_response(r: m.LeaveGroupResponse, version: int) -> dict:
    code = r.error_code
    if version < 3 and not code and r.members:
        code = r.members[0].error_code        # v0-2 answer for their one member
    return {"throttle_time": r.throttle_time_ms, "error_code": code,
            "members": [{"member_id": x.member_id, "group_instance_id": x.group_instance_id,
                         "error_code": x.error_code} for x in r.members]}


LEAVE_GROUP = Converter(_leave_group_request, _leave_group_response)

SYNC_GROUP = Converter(
    lambda entity, version: m.SyncGroupRequest(
        group_id=entity.group_id, generation_id=entity.generation_id,
        member_id=entity.member_id,
        group_instance_id=getattr(entity, "group_instance_id", None),
        protocol_type=getattr(entity, "protocol_type", None),
        protocol_name=getattr(entity, "protocol_name", None),
        assignments=[m.SyncGroupAssignment(a.member_id, bytes(a.assignment))
                     for a in entity.assignments]),
    lambda r, version: {"throttle_time": r.throttle_time_ms, "error_code": r.error_code,
                        "protocol_type": r.protocol_type, "protocol_name": r.protocol_name,
                        "assignment": r.assignment})


def _describe_groups_response(r: m.DescribeGroupsResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "groups": [{
        "error_code": g.error_code, "group_id": g.group_id, "group_state": g.group_state,
        "protocol_type": g.protocol_type, "protocol_data": g.protocol_data,
        "authorized_operations": g.authorized_operations,
        "members": [{"member_id": x.member_id, "group_instance_id": x.group_instance_id,
                     "client_id": x.client_id, "client_host": x.client_host,
                     "member_metadata": x.member_metadata,
                     "member_assignment": x.member_assignment} for x in g.members],
    } for g in r.groups]}


DESCRIBE_GROUPS = Converter(
    lambda entity, version: m.DescribeGroupsRequest(
        groups=list(entity.groups),
        include_authorized_operations=bool(getattr(entity, "include_authorized_operations",
                                                   False))),
    _describe_groups_response)

LIST_GROUPS = Converter(
    lambda entity, version: m.ListGroupsRequest(
        states_filter=list(getattr(entity, "states_filter", None) or ())),
    lambda r, version: {"throttle_time": r.throttle_time_ms, "error_code": r.error_code,
                        "groups": [{"group_id": g.group_id, "protocol_type": g.protocol_type,
                                    "group_state": g.group_state} for g in r.groups]})


def _offset_commit_request(entity, version: int) -> m.OffsetCommitRequest:
    return m.OffsetCommitRequest(
        group_id=entity.group_id, generation_id=entity.generation_id_or_member_epoch,
        member_id=entity.member_id,
        group_instance_id=getattr(entity, "group_instance_id", None),
        retention_time_ms=millis(getattr(entity, "retention_time", _NO_RETENTION)),
        topics=[m.OffsetCommitTopic(t.name, [
            m.OffsetCommitPartition(p.partition_index, p.committed_offset,
                                    getattr(p, "committed_leader_epoch", -1),
                                    p.committed_metadata)
            for p in t.partitions]) for t in entity.topics])


OFFSET_COMMIT = Converter(
    _offset_commit_request,
    lambda r, version: {"throttle_time": r.throttle_time_ms, "topics": [
        {"name": t.topic, "partitions": [{"partition_index": p.partition,
                                          "error_code": p.error_code} for p in t.partitions]}
        for t in r.topics]})


def _offset_fetch_request(entity, version: int) -> m.OffsetFetchRequest:
    topics = None
    if entity.topics is not None:
        topics = [m.OffsetFetchTopic(t.name, list(t.partition_indexes)) for t in entity.topics]
    return m.OffsetFetchRequest(group_id=entity.group_id, topics=topics,
                                require_stable=bool(getattr(entity, "require_stable", False)))


def _offset_fetch_response(r: m.OffsetFetchResponse, version: int) -> dict:
    topics = [] if version >= 2 and r.error_code else r.topics
    return {"throttle_time": r.throttle_time_ms, "error_code": r.error_code, "topics": [
        {"name": t.topic, "partitions": [{
            "partition_index": p.partition, "committed_offset": p.committed_offset,
            "committed_leader_epoch": p.committed_leader_epoch, "metadata": p.metadata,
            "error_code": p.error_code} for p in t.partitions]}
        for t in topics]}


OFFSET_FETCH = Converter(_offset_fetch_request, _offset_fetch_response)

DELETE_GROUPS = Converter(
    lambda entity, version: m.DeleteGroupsRequest(groups_names=list(entity.groups_names)),
    lambda r, version: {"throttle_time": r.throttle_time_ms, "results": [
        {"group_id": g.group_id, "error_code": g.error_code} for g in r.results]})

OFFSET_DELETE = Converter(
    lambda entity, version: m.OffsetDeleteRequest(
        group_id=entity.group_id, topics=[
            m.OffsetDeleteTopic(t.name, [p.partition_index for p in t.partitions])
            for t in entity.topics]),
    lambda r, version: {"error_code": r.error_code, "throttle_time": r.throttle_time_ms,
                        "topics": [{"name": t.topic, "partitions": [
                            {"partition_index": p.partition, "error_code": p.error_code}
                            for p in t.partitions]} for t in r.topics]})
