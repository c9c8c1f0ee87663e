"""CreateTopics, DeleteTopics and CreatePartitions on both systems, with raw Kafka requests:

- Kafka 2.8 serves them at the active controller only (no forwarding yet): another broker
  answers NOT_CONTROLLER for every topic and touches nothing; kafkalite used to serve them
  anywhere;
- an explicit assignment naming a broker that does not exist is accepted and created (Kafka 2.8
  checks no broker ids at creation): the partition is led by its live replica, the other one is
  offline; kafkalite used to refuse it with INVALID_REPLICA_ASSIGNMENT;
- a name colliding with an existing topic once '.' and '_' are the same is refused.
"""

from __future__ import annotations

import uuid

import pytest

from kafkalite.local.cluster import wait_until
from kafkalite.testing.conformance import raw
from kafkalite.testing.oracle_fixtures import SYSTEMS

pytestmark = [pytest.mark.integration]


def _metadata(address: str, topics: list[str] | None) -> dict:
    return raw.call(address, 3, 9, {
        "topics": None if topics is None else [{"name": t} for t in topics],
        "allow_auto_topic_creation": False, "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False})


def _addresses(system) -> tuple[str, str]:
    """(the controller's address, another broker's)."""
    answer = _metadata(system.bootstrap_servers.split(",")[0], [])
    by_id = {b["node_id"]: f"{b['host']}:{b['port']}" for b in answer["brokers"]}
    controller = by_id[answer["controller_id"]]
    return controller, next(a for i, a in sorted(by_id.items()) if a != controller)


def _create(address: str, topics: list[dict], validate_only: bool = False) -> list:
    body = {"topics": [{"num_partitions": -1, "replication_factor": -1, "assignments": [],
                        "configs": [], **t} for t in topics],
            "timeout": 30000, "validate_only": validate_only}
    return [[t["name"], t["error_code"], t["error_message"]]
            for t in raw.call(address, 19, 5, body)["topics"]]


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_admin_requests_at_a_broker_that_is_not_the_controller(system):
    name = f"nc-{uuid.uuid4().hex[:8]}"
    controller, other = _addresses(system)
    assert _create(other, [{"name": name, "num_partitions": 1, "replication_factor": 1}]) == \
        [[name, "NOT_CONTROLLER", ""]]
    assert _metadata(controller, [name])["topics"][0]["error_code"] == \
        "UNKNOWN_TOPIC_OR_PARTITION"
    assert _create(controller, [{"name": name, "num_partitions": 1,
                                 "replication_factor": 2}]) == [[name, "NONE", None]]
    grown = raw.call(other, 37, 2, {"topics": [{"name": name, "count": 2, "assignments": None}],
                                    "timeout": 30000, "validate_only": False})
    assert [[r["name"], r["error_code"], r["error_message"]] for r in grown["results"]] == \
        [[name, "NOT_CONTROLLER", None]]
    deleted = raw.call(other, 20, 5, {"topic_names": [name], "timeout": 30000})
    assert [[r["name"], r["error_code"], r["error_message"]] for r in deleted["responses"]] == \
        [[name, "NOT_CONTROLLER", None]]
    partitions = _metadata(controller, [name])["topics"][0]["partitions"]
    assert [p["partition_index"] for p in partitions] == [0]        # neither grown nor deleted


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_an_assignment_naming_an_unknown_broker_is_created_with_that_replica_offline(system):
    name = f"unknown-broker-{uuid.uuid4().hex[:8]}"
    controller, _ = _addresses(system)
    live = sorted(b["node_id"] for b in _metadata(controller, [])["brokers"])
    answer = _create(controller, [{"name": name, "assignments": [
        {"partition_index": 0, "broker_ids": [live[0], 99]}]}])
    assert answer == [[name, "NONE", None]]

    def described():
        [partition] = _metadata(controller, [name])["topics"][0]["partitions"] or [None]
        return partition if partition and partition["leader_id"] == live[0] else None
    partition = wait_until(described, 30, f"{name}-0 led by {live[0]}", interval_s=0.2)
    assert (partition["replica_nodes"], partition["isr_nodes"], partition["offline_replicas"]) \
        == ([live[0], 99], [live[0]], [99])


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_a_name_colliding_with_an_existing_topic_is_refused(system):
    prefix = f"collide-{uuid.uuid4().hex[:8]}"
    controller, _ = _addresses(system)
    assert _create(controller, [{"name": f"{prefix}.x", "num_partitions": 1,
                                 "replication_factor": 1}]) == [[f"{prefix}.x", "NONE", None]]
    assert _create(controller, [{"name": f"{prefix}_x", "num_partitions": 1,
                                 "replication_factor": 1}], validate_only=True) == [[
        f"{prefix}_x", "INVALID_TOPIC_EXCEPTION",
        f"Topic '{prefix}_x' collides with existing topics: {prefix}.x"]]
