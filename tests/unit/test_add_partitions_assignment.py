"""assign_new_partitions: replicas for partitions added to a topic (Kafka's CreatePartitions)."""

import pytest

from kafkalite.controller.assignment import assign_new_partitions, validate_assignment
from kafkalite.errors import (InvalidPartitionsError, InvalidReplicaAssignmentError,
                              InvalidReplicationFactorError, UnknownTopicOrPartitionError)


# the first two are Kafka's AddPartitionsTest.testReplicaPlacementAllServers / PartialServers
# (brokers 0..3; Kafka states the leader and the replicas in this order)
@pytest.mark.parametrize("existing,count,brokers,expected", [
    ({0: [2, 3, 0, 1]}, 7, [0, 1, 2, 3],
     {1: [3, 2, 0, 1], 2: [0, 3, 1, 2], 3: [1, 0, 2, 3], 4: [2, 3, 0, 1], 5: [3, 0, 1, 2],
      6: [0, 1, 2, 3]}),
    ({0: [1, 2]}, 3, [0, 1, 2, 3], {1: [2, 0], 2: [3, 1]}),
    # the spread continues from partition 0's first replica, not from broker 0
    ({0: [2, 3], 1: [3, 1]}, 5, [1, 2, 3], {2: [1, 3], 3: [2, 3], 4: [3, 1]}),
    # broker ids given in any order; the start index is the first id >= partition 0's leader
    ({0: [5]}, 3, [9, 5, 7], {1: [7], 2: [9]}),
    # partition 0's leader is gone: start at the next higher id, or at index 0
    ({0: [4, 1]}, 2, [1, 2, 3, 5], {1: [1, 2]}),
    ({0: [9, 1]}, 2, [1, 2, 3], {1: [2, 3]}),
])
def test_spread_like_kafka(existing, count, brokers, expected):
    added = assign_new_partitions("t", existing, count, brokers)
    assert added == expected
    # Kafka checks only leaders and replica sets in its test; the leaders must match exactly
    assert [r[0] for r in added.values()] == [r[0] for r in expected.values()]
    validate_assignment({**existing, **added})


def test_kafka_expected_leaders_and_replica_sets():
    # AddPartitionsTest.testReplicaPlacementAllServers, as Kafka states it
    added = assign_new_partitions("t", {0: [2, 3, 0, 1]}, 7, [0, 1, 2, 3])
    assert [r[0] for _, r in sorted(added.items())] == [3, 0, 1, 2, 3, 0]
    assert all(set(r) == {0, 1, 2, 3} for r in added.values())


def test_new_partitions_are_balanced():
    existing = {0: [1, 2], 1: [2, 3]}
    added = assign_new_partitions("t", existing, 8, [1, 2, 3])
    assert sorted(added) == [2, 3, 4, 5, 6, 7]
    leaders = [r[0] for r in added.values()]
    assert sorted(leaders.count(b) for b in (1, 2, 3)) == [2, 2, 2]
    assert all(len(r) == 2 and len(set(r)) == 2 for r in added.values())


def test_explicit_assignments_are_numbered_after_the_existing_ones():
    added = assign_new_partitions("t", {0: [1, 2], 1: [2, 3]}, 4, [1, 2, 3],
                                  [[3, 1], (1, 3)])
    assert added == {2: [3, 1], 3: [1, 3]}


@pytest.mark.parametrize("existing,count,brokers,explicit,error,message", [
    ({0: [1], 1: [2]}, 2, [1, 2], None, InvalidPartitionsError,
     "Topic already has 2 partitions."),
    ({0: [1], 1: [2], 2: [1]}, 2, [1, 2], None, InvalidPartitionsError,
     "Topic currently has 3 partitions, which is higher than the requested 2."),
    ({0: [1], 1: [2]}, 0, [1, 2], None, InvalidPartitionsError, "higher than the requested 0"),
    ({}, 3, [1, 2], None, UnknownTopicOrPartitionError, "topic 't' does not exist"),
    ({1: [1]}, 3, [1, 2], None, InvalidPartitionsError, "not numbered 0..0"),
    ({0: [1, 2, 3]}, 2, [1, 2], None, InvalidReplicationFactorError,
     "Replication factor: 3 larger than available brokers: 2."),
    # explicit assignments: Kafka's checks and messages
    ({0: [1, 2]}, 2, [1, 2, 3], [[1, 4]], InvalidReplicaAssignmentError,
     "Unknown broker(s) in replica assignment: 4."),
    ({0: [1, 2]}, 3, [1, 2, 3], [[7, 1], [1, 5]], InvalidReplicaAssignmentError,
     "Unknown broker(s) in replica assignment: 7, 5."),
    ({0: [1, 2]}, 3, [1, 2, 3], [[1, 2]], InvalidReplicaAssignmentError,
     "Increasing the number of partitions by 2 but 1 assignments provided."),
    ({0: [1, 2]}, 2, [1, 2, 3], [[1, 2], [2, 3]], InvalidReplicaAssignmentError,
     "by 1 but 2 assignments"),
    ({0: [1, 2]}, 2, [1, 2, 3], [[]], InvalidReplicaAssignmentError,
     "Cannot have replication factor of 0 for partition id 1."),
    ({0: [1, 2]}, 2, [1, 2, 3], [[3, 3]], InvalidReplicaAssignmentError,
     "Duplicate brokers not allowed in replica assignment: 3, 3 for partition id 1."),
    ({0: [1, 2]}, 3, [1, 2, 3], [[3, 1], [1, 2, 3]], InvalidReplicaAssignmentError,
     "Inconsistent replication factor between partitions, partition 0 has 2 while "
     "partitions [2] have replication factors [3], respectively."),
    ({0: [1, 2]}, 4, [1, 2, 3], [[3], [1, 2], [1, 2, 3]], InvalidReplicaAssignmentError,
     "partitions [1, 3] have replication factors [1, 3], respectively."),
])
def test_refusals(existing, count, brokers, explicit, error, message):
    with pytest.raises(error) as info:
        assign_new_partitions("t", existing, count, brokers, explicit)
    assert message in info.value.message


def test_error_codes_are_kafkas():
    assert InvalidPartitionsError.code == 37
    assert InvalidReplicaAssignmentError.code == 39


def test_partition_counts_above_the_znode_cap_are_refused_before_any_work():
    from kafkalite.controller.assignment import MAX_PARTITIONS_PER_TOPIC, assign_replicas
    from kafkalite.errors import InvalidPartitionsError

    assert len(assign_replicas(MAX_PARTITIONS_PER_TOPIC, 1, [1, 2, 3])) == MAX_PARTITIONS_PER_TOPIC
    with pytest.raises(InvalidPartitionsError, match="more than kafkalite allows"):
        assign_replicas(2**30, 3, [1, 2, 3])
    with pytest.raises(InvalidPartitionsError, match="more than kafkalite allows"):
        assign_new_partitions("t", {0: [1]}, MAX_PARTITIONS_PER_TOPIC + 1, [1, 2])
