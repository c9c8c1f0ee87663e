"""Kafka's wire protocol codecs (kafkalite.protocol.kafka): request round trips for every API and
version the broker advertises, response headers, malformed frames, and ``entities.build``.

Everything here is pure: frames are built with ``codec.encode_request`` and read back with
``codec.decode_request``; bad bytes must give InvalidRequestError and nothing else.
"""

import dataclasses
import datetime
import struct
import subprocess
import sys
import typing
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from kafkalite.errors import InvalidRequestError
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka import codec
from kafkalite.protocol.kafka.entities import build, field_names, millis, topic_uuid
from kafkalite.server.api_table import kafka_ranges as supported_versions

FAST = settings(deadline=None, max_examples=300, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

SUPPORTED = [(api_key, version) for api_key, (low, high) in sorted(supported_versions().items())
             for version in range(low, high + 1)]

_INT_BOUNDS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


# --- building request values from kio's schema classes -------------------------------------------

def _unwrap(annotation):
    """(annotation without ``| None``, whether None is allowed)."""
    if typing.get_origin(annotation) in (typing.Union, type(int | None)):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0], True
    return annotation, False


def minimal_values(cls) -> dict:
    """A value for every field of ``cls`` (one element in every array, so nesting is exercised)."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        annotation, _optional = _unwrap(hints[f.name])
        kafka_type = f.metadata.get("kafka_type")
        if typing.get_origin(annotation) is tuple:
            inner = typing.get_args(annotation)[0]
            out[f.name] = ([minimal_values(inner)] if dataclasses.is_dataclass(inner)
                           else [_scalar(kafka_type)])
        elif dataclasses.is_dataclass(annotation):
            out[f.name] = minimal_values(annotation)
        else:
            out[f.name] = _scalar(kafka_type)
    return out


def _scalar(kafka_type):
    return {"string": "x", "bool": True, "records": b"rec", "bytes": b"b", "uuid": None,
            "timedelta_i32": 5, "timedelta_i64": 5, "datetime_i64": 1000,
            "error_code": 0}.get(kafka_type, 1)


def _scalar_strategy(kafka_type, optional):
    if kafka_type in _INT_BOUNDS:
        bits = _INT_BOUNDS[kafka_type]
        base = st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    elif kafka_type == "bool":
        base = st.booleans()
    elif kafka_type == "string":
        base = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
    elif kafka_type in ("bytes", "records"):
        base = st.binary(max_size=12)
    elif kafka_type in ("timedelta_i32", "timedelta_i64"):
        base = st.integers(0, (1 << 31) - 1)
    elif kafka_type == "float64":          # client quotas' values (NaN never equals itself)
        base = st.floats(allow_nan=False)
    elif kafka_type == "uuid":
        return st.none() | st.uuids().filter(lambda u: u.int != 0)
    else:
        raise AssertionError(f"no strategy for {kafka_type}")
    return (st.none() | base) if optional else base


def values_strategy(cls):
    hints = typing.get_type_hints(cls)
    fields = {}
    for f in dataclasses.fields(cls):
        annotation, optional = _unwrap(hints[f.name])
        kafka_type = f.metadata.get("kafka_type")
        if typing.get_origin(annotation) is tuple:
            inner = typing.get_args(annotation)[0]
            item = (values_strategy(inner) if dataclasses.is_dataclass(inner)
                    else _scalar_strategy(kafka_type, False))
            strategy = st.lists(item, max_size=3)
            if optional:
                strategy = st.none() | strategy
        elif dataclasses.is_dataclass(annotation):
            strategy = values_strategy(annotation)
            if optional:
                strategy = st.none() | strategy
        else:
            strategy = _scalar_strategy(kafka_type, optional)
        fields[f.name] = strategy
    return st.fixed_dictionaries(fields)


def _zero_uuids_as_none(entity):
    """kio reads the all-zero UUID as None and writes None as the all-zero UUID."""
    if isinstance(entity, tuple):
        return tuple(_zero_uuids_as_none(e) for e in entity)
    if not dataclasses.is_dataclass(entity):
        return None if isinstance(entity, uuid.UUID) and entity.int == 0 else entity
    return dataclasses.replace(entity, **{
        f.name: _zero_uuids_as_none(getattr(entity, f.name)) for f in dataclasses.fields(entity)})


def _assert_round_trip(api_key, version, values, correlation_id=7, client_id="client-1"):
    cls = codec.request_class(api_key, version)
    payload = codec.encode_request(api_key, version, correlation_id, client_id, values)
    header, body = codec.decode_request(payload)
    assert header == codec.KafkaRequestHeader(api_key, version, correlation_id, client_id)
    assert isinstance(body, cls)
    assert body == _zero_uuids_as_none(build(cls, values))
    # the decoded entity encodes to the very same bytes
    assert codec.encode_request(api_key, version, correlation_id, client_id, body) == payload
    return payload


def _valid_frames():
    return {(k, v): codec.encode_request(k, v, 1, "c", minimal_values(codec.request_class(k, v)))
            for k, v in SUPPORTED}


FRAMES = _valid_frames()


# --- request round trips -------------------------------------------------------------------------

def test_the_advertised_set_is_kafka_28s_client_apis():
    table = supported_versions()
    assert table[ApiKey.API_VERSIONS] == (0, 3)
    assert table[ApiKey.METADATA][1] == 11 and table[ApiKey.PRODUCE][1] == 9
    assert table[ApiKey.FETCH][1] == 12
    # broker-only APIs are never offered to Kafka clients
    for broker_only in (4, 5, 6, 7):
        assert broker_only not in table


@pytest.mark.parametrize("api_key,version", SUPPORTED,
                         ids=[f"{ApiKey.name_of(k)}-v{v}" for k, v in SUPPORTED])
def test_every_supported_request_round_trips(api_key, version):
    cls = codec.request_class(api_key, version)
    for client_id in ("client-1", None, ""):
        _assert_round_trip(api_key, version, minimal_values(cls), client_id=client_id)
    # the header version follows the body's flexibility (v2 carries tagged fields)
    assert cls.__header_schema__.__name__ == "RequestHeader"
    assert cls.__header_schema__.__module__.split(".")[-2] == ("v2" if cls.__flexible__ else "v1")


@FAST
@given(data=st.data())
def test_random_values_round_trip_for_every_api_and_version(data):
    api_key, version = data.draw(st.sampled_from(SUPPORTED))
    values = data.draw(values_strategy(codec.request_class(api_key, version)))
    correlation_id = data.draw(st.integers(-(1 << 31), (1 << 31) - 1))
    client_id = data.draw(st.none() | st.text(st.characters(blacklist_categories=("Cs",)),
                                              max_size=10))
    _assert_round_trip(api_key, version, values, correlation_id, client_id)


def test_produce_records_stay_opaque_bytes():
    batch = bytes(range(256)) * 3
    values = {"transactional_id": None, "acks": -1, "timeout": 30000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": batch},
                                         {"index": 1, "records": None}]}]}
    for version in (3, 8, 9):
        payload = _assert_round_trip(ApiKey.PRODUCE, version, values)
        _, body = codec.decode_request(payload)
        assert bytes(body.topic_data[0].partition_data[0].records) == batch
        assert body.topic_data[0].partition_data[1].records is None
        assert millis(body.timeout) == 30000


def test_peek_header_reads_the_fixed_start_of_any_version():
    payload = codec.encode_request(ApiKey.METADATA, 11, 1234, "c", {
        "topics": None, "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})
    assert codec.peek_header(payload) == (ApiKey.METADATA, 11, 1234)
    # a version kafkalite cannot parse still has a readable start
    assert codec.peek_header(struct.pack(">hhi", 18, 99, -5)) == (18, 99, -5)
    for short in (b"", b"\x00", b"\x00\x12\x00\x03\x00\x00\x00"):
        with pytest.raises(InvalidRequestError):
            codec.peek_header(short)


@pytest.mark.parametrize("api_key,version", [(18, 4), (18, -1), (3, 12), (0, 2), (1, 13),
                                             (99, 0), (-1, 0), (4, 0), (8, 9), (47, 1)])
def test_unsupported_api_or_version_is_outside_the_table(api_key, version):
    # the pipeline refuses these before decoding (tests/unit/test_server_network_sniffing.py)
    bounds = supported_versions().get(api_key)
    assert bounds is None or not bounds[0] <= version <= bounds[1]


@pytest.mark.parametrize("api_key,version", [(99, 0), (-1, 0), (18, 99)])
def test_a_request_kio_does_not_know_is_an_invalid_request(api_key, version):
    with pytest.raises(InvalidRequestError, match="not a request kio knows"):
        codec.decode_request(struct.pack(">hhi", api_key, version, 1) + b"\x00\x01c" + b"\x00" * 8)


# --- response headers ----------------------------------------------------------------------------

def minimal_response(api_key, version):
    return minimal_values(codec.response_class(api_key, version))


def _body_bytes(cls, values):
    import io
    buf = io.BytesIO()
    entity_writer(cls)(buf, build(cls, values))
    return buf.getvalue()


@pytest.mark.parametrize("api_key,version", SUPPORTED,
                         ids=[f"{ApiKey.name_of(k)}-v{v}" for k, v in SUPPORTED])
def test_response_header_v0_or_v1(api_key, version):
    cls = codec.response_class(api_key, version)
    values = minimal_response(api_key, version)
    payload = codec.encode_response(api_key, version, 0x01020304, values)
    assert payload[:4] == b"\x01\x02\x03\x04"
    body = _body_bytes(cls, values)
    if cls.__flexible__ and api_key != ApiKey.API_VERSIONS:
        # header v1: the correlation id, then an empty tagged-field section
        assert payload[4:5] == b"\x00" and payload[5:] == body
    else:
        # header v0 (ApiVersions always: a client reads it before it knows our versions)
        assert payload[4:] == body
    correlation_id, decoded = codec.decode_response(api_key, version, payload)
    assert correlation_id == 0x01020304
    assert decoded == _zero_uuids_as_none(build(cls, values))


def test_api_versions_v3_is_flexible_but_answers_with_header_v0():
    cls = codec.response_class(ApiKey.API_VERSIONS, 3)
    assert cls.__flexible__
    values = {"error_code": 0, "throttle_time": 0,
              "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 3}]}
    payload = codec.encode_response(ApiKey.API_VERSIONS, 3, 9, values)
    assert payload == struct.pack(">i", 9) + _body_bytes(cls, values)
    metadata = codec.encode_response(ApiKey.METADATA, 9, 9, {"throttle_time": 0, "brokers": [],
                                                             "topics": []})
    assert metadata[4] == 0   # Metadata v9 (flexible): header v1's empty tag section


# --- malformed frames ----------------------------------------------------------------------------

@pytest.mark.parametrize("api_key,version", SUPPORTED,
                         ids=[f"{ApiKey.name_of(k)}-v{v}" for k, v in SUPPORTED])
def test_trailing_bytes_are_ignored_and_every_truncation_is_invalid(api_key, version):
    frame = FRAMES[(api_key, version)]
    whole = codec.decode_request(frame)
    for extra in (b"\x00", b"\xff" * 7, b"\x80\x80\x80"):
        # as Kafka's parser does (librdkafka 2.x's all-topics Metadata v11 has three extra bytes)
        assert codec.decode_request(frame + extra) == whole
    for cut in range(len(frame)):
        with pytest.raises(InvalidRequestError):
            codec.decode_request(frame[:cut])


def _uvarint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# Frames whose array declares ~2**32 elements in a few bytes. kio's native reader sizes its
# list from the count before reading an element: the allocation failed and the process aborted.
_LYING_COMPACT_ARRAYS = {
    "metadata v9 topics": struct.pack(">hhi", 3, 9, 1) + b"\x00\x01c\x00" + _uvarint(0xFFFFFFFF),
    "metadata v11 topics": struct.pack(">hhi", 3, 11, 1) + b"\x00\x01c\x00" + _uvarint(0xFFFFFFF0),
    "api versions v3 tags": struct.pack(">hhi", 18, 3, 1) + b"\x00\x01c" + _uvarint(0xFFFFFFFF),
    "produce v9 topics": (struct.pack(">hhi", 0, 9, 1) + b"\x00\x01c\x00" + b"\x00"
                          + struct.pack(">hi", 1, 1000) + _uvarint(0xFFFFFFFF)),
    "fetch v12 partitions": (struct.pack(">hhi", 1, 12, 1) + b"\x00\x01c\x00"
                             + struct.pack(">iiiib", -1, 0, 1, 1 << 20, 0)
                             + struct.pack(">ii", 0, -1) + _uvarint(2) + _uvarint(2) + b"t"
                             + _uvarint(0xFFFFFFFF)),
    "create topics v7 primitive array": None,   # filled below: assignments' broker ids
}


def _lying_create_topics():
    frame = bytearray(codec.encode_request(19, 7, 1, "c", {
        "topics": [{"name": "t", "num_partitions": -1, "replication_factor": -1,
                    "assignments": [{"partition_index": 0, "broker_ids": [1]}],
                    "configs": []}], "timeout": 1000, "validate_only": True}))
    # the broker_ids compact array [1] is encoded as 0x02 0x00000001: make it claim 2**32-2
    marker = bytes([0x02]) + struct.pack(">i", 1)
    at = frame.index(marker)
    return bytes(frame[:at]) + _uvarint(0xFFFFFFFF) + bytes(frame[at + 1:])


_LYING_COMPACT_ARRAYS["create topics v7 primitive array"] = _lying_create_topics()


@pytest.mark.parametrize("case", sorted(_LYING_COMPACT_ARRAYS))
def test_a_lying_compact_array_count_is_invalid_not_fatal(case):
    """Run in a child: before the fix, this input aborted the interpreter (Rust OOM abort)."""
    frame = _LYING_COMPACT_ARRAYS[case]
    script = ("import sys\n"
              "from kafkalite.errors import InvalidRequestError\n"
              "from kafkalite.protocol.kafka import codec\n"
              "try:\n"
              "    codec.decode_request(bytes.fromhex(sys.argv[1]))\n"
              "except InvalidRequestError as exc:\n"
              "    print('invalid:', exc.message)\n"
              "else:\n"
              "    print('decoded')\n")
    child = subprocess.run([sys.executable, "-c", script, frame.hex()], capture_output=True,
                           text=True, timeout=120)
    assert child.returncode == 0, f"decoder died ({child.returncode}): {child.stderr[-500:]}"
    assert child.stdout.startswith("invalid:"), child.stdout


@pytest.mark.parametrize("version", [1, 5, 6])
def test_a_null_array_where_the_schema_forbids_null_is_invalid(version):
    """kio reads a null array as None whatever the schema says; Kafka refuses it, and handlers
    iterate these arrays, so the codec refuses it too."""
    flexible = codec.request_class(ApiKey.LIST_OFFSETS, version).__flexible__
    header = struct.pack(">hhi", ApiKey.LIST_OFFSETS, version, 1) + b"\x00\x01c"
    body = struct.pack(">i", -1) + (b"\x00" if version >= 2 else b"")
    null = b"\x00" if flexible else struct.pack(">i", -1)
    frame = header + (b"\x00" if flexible else b"") + body + null + (b"\x00" if flexible else b"")
    with pytest.raises(InvalidRequestError, match="non-nullable array topics is null"):
        codec.decode_request(frame)
    # the same frame with an empty array is fine
    empty = b"\x01" if flexible else struct.pack(">i", 0)
    _, decoded = codec.decode_request(frame.replace(body + null, body + empty))
    assert decoded.topics == ()


@pytest.mark.parametrize("version", [1, 4, 9, 11])
def test_a_null_array_where_the_schema_allows_it_still_decodes(version):
    values = {"topics": None, "allow_auto_topic_creation": True,
              "include_cluster_authorized_operations": False,
              "include_topic_authorized_operations": False}
    _, body = codec.decode_request(codec.encode_request(ApiKey.METADATA, version, 1, "c", values))
    assert body.topics is None


def test_long_arrays_of_small_elements_still_decode():
    """The check is 'no more elements than bytes left', not a cap: big valid arrays pass."""
    values = {"topics": [{"name": "", "topic_id": None}] * 2000, "allow_auto_topic_creation": False,
              "include_topic_authorized_operations": False}
    payload = _assert_round_trip(ApiKey.METADATA, 11, values)
    # each topic is a null id (16 zero bytes), an empty compact name and an empty tag section
    assert payload.endswith(_uvarint(2001) + (bytes(16) + b"\x01\x00") * 2000 + b"\x00" * 3)
    fetch = {"replica_id": -1, "max_wait": 500, "min_bytes": 1, "max_bytes": 1 << 20,
             "isolation_level": 0, "session_id": 0, "session_epoch": -1,
             "topics": [{"topic": "t", "partitions": [
                 {"partition": p, "current_leader_epoch": -1, "fetch_offset": p,
                  "last_fetched_epoch": -1, "log_start_offset": -1,
                  "partition_max_bytes": 1 << 20} for p in range(1000)]}],
             "forgotten_topics_data": [], "rack_id": ""}
    _assert_round_trip(ApiKey.FETCH, 12, fetch)


def _decodes_or_is_invalid(payload):
    try:
        codec.decode_request(payload)
    except InvalidRequestError:
        return False
    return True


@FAST
@given(st.binary(max_size=200))
def test_random_bytes_are_invalid_requests_never_another_error(data):
    _decodes_or_is_invalid(data)


@FAST
@given(key=st.sampled_from(SUPPORTED), tail=st.binary(max_size=120),
       correlation_id=st.integers(-(1 << 31), (1 << 31) - 1))
def test_random_bodies_behind_a_valid_header_never_raise_another_error(key, tail,
                                                                       correlation_id):
    api_key, version = key
    flexible = codec.request_class(api_key, version).__flexible__
    header = struct.pack(">hhi", api_key, version, correlation_id) + b"\x00\x01c"
    _decodes_or_is_invalid(header + (b"\x00" if flexible else b"") + tail)


_MUTATION = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 1 << 16), st.integers(0, 7)),
    st.tuples(st.just("set"), st.integers(0, 1 << 16), st.integers(0, 255)),
    st.tuples(st.just("int32"), st.integers(0, 1 << 16),
              st.sampled_from([0x7FFFFFFF, -1, -2, 0x40000000, 0x01000000, 1 << 20, 255])),
    st.tuples(st.just("varint"), st.integers(0, 1 << 16),
              st.sampled_from([0xFFFFFFFF, 0xFFFFFFF0, 1 << 28, 1 << 21, 300])),
    st.tuples(st.just("insert"), st.integers(0, 1 << 16), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("delete"), st.integers(0, 1 << 16), st.integers(1, 8)),
    st.tuples(st.just("truncate"), st.integers(0, 1 << 16), st.just(0)),
)


def mutate(frame: bytes, mutations) -> bytes:
    data = bytearray(frame)
    for kind, where, arg in mutations:
        if not data:
            break
        at = where % len(data)
        if kind == "flip":
            data[at] ^= 1 << arg
        elif kind == "set":
            data[at] = arg
        elif kind == "int32":
            data[at:at + 4] = struct.pack(">i", arg)
        elif kind == "varint":
            data[at:at + 1] = _uvarint(arg)
        elif kind == "insert":
            data[at:at] = arg
        elif kind == "delete":
            del data[at:at + arg]
        else:
            del data[at:]
    return bytes(data)


@FAST
@given(key=st.sampled_from(sorted(FRAMES)), mutations=st.lists(_MUTATION, min_size=1, max_size=4),
       splice=st.none() | st.tuples(st.sampled_from(sorted(FRAMES)), st.integers(0, 1 << 16)))
def test_mutated_valid_frames_never_raise_another_error(key, mutations, splice):
    frame = mutate(FRAMES[key], mutations)
    if splice is not None:
        other = FRAMES[splice[0]]
        frame = frame[:splice[1] % (len(frame) + 1)] + other[splice[1] % len(other):]
    _decodes_or_is_invalid(frame)


# --- entities.build ------------------------------------------------------------------------------

def _metadata_union():
    """One dict with the union of every Metadata response version's fields."""
    return {
        "throttle_time": 0, "cluster_id": "cid", "controller_id": 2,
        "cluster_authorized_operations": -(1 << 31),
        "brokers": [{"node_id": 1, "host": "h", "port": 9092, "rack": None}],
        "topics": [{"error_code": 0, "name": "t", "topic_id": None, "is_internal": False,
                    "topic_authorized_operations": -(1 << 31),
                    "partitions": [{"error_code": 0, "partition_index": 0, "leader_id": 1,
                                    "leader_epoch": 4, "replica_nodes": [1, 2],
                                    "isr_nodes": [1], "offline_replicas": [2]}]}],
    }


@pytest.mark.parametrize("version", range(0, 12))
def test_build_drops_fields_the_version_lacks(version):
    cls = codec.response_class(ApiKey.METADATA, version)
    entity = build(cls, _metadata_union())
    names = field_names(cls)
    assert ("throttle_time" in names) == (version >= 3)
    assert ("cluster_id" in names) == (version >= 2)
    partition = entity.topics[0].partitions[0]
    assert hasattr(partition, "leader_epoch") == (version >= 7)
    assert hasattr(partition, "offline_replicas") == (version >= 5)
    assert hasattr(entity.topics[0], "topic_id") == (version >= 10)
    assert partition.replica_nodes == (1, 2) and partition.isr_nodes == (1,)
    assert entity.brokers[0].port == 9092
    # and it encodes for that version
    codec.encode_response(ApiKey.METADATA, version, 1, _metadata_union())


def test_build_takes_schema_defaults_for_missing_optional_fields():
    produce = codec.response_class(ApiKey.PRODUCE, 9)
    entity = build(produce, {"responses": [{"name": "t", "partition_responses": [
        {"index": 0, "error_code": 0, "base_offset": 5, "record_errors": []}]}]})
    assert entity.throttle_time == datetime.timedelta(0)
    partition = entity.responses[0].partition_responses[0]
    assert partition.log_append_time is None and partition.log_start_offset == -1
    assert partition.error_message is None
    create = codec.request_class(ApiKey.CREATE_TOPICS, 7)
    assert build(create, {"topics": []}).timeout == datetime.timedelta(seconds=60)


def test_build_without_a_required_field_raises_key_error_naming_it():
    cls = codec.response_class(ApiKey.PRODUCE, 9)
    with pytest.raises(KeyError, match="PartitionProduceResponse.*'base_offset'"):
        build(cls, {"responses": [{"name": "t", "partition_responses": [
            {"index": 0, "error_code": 0, "record_errors": []}]}]})
    with pytest.raises(KeyError, match="'responses'"):
        codec.encode_response(ApiKey.PRODUCE, 9, 1, {"throttle_time": 0})


def test_build_error_codes():
    cls = codec.response_class(ApiKey.API_VERSIONS, 0)
    for code, expected in ((0, ErrorCode(0)), (35, ErrorCode(35)), (None, ErrorCode(0)),
                           (-1, ErrorCode.unknown_server_error),
                           (9999, ErrorCode.unknown_server_error)):
        entity = build(cls, {"error_code": code, "api_keys": []})
        assert entity.error_code is expected, code
    # an already-typed code passes through
    assert build(cls, {"error_code": ErrorCode(3), "api_keys": []}).error_code == ErrorCode(3)


def test_build_millis_and_datetimes():
    produce = codec.response_class(ApiKey.PRODUCE, 9)

    def partition(log_append_time):
        entity = build(produce, {"throttle_time": 250, "responses": [{
            "name": "t", "partition_responses": [{
                "index": 0, "error_code": 0, "base_offset": 0, "record_errors": [],
                "log_append_time": log_append_time}]}]})
        assert entity.throttle_time == datetime.timedelta(milliseconds=250)
        return entity.responses[0].partition_responses[0].log_append_time

    assert partition(-1) is None          # Kafka's "no log append time" (CreateTime topics)
    assert partition(None) is None
    assert partition(0) == datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    assert partition(1_700_000_000_123) == datetime.datetime(
        2023, 11, 14, 22, 13, 20, 123000, tzinfo=datetime.timezone.utc)
    # and -1 goes back out on the wire as -1
    payload = codec.encode_response(ApiKey.PRODUCE, 9, 1, {"responses": [{
        "name": "t", "partition_responses": [{"index": 0, "error_code": 0, "base_offset": 0,
                                              "record_errors": [], "log_append_time": -1}]}]})
    _, decoded = codec.decode_response(ApiKey.PRODUCE, 9, payload)
    assert decoded.responses[0].partition_responses[0].log_append_time is None
    assert millis(datetime.timedelta(seconds=2, microseconds=5500)) == 2005
    assert millis(datetime.timedelta(days=1)) == 86_400_000
    assert millis(17) == 17


def test_build_topic_ids():
    raw = uuid.UUID("0123456789abcdef0123456789abcdef")
    import base64
    text = base64.urlsafe_b64encode(raw.bytes).decode().rstrip("=")
    assert topic_uuid(text) == raw
    assert topic_uuid(None) == uuid.UUID(int=0) and topic_uuid("") == uuid.UUID(int=0)
    assert topic_uuid("not base64!!") == uuid.UUID(int=0)
    assert topic_uuid("AAAA") == uuid.UUID(int=0)            # decodes, but not 16 bytes
    cls = codec.response_class(ApiKey.METADATA, 11)
    values = _metadata_union()
    for given_id, expected in ((text, raw), (raw, raw), (None, uuid.UUID(int=0))):
        values["topics"][0]["topic_id"] = given_id
        assert build(cls, values).topics[0].topic_id == expected


def test_build_passes_entities_through_and_makes_tuples():
    cls = codec.response_class(ApiKey.METADATA, 11)
    entity = build(cls, _metadata_union())
    assert build(cls, entity) is entity
    assert isinstance(entity.topics, tuple) and isinstance(entity.brokers, tuple)
    assert isinstance(entity.topics[0].partitions[0].replica_nodes, tuple)


def test_none_in_a_field_an_older_version_cannot_null_goes_out_empty():
    # JoinGroup's protocol_name is nullable only from v7: a MEMBER_ID_REQUIRED answer to a v5
    # client once failed to encode, dropping librdkafka's connection on every join
    values = {"throttle_time": 0, "error_code": 79, "generation_id": -1, "protocol_type": None,
              "protocol_name": None, "leader": "", "member_id": "m-1", "members": []}
    _, v5 = codec.decode_response(11, 5, codec.encode_response(11, 5, 1, values))
    _, v7 = codec.decode_response(11, 7, codec.encode_response(11, 7, 1, values))
    assert (v5.protocol_name, v7.protocol_name, v7.protocol_type) == ("", None, None)
