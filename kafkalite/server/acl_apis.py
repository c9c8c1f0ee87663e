"""DescribeAcls, CreateAcls and DeleteAcls, for both protocols (Kafka 2.8's handlers).

The logic works on ``security.acl`` objects; the ``handle_*`` functions serve the API table's
rows over the protocol-neutral model (Kafka's converters: ``protocol.kafka.convert.acls``). Describe
needs Describe on the cluster, create and delete need Alter on the cluster; a broker without an
authorizer answers SECURITY_DISABLED. A Cluster ACL must name ``kafka-cluster``, and no resource
name may be empty or hold a ``/`` (it becomes a znode).
"""

from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalite import errors
from kafkalite.errors import code_of
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import (
    CLUSTER_NAME, AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter,
    AclOperation, AclPermissionType, PatternType, ResourcePattern, ResourcePatternFilter,
    ResourceType,
)
from kafkalite.server.request_authz import RequestAuthz

log = logging.getLogger(__name__)

_DISABLED = (errors.SecurityDisabledError.code, "No Authorizer is configured on the broker")


def _authorizer(broker):
    return getattr(getattr(broker, "security", None), "authorizer", None)


def _refused(authz: RequestAuthz, api_key: int):
    if authz.may(api_key, ResourceType.CLUSTER):
        return None
    return (errors.ClusterAuthorizationFailedError.code,
            f"{authz.principal} may not {ApiKey.name_of(api_key)}: needs "
            f"{'Describe' if api_key == ApiKey.DESCRIBE_ACLS else 'Alter'} on the cluster")


def _message(exc) -> str:
    return getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"


def make_filter(resource_type: int, name, pattern_type: int, principal, host, operation: int,
                permission: int) -> AclBindingFilter:
    """A filter from wire codes; ValueError for codes Kafka does not have."""
    return AclBindingFilter(
        ResourcePatternFilter(ResourceType(resource_type), name, PatternType(pattern_type)),
        AccessControlEntryFilter(principal, host, AclOperation(operation),
                                 AclPermissionType(permission)))


def make_binding(resource_type: int, name: str, pattern_type: int, principal: str, host: str,
                 operation: int, permission: int) -> AclBinding:
    """A binding to store; ValueError naming what is wrong with it."""
    rtype, ptype = ResourceType(resource_type), PatternType(pattern_type)
    op, perm = AclOperation(operation), AclPermissionType(permission)
    if rtype in (ResourceType.ANY, ResourceType.UNKNOWN) or not ptype.is_specific or \
            op in (AclOperation.ANY, AclOperation.UNKNOWN) or \
            perm in (AclPermissionType.ANY, AclPermissionType.UNKNOWN):
        raise ValueError("an ACL to create cannot hold ANY or UNKNOWN")
    if rtype == ResourceType.CLUSTER and name != CLUSTER_NAME:
        raise ValueError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not name:
        raise ValueError("Invalid empty resource name")
    if "/" in name:
        raise ValueError(f"ACL binding contains invalid resource name: {name}")
    if ":" not in (principal or ""):
        raise ValueError(f"principal {principal!r} must look like User:<name>")
    return AclBinding(ResourcePattern(rtype, name, ptype),
                      AccessControlEntry(principal, host or "*", op, perm))


# --- protocol-neutral ---------------------------------------------------------------------------

def describe(broker, authz: RequestAuthz, binding_filter_args) -> tuple[int, str | None, list]:
    authorizer = _authorizer(broker)
    refused = _refused(authz, ApiKey.DESCRIBE_ACLS) if authorizer is not None else None
    if refused:
        return refused[0], refused[1], []
    if authorizer is None:
        return _DISABLED[0], _DISABLED[1], []
    try:
        binding_filter = make_filter(*binding_filter_args)
    except ValueError as exc:
        return errors.InvalidRequestError.code, str(exc), []
    return 0, None, authorizer.acls(binding_filter)


def create(broker, authz: RequestAuthz, creations: list[tuple]) -> defer.Deferred:
    """Fires with ``[(error code, message)]``, one per creation."""
    authorizer = _authorizer(broker)
    if authorizer is None:
        return defer.succeed([_DISABLED] * len(creations))
    refused = _refused(authz, ApiKey.CREATE_ACLS)
    if refused:
        return defer.succeed([refused] * len(creations))
    results: list = [None] * len(creations)
    valid, positions = [], []
    for index, args in enumerate(creations):
        try:
            valid.append(make_binding(*args))
            positions.append(index)
        except ValueError as exc:
            results[index] = (errors.InvalidRequestError.code, str(exc))

    def answer(outcomes):
        for index, outcome in zip(positions, outcomes):
            results[index] = (0, None) if outcome is None else (code_of(outcome),
                                                               _message(outcome))
        for binding in valid:
            log.info("%s added ACL %s", authz.principal, binding)
        return results
    return authorizer.create_acls(valid).addCallback(answer)


def delete(broker, authz: RequestAuthz, filters: list[tuple]) -> defer.Deferred:
    """Fires with ``[(error code, message, [AclBinding deleted])]``, one per filter."""
    authorizer = _authorizer(broker)
    if authorizer is None:
        return defer.succeed([(*_DISABLED, [])] * len(filters))
    refused = _refused(authz, ApiKey.DELETE_ACLS)
    if refused:
        return defer.succeed([(*refused, [])] * len(filters))
    results: list = [None] * len(filters)
    valid, positions = [], []
    for index, args in enumerate(filters):
        try:
            valid.append(make_filter(*args))
            positions.append(index)
        except ValueError as exc:
            results[index] = (errors.InvalidRequestError.code, str(exc), [])

    def answer(outcomes):
        for index, (deleted, error) in zip(positions, outcomes):
            results[index] = ((0, None, deleted) if error is None
                              else (code_of(error), _message(error), deleted))
            for binding in deleted:
                log.info("%s removed ACL %s", authz.principal, binding)
        return results
    return authorizer.delete_acls(valid).addCallback(answer)


def _group(bindings: list[AclBinding]) -> dict[ResourcePattern, list[AccessControlEntry]]:
    grouped: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for binding in bindings:
        grouped.setdefault(binding.pattern, []).append(binding.entry)
    return grouped


# --- the handlers (one per API, both protocols) --------------------------------------------------

def handle_describe_acls(broker, ctx, request: m.DescribeAclsRequest) -> m.DescribeAclsResponse:
    code, message, bindings = describe(broker, ctx.authz, tuple(request.filter))
    return m.DescribeAclsResponse(error_code=code, error_message=message, resources=[
        m.AclResource(int(p.resource_type), p.name, int(p.pattern_type), [
            m.AclDescription(e.principal, e.host, int(e.operation), int(e.permission_type))
            for e in entries]) for p, entries in _group(bindings).items()])


def handle_create_acls(broker, ctx, request: m.CreateAclsRequest) -> defer.Deferred:
    return create(broker, ctx.authz, [tuple(c) for c in request.creations]).addCallback(
        lambda results: m.CreateAclsResponse(results=[m.AclCreationResult(code, message)
                                                      for code, message in results]))


def handle_delete_acls(broker, ctx, request: m.DeleteAclsRequest) -> defer.Deferred:
    return delete(broker, ctx.authz, [tuple(f) for f in request.filters]).addCallback(
        lambda results: m.DeleteAclsResponse(filter_results=[
            m.DeleteAclsFilterResult(code, message, [
                m.DeleteAclsMatchingAcl(0, None, int(b.pattern.resource_type), b.pattern.name,
                                        int(b.pattern.pattern_type), b.entry.principal,
                                        b.entry.host, int(b.entry.operation),
                                        int(b.entry.permission_type)) for b in deleted])
            for code, message, deleted in results]))
