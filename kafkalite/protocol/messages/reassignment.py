"""Reassignment and election through the brokers: ElectLeaders (43, KIP-460),
AlterPartitionReassignments (45) and ListPartitionReassignments (46) (KIP-455).
"""

from __future__ import annotations

from dataclasses import field
from typing import NamedTuple

from kafkalite.errors import NONE
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.messages.base import Int16, Int32, Int8, Request, Response, _message


# ================================================================================================
# Reassignment and election through the brokers (issue 23): ElectLeaders (43, KIP-460),
# AlterPartitionReassignments (45) and ListPartitionReassignments (46) (KIP-455). All three are
# served by the active controller; the per-partition errors are Kafka 2.8's.
# ================================================================================================

ELECTION_PREFERRED = 0               # Kafka's ElectionType
ELECTION_UNCLEAN = 1


class ElectLeadersTopic(NamedTuple):
    topic: str
    partitions: list[Int32]


class ElectLeadersPartitionResult(NamedTuple):
    partition: Int32
    error_code: Int16
    error_message: str | None = None


class ElectLeadersTopicResult(NamedTuple):
    topic: str
    partitions: list[ElectLeadersPartitionResult]


@_message(ApiKey.ELECT_LEADERS)
class ElectLeadersRequest(Request):
    election_type: Int8 = ELECTION_PREFERRED
    topic_partitions: list[ElectLeadersTopic] | None = None   # None: every partition
    timeout_ms: Int32 = 60000

    def error_response(self, error_code, error_message=None):
        return ElectLeadersResponse(error_code=error_code, results=[
            ElectLeadersTopicResult(t.topic, [
                ElectLeadersPartitionResult(p, error_code, error_message) for p in t.partitions])
            for t in self.topic_partitions or ()])


@_message(ApiKey.ELECT_LEADERS)
class ElectLeadersResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    results: list[ElectLeadersTopicResult] = field(default_factory=list)


class ReassignablePartition(NamedTuple):
    partition: Int32
    replicas: list[Int32] | None             # the target; None cancels a reassignment


class ReassignableTopic(NamedTuple):
    topic: str
    partitions: list[ReassignablePartition]


class ReassignablePartitionResult(NamedTuple):
    partition: Int32
    error_code: Int16
    error_message: str | None = None


class ReassignableTopicResult(NamedTuple):
    topic: str
    partitions: list[ReassignablePartitionResult]


@_message(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
class AlterPartitionReassignmentsRequest(Request):
    topics: list[ReassignableTopic] = field(default_factory=list)
    timeout_ms: Int32 = 60000

    def error_response(self, error_code, error_message=None):
        return AlterPartitionReassignmentsResponse(
            error_code=error_code, error_message=error_message, results=[
                ReassignableTopicResult(t.topic, [
                    ReassignablePartitionResult(p.partition, error_code, error_message)
                    for p in t.partitions]) for t in self.topics])


@_message(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
class AlterPartitionReassignmentsResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    error_message: str | None = None
    results: list[ReassignableTopicResult] = field(default_factory=list)


class ListReassignmentsTopic(NamedTuple):
    topic: str
    partitions: list[Int32]


class OngoingPartitionReassignment(NamedTuple):
    partition: Int32
    replicas: list[Int32]                    # target first, then the replicas leaving
    adding_replicas: list[Int32]
    removing_replicas: list[Int32]


class OngoingTopicReassignment(NamedTuple):
    topic: str
    partitions: list[OngoingPartitionReassignment]


@_message(ApiKey.LIST_PARTITION_REASSIGNMENTS)
class ListPartitionReassignmentsRequest(Request):
    topics: list[ListReassignmentsTopic] | None = None       # None: every reassignment
    timeout_ms: Int32 = 60000

    def error_response(self, error_code, error_message=None):
        return ListPartitionReassignmentsResponse(
            error_code=error_code, error_message=error_message, topics=[
                OngoingTopicReassignment(t.topic, [
                    OngoingPartitionReassignment(p, [], [], []) for p in t.partitions])
                for t in self.topics or ()])


@_message(ApiKey.LIST_PARTITION_REASSIGNMENTS)
class ListPartitionReassignmentsResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    error_message: str | None = None
    topics: list[OngoingTopicReassignment] = field(default_factory=list)
