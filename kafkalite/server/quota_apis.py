"""DescribeClientQuotas and AlterClientQuotas (KIP-546), one handler each for both protocols, as
Kafka 2.8's KafkaApis in ZooKeeper mode: any broker serves both (2.8 forwards nothing to the
controller in ZooKeeper mode), Describe with DescribeConfigs on the cluster and Alter with
AlterConfigs on the cluster, else the request's CLUSTER_AUTHORIZATION_FAILED (every entity's,
for Alter).

The work (``quota_admin``) reads and writes the quota znodes on the ZooKeeper thread pool.
"""

from __future__ import annotations

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ResourceType
from kafkalite.server import quota_admin
from kafkalite.zk.quotas import QuotaZkStore

__all__ = ["handle_describe_client_quotas", "handle_alter_client_quotas"]


def handle_describe_client_quotas(broker, ctx, request: m.DescribeClientQuotasRequest):
    if not ctx.authz.may(ApiKey.DESCRIBE_CLIENT_QUOTAS, ResourceType.CLUSTER):
        # ApiError.fromThrowable of the default exception: no message
        return request.error_response(errors.ClusterAuthorizationFailedError.code, None)
    return broker.deferred_zk.run(quota_admin.describe_client_quotas, QuotaZkStore(broker.zk),
                                  request.components, request.strict)


def handle_alter_client_quotas(broker, ctx, request: m.AlterClientQuotasRequest):
    if not ctx.authz.may(ApiKey.ALTER_CLIENT_QUOTAS, ResourceType.CLUSTER):
        return request.error_response(errors.ClusterAuthorizationFailedError.code, None)
    return broker.deferred_zk.run(quota_admin.alter_client_quotas, QuotaZkStore(broker.zk),
                                  request.entries, request.validate_only)
