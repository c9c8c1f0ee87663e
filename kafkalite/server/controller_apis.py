"""The controller's requests to a broker (LeaderAndIsr, UpdateMetadata, StopReplica) and a
broker's ControlledShutdown to the controller. Native protocol only: brokers and the controller
talk kafkalite's protocol, so Kafka's clients are never offered these.

Each needs ClusterAction on the cluster (brokers only). The controller's requests arrive only on
the controller's listener (the API table's listener rule), and are obeyed only when ZooKeeper
backs the claimed controller and epochs (``server.controller_requests``).
"""

from __future__ import annotations

import logging

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

__all__ = ["handle_leader_and_isr", "handle_update_metadata", "handle_stop_replica",
           "handle_controlled_shutdown"]


def handle_leader_and_isr(broker, ctx, request: m.LeaderAndIsrRequest):
    ctx.authz.require_cluster(ApiKey.LEADER_AND_ISR)
    return broker.controller_requests.admit(request, broker.apply_leader_and_isr)


def handle_update_metadata(broker, ctx, request: m.UpdateMetadataRequest):
    ctx.authz.require_cluster(ApiKey.UPDATE_METADATA)
    return broker.controller_requests.admit(request, lambda r: update_metadata(broker, r))


def update_metadata(broker, request: m.UpdateMetadataRequest) -> m.UpdateMetadataResponse:
    metadata = broker.metadata_cache
    if request.controller_epoch < metadata.controller_epoch:
        return request.error_response(
            errors.StaleControllerEpochError.code,
            f"controller epoch {request.controller_epoch} is older than "
            f"{metadata.controller_epoch}")
    broker.replica_manager.check_controller_epoch(request.controller_epoch)
    deleted = metadata.update(request)
    if deleted:
        log.info("topics deleted: %s", ", ".join(deleted))
    broker.metadata_waits.check()       # admin answers waiting for this metadata
    return m.UpdateMetadataResponse()


def handle_stop_replica(broker, ctx, request: m.StopReplicaRequest):
    ctx.authz.require_cluster(ApiKey.STOP_REPLICA)
    return broker.controller_requests.admit(request, broker.replica_manager.stop_replicas)


def handle_controlled_shutdown(broker, ctx, request: m.ControlledShutdownRequest):
    ctx.authz.require_cluster(ApiKey.CONTROLLED_SHUTDOWN)
    controller = broker.controller
    if controller is None or not controller.is_active:
        raise errors.NotControllerError(
            f"broker {broker.broker_id} is not the controller "
            f"(the controller is {broker.metadata_cache.controller_id})")
    return controller.controlled_shutdown(request.broker_id, request.broker_epoch)
