"""kafkalite's native group requests, served by the broker's 0.9+ group coordinator.

FindCoordinator goes to ``coordinator_lookup`` (the leader of the group's ``__consumer_offsets``
partition); JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
DescribeGroups, ListGroups, DeleteGroups and OffsetDelete to ``broker.group_coordinator``
(``kafkalite.coordinator.coordinator.GroupCoordinator``), whose answers (``coordinator.types``)
are turned into the native responses here. A broker without a group coordinator answers
COORDINATOR_NOT_AVAILABLE everywhere, so clients retry rather than fail.

With an authorizer, ``refusal`` is asked first (``KafkaApis.handle``): Read on the group for
JoinGroup, SyncGroup, Heartbeat, LeaveGroup and OffsetCommit, Describe for FindCoordinator,
OffsetFetch and DescribeGroups, Delete for DeleteGroups and OffsetDelete, and Read (commit,
delete) or Describe (fetch) on every topic named. Unlike Kafka, which refuses per partition, a
native request naming any refused group or topic is refused whole; ListGroups needs Describe on
the cluster.

``handlers(broker)`` gives the ``{api key: handler}`` entries ``KafkaApis`` adds to its table;
the handlers of ``WITH_CONTEXT`` also take the request header (the client id) and the
connection (the listener, for FindCoordinator's address; the client's host, for JoinGroup).
"""

from __future__ import annotations

from twisted.internet import defer

from kafkalite import errors
from kafkalite.coordinator.types import OffsetAndMetadata
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ResourceType
from kafkalite.server import coordinator_lookup

__all__ = ["handlers", "WITH_CONTEXT", "GROUP_CHECKS", "refusal"]

WITH_CONTEXT = frozenset({ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP})

# api key -> the group ids and topics a request names
_GROUPS = {
    ApiKey.JOIN_GROUP: lambda r: [r.group_id], ApiKey.SYNC_GROUP: lambda r: [r.group_id],
    ApiKey.HEARTBEAT: lambda r: [r.group_id], ApiKey.LEAVE_GROUP: lambda r: [r.group_id],
    ApiKey.OFFSET_COMMIT: lambda r: [r.group_id], ApiKey.OFFSET_FETCH: lambda r: [r.group_id],
    ApiKey.DESCRIBE_GROUPS: lambda r: list(r.groups),
    ApiKey.DELETE_GROUPS: lambda r: list(r.groups_names),
    ApiKey.OFFSET_DELETE: lambda r: [r.group_id],
    ApiKey.FIND_COORDINATOR: lambda r: [r.key] if r.key_type == m.COORDINATOR_KEY_GROUP else [],
}
_TOPICS = {
    ApiKey.OFFSET_COMMIT: lambda r: [t.topic for t in r.topics],
    ApiKey.OFFSET_FETCH: lambda r: [t.topic for t in (r.topics or ())],
    ApiKey.OFFSET_DELETE: lambda r: [t.topic for t in r.topics],
}
GROUP_CHECKS = frozenset(_GROUPS) | {ApiKey.LIST_GROUPS}


def refusal(authz, api_key: int, request):
    """The error response for a request the client may not make, or None."""
    if not authz.enabled:
        return None
    if api_key == ApiKey.LIST_GROUPS:
        if authz.may(api_key, ResourceType.CLUSTER):
            return None
        return request.error_response(errors.ClusterAuthorizationFailedError.code,
                                      "ListGroups needs Describe on the cluster")
    _, refused = authz.split(api_key, ResourceType.GROUP, _GROUPS[api_key](request))
    if refused:
        return request.error_response(errors.GroupAuthorizationFailedError.code,
                                      f"not authorized for group(s) {sorted(refused)}")
    if api_key in _TOPICS:
        _, refused = authz.split(api_key, ResourceType.TOPIC, _TOPICS[api_key](request))
        if refused:
            return request.error_response(errors.TopicAuthorizationFailedError.code,
                                          f"not authorized for topic(s) {sorted(refused)}")
    return None

_NOT_AVAILABLE = errors.CoordinatorNotAvailableError.code


def _coordinator(broker):
    return getattr(broker, "group_coordinator", None)


def _then(result, convert):
    d = result if isinstance(result, defer.Deferred) else defer.succeed(result)
    return d.addCallback(convert)


def _listener(protocol) -> str | None:
    return getattr(getattr(protocol, "factory", None), "listener_name", None)


def _client_host(protocol) -> str:
    """The client's address as Kafka shows it (``/10.0.0.7``)."""
    try:
        return "/" + protocol.transport.getPeer().host
    except Exception:  # noqa: BLE001 - no transport (tests) or not an IP peer
        return ""


def handlers(broker) -> dict:
    def find_coordinator(request: m.FindCoordinatorRequest, header=None, protocol=None):
        d = coordinator_lookup.find_coordinator(broker, request.key, request.key_type,
                                                _listener(protocol))
        return d.addCallback(lambda a: m.FindCoordinatorResponse(
            error_code=a.error_code, error_message=a.error_message, node_id=a.node_id,
            host=a.host, port=a.port))

    def join_group(request: m.JoinGroupRequest, header=None, protocol=None):
        gc = _coordinator(broker)
        if gc is None:
            return request.error_response(_NOT_AVAILABLE)
        client_id = getattr(header, "client_id", None) or ""
        result = gc.join_group(request.group_id, request.member_id, request.group_instance_id,
                               client_id, _client_host(protocol), request.rebalance_timeout_ms,
                               request.session_timeout_ms, request.protocol_type,
                               [(p.name, p.metadata) for p in request.protocols], True)
        return _then(result, lambda r: m.JoinGroupResponse(
            error_code=r.error_code, generation_id=r.generation_id,
            protocol_type=r.protocol_type, protocol_name=r.protocol_name, leader=r.leader or "",
            member_id=r.member_id or "",
            members=[m.JoinGroupMember(x.member_id, x.group_instance_id, bytes(x.metadata))
                     for x in r.members]))

    def sync_group(request: m.SyncGroupRequest):
        gc = _coordinator(broker)
        if gc is None:
            return request.error_response(_NOT_AVAILABLE)
        result = gc.sync_group(request.group_id, request.generation_id, request.member_id,
                               request.group_instance_id, request.protocol_type,
                               request.protocol_name,
                               {a.member_id: a.assignment for a in request.assignments})
        return _then(result, lambda r: m.SyncGroupResponse(
            error_code=r.error_code, protocol_type=r.protocol_type,
            protocol_name=r.protocol_name, assignment=bytes(r.assignment or b"")))

    def heartbeat(request: m.HeartbeatRequest):
        gc = _coordinator(broker)
        if gc is None:
            return request.error_response(_NOT_AVAILABLE)
        result = gc.heartbeat(request.group_id, request.generation_id, request.member_id,
                              request.group_instance_id)
        return _then(result, lambda code: m.HeartbeatResponse(error_code=code))

    def leave_group(request: m.LeaveGroupRequest):
        gc = _coordinator(broker)
        if gc is None:
            return request.error_response(_NOT_AVAILABLE)
        result = gc.leave_group(request.group_id,
                                [(x.member_id, x.group_instance_id) for x in request.members])
        return _then(result, lambda r: m.LeaveGroupResponse(
            error_code=r[0], members=[m.LeaveGroupMemberResponse(x.member_id,
                                                                 x.group_instance_id,
                                                                 x.error_code)
                                      for x in r[1]]))

    def commit_offsets(request: m.OffsetCommitRequest):
        gc = _coordinator(broker)
        if gc is None:
            return request.error_response(_NOT_AVAILABLE)
        offsets = {}
        for t in request.topics:
            for p in t.partitions:       # the coordinator stamps the commit time
                offsets[(t.topic, p.partition)] = OffsetAndMetadata(
                    p.committed_offset, p.committed_leader_epoch, p.committed_metadata or "")
        result = gc.commit_offsets(request.group_id, request.generation_id, request.member_id,
                                   request.group_instance_id, request.retention_time_ms,
                                   offsets)

        def convert(codes):
            return m.OffsetCommitResponse(topics=[
                m.OffsetCommitTopicResponse(t.topic, [
                    m.OffsetCommitPartitionResponse(
                        p.partition, codes.get((t.topic, p.partition),
                                               errors.UnknownServerError.code))
                    for p in t.partitions])
                for t in request.topics])
        return _then(result, convert)

    def fetch_offsets(request: m.OffsetFetchRequest):
        gc = _coordinator(broker)
        if gc is None:
            return request.error_response(_NOT_AVAILABLE)
        wanted = (None if request.topics is None else
                  [(t.topic, p) for t in request.topics for p in t.partitions])
        result = gc.fetch_offsets(request.group_id, wanted)

        def convert(answer):
            code, found = answer
            order = wanted if wanted is not None else sorted(found)
            by_topic: dict[str, list] = {}
            for tp in order:
                f = found.get(tp)
                entry = (m.OffsetFetchPartitionResponse(tp[1], -1, -1, None, code)
                         if f is None else
                         m.OffsetFetchPartitionResponse(tp[1], f.offset, f.leader_epoch,
                                                        f.metadata, f.error_code))
                by_topic.setdefault(tp[0], []).append(entry)
            return m.OffsetFetchResponse(error_code=code, topics=[
                m.OffsetFetchTopicResponse(t, ps) for t, ps in by_topic.items()])
        return _then(result, convert)

    def describe_groups(request: m.DescribeGroupsRequest):
        gc = _coordinator(broker)
        if gc is None:
            return request.error_response(_NOT_AVAILABLE)
        return _then(gc.describe_groups(list(request.groups)), lambda groups: (
            m.DescribeGroupsResponse(groups=[
                m.DescribedGroup(g.error_code, g.group_id, g.state, g.protocol_type or "",
                                 g.protocol or "",
                                 [m.DescribedGroupMember(x.member_id, x.group_instance_id,
                                                         x.client_id, x.client_host,
                                                         bytes(x.metadata),
                                                         bytes(x.assignment))
                                  for x in g.members])
                for g in groups])))

    def list_groups(request: m.ListGroupsRequest):
        gc = _coordinator(broker)
        if gc is None:
            return request.error_response(_NOT_AVAILABLE)
        result = gc.list_groups(list(request.states_filter) or None)
        return _then(result, lambda r: m.ListGroupsResponse(
            error_code=r[0], groups=[m.ListedGroup(g.group_id, g.protocol_type, g.state)
                                     for g in r[1]]))

    def delete_groups(request: m.DeleteGroupsRequest):
        gc = _coordinator(broker)
        if gc is None:
            return request.error_response(_NOT_AVAILABLE)
        return _then(gc.delete_groups(list(request.groups_names)), lambda codes: (
            m.DeleteGroupsResponse(results=[
                m.DeletableGroupResult(g, codes.get(g, errors.UnknownServerError.code))
                for g in request.groups_names])))

    def delete_offsets(request: m.OffsetDeleteRequest):
        gc = _coordinator(broker)
        if gc is None:
            return request.error_response(_NOT_AVAILABLE)
        partitions = [(t.topic, p) for t in request.topics for p in t.partitions]

        def convert(answer):
            code, codes = answer
            return m.OffsetDeleteResponse(error_code=code, topics=[
                m.OffsetDeleteTopicResponse(t.topic, [
                    m.OffsetDeletePartitionResponse(p, codes.get((t.topic, p), code))
                    for p in t.partitions])
                for t in request.topics])
        return _then(gc.delete_offsets(request.group_id, partitions), convert)

    return {
        ApiKey.FIND_COORDINATOR: find_coordinator,
        ApiKey.JOIN_GROUP: join_group,
        ApiKey.SYNC_GROUP: sync_group,
        ApiKey.HEARTBEAT: heartbeat,
        ApiKey.LEAVE_GROUP: leave_group,
        ApiKey.OFFSET_COMMIT: commit_offsets,
        ApiKey.OFFSET_FETCH: fetch_offsets,
        ApiKey.DESCRIBE_GROUPS: describe_groups,
        ApiKey.LIST_GROUPS: list_groups,
        ApiKey.DELETE_GROUPS: delete_groups,
        ApiKey.OFFSET_DELETE: delete_offsets,
    }
