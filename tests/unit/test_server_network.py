"""The broker's connection pipeline on the native protocol, driven byte by byte through a
StringTransport with the real codecs and dispatcher over a table of scripted handlers."""

import struct

import pytest
from pipeline_driver import (Script, connect, feed_bytewise, native_frame, read_native_responses,
                             table_of)

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.envelope import encode_request_payload
from kafkalite.protocol.framing import encode_frame
from kafkalite.server.api_table import ApiSpec
from kafkalite.server.dispatch import ApiDispatcher
from kafkalite.server.network import QUEUED_FRAMES_BEFORE_PAUSE

LIST_OFFSETS = m.ListOffsetsRequest(topics=[
    m.ListOffsetsTopic("t", [m.ListOffsetsPartition(0, -1), m.ListOffsetsPartition(1, -1)])])


def pipeline(max_frame=1 << 20):
    script = Script()
    table = table_of([
        ApiSpec(ApiKey.API_VERSIONS, 3,
                script.handler(lambda ctx, r: m.ApiVersionsResponse())),
        # a long poll: answered when the test says
        ApiSpec(ApiKey.FETCH, 12, script.handler(lambda ctx, r: m.FetchResponse())),
        ApiSpec(ApiKey.METADATA, 11, script.handler(lambda ctx, r: m.MetadataResponse())),
        ApiSpec(ApiKey.PRODUCE, 9, script.handler(lambda ctx, r: m.ProduceResponse())),
        ApiSpec(ApiKey.LIST_OFFSETS, 6,
                script.handler(lambda ctx, r: m.ListOffsetsResponse())),
    ])
    dispatcher = ApiDispatcher(None, table=table)
    protocol, transport = connect(dispatcher, max_frame_bytes=max_frame)
    return script, protocol, transport, dispatcher


def test_requests_fed_one_byte_at_a_time_are_answered():
    script, protocol, transport, _ = pipeline()
    feed_bytewise(protocol, native_frame(m.ApiVersionsRequest(), 5, client_id="c"))
    [(cid, response)] = read_native_responses(transport, [ApiKey.API_VERSIONS])
    assert cid == 5 and isinstance(response, m.ApiVersionsResponse)
    [call] = script.calls
    assert (call.ctx.protocol, call.ctx.correlation_id, call.ctx.client_id) == ("native", 5, "c")
    assert protocol.client_id == "c"


def test_pipelined_answers_keep_request_order_behind_a_long_poll():
    script, protocol, transport, _ = pipeline()
    script.behaviour[ApiKey.FETCH] = "defer"
    protocol.dataReceived(native_frame(m.FetchRequest(topics=[]), 1) +
                          native_frame(m.ApiVersionsRequest(), 2))
    assert transport.value() == b""
    # Kafka's muted channel: 2 is not even served while 1 is in the broker
    assert [call.ctx.api_key for call in script.calls] == [ApiKey.FETCH]
    script.deferreds[ApiKey.FETCH][0].callback(m.FetchResponse())
    (c1, r1), (c2, r2) = read_native_responses(transport, [ApiKey.FETCH, ApiKey.API_VERSIONS])
    assert (c1, c2) == (1, 2)
    assert isinstance(r1, m.FetchResponse) and isinstance(r2, m.ApiVersionsResponse)
    assert [call.ctx.api_key for call in script.calls] == [ApiKey.FETCH, ApiKey.API_VERSIONS]


def test_a_client_pipelining_without_bound_stops_being_read_until_it_is_served():
    script, protocol, transport, _ = pipeline()
    script.behaviour[ApiKey.FETCH] = "defer"
    protocol.dataReceived(native_frame(m.FetchRequest(topics=[]), 1))
    waiting = QUEUED_FRAMES_BEFORE_PAUSE
    for cid in range(2, 2 + waiting - 1):
        protocol.dataReceived(native_frame(m.ApiVersionsRequest(), cid))
    assert transport.producerState == "producing"
    protocol.dataReceived(native_frame(m.ApiVersionsRequest(), 1 + waiting))
    assert transport.producerState == "paused"
    script.deferreds[ApiKey.FETCH][0].callback(m.FetchResponse())
    answers = read_native_responses(transport, [ApiKey.FETCH] + [ApiKey.API_VERSIONS] * waiting)
    assert [cid for cid, _ in answers] == list(range(1, 2 + waiting))
    assert transport.producerState == "producing"


@pytest.mark.parametrize("fail_how", ["raise", "defer-fail"])
def test_handler_errors_become_the_requests_error_responses(fail_how):
    script, protocol, transport, _ = pipeline()
    failures = {ApiKey.LIST_OFFSETS: errors.NotLeaderForPartitionError("not here"),
                ApiKey.METADATA: RuntimeError("bug")}
    if fail_how == "raise":
        script.behaviour.update(failures)
    else:
        script.behaviour.update(dict.fromkeys(failures, "defer"))
    protocol.dataReceived(native_frame(LIST_OFFSETS, 3))
    protocol.dataReceived(native_frame(m.MetadataRequest(topics=["a"]), 4))
    if fail_how == "defer-fail":
        for key, exc in failures.items():
            script.deferreds[key][0].errback(exc)
    (c1, r1), (c2, r2) = read_native_responses(transport, [ApiKey.LIST_OFFSETS, ApiKey.METADATA])
    # every partition of the request carries the error (Kafka's getErrorResponse)
    assert c1 == 3 and [p.error_code for p in r1.topics[0].partitions] == \
        [errors.NotLeaderForPartitionError.code] * 2
    # an unexpected error: UNKNOWN_SERVER_ERROR in the response, not a crash
    assert c2 == 4 and [(t.name, t.error_code) for t in r2.topics] == \
        [("a", errors.UnknownServerError.code)]
    assert not transport.disconnecting


def test_oversized_frame_closes_the_connection():
    script, protocol, transport, _ = pipeline(max_frame=100)
    protocol.dataReceived(struct.pack(">i", 101))
    assert transport.disconnecting


def test_unsupported_version_keeps_the_connection():
    script, protocol, transport, _ = pipeline()
    protocol.dataReceived(encode_frame(encode_request_payload(18, 9, 10, "c", {})))
    [(cid, response)] = read_native_responses(transport, [ApiKey.API_VERSIONS])
    assert cid == 10 and response.error_code == errors.UnsupportedVersionError.code
    assert script.calls == [] and not transport.disconnecting


@pytest.mark.parametrize("api_key", [ApiKey.LEADER_AND_ISR, 99])
def test_an_api_the_table_does_not_serve_gets_an_error_answer(api_key):
    script, protocol, transport, _ = pipeline()
    protocol.dataReceived(encode_frame(encode_request_payload(api_key, 0, 11, "c", {})))
    protocol.dataReceived(native_frame(m.ApiVersionsRequest(), 12))
    (cid, refused), (cid2, _) = read_native_responses(transport, [api_key, ApiKey.API_VERSIONS])
    assert (cid, cid2) == (11, 12)
    assert isinstance(refused, m.RequestErrorResponse)
    assert refused.error_code == errors.UnsupportedVersionError.code
    assert script.keys_called() == [ApiKey.API_VERSIONS] and not transport.disconnecting


def test_a_malformed_body_gets_an_error_answer_naming_the_problem():
    script, protocol, transport, _ = pipeline()
    protocol.dataReceived(encode_frame(encode_request_payload(ApiKey.METADATA, 0, 13, "c",
                                                              "not a metadata request")))
    [(cid, refused)] = read_native_responses(transport, [ApiKey.METADATA])
    assert cid == 13 and isinstance(refused, m.RequestErrorResponse)
    assert refused.error_code == errors.InvalidRequestError.code and refused.error_message
    assert script.calls == [] and not transport.disconnecting


def test_acks_zero_produce_gets_no_response():
    script, protocol, transport, _ = pipeline()
    protocol.dataReceived(native_frame(m.ProduceRequest(acks=0, topic_data={}), 1))
    assert script.keys_called() == [ApiKey.PRODUCE] and transport.value() == b""
    protocol.dataReceived(native_frame(m.ProduceRequest(acks=1, topic_data={}), 2))
    [(cid, _)] = read_native_responses(transport, [ApiKey.PRODUCE])
    assert cid == 2


def test_connection_open_and_close_reach_the_dispatcher():
    script, protocol, transport, dispatcher = pipeline()
    assert dispatcher.connections == {protocol}
    protocol.connectionLost(None)
    assert dispatcher.connections == set()
