"""The group APIs, for both protocols: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, DescribeGroups, ListGroups and DeleteGroups here; OffsetCommit, OffsetFetch and
OffsetDelete in ``group_offset_apis``.

Each handler takes the protocol-neutral request (``protocol.messages``), asks the broker's
group coordinator (``kafkalite.coordinator``, which takes and answers plain values) and answers
the model response; FindCoordinator asks ``coordinator_lookup``. A broker without a group
coordinator answers COORDINATOR_NOT_AVAILABLE, so clients retry rather than fail.

Authorization is Kafka 2.8's (``KafkaApis.handle*Request``), for both protocols: Read on the
group for JoinGroup, SyncGroup, Heartbeat and LeaveGroup (GROUP_AUTHORIZATION_FAILED for the
request), Describe per group for DescribeGroups and Delete per group for DeleteGroups (the
refused groups answer GROUP_AUTHORIZATION_FAILED, the others are served), Describe on the group
or transactional id for FindCoordinator (by key type; an unknown key type is asked nothing, the
lookup refuses it), and for ListGroups every group with Describe on the cluster, else only the
groups the client may Describe.
"""

from __future__ import annotations

from twisted.internet import defer

from kafkalite import errors
from kafkalite.coordinator.types import DescribedGroup
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ResourceType
from kafkalite.security.operations import NOT_REQUESTED
from kafkalite.server import coordinator_lookup

__all__ = ["handle_find_coordinator", "handle_join_group", "handle_sync_group",
           "handle_heartbeat", "handle_leave_group", "handle_describe_groups",
           "handle_list_groups", "handle_delete_groups", "coordinator_of", "then"]

NOT_AVAILABLE = errors.CoordinatorNotAvailableError.code
GROUP_DENIED = errors.GroupAuthorizationFailedError.code

# FindCoordinator's key types -> (the resource asked for Describe, the refusal's error, its
# message: Kafka's error response carries the error's standard text, Errors.message())
_KEY_RESOURCES = {
    m.COORDINATOR_KEY_GROUP: (ResourceType.GROUP, GROUP_DENIED, "Group authorization failed."),
    m.COORDINATOR_KEY_TRANSACTION: (ResourceType.TRANSACTIONAL_ID,
                                    errors.TransactionalIdAuthorizationFailedError.code,
                                    "Transactional Id authorization failed."),
}


def coordinator_of(broker):
    """The broker's GroupCoordinator, or None (a broker without one)."""
    return getattr(broker, "group_coordinator", None)


def then(call, *args, convert):
    """``call(*args)`` (a value or a Deferred) as a Deferred, continued with ``convert``."""
    return defer.maybeDeferred(call, *args).addCallback(convert)


def _group_refused(ctx, api_key: int, group_id: str) -> bool:
    return not ctx.authz.may(api_key, ResourceType.GROUP, group_id)


def handle_find_coordinator(broker, ctx, request: m.FindCoordinatorRequest):
    resource = _KEY_RESOURCES.get(request.key_type)
    if resource is not None and not ctx.authz.may(ApiKey.FIND_COORDINATOR, resource[0],
                                                  request.key):
        return m.FindCoordinatorResponse(error_code=resource[1], error_message=resource[2])
    d = coordinator_lookup.find_coordinator(broker, request.key, request.key_type, ctx.listener)
    return d.addCallback(lambda a: m.FindCoordinatorResponse(
        error_code=a.error_code, error_message=a.error_message, node_id=a.node_id, host=a.host,
        port=a.port))


def handle_join_group(broker, ctx, request: m.JoinGroupRequest):
    if _group_refused(ctx, ApiKey.JOIN_GROUP, request.group_id):
        return request.error_response(GROUP_DENIED)
    coordinator = coordinator_of(broker)
    if coordinator is None:
        return request.error_response(NOT_AVAILABLE)
    return then(coordinator.join_group, request.group_id, request.member_id,
                request.group_instance_id, ctx.client_id or "", ctx.client_address,
                request.rebalance_timeout_ms, request.session_timeout_ms,
                request.protocol_type, [(p.name, bytes(p.metadata)) for p in request.protocols],
                request.require_known_member_id,
                convert=lambda r: m.JoinGroupResponse(
                    error_code=r.error_code, generation_id=r.generation_id,
                    protocol_type=r.protocol_type, protocol_name=r.protocol_name,
                    leader=r.leader or "", member_id=r.member_id or "",
                    members=[m.JoinGroupMember(x.member_id, x.group_instance_id,
                                               bytes(x.metadata)) for x in r.members]))


def handle_sync_group(broker, ctx, request: m.SyncGroupRequest):
    if _group_refused(ctx, ApiKey.SYNC_GROUP, request.group_id):
        return request.error_response(GROUP_DENIED)
    coordinator = coordinator_of(broker)
    if coordinator is None:
        return request.error_response(NOT_AVAILABLE)
    return then(coordinator.sync_group, request.group_id, request.generation_id,
                request.member_id, request.group_instance_id, request.protocol_type,
                request.protocol_name,
                {a.member_id: bytes(a.assignment) for a in request.assignments},
                convert=lambda r: m.SyncGroupResponse(
                    error_code=r.error_code, protocol_type=r.protocol_type,
                    protocol_name=r.protocol_name, assignment=bytes(r.assignment or b"")))


def handle_heartbeat(broker, ctx, request: m.HeartbeatRequest):
    if _group_refused(ctx, ApiKey.HEARTBEAT, request.group_id):
        return request.error_response(GROUP_DENIED)
    coordinator = coordinator_of(broker)
    if coordinator is None:
        return request.error_response(NOT_AVAILABLE)
    return then(coordinator.heartbeat, request.group_id, request.generation_id,
                request.member_id, request.group_instance_id,
                convert=lambda code: m.HeartbeatResponse(error_code=code))


def handle_leave_group(broker, ctx, request: m.LeaveGroupRequest):
    if _group_refused(ctx, ApiKey.LEAVE_GROUP, request.group_id):
        return request.error_response(GROUP_DENIED)
    coordinator = coordinator_of(broker)
    if coordinator is None:
        return request.error_response(NOT_AVAILABLE)
    return then(coordinator.leave_group, request.group_id,
                [(x.member_id, x.group_instance_id) for x in request.members],
                convert=lambda r: m.LeaveGroupResponse(error_code=r[0], members=[
                    m.LeaveGroupMemberResponse(x.member_id, x.group_instance_id, x.error_code)
                    for x in r[1]]))


def _described(group, operations: int) -> m.DescribedGroup:
    return m.DescribedGroup(
        group.error_code, group.group_id, group.state, group.protocol_type or "",
        group.protocol or "",
        [m.DescribedGroupMember(x.member_id, x.group_instance_id, x.client_id, x.client_host,
                                bytes(x.metadata), bytes(x.assignment)) for x in group.members],
        operations)


def handle_describe_groups(broker, ctx, request: m.DescribeGroupsRequest):
    """The groups in the request's order; each refused one answers GROUP_AUTHORIZATION_FAILED.
    KIP-430: only a group described without error reports the operations asked for."""
    allowed, _ = ctx.authz.split(ApiKey.DESCRIBE_GROUPS, ResourceType.GROUP, request.groups)
    wanted = [g for g in request.groups if g in allowed]

    def operations(group) -> int:
        if not request.include_authorized_operations or group.error_code:
            return NOT_REQUESTED
        return ctx.authz.authorized_operations(ResourceType.GROUP, group.group_id)

    def answer(described):
        served = iter(described)       # one per wanted group, in order
        groups = []
        for name in request.groups:
            if name in allowed:
                group = next(served)
                groups.append(_described(group, operations(group)))
            else:
                groups.append(m.DescribedGroup(GROUP_DENIED, name, "", "", "", []))
        return m.DescribeGroupsResponse(groups=groups)
    coordinator = coordinator_of(broker)
    if coordinator is None or not wanted:
        return answer([DescribedGroup(NOT_AVAILABLE, g, "", "", "") for g in wanted])
    return then(coordinator.describe_groups, wanted, convert=answer)


def handle_list_groups(broker, ctx, request: m.ListGroupsRequest):
    """Every group with Describe on the cluster (kept for older tools, as Kafka keeps it), else
    only the groups the client may Describe."""
    coordinator = coordinator_of(broker)
    if coordinator is None:
        return request.error_response(NOT_AVAILABLE)

    def answer(result):
        code, groups = result
        everything = ctx.authz.may(ApiKey.LIST_GROUPS, ResourceType.CLUSTER)
        return m.ListGroupsResponse(error_code=code, groups=[
            m.ListedGroup(g.group_id, g.protocol_type, g.state) for g in groups
            if everything or ctx.authz.may(ApiKey.LIST_GROUPS, ResourceType.GROUP, g.group_id)])
    return then(coordinator.list_groups, list(request.states_filter) or None, convert=answer)


def handle_delete_groups(broker, ctx, request: m.DeleteGroupsRequest):
    """Each group named once, in the request's order; refused groups answer
    GROUP_AUTHORIZATION_FAILED."""
    names = list(dict.fromkeys(request.groups_names))
    allowed, _ = ctx.authz.split(ApiKey.DELETE_GROUPS, ResourceType.GROUP, names)
    deletable = [g for g in names if g in allowed]

    def answer(codes):
        return m.DeleteGroupsResponse(results=[
            m.DeletableGroupResult(g, codes.get(g, errors.UnknownServerError.code)
                                   if g in allowed else GROUP_DENIED) for g in names])
    coordinator = coordinator_of(broker)
    if coordinator is None or not deletable:
        return answer(dict.fromkeys(deletable, NOT_AVAILABLE))
    return then(coordinator.delete_groups, deletable, convert=answer)
