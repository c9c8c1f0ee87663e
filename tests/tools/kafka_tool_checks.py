"""Helpers for the tests that run Apache Kafka 2.8.2's own command-line tools against kafkalite.

Kafka's tools are the judge here; what they did is read back through confluent-kafka (librdkafka),
a client that shares no code with kafkalite, and, where the tool's output is deterministic, the
same command is run against the Apache Kafka oracle and both outputs are compared once the parts
that legitimately differ (ports, broker ids chosen at random, topic ids, timestamps) are
normalised. Nothing here uses kafkalite's own client: a kafkalite client bug must not be able to
hide a broker bug.
"""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from typing import Any, Iterable

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafkalite.testing.apache_kafka import run_tool
from kafkalite.local.cluster import wait_until

# The first system is the one under test; the second is the oracle.
KAFKALITE, KAFKA = "kafkalite", "kafka"


def unique(prefix: str) -> str:
    """A topic or group name no other test of the session uses (the clusters are shared)."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def tool(name: str, *args: str, input: str | None = None, timeout_s: float = 120,
         ok: bool = True) -> subprocess.CompletedProcess:
    """Run Kafka's ``name`` tool; with ``ok`` assert it exited 0, showing both streams if not."""
    proc = run_tool(name, *args, input=input, timeout_s=timeout_s)
    if ok:
        assert proc.returncode == 0, (
            f"{name} {' '.join(args)} exited {proc.returncode}\n"
            f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def zk_address(zookeeper: Any, cluster: Any) -> str:
    """The ``--zookeeper`` argument for ``cluster``: the session's ZooKeeper and its chroot."""
    return f"{zookeeper.connect_string}{cluster.zk_chroot}"


def normalise(text: str, cluster: Any | None = None) -> str:
    """Output with what legitimately differs between two clusters replaced by fixed words.

    Ports of ``cluster``'s brokers become ``BROKER``; topic ids ``TOPIC-ID``; epoch-millisecond
    timestamps ``TS``; dates ``DATE``. Broker ids are kept: both clusters number them 1, 2, 3."""
    if cluster is not None:
        for address in cluster.bootstrap_servers.split(","):
            text = text.replace(address, "BROKER")
    text = re.sub(r"TopicId: [A-Za-z0-9_-]{22}", "TopicId: TOPIC-ID", text)
    text = re.sub(r"\b1[6-9]\d{11}\b", "TS", text)
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[:,]\d{3}", "DATE", text)
    return text


def without_warnings(text: str) -> str:
    """stderr without log4j WARN lines (a metadata retry is timing, not behaviour)."""
    return "\n".join(line for line in text.splitlines()
                     if line.strip() and " WARN " not in line)


# --- kafka-topics --describe ----------------------------------------------------------------

_PARTITION_LINE = re.compile(
    r"\tTopic: (?P<topic>\S+)\tPartition: (?P<partition>\d+)\tLeader: (?P<leader>\S+)\t"
    r"Replicas: (?P<replicas>[\d,]*)\tIsr: (?P<isr>[\d,]*)(?P<rest>.*)")


def describe_rows(text: str) -> dict[int, dict[str, Any]]:
    """``{partition: {"leader", "replicas", "isr"}}`` from kafka-topics --describe output."""
    rows = {}
    for line in text.splitlines():
        match = _PARTITION_LINE.match(line)
        if match:
            rows[int(match["partition"])] = {
                "leader": None if match["leader"] == "none" else int(match["leader"]),
                "replicas": [int(r) for r in match["replicas"].split(",") if r],
                "isr": [int(r) for r in match["isr"].split(",") if r],
                "rest": match["rest"]}
    return rows


def describe_shape(text: str) -> str:
    """kafka-topics --describe output with the parts chosen per cluster made neutral.

    The starting broker of an automatic assignment is random in both systems, so each partition's
    replicas, leader and ISR are written as a count; everything else (the header with its
    configs, the line format, partition numbering) is kept as printed."""
    out = []
    for line in normalise(text).splitlines():
        match = _PARTITION_LINE.match(line)
        if match:
            replicas = match["replicas"].split(",")
            isr = match["isr"].split(",")
            leader = "none" if match["leader"] == "none" else (
                "replica" if match["leader"] in replicas else "other")
            line = (f"\tTopic: {match['topic']}\tPartition: {match['partition']}\t"
                    f"Leader: {leader}\tReplicas: x{len(replicas)}\tIsr: x{len(isr)}"
                    f"{match['rest']}")
        out.append(line)
    return "\n".join(out)


# --- confluent-kafka, the independent reader ---------------------------------------------------

def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def partitions_of(bootstrap: str, topic: str) -> dict[int, Any]:
    """The topic's partition metadata as librdkafka sees it ({} when the topic is unknown).

    librdkafka asks for the topic by name, which creates it where auto.create.topics.enable is
    on (both shared clusters): never ask this about a topic that should be gone; use
    :func:`broker_metadata`, which asks for all topics."""
    md = admin(bootstrap).list_topics(topic, timeout=10).topics.get(topic)
    if md is None or md.error is not None:
        return {}
    return dict(md.partitions)


def topic_names(bootstrap: str) -> set[str]:
    return set(admin(bootstrap).list_topics(timeout=10).topics)


def wait_for_leaders(bootstrap: str, topic: str, count: int, timeout_s: float = 60) -> dict:
    """Until librdkafka sees ``count`` partitions of ``topic``, each with a leader."""
    def ready():
        parts = partitions_of(bootstrap, topic)
        return parts if len(parts) == count and all(p.leader >= 0 for p in parts.values()) \
            else None
    return wait_until(ready, timeout_s, f"{topic}: {count} partition(s) with leaders",
                      interval_s=0.2)


def produce(bootstrap: str, topic: str, records: Iterable[tuple[bytes | None, bytes]],
            partition: int | None = None) -> list[tuple[int, int]]:
    """Produce with acks=all; returns each record's (partition, offset) in order."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 0,
                         "enable.idempotence": False, "linger.ms": 5})
    delivered: list[Any] = []
    for key, value in records:
        extra = {} if partition is None else {"partition": partition}
        producer.produce(topic, value=value, key=key,
                         on_delivery=lambda err, msg: delivered.append((err, msg)), **extra)
    assert producer.flush(60) == 0, f"records to {topic} not delivered in 60 s"
    errors = [err for err, _ in delivered if err is not None]
    assert not errors, errors
    return [(msg.partition(), msg.offset()) for _, msg in delivered]


def consume(bootstrap: str, topic: str, count: int, timeout_s: float = 60,
            group: str | None = None, partitions: int | None = None) -> list[Any]:
    """Read ``count`` records of ``topic`` from the beginning: (partition, offset, key, value).

    With ``partitions`` the consumer is assigned them directly (no group, nothing committed);
    otherwise it joins ``group`` (a fresh one by default) and commits nothing."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "log_level": 0,
                         "group.id": group or unique("reader"),
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        if partitions is not None:
            consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        else:
            consumer.subscribe([topic])
        got: list[Any] = []

        def read():
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append((msg.partition(), msg.offset(), msg.key(), msg.value()))
            return len(got) >= count
        wait_until(read, timeout_s, f"{count} records of {topic}", interval_s=0)
        return got
    finally:
        consumer.close()


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offsets as librdkafka's OffsetFetch reads them (-1001: none)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0,
                         "enable.auto.commit": False})
    try:
        got = consumer.committed([TopicPartition(topic, p) for p in range(partitions)],
                                 timeout=15)
        return {tp.partition: tp.offset for tp in got}
    finally:
        consumer.close()


def watermarks(bootstrap: str, topic: str, partition: int = 0) -> tuple[int, int]:
    """(log start offset, high watermark) through librdkafka's ListOffsets."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("wm"),
                         "log_level": 0})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=15)
    finally:
        consumer.close()


def json_lines(text: str) -> list[dict]:
    """The JSON objects a verifiable client printed, one per line (other lines are ignored)."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


# --- one broker's own metadata ------------------------------------------------------------------

def broker_metadata(address: str, timeout_s: float = 5.0) -> dict[str, dict[int, tuple]]:
    """``{topic: {partition: (leader, replicas, isr)}}`` as the broker at ``address`` alone
    answers Metadata v1 for all topics.

    librdkafka and the Java admin client send Metadata to whichever broker they like, so they
    cannot show that every broker's metadata cache agrees; this asks one broker directly, in a
    few lines of Kafka's documented wire format (no kafkalite code)."""
    import socket
    import struct

    client_id = b"tool-tests"
    body = struct.pack(">hhih", 3, 1, 1, len(client_id)) + client_id + struct.pack(">i", -1)
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", _read(sock, 4))[0]
        data = _read(sock, size)
    pos = 4                                    # the correlation id

    def take(fmt):
        nonlocal pos
        values = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return values[0] if len(values) == 1 else values

    def text():
        nonlocal pos
        length = take(">h")
        value = data[pos:pos + max(length, 0)].decode()
        pos += max(length, 0)
        return value

    for _ in range(take(">i")):                # brokers: id, host, port, rack
        take(">i"), text(), take(">i"), text()
    take(">i")                                 # controller id
    topics: dict[str, dict[int, tuple]] = {}
    for _ in range(take(">i")):
        error, name, _internal = take(">h"), text(), take(">b")
        partitions = {}
        for _ in range(take(">i")):
            _perror, partition, leader = take(">hii")
            replicas = [take(">i") for _ in range(take(">i"))]
            isr = [take(">i") for _ in range(take(">i"))]
            partitions[partition] = (leader, replicas, isr)
        if error == 0:
            topics[name] = partitions
    return topics


def _read(sock, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        out += chunk
    return out


def on_every_broker(cluster: Any, check) -> bool:
    """``check(metadata)`` holds for every running broker's own Metadata answer."""
    return all(check(broker_metadata(address))
               for address in cluster.bootstrap_servers.split(","))
