"""The registry of every request/response pair (``REQUESTS``, ``RESPONSES``,
``request_class_for``, ``supported_versions``) and ApiVersions (18), whose answer is that
registry.

The only module that imports every API module: ``_PAIRS`` names every pair, and the module
asserts that every ``ApiKey`` has one. A new API registers here.
"""

from __future__ import annotations

from dataclasses import field
from typing import NamedTuple

from kafkalite.errors import NONE, UnsupportedVersionError
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.messages.acls import (
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
)
from kafkalite.protocol.messages.admin import (
    AlterConfigsRequest, AlterConfigsResponse, CreatePartitionsRequest,
    CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest,
    DeleteTopicsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
)
from kafkalite.protocol.messages.base import Int16, Int32, Int64, Request, Response, _message
from kafkalite.protocol.messages.cluster import (
    DescribeClusterRequest, DescribeClusterResponse, MetadataRequest, MetadataResponse,
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafkalite.protocol.messages.controller import (
    ControlledShutdownRequest, ControlledShutdownResponse, LeaderAndIsrRequest,
    LeaderAndIsrResponse, StopReplicaRequest, StopReplicaResponse, UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from kafkalite.protocol.messages.data import (
    DeleteRecordsRequest, DeleteRecordsResponse, FetchRequest, FetchResponse,
    ListOffsetsRequest, ListOffsetsResponse, OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse, ProduceRequest, ProduceResponse,
)
from kafkalite.protocol.messages.delegation_tokens import (
    CreateDelegationTokenRequest, CreateDelegationTokenResponse, DescribeDelegationTokenRequest,
    DescribeDelegationTokenResponse, ExpireDelegationTokenRequest,
    ExpireDelegationTokenResponse, RenewDelegationTokenRequest, RenewDelegationTokenResponse,
)
from kafkalite.protocol.messages.groups import (
    DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    FindCoordinatorRequest, FindCoordinatorResponse, HeartbeatRequest, HeartbeatResponse,
    JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse,
    ListGroupsRequest, ListGroupsResponse, OffsetCommitRequest, OffsetCommitResponse,
    OffsetDeleteRequest, OffsetDeleteResponse, OffsetFetchRequest, OffsetFetchResponse,
    SyncGroupRequest, SyncGroupResponse,
)
from kafkalite.protocol.messages.log_dirs import (
    AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, DescribeLogDirsRequest,
    DescribeLogDirsResponse,
)
from kafkalite.protocol.messages.quotas import (
    AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from kafkalite.protocol.messages.reassignment import (
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
    ElectLeadersRequest, ElectLeadersResponse, ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from kafkalite.protocol.messages.scram_features import (
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
    UpdateFeaturesRequest, UpdateFeaturesResponse,
)
from kafkalite.protocol.messages.transactions import (
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse, DescribeProducersRequest, DescribeProducersResponse,
    EndTxnRequest, EndTxnResponse, InitProducerIdRequest, InitProducerIdResponse,
    TxnOffsetCommitRequest, TxnOffsetCommitResponse, WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)


# ================================================================================================
# ApiVersions (18)
# ================================================================================================


class ApiVersionRange(NamedTuple):
    api_key: Int16
    min_version: Int16
    max_version: Int16


@_message(ApiKey.API_VERSIONS)
class ApiVersionsRequest(Request):
    def error_response(self, error_code, error_message=None):
        return ApiVersionsResponse(error_code=error_code, error_message=error_message,
                                   api_versions=supported_versions())


class SupportedFeature(NamedTuple):
    name: str
    min_version: Int16
    max_version: Int16


class FinalizedFeature(NamedTuple):
    name: str
    min_version_level: Int16
    max_version_level: Int16


@_message(ApiKey.API_VERSIONS)
class ApiVersionsResponse(Response):
    error_code: Int16 = NONE
    error_message: str | None = None
    api_versions: list[ApiVersionRange] = field(default_factory=list)
    throttle_time_ms: Int32 = 0
    # KIP-584: the broker's supported features and the cluster's finalized ones (from
    # ``/feature``); the epoch is that znode's version, -1 when unknown
    supported_features: list[SupportedFeature] = field(default_factory=list)
    finalized_features_epoch: Int64 = -1
    finalized_features: list[FinalizedFeature] = field(default_factory=list)


# ================================================================================================
# Registry
# ================================================================================================

_PAIRS: tuple[tuple[type[Request], type[Response]], ...] = (
    (ProduceRequest, ProduceResponse),
    (FetchRequest, FetchResponse),
    (ListOffsetsRequest, ListOffsetsResponse),
    (MetadataRequest, MetadataResponse),
    (LeaderAndIsrRequest, LeaderAndIsrResponse),
    (StopReplicaRequest, StopReplicaResponse),
    (UpdateMetadataRequest, UpdateMetadataResponse),
    (ControlledShutdownRequest, ControlledShutdownResponse),
    (ApiVersionsRequest, ApiVersionsResponse),
    (CreateTopicsRequest, CreateTopicsResponse),
    (DeleteTopicsRequest, DeleteTopicsResponse),
    (InitProducerIdRequest, InitProducerIdResponse),
    (OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse),
    (DescribeConfigsRequest, DescribeConfigsResponse),
    (CreatePartitionsRequest, CreatePartitionsResponse),
    (AlterConfigsRequest, AlterConfigsResponse),
    (IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse),
    (DeleteRecordsRequest, DeleteRecordsResponse),
    (FindCoordinatorRequest, FindCoordinatorResponse),
    (JoinGroupRequest, JoinGroupResponse),
    (HeartbeatRequest, HeartbeatResponse),
    (LeaveGroupRequest, LeaveGroupResponse),
    (SyncGroupRequest, SyncGroupResponse),
    (DescribeGroupsRequest, DescribeGroupsResponse),
    (ListGroupsRequest, ListGroupsResponse),
    (OffsetCommitRequest, OffsetCommitResponse),
    (OffsetFetchRequest, OffsetFetchResponse),
    (DeleteGroupsRequest, DeleteGroupsResponse),
    (OffsetDeleteRequest, OffsetDeleteResponse),
    (SaslHandshakeRequest, SaslHandshakeResponse),
    (SaslAuthenticateRequest, SaslAuthenticateResponse),
    (DescribeAclsRequest, DescribeAclsResponse),
    (CreateAclsRequest, CreateAclsResponse),
    (DeleteAclsRequest, DeleteAclsResponse),
    (DescribeClusterRequest, DescribeClusterResponse),
    (ElectLeadersRequest, ElectLeadersResponse),
    (AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse),
    (ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse),
    (CreateDelegationTokenRequest, CreateDelegationTokenResponse),
    (RenewDelegationTokenRequest, RenewDelegationTokenResponse),
    (ExpireDelegationTokenRequest, ExpireDelegationTokenResponse),
    (DescribeDelegationTokenRequest, DescribeDelegationTokenResponse),
    (DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse),
    (AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse),
    (UpdateFeaturesRequest, UpdateFeaturesResponse),
    (DescribeClientQuotasRequest, DescribeClientQuotasResponse),
    (AlterClientQuotasRequest, AlterClientQuotasResponse),
    (DescribeLogDirsRequest, DescribeLogDirsResponse),
    (AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse),
    (AddPartitionsToTxnRequest, AddPartitionsToTxnResponse),
    (AddOffsetsToTxnRequest, AddOffsetsToTxnResponse),
    (EndTxnRequest, EndTxnResponse),
    (WriteTxnMarkersRequest, WriteTxnMarkersResponse),
    (TxnOffsetCommitRequest, TxnOffsetCommitResponse),
    (DescribeProducersRequest, DescribeProducersResponse),
)

REQUESTS: dict[int, type[Request]] = {req.API_KEY: req for req, _ in _PAIRS}
RESPONSES: dict[int, type[Response]] = {resp.API_KEY: resp for _, resp in _PAIRS}

for _req, _resp in _PAIRS:
    assert _req.API_KEY == _resp.API_KEY, (_req, _resp)
    assert (_req.MIN_VERSION, _req.MAX_VERSION) == (_resp.MIN_VERSION, _resp.MAX_VERSION)
assert set(REQUESTS) == set(ApiKey)
del _req, _resp


def _class_for(table: dict[int, type], api_key: int, api_version: int | None) -> type:
    cls = table.get(api_key)
    if cls is None:
        raise UnsupportedVersionError(f"unknown API key {api_key}")
    if api_version is not None and not cls.MIN_VERSION <= api_version <= cls.MAX_VERSION:
        raise UnsupportedVersionError(
            f"{ApiKey(api_key).name} version {api_version} is not supported "
            f"(supported: {cls.MIN_VERSION}..{cls.MAX_VERSION})")
    return cls


def request_class_for(api_key: int, api_version: int | None = None) -> type[Request]:
    """The request class; UnsupportedVersionError for an unknown key or a version out of range."""
    return _class_for(REQUESTS, api_key, api_version)


def response_class_for(api_key: int, api_version: int | None = None) -> type[Response]:
    """The response class; UnsupportedVersionError for an unknown key or a version out of range."""
    return _class_for(RESPONSES, api_key, api_version)


def supported_versions() -> list[ApiVersionRange]:
    """What an ApiVersions response lists, sorted by API key."""
    return [ApiVersionRange(int(k), cls.MIN_VERSION, cls.MAX_VERSION)
            for k, cls in sorted(REQUESTS.items())]
