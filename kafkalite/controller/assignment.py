"""Replica assignment at topic creation (pure): Kafka's rack-unaware spread.

Partition p's first replica is broker ``(p + start) % n``; the followers follow it at a shift that
grows by one every n partitions, so leaders and followers both spread evenly and no two partitions
share the same follower pattern. ``start`` and the initial shift are random unless fixed.
"""

from __future__ import annotations

import random

from kafkalite.errors import (InvalidPartitionsError, InvalidReplicaAssignmentError,
                              InvalidReplicationFactorError)


def assign_replicas(num_partitions: int, replication_factor: int, broker_ids: list[int],
                    fixed_start_index: int = -1, start_partition_id: int = 0,
                    rng: random.Random | None = None) -> dict[int, list[int]]:
    if num_partitions <= 0:
        raise InvalidPartitionsError(f"number of partitions must be larger than 0, "
                                     f"got {num_partitions}")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError(
            f"replication factor must be larger than 0, got {replication_factor}")
    brokers = sorted(broker_ids)
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"replication factor {replication_factor} is larger than the "
            f"{len(brokers)} live broker(s) {brokers}")
    rng = rng or random.Random()
    n = len(brokers)
    start = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    shift = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    assignment: dict[int, list[int]] = {}
    partition = max(0, start_partition_id)
    for _ in range(num_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start) % n
        replicas = [brokers[first]]
        for j in range(replication_factor - 1):
            replicas.append(brokers[(first + 1 + (shift + j) % (n - 1)) % n])
        assignment[partition] = replicas
        partition += 1
    return assignment


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """Parse Kafka's ``--replica-assignment 1:2,2:3`` (partition i's replicas, comma-separated)."""
    assignment: dict[int, list[int]] = {}
    for partition, group in enumerate(text.split(",")):
        try:
            replicas = [int(item) for item in group.split(":")]
        except ValueError:
            raise InvalidReplicaAssignmentError(
                f"replica assignment {text!r}: partition {partition} has {group!r}, "
                "expected broker ids separated by ':'") from None
        assignment[partition] = replicas
    validate_assignment(assignment)
    return assignment


def validate_assignment(assignment: dict[int, list[int]],
                        live_brokers: set[int] | None = None) -> None:
    if not assignment:
        raise InvalidReplicaAssignmentError("replica assignment is empty")
    if sorted(assignment) != list(range(len(assignment))):
        raise InvalidReplicaAssignmentError(
            f"partitions must be numbered 0..{len(assignment) - 1}, got {sorted(assignment)}")
    sizes = {len(replicas) for replicas in assignment.values()}
    if len(sizes) != 1:
        raise InvalidReplicaAssignmentError(
            "every partition must have the same number of replicas")
    for partition, replicas in assignment.items():
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(
                f"partition {partition} lists a broker twice: {replicas}")
        if live_brokers is not None:
            unknown = [b for b in replicas if b not in live_brokers]
            if unknown:
                raise InvalidReplicaAssignmentError(
                    f"partition {partition} uses broker(s) {unknown} that are not live "
                    f"(live: {sorted(live_brokers)})")
