"""Kafka-protocol side of the broker fuzz (tests/system/test_protocol_fuzz.py,
bench/protocol_fuzz.py; no test functions here): seeds, mutations, and what a right answer is.

Seeds are valid request frames built with kafkalite's own Kafka codec (kio's schema-generated
classes), as a client would send them: ApiVersions, Metadata, Produce with a real v2 batch (built
by kafka-python's record builder), Fetch, ListOffsets, OffsetForLeaderEpoch, InitProducerId,
DescribeConfigs, DescribeCluster, and the writing admin APIs made harmless (CreateTopics,
CreatePartitions and the two AlterConfigs with validate_only, DeleteRecords of the fuzz topic,
DeleteTopics of a topic that does not exist), in flexible and older versions. Each case mutates
them (bit flips, byte sets, truncations, lying or huge length prefixes, extreme int32s and
varints, unknown API keys and versions, splices, insertions, deletions, pipelining). What the
broker owes each case is decided by kio's own readers (fuzz_kio), not by the broker's codec: an
answer to each frame Kafka parses, in order, with its correlation id, decoding (kio) as its API's
response; a close only at a frame Kafka closes on. It must never die.
"""

from __future__ import annotations

import random
import struct
import time
from functools import lru_cache

from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka import codec

from fuzz_frames import KAFKA, Case, frame
from fuzz_kio import Expectation


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


# --- what a right answer is ----------------------------------------------------------------------

def check_kafka(expected: Expectation, frames: list[bytes]) -> str | None:
    """The answers against what Kafka would send (fuzz_kio.expect, from kio's reading of each
    frame): in request order, each with its request's correlation id, each decoding (kio) as
    its API's response; nothing answered that Kafka closes on."""
    for i, response in enumerate(frames):
        if i >= len(expected.answers):
            if expected.unjudged:
                return None
            return (f"answer {i + 1} to a connection whose frames Kafka answers "
                    f"{len(expected.answers)} times (then it closes)")
        want = expected.answers[i]
        if len(response) < 4:
            return f"a {len(response)}-byte response"
        (got,) = struct.unpack_from(">i", response)
        name = ApiKey.name_of(want.api_key)
        if got != want.correlation_id:
            return (f"correlation id {got} answers {name} v{want.version} with "
                    f"{want.correlation_id} (out of order or made up)")
        problem = _decodes(want.api_key, want.version, response)
        if problem:
            return f"{name} v{want.version} response does not decode (kio): {problem}"
    return None


@lru_cache(maxsize=None)
def _response_reader(api_key: int, version: int):
    from kio.index import load_response_schema
    from kio.schema.response_header.v0.header import ResponseHeader as V0
    from kio.schema.response_header.v1.header import ResponseHeader as V1
    from kio.serial import entity_reader

    try:
        cls = load_response_schema(api_key, version)
    except Exception:  # noqa: BLE001 - kio has no schema (Fetch v0-v3)
        return None
    header = V0 if api_key == ApiKey.API_VERSIONS or not cls.__flexible__ else V1
    return entity_reader(header), entity_reader(cls)


#: the delegation-token APIs, whose error answers carry timestamps of -1 (Kafka 2.8's
#: CreateDelegationTokenResponse.prepareResponse(throttle, error, owner) and the others alike),
#: which kio refuses to read ("Cannot parse negative timestamp")
_TOKEN_APIS = frozenset({ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN,
                         ApiKey.EXPIRE_DELEGATION_TOKEN, ApiKey.DESCRIBE_DELEGATION_TOKEN})


def _decodes(api_key: int, version: int, payload: bytes) -> str | None:
    readers = _response_reader(api_key, version)
    if readers is None:
        return None
    view = memoryview(payload)
    offset = 0
    try:
        _, offset = readers[0](view, 0)
        readers[1](view, offset)
    except Exception as exc:  # noqa: BLE001
        if _kafkas_own_no_time(api_key, payload, offset, exc):
            return None
        return f"{type(exc).__name__}: {exc}"
    return None


def _kafkas_own_no_time(api_key: int, payload: bytes, body_at: int, exc: Exception) -> bool:
    """kio's refusal of a -1 timestamp in a delegation-token error answer: what Kafka itself
    sends, so not the broker's fault. Only an error answer (a non-zero error code, the first
    field of each of these bodies) may carry it."""
    if api_key not in _TOKEN_APIS or "negative timestamp" not in str(exc):
        return False
    if body_at <= 0 or len(payload) < body_at + 2:
        return False
    (error_code,) = struct.unpack_from(">h", payload, body_at)
    return error_code != 0


def metadata_request(correlation_id: int = 99) -> bytes:
    """A whole Kafka Metadata v11 request frame asking for every topic."""
    return frame(codec.encode_request(3, 11, correlation_id, "probe", {
        "topics": None, "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False}))


def metadata_response(payload: bytes):
    """(correlation id, body) of a Kafka Metadata v11 response frame payload, read by kio."""
    return response_with_id(3, 11, payload)


def response_with_id(api_key: int, version: int, payload: bytes):
    """(correlation id, body) of a response frame payload, read by kio."""
    header_reader, body_reader = _response_reader(api_key, version)
    view = memoryview(payload)
    header, offset = header_reader(view, 0)
    body, _ = body_reader(view, offset)
    return header.correlation_id, body


def response_body(api_key: int, version: int, payload: bytes):
    return response_with_id(api_key, version, payload)[1]


def api_ranges(port: int, timeout_s: float = 10.0) -> dict[int, tuple[int, int]]:
    """{api key: (min, max version)} as the broker on ``port`` announces them in its ApiVersions
    v0 answer (read by kio): the versions Kafka's rule says it serves, the rest it closes on."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(frame(codec.encode_request(18, 0, 77, "probe", {})))
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("closed before answering ApiVersions")
            data += chunk
    header_reader, body_reader = _response_reader(18, 0)
    view = memoryview(data[4:])
    _, offset = header_reader(view, 0)
    body, _ = body_reader(view, offset)
    return {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
