"""Authorization of one request: the connection's principal and host, asked of the broker's
authorizer with the operation ``security.operations`` names for the API.

A handler holds one as ``ctx.authz`` (``server.request_context``: the dispatcher builds it for
each request) and decides per resource what to serve and what to refuse, as Kafka's handlers do.
Without an authorizer (``authorizer.class.name`` empty) everything is allowed and nothing is
looked up.
"""

from __future__ import annotations

from typing import Iterable

from kafkalite.errors import TopicAuthorizationFailedError
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ANONYMOUS, CLUSTER_NAME, AclOperation, ResourceType
from kafkalite.security.operations import (
    SUPPORTED_OPERATIONS, bit_field, error_for, operation_for,
)

__all__ = ["RequestAuthz", "ALLOW_ALL"]

_TOPIC_DENIED = TopicAuthorizationFailedError.code


class RequestAuthz:
    def __init__(self, authorizer=None, principal: str = ANONYMOUS, host: str = ""):
        self.authorizer = authorizer
        self.principal = principal
        self.host = host

    @property
    def enabled(self) -> bool:
        return self.authorizer is not None

    def allowed(self, operation: AclOperation, resource_type: ResourceType,
                name: str = CLUSTER_NAME, log_denied: bool = True) -> bool:
        if self.authorizer is None:
            return True
        return self.authorizer.authorize(self.principal, self.host, operation, resource_type,
                                         name, log_denied)

    def may(self, api_key: int, resource_type: ResourceType, name: str = CLUSTER_NAME,
            role: str | None = None, log_denied: bool = True) -> bool:
        """May the client do what ``api_key`` does to this resource (``operations``' table)?
        ``log_denied=False`` for checks that only filter (Kafka logs those at TRACE)."""
        if self.authorizer is None:
            return True
        return self.allowed(operation_for(api_key, resource_type, role), resource_type, name,
                            log_denied)

    def split(self, api_key: int, resource_type: ResourceType, names: Iterable[str],
              role: str | None = None) -> tuple[set[str], set[str]]:
        """(allowed, refused) names; each distinct name is asked once."""
        names = set(names)
        if self.authorizer is None:
            return names, set()
        allowed = {n for n in names if self.may(api_key, resource_type, n, role)}
        return allowed, names - allowed

    def require_cluster(self, api_key: int, role: str | None = None) -> None:
        """Raise CLUSTER_AUTHORIZATION_FAILED unless the API's cluster operation is allowed."""
        if not self.may(api_key, ResourceType.CLUSTER, CLUSTER_NAME, role):
            raise error_for(ResourceType.CLUSTER)(
                f"{self.principal} is not authorized for "
                f"{operation_for(api_key, ResourceType.CLUSTER, role).zk_name} on the cluster "
                f"({ApiKey.name_of(api_key)})")

    def authorized_operations(self, resource_type: ResourceType,
                              name: str = CLUSTER_NAME) -> int:
        """KIP-430's bit field of what the client may do to the resource: each operation Kafka
        reports for the type, asked of the authorizer without logging (Kafka's
        AuthHelper.authorizedOperations); without an authorizer, all of them."""
        supported = SUPPORTED_OPERATIONS[resource_type]
        return bit_field(op for op in supported
                         if self.allowed(op, resource_type, name, log_denied=False))

    def cluster_authorized_operations(self) -> int:
        """Metadata's and DescribeCluster's cluster operations: 0 unless the client may
        Describe the cluster (a logged check, as Kafka's)."""
        if not self.allowed(AclOperation.DESCRIBE, ResourceType.CLUSTER):
            return 0
        return self.authorized_operations(ResourceType.CLUSTER)

    def may_write_idempotently(self) -> bool:
        """InitProducerId without a transactional id: IdempotentWrite on the cluster, or Write
        on any topic (Kafka 2.8's rule)."""
        if self.authorizer is None:
            return True
        return (self.allowed(AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER)
                or self.authorizer.authorize_by_resource_type(
                    self.principal, self.host, AclOperation.WRITE, ResourceType.TOPIC))


ALLOW_ALL = RequestAuthz()
