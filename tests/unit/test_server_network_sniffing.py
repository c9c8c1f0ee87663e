"""BrokerProtocol's first-frame sniffing and its Kafka-protocol path, driven through a
StringTransport with a fake native handler and a fake Kafka handler (no network, no broker)."""

import struct

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet import defer
from twisted.internet.testing import StringTransport

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.envelope import decode_response as native_decode_response
from kafkalite.protocol.envelope import encode_request as native_encode_request
from kafkalite.protocol.framing import encode_frame
from kafkalite.protocol.kafka import codec
from kafkalite.protocol.kafka.versions import supported_versions
from kafkalite.server.kafka_apis import KafkaProtocolApis
from kafkalite.server.network import BrokerProtocol, sniff_protocol

FAST = settings(deadline=None, max_examples=150, derandomize=True)


class NativeHandler:
    def __init__(self):
        self.requests = []
        self.opened = self.closed = 0

    def connection_opened(self, protocol):
        self.opened += 1

    def connection_closed(self, protocol):
        self.closed += 1

    def handle(self, header, request, protocol):
        self.requests.append(request)
        return m.ApiVersionsResponse()


class KafkaHandler:
    """Answers like the broker's KafkaProtocolApis would; ``script`` overrides per correlation."""

    api_versions_dict = staticmethod(KafkaProtocolApis.api_versions_dict)

    def __init__(self):
        self.calls = []          # (api_key, api_version, request)
        self.deferreds = {}      # api_key -> list of Deferreds handed out
        self.behaviour = {}      # api_key -> "defer" | "raise" | "kafka-error" | "bad-response"

    def handle(self, api_key, api_version, request, connection):
        self.calls.append((api_key, api_version, request))
        what = self.behaviour.get(api_key)
        if what == "defer":
            d = defer.Deferred()
            self.deferreds.setdefault(api_key, []).append(d)
            return d
        if what == "raise":
            raise RuntimeError("handler bug")
        if what == "kafka-error":
            raise errors.NotControllerError("not the controller")
        if what == "bad-response":
            return {"throttle_time": 0}        # Metadata without its required fields
        return answer(api_key)


def answer(api_key):
    if api_key == ApiKey.API_VERSIONS:
        return KafkaProtocolApis.api_versions_dict()
    if api_key == ApiKey.METADATA:
        return {"throttle_time": 0, "brokers": [{"node_id": 1, "host": "h", "port": 9092,
                                                  "rack": None}],
                "cluster_id": "c", "controller_id": 1, "topics": []}
    if api_key == ApiKey.PRODUCE:
        return {"throttle_time": 0, "responses": [{"name": "t", "partition_responses": [
            {"index": 0, "error_code": 0, "base_offset": 42, "log_append_time": -1,
             "log_start_offset": 0, "record_errors": []}]}]}
    raise AssertionError(api_key)


def connect(kafka_handler="default"):
    native = NativeHandler()
    kafka = KafkaHandler() if kafka_handler == "default" else kafka_handler
    protocol = BrokerProtocol(native, 1 << 20, kafka)
    transport = StringTransport()
    protocol.makeConnection(transport)
    return native, kafka, protocol, transport


def feed_bytewise(protocol, data):
    for i in range(len(data)):
        protocol.dataReceived(data[i:i + 1])


# --- Kafka frames --------------------------------------------------------------------------------

def api_versions(correlation_id, version=3):
    values = ({"client_software_name": "test", "client_software_version": "1"}
              if version >= 3 else {})
    return encode_frame(codec.encode_request(ApiKey.API_VERSIONS, version, correlation_id,
                                             "t", values))


def metadata(correlation_id, version=11):
    values = {"topics": None, "allow_auto_topic_creation": False,
              "include_cluster_authorized_operations": False,
              "include_topic_authorized_operations": False}
    return encode_frame(codec.encode_request(ApiKey.METADATA, version, correlation_id, "t",
                                             values))


def produce(correlation_id, acks=-1, version=9):
    values = {"transactional_id": None, "acks": acks, "timeout": 1000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": b"batch"}]}]}
    return encode_frame(codec.encode_request(ApiKey.PRODUCE, version, correlation_id, "t",
                                             values))


def raw_kafka_frame(api_key, version, correlation_id, body=b""):
    """A frame with only the fixed header start: enough for versions nobody can parse."""
    return encode_frame(struct.pack(">hhi", api_key, version, correlation_id) + b"\x00\x01t"
                        + body)


def kafka_responses(transport, expected):
    """Decode every response frame written; ``expected`` is [(api_key, version), ...]."""
    data = transport.value()
    out, pos = [], 0
    for api_key, version in expected:
        assert len(data) >= pos + 4, f"only {len(out)} responses, expected {len(expected)}"
        (n,) = struct.unpack_from(">i", data, pos)
        out.append(codec.decode_response(api_key, version, data[pos + 4:pos + 4 + n]))
        pos += 4 + n
    assert pos == len(data), "more bytes than the expected responses"
    return out


# --- sniffing ------------------------------------------------------------------------------------

@pytest.mark.parametrize("first", range(256))
def test_sniff_protocol_by_first_byte(first):
    expected = ("kafka" if first == 0 else
                "native" if 0x90 <= first <= 0x9F or first in (0xDC, 0xDD) else None)
    assert sniff_protocol(first) == expected


def test_kafka_frame_fed_one_byte_at_a_time_takes_the_kafka_path():
    native, kafka, protocol, transport = connect()
    feed_bytewise(protocol, api_versions(7))
    assert protocol.protocol_name == "kafka"
    [(cid, response)] = kafka_responses(transport, [(ApiKey.API_VERSIONS, 3)])
    assert cid == 7 and response.error_code.value == 0
    ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert ranges == supported_versions()
    assert native.requests == [] and [c[:2] for c in kafka.calls] == [(ApiKey.API_VERSIONS, 3)]
    assert not transport.disconnecting


def _native_frame_with_header_byte(first_byte):
    """A native ApiVersions request whose msgpack array header is ``first_byte``."""
    items = [int(ApiKey.API_VERSIONS), 0, 9, "t", {}]
    elements = b"".join(msgpack.packb(item, use_bin_type=True) for item in items)
    header = {0xDC: b"\xdc\x00\x05", 0xDD: b"\xdd\x00\x00\x00\x05"}.get(first_byte,
                                                                        bytes([first_byte]))
    return encode_frame(header + elements)


@pytest.mark.parametrize("first_byte", [0x95, 0xDC, 0xDD])
def test_msgpack_array_headers_take_the_native_path(first_byte):
    native, kafka, protocol, transport = connect()
    feed_bytewise(protocol, _native_frame_with_header_byte(first_byte))
    assert protocol.protocol_name == "native"
    assert len(native.requests) == 1 and kafka.calls == []
    cid, response = native_decode_response(transport.value()[4:], ApiKey.API_VERSIONS)
    assert cid == 9 and isinstance(response, m.ApiVersionsResponse)
    assert not transport.disconnecting


@pytest.mark.parametrize("first_byte", [b for b in range(0x90, 0xA0) if b != 0x95])
def test_other_fixarray_lengths_are_native_frames_with_a_bad_envelope(first_byte):
    native, kafka, protocol, transport = connect()
    protocol.dataReceived(encode_frame(bytes([first_byte]) + b"\x01" * (first_byte - 0x90)))
    assert protocol.protocol_name == "native"
    assert native.requests == [] and kafka.calls == []
    assert transport.disconnecting          # an unreadable native envelope closes


@pytest.mark.parametrize("first_byte", [b for b in range(256)
                                        if b not in (0, 0xDC, 0xDD) and not 0x90 <= b <= 0x9F])
def test_any_other_first_byte_closes_the_connection(first_byte):
    native, kafka, protocol, transport = connect()
    feed_bytewise(protocol, encode_frame(bytes([first_byte]) + b"\x12\x00\x03\x00\x00\x00\x01"))
    assert transport.disconnecting and transport.value() == b""
    assert native.requests == [] and kafka.calls == []


def test_an_empty_first_frame_closes_the_connection():
    native, kafka, protocol, transport = connect()
    protocol.dataReceived(encode_frame(b""))
    assert transport.disconnecting and transport.value() == b""


def test_kafka_frames_without_a_kafka_handler_close_the_connection():
    native, _, protocol, transport = connect(kafka_handler=None)
    protocol.dataReceived(api_versions(1))
    assert transport.disconnecting and transport.value() == b""


def test_the_first_frame_decides_for_the_whole_connection():
    native, kafka, protocol, transport = connect()
    protocol.dataReceived(api_versions(1))
    # a native frame on a Kafka connection is read as Kafka: api key 0x95xx is unknown -> close
    protocol.dataReceived(native_encode_request(m.ApiVersionsRequest(), 0, 2, "t"))
    assert transport.disconnecting and native.requests == []
    [(cid, _)] = kafka_responses(transport, [(ApiKey.API_VERSIONS, 3)])
    assert cid == 1


@FAST
@given(cuts=st.lists(st.integers(0, 400), max_size=12))
def test_any_chunking_of_a_pipelined_kafka_stream_gives_the_same_answers(cuts):
    stream = api_versions(1) + metadata(2) + produce(3) + metadata(4, version=1)
    native, kafka, protocol, transport = connect()
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    for a, b in zip(points, points[1:]):
        protocol.dataReceived(stream[a:b])
    answers = kafka_responses(transport, [(ApiKey.API_VERSIONS, 3), (ApiKey.METADATA, 11),
                                          (ApiKey.PRODUCE, 9), (ApiKey.METADATA, 1)])
    assert [cid for cid, _ in answers] == [1, 2, 3, 4]
    assert answers[2][1].responses[0].partition_responses[0].base_offset == 42
    assert not transport.disconnecting


# --- versions ------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", [4, 5, 127, 32767, -1])
def test_unsupported_api_versions_version_gets_v0_with_error_35_and_the_ranges(version):
    native, kafka, protocol, transport = connect()
    # a newer client's ApiVersions (header v2, tagged fields we cannot know) fed byte by byte
    feed_bytewise(protocol, raw_kafka_frame(ApiKey.API_VERSIONS, version, 77,
                                            b"\x00\x05test\x021\x00"))
    [(cid, response)] = kafka_responses(transport, [(ApiKey.API_VERSIONS, 0)])
    assert cid == 77
    assert response.error_code.value == errors.UnsupportedVersionError.code == 35
    assert {k.api_key: (k.min_version, k.max_version) for k in response.api_keys} == \
        supported_versions()
    assert kafka.calls == [] and not transport.disconnecting
    # the client retries with a version from the ranges, on the same connection
    transport.clear()
    protocol.dataReceived(api_versions(78))
    [(cid, response)] = kafka_responses(transport, [(ApiKey.API_VERSIONS, 3)])
    assert cid == 78 and response.error_code.value == 0


@pytest.mark.parametrize("api_key,version", [(ApiKey.METADATA, 12), (ApiKey.METADATA, -1),
                                             (ApiKey.PRODUCE, 2), (ApiKey.FETCH, 13),
                                             (4, 0), (99, 0), (255, 0)])
def test_an_unsupported_version_of_another_api_closes_only_that_connection(api_key, version):
    native, kafka, protocol, transport = connect()
    _, other_kafka, other, other_transport = connect()
    protocol.dataReceived(raw_kafka_frame(api_key, version, 5))
    assert transport.disconnecting and transport.value() == b"" and kafka.calls == []
    other.dataReceived(metadata(6))
    [(cid, _)] = kafka_responses(other_transport, [(ApiKey.METADATA, 11)])
    assert cid == 6 and not other_transport.disconnecting


def test_an_earlier_answer_still_waits_for_its_turn_before_an_unsupported_api_versions():
    native, kafka, protocol, transport = connect()
    kafka.behaviour[ApiKey.METADATA] = "defer"
    protocol.dataReceived(metadata(1) + raw_kafka_frame(ApiKey.API_VERSIONS, 9, 2))
    assert transport.value() == b""
    kafka.deferreds[ApiKey.METADATA][0].callback(answer(ApiKey.METADATA))
    answers = kafka_responses(transport, [(ApiKey.METADATA, 11), (ApiKey.API_VERSIONS, 0)])
    assert [cid for cid, _ in answers] == [1, 2]
    assert answers[1][1].error_code.value == 35


# --- failures stay on their connection -----------------------------------------------------------

@pytest.mark.parametrize("behaviour", ["raise", "kafka-error", "bad-response"])
def test_a_handler_failure_closes_only_that_connection(behaviour):
    native, kafka, protocol, transport = connect()
    _, other_kafka, other, other_transport = connect()
    kafka.behaviour[ApiKey.METADATA] = behaviour
    protocol.dataReceived(api_versions(1) + metadata(2) + api_versions(3))
    assert transport.disconnecting
    # the answer before the failure went out; nothing after it
    [(cid, _)] = kafka_responses(transport, [(ApiKey.API_VERSIONS, 3)])
    assert cid == 1
    assert [c[0] for c in kafka.calls] == [ApiKey.API_VERSIONS, ApiKey.METADATA]
    other.dataReceived(metadata(4))
    [(cid, _)] = kafka_responses(other_transport, [(ApiKey.METADATA, 11)])
    assert cid == 4 and not other_transport.disconnecting


def test_a_failed_deferred_closes_the_connection_and_later_answers_are_dropped():
    native, kafka, protocol, transport = connect()
    kafka.behaviour[ApiKey.METADATA] = "defer"
    protocol.dataReceived(metadata(1) + metadata(2))
    first, second = kafka.deferreds[ApiKey.METADATA]
    first.errback(RuntimeError("lost the metadata"))
    assert transport.disconnecting
    second.callback(answer(ApiKey.METADATA))
    assert transport.value() == b""


@pytest.mark.parametrize("body", [b"", b"\xff" * 3, b"\x00\x00\x00\x05ab",
                                  b"\x7f\xff\xff\xff"])
def test_a_supported_version_with_an_unreadable_body_closes_the_connection(body):
    native, kafka, protocol, transport = connect()
    protocol.dataReceived(raw_kafka_frame(ApiKey.METADATA, 4, 1, body))
    assert transport.disconnecting and kafka.calls == [] and transport.value() == b""


def test_a_short_kafka_header_closes_the_connection():
    native, kafka, protocol, transport = connect()
    protocol.dataReceived(encode_frame(b"\x00\x12\x00"))
    assert transport.disconnecting and transport.value() == b""


# --- ordering and acks=0 -------------------------------------------------------------------------

def test_pipelined_requests_are_answered_in_order_when_the_first_completes_last():
    native, kafka, protocol, transport = connect()
    kafka.behaviour[ApiKey.METADATA] = "defer"
    kafka.behaviour[ApiKey.PRODUCE] = "defer"
    feed_bytewise(protocol, metadata(1) + produce(2) + api_versions(3) + metadata(4))
    assert transport.value() == b""              # 3 is ready but waits behind 1 and 2
    meta1, meta4 = kafka.deferreds[ApiKey.METADATA]
    [produce2] = kafka.deferreds[ApiKey.PRODUCE]
    meta4.callback(answer(ApiKey.METADATA))
    produce2.callback(answer(ApiKey.PRODUCE))
    assert transport.value() == b""              # 1 still pending holds back everything
    meta1.callback(answer(ApiKey.METADATA))
    answers = kafka_responses(transport, [(ApiKey.METADATA, 11), (ApiKey.PRODUCE, 9),
                                          (ApiKey.API_VERSIONS, 3), (ApiKey.METADATA, 11)])
    assert [cid for cid, _ in answers] == [1, 2, 3, 4]
    assert not transport.disconnecting


def test_acks_zero_produce_gets_no_response():
    native, kafka, protocol, transport = connect()
    kafka.behaviour[ApiKey.METADATA] = "defer"
    protocol.dataReceived(metadata(1) + produce(2, acks=0) + produce(3, acks=1))
    assert [c[0] for c in kafka.calls] == [ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.PRODUCE]
    assert kafka.calls[1][2].acks == 0
    kafka.deferreds[ApiKey.METADATA][0].callback(answer(ApiKey.METADATA))
    answers = kafka_responses(transport, [(ApiKey.METADATA, 11), (ApiKey.PRODUCE, 9)])
    assert [cid for cid, _ in answers] == [1, 3]     # nothing for correlation id 2


@pytest.mark.parametrize("behaviour", ["raise", "defer-fail"])
def test_a_failed_acks_zero_produce_sends_nothing(behaviour):
    native, kafka, protocol, transport = connect()
    kafka.behaviour[ApiKey.PRODUCE] = "raise" if behaviour == "raise" else "defer"
    protocol.dataReceived(produce(1, acks=0))
    if behaviour == "defer-fail":
        kafka.deferreds[ApiKey.PRODUCE][0].errback(RuntimeError("append failed"))
    assert transport.value() == b""
    protocol.dataReceived(api_versions(2))
    [(cid, _)] = kafka_responses(transport, [(ApiKey.API_VERSIONS, 3)])
    assert cid == 2


def test_connection_open_and_close_reach_the_handler():
    native, kafka, protocol, transport = connect()
    assert native.opened == 1
    protocol.dataReceived(encode_frame(b"\x42"))
    assert transport.disconnecting
    protocol.connectionLost(None)
    assert native.closed == 1
