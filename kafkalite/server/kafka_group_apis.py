"""Kafka-protocol group APIs: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit, OffsetFetch, DescribeGroups, ListGroups, DeleteGroups and OffsetDelete.

Each function turns a kio request into a call of the broker's GroupCoordinator (kafkalite's
``coordinator`` package: the same object kafkalite's native protocol calls) and its answer into
a response dict for ``protocol.kafka.entities.build``. Fields a version lacks are dropped there,
so each dict holds the newest version's fields.

With an authorizer the group is checked first, as Kafka 2.8 checks it (``security.operations``):
Read for JoinGroup, SyncGroup, Heartbeat, LeaveGroup and OffsetCommit, Describe for
FindCoordinator, OffsetFetch and DescribeGroups, Delete for DeleteGroups and OffsetDelete; topics
per partition (Read to commit or delete offsets, Describe to fetch them). ListGroups shows every
group to Describe on the cluster, else the groups the client may Describe.
"""

from __future__ import annotations

from twisted.internet import defer

from kafkalite import errors
from kafkalite.coordinator.types import OffsetAndMetadata
from kafkalite.protocol.kafka.entities import millis
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ResourceType
from kafkalite.security.operations import NOT_REQUESTED
from kafkalite.server.coordinator_lookup import GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE
from kafkalite.server.coordinator_lookup import find_coordinator as lookup
from kafkalite.server.request_authz import RequestAuthz

_NOT_AVAILABLE = errors.CoordinatorNotAvailableError.code
_GROUP_DENIED = errors.GroupAuthorizationFailedError.code
_TOPIC_DENIED = errors.TopicAuthorizationFailedError.code
_UNKNOWN_PARTITION = errors.UnknownTopicOrPartitionError.code


def _authz(broker, connection) -> RequestAuthz:
    return RequestAuthz.of(broker, connection)


def _may_group(broker, connection, api_key: int, group_id: str) -> bool:
    return _authz(broker, connection).may(api_key, ResourceType.GROUP, group_id)


def _coordinator(broker):
    return getattr(broker, "group_coordinator", None)


def _client_host(connection) -> str:
    try:
        return "/" + connection.transport.getPeer().host
    except Exception:  # noqa: BLE001 - a test transport may have no peer
        return ""


def _group_call(broker, unavailable: dict, call):
    """``call(coordinator)`` when this broker has a coordinator, else ``unavailable``."""
    coordinator = _coordinator(broker)
    if coordinator is None:
        return defer.succeed(unavailable)
    return defer.maybeDeferred(call, coordinator)


_KEY_RESOURCES = {GROUP_KEY_TYPE: (ResourceType.GROUP, _GROUP_DENIED),
                  TRANSACTION_KEY_TYPE: (ResourceType.TRANSACTIONAL_ID,
                                         errors.TransactionalIdAuthorizationFailedError.code)}


def find_coordinator(broker, request, version, connection, listener_name):
    key_type = getattr(request, "key_type", GROUP_KEY_TYPE)
    # as Kafka: an unknown key type is checked against nothing; the lookup refuses it
    resource, denied = _KEY_RESOURCES.get(key_type, (None, 0))
    if resource is not None and not _authz(broker, connection).may(
            ApiKey.FIND_COORDINATOR, resource, request.key):
        return {"throttle_time": 0, "error_code": denied, "error_message": None, "node_id": -1,
                "host": "", "port": -1}
    d = lookup(broker, request.key, key_type, listener_name)
    return d.addCallback(lambda a: {
        "throttle_time": 0, "error_code": a.error_code, "error_message": a.error_message,
        "node_id": a.node_id, "host": a.host, "port": a.port})


def join_group(broker, request, version, connection, client_id):
    if not _may_group(broker, connection, ApiKey.JOIN_GROUP, request.group_id):
        return dict(answer_unavailable_join(), error_code=_GROUP_DENIED)
    session = millis(request.session_timeout)
    rebalance = millis(getattr(request, "rebalance_timeout", request.session_timeout))
    protocols = [(p.name, bytes(p.metadata)) for p in request.protocols]

    def answer(r):
        return {"throttle_time": 0, "error_code": r.error_code,
                "generation_id": r.generation_id, "protocol_type": r.protocol_type,
                "protocol_name": r.protocol_name, "leader": r.leader,
                "member_id": r.member_id,
                "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                             "metadata": m.metadata} for m in r.members]}
    return _group_call(broker, answer_unavailable_join(), lambda c: c.join_group(
        request.group_id, request.member_id, getattr(request, "group_instance_id", None),
        client_id or "", _client_host(connection), rebalance, session, request.protocol_type,
        protocols, version >= 4)).addCallback(
            lambda r: r if isinstance(r, dict) else answer(r))


def answer_unavailable_join() -> dict:
    return {"throttle_time": 0, "error_code": _NOT_AVAILABLE, "generation_id": -1,
            "protocol_type": None, "protocol_name": None, "leader": "", "member_id": "",
            "members": []}


def sync_group(broker, request, version, connection):
    if not _may_group(broker, connection, ApiKey.SYNC_GROUP, request.group_id):
        return {"throttle_time": 0, "error_code": _GROUP_DENIED, "protocol_type": None,
                "protocol_name": None, "assignment": b""}
    assignments = {a.member_id: bytes(a.assignment) for a in request.assignments}

    def answer(r):
        return {"throttle_time": 0, "error_code": r.error_code,
                "protocol_type": r.protocol_type, "protocol_name": r.protocol_name,
                "assignment": r.assignment}
    unavailable = {"throttle_time": 0, "error_code": _NOT_AVAILABLE, "protocol_type": None,
                   "protocol_name": None, "assignment": b""}
    return _group_call(broker, unavailable, lambda c: c.sync_group(
        request.group_id, request.generation_id, request.member_id,
        getattr(request, "group_instance_id", None), getattr(request, "protocol_type", None),
        getattr(request, "protocol_name", None), assignments)).addCallback(
            lambda r: r if isinstance(r, dict) else answer(r))


def heartbeat(broker, request, version, connection):
    if not _may_group(broker, connection, ApiKey.HEARTBEAT, request.group_id):
        return {"throttle_time": 0, "error_code": _GROUP_DENIED}
    return _group_call(broker, _NOT_AVAILABLE, lambda c: c.heartbeat(
        request.group_id, request.generation_id, request.member_id,
        getattr(request, "group_instance_id", None))).addCallback(
            lambda code: {"throttle_time": 0, "error_code": code})


def leave_group(broker, request, version, connection):
    if not _may_group(broker, connection, ApiKey.LEAVE_GROUP, request.group_id):
        return {"throttle_time": 0, "error_code": _GROUP_DENIED, "members": []}
    if version >= 3:
        members = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        members = [(request.member_id, None)]

    def answer(result):
        code, results = result
        if version < 3 and not code and results:
            code = results[0].error_code   # v0-2 answer for their one member
        return {"throttle_time": 0, "error_code": code,
                "members": [{"member_id": r.member_id, "group_instance_id": r.group_instance_id,
                             "error_code": r.error_code} for r in results]}
    return _group_call(broker, (_NOT_AVAILABLE, []), lambda c: c.leave_group(
        request.group_id, members)).addCallback(answer)


def offset_commit(broker, request, version, connection):
    now = broker.clock_ms()
    authz = _authz(broker, connection)
    group_ok = authz.may(ApiKey.OFFSET_COMMIT, ResourceType.GROUP, request.group_id)
    readable, _ = authz.split(ApiKey.OFFSET_COMMIT, ResourceType.TOPIC,
                              (t.name for t in request.topics))
    refused = {(t.name, p.partition_index): (_GROUP_DENIED if not group_ok else _TOPIC_DENIED)
               for t in request.topics for p in t.partitions
               if not group_ok or t.name not in readable}
    offsets = {}
    cache = broker.metadata_cache
    for topic in request.topics:
        if not group_ok or topic.name not in readable:
            continue
        for p in topic.partitions:
            # as Kafka 2.8: an allowed partition the metadata cache does not know is refused,
            # per partition, and nothing is stored for it (no offsets of topics that never were)
            if not cache.contains_partition(topic.name, p.partition_index):
                refused[(topic.name, p.partition_index)] = _UNKNOWN_PARTITION
                continue
            offsets[(topic.name, p.partition_index)] = OffsetAndMetadata(
                p.committed_offset, getattr(p, "committed_leader_epoch", -1),
                p.committed_metadata or "", now)
    retention = millis(getattr(request, "retention_time", -1))

    def answer(codes):
        topics: dict[str, list] = {}
        for (topic, partition), code in {**codes, **refused}.items():
            topics.setdefault(topic, []).append({"partition_index": partition,
                                                 "error_code": code})
        return {"throttle_time": 0, "topics": [{"name": name, "partitions": parts}
                                               for name, parts in topics.items()]}
    if not offsets:
        return answer({})
    return _group_call(broker, {tp: _NOT_AVAILABLE for tp in offsets}, lambda c: c.commit_offsets(
        request.group_id, request.generation_id_or_member_epoch, request.member_id,
        getattr(request, "group_instance_id", None), retention, offsets)).addCallback(answer)


def offset_fetch(broker, request, version, connection):
    authz = _authz(broker, connection)
    if not authz.may(ApiKey.OFFSET_FETCH, ResourceType.GROUP, request.group_id):
        return {"throttle_time": 0, "error_code": _GROUP_DENIED, "topics": []}
    refused: list = []
    if request.topics is None:
        partitions = None
    else:
        visible, _ = authz.split(ApiKey.OFFSET_FETCH, ResourceType.TOPIC,
                                 (t.name for t in request.topics))
        partitions = [(t.name, p) for t in request.topics for p in t.partition_indexes
                      if t.name in visible]
        refused = [(t.name, p) for t in request.topics for p in t.partition_indexes
                   if t.name not in visible]

    def answer(result):
        code, fetched = result
        topics: dict[str, list] = {}
        for topic, partition in refused:
            topics.setdefault(topic, []).append({
                "partition_index": partition, "committed_offset": -1,
                "committed_leader_epoch": -1, "metadata": None, "error_code": _TOPIC_DENIED})
        for (topic, partition), f in fetched.items():
            if request.topics is None and not authz.may(ApiKey.OFFSET_FETCH,
                                                        ResourceType.TOPIC, topic):
                continue
            topics.setdefault(topic, []).append({
                "partition_index": partition, "committed_offset": f.offset,
                "committed_leader_epoch": f.leader_epoch, "metadata": f.metadata,
                "error_code": f.error_code})
        return {"throttle_time": 0, "error_code": code,
                "topics": [{"name": name, "partitions": parts}
                           for name, parts in topics.items()]}
    return _group_call(broker, (_NOT_AVAILABLE, {}), lambda c: c.fetch_offsets(
        request.group_id, partitions)).addCallback(answer)


def describe_groups(broker, request, version, connection):
    authz = _authz(broker, connection)
    want_operations = getattr(request, "include_authorized_operations", False)

    def operations(g) -> int:
        # KIP-430: only a group described without error reports them (Kafka's rule)
        if not want_operations or g.error_code:
            return NOT_REQUESTED
        return authz.authorized_operations(ResourceType.GROUP, g.group_id)

    def answer(groups):
        return {"throttle_time": 0, "groups": [{
            "error_code": g.error_code, "group_id": g.group_id, "group_state": g.state,
            "protocol_type": g.protocol_type, "protocol_data": g.protocol,
            "authorized_operations": operations(g),
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                         "client_id": m.client_id, "client_host": m.client_host,
                         "member_metadata": m.metadata, "member_assignment": m.assignment}
                        for m in g.members]} for g in groups]}
    allowed, _ = authz.split(ApiKey.DESCRIBE_GROUPS, ResourceType.GROUP, request.groups)
    wanted = [g for g in request.groups if g in allowed]
    denied = [_unavailable_group(g, _GROUP_DENIED) for g in request.groups if g not in allowed]
    unavailable = [_unavailable_group(g) for g in wanted]
    if not wanted:
        return answer(denied)
    return _group_call(broker, unavailable, lambda c: c.describe_groups(
        wanted)).addCallback(lambda groups: answer(list(groups) + denied))


def _unavailable_group(group_id: str, code: int = _NOT_AVAILABLE):
    from kafkalite.coordinator.types import DescribedGroup

    return DescribedGroup(code, group_id, "", "", "")


def list_groups(broker, request, version, connection):
    states = list(getattr(request, "states_filter", ()) or ()) or None

    authz = _authz(broker, connection)
    everything = authz.may(ApiKey.LIST_GROUPS, ResourceType.CLUSTER)

    def answer(result):
        code, groups = result
        return {"throttle_time": 0, "error_code": code, "groups": [
            {"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state}
            for g in groups if everything or authz.may(ApiKey.LIST_GROUPS, ResourceType.GROUP,
                                                       g.group_id)]}
    return _group_call(broker, (_NOT_AVAILABLE, []), lambda c: c.list_groups(
        states)).addCallback(answer)


def delete_groups(broker, request, version, connection):
    allowed, refused = _authz(broker, connection).split(
        ApiKey.DELETE_GROUPS, ResourceType.GROUP, request.groups_names)
    names = [g for g in request.groups_names if g in allowed]

    def answer(codes):
        codes = {**codes, **{g: _GROUP_DENIED for g in refused}}
        return {"throttle_time": 0, "results": [{"group_id": g, "error_code": code}
                                                for g, code in codes.items()]}
    if not names:
        return answer({})
    return _group_call(broker, {g: _NOT_AVAILABLE for g in names}, lambda c: c.delete_groups(
        names)).addCallback(answer)


def offset_delete(broker, request, version, connection):
    authz = _authz(broker, connection)
    if not authz.may(ApiKey.OFFSET_DELETE, ResourceType.GROUP, request.group_id):
        return {"throttle_time": 0, "error_code": _GROUP_DENIED, "topics": []}
    readable, _ = authz.split(ApiKey.OFFSET_DELETE, ResourceType.TOPIC,
                              (t.name for t in request.topics))
    refused = {(t.name, p.partition_index): _TOPIC_DENIED for t in request.topics
               for p in t.partitions if t.name not in readable}
    partitions = [(t.name, p.partition_index) for t in request.topics for p in t.partitions
                  if t.name in readable]

    def answer(result):
        code, codes = result
        topics: dict[str, list] = {}
        for (topic, partition), c in {**codes, **refused}.items():
            topics.setdefault(topic, []).append({"partition_index": partition, "error_code": c})
        return {"throttle_time": 0, "error_code": code, "topics": [
            {"name": name, "partitions": parts} for name, parts in topics.items()]}
    return _group_call(broker, (_NOT_AVAILABLE, {}), lambda c: c.delete_offsets(
        request.group_id, partitions)).addCallback(answer)
