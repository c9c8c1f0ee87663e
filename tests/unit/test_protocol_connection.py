"""Twisted protocols over StringTransport: server framing and the pipelining ClientConnection."""

import msgpack
import pytest
from twisted.internet.defer import CancelledError
from twisted.internet.error import ConnectionDone
from twisted.internet.testing import StringTransport
from twisted.logger import globalLogPublisher
from twisted.python.failure import Failure

from kafkalite import errors
from kafkalite.protocol import (
    ApiKey,
    ApiVersionsRequest,
    ApiVersionsResponse,
    ClientConnection,
    FetchRequest,
    FetchResponse,
    FrameDecoder,
    KafkaWireProtocol,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    decode_request,
    encode_error_response,
    encode_frame,
    encode_response,
    encode_response_payload,
    frame_header,
    supported_versions,
)


class Recorder(KafkaWireProtocol):
    def __init__(self, max_frame_bytes=None, fail_on=None):
        super().__init__(max_frame_bytes)
        self.frames = []
        self.fail_on = fail_on

    def frameReceived(self, payload):
        if payload == self.fail_on:
            raise RuntimeError("handler bug")
        self.frames.append(payload)


@pytest.fixture
def logged():
    events = []
    globalLogPublisher.addObserver(events.append)
    yield events
    globalLogPublisher.removeObserver(events.append)


def connect(proto):
    transport = StringTransport()
    proto.makeConnection(transport)
    return transport


def frames_written(transport):
    return FrameDecoder().feed(transport.value())


# --- server-side framing -------------------------------------------------------------------------


def test_frames_byte_at_a_time():
    proto = Recorder()
    connect(proto)
    data = encode_frame(b"one") + encode_frame(b"") + encode_frame(b"three" * 1000)
    for i in range(len(data)):
        proto.dataReceived(data[i:i + 1])
    assert proto.frames == [b"one", b"", b"three" * 1000]


def test_default_limit_is_not_int32stringreceivers():
    proto = Recorder()
    transport = connect(proto)
    proto.dataReceived(encode_frame(b"x" * 150_000))
    assert proto.frames == [b"x" * 150_000]
    assert not transport.disconnecting


def test_send_frame_and_send_response():
    proto = Recorder()
    transport = connect(proto)
    proto.send_frame(b"abc")
    proto.send_response(9, ApiVersionsResponse(api_versions=supported_versions()))
    written = frames_written(transport)
    assert written[0] == b"abc"
    assert msgpack.unpackb(written[1], raw=False)[0] == 9


def test_oversized_frame_closes_the_connection(logged):
    proto = Recorder(max_frame_bytes=100)
    transport = connect(proto)
    proto.dataReceived(encode_frame(b"ok") + frame_header(101))
    assert proto.frames == [b"ok"]
    assert transport.disconnecting
    assert any("exceeds the maximum" in str(e.get("error", "")) for e in logged)
    proto.dataReceived(b"x" * 101)          # anything after is ignored
    assert proto.frames == [b"ok"]


def test_negative_length_closes_the_connection():
    proto = Recorder()
    transport = connect(proto)
    proto.dataReceived(b"\xff\xff\xff\xfe")
    assert transport.disconnecting and proto.frames == []


def test_handler_exception_closes_without_raising(logged):
    proto = Recorder(fail_on=b"boom")
    transport = connect(proto)
    proto.dataReceived(encode_frame(b"a") + encode_frame(b"boom") + encode_frame(b"b"))
    assert proto.frames == [b"a"]
    assert transport.disconnecting
    assert any(e.get("log_failure") is not None for e in logged)


def test_no_sends_after_closing():
    proto = Recorder()
    transport = connect(proto)
    proto.close_connection()
    proto.send_frame(b"late")
    assert transport.value() == b""


# --- ClientConnection ----------------------------------------------------------------------------


def client():
    conn = ClientConnection(client_id="test-client")
    transport = connect(conn)
    return conn, transport


def requests_written(transport):
    out = [decode_request(p) for p in frames_written(transport)]
    transport.clear()
    return out


def results(d):
    box = []
    d.addBoth(box.append)
    return box


def test_pipelined_requests_are_matched_in_order():
    conn, transport = client()
    d1 = results(conn.request(MetadataRequest(topics=["t"])))
    d2 = results(conn.request(FetchRequest()))
    d3 = results(conn.request(ApiVersionsRequest()))
    sent = requests_written(transport)
    assert [h.correlation_id for h, _ in sent] == [0, 1, 2]
    assert [h.api_key for h, _ in sent] == [ApiKey.METADATA, ApiKey.FETCH, ApiKey.API_VERSIONS]
    assert all(h.client_id == "test-client" for h, _ in sent)
    assert conn.pending_count == 3

    meta = MetadataResponse(cluster_id="c", controller_id=1)
    fetch = FetchResponse(error_code=0)
    versions = ApiVersionsResponse(api_versions=supported_versions())
    data = encode_response(0, meta) + encode_response(1, fetch) + encode_response(2, versions)
    conn.dataReceived(data[:10])
    assert d1 == []
    for i in range(10, len(data)):
        conn.dataReceived(data[i:i + 1])
    assert d1 == [meta] and d2 == [fetch] and d3 == [versions]
    assert conn.pending_count == 0
    assert not transport.disconnecting


def test_out_of_order_response_fails_everything_and_closes():
    conn, transport = client()
    d1 = results(conn.request(MetadataRequest()))
    d2 = results(conn.request(MetadataRequest()))
    conn.dataReceived(encode_response(1, MetadataResponse()))
    for box in (d1, d2):
        assert isinstance(box[0], Failure) and box[0].check(errors.NetworkError)
        assert "does not match" in box[0].value.message
    assert transport.disconnecting
    late = results(conn.request(MetadataRequest()))
    assert late[0].check(errors.NetworkError)


def test_unsolicited_response_closes():
    conn, transport = client()
    conn.dataReceived(encode_response(0, MetadataResponse()))
    assert transport.disconnecting


def test_unreadable_response_closes():
    conn, transport = client()
    d = results(conn.request(MetadataRequest()))
    conn.dataReceived(encode_frame(b"\xc1garbage"))
    assert d[0].check(errors.NetworkError)
    assert transport.disconnecting


def test_connection_lost_errbacks_pending_with_network_error():
    conn, transport = client()
    d1 = results(conn.request(MetadataRequest()))
    d2 = results(conn.request(FetchRequest()))
    closed = results(conn.when_closed())
    conn.connectionLost(Failure(ConnectionResetError("reset by peer")))
    for box in (d1, d2):
        assert box[0].check(errors.NetworkError)
        assert "reset by peer" in box[0].value.message
    assert closed == [None]
    assert results(conn.request(MetadataRequest()))[0].check(errors.NetworkError)
    assert results(conn.when_closed()) == [None]


def test_close_fails_pending():
    conn, transport = client()
    d = results(conn.request(MetadataRequest()))
    conn.close()
    assert d[0].check(errors.NetworkError)
    assert transport.disconnecting


def test_request_error_response_becomes_the_matching_exception():
    conn, transport = client()
    d1 = results(conn.request(FetchRequest()))
    d2 = results(conn.request(MetadataRequest()))
    conn.dataReceived(encode_error_response(0, errors.UnsupportedVersionError.code, "old client"))
    conn.dataReceived(encode_response(1, MetadataResponse()))
    assert d1[0].check(errors.UnsupportedVersionError)
    assert d1[0].value.message == "old client"
    assert d2 == [MetadataResponse()]
    assert not transport.disconnecting


def test_malformed_body_fails_only_that_request():
    conn, transport = client()
    d1 = results(conn.request(MetadataRequest()))
    d2 = results(conn.request(MetadataRequest()))
    conn.dataReceived(encode_frame(encode_response_payload(0, {"brokers": "nope"})))
    conn.dataReceived(encode_response(1, MetadataResponse()))
    assert d1[0].check(errors.InvalidRequestError)
    assert d2 == [MetadataResponse()]
    assert not transport.disconnecting


def test_acks_zero_produce_expects_no_response():
    conn, transport = client()
    d0 = results(conn.request(ProduceRequest(acks=0, topic_data={"t": {0: b"batch"}})))
    assert d0 == [None] and conn.pending_count == 0
    d1 = results(conn.request(MetadataRequest()))
    sent = requests_written(transport)
    assert [h.correlation_id for h, _ in sent] == [0, 1]
    conn.dataReceived(encode_response(1, MetadataResponse()))
    assert d1 == [MetadataResponse()]


def test_requests_before_connection_made_are_queued():
    conn = ClientConnection()
    d = results(conn.request(MetadataRequest()))
    transport = StringTransport()
    assert not conn.connected_ok
    conn.makeConnection(transport)
    assert conn.connected_ok
    assert [h.correlation_id for h, _ in requests_written(transport)] == [0]
    conn.dataReceived(encode_response(0, MetadataResponse()))
    assert d == [MetadataResponse()]


def test_cancelled_request_keeps_the_order():
    conn, transport = client()
    d1 = conn.request(MetadataRequest())
    box1 = results(d1)
    d2 = results(conn.request(FetchRequest()))
    d1.cancel()
    assert box1[0].check(CancelledError)
    conn.dataReceived(encode_response(0, MetadataResponse()) + encode_response(1, FetchResponse()))
    assert d2 == [FetchResponse()]
    assert not transport.disconnecting


def test_correlation_id_wraps_at_int32():
    conn, transport = client()
    conn._next_correlation_id = 2**31 - 1
    results(conn.request(MetadataRequest()))
    results(conn.request(MetadataRequest()))
    assert [h.correlation_id for h, _ in requests_written(transport)] == [2**31 - 1, 0]


def test_unsupported_version_or_unencodable_fails_immediately():
    conn, transport = client()
    assert results(conn.request(MetadataRequest(), api_version=1))[0].check(
        errors.UnsupportedVersionError)
    bad = ProduceRequest(topic_data={"t": {0: object()}})
    assert results(conn.request(bad))[0].check(errors.InvalidRequestError)
    assert transport.value() == b"" and conn.pending_count == 0
    # the failed encode did not burn a correlation id
    results(conn.request(MetadataRequest()))
    assert [h.correlation_id for h, _ in requests_written(transport)] == [0]


def test_client_max_frame_bytes():
    conn = ClientConnection(max_frame_bytes=50)
    transport = connect(conn)
    d = results(conn.request(MetadataRequest()))
    conn.dataReceived(encode_response(0, MetadataResponse(cluster_id="x" * 100)))
    assert transport.disconnecting
    conn.connectionLost(Failure(ConnectionDone()))
    assert d[0].check(errors.NetworkError)


def test_end_to_end_between_client_and_server_protocols():
    class Server(KafkaWireProtocol):
        def frameReceived(self, payload):
            header, req = decode_request(payload)
            if isinstance(req, MetadataRequest):
                resp = MetadataResponse(cluster_id=",".join(req.topics))
            else:
                resp = req.error_response(errors.NotLeaderForPartitionError.code)
            self.send_response(header.correlation_id, resp)

    server, conn = Server(), ClientConnection()
    server_t, client_t = connect(server), connect(conn)
    d1 = results(conn.request(MetadataRequest(topics=["a", "b"])))
    d2 = results(conn.request(FetchRequest()))
    server.dataReceived(client_t.value())
    conn.dataReceived(server_t.value())
    assert d1 == [MetadataResponse(cluster_id="a,b")]
    assert d2 == [FetchResponse(error_code=6)]

