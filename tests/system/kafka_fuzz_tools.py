"""Kafka-protocol side of the broker fuzz (tests/system/test_protocol_fuzz.py,
bench/protocol_fuzz.py; no test functions here): seeds, mutations, and what a right answer is.

Seeds are valid request frames built with kafkalite's own Kafka codec (kio's schema-generated
classes), as a client would send them: ApiVersions, Metadata, Produce with a real v2 batch (built
by kafka-python's record builder), Fetch, ListOffsets, OffsetForLeaderEpoch, InitProducerId,
DescribeConfigs, DescribeCluster, and the writing admin APIs made harmless (CreateTopics,
CreatePartitions and the two AlterConfigs with validate_only, DeleteRecords of the fuzz topic,
DeleteTopics of a topic that does not exist), in flexible and older versions. Each case mutates
them (bit flips, byte sets, truncations, lying or huge length prefixes, extreme int32s and
varints, unknown API keys and versions, splices, insertions, deletions, pipelining). The broker
may answer, close, or wait for bytes that never come; it must never die, answer with a frame that
does not decode, or answer with another request's correlation id.
"""

from __future__ import annotations

import os
import random
import struct
import time

from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka import codec
from kafkalite.server.api_table import kafka_ranges

from fuzz_frames import KAFKA, Case, complete_frames, frame, sniff

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
    name = rnd.choice(names)
    seed = seeds[name]
    roll = rnd.random()
    if roll < 0.04:
        return Case(KAFKA, "valid", frame(seed), seed=name)
    if roll < 0.10:      # a length prefix that lies
        lie = rnd.choice(["longer", "shorter", "huge", "negative", "zero", "max"])
        length = {"longer": len(seed) + rnd.randint(1, 1000),
                  "shorter": max(0, len(seed) - rnd.randint(1, len(seed))),
                  "huge": rnd.choice([1 << 28, 200_000_000, 104_857_601]),
                  "negative": rnd.choice([-1, -(1 << 31), -4]),
                  "zero": 0, "max": 0x7FFFFFFF}[lie]
        return Case(KAFKA, f"length-{lie}", struct.pack(">i", length) + seed, seed=name)
    if roll < 0.14:      # random bytes behind a length prefix
        blob = rnd.randbytes(rnd.randrange(1, 200))
        if rnd.random() < 0.5:
            blob = b"\x00" + blob        # make it look like Kafka
        return Case(KAFKA, "random", frame(blob), seed=name)
    if roll < 0.22:      # pipelined: a valid request, then a mutated one, then another valid one
        kind, bad = mutate(rnd, seed, payloads)
        first, last = seeds["ApiVersions v3"], seeds["Metadata v11"]
        return Case(KAFKA, f"pipelined-{kind}", frame(first) + frame(bad) + frame(last),
                    seed=name)
    kind, bad = mutate(rnd, seed, payloads)
    return Case(KAFKA, kind, frame(bad), seed=name)


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


IMPORT_ATTEMPTS = 5
_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_CLASSIFY = """
import sys
sys.path.insert(0, sys.argv[1])
from kafka_fuzz_tools import resource_heavy
print("ready", flush=True)
for index, line in enumerate(sys.stdin):
    if resource_heavy(bytes.fromhex(line.strip())):
        print(index, flush=True)
"""


def heavy_cases(cases: list[Case]) -> tuple[set[int], str | None]:
    """Indices of the cases holding a resource-heavy request, and a problem if classifying them
    killed the process doing it. The decoding runs in a child process: it is the broker's own
    Kafka codec, and a codec bug that aborts the interpreter must show up as a finding, not
    take the fuzzer down with it."""
    import subprocess
    import sys

    candidates = []
    for i, case in enumerate(cases):
        sent = complete_frames(case.data)
        if sent and sniff(sent[0]) == KAFKA:      # CreateTopics, CreatePartitions
            candidates += [(i, payload) for payload in sent
                           if payload[:2] in (b"\x00\x13", b"\x00\x25")]
    if not candidates:
        return set(), None
    for attempt in range(IMPORT_ATTEMPTS):
        child = subprocess.run([sys.executable, "-c", _CLASSIFY, os.path.dirname(__file__)],
                               input="".join(p.hex() + "\n" for _, p in candidates),
                               capture_output=True, text=True, timeout=300, cwd=_REPO)
        lines = child.stdout.split()
        if lines[:1] == ["ready"]:
            break
        # kafkalite itself did not import (the working tree caught mid-edit?): not a finding
        time.sleep(1 + attempt)
    else:
        raise RuntimeError(f"the classifying child could not import kafkalite: "
                           f"{child.stderr.strip()[-500:]}")
    found = {candidates[int(line)][0] for line in lines[1:]}
    if child.returncode != 0:
        # leave out every admin case that could not be classified
        return {i for i, _ in candidates}, (
            f"decoding the fuzz frames with kafkalite's Kafka codec killed a Python process "
            f"(exit {child.returncode}): {child.stderr.strip()[-300:]}")
    return found, None


# --- what a right answer is ----------------------------------------------------------------------

def check_kafka(sent: list[bytes], frames: list[bytes]) -> str | None:
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


def _check_response(request_payload: bytes, response: bytes) -> str | None:
    api_key, version, correlation_id = codec.peek_header(request_payload)
    (got,) = struct.unpack_from(">i", response)
    if got != correlation_id:
        return f"correlation id {got} answers a request with {correlation_id}"
    bounds = kafka_ranges().get(api_key)
    if bounds is None or not bounds[0] <= version <= bounds[1]:
        if api_key != ApiKey.API_VERSIONS:
            return f"an answer to unsupported {ApiKey.name_of(api_key)} v{version}"
        version = 0          # ApiVersions' answer to an unknown version is v0
    try:
        codec.decode_response(api_key, version, response)
    except Exception as exc:  # noqa: BLE001
        return (f"{ApiKey.name_of(api_key)} v{version} response does not decode: "
                f"{type(exc).__name__}: {exc}")
    return None


def metadata_request(correlation_id: int = 99) -> bytes:
    """A whole Kafka Metadata v11 request frame asking for every topic."""
    return frame(codec.encode_request(3, 11, correlation_id, "probe", {
        "topics": None, "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False}))


def metadata_response(payload: bytes):
    """(correlation id, body) of a Kafka Metadata v11 response frame payload."""
    return codec.decode_response(3, 11, payload)
