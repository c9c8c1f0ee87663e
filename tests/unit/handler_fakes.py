"""Fakes shared by the handler-family tests that keep state in the in-memory ZooKeeper (SCRAM,
features, quotas): an authorizer that can refuse the cluster, and an in-memory session that takes
(and ignores) the ACLs sensitive znodes are created with."""

from __future__ import annotations

from controller_fakes import InMemoryZk

from kafkalite.security.acl import ResourceType

__all__ = ["ClusterAuthorizer", "AclTakingZk"]


class ClusterAuthorizer:
    """Allows everything, except the cluster with ``deny_cluster``; records what it was asked
    as ``(operation name, resource type)``."""

    def __init__(self, deny_cluster: bool):
        self.deny_cluster = deny_cluster
        self.asked: list = []

    def authorize(self, principal, host, operation, resource_type, name, log_denied=True):
        self.asked.append((operation.name, resource_type))
        return not (self.deny_cluster and resource_type == ResourceType.CLUSTER)

    def authorize_by_resource_type(self, principal, host, operation, resource_type):
        return True


class AclTakingZk(InMemoryZk):
    """The in-memory session, taking (and ignoring) the ACL that credentials' znodes are made
    with."""

    def create(self, path, data=b"", *, acl=None, **kwargs):
        return super().create(path, data, **kwargs)
