"""BrokerProtocol's first-frame sniffing and its Kafka-protocol path, driven through a
StringTransport with the real codecs and dispatcher over a table of scripted handlers (no
network, no broker)."""

import struct

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline_driver import (Script, connect, feed_bytewise, kafka_frame, native_frame,
                             read_kafka_responses, table_of)

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.envelope import decode_response as native_decode_response
from kafkalite.protocol.framing import encode_frame
from kafkalite.protocol.kafka.convert import Converter
from kafkalite.protocol.kafka.convert import cluster as cluster_convert
from kafkalite.protocol.kafka.convert import data as data_convert
from kafkalite.server import api_table
from kafkalite.server.api_table import ApiSpec
from kafkalite.server.dispatch import ApiDispatcher
from kafkalite.server.network import sniff_protocol

FAST = settings(deadline=None, max_examples=150, derandomize=True)


# --- a small table: converted Metadata, Produce and Fetch ----------------------------------------
# Metadata's and Produce's converters below are the tests' own (the real ones belong to their
# families): just enough of each API to carry the fields these tests look at. Fetch's is the real
# one (``protocol.kafka.convert.data.FETCH``).

def _metadata_request(entity, version):
    topics = None if entity.topics is None else [t.name for t in entity.topics]
    auto_create = getattr(entity, "allow_auto_topic_creation", True)    # v4+
    return m.MetadataRequest(topics=topics, allow_auto_topic_creation=bool(auto_create))


def _metadata_response(r: m.MetadataResponse, version):
    return {"throttle_time": r.throttle_time_ms, "cluster_id": r.cluster_id,
            "controller_id": r.controller_id,
            "brokers": [{"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                        for b in r.brokers],
            "topics": [{"error_code": t.error_code, "name": t.name, "topic_id": t.topic_id,
                        "is_internal": False, "partitions": []} for t in r.topics]}


def _produce_request(entity, version):
    return m.ProduceRequest(
        transactional_id=entity.transactional_id, acks=entity.acks,
        timeout_ms=int(entity.timeout.total_seconds() * 1000),
        topic_data={t.name: {p.index: bytes(p.records or b"") for p in t.partition_data}
                    for t in entity.topic_data})


def _produce_response(r: m.ProduceResponse, version):
    return {"throttle_time": r.throttle_time_ms, "responses": [
        {"name": topic, "partition_responses": [
            {"index": p, "error_code": pr.error_code, "error_message": pr.error_message,
             "base_offset": pr.base_offset, "log_append_time": pr.log_append_time,
             "log_start_offset": pr.log_start_offset, "record_errors": []}
            for p, pr in partitions.items()]}
        for topic, partitions in r.responses.items()]}


METADATA_CONVERTER = Converter(_metadata_request, _metadata_response)
PRODUCE_CONVERTER = Converter(_produce_request, _produce_response)

METADATA_ANSWER = m.MetadataResponse(brokers=[m.MetadataBroker(1, "h", 9092)], cluster_id="c",
                                     controller_id=1)
FETCH_ANSWER = m.FetchResponse(responses=[m.FetchTopicResponse("t", [
    m.FetchPartitionResponse(0, 0, high_watermark=5, last_stable_offset=5, log_start_offset=0)])])


def _produce_answer(ctx, request: m.ProduceRequest):
    return m.ProduceResponse(responses={
        t: {p: m.ProducePartitionResponse(0, base_offset=42, log_start_offset=0) for p in ps}
        for t, ps in request.topic_data.items()})


class Pipeline:
    """One dispatcher over the small table, and its script."""

    def __init__(self):
        self.script = script = Script()
        self.table = table_of([
            ApiSpec(ApiKey.API_VERSIONS, 3, script.handler(self._versions),
                    cluster_convert.API_VERSIONS),
            ApiSpec(ApiKey.METADATA, 11, script.handler(lambda ctx, r: METADATA_ANSWER),
                    METADATA_CONVERTER),
            ApiSpec(ApiKey.PRODUCE, 9, script.handler(_produce_answer), PRODUCE_CONVERTER),
            ApiSpec(ApiKey.FETCH, 12, script.handler(lambda ctx, r: FETCH_ANSWER),
                    data_convert.FETCH, native=False),
        ])
        self.dispatcher = ApiDispatcher(None, table=self.table)

    def _versions(self, ctx, request):
        ranges = (api_table.native_ranges(self.table) if ctx.protocol == "native"
                  else api_table.kafka_ranges(self.table))
        return m.ApiVersionsResponse(api_versions=[m.ApiVersionRange(k, low, high)
                                                   for k, (low, high) in ranges.items()])

    def connect(self):
        return connect(self.dispatcher)


def pipeline():
    p = Pipeline()
    protocol, transport = p.connect()
    return p.script, protocol, transport, p


# --- Kafka frames --------------------------------------------------------------------------------

def api_versions(correlation_id, version=3):
    values = ({"client_software_name": "test", "client_software_version": "1"}
              if version >= 3 else {})
    return kafka_frame(ApiKey.API_VERSIONS, version, correlation_id, values, "t")


def metadata(correlation_id, version=11, topics=None):
    values = {"topics": None if topics is None else [{"name": t, "topic_id": None}
                                                     for t in topics],
              "allow_auto_topic_creation": False,
              "include_cluster_authorized_operations": False,
              "include_topic_authorized_operations": False}
    return kafka_frame(ApiKey.METADATA, version, correlation_id, values, "t")


def produce(correlation_id, acks=-1, version=9):
    values = {"transactional_id": None, "acks": acks, "timeout": 1000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": b"batch"}]}]}
    return kafka_frame(ApiKey.PRODUCE, version, correlation_id, values, "t")


def fetch(correlation_id, version=12):
    values = {"replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
              "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                  {"topic": "t", "partitions": [
                      {"partition": p, "current_leader_epoch": -1, "fetch_offset": 7,
                       "last_fetched_epoch": -1, "log_start_offset": -1,
                       "partition_max_bytes": 1024} for p in (0, 1)]}],
              "forgotten_topics_data": [], "rack_id": ""}
    return kafka_frame(ApiKey.FETCH, version, correlation_id, values, "t")


def raw_kafka_frame(api_key, version, correlation_id, body=b""):
    """A frame with only the fixed header start: enough for versions nobody can parse."""
    return encode_frame(struct.pack(">hhi", api_key, version, correlation_id) + b"\x00\x01t"
                        + body)


def cids(answers):
    return [cid for cid, _ in answers]


# --- sniffing ------------------------------------------------------------------------------------

@pytest.mark.parametrize("first", range(256))
def test_sniff_protocol_by_first_byte(first):
    expected = ("kafka" if first == 0 else
                "native" if 0x90 <= first <= 0x9F or first in (0xDC, 0xDD) else None)
    assert sniff_protocol(first) == expected


def test_kafka_frame_fed_one_byte_at_a_time_takes_the_kafka_path():
    script, protocol, transport, p = pipeline()
    feed_bytewise(protocol, api_versions(7))
    assert protocol.protocol_name == "kafka"
    [(cid, response)] = read_kafka_responses(transport, [(ApiKey.API_VERSIONS, 3)])
    assert cid == 7 and response.error_code.value == 0
    ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert ranges == api_table.kafka_ranges(p.table)
    [call] = script.calls
    assert (call.ctx.protocol, call.ctx.api_key, call.ctx.api_version) == \
        ("kafka", ApiKey.API_VERSIONS, 3)
    assert call.ctx.client_id == "t" and isinstance(call.request, m.ApiVersionsRequest)
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
    script, protocol, transport, p = pipeline()
    feed_bytewise(protocol, _native_frame_with_header_byte(first_byte))
    assert protocol.protocol_name == "native"
    [call] = script.calls
    assert call.ctx.protocol == "native" and isinstance(call.request, m.ApiVersionsRequest)
    cid, response = native_decode_response(transport.value()[4:], ApiKey.API_VERSIONS)
    assert cid == 9 and isinstance(response, m.ApiVersionsResponse)
    assert {(v.api_key, v.min_version, v.max_version) for v in response.api_versions} == \
        {(k, low, high) for k, (low, high) in api_table.native_ranges(p.table).items()}
    assert not transport.disconnecting


@pytest.mark.parametrize("first_byte", [b for b in range(0x90, 0xA0) if b != 0x95])
def test_other_fixarray_lengths_are_native_frames_with_a_bad_envelope(first_byte):
    script, protocol, transport, _ = pipeline()
    protocol.dataReceived(encode_frame(bytes([first_byte]) + b"\x01" * (first_byte - 0x90)))
    assert protocol.protocol_name == "native"
    assert script.calls == []
    assert transport.disconnecting          # an unreadable native envelope closes


@pytest.mark.parametrize("first_byte", [b for b in range(256)
                                        if b not in (0, 0xDC, 0xDD) and not 0x90 <= b <= 0x9F])
def test_any_other_first_byte_closes_the_connection(first_byte):
    script, protocol, transport, _ = pipeline()
    feed_bytewise(protocol, encode_frame(bytes([first_byte]) + b"\x12\x00\x03\x00\x00\x00\x01"))
    assert transport.disconnecting and transport.value() == b""
    assert script.calls == []


def test_an_empty_first_frame_closes_the_connection():
    script, protocol, transport, _ = pipeline()
    protocol.dataReceived(encode_frame(b""))
    assert transport.disconnecting and transport.value() == b""


def test_the_first_frame_decides_for_the_whole_connection():
    script, protocol, transport, _ = pipeline()
    protocol.dataReceived(api_versions(1))
    # a native frame on a Kafka connection is read as Kafka: api key 0x95xx is unknown -> close
    protocol.dataReceived(native_frame(m.ApiVersionsRequest(), 2, client_id="t"))
    assert transport.disconnecting and len(script.calls) == 1
    [(cid, _)] = read_kafka_responses(transport, [(ApiKey.API_VERSIONS, 3)])
    assert cid == 1


@FAST
@given(cuts=st.lists(st.integers(0, 400), max_size=12))
def test_any_chunking_of_a_pipelined_kafka_stream_gives_the_same_answers(cuts):
    stream = api_versions(1) + metadata(2) + produce(3) + metadata(4, version=1) + fetch(5)
    script, protocol, transport, _ = pipeline()
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    for a, b in zip(points, points[1:]):
        protocol.dataReceived(stream[a:b])
    answers = read_kafka_responses(transport, [
        (ApiKey.API_VERSIONS, 3), (ApiKey.METADATA, 11), (ApiKey.PRODUCE, 9),
        (ApiKey.METADATA, 1), (ApiKey.FETCH, 12)])
    assert cids(answers) == [1, 2, 3, 4, 5]
    assert answers[2][1].responses[0].partition_responses[0].base_offset == 42
    assert not transport.disconnecting


def test_the_converter_gives_the_handler_the_model():
    script, protocol, transport, _ = pipeline()
    protocol.dataReceived(produce(1, acks=1) + metadata(2, topics=["a", "b"]) + fetch(3))
    produce_call, metadata_call, fetch_call = script.calls
    assert produce_call.request == m.ProduceRequest(acks=1, timeout_ms=1000,
                                                    topic_data={"t": {0: b"batch"}})
    assert metadata_call.request == m.MetadataRequest(topics=["a", "b"],
                                                      allow_auto_topic_creation=False)
    assert fetch_call.request == m.FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
        topics=[m.FetchTopic("t", [m.FetchPartition(0, 7, 1024), m.FetchPartition(1, 7, 1024)])],
        session_id=0, session_epoch=-1, rack_id="")   # Fetch v12: client metadata, no rack


# --- versions ------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", [4, 5, 127, 32767, -1])
def test_unsupported_api_versions_version_gets_v0_with_error_35_and_the_ranges(version):
    script, protocol, transport, p = pipeline()
    # a newer client's ApiVersions (header v2, tagged fields we cannot know) fed byte by byte
    feed_bytewise(protocol, raw_kafka_frame(ApiKey.API_VERSIONS, version, 77,
                                            b"\x00\x05test\x021\x00"))
    [(cid, response)] = read_kafka_responses(transport, [(ApiKey.API_VERSIONS, 0)])
    assert cid == 77
    assert response.error_code.value == errors.UnsupportedVersionError.code == 35
    assert {k.api_key: (k.min_version, k.max_version) for k in response.api_keys} == \
        api_table.kafka_ranges(p.table)
    assert script.calls == [] and not transport.disconnecting
    # the client retries with a version from the ranges, on the same connection
    protocol.dataReceived(api_versions(78))
    [(cid, response)] = read_kafka_responses(transport, [(ApiKey.API_VERSIONS, 3)])
    assert cid == 78 and response.error_code.value == 0


@pytest.mark.parametrize("api_key,version", [(ApiKey.METADATA, 12), (ApiKey.METADATA, -1),
                                             (ApiKey.PRODUCE, 2), (ApiKey.FETCH, 13),
                                             (4, 0), (99, 0), (255, 0)])
def test_an_unsupported_version_of_another_api_closes_only_that_connection(api_key, version):
    script, protocol, transport, p = pipeline()
    other, other_transport = p.connect()
    protocol.dataReceived(raw_kafka_frame(api_key, version, 5))
    assert transport.disconnecting and transport.value() == b"" and script.calls == []
    other.dataReceived(metadata(6))
    [(cid, _)] = read_kafka_responses(other_transport, [(ApiKey.METADATA, 11)])
    assert cid == 6 and not other_transport.disconnecting


def test_an_api_served_only_natively_closes_a_kafka_connection():
    p = Pipeline()
    p.table[ApiKey.LIST_OFFSETS] = ApiSpec(ApiKey.LIST_OFFSETS, None,
                                           p.script.handler(lambda ctx, r: None))
    protocol, transport = p.connect()
    protocol.dataReceived(raw_kafka_frame(ApiKey.LIST_OFFSETS, 6, 1))
    assert transport.disconnecting and transport.value() == b"" and p.script.calls == []


def test_an_earlier_answer_still_waits_for_its_turn_before_an_unsupported_api_versions():
    script, protocol, transport, _ = pipeline()
    script.behaviour[ApiKey.METADATA] = "defer"
    protocol.dataReceived(metadata(1) + raw_kafka_frame(ApiKey.API_VERSIONS, 9, 2))
    assert transport.value() == b""
    script.deferreds[ApiKey.METADATA][0].callback(METADATA_ANSWER)
    answers = read_kafka_responses(transport, [(ApiKey.METADATA, 11), (ApiKey.API_VERSIONS, 0)])
    assert cids(answers) == [1, 2]
    assert answers[1][1].error_code.value == 35


# --- failures: the request's error response, or (bad answers) a close ---------------------------

@pytest.mark.parametrize("failure, code", [
    (RuntimeError("handler bug"), errors.UnknownServerError.code),
    (errors.NotControllerError("not the controller"), errors.NotControllerError.code)])
def test_a_failing_handler_answers_with_the_requests_error_response(failure, code):
    script, protocol, transport, _ = pipeline()
    script.behaviour[ApiKey.METADATA] = failure
    protocol.dataReceived(api_versions(1) + metadata(2, topics=["a", "b"]) + api_versions(3))
    answers = read_kafka_responses(transport, [(ApiKey.API_VERSIONS, 3), (ApiKey.METADATA, 11),
                                               (ApiKey.API_VERSIONS, 3)])
    assert cids(answers) == [1, 2, 3]
    topics = answers[1][1].topics
    assert [(t.name, t.error_code.value) for t in topics] == [("a", code), ("b", code)]
    assert not transport.disconnecting


def test_a_failed_deferred_answers_with_the_error_response_in_its_turn():
    script, protocol, transport, _ = pipeline()
    script.behaviour[ApiKey.METADATA] = "defer"
    protocol.dataReceived(metadata(1, topics=["t"]) + metadata(2))
    [first] = script.deferreds[ApiKey.METADATA]     # 2 waits, not yet served, behind 1
    assert transport.value() == b""
    first.errback(errors.LeaderNotAvailableError("lost the metadata"))
    script.deferreds[ApiKey.METADATA][1].callback(METADATA_ANSWER)
    answers = read_kafka_responses(transport, [(ApiKey.METADATA, 11), (ApiKey.METADATA, 11)])
    assert cids(answers) == [1, 2]
    assert [t.error_code.value for t in answers[0][1].topics] == \
        [errors.LeaderNotAvailableError.code]
    assert answers[1][1].cluster_id == "c" and not transport.disconnecting


@pytest.mark.parametrize("failure, code", [
    ("raise", errors.UnknownServerError.code),
    ("kafka-error", errors.NotControllerError.code),
    ("defer-fail", errors.UnknownServerError.code)])
def test_a_failing_fetch_handler_answers_with_fetchs_error_response(failure, code):
    """As Kafka: every partition of the request and the top level carry the error, in the
    request's turn, and the connection stays open; another connection is not affected."""
    script, protocol, transport, p = pipeline()
    other, other_transport = p.connect()
    script.behaviour[ApiKey.FETCH] = {"raise": RuntimeError("handler bug"),
                                      "kafka-error": errors.NotControllerError("no"),
                                      "defer-fail": "defer"}[failure]
    protocol.dataReceived(api_versions(1) + fetch(2) + api_versions(3))
    if failure == "defer-fail":
        [(cid, _)] = read_kafka_responses(transport, [(ApiKey.API_VERSIONS, 3)])
        assert cid == 1                                 # 3 waits behind 2
        script.deferreds[ApiKey.FETCH][0].errback(RuntimeError("lost"))
        answers = read_kafka_responses(transport, [(ApiKey.FETCH, 12), (ApiKey.API_VERSIONS, 3)])
        assert cids(answers) == [2, 3]
        answer = answers[0][1]
    else:
        answers = read_kafka_responses(transport, [(ApiKey.API_VERSIONS, 3), (ApiKey.FETCH, 12),
                                                   (ApiKey.API_VERSIONS, 3)])
        assert cids(answers) == [1, 2, 3]
        answer = answers[1][1]
    assert answer.error_code.value == code
    assert [(t.topic, p.partition_index, p.error_code.value)
            for t in answer.responses for p in t.partitions] == [("t", 0, code), ("t", 1, code)]
    assert not transport.disconnecting
    script.behaviour.pop(ApiKey.FETCH)                  # the connection still serves Fetch
    protocol.dataReceived(fetch(4))
    [(cid, answer)] = read_kafka_responses(transport, [(ApiKey.FETCH, 12)])
    assert cid == 4 and answer.responses[0].partitions[0].high_watermark == 5
    other.dataReceived(metadata(5))
    [(cid, _)] = read_kafka_responses(other_transport, [(ApiKey.METADATA, 11)])
    assert cid == 5 and not other_transport.disconnecting


#: Answers the handlers' models allow but kio cannot write.
UNENCODABLE = {
    ApiKey.METADATA: m.MetadataResponse(brokers=[m.MetadataBroker(1, "h", port="not a port")]),
    ApiKey.FETCH: m.FetchResponse(responses=[m.FetchTopicResponse("t", [
        m.FetchPartitionResponse(0, 0, high_watermark="not an offset")])]),
}


@pytest.mark.parametrize("row, frame", [(ApiKey.METADATA, metadata), (ApiKey.FETCH, fetch)])
def test_an_answer_that_cannot_be_encoded_closes_the_connection(row, frame):
    script, protocol, transport, p = pipeline()
    other, other_transport = p.connect()
    script.behaviour[row] = lambda ctx, r: UNENCODABLE[row]
    protocol.dataReceived(api_versions(1) + frame(2) + api_versions(3))
    assert transport.disconnecting
    [(cid, _)] = read_kafka_responses(transport, [(ApiKey.API_VERSIONS, 3)])
    assert cid == 1
    script.behaviour.pop(row)
    other.dataReceived(frame(4))
    [(cid, _)] = read_kafka_responses(other_transport, [(row, 12 if row == ApiKey.FETCH else 11)])
    assert cid == 4 and not other_transport.disconnecting


def test_a_connection_closed_under_a_pending_answer_drops_the_later_ones():
    script, protocol, transport, _ = pipeline()
    script.behaviour[ApiKey.FETCH] = "defer"
    script.behaviour[ApiKey.METADATA] = "defer"
    protocol.dataReceived(fetch(1) + metadata(2))
    script.deferreds[ApiKey.FETCH][0].callback(UNENCODABLE[ApiKey.FETCH])
    assert transport.disconnecting
    # the request waiting behind it is never served, and nothing is written
    assert ApiKey.METADATA not in script.deferreds and transport.value() == b""


@pytest.mark.parametrize("body", [b"", b"\xff" * 3, b"\x00\x00\x00\x05ab",
                                  b"\x7f\xff\xff\xff"])
def test_a_supported_version_with_an_unreadable_body_closes_the_connection(body):
    script, protocol, transport, _ = pipeline()
    protocol.dataReceived(raw_kafka_frame(ApiKey.METADATA, 4, 1, body))
    assert transport.disconnecting and script.calls == [] and transport.value() == b""


def test_a_body_the_converter_refuses_closes_the_connection():
    script, protocol, transport, p = pipeline()

    def refuse(entity, version):
        raise errors.InvalidRequestError("no such thing")
    p.table[ApiKey.METADATA] = ApiSpec(ApiKey.METADATA, 11, p.table[ApiKey.METADATA].handler,
                                       Converter(refuse, _metadata_response))
    protocol.dataReceived(metadata(1))
    assert transport.disconnecting and script.calls == [] and transport.value() == b""


def test_a_short_kafka_header_closes_the_connection():
    script, protocol, transport, _ = pipeline()
    protocol.dataReceived(encode_frame(b"\x00\x12\x00"))
    assert transport.disconnecting and transport.value() == b""


# --- ordering and acks=0 -------------------------------------------------------------------------

def test_pipelined_requests_are_served_one_at_a_time_in_order():
    """Kafka's processor mutes a channel from reading a request until its answer is sent: a
    pipelined request is served only after the one before it was answered."""
    script, protocol, transport, _ = pipeline()
    script.behaviour[ApiKey.METADATA] = "defer"
    script.behaviour[ApiKey.PRODUCE] = "defer"
    feed_bytewise(protocol, metadata(1) + produce(2) + api_versions(3) + metadata(4))
    assert transport.value() == b"" and script.keys_called() == [ApiKey.METADATA]
    script.deferreds[ApiKey.METADATA][0].callback(METADATA_ANSWER)
    assert script.keys_called() == [ApiKey.METADATA, ApiKey.PRODUCE]
    [produce2] = script.deferreds[ApiKey.PRODUCE]
    produce2.callback(_produce_answer(None, script.calls[1].request))
    # ApiVersions is answered at once, and Metadata 4 is in the broker
    assert script.keys_called() == [ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.API_VERSIONS,
                                    ApiKey.METADATA]
    script.deferreds[ApiKey.METADATA][1].callback(METADATA_ANSWER)
    answers = read_kafka_responses(transport, [(ApiKey.METADATA, 11), (ApiKey.PRODUCE, 9),
                                               (ApiKey.API_VERSIONS, 3), (ApiKey.METADATA, 11)])
    assert cids(answers) == [1, 2, 3, 4]
    assert not transport.disconnecting


def test_acks_zero_produce_gets_no_response():
    script, protocol, transport, _ = pipeline()
    script.behaviour[ApiKey.METADATA] = "defer"
    protocol.dataReceived(metadata(1) + produce(2, acks=0) + produce(3, acks=1))
    assert script.keys_called() == [ApiKey.METADATA]
    script.deferreds[ApiKey.METADATA][0].callback(METADATA_ANSWER)
    # the acks=0 produce is served and, unanswered, hands over to the next request
    assert script.keys_called() == [ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.PRODUCE]
    assert script.calls[1].request.acks == 0
    answers = read_kafka_responses(transport, [(ApiKey.METADATA, 11), (ApiKey.PRODUCE, 9)])
    assert cids(answers) == [1, 3]     # nothing for correlation id 2


@pytest.mark.parametrize("behaviour", ["raise", "defer-fail"])
def test_a_failed_acks_zero_produce_sends_nothing(behaviour):
    script, protocol, transport, _ = pipeline()
    script.behaviour[ApiKey.PRODUCE] = (RuntimeError("append failed") if behaviour == "raise"
                                        else "defer")
    protocol.dataReceived(produce(1, acks=0))
    if behaviour == "defer-fail":
        script.deferreds[ApiKey.PRODUCE][0].errback(RuntimeError("append failed"))
    assert transport.value() == b""
    protocol.dataReceived(api_versions(2))
    [(cid, _)] = read_kafka_responses(transport, [(ApiKey.API_VERSIONS, 3)])
    assert cid == 2 and not transport.disconnecting


def test_connection_open_and_close_reach_the_dispatcher():
    script, protocol, transport, p = pipeline()
    assert p.dispatcher.connections == {protocol}
    protocol.dataReceived(encode_frame(b"\x42"))
    assert transport.disconnecting
    protocol.connectionLost(None)
    assert p.dispatcher.connections == set()
