"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), one handler each for both
protocols, as Kafka 2.8's KafkaApis in ZooKeeper mode:

* Describe is served by any broker, with Describe on the cluster (else the request's
  CLUSTER_AUTHORIZATION_FAILED);
* Alter only by the active controller (Kafka 2.8 forwards nothing in ZooKeeper mode: any other
  broker answers NOT_CONTROLLER for every user, and clients send it to the controller), then with
  Alter on the cluster (else CLUSTER_AUTHORIZATION_FAILED for every user).

The work (``scram_admin``) reads and writes ``/config/users`` on the ZooKeeper thread pool; a
credential written here reaches every broker's SCRAM cache through the ``/config/changes``
notification.
"""

from __future__ import annotations

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ResourceType
from kafkalite.server import scram_admin
from kafkalite.server.topic_admin import is_active_controller
from kafkalite.zk.credentials import UserConfigZkStore

__all__ = ["handle_describe_user_scram_credentials", "handle_alter_user_scram_credentials"]


def handle_describe_user_scram_credentials(broker, ctx,
                                           request: m.DescribeUserScramCredentialsRequest):
    if not ctx.authz.may(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, ResourceType.CLUSTER):
        # Kafka's getErrorResponse of the default exception: no message
        return request.error_response(errors.ClusterAuthorizationFailedError.code, None)
    return broker.deferred_zk.run(scram_admin.describe_user_scram_credentials,
                                  UserConfigZkStore(broker.zk), request.users)


def handle_alter_user_scram_credentials(broker, ctx,
                                        request: m.AlterUserScramCredentialsRequest):
    if not is_active_controller(broker):
        return request.error_response(errors.NotControllerError.code, None)
    if not ctx.authz.may(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, ResourceType.CLUSTER):
        return request.error_response(errors.ClusterAuthorizationFailedError.code, None)
    return broker.deferred_zk.run(scram_admin.alter_user_scram_credentials,
                                  UserConfigZkStore(broker.zk), request.deletions,
                                  request.upsertions)
