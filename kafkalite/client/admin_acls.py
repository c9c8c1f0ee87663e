"""The AdminClient's ACL calls: DescribeAcls, CreateAcls and DeleteAcls, sent to any broker (every
broker's authorizer reads and writes the same ACLs in ZooKeeper). Bindings and filters are
``kafkalite.security.acl``'s, Kafka's model.
"""

from __future__ import annotations

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.security.acl import (
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
    PatternType, ResourcePattern, ResourceType,
)

__all__ = ["describe_acls", "create_acls", "delete_acls"]


def _filter(f: AclBindingFilter) -> m.AclFilter:
    pf, ef = f.pattern_filter, f.entry_filter
    return m.AclFilter(int(pf.resource_type), pf.name, int(pf.pattern_type), ef.principal,
                       ef.host, int(ef.operation), int(ef.permission_type))


def _binding(resource_type, name, pattern_type, principal, host, operation, permission):
    return AclBinding(ResourcePattern(ResourceType(resource_type), name,
                                      PatternType(pattern_type)),
                      AccessControlEntry(principal, host, AclOperation(operation),
                                         AclPermissionType(permission)))


def describe_acls(admin, binding_filter: AclBindingFilter) -> list[AclBinding]:
    response = admin._any_broker_request(m.DescribeAclsRequest(filter=_filter(binding_filter)))
    if response.error_code:
        raise errors.for_code(response.error_code, response.error_message)
    return [_binding(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host,
                     a.operation, a.permission_type)
            for r in response.resources for a in r.acls]


def create_acls(admin, bindings: list[AclBinding]) -> list[errors.KafkaError | None]:
    """One error (or None) per binding, in order."""
    response = admin._any_broker_request(m.CreateAclsRequest(creations=[
        m.AclCreation(int(b.pattern.resource_type), b.pattern.name, int(b.pattern.pattern_type),
                      b.entry.principal, b.entry.host, int(b.entry.operation),
                      int(b.entry.permission_type)) for b in bindings]))
    return [errors.for_code(r.error_code, r.error_message) if r.error_code else None
            for r in response.results]


def delete_acls(admin, filters: list[AclBindingFilter]
                ) -> list[tuple[list[AclBinding], errors.KafkaError | None]]:
    """Per filter: the bindings it deleted, and its error (or None)."""
    response = admin._any_broker_request(m.DeleteAclsRequest(filters=[_filter(f)
                                                                      for f in filters]))
    return [([_binding(a.resource_type, a.resource_name, a.pattern_type, a.principal, a.host,
                       a.operation, a.permission_type) for a in r.matching_acls],
             errors.for_code(r.error_code, r.error_message) if r.error_code else None)
            for r in response.filter_results]
