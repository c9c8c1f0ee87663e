"""CreatePartitions decides on ZooKeeper, not on the controller's metadata cache (Kafka 2.8's
ZkAdminManager.createPartitions reads the topic's assignment and the registered brokers from
ZooKeeper), on both systems with raw Kafka requests:

- CreateTopics (timeout 0: answered once the znode is written) and CreatePartitions sent on one
  connection, the second as soon as the first is answered, to the controller: it arrives before
  the controller has told its own metadata cache about the topic, and must grow it all the same
  (kafkalite used to answer UNKNOWN_TOPIC_OR_PARTITION from its cache);
- a CreatePartitions of timeout 0 writes the partitions and answers REQUEST_TIMED_OUT without a
  message, as Kafka does when it may not wait for the leaders.
"""

from __future__ import annotations

import socket
import struct
import uuid

import pytest

from kafkalite.local.cluster import wait_until
from kafkalite.protocol.kafka import codec
from kafkalite.testing.conformance import raw
from kafkalite.testing.oracle_fixtures import SYSTEMS

pytestmark = [pytest.mark.integration]


def _metadata(address: str, topics: list[str] | None) -> dict:
    return raw.call(address, 3, 9, {
        "topics": None if topics is None else [{"name": t} for t in topics],
        "allow_auto_topic_creation": False, "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False})


def _controller(system) -> str:
    answer = _metadata(system.bootstrap_servers.split(",")[0], [])
    by_id = {b["node_id"]: f"{b['host']}:{b['port']}" for b in answer["brokers"]}
    return by_id[answer["controller_id"]]


def _one_connection(address: str, requests: list[tuple[int, int, dict]]) -> list[dict]:
    """Send the requests on one connection, each as soon as the previous one is answered (not
    all at once: Kafka reads a connection's next request only after answering the previous one,
    kafkalite starts it at once); the answers, in order."""
    host, port = address.rsplit(":", 1)
    answers = []
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        for api_key, version, body in requests:
            sent_id = next(raw._correlation)
            payload = codec.encode_request(api_key, version, sent_id, "one-connection", body)
            sock.sendall(struct.pack(">i", len(payload)) + payload)
            size = struct.unpack(">i", raw._read_exact(sock, 4))[0]
            got_id, entity = codec.decode_response(api_key, version, raw._read_exact(sock, size))
            assert got_id == sent_id
            answers.append(raw.plain(entity))
    return answers


def _grow(name: str, count: int, timeout_ms: int) -> tuple[int, int, dict]:
    return (37, 2, {"topics": [{"name": name, "count": count, "assignments": None}],
                    "timeout": timeout_ms, "validate_only": False})


def _partitions_led(controller: str, name: str, count: int) -> list:
    def led():
        [topic] = _metadata(controller, [name])["topics"]
        parts = topic["partitions"]
        return parts if len(parts) == count and all(p["leader_id"] >= 0 for p in parts) else None
    return wait_until(led, 60, f"{count} partitions of {name} with leaders", interval_s=0.2)


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_partitions_added_right_after_the_topic_is_created(system):
    name = f"grow-now-{uuid.uuid4().hex[:8]}"
    controller = _controller(system)
    create = (19, 5, {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 2,
                                  "assignments": [], "configs": []}],
                      "timeout": 0, "validate_only": False})
    created, grown = _one_connection(controller, [create, _grow(name, 3, 30000)])
    assert [(t["name"], t["error_code"]) for t in created["topics"]] == \
        [(name, "REQUEST_TIMED_OUT")]                      # written, not waited for
    assert [(r["name"], r["error_code"], r["error_message"]) for r in grown["results"]] == \
        [(name, "NONE", None)]
    led = _partitions_led(controller, name, 3)
    assert sorted(p["partition_index"] for p in led) == [0, 1, 2]


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_a_zero_timeout_adds_the_partitions_and_answers_request_timed_out(system):
    name = f"grow-nowait-{uuid.uuid4().hex[:8]}"
    controller = _controller(system)
    [created] = _one_connection(controller, [(19, 5, {"topics": [{
        "name": name, "num_partitions": 1, "replication_factor": 2, "assignments": [],
        "configs": []}], "timeout": 30000, "validate_only": False})])
    assert created["topics"][0]["error_code"] == "NONE"
    [grown] = _one_connection(controller, [_grow(name, 2, 0)])
    assert [(r["name"], r["error_code"], r["error_message"]) for r in grown["results"]] == \
        [(name, "REQUEST_TIMED_OUT", None)]
    assert sorted(p["partition_index"] for p in _partitions_led(controller, name, 2)) == [0, 1]
