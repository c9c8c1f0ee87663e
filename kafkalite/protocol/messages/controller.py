"""What the controller sends the brokers: LeaderAndIsr (4), StopReplica (5), UpdateMetadata
(6), and ControlledShutdown (7), which a broker sends the controller.
"""

from __future__ import annotations

from dataclasses import field
from typing import NamedTuple

from kafkalite.errors import NONE
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.messages.base import (
    Int16, Int32, Int64, PartitionError, Request, Response, _message,
)
from kafkalite.topic_partition import TopicPartition


# ================================================================================================
# LeaderAndIsr (4)
# ================================================================================================


class LeaderAndIsrPartitionState(NamedTuple):
    topic: str
    partition: Int32
    controller_epoch: Int32
    leader: Int32
    leader_epoch: Int32
    isr: list[Int32]
    zk_version: Int32
    replicas: list[Int32]
    is_new: bool = False


class LeaderAndIsrLiveLeader(NamedTuple):
    broker_id: Int32
    host: str
    port: Int32


@_message(ApiKey.LEADER_AND_ISR)
class LeaderAndIsrRequest(Request):
    controller_id: Int32
    controller_epoch: Int32
    broker_epoch: Int64 = -1
    partition_states: list[LeaderAndIsrPartitionState] = field(default_factory=list)
    live_leaders: list[LeaderAndIsrLiveLeader] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return LeaderAndIsrResponse(
            error_code=error_code, error_message=error_message,
            partition_errors=[PartitionError(s.topic, s.partition, error_code)
                              for s in self.partition_states])


@_message(ApiKey.LEADER_AND_ISR)
class LeaderAndIsrResponse(Response):
    error_code: Int16 = NONE
    error_message: str | None = None
    partition_errors: list[PartitionError] = field(default_factory=list)


# ================================================================================================
# StopReplica (5)
# ================================================================================================


@_message(ApiKey.STOP_REPLICA)
class StopReplicaRequest(Request):
    controller_id: Int32
    controller_epoch: Int32
    broker_epoch: Int64 = -1
    delete_partitions: bool = False
    partitions: list[TopicPartition] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return StopReplicaResponse(
            error_code=error_code, error_message=error_message,
            partition_errors=[PartitionError(tp.topic, tp.partition, error_code)
                              for tp in self.partitions])


@_message(ApiKey.STOP_REPLICA)
class StopReplicaResponse(Response):
    error_code: Int16 = NONE
    error_message: str | None = None
    partition_errors: list[PartitionError] = field(default_factory=list)


# ================================================================================================
# UpdateMetadata (6)
# ================================================================================================


class UpdateMetadataPartitionState(NamedTuple):
    topic: str
    partition: Int32
    controller_epoch: Int32
    leader: Int32
    leader_epoch: Int32
    isr: list[Int32]
    zk_version: Int32
    replicas: list[Int32]
    offline_replicas: list[Int32]
    topic_id: str | None = None      # the topic's id (/brokers/topics/<t>), served in Metadata


class UpdateMetadataBroker(NamedTuple):
    id: Int32
    host: str                        # the inter-broker listener's address
    port: Int32
    rack: str | None = None
    endpoints: list[str] = []        # every advertised listener, "NAME://host:port"


@_message(ApiKey.UPDATE_METADATA)
class UpdateMetadataRequest(Request):
    controller_id: Int32
    controller_epoch: Int32
    broker_epoch: Int64 = -1
    partition_states: list[UpdateMetadataPartitionState] = field(default_factory=list)
    live_brokers: list[UpdateMetadataBroker] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return UpdateMetadataResponse(error_code=error_code, error_message=error_message)


@_message(ApiKey.UPDATE_METADATA)
class UpdateMetadataResponse(Response):
    error_code: Int16 = NONE
    error_message: str | None = None


# ================================================================================================
# ControlledShutdown (7)
# ================================================================================================


@_message(ApiKey.CONTROLLED_SHUTDOWN)
class ControlledShutdownRequest(Request):
    broker_id: Int32
    broker_epoch: Int64 = -1

    def error_response(self, error_code, error_message=None):
        return ControlledShutdownResponse(error_code=error_code, error_message=error_message)


@_message(ApiKey.CONTROLLED_SHUTDOWN)
class ControlledShutdownResponse(Response):
    error_code: Int16 = NONE
    error_message: str | None = None
    remaining_partitions: list[TopicPartition] = field(default_factory=list)
