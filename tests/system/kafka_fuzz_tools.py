"""Kafka-protocol fuzzing of live brokers, shared by tests/system/test_kafka_protocol_fuzz.py and
bench/kafka_fuzz.py (no test functions here).

Seeds are valid request frames built with kafkalite's own Kafka codec (kio's schema-generated
classes), as a client would send them: ApiVersions, Metadata, Produce with a real v2 batch (built
by kafka-python's record builder), Fetch, ListOffsets, OffsetForLeaderEpoch, InitProducerId,
DescribeConfigs, DescribeCluster, and the writing admin APIs made harmless (CreateTopics,
CreatePartitions and the two AlterConfigs with validate_only, DeleteRecords of the fuzz topic,
DeleteTopics of a topic that does not exist), in flexible and older versions. Each case mutates
them (bit flips, byte sets, truncations, lying or huge length prefixes, extreme int32s and
varints, unknown API keys and versions, splices, insertions, deletions, pipelining) and sends the result on a raw socket of its own. The broker may answer,
close, or wait for bytes that never come; it must never die, answer with a frame that does not
decode, or answer with another request's correlation id.

Beside the fuzz, ``LiveTraffic`` keeps a confluent-kafka producer (acks=all, idempotent) and a
consumer busy on a topic of their own; ``verify_live`` then reads every acknowledged record back.
"""

from __future__ import annotations

import collections
import random
import socket
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka import codec
from kafkalite.protocol.kafka.versions import is_supported

#: a valid CreateTopics asking for more partitions than this is a resource question, not malformed
#: input: kafkalite builds the replica assignment of every partition on the broker's reactor
#: thread, even for validate_only (2**30 partitions stall the broker for good), so the fuzz leaves
#: such cases out and counts them (see ``resource_heavy``)
MAX_PARTITIONS_ASKED = 100


# --- seeds ---------------------------------------------------------------------------------------

def record_batch(count: int = 3, seed: int = 0) -> bytes:
    """A real Kafka v2 record batch (magic 2, CRC32C), from kafka-python's builder."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    rnd = random.Random(seed)
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    now = int(time.time() * 1000)
    for i in range(count):
        builder.append(i, timestamp=now + i, key=b"fz-%d" % i, value=rnd.randbytes(20),
                       headers=[("h", b"x")])
    return bytes(builder.build())


def seed_payloads(topic: str) -> dict[str, bytes]:
    """name -> request frame payload (no length prefix), all aimed at ``topic``."""
    batch = record_batch()

    def req(api_key, version, values, cid):
        return codec.encode_request(api_key, version, cid, "fuzz", values)

    seeds = {
        "ApiVersions v3": req(18, 3, {"client_software_name": "fuzz",
                                      "client_software_version": "1.0"}, 1),
        "ApiVersions v0": req(18, 0, {}, 2),
        "Metadata v11": req(3, 11, {"topics": [{"name": topic, "topic_id": None}],
                                    "allow_auto_topic_creation": False,
                                    "include_topic_authorized_operations": False}, 3),
        "Metadata v9 all": req(3, 9, {"topics": None, "allow_auto_topic_creation": False,
                                      "include_cluster_authorized_operations": False,
                                      "include_topic_authorized_operations": False}, 4),
        "Metadata v1": req(3, 1, {"topics": [{"name": topic}]}, 5),
        "Produce v9 acks=all": req(0, 9, {"transactional_id": None, "acks": -1, "timeout": 5000,
                                          "topic_data": [{"name": topic, "partition_data": [
                                              {"index": 0, "records": batch}]}]}, 6),
        "Produce v7 acks=1": req(0, 7, {"transactional_id": None, "acks": 1, "timeout": 5000,
                                        "topic_data": [{"name": topic, "partition_data": [
                                            {"index": 0, "records": record_batch(2, 1)}]}]},
                                 7),
        "Fetch v12": req(1, 12, {"replica_id": -1, "max_wait": 0, "min_bytes": 1,
                                 "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0,
                                 "session_epoch": -1, "topics": [{"topic": topic, "partitions": [
                                     {"partition": 0, "current_leader_epoch": -1,
                                      "fetch_offset": 0, "last_fetched_epoch": -1,
                                      "log_start_offset": -1, "partition_max_bytes": 1 << 16}]}],
                                 "forgotten_topics_data": [], "rack_id": ""}, 8),
        "Fetch v4": req(1, 4, {"replica_id": -1, "max_wait": 0, "min_bytes": 1,
                               "max_bytes": 1 << 20, "isolation_level": 0,
                               "topics": [{"topic": topic, "partitions": [
                                   {"partition": 0, "fetch_offset": 0,
                                    "partition_max_bytes": 1 << 16}]}]}, 9),
        "ListOffsets v6": req(2, 6, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1,
                                            "timestamp": -1}]}]}, 10),
        "ListOffsets v1": req(2, 1, {"replica_id": -1, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -2}]}]}, 11),
        "OffsetForLeaderEpoch v4": req(23, 4, {"replica_id": -1, "topics": [
            {"topic": topic, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                             "leader_epoch": 0}]}]}, 12),
        "InitProducerId v4": req(22, 4, {"transactional_id": None, "transaction_timeout": 60000,
                                         "producer_id": -1, "producer_epoch": -1}, 13),
        "DescribeConfigs v4": req(32, 4, {"resources": [
            {"resource_type": 2, "resource_name": topic, "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False}, 14),
        "DescribeCluster v0": req(60, 0, {"include_cluster_authorized_operations": False}, 15),
        "CreateTopics v7 validate": req(19, 7, {"topics": [
            {"name": "fz-new", "num_partitions": 2, "replication_factor": 1,
             "assignments": [], "configs": [{"name": "retention.ms", "value": "1000"}]}],
            "timeout": 1000, "validate_only": True}, 16),
        "CreateTopics v2 validate": req(19, 2, {"topics": [
            {"name": "fz-old", "num_partitions": -1, "replication_factor": -1,
             "assignments": [{"partition_index": 0, "broker_ids": [1]}], "configs": []}],
            "timeout": 1000, "validate_only": True}, 17),
        "CreatePartitions v3 validate": req(37, 3, {"topics": [
            {"name": topic, "count": 2, "assignments": None}], "timeout": 1000,
            "validate_only": True}, 18),
        "AlterConfigs v2 validate": req(33, 2, {"resources": [
            {"resource_type": 2, "resource_name": topic,
             "configs": [{"name": "retention.ms", "value": "86400000"}]}],
            "validate_only": True}, 19),
        "IncrementalAlterConfigs v1 validate": req(44, 1, {"resources": [
            {"resource_type": 2, "resource_name": topic, "configs": [
                {"name": "segment.ms", "config_operation": 0, "value": "600000"}]}],
            "validate_only": True}, 20),
        "DeleteRecords v2": req(21, 2, {"topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "offset": 0}]}],
            "timeout": 1000}, 21),
        "DeleteTopics v6 missing": req(20, 6, {"topics": [
            {"name": "zz-never-created", "topic_id": None}], "timeout": 1000}, 22),
        "DeleteTopics v1 missing": req(20, 1, {"topic_names": ["zz-never-created"],
                                               "timeout": 1000}, 23),
    }
    return seeds


# --- cases ---------------------------------------------------------------------------------------

@dataclass
class Case:
    kind: str
    data: bytes                      # exactly the bytes written to the socket
    sent: list[bytes]                # the complete frame payloads in ``data``, in order


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _where(rnd: random.Random, data: bytearray, skip_header: bool = True) -> int:
    low = 8 if skip_header and len(data) > 9 else 0
    return rnd.randrange(low, len(data)) if len(data) > low else 0


def mutate(rnd: random.Random, payload: bytes, seeds: list[bytes]) -> tuple[str, bytes]:
    """(kind, mutated payload) for one seed payload."""
    data = bytearray(payload)
    kind = rnd.choices(
        ["flip", "set", "truncate", "int32", "varint", "insert", "delete", "splice", "api",
         "version", "fill"],
        weights=[25, 10, 10, 10, 8, 5, 5, 7, 5, 8, 2])[0]
    if kind == "flip":
        for _ in range(rnd.randint(1, 6)):
            at = _where(rnd, data, skip_header=rnd.random() < 0.9)
            data[at] ^= 1 << rnd.randrange(8)
    elif kind == "set":
        for _ in range(rnd.randint(1, 4)):
            data[_where(rnd, data)] = rnd.choice([0x00, 0xFF, 0x7F, 0x80, rnd.randrange(256)])
    elif kind == "truncate":
        del data[rnd.randrange(len(data)):]
    elif kind == "int32":
        at = _where(rnd, data)
        data[at:at + 4] = struct.pack(">i", rnd.choice(
            [0x7FFFFFFF, -1, -2, -(1 << 31), 0x40000000, 0x01000000, 1 << 20, 65536, 255]))
    elif kind == "varint":
        at = _where(rnd, data)
        data[at:at + 1] = _uvarint(rnd.choice([0xFFFFFFFF, 0xFFFFFFF0, 1 << 31, 1 << 28,
                                               1 << 21, 1 << 14, 300]))
    elif kind == "insert":
        at = _where(rnd, data)
        data[at:at] = rnd.randbytes(rnd.randint(1, 16))
    elif kind == "delete":
        at = _where(rnd, data)
        del data[at:at + rnd.randint(1, 8)]
    elif kind == "splice":
        other = rnd.choice(seeds)
        data = data[:rnd.randrange(len(data) + 1)] + other[rnd.randrange(len(other)):]
    elif kind == "api":      # an API key nobody serves (the first byte stays 0x00)
        data[0:2] = struct.pack(">h", rnd.choice([rnd.randrange(256), 4, 5, 6, 7, 8, 9, 10, 11,
                                                  12, 13, 14, 36, 67, 255]))
    elif kind == "version":
        data[2:4] = struct.pack(">h", rnd.choice([-1, -32768, 32767, 13, 100,
                                                  rnd.randrange(-5, 20)]))
    else:  # "fill": a header, then random bytes
        data = data[:8] + rnd.randbytes(rnd.randrange(64))
    return kind, bytes(data)


def make_case(rnd: random.Random, seeds: dict[str, bytes]) -> Case:
    names = sorted(seeds)
    payloads = [seeds[n] for n in names]
    seed = seeds[rnd.choice(names)]
    roll = rnd.random()
    if roll < 0.04:
        return Case("valid", _frame(seed), [seed])
    if roll < 0.10:      # a length prefix that lies
        lie = rnd.choice(["longer", "shorter", "huge", "negative", "zero", "max"])
        length = {"longer": len(seed) + rnd.randint(1, 1000),
                  "shorter": max(0, len(seed) - rnd.randint(1, len(seed))),
                  "huge": rnd.choice([1 << 28, 200_000_000, 104_857_601]),
                  "negative": rnd.choice([-1, -(1 << 31), -4]),
                  "zero": 0, "max": 0x7FFFFFFF}[lie]
        return Case(f"length-{lie}", struct.pack(">i", length) + seed, [])
    if roll < 0.14:      # random bytes behind a length prefix
        blob = rnd.randbytes(rnd.randrange(1, 200))
        if rnd.random() < 0.5:
            blob = b"\x00" + blob        # make it look like Kafka
        return Case("random", _frame(blob), [blob])
    if roll < 0.22:      # pipelined: a valid request, then a mutated one, then another valid one
        kind, bad = mutate(rnd, seed, payloads)
        first, last = seeds["ApiVersions v3"], seeds["Metadata v11"]
        return Case(f"pipelined-{kind}", _frame(first) + _frame(bad) + _frame(last),
                    [first, bad, last])
    kind, bad = mutate(rnd, seed, payloads)
    return Case(kind, _frame(bad), [bad])


def resource_heavy(payload: bytes) -> bool:
    """A request that decodes and asks the broker to assign an absurd number of partitions."""
    try:
        header, body = codec.decode_request(payload)
    except Exception:       # noqa: BLE001 - not decodable: the broker refuses it cheaply
        return False
    if header.api_key == ApiKey.CREATE_TOPICS:
        for topic in body.topics or ():
            if topic.num_partitions > MAX_PARTITIONS_ASKED or (
                    len(topic.assignments or ()) > MAX_PARTITIONS_ASKED):
                return True
    if header.api_key == 37:   # CreatePartitions
        return any(topic.count > MAX_PARTITIONS_ASKED for topic in body.topics or ())
    return False


_CLASSIFY = """
import sys
sys.path.insert(0, sys.argv[1])
from kafka_fuzz_tools import resource_heavy
for index, line in enumerate(sys.stdin):
    if resource_heavy(bytes.fromhex(line.strip())):
        print(index, flush=True)
"""


def heavy_cases(cases: list[Case]) -> tuple[set[int], str | None]:
    """Indices of the cases holding a resource-heavy request, and a problem if classifying them
    killed the process doing it. The decoding runs in a child process: it is the broker's own
    Kafka codec, and a codec bug that aborts the interpreter must show up as a finding, not
    take the fuzzer down with it."""
    import os
    import subprocess
    import sys

    candidates = [(i, payload) for i, case in enumerate(cases) for payload in case.sent
                  if payload[:2] in (b"\x00\x13", b"\x00\x25")]   # CreateTopics, -Partitions
    if not candidates:
        return set(), None
    child = subprocess.run([sys.executable, "-c", _CLASSIFY, os.path.dirname(__file__)],
                           input="".join(p.hex() + "\n" for _, p in candidates),
                           capture_output=True, text=True, timeout=300)
    found = {candidates[int(line)][0] for line in child.stdout.split()}
    if child.returncode != 0:
        # leave out every admin case that could not be classified
        return {i for i, _ in candidates}, (
            f"decoding the fuzz frames with kafkalite's Kafka codec killed a Python process "
            f"(exit {child.returncode}): {child.stderr.strip()[-300:]}")
    return found, None


# --- running a case ------------------------------------------------------------------------------

@dataclass
class Outcome:
    kind: str
    result: str                       # "answered" | "closed" | "silent"
    responses: int = 0
    problem: str | None = None        # a broken invariant, described


def _check_response(request_payload: bytes, response: bytes) -> str | None:
    api_key, version, correlation_id = codec.peek_header(request_payload)
    if len(response) < 4:
        return f"a {len(response)}-byte response"
    (got,) = struct.unpack_from(">i", response)
    if got != correlation_id:
        return f"correlation id {got} answers a request with {correlation_id}"
    if not is_supported(api_key, version):
        if api_key != ApiKey.API_VERSIONS:
            return f"an answer to unsupported {ApiKey.name_of(api_key)} v{version}"
        version = 0          # ApiVersions' answer to an unknown version is v0
    try:
        codec.decode_response(api_key, version, response)
    except Exception as exc:  # noqa: BLE001
        return (f"{ApiKey.name_of(api_key)} v{version} response does not decode: "
                f"{type(exc).__name__}: {exc}")
    return None


def run_case(port: int, case: Case, wait_s: float = 0.5) -> Outcome:
    """Send one case on a fresh connection and read until the broker closes, has answered every
    complete frame, or stays silent for ``wait_s``."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    buf = bytearray()
    frames: list[bytes] = []
    result = "silent"
    try:
        try:
            sock.sendall(case.data)
        except (BrokenPipeError, ConnectionResetError):
            return Outcome(case.kind, "closed")
        deadline = time.monotonic() + wait_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            sock.settimeout(remaining)
            try:
                chunk = sock.recv(1 << 16)
            except socket.timeout:
                break
            except (ConnectionResetError, ConnectionAbortedError):
                result = "closed"
                break
            if not chunk:
                result = "closed"
                break
            buf += chunk
            while len(buf) >= 4:
                (n,) = struct.unpack_from(">i", buf)
                if len(buf) < 4 + n:
                    break
                frames.append(bytes(buf[4:4 + n]))
                del buf[:4 + n]
            if case.sent and len(frames) >= len(case.sent):
                result = "answered"
                break
            if frames:
                deadline = max(deadline, time.monotonic() + wait_s)
    finally:
        sock.close()
    if frames and result != "closed":
        result = "answered"
    outcome = Outcome(case.kind, result, len(frames))
    if buf:
        outcome.problem = f"{len(buf)} bytes of an incomplete response frame"
    elif frames:
        if not case.sent:
            outcome.problem = f"{len(frames)} answer(s) to bytes that hold no complete request"
        else:
            outcome.problem = _match_responses(case.sent, frames)
    return outcome


def _match_responses(sent: list[bytes], frames: list[bytes]) -> str | None:
    """Responses come in request order; a request may go unanswered (acks=0) but never twice."""
    index = 0
    for response in frames:
        if len(response) < 4:
            return f"a {len(response)}-byte response"
        (cid,) = struct.unpack_from(">i", response)
        while index < len(sent) and (
                len(sent[index]) < 8 or codec.peek_header(sent[index])[2] != cid):
            index += 1
        if index == len(sent):
            return f"a response with correlation id {cid} matches no request, in order"
        problem = _check_response(sent[index], response)
        if problem:
            return problem
        index += 1
    return None


@dataclass
class FuzzReport:
    cases: int = 0
    skipped_heavy: int = 0
    seconds: float = 0.0
    results: collections.Counter = field(default_factory=collections.Counter)
    kinds: collections.Counter = field(default_factory=collections.Counter)
    problems: list = field(default_factory=list)     # (case kind, problem, data hex prefix)
    errors: list = field(default_factory=list)       # connection failures (broker down?)

    @property
    def rate(self) -> float:
        return self.cases / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        results = ", ".join(f"{k} {v}" for k, v in sorted(self.results.items()))
        return (f"{self.cases} cases in {self.seconds:.1f} s ({self.rate:.0f} cases/s): "
                f"{results}; {self.skipped_heavy} resource-heavy cases left out; "
                f"{len(self.problems)} problems, {len(self.errors)} connection errors")


def run_fuzz(ports: list[int], topic: str, cases: int, seed: int = 20261122,
             workers: int = 16, wait_s: float = 0.5, time_budget_s: float | None = None,
             progress=None) -> FuzzReport:
    """``cases`` cases, ``workers`` at a time, spread over ``ports``."""
    rnd = random.Random(seed)
    seeds = seed_payloads(topic)
    report = FuzzReport()
    made = [make_case(rnd, seeds) for _ in range(cases)]
    heavy, problem = heavy_cases(made)
    if problem:
        report.problems.append(("classification", None, problem, ""))
    report.skipped_heavy = len(heavy)
    kept = [case for i, case in enumerate(made) if i not in heavy]
    planned = [(ports[i % len(ports)], case) for i, case in enumerate(kept)]
    start = time.monotonic()
    stop_at = None if time_budget_s is None else start + time_budget_s
    lock = threading.Lock()

    def one(item):
        port, case = item
        if stop_at is not None and time.monotonic() > stop_at:
            return None
        try:
            outcome = run_case(port, case, wait_s)
        except OSError as exc:
            with lock:
                report.errors.append((case.kind, port, f"{type(exc).__name__}: {exc}"))
            return None
        with lock:
            report.cases += 1
            report.results[outcome.result] += 1
            report.kinds[case.kind.split("-")[0]] += 1
            if outcome.problem:
                report.problems.append((case.kind, port, outcome.problem, case.data[:64].hex()))
            if progress is not None and report.cases % 500 == 0:
                progress(report)
        return outcome

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, planned))
    report.seconds = time.monotonic() - start
    return report


# --- live clients beside the fuzz ----------------------------------------------------------------

class LiveTraffic:
    """A confluent-kafka producer (acks=all, idempotent) and an assign()-ing consumer, each in a
    thread, on ``topic``; remembers what was acknowledged and what was read."""

    def __init__(self, bootstrap: str, topic: str, partitions: int):
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.acked: dict[bytes, tuple[int, int]] = {}      # value -> (partition, offset)
        self.failed: list = []
        self.sent = 0
        self.consumed: list[tuple[int, int, bytes]] = []
        self.consumer_errors: list = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._produce, daemon=True),
                         threading.Thread(target=self._consume, daemon=True)]

    def start(self) -> "LiveTraffic":
        for t in self._threads:
            t.start()
        return self

    def _produce(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                             "enable.idempotence": True, "linger.ms": 5,
                             "message.timeout.ms": 120000})

        def report(err, msg):
            with self._lock:
                if err is None:
                    self.acked[msg.value()] = (msg.partition(), msg.offset())
                else:
                    self.failed.append((msg.value(), str(err)))

        seq = 0
        while not self._stop.is_set():
            try:
                producer.produce(self.topic, key=b"k%d" % (seq % 16), value=b"live-%08d" % seq,
                                 on_delivery=report)
                seq += 1
                self.sent = seq
            except BufferError:
                producer.poll(0.05)
            producer.poll(0)
            if seq % 50 == 0:
                time.sleep(0.01)
        producer.flush(60)

    def _consume(self) -> None:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "fuzz-unused",
                             "enable.auto.commit": False, "fetch.queue.backoff.ms": 5})
        consumer.assign([TopicPartition(self.topic, p, 0) for p in range(self.partitions)])
        while not self._stop.is_set():
            for message in consumer.consume(500, 0.2):
                if message.error() is None:
                    with self._lock:
                        self.consumed.append((message.partition(), message.offset(),
                                              message.value()))
                else:
                    self.consumer_errors.append(str(message.error()))
        consumer.close()

    def counts(self) -> tuple[int, int]:
        with self._lock:
            return len(self.acked), len(self.consumed)

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(180)


def read_back(bootstrap: str, topic: str, partitions: int, timeout_s: float = 90):
    """Every record of ``topic`` up to the high watermarks: {(partition, offset): value}."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "fuzz-verify",
                         "enable.auto.commit": False, "fetch.queue.backoff.ms": 5})
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(partitions)}
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    records: dict[tuple[int, int], bytes] = {}
    positions = {p: 0 for p in range(partitions)}
    deadline = time.monotonic() + timeout_s
    while any(positions[p] < ends[p] for p in ends) and time.monotonic() < deadline:
        for message in consumer.consume(1000, 0.5):
            if message.error() is None:
                records[(message.partition(), message.offset())] = message.value()
                positions[message.partition()] = message.offset() + 1
    consumer.close()
    return records, ends


def verify_live(live: LiveTraffic, timeout_s: float = 90) -> list[str]:
    """Problems with what the live clients saw: acknowledged records missing, or read twice."""
    records, ends = read_back(live.bootstrap, live.topic, live.partitions, timeout_s)
    problems = []
    where = {value: key for key, value in records.items()}
    missing = [(v, po) for v, po in live.acked.items() if v not in where]
    moved = [(v, po, where[v]) for v, po in live.acked.items() if v in where and where[v] != po]
    if missing:
        problems.append(f"{len(missing)} acknowledged records are missing (high watermarks "
                        f"{ends}): {missing[:3]}")
    if moved:
        problems.append(f"{len(moved)} records are at another offset than acknowledged: "
                        f"{moved[:3]}")
    values = list(records.values())
    duplicates = len(values) - len(set(values))
    if duplicates:
        problems.append(f"{duplicates} duplicate records")
    return problems


def broker_answers_metadata(port: int, timeout_s: float = 10.0) -> bool:
    """A Kafka-protocol Metadata v11 round trip on a fresh connection."""
    payload = codec.encode_request(3, 11, 99, "probe", {
        "topics": None, "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(_frame(payload))
        header = _recv_exact(sock, 4)
        (n,) = struct.unpack(">i", header)
        cid, body = codec.decode_response(3, 11, _recv_exact(sock, n))
    return cid == 99 and len(body.brokers) > 0


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return bytes(data)


# --- the brokers' own account --------------------------------------------------------------------

def log_sizes(log_paths: list[str]) -> dict[str, int]:
    import os

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
