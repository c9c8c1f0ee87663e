"""The data path: Produce (0), Fetch (1), ListOffsets (2), OffsetForLeaderEpoch (23) and
DeleteRecords (21), the APIs that read, write or trim a partition's log (record data is
``bytes`` the model never looks into).
"""

from __future__ import annotations

from dataclasses import field
from typing import NamedTuple

from kafkalite.errors import NONE
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.messages.base import (
    Int16, Int32, Int64, Int8, Request, Response, _bytes_summary, _message,
)


# ================================================================================================
# Produce (0)
# ================================================================================================


class ProduceRecordError(NamedTuple):
    """KIP-467: one record a refused batch was refused for (its index in the batch)."""
    batch_index: Int32
    message: str | None = None


class ProducePartitionResponse(NamedTuple):
    error_code: Int16
    error_message: str | None = None
    base_offset: Int64 = -1
    log_append_time: Int64 = -1      # -1 = CreateTime topics
    log_start_offset: Int64 = -1
    record_errors: list[ProduceRecordError] = []    # never mutated: a shared default is safe


@_message(ApiKey.PRODUCE)
class ProduceRequest(Request):
    transactional_id: str | None = None
    acks: Int16 = 1                  # 0, 1 or -1 (all); the broker checks the value
    timeout_ms: Int32 = 30000
    topic_data: dict[str, dict[Int32, bytes]] = field(default_factory=dict)
    """``{topic: {partition: record batch bytes}}``; the bytes are never decoded by the codec."""

    def __repr__(self) -> str:
        parts = {t: {p: _bytes_summary(b) for p, b in ps.items()}
                 for t, ps in self.topic_data.items()}
        return (f"ProduceRequest(transactional_id={self.transactional_id!r}, acks={self.acks}, "
                f"timeout_ms={self.timeout_ms}, topic_data={parts})")

    def expects_response(self) -> bool:
        return self.acks != 0

    def error_response(self, error_code, error_message=None):
        return ProduceResponse(responses={
            t: {p: ProducePartitionResponse(error_code, error_message) for p in ps}
            for t, ps in self.topic_data.items()})


@_message(ApiKey.PRODUCE)
class ProduceResponse(Response):
    responses: dict[str, dict[Int32, ProducePartitionResponse]] = field(default_factory=dict)
    throttle_time_ms: Int32 = 0


# ================================================================================================
# Fetch (1)
# ================================================================================================

CONSUMER_REPLICA_ID = -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1


class FetchPartition(NamedTuple):
    partition: Int32
    fetch_offset: Int64
    partition_max_bytes: Int32
    current_leader_epoch: Int32 = -1     # -1 = unknown, skip the fencing check
    log_start_offset: Int64 = -1         # followers only


class FetchTopic(NamedTuple):
    topic: str
    partitions: list[FetchPartition]


class FetchAbortedTransaction(NamedTuple):
    """An aborted transaction overlapping a read_committed fetch: the consumer drops its
    producer's batches from ``first_offset`` up to the ABORT marker."""
    producer_id: Int64
    first_offset: Int64


class FetchPartitionResponse(NamedTuple):
    partition: Int32
    error_code: Int16
    high_watermark: Int64 = -1
    last_stable_offset: Int64 = -1
    log_start_offset: Int64 = -1
    records: bytes = b""                 # stored record batches, as they are on disk
    # None (Kafka's null) for read_uncommitted; for read_committed the aborted transactions
    # overlapping the returned range (possibly none)
    aborted_transactions: list[FetchAbortedTransaction] | None = None
    # KIP-392: the replica the leader points this consumer to (then no records), -1 for none
    preferred_read_replica: Int32 = -1

    def __repr__(self) -> str:
        return (f"FetchPartitionResponse(partition={self.partition}, "
                f"error_code={self.error_code}, high_watermark={self.high_watermark}, "
                f"last_stable_offset={self.last_stable_offset}, "
                f"log_start_offset={self.log_start_offset}, "
                f"records={_bytes_summary(self.records)}, "
                f"aborted_transactions={self.aborted_transactions!r}, "
                f"preferred_read_replica={self.preferred_read_replica})")


class FetchTopicResponse(NamedTuple):
    topic: str
    partitions: list[FetchPartitionResponse]


@_message(ApiKey.FETCH)
class FetchRequest(Request):
    replica_id: Int32 = CONSUMER_REPLICA_ID   # broker id for a follower, -1 for consumers
    max_wait_ms: Int32 = 500
    min_bytes: Int32 = 1
    max_bytes: Int32 = 52428800
    isolation_level: Int8 = READ_UNCOMMITTED
    topics: list[FetchTopic] = field(default_factory=list)
    # KIP-227 fetch sessions (Kafka's protocol, v7+): kafkalite never opens one (it answers
    # session id 0), so a request continuing one (epoch > 0) is told to start over
    session_id: Int32 = 0
    session_epoch: Int32 = -1                 # -1: no session (a full fetch)
    # KIP-392 client metadata: the consumer's rack from Fetch v11 on ("" when it names none);
    # None below v11, which keeps the fetch at the leader
    rack_id: str | None = None

    def error_response(self, error_code, error_message=None):
        return FetchResponse(error_code=error_code, error_message=error_message, responses=[
            FetchTopicResponse(t.topic, [FetchPartitionResponse(p.partition, error_code)
                                         for p in t.partitions])
            for t in self.topics])


@_message(ApiKey.FETCH)
class FetchResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    error_message: str | None = None
    responses: list[FetchTopicResponse] = field(default_factory=list)


# ================================================================================================
# ListOffsets (2)
# ================================================================================================

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2


class ListOffsetsPartition(NamedTuple):
    partition: Int32
    timestamp: Int64                     # -2 earliest, -1 latest, else ms since the epoch
    current_leader_epoch: Int32 = -1


class ListOffsetsTopic(NamedTuple):
    topic: str
    partitions: list[ListOffsetsPartition]


class ListOffsetsPartitionResponse(NamedTuple):
    partition: Int32
    error_code: Int16
    timestamp: Int64 = -1
    offset: Int64 = -1
    leader_epoch: Int32 = -1


class ListOffsetsTopicResponse(NamedTuple):
    topic: str
    partitions: list[ListOffsetsPartitionResponse]


@_message(ApiKey.LIST_OFFSETS)
class ListOffsetsRequest(Request):
    replica_id: Int32 = CONSUMER_REPLICA_ID
    isolation_level: Int8 = READ_UNCOMMITTED
    topics: list[ListOffsetsTopic] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return ListOffsetsResponse(topics=[
            ListOffsetsTopicResponse(t.topic, [ListOffsetsPartitionResponse(p.partition, error_code)
                                               for p in t.partitions])
            for t in self.topics])


@_message(ApiKey.LIST_OFFSETS)
class ListOffsetsResponse(Response):
    throttle_time_ms: Int32 = 0
    topics: list[ListOffsetsTopicResponse] = field(default_factory=list)


# ================================================================================================
# OffsetForLeaderEpoch (23)
# ================================================================================================


class OffsetForLeaderEpochPartition(NamedTuple):
    partition: Int32
    current_leader_epoch: Int32          # -1 = unknown, skip the fencing check
    leader_epoch: Int32                  # the epoch whose end offset is wanted


class OffsetForLeaderEpochTopic(NamedTuple):
    topic: str
    partitions: list[OffsetForLeaderEpochPartition]


class OffsetForLeaderEpochPartitionResponse(NamedTuple):
    partition: Int32
    error_code: Int16
    leader_epoch: Int32 = -1
    end_offset: Int64 = -1


class OffsetForLeaderEpochTopicResponse(NamedTuple):
    topic: str
    partitions: list[OffsetForLeaderEpochPartitionResponse]


@_message(ApiKey.OFFSET_FOR_LEADER_EPOCH)
class OffsetForLeaderEpochRequest(Request):
    replica_id: Int32 = CONSUMER_REPLICA_ID
    topics: list[OffsetForLeaderEpochTopic] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return OffsetForLeaderEpochResponse(topics=[
            OffsetForLeaderEpochTopicResponse(
                t.topic, [OffsetForLeaderEpochPartitionResponse(p.partition, error_code)
                          for p in t.partitions])
            for t in self.topics])


@_message(ApiKey.OFFSET_FOR_LEADER_EPOCH)
class OffsetForLeaderEpochResponse(Response):
    throttle_time_ms: Int32 = 0
    topics: list[OffsetForLeaderEpochTopicResponse] = field(default_factory=list)


# ================================================================================================
# DeleteRecords (21)
# ================================================================================================


class DeleteRecordsPartition(NamedTuple):
    partition: Int32
    offset: Int64                              # delete everything below; -1 = the high watermark


class DeleteRecordsTopic(NamedTuple):
    topic: str
    partitions: list[DeleteRecordsPartition]


class DeleteRecordsPartitionResult(NamedTuple):
    partition: Int32
    low_watermark: Int64                       # -1 with an error
    error_code: Int16


class DeleteRecordsTopicResult(NamedTuple):
    topic: str
    partitions: list[DeleteRecordsPartitionResult]


@_message(ApiKey.DELETE_RECORDS)
class DeleteRecordsRequest(Request):
    topics: list[DeleteRecordsTopic] = field(default_factory=list)
    timeout_ms: Int32 = 30000

    def error_response(self, error_code, error_message=None):
        return DeleteRecordsResponse(topics=[
            DeleteRecordsTopicResult(t.topic, [DeleteRecordsPartitionResult(p.partition, -1,
                                                                            error_code)
                                               for p in t.partitions])
            for t in self.topics])


@_message(ApiKey.DELETE_RECORDS)
class DeleteRecordsResponse(Response):
    throttle_time_ms: Int32 = 0
    topics: list[DeleteRecordsTopicResult] = field(default_factory=list)
