"""The cluster's own account after a broker fuzz (tests/system/test_protocol_fuzz.py,
bench/protocol_fuzz.py; no test functions here): brokers answering on both protocols, their
logs, and ZooKeeper's state against what the brokers say.

``cluster_problems`` waits (up to a timeout) for the cluster to settle and returns what is still
wrong:

- a broker does not answer Metadata on Kafka's protocol or on the native one, or names another
  controller than ZooKeeper's ``/controller``;
- a topic's assignment in ZooKeeper is not partitions 0..n-1, or a partition has no state, no
  leader, or a leader that is not a live broker; a topic is still marked for deletion;
- a partition state was written at a controller epoch ZooKeeper never had (above
  ``/controller_epoch``: a broker obeyed a forged epoch and wrote it back);
- a topic that existed before the fuzz lost partitions (under the same topic id); a topic the
  fuzz could not have touched (``fixed``) vanished, was created again or changed its partition
  count at all (growing a fuzz target through CreatePartitions, or deleting one and creating it
  again, are legitimate requests);
- a broker's metadata for a fixed topic's partition (leader, leader epoch) differs from
  ZooKeeper's partition state;
- a partition is advertised in a broker's Kafka Metadata (read by kio) with a leader that does
  not host it: the leader answers ListOffsets for it with UNKNOWN_TOPIC_OR_PARTITION or
  NOT_LEADER_OR_FOLLOWER (Kafka sends LeaderAndIsr before UpdateMetadata, so a partition is
  never advertised before its leader serves it).
"""

from __future__ import annotations

import os
import socket
import struct
import time

from kafkalite.protocol import messages as m
from kafkalite.local.cluster import request

from kafkalite.protocol.kafka import codec

from fuzz_frames import frame
from kafka_fuzz_tools import metadata_request, metadata_response, response_body

NOT_HOSTED = {3: "UNKNOWN_TOPIC_OR_PARTITION", 6: "NOT_LEADER_OR_FOLLOWER"}


def kafka_metadata(port: int, timeout_s: float = 10.0):
    """A Kafka-protocol Metadata v11 round trip on a fresh connection: the response body."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(metadata_request(99))
        (n,) = struct.unpack(">i", _recv_exact(sock, 4))
        cid, body = metadata_response(_recv_exact(sock, n))
    if cid != 99:
        raise AssertionError(f"Metadata answered with correlation id {cid}")
    return body


def _kafka_call(port: int, api_key: int, version: int, values: dict, timeout_s: float = 10.0):
    """One Kafka request on a fresh connection; the response body, read by kio."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(frame(codec.encode_request(api_key, version, 98, "probe", values)))
        (n,) = struct.unpack(">i", _recv_exact(sock, 4))
        return response_body(api_key, version, _recv_exact(sock, n))


def unhosted(metadata, ports: dict[int, int], said_by: int, call=_kafka_call) -> list[str]:
    """Partitions ``metadata`` (a kio Metadata body from broker ``said_by``) advertises with a
    leader that answers ListOffsets for them as not hosted or not led (``call(port, api_key,
    version, values)``: a Kafka round trip)."""
    by_leader: dict[int, list[tuple[str, int]]] = {}
    for topic in metadata.topics:
        if topic.error_code.value != 0:
            continue
        for p in topic.partitions:
            if p.error_code.value == 0 and p.leader_id in ports:
                by_leader.setdefault(p.leader_id, []).append((topic.name, p.partition_index))
    problems = []
    for leader, partitions in sorted(by_leader.items()):
        topics: dict[str, list[int]] = {}
        for name, index in partitions:
            topics.setdefault(name, []).append(index)
        try:
            body = call(ports[leader], 2, 6, {
                "replica_id": -1, "isolation_level": 0, "topics": [
                    {"name": name, "partitions": [
                        {"partition_index": i, "current_leader_epoch": -1, "timestamp": -1}
                        for i in indexes]} for name, indexes in sorted(topics.items())]})
        except Exception as exc:  # noqa: BLE001
            problems.append(f"broker {leader} does not answer ListOffsets: "
                            f"{type(exc).__name__}: {exc}")
            continue
        for topic in body.topics:
            for p in topic.partitions:
                if p.error_code.value in NOT_HOSTED:
                    problems.append(
                        f"broker {said_by} advertises {topic.name}-{p.partition_index} with "
                        f"leader {leader}, which answers {NOT_HOSTED[p.error_code.value]}")
    return problems


def native_metadata(port: int, topics=None, timeout_s: float = 10.0) -> m.MetadataResponse:
    return request("127.0.0.1", port, m.MetadataRequest(topics=topics,
                                                         allow_auto_topic_creation=False),
                   timeout_s)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return bytes(data)


# --- broker logs ---------------------------------------------------------------------------------

def log_sizes(log_paths: list[str]) -> dict[str, int]:
    return {path: os.path.getsize(path) if os.path.exists(path) else 0 for path in log_paths}


def unexpected_errors(since: dict[str, int]) -> list[str]:
    """ERROR lines and unhandled Deferred failures the brokers logged after ``since``: a request
    handler that failed with something else than a Kafka error, a response that could not be
    encoded, a failure nobody handled. Malformed input itself is only ever a WARNING."""
    found = []
    for path, offset in since.items():
        with open(path, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if "] ERROR " in line or line.startswith("Unhandled error in Deferred"):
                detail = next((later for later in lines[i + 1:i + 40]
                               if later and not later.startswith((" ", "Traceback"))), "")
                found.append(f"{path.rsplit('/', 1)[-1]}: {line[:200]} -> {detail[:200]}")
    return found


# --- ZooKeeper against the brokers ---------------------------------------------------------------

def topic_counts(zk) -> dict[str, tuple[str | None, int]]:
    """{topic: (topic id, number of partitions in its assignment)} for every topic in ZooKeeper
    (a topic deleted and created again has a new id)."""
    return {topic: (assignment.topic_id, len(assignment.partitions))
            for topic, assignment in zk.get_topic_assignments().items()}


def cluster_problems(zk, ports: dict[int, int], before: dict[str, int], fixed: set[str]
                     ) -> list[str]:
    """What is wrong now (see the module doc); [] when nothing is."""
    problems = []
    controller = zk.get_controller_id()
    epoch = zk.get_controller_epoch()
    live = set(zk.get_broker_ids())
    for broker_id, port in sorted(ports.items()):
        try:
            kafka = kafka_metadata(port)
            native = native_metadata(port, topics=sorted(fixed))
        except Exception as exc:  # noqa: BLE001
            problems.append(f"broker {broker_id} does not answer Metadata: "
                            f"{type(exc).__name__}: {exc}")
            continue
        problems += unhosted(kafka, ports, broker_id)
        for protocol, said in (("Kafka", kafka.controller_id), ("native", native.controller_id)):
            if said != controller:
                problems.append(f"broker {broker_id} names controller {said} on {protocol}'s "
                                f"protocol; ZooKeeper names {controller}")
        zk_states = {}
        for topic in native.topics:
            for p in topic.partitions:
                state = zk_states.setdefault((topic.name, p.partition),
                                             zk.get_partition_state(topic.name, p.partition))
                if state is None or (p.leader, p.leader_epoch) != (state.leader,
                                                                   state.leader_epoch):
                    problems.append(
                        f"broker {broker_id} says {topic.name}-{p.partition} has leader "
                        f"{p.leader} at epoch {p.leader_epoch}; ZooKeeper says "
                        f"{None if state is None else (state.leader, state.leader_epoch)}")
    marked = zk.topics_marked_for_deletion()
    if marked:
        problems.append(f"topics still marked for deletion: {sorted(marked)[:10]}")
    now = zk.get_topic_assignments()
    for topic, assignment in sorted(now.items()):
        numbers = sorted(assignment.partitions)
        if numbers != list(range(len(numbers))):
            problems.append(f"topic {topic}'s assignment has partitions {numbers[:20]}, not "
                            f"0..{len(numbers) - 1}")
        for partition in numbers:
            state = zk.get_partition_state(topic, partition)
            if state is None and not set(assignment.partitions[partition]) & set(live):
                # as Kafka 2.8: a created partition none of whose replicas is a live broker (a
                # CreateTopics assignment may name absent brokers) gets no state until one lives
                continue
            if state is None:
                problems.append(f"{topic}-{partition} has no partition state")
            elif state.leader not in live:
                problems.append(f"{topic}-{partition} has leader {state.leader}, not a live "
                                f"broker ({sorted(live)})")
            elif epoch is not None and state.controller_epoch > epoch.epoch:
                problems.append(f"{topic}-{partition}'s state was written at controller epoch "
                                f"{state.controller_epoch}, above ZooKeeper's {epoch.epoch}")
    for topic, (topic_id, count) in sorted(before.items()):
        after = (now[topic].topic_id, len(now[topic].partitions)) if topic in now else None
        if topic in fixed and after != (topic_id, count):
            problems.append(f"topic {topic} was {(topic_id, count)} (id, partitions) before the "
                            f"fuzz and is {after} now")
        elif after is not None and after[0] == topic_id and after[1] < count:
            problems.append(f"topic {topic} shrank from {count} to {after[1]} partitions")
    return problems


def settled_cluster_problems(zk, ports, before, fixed, timeout_s: float = 90) -> list[str]:
    """``cluster_problems`` once it is [] or ``timeout_s`` has passed (the controller may still
    be electing the leaders of partitions the fuzz added, or deleting topics it asked to)."""
    deadline = time.monotonic() + timeout_s
    while True:
        problems = cluster_problems(zk, ports, before, fixed)
        if not problems or time.monotonic() > deadline:
            return problems
        time.sleep(0.5)
