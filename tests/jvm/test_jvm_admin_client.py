"""Kafka 2.8.2's Java AdminClient against both systems: describeCluster, createTopics with
configs (and again: TopicExistsException), describeConfigs (values, sources, read-only flags),
createPartitions (and a shrink: InvalidPartitionsException), listOffsets (earliest, latest, by
time), deleteRecords (and beyond the end: OffsetOutOfRangeException), listConsumerGroups,
describeConsumerGroups, listConsumerGroupOffsets, deleteConsumerGroups and deleteTopics.

Every result is checked against the scenario (AdminOps.java), so both systems must give the same.
"""

from __future__ import annotations

import time

import pytest
from jvm_apps import jvm_classes, run_java, unique  # noqa: F401

from kafkalite.testing.oracle_fixtures import SYSTEMS

pytestmark = [pytest.mark.integration]


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_java_admin_client_calls(system, jvm_classes):
    prefix = unique("jvm-admin")
    base_ts = int(time.time() * 1000) - 600_000
    lines = run_java(jvm_classes, "AdminOps", "all", system.bootstrap_servers, prefix,
                     str(base_ts))
    steps = {line.pop("step"): line for line in lines}

    cluster = steps["describeCluster"]
    assert cluster["nodes"] == [1, 2, 3]
    assert cluster["controller"] in (1, 2, 3)
    assert len(cluster["cluster_id"]) == 22

    assert steps["createTopics"] == {"again": "TopicExistsException"}
    assert steps["describeConfigs"]["configs"] == {
        "main/retention.ms": ["3600000", "DYNAMIC_TOPIC_CONFIG", False],
        "main/max.message.bytes": ["200000", "DYNAMIC_TOPIC_CONFIG", False],
        "main/cleanup.policy": ["delete", "DEFAULT_CONFIG", False],
        "main/min.cleanable.dirty.ratio": ["0.5", "DEFAULT_CONFIG", False],
        # the brokers' own setting (SHARED_SETTINGS)
        "main/min.insync.replicas": ["2", "STATIC_BROKER_CONFIG", False],
        "main/segment.bytes": ["1073741824", "DEFAULT_CONFIG", False],
        "compacted/retention.ms": ["604800000", "DEFAULT_CONFIG", False],
        "compacted/max.message.bytes": ["1048588", "DEFAULT_CONFIG", False],
        "compacted/cleanup.policy": ["compact", "DYNAMIC_TOPIC_CONFIG", False],
        "compacted/min.cleanable.dirty.ratio": ["0.2", "DYNAMIC_TOPIC_CONFIG", False],
        "compacted/min.insync.replicas": ["2", "STATIC_BROKER_CONFIG", False],
        "compacted/segment.bytes": ["1073741824", "DEFAULT_CONFIG", False],
    }
    assert steps["createPartitions"] == {"partitions": 4, "shrink": "InvalidPartitionsException"}
    assert steps["listOffsets"] == {"earliest": 0, "latest": 10, "for_time": 5,
                                    "for_time_beyond": -1, "latest_p3": 1}
    assert steps["deleteRecords"] == {"low_watermark": 4, "earliest": 4,
                                      "beyond_end": "OffsetOutOfRangeException"}

    group = f"{prefix}-group"
    listed = steps["listConsumerGroups"]
    assert listed["consumed"] == 7        # offsets 4..9 of partition 0 and 0 of partition 3
    assert listed["listed"] == [{"group": group, "simple": False, "state": "Stable"}]
    assert steps["describeConsumerGroups"]["active"] == {
        "state": "Stable", "assignor": "range", "simple": False, "coordinator_known": True,
        "members": [{"client_id": "admin-test-consumer", "assignment": [0, 1, 2, 3],
                     "instance_id": None}]}
    offsets = steps["listConsumerGroupOffsets"]
    assert offsets["committed"] == {"0": [8, "meta"], "3": [1, ""]}
    assert offsets["after_close"] == {"state": "Empty", "assignor": "", "simple": False,
                                      "coordinator_known": True, "members": []}
    assert steps["deleteConsumerGroups"] == {"still_listed": False}
    assert steps["deleteTopics"] == {"left": [], "describe_deleted":
                                     "UnknownTopicOrPartitionException"}
