"""Raw Kafka requests to both systems (no authorizer on the shared clusters):

- KIP-430's authorized operations, when asked, are every operation Kafka lists for the resource
  type (Metadata v9's cluster and topics, DescribeCluster, DescribeGroups v3), and "not
  requested" (Int.MinValue) when not asked;
- FindCoordinator with a key type other than group (0) or transaction (1) is INVALID_REQUEST;
- the empty group id has a coordinator (Kafka 2.8 keeps it for old clients' offset commits).

kafkalite once answered "not requested", COORDINATOR_NOT_AVAILABLE and INVALID_GROUP_ID.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.local.cluster import wait_until
from kafkalite.testing.conformance import raw
from kafkalite.testing.oracle_fixtures import SYSTEMS

pytestmark = [pytest.mark.integration]

NOT_REQUESTED = -(1 << 31)
# Kafka's AclEntry.supportedOperations per resource type, as bits (1 << AclOperation code)
TOPIC_OPERATIONS = sum(1 << code for code in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPERATIONS = sum(1 << code for code in (5, 7, 8, 9, 10, 11, 12))
GROUP_OPERATIONS = sum(1 << code for code in (3, 6, 8))


def _address(system) -> str:
    return system.bootstrap_servers.split(",")[0]


def _metadata(address: str, topic: str, include: bool) -> tuple[int, int]:
    answer = raw.call(address, 3, 9, {
        "topics": [{"name": topic}], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": include,
        "include_topic_authorized_operations": include})
    [described] = answer["topics"]
    assert described["error_code"] == "NONE", answer
    return answer["cluster_authorized_operations"], described["topic_authorized_operations"]


def _find_coordinator(address: str, key: str, key_type: int) -> dict:
    return raw.call(address, 10, 3, {"key": key, "key_type": key_type})


def _coordinator(address: str, group: str) -> dict:
    def found():
        answer = _find_coordinator(address, group, 0)
        return answer if answer["error_code"] != "COORDINATOR_NOT_AVAILABLE" else None
    return wait_until(found, 60, f"a coordinator for group {group!r}")


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_authorized_operations_without_an_authorizer(system):
    address = _address(system)
    topic = f"kip430-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": system.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    wait_until(lambda: raw.call(address, 3, 9, {
        "topics": [{"name": topic}], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False})["topics"][0]["error_code"] == "NONE",
        30, f"{topic} in the metadata")
    assert _metadata(address, topic, True) == (CLUSTER_OPERATIONS, TOPIC_OPERATIONS)
    assert _metadata(address, topic, False) == (NOT_REQUESTED, NOT_REQUESTED)

    for include, expected in ((True, CLUSTER_OPERATIONS), (False, NOT_REQUESTED)):
        answer = raw.call(address, 60, 0, {"include_cluster_authorized_operations": include})
        assert answer["cluster_authorized_operations"] == expected, answer

    group = f"kip430-{uuid.uuid4().hex[:8]}"
    for include, expected in ((True, GROUP_OPERATIONS), (False, NOT_REQUESTED)):
        described = _describe_group(address, group, include)
        assert (described["error_code"], described["group_state"],
                described["authorized_operations"]) == ("NONE", "Dead", expected), described


def _describe_group(address: str, group: str, include: bool) -> dict:
    """DescribeGroups v3 at the group's coordinator, found again and asked again while the
    answer is a retriable coordinator error, as clients do: right after __consumer_offsets
    appears, Kafka's coordinator may still say NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS."""
    def described():
        coordinator = _coordinator(address, group)
        at = f"{coordinator['host']}:{coordinator['port']}"
        answer = raw.call(at, 15, 3, {"groups": [group], "include_authorized_operations": include})
        [group_answer] = answer["groups"]
        if group_answer["error_code"] in ("NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS"):
            return None
        return group_answer
    return wait_until(described, 60, f"DescribeGroups of {group!r} at its coordinator")


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_find_coordinator_key_types_and_the_empty_group(system):
    address = _address(system)
    unknown = _find_coordinator(address, f"g-{uuid.uuid4().hex[:8]}", 7)
    assert (unknown["error_code"], unknown["node_id"], unknown["host"], unknown["port"]) == (
        "INVALID_REQUEST", -1, "", -1), unknown
    assert unknown["error_message"].startswith("This most likely occurs because of a request")
    empty = _coordinator(address, "")
    assert empty["error_code"] == "NONE" and empty["node_id"] >= 0, empty
