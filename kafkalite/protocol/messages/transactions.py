"""Producers and transactions: InitProducerId (22); the transaction APIs (KIP-98, KIP-447)
AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26), WriteTxnMarkers (27) and
TxnOffsetCommit (28); DescribeProducers (61, KIP-664).
"""

from __future__ import annotations

from dataclasses import field
from typing import NamedTuple

from kafkalite.errors import NONE
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.messages.base import Int16, Int32, Int64, Request, Response, _message


# ================================================================================================
# InitProducerId (22)
# ================================================================================================


@_message(ApiKey.INIT_PRODUCER_ID)
class InitProducerIdRequest(Request):
    transactional_id: str | None = None
    transaction_timeout_ms: Int32 = 60000
    # KIP-360 (Kafka v3+): the id and epoch the producer had, both -1 or neither
    producer_id: Int64 = -1
    producer_epoch: Int16 = -1

    def error_response(self, error_code, error_message=None):
        return InitProducerIdResponse(error_code=error_code, error_message=error_message)


@_message(ApiKey.INIT_PRODUCER_ID)
class InitProducerIdResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    error_message: str | None = None
    producer_id: Int64 = -1
    producer_epoch: Int16 = -1


# ================================================================================================
# Transactions (KIP-98, KIP-447): AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26),
# WriteTxnMarkers (27), TxnOffsetCommit (28). Field names are Kafka 2.8's JSON schema names.
# ================================================================================================


class AddPartitionsToTxnTopic(NamedTuple):
    name: str
    partitions: list[Int32]


class AddPartitionsToTxnPartitionResult(NamedTuple):
    partition_index: Int32
    error_code: Int16


class AddPartitionsToTxnTopicResult(NamedTuple):
    name: str
    results: list[AddPartitionsToTxnPartitionResult]


@_message(ApiKey.ADD_PARTITIONS_TO_TXN)
class AddPartitionsToTxnRequest(Request):
    transactional_id: str
    producer_id: Int64
    producer_epoch: Int16
    topics: list[AddPartitionsToTxnTopic] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        # Kafka's getErrorResponse answers each distinct partition once, a topic named twice
        # in one entry
        by_topic: dict[str, dict[int, None]] = {}
        for t in self.topics:
            by_topic.setdefault(t.name, {}).update(dict.fromkeys(t.partitions))
        return AddPartitionsToTxnResponse(results=[
            AddPartitionsToTxnTopicResult(name, [AddPartitionsToTxnPartitionResult(p, error_code)
                                                 for p in partitions])
            for name, partitions in by_topic.items()])


@_message(ApiKey.ADD_PARTITIONS_TO_TXN)
class AddPartitionsToTxnResponse(Response):
    throttle_time_ms: Int32 = 0
    results: list[AddPartitionsToTxnTopicResult] = field(default_factory=list)


@_message(ApiKey.ADD_OFFSETS_TO_TXN)
class AddOffsetsToTxnRequest(Request):
    transactional_id: str
    producer_id: Int64
    producer_epoch: Int16
    group_id: str

    def error_response(self, error_code, error_message=None):
        return AddOffsetsToTxnResponse(error_code=error_code)


@_message(ApiKey.ADD_OFFSETS_TO_TXN)
class AddOffsetsToTxnResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE


@_message(ApiKey.END_TXN)
class EndTxnRequest(Request):
    transactional_id: str
    producer_id: Int64
    producer_epoch: Int16
    committed: bool                      # True: commit, False: abort

    def error_response(self, error_code, error_message=None):
        return EndTxnResponse(error_code=error_code)


@_message(ApiKey.END_TXN)
class EndTxnResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE


class WritableTxnMarkerTopic(NamedTuple):
    name: str
    partition_indexes: list[Int32]


class WritableTxnMarker(NamedTuple):
    producer_id: Int64
    producer_epoch: Int16
    transaction_result: bool             # True: COMMIT, False: ABORT
    topics: list[WritableTxnMarkerTopic]
    coordinator_epoch: Int32


class WritableTxnMarkerPartitionResult(NamedTuple):
    partition_index: Int32
    error_code: Int16


class WritableTxnMarkerTopicResult(NamedTuple):
    name: str
    partitions: list[WritableTxnMarkerPartitionResult]


class WritableTxnMarkerResult(NamedTuple):
    producer_id: Int64
    topics: list[WritableTxnMarkerTopicResult]


@_message(ApiKey.WRITE_TXN_MARKERS)
class WriteTxnMarkersRequest(Request):
    """Sent by a transaction coordinator to each partition leader of a finishing transaction."""
    markers: list[WritableTxnMarker] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return WriteTxnMarkersResponse(markers=[
            WritableTxnMarkerResult(marker.producer_id, [
                WritableTxnMarkerTopicResult(t.name, [
                    WritableTxnMarkerPartitionResult(p, error_code)
                    for p in t.partition_indexes])
                for t in marker.topics])
            for marker in self.markers])


@_message(ApiKey.WRITE_TXN_MARKERS)
class WriteTxnMarkersResponse(Response):
    markers: list[WritableTxnMarkerResult] = field(default_factory=list)


class TxnOffsetCommitRequestPartition(NamedTuple):
    partition_index: Int32
    committed_offset: Int64
    committed_leader_epoch: Int32 = -1
    committed_metadata: str | None = None


class TxnOffsetCommitRequestTopic(NamedTuple):
    name: str
    partitions: list[TxnOffsetCommitRequestPartition]


class TxnOffsetCommitResponsePartition(NamedTuple):
    partition_index: Int32
    error_code: Int16


class TxnOffsetCommitResponseTopic(NamedTuple):
    name: str
    partitions: list[TxnOffsetCommitResponsePartition]


@_message(ApiKey.TXN_OFFSET_COMMIT)
class TxnOffsetCommitRequest(Request):
    transactional_id: str
    group_id: str
    producer_id: Int64
    producer_epoch: Int16
    # KIP-447 (Kafka v3+): the consumer's group generation, fenced like OffsetCommit's
    generation_id: Int32 = -1
    member_id: str = ""
    group_instance_id: str | None = None
    topics: list[TxnOffsetCommitRequestTopic] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return TxnOffsetCommitResponse(topics=[
            TxnOffsetCommitResponseTopic(t.name, [
                TxnOffsetCommitResponsePartition(p.partition_index, error_code)
                for p in t.partitions])
            for t in self.topics])


@_message(ApiKey.TXN_OFFSET_COMMIT)
class TxnOffsetCommitResponse(Response):
    throttle_time_ms: Int32 = 0
    topics: list[TxnOffsetCommitResponseTopic] = field(default_factory=list)


# ================================================================================================
# DescribeProducers (61, KIP-664): a partition's active producers, as its replica knows them.
# Field names are Kafka 2.8's JSON schema names.
# ================================================================================================


class DescribeProducersTopic(NamedTuple):
    name: str
    partition_indexes: list[Int32]


class ProducerState(NamedTuple):
    """One producer of a partition (Kafka's DescribeProducersResponseData.ProducerState)."""
    producer_id: Int64
    producer_epoch: Int32
    last_sequence: Int32                 # -1: no batch of this epoch kept
    last_timestamp: Int64                # -1: none
    coordinator_epoch: Int32             # of its last transaction marker, -1 for none
    current_txn_start_offset: Int64      # -1: no open transaction


class DescribeProducersPartitionResponse(NamedTuple):
    partition_index: Int32
    error_code: Int16
    error_message: str | None = None
    active_producers: list[ProducerState] = []


class DescribeProducersTopicResponse(NamedTuple):
    name: str
    partitions: list[DescribeProducersPartitionResponse]


@_message(ApiKey.DESCRIBE_PRODUCERS)
class DescribeProducersRequest(Request):
    topics: list[DescribeProducersTopic] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        # Kafka's getErrorResponse sets the code only, no message
        return DescribeProducersResponse(topics=[
            DescribeProducersTopicResponse(t.name, [
                DescribeProducersPartitionResponse(p, error_code)
                for p in t.partition_indexes])
            for t in self.topics])


@_message(ApiKey.DESCRIBE_PRODUCERS)
class DescribeProducersResponse(Response):
    throttle_time_ms: Int32 = 0
    topics: list[DescribeProducersTopicResponse] = field(default_factory=list)
