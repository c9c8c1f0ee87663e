"""Seeds for fuzzing kafkalite's native (msgpack) protocol, shared by
tests/system/test_protocol_fuzz.py and bench/protocol_fuzz.py (no test functions here).

Two kinds of seed:

- **recorded**: the request frames kafkalite's own clients send in a real session against the
  cluster under test. ``record_client_session`` runs the session in a child process (so the
  recording hook never touches the test's own clients): an AdminClient creates topics (two
  grown by CreatePartitions, one of them with explicit replica assignments, one deleted again),
  describes the cluster, topics and configs, alters a topic config and deletes records;
  Producers with acks=all and idempotence, acks=0, and acks=1 with gzip write; a Consumer
  assigns, seeks and reads and asks for offsets; a Consumer in a ZooKeeper-free broker group
  (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, OffsetCommit, OffsetFetch, LeaveGroup)
  commits; the admin lists, describes and deletes the group. Each frame payload is recorded as
  ``kafkalite.protocol.envelope.encode_request_payload`` made it, with the broker it went to.
- **recorded controller**: the controller's own LeaderAndIsr, UpdateMetadata and StopReplica,
  recorded by a stand-in broker (tests/system/controller_frames.py), mutated in their fields.
- **controller**: LeaderAndIsr, UpdateMetadata, StopReplica (built with
  ``kafkalite.protocol.messages``) aimed at the *live* topics, and ControlledShutdown, each
  carrying a claim that ZooKeeper does not back: the incident's controller 7 at epoch +32, a
  deposed epoch, a broker that is not the controller, a stale or missing broker epoch. A broker
  must refuse every one; one that gets through breaks the live topics, and the fuzz's invariants
  say so.

Every topic a recorded seed names is one of the fuzz's own (``fz-native*``); the controller
seeds are marked (``Seed.controller``) so that no mutation carries their live topic names into a
client request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

import msgpack

from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.envelope import encode_request_payload

NATIVE_TOPIC = "fz-native"             # produced to, fetched, configs altered, records deleted
GROW_TOPIC = "fz-native-grow"          # created with 1 partition, grown to 2
TEMP_TOPIC = "fz-native-tmp"           # created, then deleted
ASSIGNED_TOPIC = "fz-native-assigned"  # created and grown with explicit replica assignments
NATIVE_GROUP = "fz-native-group"
SEEDS_PER_API = 4                      # distinct recorded request bodies kept per API key
IMPORT_ATTEMPTS = 5
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass(frozen=True)
class Seed:
    name: str
    payload: bytes                     # the frame payload, without the length prefix
    broker_id: int | None = None       # the broker it is meant for (None: any)
    controller: bool = False           # a controller request naming the live topics: never a
                                       # donor for a client request (a DeleteRecords given a live
                                       # topic's name is a legitimate request that deletes)
    recorded_controller: bool = False  # the controller's own frame (controller_frames): most
                                       # cases mutate its fields, aimed at a real broker


@dataclass(frozen=True)
class ControllerView:
    """ZooKeeper's controller, its epoch, each broker's registration (broker) epoch, and each
    partition's (leader epoch, replicas)."""
    controller_id: int
    epoch: int
    broker_epochs: dict
    partitions: dict = field(default_factory=dict)    # (topic, partition) -> (epoch, replicas)


# --- recorded client sessions --------------------------------------------------------------------

def record_client_session(bootstrap: str, port_to_broker: dict[int, int],
                          timeout_s: float = 180) -> list[Seed]:
    """Run the client session in a child process; its distinct request frames, at most
    ``SEEDS_PER_API`` bodies per API key, each meant for the broker it went to."""
    for attempt in range(IMPORT_ATTEMPTS):
        child = subprocess.run([sys.executable, os.path.abspath(__file__), bootstrap],
                               capture_output=True, text=True, timeout=timeout_s, cwd=REPO)
        if child.stdout.startswith("ready"):
            break
        # kafkalite itself did not import (the working tree caught mid-edit?): nothing was sent
        time.sleep(1 + attempt)
    if child.returncode != 0:
        raise RuntimeError(f"the recorded client session failed (exit {child.returncode}):\n"
                           f"{child.stderr[-3000:]}")
    seeds: list[Seed] = []
    bodies: set[bytes] = set()
    per_api: dict[int, int] = {}
    for line in child.stdout.splitlines():
        if not line.startswith("{"):
            continue
        frame = json.loads(line)
        payload = bytes.fromhex(frame["payload"])
        api_key, version, _cid, client_id, body = msgpack.unpackb(payload, raw=False,
                                                                  strict_map_key=False)
        same = msgpack.packb([api_key, version, client_id, body], use_bin_type=True)
        if same in bodies or per_api.get(api_key, 0) >= SEEDS_PER_API:
            continue
        bodies.add(same)
        per_api[api_key] = per_api.get(api_key, 0) + 1
        seeds.append(Seed(f"{ApiKey.name_of(api_key)} #{per_api[api_key]}", payload,
                          port_to_broker.get(frame["port"])))
    return seeds


def _record_session(bootstrap: str) -> None:
    """The child's side: hook the client's encoder, run the session, print one JSON line per
    request frame (``{"api", "port", "payload"}``)."""
    from kafkalite import AdminClient, Consumer, NewPartitions, NewTopic, Producer, TopicPartition
    from kafkalite.client import connection
    from kafkalite.client.admin_configs import AlterConfigOp, ConfigResource

    sending = threading.local()
    encode = connection.encode_request_payload
    send = connection.BrokerConnection.send
    out_lock = threading.Lock()

    def recording_send(self, request, api_version=0):
        sending.port = self.port
        return send(self, request, api_version)

    def recording_encode(api_key, api_version, correlation_id, client_id, body):
        payload = encode(api_key, api_version, correlation_id, client_id, body)
        with out_lock:
            print(json.dumps({"api": int(api_key), "port": getattr(sending, "port", None),
                              "payload": payload.hex()}), flush=True)
        return payload

    connection.BrokerConnection.send = recording_send
    connection.encode_request_payload = recording_encode
    print("ready", flush=True)

    admin = AdminClient(bootstrap_servers=bootstrap, client_id="fz-admin")
    admin.create_topics([NewTopic(NATIVE_TOPIC, 2, 3), NewTopic(GROW_TOPIC, 1, 2),
                         NewTopic(TEMP_TOPIC, 1, 1, topic_configs={"retention.ms": "60000"})],
                        timeout_ms=60000)
    admin.create_topics([NewTopic(ASSIGNED_TOPIC, replica_assignments={0: [1, 2], 1: [2, 3]})],
                        timeout_ms=60000)
    admin.create_partitions({GROW_TOPIC: NewPartitions(2)}, timeout_ms=60000)
    admin.create_partitions({ASSIGNED_TOPIC: NewPartitions(3, [[3, 1]])}, timeout_ms=60000)
    admin.describe_cluster()
    _until_it_works(lambda: admin.describe_topics([NATIVE_TOPIC, GROW_TOPIC]))
    admin.describe_configs([ConfigResource("TOPIC", NATIVE_TOPIC),
                            ConfigResource("BROKER", "1", ["log.retention.ms"])],
                           include_synonyms=True)
    admin.alter_configs([ConfigResource("TOPIC", NATIVE_TOPIC, {"retention.ms": "86400000"})])
    admin.incremental_alter_configs(
        {ConfigResource("TOPIC", NATIVE_TOPIC): [AlterConfigOp("segment.ms", "SET", "600000")]},
        validate_only=True)

    with Producer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True,
                  client_id="fz-producer") as producer:
        for i in range(6):
            producer.send(NATIVE_TOPIC, key=b"k%d" % i, value=b"v%d" % i, partition=i % 2,
                          headers=[("h", b"x")])
        producer.flush(60)
    with Producer(bootstrap_servers=bootstrap, acks=0, client_id="fz-producer-acks0") as producer:
        producer.send(NATIVE_TOPIC, value=b"zero", partition=0)
        producer.flush(60)
    with Producer(bootstrap_servers=bootstrap, acks=1, compression_type="gzip",
                  linger_ms=5, client_id="fz-producer-gzip") as producer:
        for i in range(6):
            producer.send(NATIVE_TOPIC, value=b"gz%d" % i, partition=i % 2)
        producer.flush(60)

    partitions = [TopicPartition(NATIVE_TOPIC, p) for p in (0, 1)]
    consumer = Consumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                        client_id="fz-consumer", fetch_max_wait_ms=100)
    consumer.assign(partitions)
    consumer.seek_to_beginning()
    got = 0
    for _ in range(50):
        got += sum(len(batch) for batch in consumer.poll(timeout_ms=200).values())
        if got >= 12:
            break
    consumer.end_offsets(partitions)
    consumer.beginning_offsets(partitions)
    consumer.offsets_for_times({tp: 0 for tp in partitions})
    consumer.close()
    admin.delete_records({partitions[0]: 1})

    member = Consumer(NATIVE_TOPIC, bootstrap_servers=bootstrap, group_id=NATIVE_GROUP,
                      auto_offset_reset="earliest", enable_auto_commit=False,
                      client_id="fz-member", heartbeat_interval_ms=100, fetch_max_wait_ms=100)
    read = 0
    for _ in range(150):
        read += sum(len(batch) for batch in member.poll(timeout_ms=200).values())
        if read >= 10 and member.assignment():
            break
    member.commit()
    member.committed(partitions[0])
    member.close()
    admin.list_consumer_groups()
    admin.describe_consumer_group(NATIVE_GROUP)
    admin.delete_consumer_group_offsets(NATIVE_GROUP, [partitions[1]])
    admin.delete_consumer_group(NATIVE_GROUP)
    admin.delete_topics([TEMP_TOPIC], timeout_ms=60000)
    admin.close()


def built_client_seeds() -> list[Seed]:
    """Client requests the recorded session does not send (or not reliably): ApiVersions, a
    Heartbeat, OffsetForLeaderEpoch, and a Fetch claiming to come from follower 2."""
    requests = {
        "ApiVersions": m.ApiVersionsRequest(),
        "Heartbeat": m.HeartbeatRequest(group_id=NATIVE_GROUP, generation_id=1,
                                        member_id="fz-member-1"),
        "OffsetForLeaderEpoch": m.OffsetForLeaderEpochRequest(topics=[
            m.OffsetForLeaderEpochTopic(NATIVE_TOPIC, [
                m.OffsetForLeaderEpochPartition(0, -1, 0),
                m.OffsetForLeaderEpochPartition(1, -1, 0)])]),
        "Fetch as follower 2": m.FetchRequest(replica_id=2, max_wait_ms=0, topics=[
            m.FetchTopic(NATIVE_TOPIC, [m.FetchPartition(0, 0, 1 << 16, -1, 0)])]),
    }
    return [Seed(name, _payload(request, 11 + i)) for i, (name, request)
            in enumerate(requests.items())]


def probe_payloads() -> tuple[bytes, bytes]:
    """Two valid requests that pipeline around a mutated one: ApiVersions and Metadata."""
    return (_payload(m.ApiVersionsRequest(), 1, "fz-probe"),
            _payload(m.MetadataRequest(topics=[NATIVE_TOPIC], allow_auto_topic_creation=False),
                     3, "fz-probe"))


def read_controller_view(zk) -> ControllerView:
    """The view from ZooKeeper (``zk``: a started kafkalite.zk.ZkClient)."""
    registrations = zk.get_brokers()
    partitions = {}
    for topic, assignment in zk.get_topic_assignments().items():
        for partition, replicas in assignment.partitions.items():
            state = zk.get_partition_state(topic, partition)
            if state is not None:
                partitions[(topic, partition)] = (state.leader_epoch, list(replicas))
    return ControllerView(zk.get_controller_id(), zk.get_controller_epoch().epoch,
                          {b: r.broker_epoch for b, r in registrations.items()}, partitions)


def _until_it_works(call, timeout_s: float = 30):
    """``call()``'s result once it stops raising (the brokers learn of new topics and partitions
    from the controller one by one), or its error after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return call()
        except Exception:  # noqa: BLE001
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


# --- controller requests -------------------------------------------------------------------------

def controller_seeds(view: ControllerView, live_topics: dict[str, int]) -> list[Seed]:
    """Controller requests whose claim ZooKeeper does not back, aimed at the live topics'
    partitions (``{topic: partition count}``), one set per broker."""
    seeds = []
    others = sorted(b for b in view.broker_epochs if b != view.controller_id)
    real = view.controller_id
    for broker_id, broker_epoch in sorted(view.broker_epochs.items()):
        claims = {
            "controller 7, epoch +32": (7, view.epoch + 32, broker_epoch),
            "real controller, epoch +1": (real, view.epoch + 1, broker_epoch),
            "real controller, deposed epoch": (real, view.epoch - 1, broker_epoch),
            "not the controller": (others[0] if others else 99, view.epoch, broker_epoch),
            "stale broker epoch": (real, view.epoch, broker_epoch - 1),
            "no broker epoch": (real, view.epoch, -1),
        }
        for claim, (controller_id, epoch, claimed_broker_epoch) in claims.items():
            for name, request in _controller_requests(controller_id, epoch, claimed_broker_epoch,
                                                      broker_id, view, live_topics):
                seeds.append(Seed(f"{name} ({claim}) to {broker_id}", _payload(request),
                                  broker_id, controller=True))
    # ControlledShutdown goes to the controller, for some broker (a broker sends its own epoch)
    for broker_id, broker_epoch in sorted(view.broker_epochs.items()):
        for claim, claimed in (("no broker epoch", -1), ("stale broker epoch", broker_epoch - 1),
                               ("next broker epoch", broker_epoch + 1)):
            request = m.ControlledShutdownRequest(broker_id=broker_id, broker_epoch=claimed)
            seeds.append(Seed(f"ControlledShutdown of {broker_id} ({claim})", _payload(request),
                              view.controller_id, controller=True))
    return seeds


def _controller_requests(controller_id, epoch, broker_epoch, target, view, live_topics):
    partitions = [(t, p) for t, n in sorted(live_topics.items()) for p in range(n)]
    brokers = sorted(view.broker_epochs)
    # follow a broker that does not exist, as the incident's forged LeaderAndIsr did
    yield "LeaderAndIsr", m.LeaderAndIsrRequest(
        controller_id=controller_id, controller_epoch=epoch, broker_epoch=broker_epoch,
        partition_states=[m.LeaderAndIsrPartitionState(t, p, epoch, 99, 50, [99], 0,
                                                       [target, 99]) for t, p in partitions],
        live_leaders=[m.LeaderAndIsrLiveLeader(99, "127.0.0.1", 1)])
    # lead alone, with a new partition 127
    yield "LeaderAndIsr lead", m.LeaderAndIsrRequest(
        controller_id=controller_id, controller_epoch=epoch, broker_epoch=broker_epoch,
        partition_states=[m.LeaderAndIsrPartitionState(t, p, epoch, target, 60, [target], 0,
                                                       brokers, True)
                          for t, p in partitions + [(partitions[0][0], 127)]],
        live_leaders=[])
    yield "UpdateMetadata", m.UpdateMetadataRequest(
        controller_id=controller_id, controller_epoch=epoch, broker_epoch=broker_epoch,
        partition_states=[m.UpdateMetadataPartitionState(t, p, epoch, -1, 70, [], 0, brokers,
                                                         brokers) for t, p in partitions],
        live_brokers=[])
    yield "StopReplica", m.StopReplicaRequest(
        controller_id=controller_id, controller_epoch=epoch, broker_epoch=broker_epoch,
        delete_partitions=True, partitions=[m.TopicPartition(t, p) for t, p in partitions])


def _payload(request: m.Request, correlation_id: int = 7, client_id: str = "fz-built") -> bytes:
    return encode_request_payload(request.API_KEY, 0, correlation_id, client_id,
                                  request.to_body(0))


if __name__ == "__main__":
    _record_session(sys.argv[1])
