"""DescribeCluster and the SASL APIs: the cluster as a client sees it, and the connection's
authentication (whose state ``connection_security.ConnectionSecurity`` keeps)."""

from __future__ import annotations

from kafkalite.protocol import messages as m
from kafkalite.security.operations import NOT_REQUESTED

__all__ = ["handle_describe_cluster", "handle_sasl_handshake", "handle_sasl_authenticate"]


def handle_describe_cluster(broker, ctx, request: m.DescribeClusterRequest):
    """KIP-700: the brokers' addresses on the client's listener, the controller, and (when
    asked) what the client may do to the cluster."""
    metadata = broker.metadata_cache
    operations = NOT_REQUESTED
    if request.include_cluster_authorized_operations:
        operations = ctx.authz.cluster_authorized_operations()
    return m.DescribeClusterResponse(
        cluster_id=broker.cluster_id, controller_id=metadata.controller_id,
        cluster_authorized_operations=operations,
        brokers=[m.DescribeClusterBroker(b.node_id, b.host, b.port, b.rack)
                 for b in metadata.broker_list(ctx.listener)])


def handle_sasl_handshake(broker, ctx, request: m.SaslHandshakeRequest):
    return ctx.connection_security.handshake(request)


def handle_sasl_authenticate(broker, ctx, request: m.SaslAuthenticateRequest):
    return ctx.connection_security.authenticate(request)
