"""The controller's own LeaderAndIsr, UpdateMetadata and StopReplica frames, recorded from the
cluster under fuzz, and mutations of their fields (tests/system/protocol_fuzz_session.py,
native_fuzz_cases; no test functions here).

``record_controller_frames`` registers a stand-in broker (``RECORDER_ID``) in ZooKeeper whose
port is a socket here: the controller sends it UpdateMetadata when it joins; a topic assigned to
it and a real broker, then deleted, brings LeaderAndIsr and StopReplica. Every frame is kept as it
came, answered with success, and the stand-in leaves again (its ZooKeeper session closed). These
are the real controller's frames: its id, its epoch, a broker epoch ZooKeeper issued.

``mutate_fields`` turns one into a request aimed at a real broker: the identity (the real one,
exactly, or a deposed or future controller epoch, another broker, a stale broker epoch), the
partitions (a live topic's, a new number, a topic that does not exist), the leader, the leader
epoch (below, at and above ZooKeeper's), the ISR and replica lists (a broker that does not exist,
empty, the leader missing), the ZooKeeper version, the live brokers. With the exact identity only
a LeaderAndIsr whose every partition state is stale may be sent (Kafka ignores each one:
``native_fuzz_cases.left_out``); anything else that exact is the controller's right and left out.
"""

from __future__ import annotations

import dataclasses
import random
import socket
import struct
import threading
import time

from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.envelope import (decode_request_envelope, encode_request_payload,
                                         encode_response_payload, parse_request_body)

RECORDER_ID = 9                  # the stand-in broker (the fuzz clusters use ids 1..3)
RECORD_TOPIC = "fz-ctl"          # assigned to the stand-in and a real broker, then deleted
NO_SUCH_BROKER = 33              # the incident's ISR [33]
CONTROLLER_APIS = (ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA, ApiKey.STOP_REPLICA)


class _StandIn:
    """A listening socket that records each native request frame and answers it with success."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.frames: list[bytes] = []
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def apis(self) -> set[int]:
        with self.lock:
            return {decode_request_envelope(p)[0].api_key for p in self.frames}

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        with conn:
            buf = b""
            while not self.closed:
                try:
                    chunk = conn.recv(1 << 16)
                except OSError:
                    return
                if not chunk:
                    return
                buf += chunk
                while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">i", buf[:4])[0]:
                    n = struct.unpack(">i", buf[:4])[0]
                    payload, buf = buf[4:4 + n], buf[4 + n:]
                    answer = self._answer(payload)
                    if answer is None:
                        return              # not a controller frame (a client): close
                    conn.sendall(struct.pack(">i", len(answer)) + answer)

    def _answer(self, payload: bytes) -> bytes | None:
        try:
            header, body = decode_request_envelope(payload)
            request = parse_request_body(header, body)
        except Exception:  # noqa: BLE001 - a Kafka client trying every broker: not ours
            return None
        if header.api_key not in CONTROLLER_APIS:
            return None
        with self.lock:
            self.frames.append(payload)
        if header.api_key == ApiKey.LEADER_AND_ISR:
            response = m.LeaderAndIsrResponse(partition_errors=[
                m.PartitionError(s.topic, s.partition, 0) for s in request.partition_states])
        elif header.api_key == ApiKey.STOP_REPLICA:
            response = m.StopReplicaResponse(partition_errors=[
                m.PartitionError(tp.topic, tp.partition, 0) for tp in request.partitions])
        else:
            response = m.UpdateMetadataResponse()
        return encode_response_payload(header.correlation_id, response.to_body(0))

    def close(self):
        self.closed = True
        self.server.close()


def record_controller_frames(zk_connect: str, bootstrap: str, real_broker: int,
                             timeout_s: float = 60) -> list[bytes]:
    """The controller's frames to a stand-in broker (see the module doc): UpdateMetadata,
    LeaderAndIsr and StopReplica, as payloads, in the order they came."""
    from kafkalite import AdminClient, NewTopic
    from kafkalite.zk import ZkClient

    stand_in = _StandIn()
    zk = ZkClient(zk_connect).start()
    try:
        real = zk.get_broker(real_broker)
        endpoints = tuple(e.rsplit(":", 1)[0] + f":{stand_in.port}" for e in real.endpoints)
        zk.register_broker(dataclasses.replace(real, broker_id=RECORDER_ID, port=stand_in.port,
                                               endpoints=endpoints,
                                               timestamp_ms=int(time.time() * 1000)))
        _until(lambda: ApiKey.UPDATE_METADATA in stand_in.apis(), timeout_s, "UpdateMetadata")
        with AdminClient(bootstrap_servers=bootstrap, client_id="fz-ctl-setup") as admin:
            admin.create_topics([NewTopic(RECORD_TOPIC, replica_assignments={
                0: [real_broker, RECORDER_ID]})], timeout_ms=60000)
            _until(lambda: ApiKey.LEADER_AND_ISR in stand_in.apis(), timeout_s, "LeaderAndIsr")
            admin.delete_topics([RECORD_TOPIC], timeout_ms=60000)
        _until(lambda: ApiKey.STOP_REPLICA in stand_in.apis(), timeout_s, "StopReplica")
        _until(lambda: RECORD_TOPIC not in zk.get_topic_assignments(), timeout_s,
               f"{RECORD_TOPIC} deleted")
    finally:
        zk.stop()                    # the stand-in's registration goes with its session
        stand_in.close()
    with stand_in.lock:
        return list(stand_in.frames)


def _until(condition, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"recording the controller's frames: no {what} in {timeout_s} s")
        time.sleep(0.05)


# --- field mutations -----------------------------------------------------------------------------

def _identity(rnd: random.Random, view, target: int, exact_allowed: bool):
    real = view.broker_epochs.get(target, -1)
    others = sorted(b for b in view.broker_epochs if b != view.controller_id) or [99]
    name, identity = rnd.choices([
        ("exact", (view.controller_id, view.epoch, real)),
        ("deposed epoch", (view.controller_id, view.epoch - 1, real)),
        ("next epoch", (view.controller_id, view.epoch + 1, real)),
        ("not the controller", (rnd.choice(others), view.epoch, real)),
        ("stale broker epoch", (view.controller_id, view.epoch, real - 1)),
        ("as recorded", None)], weights=[6 if exact_allowed else 0, 2, 2, 2, 2, 1])[0]
    return name, identity


def _partitions(view) -> list[tuple[str, int]]:
    return sorted(view.partitions) or [("zz-none", 0)]


def _ids(rnd: random.Random, view, target: int, leader: int) -> list[int]:
    brokers = sorted(view.broker_epochs)
    return rnd.choice([[NO_SUCH_BROKER], [], [target], brokers, [leader], [leader, leader],
                       [b for b in brokers if b != leader], [-1], brokers + [NO_SUCH_BROKER]])


def _mutate_state(rnd: random.Random, state, view, target: int, stale: bool = False):
    """One partition state (LeaderAndIsr's or UpdateMetadata's), some fields changed; ``stale``:
    one of ``target``'s partitions at a leader epoch not above ZooKeeper's (the replay Kafka
    ignores), whatever else changes."""
    changes = {}
    hosted = [tp for tp in _partitions(view) if target in view.partitions.get(tp, (0, []))[1]]
    if stale and hosted:
        topic, partition = rnd.choice(hosted)
        current = view.partitions[(topic, partition)][0]
        changes.update(topic=topic, partition=partition,
                       leader_epoch=rnd.choice([current, current, current - 1]))
    elif rnd.random() < 0.8:     # a real partition: a live topic's, the fuzz's, the offsets'
        topic, partition = rnd.choice(_partitions(view))
        changes.update(topic=topic, partition=partition)
    fields = ["partition", "leader", "leader_epoch", "isr", "replicas", "zk_version",
              "controller_epoch"]
    if stale and hosted:
        fields = fields[1:2] + fields[3:]
    for name in rnd.sample(fields, rnd.randint(1, 4)):
        topic = changes.get("topic", state.topic)
        partition = changes.get("partition", state.partition)
        current = view.partitions.get((topic, partition), (0, []))[0]
        leader = changes.get("leader", state.leader)
        if name == "partition":
            changes[name] = rnd.choice([partition + 1, 127, -1, (1 << 31) - 1])
        elif name == "leader":
            changes[name] = rnd.choice(sorted(view.broker_epochs) + [NO_SUCH_BROKER, -1, target])
        elif name == "leader_epoch":
            changes[name] = rnd.choice([current - 1, current, current, current + 1, 0, -1,
                                        (1 << 31) - 1])
        elif name in ("isr", "replicas"):
            changes[name] = _ids(rnd, view, target, leader)
        elif name == "zk_version":
            changes[name] = rnd.choice([-1, 0, 1, 1 << 20])
        else:
            changes[name] = rnd.choice([view.epoch - 1, view.epoch, view.epoch + 1])
    return state._replace(**changes)


def mutate_fields(rnd: random.Random, payload: bytes, view) -> tuple[str, bytes, int]:
    """(kind, mutated payload, target broker id) for a recorded controller frame."""
    header, body = decode_request_envelope(payload)
    request = parse_request_body(header, body)
    target = rnd.choice(sorted(view.broker_epochs))
    lai = isinstance(request, m.LeaderAndIsrRequest)
    # the exact identity only where Kafka has a defence: a LeaderAndIsr's stale leader epochs
    claim, identity = _identity(rnd, view, target, exact_allowed=lai)
    stale = claim == "exact"
    if identity is not None:
        request = dataclasses.replace(request, controller_id=identity[0],
                                      controller_epoch=identity[1], broker_epoch=identity[2])
    if isinstance(request, (m.LeaderAndIsrRequest, m.UpdateMetadataRequest)):
        states = list(request.partition_states) or [_blank_state(request)]
        states = [_mutate_state(rnd, s, view, target, stale) if stale or rnd.random() < 0.9
                  else s for s in states for _ in range(rnd.choice([1, 1, 2]))]
        request = dataclasses.replace(request, partition_states=states)
        if isinstance(request, m.UpdateMetadataRequest) and rnd.random() < 0.3:
            live = list(request.live_brokers)
            request = dataclasses.replace(request, live_brokers=rnd.choice([
                [], live[:1], live + [m.UpdateMetadataBroker(NO_SUCH_BROKER, "127.0.0.1", 1)]]))
    else:
        partitions = [m.TopicPartition(*rnd.choice(_partitions(view)))
                      for _ in range(rnd.randint(1, 3))]
        request = dataclasses.replace(request, partitions=partitions,
                                      delete_partitions=rnd.random() < 0.5)
    kind = f"fields-{ApiKey.name_of(header.api_key)}"
    data = encode_request_payload(header.api_key, header.api_version, header.correlation_id,
                                  header.client_id, request.to_body(header.api_version))
    return f"{kind} ({claim})", data, target


def _blank_state(request):
    if isinstance(request, m.LeaderAndIsrRequest):
        return m.LeaderAndIsrPartitionState("zz-none", 0, request.controller_epoch, -1, 0, [],
                                            0, [])
    return m.UpdateMetadataPartitionState("zz-none", 0, request.controller_epoch, -1, 0, [], 0,
                                          [], [])


def recorded_seeds(frames: list[bytes], per_api: int = 4) -> list:
    """native_fuzz_seeds.Seed for each distinct recorded frame, at most ``per_api`` per API:
    marked controller (never a donor for a client request) and recorded (fields mutated)."""
    from native_fuzz_seeds import Seed

    seeds, counts = [], {}
    for payload in frames:
        api_key = decode_request_envelope(payload)[0].api_key
        counts[api_key] = counts.get(api_key, 0) + 1
        if counts[api_key] <= per_api:
            seeds.append(Seed(f"recorded {ApiKey.name_of(api_key)} #{counts[api_key]}", payload,
                              None, controller=True, recorded_controller=True))
    return seeds
