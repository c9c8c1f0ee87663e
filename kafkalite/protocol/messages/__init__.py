"""One declared class per request and response, and the codec between them and msgpack values.

How a message travels
---------------------
* A request or response is a ``dataclass`` (keyword-only constructor). Its *body* on the wire is a
  msgpack **map** whose keys are exactly the dataclass field names (``"acks"``, ``"topics"``, ...).
* Nested per-topic / per-partition entries are ``NamedTuple`` classes and travel as msgpack
  **arrays** in field order (``FetchPartition(partition, fetch_offset, ...)`` is
  ``[partition, fetch_offset, ...]``): compact, and fast to build and to take apart.
* Record data (``bytes``) travels as msgpack ``bin`` and is never looked into here. On encode, any
  bytes-like object (``bytes``, ``bytearray``, ``memoryview``) is accepted; decode gives ``bytes``.
* Arrays decode to ``list``; maps to ``dict``; nullable fields may be ``None``.
* ``from_body`` checks every field's type (ints also against their Kafka width: int8/16/32/64;
  ``bool`` is not an int) and requires every field to be present; extra keys are ignored. A bad
  body raises ``InvalidRequestError`` whose message names the class and the field path, e.g.
  ``FetchRequest: field 'topics[0].partitions[1].fetch_offset': expected int64, got str``.
  Semantic checks (acks in {0,1,-1}, a known topic, ...) are the broker's job, not the codec's.
* Errors in responses are an ``int16`` code from ``kafkalite.errors`` and, where the class has one,
  an optional ``error_message``.

Every class has ``API_KEY``, ``MIN_VERSION`` and ``MAX_VERSION`` (all APIs are at version 0),
``to_body(version=0)`` and ``from_body(body, version=0)``. Requests also have
``expects_response()`` (False only for Produce with acks=0, which Kafka never answers) and
``error_response(error_code, error_message=None)`` which builds the matching response with the
error in every slot (Kafka's ``getErrorResponse``).

``RequestErrorResponse`` is the one body not tied to an API: ``{"request_error": [code, message]}``.
A broker sends it when it could read a request's correlation id but not serve the request at all
(unknown API key, unsupported version, malformed body); a client turns it into the exception
``errors.for_code(code, message)``.

Layout
------
This package is the model split by API family, one module each (``base`` holds the codec and
the bases, ``registry`` the pairs and ApiVersions; the others ``cluster``, ``data``,
``controller``, ``admin``, ``groups``, ``acls``, ``log_dirs``, ``reassignment``,
``scram_features``, ``delegation_tokens``, ``quotas``, ``transactions``). Every public name is
re-exported here, so ``from kafkalite.protocol import messages as m; m.X`` and
``from kafkalite.protocol.messages import X`` do not depend on which module defines ``X``.
A new API's classes go into its family's module, its pair into ``registry._PAIRS``, and its
public names into the imports below.
"""

import types as _types

from kafkalite.errors import (
    NONE, InvalidRequestError, KafkaError, UnsupportedVersionError, for_code,
)
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.topic_partition import INT32, TopicPartition
from kafkalite.protocol.messages.base import (
    BOOL, BYTES, FLOAT64, I16, I32, I64, I8, REQUEST_ERROR_KEY, STR, Int16, Int32, Int64, Int8,
    Message, PartitionError, Request, RequestErrorResponse, Response, Validator, array, mapping,
    nullable, struct,
)
from kafkalite.protocol.messages.cluster import (
    DescribeClusterBroker, DescribeClusterRequest, DescribeClusterResponse, MetadataBroker,
    MetadataPartition, MetadataRequest, MetadataResponse, MetadataTopic,
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafkalite.protocol.messages.data import (
    CONSUMER_REPLICA_ID, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, READ_COMMITTED, READ_UNCOMMITTED,
    DeleteRecordsPartition, DeleteRecordsPartitionResult, DeleteRecordsRequest,
    DeleteRecordsResponse, DeleteRecordsTopic, DeleteRecordsTopicResult,
    FetchAbortedTransaction, FetchPartition, FetchPartitionResponse, FetchRequest,
    FetchResponse, FetchTopic, FetchTopicResponse, ListOffsetsPartition,
    ListOffsetsPartitionResponse, ListOffsetsRequest, ListOffsetsResponse, ListOffsetsTopic,
    ListOffsetsTopicResponse, OffsetForLeaderEpochPartition,
    OffsetForLeaderEpochPartitionResponse, OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse, OffsetForLeaderEpochTopic, OffsetForLeaderEpochTopicResponse,
    ProducePartitionResponse, ProduceRecordError, ProduceRequest, ProduceResponse,
)
from kafkalite.protocol.messages.controller import (
    ControlledShutdownRequest, ControlledShutdownResponse, LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState, LeaderAndIsrRequest, LeaderAndIsrResponse, StopReplicaRequest,
    StopReplicaResponse, UpdateMetadataBroker, UpdateMetadataPartitionState,
    UpdateMetadataRequest, UpdateMetadataResponse,
)
from kafkalite.protocol.messages.admin import (
    CONFIG_OP_APPEND, CONFIG_OP_DELETE, CONFIG_OP_SET, CONFIG_OP_SUBTRACT,
    CONFIG_RESOURCE_BROKER, CONFIG_RESOURCE_BROKER_LOGGER, CONFIG_RESOURCE_TOPIC,
    AlterableConfig, AlterableConfigOp, AlterConfigsRequest, AlterConfigsResource,
    AlterConfigsResourceResponse, AlterConfigsResponse, CreatableTopic, CreatableTopicConfig,
    CreatableTopicResult, CreatePartitionsRequest, CreatePartitionsResponse,
    CreatePartitionsTopic, CreatePartitionsTopicResult, CreateTopicsRequest,
    CreateTopicsResponse, DeletableTopicResult, DeleteTopicsRequest, DeleteTopicsResponse,
    DescribeConfigsEntry, DescribeConfigsRequest, DescribeConfigsResource,
    DescribeConfigsResponse, DescribeConfigsResult, DescribeConfigsSynonym,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResource,
    IncrementalAlterConfigsResponse,
)
from kafkalite.protocol.messages.groups import (
    COORDINATOR_KEY_GROUP, COORDINATOR_KEY_TRANSACTION, DeletableGroupResult,
    DeleteGroupsRequest, DeleteGroupsResponse, DescribedGroup, DescribedGroupMember,
    DescribeGroupsRequest, DescribeGroupsResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, HeartbeatRequest, HeartbeatResponse, JoinGroupMember,
    JoinGroupProtocol, JoinGroupRequest, JoinGroupResponse, LeaveGroupMember,
    LeaveGroupMemberResponse, LeaveGroupRequest, LeaveGroupResponse, ListedGroup,
    ListGroupsRequest, ListGroupsResponse, OffsetCommitPartition, OffsetCommitPartitionResponse,
    OffsetCommitRequest, OffsetCommitResponse, OffsetCommitTopic, OffsetCommitTopicResponse,
    OffsetDeletePartitionResponse, OffsetDeleteRequest, OffsetDeleteResponse, OffsetDeleteTopic,
    OffsetDeleteTopicResponse, OffsetFetchPartitionResponse, OffsetFetchRequest,
    OffsetFetchResponse, OffsetFetchTopic, OffsetFetchTopicResponse, SyncGroupAssignment,
    SyncGroupRequest, SyncGroupResponse,
)
from kafkalite.protocol.messages.acls import (
    AclCreation, AclCreationResult, AclDescription, AclFilter, AclResource, CreateAclsRequest,
    CreateAclsResponse, DeleteAclsFilterResult, DeleteAclsMatchingAcl, DeleteAclsRequest,
    DeleteAclsResponse, DescribeAclsRequest, DescribeAclsResponse,
)
from kafkalite.protocol.messages.log_dirs import (
    AlterReplicaLogDir, AlterReplicaLogDirPartitionResult, AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse, AlterReplicaLogDirTopic, AlterReplicaLogDirTopicResult,
    DescribeLogDirsPartition, DescribeLogDirsRequest, DescribeLogDirsResponse,
    DescribeLogDirsResult, DescribeLogDirsTopic, DescribeLogDirsTopicResult,
)
from kafkalite.protocol.messages.reassignment import (
    ELECTION_PREFERRED, ELECTION_UNCLEAN, AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse, ElectLeadersPartitionResult, ElectLeadersRequest,
    ElectLeadersResponse, ElectLeadersTopic, ElectLeadersTopicResult,
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
    ListReassignmentsTopic, OngoingPartitionReassignment, OngoingTopicReassignment,
    ReassignablePartition, ReassignablePartitionResult, ReassignableTopic,
    ReassignableTopicResult,
)
from kafkalite.protocol.messages.scram_features import (
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult, DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse, DescribeUserScramCredentialsResult, FeatureUpdate,
    ScramCredentialDeletion, ScramCredentialInfo, ScramCredentialUpsertion,
    UpdatableFeatureResult, UpdateFeaturesRequest, UpdateFeaturesResponse,
)
from kafkalite.protocol.messages.delegation_tokens import (
    CreateDelegationTokenRequest, CreateDelegationTokenResponse, DescribeDelegationTokenRequest,
    DescribeDelegationTokenResponse, DescribedToken, ExpireDelegationTokenRequest,
    ExpireDelegationTokenResponse, RenewDelegationTokenRequest, RenewDelegationTokenResponse,
    TokenPrincipal,
)
from kafkalite.protocol.messages.quotas import (
    QUOTA_MATCH_ANY, QUOTA_MATCH_DEFAULT, QUOTA_MATCH_EXACT, AlterClientQuotasRequest,
    AlterClientQuotasResponse, DescribeClientQuotasRequest, DescribeClientQuotasResponse,
    QuotaAlteration, QuotaAlterationResult, QuotaEntityPart, QuotaEntry, QuotaFilterComponent,
    QuotaOp, QuotaValue,
)
from kafkalite.protocol.messages.transactions import (
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, AddPartitionsToTxnTopic,
    AddPartitionsToTxnTopicResult, DescribeProducersPartitionResponse, DescribeProducersRequest,
    DescribeProducersResponse, DescribeProducersTopic, DescribeProducersTopicResponse,
    EndTxnRequest, EndTxnResponse, InitProducerIdRequest, InitProducerIdResponse, ProducerState,
    TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
    WritableTxnMarker, WritableTxnMarkerPartitionResult, WritableTxnMarkerResult,
    WritableTxnMarkerTopic, WritableTxnMarkerTopicResult, WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from kafkalite.protocol.messages.registry import (
    REQUESTS, RESPONSES, ApiVersionRange, ApiVersionsRequest, ApiVersionsResponse,
    FinalizedFeature, SupportedFeature, request_class_for, response_class_for,
    supported_versions,
)

__all__ = sorted(_name for _name, _value in dict(globals()).items()
                 if not _name.startswith("_") and not isinstance(_value, _types.ModuleType))
