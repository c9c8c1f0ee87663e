"""Authorization of one request: the connection's principal and host, asked of the broker's
authorizer with the operation ``security.operations`` names for the API.

``RequestAuthz.of(broker, connection)`` is what a handler holds. Without an authorizer
(``authorizer.class.name`` empty) everything is allowed and nothing is looked up.

The ``gate_*`` functions do Kafka's split for the requests not yet served by one handler over
the model (Produce and Fetch are, in ``server.data_apis``), on kafkalite's native request objects
(the Kafka protocol's handlers translate into these, so both protocols are checked by the same
code): the authorized part goes on to the ReplicaManager, the refused topic-partitions come back
with TOPIC_AUTHORIZATION_FAILED, and ``merge`` puts the two answers together.
"""

from __future__ import annotations

from typing import Callable, Iterable

from twisted.internet import defer

from kafkalite.errors import ClusterAuthorizationFailedError, TopicAuthorizationFailedError
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ANONYMOUS, CLUSTER_NAME, AclOperation, ResourceType
from kafkalite.security.operations import (
    SUPPORTED_OPERATIONS, bit_field, error_for, operation_for,
)

__all__ = ["RequestAuthz", "ALLOW_ALL"]

_TOPIC_DENIED = TopicAuthorizationFailedError.code


def _peer_host(connection) -> str:
    try:
        return connection.transport.getPeer().host
    except Exception:  # noqa: BLE001 - no transport (tests) or not an IP peer
        return ""


class RequestAuthz:
    def __init__(self, authorizer=None, principal: str = ANONYMOUS, host: str = ""):
        self.authorizer = authorizer
        self.principal = principal
        self.host = host

    @classmethod
    def of(cls, broker, connection) -> "RequestAuthz":
        authorizer = getattr(getattr(broker, "security", None), "authorizer", None)
        if authorizer is None:
            return ALLOW_ALL
        return cls(authorizer, getattr(connection, "principal", ANONYMOUS),
                   _peer_host(connection))

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


def _then(result, convert: Callable):
    if isinstance(result, defer.Deferred):
        return result.addCallback(convert)
    return convert(result)


def cluster_refusal(api_key: int) -> ClusterAuthorizationFailedError:
    return ClusterAuthorizationFailedError(f"not authorized for {ApiKey.name_of(api_key)}")


def gate_config_resources(authz: RequestAuthz, api_key: int, resources: list, serve: Callable,
                          refused: Callable):
    """Describe/Alter(Incremental)Configs: a topic needs the operation on the topic, a broker
    or broker logger on the cluster. ``resources`` are tuples starting (type code, name);
    ``serve(allowed)`` fires with one result per allowed resource, in order;
    ``refused(type, name, code, message)`` makes a refused one's result."""
    if not authz.enabled:
        return defer.maybeDeferred(serve, resources)
    keep, denied = [], {}
    for index, resource in enumerate(resources):
        is_topic = resource[0] == m.CONFIG_RESOURCE_TOPIC
        resource_type = ResourceType.TOPIC if is_topic else ResourceType.CLUSTER
        if authz.may(api_key, resource_type, resource[1] if is_topic else CLUSTER_NAME):
            keep.append(resource)
        else:
            denied[index] = refused(resource[0], resource[1], error_for(resource_type).code,
                                    f"not authorized to {ApiKey.name_of(api_key)}")

    def merge(results):
        served = iter(results)
        return [denied[i] if i in denied else next(served) for i in range(len(resources))]
    return defer.maybeDeferred(serve, keep).addCallback(merge)


def gate_delete_records(authz: RequestAuthz, offsets: dict, serve: Callable):
    """DeleteRecords: Delete on each topic; ``serve(offsets)`` fires with
    ``{(topic, partition): (low watermark, error code)}``."""
    if not authz.enabled:
        return defer.maybeDeferred(serve, offsets)
    allowed, _ = authz.split(ApiKey.DELETE_RECORDS, ResourceType.TOPIC,
                             {topic for topic, _ in offsets})
    denied = {tp: (-1, _TOPIC_DENIED) for tp in offsets if tp[0] not in allowed}
    keep = {tp: o for tp, o in offsets.items() if tp[0] in allowed}

    def merge(results):
        return {**results, **denied}
    if not keep:
        return defer.succeed(denied)
    return defer.maybeDeferred(serve, keep).addCallback(merge)
