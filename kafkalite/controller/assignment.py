"""Replica assignment at topic creation and when partitions are added (pure): Kafka's
rack-unaware spread.

Partition p's first replica is broker ``(p + start) % n``; the followers follow it at a shift that
grows by one every n partitions, so leaders and followers both spread evenly and no two partitions
share the same follower pattern. ``start`` and the initial shift are random unless fixed.
"""

from __future__ import annotations

import random
from typing import Iterable, Mapping, Sequence

from kafkalite.errors import (InvalidPartitionsError, InvalidReplicaAssignmentError,
                              InvalidReplicationFactorError, UnknownTopicOrPartitionError)


#: A topic's assignment is one znode (/brokers/topics/<t>), and ZooKeeper refuses a znode above
#: jute.maxbuffer (1 MB): at ~16 bytes a partition, 10,000 partitions stay well inside it. The
#: cap also keeps a request for 2**30 partitions from stalling a broker's reactor.
MAX_PARTITIONS_PER_TOPIC = 10_000


def check_partition_count(total: int) -> None:
    if total > MAX_PARTITIONS_PER_TOPIC:
        raise InvalidPartitionsError(
            f"{total} partitions is more than kafkalite allows in one topic "
            f"({MAX_PARTITIONS_PER_TOPIC}: the assignment must fit in one ZooKeeper znode); "
            f"use fewer partitions or more topics")


def assign_replicas(num_partitions: int, replication_factor: int, broker_ids: list[int],
                    fixed_start_index: int = -1, start_partition_id: int = 0,
                    rng: random.Random | None = None) -> dict[int, list[int]]:
    # Kafka's wording (AdminUtils.assignReplicasToBrokers): kafka-topics prints it to users
    if num_partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    check_partition_count(start_partition_id + num_partitions)
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    brokers = sorted(broker_ids)
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}.")
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


def assign_new_partitions(topic: str, existing: Mapping[int, Sequence[int]], new_count: int,
                          broker_ids: Iterable[int],
                          new_assignments: Sequence[Sequence[int]] | None = None
                          ) -> dict[int, list[int]]:
    """Replicas for the partitions ``len(existing) .. new_count - 1`` added to ``topic``
    (Kafka's CreatePartitions: ZkAdminManager.createPartitions + AdminZkClient's
    createNewPartitionsAssignment). Returns only the new partitions.

    ``new_assignments`` (one broker-id list per added partition, in partition order) fixes them;
    without it they are spread like :func:`assign_replicas`, with partition 0's replica count,
    starting at the index of the first broker whose id is >= partition 0's first replica, so the
    added partitions continue the existing spread. ``broker_ids`` are the registered brokers.

    Raises UnknownTopicOrPartitionError (no existing partitions), InvalidPartitionsError (the
    count does not grow), InvalidReplicaAssignmentError (an unknown broker, the wrong number of
    lists, an empty or repeating list, another replication factor than partition 0's) and
    InvalidReplicationFactorError (more replicas than brokers).
    """
    if not existing:
        raise UnknownTopicOrPartitionError(f"topic '{topic}' does not exist")
    old_count = len(existing)
    if sorted(existing) != list(range(old_count)):
        raise InvalidPartitionsError(
            f"the existing assignment of topic '{topic}' is not numbered 0..{old_count - 1}: "
            f"{sorted(existing)}")
    increment = new_count - old_count
    if increment < 0:
        raise InvalidPartitionsError(
            f"Topic currently has {old_count} partitions, which is higher than the requested "
            f"{new_count}.")
    if increment == 0:
        raise InvalidPartitionsError(f"Topic already has {old_count} partitions.")
    check_partition_count(new_count)
    brokers = sorted(set(broker_ids))
    first = list(existing[0])
    rf = len(first)
    if new_assignments is None:
        start = next((i for i, b in enumerate(brokers) if first and b >= first[0]), 0)
        return assign_replicas(increment, rf, brokers, fixed_start_index=start,
                               start_partition_id=old_count)
    lists = [list(replicas) for replicas in new_assignments]
    # in order of first mention, as Kafka's (small) Set prints them
    unknown = [b for b in dict.fromkeys(b for replicas in lists for b in replicas)
               if b not in set(brokers)]
    if unknown:
        raise InvalidReplicaAssignmentError(
            f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.")
    if len(lists) != increment:
        raise InvalidReplicaAssignmentError(
            f"Increasing the number of partitions by {increment} but {len(lists)} "
            f"assignments provided.")
    added = {old_count + offset: replicas for offset, replicas in enumerate(lists)}
    # Kafka's order (AdminZkClient.validateReplicaAssignment): each list on its own first,
    # then every partition whose replica count is not partition 0's, in one message
    for partition, replicas in added.items():
        if not replicas:
            raise InvalidReplicaAssignmentError(
                f"Cannot have replication factor of 0 for partition id {partition}.")
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(
                f"Duplicate brokers not allowed in replica assignment: "
                f"{', '.join(map(str, replicas))} for partition id {partition}.")
    uneven = [(p, len(r)) for p, r in added.items() if len(r) != rf]
    if uneven:
        raise InvalidReplicaAssignmentError(
            f"Inconsistent replication factor between partitions, partition 0 has {rf} while "
            f"partitions [{', '.join(str(p) for p, _ in uneven)}] have replication factors "
            f"[{', '.join(str(n) for _, n in uneven)}], respectively.")
    return added


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


def scala_map_repr(assignment: Mapping[int, Sequence[int]]) -> str:
    """An assignment as Kafka's messages print its Scala map (``HashMap(0 -> ArrayBuffer(1,
    1))``); a HashMap of small partition ids iterates in id order."""
    return "HashMap(" + ", ".join(
        f"{p} -> ArrayBuffer({', '.join(map(str, r))})" for p, r in sorted(assignment.items())
    ) + ")"


def validate_assignment(assignment: dict[int, list[int]]) -> None:
    """Kafka's checks of an explicit assignment at topic creation (AdminZkClient's
    validateTopicCreate), in its order and words. Brokers that do not exist are allowed, as in
    Kafka 2.8: their replicas stay offline until such a broker registers."""
    if not assignment:
        raise InvalidReplicaAssignmentError("replica assignment is empty")
    if len({len(replicas) for replicas in assignment.values()}) != 1:
        raise InvalidReplicaAssignmentError(
            "All partitions should have the same number of replicas")
    for replicas in assignment.values():
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(
                "Duplicate replica assignment found: " + scala_map_repr(assignment))
    # stricter than Kafka's sum test, which lets e.g. {-1, 1, 2} through
    if sorted(assignment) != list(range(len(assignment))):
        raise InvalidReplicaAssignmentError(
            "partitions should be a consecutive 0-based integer sequence")
