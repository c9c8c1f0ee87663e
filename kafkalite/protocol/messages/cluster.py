"""The cluster's own APIs: Metadata (3), the SASL exchange (SaslHandshake 17, SaslAuthenticate
36) and DescribeCluster (60).
"""

from __future__ import annotations

from dataclasses import field
from typing import NamedTuple

from kafkalite.errors import NONE
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.messages.base import (
    Int16, Int32, Int64, Request, Response, _bytes_summary, _message,
)


# ================================================================================================
# Metadata (3)
# ================================================================================================


class MetadataBroker(NamedTuple):
    node_id: Int32
    host: str
    port: Int32
    rack: str | None = None


class MetadataPartition(NamedTuple):
    error_code: Int16
    partition: Int32
    leader: Int32                    # -1 when there is no leader
    leader_epoch: Int32
    replicas: list[Int32]
    isr: list[Int32]
    offline_replicas: list[Int32]


class MetadataTopic(NamedTuple):
    error_code: Int16
    name: str
    partitions: list[MetadataPartition]
    topic_id: str | None = None      # base64url, as in /brokers/topics/<t>; None if unknown
    is_internal: bool = False        # __consumer_offsets, __transaction_state
    topic_authorized_operations: Int32 = -(1 << 31)    # KIP-430; Int.MinValue: not requested


@_message(ApiKey.METADATA)
class MetadataRequest(Request):
    topics: list[str] | None = None          # None = every topic; [] = none (brokers only)
    allow_auto_topic_creation: bool = True
    include_cluster_authorized_operations: bool = False     # KIP-430 (Kafka v8-v10)
    include_topic_authorized_operations: bool = False       # KIP-430 (Kafka v8+)

    def error_response(self, error_code, error_message=None):
        return MetadataResponse(topics=[MetadataTopic(error_code, t, []) for t in self.topics or ()])


@_message(ApiKey.METADATA)
class MetadataResponse(Response):
    throttle_time_ms: Int32 = 0
    brokers: list[MetadataBroker] = field(default_factory=list)
    cluster_id: str | None = None
    controller_id: Int32 = -1
    topics: list[MetadataTopic] = field(default_factory=list)
    cluster_authorized_operations: Int32 = -(1 << 31)    # KIP-430; Int.MinValue: not requested


# ================================================================================================
# SaslHandshake (17), SaslAuthenticate (36): the exchange before anything else on a SASL listener
# ================================================================================================


@_message(ApiKey.SASL_HANDSHAKE)
class SaslHandshakeRequest(Request):
    mechanism: str

    def error_response(self, error_code, error_message=None):
        return SaslHandshakeResponse(error_code=error_code)


@_message(ApiKey.SASL_HANDSHAKE)
class SaslHandshakeResponse(Response):
    error_code: Int16 = NONE
    mechanisms: list[str] = field(default_factory=list)


@_message(ApiKey.SASL_AUTHENTICATE)
class SaslAuthenticateRequest(Request):
    auth_bytes: bytes = b""

    def __repr__(self) -> str:       # tokens carry passwords (PLAIN): never in a log line
        return f"SaslAuthenticateRequest(auth_bytes={_bytes_summary(self.auth_bytes)})"

    def error_response(self, error_code, error_message=None):
        return SaslAuthenticateResponse(error_code=error_code, error_message=error_message)


@_message(ApiKey.SASL_AUTHENTICATE)
class SaslAuthenticateResponse(Response):
    error_code: Int16 = NONE
    error_message: str | None = None
    auth_bytes: bytes = b""
    session_lifetime_ms: Int64 = 0


# ================================================================================================
# DescribeCluster (60): KIP-700, the admin client's view of the cluster
# ================================================================================================


class DescribeClusterBroker(NamedTuple):
    broker_id: Int32
    host: str
    port: Int32
    rack: str | None = None


@_message(ApiKey.DESCRIBE_CLUSTER)
class DescribeClusterRequest(Request):
    include_cluster_authorized_operations: bool = False

    def error_response(self, error_code, error_message=None):
        return DescribeClusterResponse(error_code=error_code, error_message=error_message)


@_message(ApiKey.DESCRIBE_CLUSTER)
class DescribeClusterResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    error_message: str | None = None
    cluster_id: str = ""
    controller_id: Int32 = -1
    brokers: list[DescribeClusterBroker] = field(default_factory=list)
    cluster_authorized_operations: Int32 = -(1 << 31)
