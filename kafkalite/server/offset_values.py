"""The plain values the ReplicaManager's offset lookups (ListOffsets, OffsetForLeaderEpoch) take
and give back, as Kafka's ReplicaManager does (``fetchOffsetForTimestamp``,
``lastOffsetForLeaderEpoch``): no request or response class of either wire protocol reaches the
data layer. The handlers (``server.offset_apis``) build these from the model request, and the
model response from them.

A partition is a plain ``(topic, partition)`` tuple, the key of the ReplicaManager's
``partitions``.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["OffsetQuery", "EpochQuery", "OffsetResult", "EpochEndOffset"]

NO_EPOCH = -1       # a current leader epoch of -1: unknown, no fencing check (KIP-320)


class OffsetQuery(NamedTuple):
    """What ListOffsets asks of one partition."""
    timestamp: int                       # -2 earliest, -1 latest, else ms since the epoch
    current_leader_epoch: int = NO_EPOCH


class EpochQuery(NamedTuple):
    """What OffsetForLeaderEpoch asks of one partition."""
    current_leader_epoch: int            # -1: no fencing check
    leader_epoch: int                    # the epoch whose end offset is wanted


class OffsetResult(NamedTuple):
    """One partition's ListOffsets answer. The field order is the model's
    ``ListOffsetsPartitionResponse`` after its partition, so the handler builds that with
    ``(partition, *result)``."""
    error_code: int
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1


class EpochEndOffset(NamedTuple):
    """One partition's OffsetForLeaderEpoch answer (Kafka's EpochEndOffset), in the order of the
    model's ``OffsetForLeaderEpochPartitionResponse`` after its partition."""
    error_code: int
    leader_epoch: int = -1
    end_offset: int = -1
