"""Which ACL operation each API needs on which resource, as Kafka 2.8's KafkaApis checks them,
and the error a refusal gets (pure: a table and two lookups).

The request handlers ask ``operation_for(api_key, resource_type)`` what to check, so this table
is the one place that says, e.g., that Produce needs Write on the topic and Fetch needs Read.
Where an API checks one resource type in two ways (Fetch from a follower needs ClusterAction on
the cluster; from a consumer, Read on the topic), the entry is keyed by the role.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkalite import errors
from kafkalite.security.acl import AclOperation as Op
from kafkalite.security.acl import ResourceType as Res

__all__ = ["Check", "API_CHECKS", "operation_for", "error_for", "FOLLOWER", "CONSUMER",
           "SASL_APIS_BEFORE_AUTHENTICATION", "SUPPORTED_OPERATIONS", "NOT_REQUESTED",
           "bit_field"]

FOLLOWER = "follower"     # a broker replicating (Fetch / OffsetForLeaderEpoch with a replica id)
CONSUMER = "consumer"


@dataclass(frozen=True)
class Check:
    operation: Op
    resource_type: Res
    role: str | None = None      # None: every caller; else FOLLOWER or CONSUMER


_CLUSTER_ACTION = (Check(Op.CLUSTER_ACTION, Res.CLUSTER),)

#: api key -> the checks Kafka 2.8 makes (several on one resource type: any one of them)
API_CHECKS: dict[int, tuple[Check, ...]] = {
    0: (Check(Op.WRITE, Res.TRANSACTIONAL_ID), Check(Op.WRITE, Res.TOPIC)),            # Produce
    1: (Check(Op.CLUSTER_ACTION, Res.CLUSTER, FOLLOWER),                                 # Fetch
        Check(Op.READ, Res.TOPIC, CONSUMER)),
    2: (Check(Op.DESCRIBE, Res.TOPIC),),                                                  # ListOffsets
    3: (Check(Op.DESCRIBE, Res.TOPIC), Check(Op.CREATE, Res.CLUSTER)),                   # Metadata
    4: _CLUSTER_ACTION,                                                                   # LeaderAndIsr
    5: _CLUSTER_ACTION,                                                                   # StopReplica
    6: _CLUSTER_ACTION,                                                                   # UpdateMetadata
    7: _CLUSTER_ACTION,                                                                   # ControlledShutdown
    8: (Check(Op.READ, Res.GROUP), Check(Op.READ, Res.TOPIC)),                           # OffsetCommit
    9: (Check(Op.DESCRIBE, Res.GROUP), Check(Op.DESCRIBE, Res.TOPIC)),                   # OffsetFetch
    10: (Check(Op.DESCRIBE, Res.GROUP), Check(Op.DESCRIBE, Res.TRANSACTIONAL_ID)),       # FindCoordinator
    11: (Check(Op.READ, Res.GROUP),),                                                    # JoinGroup
    12: (Check(Op.READ, Res.GROUP),),                                                    # Heartbeat
    13: (Check(Op.READ, Res.GROUP),),                                                    # LeaveGroup
    14: (Check(Op.READ, Res.GROUP),),                                                    # SyncGroup
    15: (Check(Op.DESCRIBE, Res.GROUP),),                                                # DescribeGroups
    16: (Check(Op.DESCRIBE, Res.CLUSTER), Check(Op.DESCRIBE, Res.GROUP)),               # ListGroups
    17: (),                                                                               # SaslHandshake
    18: (),                                                                               # ApiVersions
    19: (Check(Op.CREATE, Res.CLUSTER), Check(Op.CREATE, Res.TOPIC)),                   # CreateTopics
    20: (Check(Op.DELETE, Res.TOPIC),),                                                  # DeleteTopics
    21: (Check(Op.DELETE, Res.TOPIC),),                                                  # DeleteRecords
    22: (Check(Op.WRITE, Res.TRANSACTIONAL_ID), Check(Op.IDEMPOTENT_WRITE, Res.CLUSTER)),  # InitProducerId
    # OffsetForLeaderEpoch: ClusterAction on the cluster lets any caller through (it was an
    # inter-broker API before KIP-320), else Describe on each topic
    23: (Check(Op.CLUSTER_ACTION, Res.CLUSTER), Check(Op.DESCRIBE, Res.TOPIC)),
    24: (Check(Op.WRITE, Res.TRANSACTIONAL_ID), Check(Op.WRITE, Res.TOPIC)),            # AddPartitionsToTxn
    25: (Check(Op.WRITE, Res.TRANSACTIONAL_ID), Check(Op.READ, Res.GROUP)),             # AddOffsetsToTxn
    26: (Check(Op.WRITE, Res.TRANSACTIONAL_ID),),                                       # EndTxn
    27: _CLUSTER_ACTION,                                                                  # WriteTxnMarkers
    28: (Check(Op.WRITE, Res.TRANSACTIONAL_ID), Check(Op.READ, Res.GROUP),              # TxnOffsetCommit
         Check(Op.READ, Res.TOPIC)),
    29: (Check(Op.DESCRIBE, Res.CLUSTER),),                                              # DescribeAcls
    30: (Check(Op.ALTER, Res.CLUSTER),),                                                 # CreateAcls
    31: (Check(Op.ALTER, Res.CLUSTER),),                                                 # DeleteAcls
    32: (Check(Op.DESCRIBE_CONFIGS, Res.CLUSTER), Check(Op.DESCRIBE_CONFIGS, Res.TOPIC)),  # DescribeConfigs
    33: (Check(Op.ALTER_CONFIGS, Res.CLUSTER), Check(Op.ALTER_CONFIGS, Res.TOPIC)),     # AlterConfigs
    34: (Check(Op.ALTER, Res.CLUSTER),),                                                 # AlterReplicaLogDirs
    35: (Check(Op.DESCRIBE, Res.CLUSTER),),                                              # DescribeLogDirs
    36: (),                                                                               # SaslAuthenticate
    37: (Check(Op.ALTER, Res.TOPIC),),                                                   # CreatePartitions
    # the delegation token APIs: creating, renewing and expiring check the principal against
    # the token (owner or renewer), not ACLs, in Kafka 2.8
    38: (),                                                                               # CreateDelegationToken
    39: (),                                                                               # RenewDelegationToken
    40: (),                                                                               # ExpireDelegationToken
    41: (Check(Op.DESCRIBE, Res.DELEGATION_TOKEN),),                                     # DescribeDelegationToken
    42: (Check(Op.DELETE, Res.GROUP),),                                                  # DeleteGroups
    43: (Check(Op.ALTER, Res.CLUSTER),),                                                 # ElectLeaders
    44: (Check(Op.ALTER_CONFIGS, Res.CLUSTER), Check(Op.ALTER_CONFIGS, Res.TOPIC)),     # IncrementalAlterConfigs
    45: (Check(Op.ALTER, Res.CLUSTER),),                                                 # AlterPartitionReassignments
    46: (Check(Op.DESCRIBE, Res.CLUSTER),),                                              # ListPartitionReassignments
    47: (Check(Op.DELETE, Res.GROUP), Check(Op.READ, Res.TOPIC)),                       # OffsetDelete
    48: (Check(Op.DESCRIBE_CONFIGS, Res.CLUSTER),),                                      # DescribeClientQuotas
    49: (Check(Op.ALTER_CONFIGS, Res.CLUSTER),),                                         # AlterClientQuotas
    50: (Check(Op.DESCRIBE, Res.CLUSTER),),                                              # DescribeUserScramCredentials
    51: (Check(Op.ALTER, Res.CLUSTER),),                                                 # AlterUserScramCredentials
    57: (Check(Op.ALTER, Res.CLUSTER),),                                                 # UpdateFeatures
    60: (Check(Op.DESCRIBE, Res.CLUSTER),),     # DescribeCluster: its authorized operations
    61: (Check(Op.READ, Res.TOPIC),),                                                 # DescribeProducers
}

#: what a SASL listener accepts before the client has authenticated (Kafka's rule)
SASL_APIS_BEFORE_AUTHENTICATION = frozenset({17, 18, 36})


#: the operations whose bits KIP-430's "authorized operations" report, per resource type (Kafka's
#: AclEntry.supportedOperations); without an authorizer every one of them is reported
SUPPORTED_OPERATIONS: dict[Res, tuple[Op, ...]] = {
    Res.TOPIC: (Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER,
                Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    Res.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE),
    Res.CLUSTER: (Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
                  Op.IDEMPOTENT_WRITE, Op.ALTER, Op.DESCRIBE),
    Res.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE),
    Res.DELEGATION_TOKEN: (Op.DESCRIBE,),
}

#: the authorized-operations field's value when the client did not ask (Int.MinValue)
NOT_REQUESTED = -(1 << 31)


def bit_field(operations) -> int:
    """Bit ``code`` set for each operation (Kafka's Utils.to32BitField)."""
    value = 0
    for operation in operations:
        value |= 1 << int(operation)
    return value


def operation_for(api_key: int, resource_type: Res, role: str | None = None) -> Op:
    """The operation ``api_key`` checks on ``resource_type`` (for ``role`` where it matters).
    KeyError when the API checks nothing on that type: a handler asking for it is a bug."""
    for check in API_CHECKS[api_key]:
        if check.resource_type == resource_type and check.role in (None, role):
            return check.operation
    raise KeyError(f"api {api_key} checks nothing on {resource_type.name}"
                   + (f" for a {role}" if role else ""))


_ERRORS = {
    Res.TOPIC: errors.TopicAuthorizationFailedError,
    Res.GROUP: errors.GroupAuthorizationFailedError,
    Res.CLUSTER: errors.ClusterAuthorizationFailedError,
    Res.TRANSACTIONAL_ID: errors.TransactionalIdAuthorizationFailedError,
}


def error_for(resource_type: Res) -> type[errors.KafkaError]:
    """The error a refusal on ``resource_type`` gets (Kafka's AclEntry.authorizationError)."""
    return _ERRORS[resource_type]
