"""Message classes: registry, roundtrips, strict validation."""

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite import errors
from kafkalite.protocol import messages as sm
from kafkalite.protocol import (
    REQUESTS,
    RESPONSES,
    ApiKey,
    ApiVersionRange,
    ApiVersionsRequest,
    ApiVersionsResponse,
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    CreatableTopic,
    CreatableTopicResult,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    FetchTopicResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    ListOffsetsPartition,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
    ListOffsetsTopicResponse,
    MetadataBroker,
    MetadataPartition,
    MetadataRequest,
    MetadataResponse,
    MetadataTopic,
    OffsetForLeaderEpochPartition,
    OffsetForLeaderEpochPartitionResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderEpochTopic,
    OffsetForLeaderEpochTopicResponse,
    PartitionError,
    ProducePartitionResponse,
    ProduceRecordError,
    ProduceRequest,
    ProduceResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    TopicPartition,
    UpdateMetadataBroker,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_class_for,
    response_class_for,
    supported_versions,
)

from kafkalite.protocol.messages import (  # noqa: E402
    AlterConfigsRequest,
    AlterConfigsResource,
    AlterConfigsResourceResponse,
    AlterConfigsResponse,
    AlterableConfig,
    AlterableConfigOp,
    CreatableTopicConfig,
    DeleteRecordsPartition,
    DeleteRecordsPartitionResult,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopic,
    DeleteRecordsTopicResult,
    DescribeConfigsEntry,
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
    IncrementalAlterConfigsResponse,
)
from kafkalite.protocol.messages import (  # noqa: E402
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMember,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitPartition,
    OffsetCommitPartitionResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetCommitTopicResponse,
    OffsetDeletePartitionResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteTopic,
    OffsetDeleteTopicResponse,
    OffsetFetchPartitionResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopic,
    OffsetFetchTopicResponse,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)

FAST = settings(deadline=None, max_examples=60, derandomize=True)

BATCH = b"\x93\x01\x02\x03" + bytes(range(256))   # looks like msgpack: must stay opaque bytes

REQUEST_SAMPLES = [
    ApiVersionsRequest(),
    MetadataRequest(topics=None, allow_auto_topic_creation=False),
    MetadataRequest(topics=["a", "b"]),
    ProduceRequest(acks=-1, timeout_ms=1500, topic_data={"t": {0: BATCH, 7: b""}, "u": {}}),
    ProduceRequest(transactional_id="tx", acks=0, topic_data={}),
    FetchRequest(replica_id=2, max_wait_ms=100, min_bytes=10, max_bytes=1 << 20, isolation_level=1,
                 topics=[FetchTopic("t", [FetchPartition(0, 2**40, 65536, 3, 10),
                                          FetchPartition(1, 0, 1)])]),
    ListOffsetsRequest(replica_id=-1, isolation_level=0,
                       topics=[ListOffsetsTopic("t", [ListOffsetsPartition(0, -2),
                                                      ListOffsetsPartition(1, 1_700_000_000_000, 4)])]),
    LeaderAndIsrRequest(controller_id=1, controller_epoch=3, broker_epoch=2**35,
                        partition_states=[LeaderAndIsrPartitionState("t", 0, 3, 2, 5, [2, 1], 9,
                                                                     [1, 2], True)],
                        live_leaders=[LeaderAndIsrLiveLeader(2, "h2", 9092)]),
    StopReplicaRequest(controller_id=1, controller_epoch=3, broker_epoch=7, delete_partitions=True,
                       partitions=[TopicPartition("t", 0), TopicPartition("x", 3)]),
    UpdateMetadataRequest(controller_id=1, controller_epoch=3, broker_epoch=7,
                          partition_states=[UpdateMetadataPartitionState("t", 0, 3, -1, 5, [], 9,
                                                                         [1, 2], [1, 2])],
                          live_brokers=[UpdateMetadataBroker(1, "h1", 9092, "rack-a"),
                                        UpdateMetadataBroker(3, "h3", 9093)]),
    ControlledShutdownRequest(broker_id=3, broker_epoch=99),
    CreateTopicsRequest(topics=[CreatableTopic("t", 3, 2, {}, {"cleanup.policy": "compact",
                                                               "x": None}),
                                CreatableTopic("m", -1, -1, {0: [1, 2], 1: [2, 3]}, {})],
                        timeout_ms=5000, validate_only=True),
    DeleteTopicsRequest(topic_names=["a", "b"], timeout_ms=100),
    DeleteTopicsRequest(topic_names=["a"], topic_ids=["AAAAAAAAAAAAAAAAAAAAAQ"]),
    CreatePartitionsRequest(topics=[CreatePartitionsTopic("t", 5, None),
                                    CreatePartitionsTopic("u", 3, [[1, 2], [2, 3]])],
                            timeout_ms=5000, validate_only=True),
    InitProducerIdRequest(),
    InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=1000),
    OffsetForLeaderEpochRequest(replica_id=2, topics=[OffsetForLeaderEpochTopic(
        "t", [OffsetForLeaderEpochPartition(0, 5, 4)])]),
    DescribeConfigsRequest(resources=[DescribeConfigsResource(2, "t"),
                                      DescribeConfigsResource(2, "u", ["retention.ms"])]),
    DescribeConfigsRequest(resources=[DescribeConfigsResource(4, "1", None)],
                           include_synonyms=True, include_documentation=True),
    AlterConfigsRequest(resources=[AlterConfigsResource(2, "t", [AlterableConfig("a", "1"),
                                                                 AlterableConfig("b", None)])],
                        validate_only=True),
    IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsResource(
        2, "t", [AlterableConfigOp("cleanup.policy", 2, "compact"),
                 AlterableConfigOp("retention.ms", 1, None)])]),
    DeleteRecordsRequest(topics=[DeleteRecordsTopic("t", [DeleteRecordsPartition(0, 5),
                                                          DeleteRecordsPartition(1, -1)])],
                         timeout_ms=1000),
    UpdateMetadataRequest(controller_id=1, controller_epoch=2, partition_states=[
        UpdateMetadataPartitionState("t", 0, 2, 1, 0, [1], 0, [1], [], "AAECAwQFBgcICQoLDA0ODw")]),
    FindCoordinatorRequest(key="billing"),
    FindCoordinatorRequest(key="tx-1", key_type=1),
    JoinGroupRequest(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=300000,
                     member_id="", group_instance_id="host-1", protocol_type="consumer",
                     protocols=[JoinGroupProtocol("range", BATCH),
                                JoinGroupProtocol("roundrobin", b"")]),
    HeartbeatRequest(group_id="g", generation_id=3, member_id="m-1"),
    LeaveGroupRequest(group_id="g", members=[LeaveGroupMember("m-1"),
                                             LeaveGroupMember("", "host-1")]),
    SyncGroupRequest(group_id="g", generation_id=3, member_id="m-1", protocol_type="consumer",
                     protocol_name="range", assignments=[SyncGroupAssignment("m-1", BATCH),
                                                         SyncGroupAssignment("m-2", b"")]),
    SyncGroupRequest(group_id="g", generation_id=3, member_id="m-2", group_instance_id="i"),
    DescribeGroupsRequest(groups=["g", "h"], include_authorized_operations=True),
    ListGroupsRequest(),
    ListGroupsRequest(states_filter=["Stable", "Empty"]),
    OffsetCommitRequest(group_id="g", generation_id=3, member_id="m-1", retention_time_ms=-1,
                        topics=[OffsetCommitTopic("t", [OffsetCommitPartition(0, 2**40, 4, "md"),
                                                        OffsetCommitPartition(1, 0)])]),
    OffsetCommitRequest(group_id="g"),
    OffsetFetchRequest(group_id="g", topics=[OffsetFetchTopic("t", [0, 1])], require_stable=True),
    OffsetFetchRequest(group_id="g", topics=None),
    DeleteGroupsRequest(groups_names=["g", "h"]),
    OffsetDeleteRequest(group_id="g", topics=[OffsetDeleteTopic("t", [0, 2])]),
    sm.SaslHandshakeRequest(mechanism="SCRAM-SHA-512"),
    sm.SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00secret"),
    sm.DescribeAclsRequest(filter=sm.AclFilter(2, None, 1, "User:alice", None, 1, 1)),
    sm.CreateAclsRequest(creations=[sm.AclCreation(2, "t", 3, "User:alice", "*", 3, 3)]),
    sm.DeleteAclsRequest(filters=[sm.AclFilter(2, "t", 3, None, None, 1, 1)]),
    sm.DescribeClusterRequest(include_cluster_authorized_operations=True),
    sm.ElectLeadersRequest(election_type=1, topic_partitions=[sm.ElectLeadersTopic("t", [0, 1])],
                           timeout_ms=5000),
    sm.ElectLeadersRequest(topic_partitions=None),
    sm.AlterPartitionReassignmentsRequest(topics=[sm.ReassignableTopic("t", [
        sm.ReassignablePartition(0, [3, 1]), sm.ReassignablePartition(1, None)])]),
    sm.ListPartitionReassignmentsRequest(topics=[sm.ListReassignmentsTopic("t", [0])]),
    sm.ListPartitionReassignmentsRequest(topics=None),
    sm.CreateDelegationTokenRequest(renewers=[sm.TokenPrincipal("User", "bob")],
                                    max_lifetime_ms=-1),
    sm.RenewDelegationTokenRequest(hmac=b"\x01" * 64, renew_period_ms=3600000),
    sm.ExpireDelegationTokenRequest(hmac=b"\x01" * 64, expiry_time_period_ms=-1),
    sm.DescribeDelegationTokenRequest(owners=[sm.TokenPrincipal("User", "alice")]),
    sm.DescribeDelegationTokenRequest(owners=None),
    sm.DescribeUserScramCredentialsRequest(users=["alice", ""]),
    sm.DescribeUserScramCredentialsRequest(users=None),
    sm.AlterUserScramCredentialsRequest(
        deletions=[sm.ScramCredentialDeletion("bob", 2)],
        upsertions=[sm.ScramCredentialUpsertion("alice", 1, 8192, b"salt", b"\x01" * 32)]),
    sm.UpdateFeaturesRequest(timeout_ms=5000,
                             feature_updates=[sm.FeatureUpdate("f", 0, True)]),
    sm.DescribeClientQuotasRequest(components=[sm.QuotaFilterComponent("user", 0, "alice"),
                                               sm.QuotaFilterComponent("client-id", 1, None)],
                                   strict=True),
    sm.AlterClientQuotasRequest(entries=[sm.QuotaAlteration(
        [sm.QuotaEntityPart("user", None)], [sm.QuotaOp("producer_byte_rate", 1024.0, False)])],
        validate_only=True),
    sm.DescribeLogDirsRequest(topics=[sm.DescribeLogDirsTopic("t", [0, 2])]),
    sm.DescribeLogDirsRequest(topics=None),
    sm.AlterReplicaLogDirsRequest(dirs=[sm.AlterReplicaLogDir("/d2", [
        sm.AlterReplicaLogDirTopic("t", [0, 1])])]),
    sm.AddPartitionsToTxnRequest(transactional_id="tx", producer_id=2**40, producer_epoch=3,
                                 topics=[sm.AddPartitionsToTxnTopic("t", [0, 2]),
                                         sm.AddPartitionsToTxnTopic("u", [])]),
    sm.AddOffsetsToTxnRequest(transactional_id="tx", producer_id=7, producer_epoch=0,
                              group_id="g"),
    sm.EndTxnRequest(transactional_id="tx", producer_id=7, producer_epoch=1, committed=True),
    sm.EndTxnRequest(transactional_id="tx", producer_id=7, producer_epoch=1, committed=False),
    sm.WriteTxnMarkersRequest(markers=[
        sm.WritableTxnMarker(2**40, 3, True, [sm.WritableTxnMarkerTopic("t", [0, 1]),
                                              sm.WritableTxnMarkerTopic("__consumer_offsets",
                                                                        [12])], 5),
        sm.WritableTxnMarker(8, 0, False, [], 0)]),
    sm.TxnOffsetCommitRequest(transactional_id="tx", group_id="g", producer_id=7,
                              producer_epoch=2, generation_id=4, member_id="m-1",
                              group_instance_id="i-1", topics=[sm.TxnOffsetCommitRequestTopic(
                                  "t", [sm.TxnOffsetCommitRequestPartition(0, 42, 3, "md"),
                                        sm.TxnOffsetCommitRequestPartition(1, 0)])]),
    sm.TxnOffsetCommitRequest(transactional_id="tx", group_id="g", producer_id=7,
                              producer_epoch=2),
    sm.DescribeProducersRequest(topics=[sm.DescribeProducersTopic("t", [0, 2]),
                                        sm.DescribeProducersTopic("u", [])]),
    sm.DescribeProducersRequest(),
]

RESPONSE_SAMPLES = [
    ApiVersionsResponse(error_code=0, api_versions=supported_versions()),
    ApiVersionsResponse(error_code=35, error_message="nope", api_versions=[ApiVersionRange(0, 0, 0)],
                        throttle_time_ms=5),
    MetadataResponse(brokers=[MetadataBroker(1, "h1", 9092, None), MetadataBroker(2, "h2", 9093, "r")],
                     cluster_id="abc", controller_id=1,
                     topics=[MetadataTopic(0, "t", [MetadataPartition(0, 0, 1, 4, [1, 2], [1], [2]),
                                                    MetadataPartition(5, 1, -1, 4, [2], [], [2])]),
                             MetadataTopic(3, "missing", [])]),
    ProduceResponse(responses={"t": {0: ProducePartitionResponse(0, None, 100, -1, 0),
                                     1: ProducePartitionResponse(6, "not leader")}},
                    throttle_time_ms=1),
    FetchResponse(throttle_time_ms=0, error_code=0, responses=[
        FetchTopicResponse("t", [FetchPartitionResponse(0, 0, 10, 10, 0, BATCH),
                                 FetchPartitionResponse(1, 1, -1, -1, -1, b"")])]),
    ListOffsetsResponse(topics=[ListOffsetsTopicResponse("t", [
        ListOffsetsPartitionResponse(0, 0, -1, 42, 3), ListOffsetsPartitionResponse(1, 3)])]),
    LeaderAndIsrResponse(error_code=0, partition_errors=[PartitionError("t", 0, 0),
                                                         PartitionError("t", 1, 11)]),
    StopReplicaResponse(error_code=11, error_message="stale", partition_errors=[]),
    UpdateMetadataResponse(error_code=0),
    ControlledShutdownResponse(error_code=0, remaining_partitions=[TopicPartition("t", 1)]),
    CreateTopicsResponse(topics=[CreatableTopicResult("t", 0), CreatableTopicResult("u", 36, "exists")]),
    CreateTopicsResponse(topics=[  # KIP-525's counts and configs
        CreatableTopicResult("t", 0, None, 3, 2, [CreatableTopicConfig("retention.ms", "1", False,
                                                                       1, False)]),
        CreatableTopicResult("d", 29, "Authorization failed.", topic_config_error_code=29)]),
    DeleteTopicsResponse(responses=[DeletableTopicResult("t", 0), DeletableTopicResult("x", 3, "?")]),
    DeleteTopicsResponse(responses=[DeletableTopicResult(None, 29, None,
                                                         "AAAAAAAAAAAAAAAAAAAAAQ")]),
    CreatePartitionsResponse(results=[CreatePartitionsTopicResult("t", 0),
                                      CreatePartitionsTopicResult("u", 37, "fewer")]),
    InitProducerIdResponse(error_code=0, producer_id=2**40, producer_epoch=3),
    OffsetForLeaderEpochResponse(topics=[OffsetForLeaderEpochTopicResponse("t", [
        OffsetForLeaderEpochPartitionResponse(0, 0, 4, 1234)])]),
    DescribeConfigsResponse(results=[
        DescribeConfigsResult(0, None, 2, "t", [DescribeConfigsEntry("retention.ms", "60000"),
                                                DescribeConfigsEntry("x", None, True, True, True)]),
        DescribeConfigsResult(3, "no such topic", 2, "u", [])]),
    DescribeConfigsResponse(results=[DescribeConfigsResult(0, None, 2, "t", [
        DescribeConfigsEntry("retention.ms", "1", False, False, False, 1,
                             [DescribeConfigsSynonym("retention.ms", "1", 1),
                              DescribeConfigsSynonym("log.retention.hours", "168", 5)], 5,
                             "how long")])]),
    AlterConfigsResponse(responses=[AlterConfigsResourceResponse(0, None, 2, "t"),
                                    AlterConfigsResourceResponse(40, "bad", 2, "u")]),
    IncrementalAlterConfigsResponse(throttle_time_ms=1, responses=[
        AlterConfigsResourceResponse(42, "no", 4, "1")]),
    DeleteRecordsResponse(topics=[DeleteRecordsTopicResult("t", [
        DeleteRecordsPartitionResult(0, 5, 0), DeleteRecordsPartitionResult(1, -1, 6)])]),
    MetadataResponse(topics=[MetadataTopic(0, "t", [], "AAECAwQFBgcICQoLDA0ODw")]),
    FindCoordinatorResponse(error_code=0, node_id=2, host="h2", port=9093),
    FindCoordinatorResponse(error_code=15, error_message="__consumer_offsets is being created"),
    JoinGroupResponse(error_code=0, generation_id=4, protocol_type="consumer",
                      protocol_name="range", leader="m-1", member_id="m-1",
                      members=[JoinGroupMember("m-1", None, BATCH),
                               JoinGroupMember("m-2", "host-2", b"")]),
    JoinGroupResponse(error_code=79, member_id="m-3"),
    HeartbeatResponse(error_code=27, throttle_time_ms=0),
    LeaveGroupResponse(members=[LeaveGroupMemberResponse("m-1", None, 0),
                                LeaveGroupMemberResponse("", "host-1", 25)]),
    SyncGroupResponse(error_code=0, protocol_type="consumer", protocol_name="range",
                      assignment=BATCH),
    DescribeGroupsResponse(groups=[
        DescribedGroup(0, "g", "Stable", "consumer", "range",
                       [DescribedGroupMember("m-1", None, "c1", "/10.0.0.1", BATCH, b"")]),
        DescribedGroup(0, "h", "Dead", "", "", [], 0)]),
    ListGroupsResponse(groups=[ListedGroup("g", "consumer", "Stable"),
                               ListedGroup("e", "", "Empty")]),
    ListGroupsResponse(error_code=14),
    OffsetCommitResponse(topics=[OffsetCommitTopicResponse("t", [
        OffsetCommitPartitionResponse(0, 0), OffsetCommitPartitionResponse(1, 22)])]),
    OffsetFetchResponse(topics=[OffsetFetchTopicResponse("t", [
        OffsetFetchPartitionResponse(0, 42, 3, "md", 0),
        OffsetFetchPartitionResponse(1, -1, -1, None, 0)])]),
    OffsetFetchResponse(error_code=16),
    DeleteGroupsResponse(results=[DeletableGroupResult("g", 0), DeletableGroupResult("h", 68)]),
    OffsetDeleteResponse(error_code=0, topics=[OffsetDeleteTopicResponse("t", [
        OffsetDeletePartitionResponse(0, 0), OffsetDeletePartitionResponse(2, 86)])]),
    sm.SaslHandshakeResponse(error_code=33, mechanisms=["PLAIN", "SCRAM-SHA-512"]),
    sm.SaslAuthenticateResponse(error_code=58, error_message="Authentication failed"),
    sm.DescribeAclsResponse(resources=[sm.AclResource(2, "t", 3, [
        sm.AclDescription("User:alice", "*", 3, 3)])]),
    sm.CreateAclsResponse(results=[sm.AclCreationResult(0, None)]),
    sm.DeleteAclsResponse(filter_results=[sm.DeleteAclsFilterResult(0, None, [
        sm.DeleteAclsMatchingAcl(0, None, 2, "t", 3, "User:alice", "*", 3, 3)])]),
    sm.DescribeClusterResponse(cluster_id="c", controller_id=2, brokers=[
        sm.DescribeClusterBroker(1, "h", 9092, None), sm.DescribeClusterBroker(2, "h", 9093, "r")]),
    sm.ElectLeadersResponse(error_code=0, results=[sm.ElectLeadersTopicResult("t", [
        sm.ElectLeadersPartitionResult(0, 0, None),
        sm.ElectLeadersPartitionResult(1, 84, "Leader election not needed.")])]),
    sm.AlterPartitionReassignmentsResponse(error_code=0, results=[sm.ReassignableTopicResult("t", [
        sm.ReassignablePartitionResult(0, 0, None), sm.ReassignablePartitionResult(1, 85, "x")])]),
    sm.ListPartitionReassignmentsResponse(topics=[sm.OngoingTopicReassignment("t", [
        sm.OngoingPartitionReassignment(0, [3, 1, 2], [3], [2])])]),
    sm.CreateDelegationTokenResponse(principal_name="alice", issue_timestamp_ms=1,
                                     expiry_timestamp_ms=2, max_timestamp_ms=3, token_id="t",
                                     hmac=b"\x02" * 64),
    sm.RenewDelegationTokenResponse(expiry_timestamp_ms=7),
    sm.ExpireDelegationTokenResponse(expiry_timestamp_ms=5),
    sm.DescribeDelegationTokenResponse(tokens=[sm.DescribedToken(
        "User", "alice", 1, 2, 3, "t", b"\x02" * 64, [sm.TokenPrincipal("User", "bob")])]),
    sm.DescribeUserScramCredentialsResponse(results=[
        sm.DescribeUserScramCredentialsResult("alice", 0, None, [
            sm.ScramCredentialInfo(1, 8192), sm.ScramCredentialInfo(2, 4096)]),
        sm.DescribeUserScramCredentialsResult("bob", 91, "no such user", [])]),
    sm.AlterUserScramCredentialsResponse(results=[
        sm.AlterUserScramCredentialsResult("alice", 0, None),
        sm.AlterUserScramCredentialsResult("bob", 93, "Too few iterations")]),
    sm.UpdateFeaturesResponse(error_code=0, results=[
        sm.UpdatableFeatureResult("f", 42, "Can not delete non-existing finalized feature.")]),
    sm.DescribeClientQuotasResponse(entries=[sm.QuotaEntry(
        [sm.QuotaEntityPart("user", "alice"), sm.QuotaEntityPart("client-id", None)],
        [sm.QuotaValue("request_percentage", 12.5)])]),
    sm.DescribeClientQuotasResponse(error_code=42, error_message="bad filter", entries=None),
    sm.AlterClientQuotasResponse(entries=[sm.QuotaAlterationResult(
        42, "Invalid configuration key x", [sm.QuotaEntityPart("client-id", "c1")])]),
    ApiVersionsResponse(api_versions=[ApiVersionRange(18, 0, 3)],
                        supported_features=[sm.SupportedFeature("f", 1, 2)],
                        finalized_features_epoch=3,
                        finalized_features=[sm.FinalizedFeature("f", 1, 2)]),
    sm.DescribeLogDirsResponse(results=[
        sm.DescribeLogDirsResult(0, "/d1", [sm.DescribeLogDirsTopicResult("t", [
            sm.DescribeLogDirsPartition(0, 1234, 0, False),
            sm.DescribeLogDirsPartition(0, 100, 7, True)])]),
        sm.DescribeLogDirsResult(56, "/d2", [])]),
    sm.AlterReplicaLogDirsResponse(results=[sm.AlterReplicaLogDirTopicResult("t", [
        sm.AlterReplicaLogDirPartitionResult(0, 0), sm.AlterReplicaLogDirPartitionResult(1, 9)])]),
    sm.AddPartitionsToTxnResponse(throttle_time_ms=1, results=[
        sm.AddPartitionsToTxnTopicResult("t", [sm.AddPartitionsToTxnPartitionResult(0, 0),
                                               sm.AddPartitionsToTxnPartitionResult(2, 51)])]),
    sm.AddOffsetsToTxnResponse(error_code=90),
    sm.EndTxnResponse(throttle_time_ms=2, error_code=0),
    sm.EndTxnResponse(error_code=48),
    sm.WriteTxnMarkersResponse(markers=[
        sm.WritableTxnMarkerResult(2**40, [sm.WritableTxnMarkerTopicResult("t", [
            sm.WritableTxnMarkerPartitionResult(0, 0),
            sm.WritableTxnMarkerPartitionResult(1, 6)])]),
        sm.WritableTxnMarkerResult(8, [])]),
    sm.TxnOffsetCommitResponse(topics=[sm.TxnOffsetCommitResponseTopic("t", [
        sm.TxnOffsetCommitResponsePartition(0, 0), sm.TxnOffsetCommitResponsePartition(1, 22)])]),
    FetchResponse(responses=[FetchTopicResponse("t", [  # read_committed: aborted transactions
        FetchPartitionResponse(0, 0, 10, 8, 0, BATCH, [sm.FetchAbortedTransaction(7, 2),
                                                        sm.FetchAbortedTransaction(2**40, 5)]),
        FetchPartitionResponse(1, 0, 3, 3, 0, b"", [])])]),
    sm.DescribeProducersResponse(throttle_time_ms=1, topics=[
        sm.DescribeProducersTopicResponse("t", [
            sm.DescribeProducersPartitionResponse(0, 0, None, [
                sm.ProducerState(2**40, 3, 2**31 - 1, 1_700_000_000_000, 4, 2**33),
                sm.ProducerState(7, 0, -1, -1, -1, -1)]),
            sm.DescribeProducersPartitionResponse(1, 6, "not here")])]),
]


def _id(obj):
    return type(obj).__name__


# --- registry --------------------------------------------------------------------------------


def test_api_keys_are_kafkas_numbers():
    expected = {"PRODUCE": 0, "FETCH": 1, "LIST_OFFSETS": 2, "METADATA": 3, "LEADER_AND_ISR": 4,
                "STOP_REPLICA": 5, "UPDATE_METADATA": 6, "CONTROLLED_SHUTDOWN": 7,
                "API_VERSIONS": 18, "CREATE_TOPICS": 19, "DELETE_TOPICS": 20,
                "INIT_PRODUCER_ID": 22, "OFFSET_FOR_LEADER_EPOCH": 23, "DESCRIBE_CONFIGS": 32,
                "CREATE_PARTITIONS": 37, "DELETE_RECORDS": 21, "ALTER_CONFIGS": 33,
                "INCREMENTAL_ALTER_CONFIGS": 44, "OFFSET_COMMIT": 8, "OFFSET_FETCH": 9,
                "FIND_COORDINATOR": 10, "JOIN_GROUP": 11, "HEARTBEAT": 12, "LEAVE_GROUP": 13,
                "SYNC_GROUP": 14, "DESCRIBE_GROUPS": 15, "LIST_GROUPS": 16, "DELETE_GROUPS": 42,
                "OFFSET_DELETE": 47, "SASL_HANDSHAKE": 17, "SASL_AUTHENTICATE": 36,
                "DESCRIBE_ACLS": 29, "CREATE_ACLS": 30, "DELETE_ACLS": 31,
                "DESCRIBE_CLUSTER": 60}
    expected.update(ELECT_LEADERS=43, ALTER_PARTITION_REASSIGNMENTS=45,
                    LIST_PARTITION_REASSIGNMENTS=46)
    expected.update(DESCRIBE_USER_SCRAM_CREDENTIALS=50, ALTER_USER_SCRAM_CREDENTIALS=51,
                    UPDATE_FEATURES=57)
    expected.update(DESCRIBE_LOG_DIRS=35, ALTER_REPLICA_LOG_DIRS=34)
    expected.update(CREATE_DELEGATION_TOKEN=38, RENEW_DELEGATION_TOKEN=39,
                    EXPIRE_DELEGATION_TOKEN=40, DESCRIBE_DELEGATION_TOKEN=41)
    expected.update(DESCRIBE_CLIENT_QUOTAS=48, ALTER_CLIENT_QUOTAS=49)
    expected.update(ADD_PARTITIONS_TO_TXN=24, ADD_OFFSETS_TO_TXN=25, END_TXN=26,
                    WRITE_TXN_MARKERS=27, TXN_OFFSET_COMMIT=28)
    expected.update(DESCRIBE_PRODUCERS=61)
    assert {k.name: k.value for k in ApiKey} == expected
    assert ApiKey.name_of(1) == "FETCH" and ApiKey.name_of(99) == "UNKNOWN(99)"


def test_registry_pairs_requests_with_responses():
    assert set(REQUESTS) == set(RESPONSES) == {int(k) for k in ApiKey}
    for key, req_cls in REQUESTS.items():
        assert req_cls.API_KEY == key == response_class_for(key).API_KEY
        assert request_class_for(key) is req_cls
        assert req_cls.__name__.endswith("Request")
        assert RESPONSES[key].__name__ == req_cls.__name__[:-len("Request")] + "Response"
        assert (req_cls.MIN_VERSION, req_cls.MAX_VERSION) == (0, 0)


def test_supported_versions():
    versions = supported_versions()
    assert [v.api_key for v in versions] == sorted(int(k) for k in ApiKey)
    assert all(v.min_version == 0 and v.max_version == 0 for v in versions)
    assert all(type(v.api_key) is int for v in versions)


def test_unknown_key_or_version_is_unsupported():
    with pytest.raises(errors.UnsupportedVersionError):
        request_class_for(99)
    with pytest.raises(errors.UnsupportedVersionError):
        response_class_for(99)
    with pytest.raises(errors.UnsupportedVersionError):
        request_class_for(1, 1)
    with pytest.raises(errors.UnsupportedVersionError):
        response_class_for(3, -1)


def test_samples_cover_every_class():
    assert {type(r) for r in REQUEST_SAMPLES} == set(REQUESTS.values())
    assert {type(r) for r in RESPONSE_SAMPLES} == set(RESPONSES.values())


# --- roundtrips ------------------------------------------------------------------------------


@pytest.mark.parametrize("req", REQUEST_SAMPLES, ids=_id)
def test_request_roundtrip(req):
    frame = encode_request(req, 0, 12345, "client-1")
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    header, decoded = decode_request(frame[4:])
    assert header.api_key == req.API_KEY
    assert (header.api_version, header.correlation_id, header.client_id) == (0, 12345, "client-1")
    assert decoded == req
    assert type(decoded).from_body(req.to_body()) == req     # without msgpack too


@pytest.mark.parametrize("resp", RESPONSE_SAMPLES, ids=_id)
def test_response_roundtrip(resp):
    frame = encode_response(7, resp)
    correlation_id, decoded = decode_response(frame[4:], resp.API_KEY)
    assert correlation_id == 7
    assert decoded == resp
    assert type(decoded).from_body(resp.to_body()) == resp


@pytest.mark.parametrize("req", REQUEST_SAMPLES, ids=_id)
def test_error_response_matches_the_request(req):
    resp = req.error_response(errors.NotControllerError.code, "go away")
    assert type(resp) is response_class_for(req.API_KEY)
    _, decoded = decode_response(encode_response(1, resp)[4:], req.API_KEY)
    assert decoded == resp


def test_error_response_fills_every_partition():
    req = REQUEST_SAMPLES[3]     # produce
    resp = req.error_response(6, "not leader")
    assert resp.responses == {"t": {0: ProducePartitionResponse(6, "not leader"),
                                    7: ProducePartitionResponse(6, "not leader")}, "u": {}}
    fetch = next(r for r in REQUEST_SAMPLES if isinstance(r, FetchRequest))
    fresp = fetch.error_response(3)
    assert [(p.partition, p.error_code) for t in fresp.responses for p in t.partitions] == [(0, 3), (1, 3)]
    assert fresp.error_code == 3


def test_records_stay_opaque_bytes():
    req = ProduceRequest(topic_data={"t": {0: BATCH}})
    _, decoded = decode_request(encode_request(req)[4:])
    assert type(decoded.topic_data["t"][0]) is bytes
    assert decoded.topic_data["t"][0] == BATCH


def test_records_may_be_any_buffer_on_encode():
    data = bytearray(b"abc" * 1000)
    resp = FetchResponse(responses=[FetchTopicResponse("t", [
        FetchPartitionResponse(0, 0, 1, 1, 0, memoryview(data)),
        FetchPartitionResponse(1, 0, 1, 1, 0, data)])])
    _, decoded = decode_response(encode_response(1, resp)[4:], ApiKey.FETCH)
    assert [p.records for p in decoded.responses[0].partitions] == [bytes(data), bytes(data)]


def test_body_keys_are_field_names_and_nested_entries_are_arrays():
    req = FetchRequest(topics=[FetchTopic("t", [FetchPartition(0, 5, 100)])])
    body = msgpack.unpackb(msgpack.packb(req.to_body(), use_bin_type=True), raw=False)
    assert body == {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 52428800,
                    "isolation_level": 0, "topics": [["t", [[0, 5, 100, -1, -1]]]],
                    "session_id": 0, "session_epoch": -1, "rack_id": None}
    produce = ProduceRequest(acks=1, timeout_ms=10, topic_data={"t": {3: b"x"}})
    assert produce.to_body() == {"transactional_id": None, "acks": 1, "timeout_ms": 10,
                                 "topic_data": {"t": {3: b"x"}}}


def test_expects_response():
    assert not ProduceRequest(acks=0).expects_response()
    assert ProduceRequest(acks=1).expects_response()
    assert ProduceRequest(acks=-1).expects_response()
    assert FetchRequest().expects_response()


def test_repr_does_not_dump_record_bytes():
    assert "<100000 bytes>" in repr(ProduceRequest(topic_data={"t": {0: b"x" * 100000}}))
    assert "<5 bytes>" in repr(FetchPartitionResponse(0, 0, records=b"12345"))


def test_constructors_are_keyword_only():
    with pytest.raises(TypeError):
        FetchRequest(-1)   # noqa


# --- hypothesis roundtrips for the hot path ----------------------------------------------------

int16 = st.integers(-(2**15), 2**15 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
names = st.text(max_size=20)
batches = st.binary(max_size=2000)


@FAST
@given(acks=st.sampled_from([0, 1, -1]), timeout=int32, txid=st.none() | names,
       data=st.dictionaries(names, st.dictionaries(int32, batches, max_size=4), max_size=4))
def test_produce_request_roundtrip_hypothesis(acks, timeout, txid, data):
    req = ProduceRequest(transactional_id=txid, acks=acks, timeout_ms=timeout, topic_data=data)
    header, decoded = decode_request(encode_request(req, 0, 1, None)[4:])
    assert decoded == req and header.client_id is None


@FAST
@given(responses=st.dictionaries(names, st.dictionaries(int32, st.builds(
    ProducePartitionResponse, int16, st.none() | names, int64, int64, int64,
    st.lists(st.builds(ProduceRecordError, int32, st.none() | names), max_size=2)),
    max_size=4), max_size=3))
def test_produce_response_roundtrip_hypothesis(responses):
    resp = ProduceResponse(responses=responses)
    assert decode_response(encode_response(3, resp)[4:], 0)[1] == resp


fetch_partitions = st.lists(st.builds(FetchPartition, int32, int64, int32, int32, int64), max_size=5)


@FAST
@given(replica_id=int32, wait=int32, min_bytes=int32, max_bytes=int32,
       isolation=st.sampled_from([0, 1]),
       topics=st.lists(st.builds(FetchTopic, names, fetch_partitions), max_size=4))
def test_fetch_request_roundtrip_hypothesis(replica_id, wait, min_bytes, max_bytes, isolation, topics):
    req = FetchRequest(replica_id=replica_id, max_wait_ms=wait, min_bytes=min_bytes,
                       max_bytes=max_bytes, isolation_level=isolation, topics=topics)
    assert decode_request(encode_request(req, 0, 2**31 - 1, "c")[4:])[1] == req


@FAST
@given(error_code=int16, topics=st.lists(st.builds(
    FetchTopicResponse, names,
    st.lists(st.builds(FetchPartitionResponse, int32, int16, int64, int64, int64, batches,
                       st.none() | st.lists(st.builds(sm.FetchAbortedTransaction, int64, int64),
                                            max_size=3), int32), max_size=4)),
    max_size=4))
def test_fetch_response_roundtrip_hypothesis(error_code, topics):
    resp = FetchResponse(error_code=error_code, responses=topics)
    assert decode_response(encode_response(-5, resp)[4:], ApiKey.FETCH) == (-5, resp)


# --- strict validation -------------------------------------------------------------------------


def _body(obj):
    return msgpack.unpackb(msgpack.packb(obj.to_body(), use_bin_type=True), raw=False,
                           strict_map_key=False)


FETCH = FetchRequest(topics=[FetchTopic("t", [FetchPartition(0, 5, 100)])])
PRODUCE = ProduceRequest(topic_data={"t": {0: b"batch"}})
META = MetadataResponse(brokers=[MetadataBroker(1, "h", 1)],
                        topics=[MetadataTopic(0, "t", [MetadataPartition(0, 0, 1, 0, [1], [1], [])])])


def _set(path, value):
    def mutate(body):
        target = body
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value
        return body
    return mutate


BAD_BODIES = [
    (FETCH, _set(["max_wait_ms"], "soon"), "'max_wait_ms': expected int32, got str"),
    (FETCH, _set(["max_wait_ms"], True), "'max_wait_ms': expected int32, got bool"),
    (FETCH, _set(["isolation_level"], 300), "'isolation_level': expected int8, got int 300"),
    (FETCH, _set(["topics"], {"t": 1}), "'topics': expected array"),
    (FETCH, _set(["topics", 0, 1, 0, 1], "5"), "'topics[0].partitions[0].fetch_offset'"),
    (FETCH, _set(["topics", 0, 1, 0, 0], 2**31), "'topics[0].partitions[0].partition'"),
    (FETCH, _set(["topics", 0, 1, 0], [0, 5]), "'topics[0].partitions[0]': expected FetchPartition"),
    (FETCH, _set(["topics", 0, 0], None), "'topics[0].topic': expected str, got NoneType"),
    (FETCH, _set(["topics", 0], "t"), "'topics[0]'"),
    (PRODUCE, _set(["acks"], 1.0), "'acks': expected int16, got float"),
    (PRODUCE, _set(["topic_data", "t", 0], "batch"), "'topic_data['t'][0]': expected bytes, got str"),
    (PRODUCE, _set(["topic_data", "t", "0"], b"x"), "topic_data['t']<key '0'>"),
    (PRODUCE, _set(["topic_data"], [["t", {0: b""}]]), "'topic_data': expected map"),
    (PRODUCE, _set(["transactional_id"], 5), "'transactional_id': expected str or nil"),
    (META, _set(["topics", 0, 2, 0, 4], [1, "2"]), "'topics[0].partitions[0].replicas[1]'"),
    (META, _set(["brokers", 0, 3], 7), "'brokers[0].rack'"),
    (META, _set(["cluster_id"], b"bytes"), "'cluster_id': expected str or nil, got bytes"),
]


@pytest.mark.parametrize("msg,mutate,expected", BAD_BODIES)
def test_wrong_field_types_name_the_field(msg, mutate, expected):
    body = mutate(_body(msg))
    with pytest.raises(errors.InvalidRequestError) as info:
        type(msg).from_body(body)
    assert type(info.value) is errors.InvalidRequestError
    assert expected in str(info.value)
    assert type(msg).__name__ in str(info.value)


@pytest.mark.parametrize("msg", [m for m in REQUEST_SAMPLES + RESPONSE_SAMPLES if m.to_body()],
                         ids=_id)
def test_missing_field_is_named(msg):
    body = _body(msg)
    name = sorted(body)[0]
    del body[name]
    with pytest.raises(errors.InvalidRequestError, match=f"missing field '{name}'"):
        type(msg).from_body(body)


@pytest.mark.parametrize("body", [None, [], "x", 5, b"", [1, 2]])
def test_body_must_be_a_map(body):
    with pytest.raises(errors.InvalidRequestError, match="body must be a map"):
        FetchRequest.from_body(body)


def test_extra_keys_are_ignored():
    body = _body(FETCH)
    body["future_field"] = 1
    body[7] = "int key"
    assert FetchRequest.from_body(body) == FETCH
