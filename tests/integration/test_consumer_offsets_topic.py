"""``__consumer_offsets`` on a real broker process: the first FindCoordinator creates it through
the broker's OffsetsLogStore (kafkalite.coordinator.log_store), compacted, with
``offsets.topic.num.partitions`` partitions, and with fewer replicas than
``offsets.topic.replication.factor`` asks for (and a warning naming the setting) when fewer
brokers are alive. Real Kafka clients see it as an internal topic."""

from __future__ import annotations

import socket
import struct

import pytest

from kafkalite.client.admin import AdminClient
from kafkalite.client.admin_configs import ConfigResource
from kafkalite.coordinator.partitioner import partition_for
from kafkalite.coordinator.types import OFFSETS_TOPIC
from kafkalite.local.cluster import wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

FIND_COORDINATOR = 10
COORDINATOR_NOT_AVAILABLE = 15


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def find_coordinator_v0(host: str, port: int, group: str) -> tuple[int, int, str, int]:
    """Kafka's FindCoordinator v0, by hand: (error_code, node_id, host, port)."""
    body = (struct.pack(">hhi", FIND_COORDINATOR, 0, 7) + _string("offsets-topic-test")
            + _string(group))
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
    correlation, error, node = struct.unpack_from(">ihi", data, 4)
    assert correlation == 7
    (host_len,) = struct.unpack_from(">h", data, 14)
    coordinator_host = data[16:16 + host_len].decode()
    (coordinator_port,) = struct.unpack_from(">i", data, 16 + host_len)
    return error, node, coordinator_host, coordinator_port


def test_first_find_coordinator_creates_the_compacted_offsets_topic(kafkalite_cluster_factory):
    cluster = kafkalite_cluster_factory(1, **{"offsets.topic.replication.factor": 3,
                                              "offsets.topic.segment.bytes": 10485760})
    broker = cluster.brokers[1]
    first = find_coordinator_v0("127.0.0.1", broker.port, "billing")
    assert first[0] == COORDINATOR_NOT_AVAILABLE          # created now: retry, as clients do

    answer = wait_until(lambda: (lambda a: a if a[0] == 0 else None)(
        find_coordinator_v0("127.0.0.1", broker.port, "billing")), 60, "a coordinator")
    assert answer == (0, 1, "127.0.0.1", broker.port)

    # 50 partitions, each on the one live broker (rf 1, not 3), every one with a leader
    metadata = cluster.metadata([OFFSETS_TOPIC])
    [topic] = metadata.topics
    assert topic.error_code == 0
    assert sorted(p.partition for p in topic.partitions) == list(range(50))
    assert all(list(p.replicas) == [1] and p.leader == 1 for p in topic.partitions)
    assert cluster.leader_of(OFFSETS_TOPIC, partition_for("billing", 50)) == answer[1]

    log_text = open(broker.log_path, errors="replace").read()
    warnings = [line for line in log_text.splitlines()
                if "WARNING" in line and "offsets.topic.replication.factor" in line]
    assert warnings, log_text[-3000:]

    with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
        resource = ConfigResource("TOPIC", OFFSETS_TOPIC)
        described = admin.describe_configs([resource])[resource.key]
    assert described["cleanup.policy"].value == "compact"
    assert described["segment.bytes"].value == "10485760"
    assert described["compression.type"].value == "producer"

    # a real Kafka client sees an internal topic
    from kafka import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers,
                              request_timeout_ms=20000)
    try:
        [seen] = client.describe_topics([OFFSETS_TOPIC])
    finally:
        client.close()
    assert seen["is_internal"] is True
    assert len(seen["partitions"]) == 50
    assert find_coordinator_v0("127.0.0.1", broker.port, "other-group")[0] == 0
