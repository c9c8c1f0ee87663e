"""The broker's connection protocol, driven byte by byte through a StringTransport."""

import struct

from twisted.internet import defer
from twisted.internet.testing import StringTransport

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.envelope import decode_response, encode_request, encode_request_payload
from kafkalite.protocol.framing import encode_frame
from kafkalite.server.network import BrokerProtocol


class Handler:
    def __init__(self):
        self.pending: list[defer.Deferred] = []
        self.opened = self.closed = 0

    def connection_opened(self, p):
        self.opened += 1

    def connection_closed(self, p):
        self.closed += 1

    def handle(self, header, request, protocol):
        if isinstance(request, m.FetchRequest):   # long poll: answered later
            d = defer.Deferred()
            self.pending.append(d)
            return d
        if isinstance(request, m.ListOffsetsRequest):
            raise errors.NotLeaderForPartitionError("not here")
        if isinstance(request, m.MetadataRequest):
            raise RuntimeError("bug")
        return m.ApiVersionsResponse()


def _connect(max_frame=1 << 20):
    handler = Handler()
    protocol = BrokerProtocol(handler, max_frame)
    transport = StringTransport()
    protocol.makeConnection(transport)
    return handler, protocol, transport


def _responses(transport, api_keys):
    data = transport.value()
    out, pos = [], 0
    for key in api_keys:
        (n,) = struct.unpack_from(">i", data, pos)
        out.append(decode_response(data[pos + 4:pos + 4 + n], key))
        pos += 4 + n
    assert pos == len(data)
    return out


def _feed_bytewise(protocol, data):
    for i in range(len(data)):
        protocol.dataReceived(data[i:i + 1])


def test_requests_fed_one_byte_at_a_time_are_answered():
    handler, protocol, transport = _connect()
    _feed_bytewise(protocol, encode_request(m.ApiVersionsRequest(), 0, 5, "c"))
    [(cid, response)] = _responses(transport, [18])
    assert cid == 5 and isinstance(response, m.ApiVersionsResponse)


def test_pipelined_answers_keep_request_order_behind_a_long_poll():
    handler, protocol, transport = _connect()
    fetch = m.FetchRequest(topics=[])
    protocol.dataReceived(encode_request(fetch, 0, 1, "c") +
                          encode_request(m.ApiVersionsRequest(), 0, 2, "c"))
    assert transport.value() == b""          # 2 is ready but must wait for 1
    handler.pending[0].callback(m.FetchResponse())
    (c1, r1), (c2, r2) = _responses(transport, [1, 18])
    assert (c1, c2) == (1, 2)
    assert isinstance(r1, m.FetchResponse) and isinstance(r2, m.ApiVersionsResponse)


def test_handler_errors_become_error_responses():
    handler, protocol, transport = _connect()
    request = m.ListOffsetsRequest(topics=[m.ListOffsetsTopic("t", [m.ListOffsetsPartition(0, -1)])])
    protocol.dataReceived(encode_request(request, 0, 3, "c"))
    protocol.dataReceived(encode_request(m.MetadataRequest(), 0, 4, "c"))
    (c1, r1), (c2, r2) = _responses(transport, [2, 3])
    assert r1.topics[0].partitions[0].error_code == errors.NotLeaderForPartitionError.code
    assert (c2, r2.topics) == (4, [])    # unexpected error: an error response, not a crash
    assert not transport.disconnecting


def test_oversized_frame_closes_the_connection():
    handler, protocol, transport = _connect(max_frame=100)
    protocol.dataReceived(struct.pack(">i", 101))
    assert transport.disconnecting


def test_unsupported_version_keeps_the_connection():
    handler, protocol, transport = _connect()
    protocol.dataReceived(encode_frame(encode_request_payload(18, 9, 10, "c", {})))
    [(cid, response)] = _responses(transport, [18])
    assert cid == 10 and response.error_code == errors.UnsupportedVersionError.code
    assert not transport.disconnecting


def test_acks_zero_produce_gets_no_response():
    handler, protocol, transport = _connect()
    protocol.dataReceived(encode_request(m.ProduceRequest(acks=0, topic_data={}), 0, 1, "c"))
    assert transport.value() == b""
