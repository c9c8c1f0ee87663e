"""ApiVersions, DescribeCluster, SaslHandshake and SaslAuthenticate between Kafka's protocol and
the model."""

from __future__ import annotations

from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka.convert import Converter

__all__ = ["API_VERSIONS", "DESCRIBE_CLUSTER", "SASL_HANDSHAKE", "SASL_AUTHENTICATE"]


def _api_versions_response(r: m.ApiVersionsResponse, version: int) -> dict:
    # v3's KIP-584 tagged fields; kio leaves out the ones at their default (no features, epoch
    # -1), as Kafka's serializer does
    return {"error_code": r.error_code, "throttle_time": r.throttle_time_ms,
            "api_keys": [{"api_key": v.api_key, "min_version": v.min_version,
                          "max_version": v.max_version} for v in r.api_versions],
            "supported_features": [{"name": f.name, "min_version": f.min_version,
                                    "max_version": f.max_version}
                                   for f in r.supported_features],
            "finalized_features_epoch": r.finalized_features_epoch,
            "finalized_features": [{"name": f.name, "min_version_level": f.min_version_level,
                                    "max_version_level": f.max_version_level}
                                   for f in r.finalized_features]}


API_VERSIONS = Converter(lambda entity, version: m.ApiVersionsRequest(),
                         _api_versions_response)


def _describe_cluster_response(r: m.DescribeClusterResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "error_code": r.error_code,
            "error_message": r.error_message, "cluster_id": r.cluster_id,
            "controller_id": r.controller_id,
            "cluster_authorized_operations": r.cluster_authorized_operations,
            "brokers": [{"broker_id": b.broker_id, "host": b.host, "port": b.port,
                         "rack": b.rack} for b in r.brokers]}


DESCRIBE_CLUSTER = Converter(
    lambda entity, version: m.DescribeClusterRequest(
        include_cluster_authorized_operations=bool(entity.include_cluster_authorized_operations)),
    _describe_cluster_response)

SASL_HANDSHAKE = Converter(
    lambda entity, version: m.SaslHandshakeRequest(mechanism=entity.mechanism),
    lambda r, version: {"error_code": r.error_code, "mechanisms": list(r.mechanisms)})

SASL_AUTHENTICATE = Converter(
    lambda entity, version: m.SaslAuthenticateRequest(auth_bytes=bytes(entity.auth_bytes)),
    lambda r, version: {"error_code": r.error_code, "error_message": r.error_message,
                        "auth_bytes": r.auth_bytes, "session_lifetime": r.session_lifetime_ms})
