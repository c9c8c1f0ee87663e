"""Helpers shared by the real-Kafka-client integration tests (no test functions here).

The tests in ``test_kafka_clients.py`` and ``test_kafka_cross_clients.py`` drive a 3-broker
kafkalite cluster with clients that know nothing about kafkalite: kcat, confluent-kafka
(librdkafka), kafka-python and aiokafka. Each test module starts one cluster for all its tests
(``module_cluster``); every wait here polls a condition with a deadline, never a fixed sleep.

Records are compared as plain tuples ``(key, value, headers, timestamp)`` with headers as a tuple
of ``(str, bytes | None)`` pairs, whatever client produced or read them.
"""

from __future__ import annotations

import re
import shutil
import socket
import struct
import subprocess
import time
from typing import Iterator, NamedTuple

import pytest

from kafkalite.protocol import messages as m
from kafkalite.local.cluster import LocalCluster, request, wait_until

#: the codecs a Kafka v2 batch can carry, as clients name them, and their attribute ids
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

#: every topic these tests create: replication factor 3 on 3 brokers, acks=all needs 2 in sync
REPLICATION_FACTOR = 3
CLUSTER_OVERRIDES = {
    "min.insync.replicas": 2,
    "default.replication.factor": 3,
    "auto.create.topics.enable": "true",
    "num.partitions": 1,
}

# librdkafka's TIMESTAMP_CREATE_TIME (confluent_kafka.TIMESTAMP_CREATE_TIME)
CREATE_TIME = 1


class Rec(NamedTuple):
    key: bytes | None
    value: bytes | None
    headers: tuple
    timestamp: int


def norm_headers(headers) -> tuple:
    """Headers from any client as a tuple of ``(str, bytes | None)`` pairs, in order."""
    return tuple((name, None if value is None else bytes(value))
                 for name, value in (headers or ()))


# --- the cluster ----------------------------------------------------------------------------

def module_cluster(request: pytest.FixtureRequest, zookeeper, tmp_path_factory,
                   name: str, overrides: dict | None = None) -> Iterator[LocalCluster]:
    """Body of a module-scoped fixture: 3 brokers on a chroot of their own for the module,
    with CLUSTER_OVERRIDES and then ``overrides``.

    The brokers' log tails are printed at teardown when a test of the session failed meanwhile.
    """
    from kafkalite.testing.oracle_fixtures import serve_cluster
    from kafkalite.local.zookeeper import create_chroots

    [chroot] = create_chroots(zookeeper.connect_string, f"kl-{name}")
    cluster = LocalCluster(f"{zookeeper.connect_string}{chroot}", 3,
                           workdir=str(tmp_path_factory.mktemp(name)),
                           overrides={**CLUSTER_OVERRIDES, **(overrides or {})})
    yield from serve_cluster(request, cluster)


def topic_ready(cluster: LocalCluster, topic: str, partitions: int,
                rf: int = REPLICATION_FACTOR) -> bool:
    """Every live broker's metadata has ``topic`` with ``partitions`` partitions, each with a
    leader and ``rf`` replicas all in sync."""
    for broker in cluster.live_brokers():
        response = request("127.0.0.1", broker.port, m.MetadataRequest(
            topics=[topic], allow_auto_topic_creation=False))
        found = [t for t in response.topics if t.name == topic and t.error_code == 0]
        if not found or len(found[0].partitions) != partitions:
            return False
        for p in found[0].partitions:
            if p.leader < 0 or len(p.replicas) != rf or sorted(p.isr) != sorted(p.replicas):
                return False
    return True


def topic_names(cluster: LocalCluster) -> set[str]:
    """The topics the cluster knows (a Metadata request that never creates one)."""
    return {t.name for t in cluster.metadata(None).topics}


def wait_topic_ready(cluster: LocalCluster, topic: str, partitions: int,
                     rf: int = REPLICATION_FACTOR, timeout_s: float = 60) -> None:
    wait_until(lambda: topic_ready(cluster, topic, partitions, rf), timeout_s,
               f"topic {topic}: {partitions} partitions with {rf} in-sync replicas on every "
               f"broker", interval_s=0.1)


def create_topic(cluster: LocalCluster, name: str, partitions: int,
                 rf: int = REPLICATION_FACTOR, config: dict | None = None) -> None:
    """Create a topic with confluent-kafka's AdminClient and wait until it is fully in sync."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.create_topics([NewTopic(name, partitions, rf, config=config or {})],
                                  operation_timeout=30, request_timeout=60)
    futures[name].result(timeout=60)
    wait_topic_ready(cluster, name, partitions, rf)


# --- reading back ---------------------------------------------------------------------------

def confluent_consumer(bootstrap: str, **extra):
    """A librdkafka consumer that is never a group member: the tests assign partitions.

    confluent-kafka refuses to build a consumer without ``group.id``; with auto-commit and the
    offset store off it never commits, and it never joins because it never subscribes.
    """
    from confluent_kafka import Consumer

    config = {"bootstrap.servers": bootstrap, "group.id": "kafkalite-tests-unused",
              "enable.auto.commit": False, "enable.auto.offset.store": False,
              "auto.offset.reset": "error", "enable.partition.eof": False}
    config.update(extra)
    return Consumer(config)


def confluent_read(bootstrap: str, topic: str, partitions: int, expected: int,
                   timeout_s: float = 90) -> list:
    """``expected`` messages of ``topic`` read with confluent-kafka from offset 0 of every
    partition (assign, no group); a message with an error fails the test."""
    from confluent_kafka import TopicPartition

    consumer = confluent_consumer(bootstrap)
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        messages = []
        deadline = time.monotonic() + timeout_s
        while len(messages) < expected and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=1000, timeout=0.5):
                assert message.error() is None, f"consumer error: {message.error()}"
                messages.append(message)
        # anything past the expected count is a duplicate or a stray: let a short poll show it
        for message in consumer.consume(num_messages=1000, timeout=0.2):
            assert message.error() is None, f"consumer error: {message.error()}"
            messages.append(message)
        return messages
    finally:
        consumer.close()


def kafkalite_read(bootstrap: str, topic: str, partitions: int, expected: int,
                   timeout_s: float = 90) -> list:
    """``expected`` records of ``topic`` read with kafkalite's own Consumer from the start of
    every partition (assign, no group)."""
    from kafkalite import Consumer, TopicPartition

    consumer = Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                        enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        records = []
        deadline = time.monotonic() + timeout_s
        while len(records) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
        for batch in consumer.poll(timeout_ms=200).values():
            records.extend(batch)
        return records
    finally:
        consumer.close()


# --- what the broker stored -----------------------------------------------------------------

class BatchHeader(NamedTuple):
    base_offset: int
    codec: int
    record_count: int


def _read_exact(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        data += chunk
    return bytes(data)


def parse_batch_headers(records: bytes) -> list[BatchHeader]:
    """The v2 batch headers in a Fetch response's record data (a cut-off last batch is left
    out). Layout: base_offset i64, batch_length i32, leader_epoch i32, magic i8, crc u32,
    attributes i16, last_offset_delta i32, 2 x i64 timestamps, producer id i64, epoch i16,
    base_sequence i32, record_count i32."""
    out = []
    pos = 0
    while pos + 61 <= len(records):
        base_offset, length = struct.unpack_from(">qi", records, pos)
        if pos + 12 + length > len(records):
            break
        magic = records[pos + 16]
        assert magic == 2, f"batch at offset {base_offset} has magic {magic}"
        (attributes,) = struct.unpack_from(">h", records, pos + 21)
        (count,) = struct.unpack_from(">i", records, pos + 57)
        out.append(BatchHeader(base_offset, attributes & 0x07, count))
        pos += 12 + length
    return out


def stored_batches(cluster: LocalCluster, topic: str, partition: int,
                   end_offset: int) -> list[BatchHeader]:
    """The batch headers of ``topic``/``partition`` up to ``end_offset`` as the leader serves
    them to a Kafka client: raw Kafka-protocol Fetch v4 requests (kio codecs), no client
    library in between, so a test sees the codec each batch was stored with."""
    from kafkalite.protocol.kafka import codec as kafka_codec

    leader = cluster.brokers[cluster.wait_for_leader(topic, partition)]
    batches: list[BatchHeader] = []
    offset = 0
    correlation_id = 0
    with socket.create_connection(("127.0.0.1", leader.port), timeout=30) as sock:
        while offset < end_offset:
            correlation_id += 1
            payload = kafka_codec.encode_request(1, 4, correlation_id, "kafkalite-tests", {
                "replica_id": -1, "max_wait": 100, "min_bytes": 1, "max_bytes": 8 << 20,
                "isolation_level": 0,
                "topics": [{"topic": topic, "partitions": [{
                    "partition": partition, "fetch_offset": offset,
                    "partition_max_bytes": 8 << 20}]}]})
            sock.sendall(struct.pack(">i", len(payload)) + payload)
            (length,) = struct.unpack(">i", _read_exact(sock, 4))
            cid, body = kafka_codec.decode_response(1, 4, _read_exact(sock, length))
            assert cid == correlation_id
            [answer] = [p for t in body.responses for p in t.partitions]
            assert int(answer.error_code) == 0, f"Fetch {topic}-{partition}: {answer.error_code}"
            found = parse_batch_headers(bytes(answer.records or b""))
            assert found, f"no batch at offset {offset} of {topic}-{partition}"
            batches.extend(found)
            # offsets in a producer's batch are consecutive: the next batch starts after it
            last = found[-1]
            offset = last.base_offset + max(1, last.record_count)
    return batches


def check_stored_codec(cluster: LocalCluster, topic: str, partitions: int, counts,
                       codec: str) -> None:
    """Every batch the leaders hold for ``topic`` carries ``codec`` (a client that silently
    sent its records uncompressed fails here), and the batches hold ``counts[partition]``
    records in each partition."""
    for partition in range(partitions):
        batches = stored_batches(cluster, topic, partition, counts[partition])
        assert {b.codec for b in batches} <= {CODEC_IDS[codec]}, \
            f"{topic}-{partition}: batches stored with codecs {[b.codec for b in batches]}, " \
            f"asked for {codec}"
        assert sum(b.record_count for b in batches) == counts[partition]

# --- kcat -----------------------------------------------------------------------------------

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
needs_kcat = pytest.mark.skipif(KCAT is None, reason="kcat is not installed (scripts/setup.sh "
                                                     "installs it)")


def kcat(*args: str, input: bytes | None = None, timeout_s: float = 90) -> str:
    """Run kcat and return its stdout; a non-zero exit fails the test with its stderr."""
    done = subprocess.run([KCAT, *args], input=input, capture_output=True, timeout=timeout_s)
    assert done.returncode == 0, (f"kcat {' '.join(args)} exited {done.returncode}:\n"
                                  f"{done.stderr.decode(errors='replace')}")
    return done.stdout.decode()


_KCAT_BROKER = re.compile(r"^\s+broker (-?\d+) at (\S+):(\d+)( \(controller\))?\s*$")
_KCAT_COUNT = re.compile(r"^\s*(\d+) brokers:\s*$")


def parse_kcat_brokers(listing: str) -> tuple[int, dict[int, str], list[int]]:
    """From ``kcat -L`` text: (the announced broker count, {id: "host:port"}, controller ids)."""
    announced = -1
    brokers: dict[int, str] = {}
    controllers: list[int] = []
    for line in listing.splitlines():
        count = _KCAT_COUNT.match(line)
        if count:
            announced = int(count.group(1))
            continue
        broker = _KCAT_BROKER.match(line)
        if broker:
            broker_id = int(broker.group(1))
            brokers[broker_id] = f"{broker.group(2)}:{broker.group(3)}"
            if broker.group(4):
                controllers.append(broker_id)
    return announced, brokers, controllers
