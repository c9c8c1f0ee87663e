"""What Kafka 2.8's KafkaApis answers where kafkalite once differed, with Kafka-protocol requests
served through the pipeline (the API table's handlers) and kafkalite's own AclAuthorizer deciding:

- KIP-430's authorized operations (DescribeCluster): the bit field of the operations Kafka
  lists for the resource type that the principal may do; every one of them without an
  authorizer; "not requested" (Int.MinValue) unless asked or when refused (Metadata's are in
  test_metadata_handlers.py, with OffsetForLeaderEpoch's ACL rule; DescribeGroups' and
  FindCoordinator's in test_group_handlers.py).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from twisted.internet.task import Clock

from kafkalite.coordinator.types import OFFSETS_TOPIC
from kafkalite.protocol import messages as m
from kafkalite.security.acl import (
    AccessControlEntry as Ace, AclOperation as Op, AclPermissionType as Perm,
    ResourcePattern, ResourceType as Rt,
)
from kafkalite.security.acl_authorizer import AclAuthorizer
from kafkalite.security.authorizer import AclSnapshot, AuthorizerSettings
from kafkalite.server.connection_security import ConnectionSecurity
from kafkalite.server.dispatch import ApiDispatcher
from kafkalite.server.metadata_cache import MetadataCache

from pipeline_driver import connect, kafka_frame, read_kafka_responses

NOT_REQUESTED = -(1 << 31)
ALICE = "User:alice"
# Kafka's AclEntry.supportedOperations as bits (1 << AclOperation code)
CLUSTER_OPS = sum(1 << op for op in (5, 9, 10, 11, 12, 7, 8))


def _authorizer(acls: dict, allow_if_no_acl: bool = True) -> AclAuthorizer:
    authorizer = AclAuthorizer(AuthorizerSettings(allow_everyone_if_no_acl_found=allow_if_no_acl),
                               None, None)
    authorizer.snapshot = AclSnapshot(acls)
    return authorizer


def _deny(resource_type: Rt, name: str, *operations: Op) -> dict:
    """ACLs allowing alice All on the resource but ``operations`` (an ACL that applies ends
    allow.everyone.if.no.acl.found's grant for that resource)."""
    return {ResourcePattern(resource_type, name): [Ace(ALICE, "*", Op.ALL, Perm.ALLOW)] + [
        Ace(ALICE, "*", op, Perm.DENY) for op in operations]}


def _broker(authorizer=None) -> SimpleNamespace:
    """What the handlers read of a broker: one with a metadata cache of three topics."""
    cache = MetadataCache(1)
    cache.update(m.UpdateMetadataRequest(
        controller_id=1, controller_epoch=1,
        partition_states=[m.UpdateMetadataPartitionState(name, 0, 1, 1, 0, [1], 0, [1], [])
                          for name in ("orders", "payments", OFFSETS_TOPIC)],
        live_brokers=[m.UpdateMetadataBroker(1, "10.0.0.1", 9092)]))
    return SimpleNamespace(
        config=SimpleNamespace(auto_create_topics_enable=False), reactor=Clock(),
        replica_manager=None, metadata_cache=cache, cluster_id="c",
        security=SimpleNamespace(authorizer=authorizer))


# --- KIP-430: authorized operations ------------------------------------------------------------

def _describe_cluster(broker, include: bool) -> int:
    """DescribeCluster's cluster_authorized_operations, served through the pipeline (the API
    table's handler) to alice."""
    security = ConnectionSecurity.plaintext()
    security.principal = ALICE
    protocol, transport = connect(ApiDispatcher(broker), security=security,
                                  listener="PLAINTEXT")
    protocol.dataReceived(kafka_frame(60, 0, 7, {"include_cluster_authorized_operations": include}))
    [(_, answer)] = read_kafka_responses(transport, [(60, 0)])
    return answer.cluster_authorized_operations


def test_cluster_operations_are_none_without_describe_on_the_cluster():
    broker = _broker(_authorizer(_deny(Rt.CLUSTER, "kafka-cluster", Op.DESCRIBE)))
    assert _describe_cluster(broker, True) == 0


@pytest.mark.parametrize("include, expected", [(True, CLUSTER_OPS), (False, NOT_REQUESTED)])
def test_describe_cluster(include, expected):
    assert _describe_cluster(_broker(), include) == expected
