"""Bad input from a raw socket: each case gets an error response or a closed connection, nothing
bad is appended, and another client connected at the same time keeps working."""

import random
import socket
import struct
import time

import msgpack
import pytest

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.envelope import decode_response, encode_request, encode_request_payload
from kafkalite.protocol.framing import encode_frame
from kafkalite.record import build_batch, iter_records
from kafkalite.local.cluster import request

pytestmark = pytest.mark.system


class RawClient:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.correlation_id = 0

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self):
        header = self._read(4)
        if header is None:
            return None
        (length,) = struct.unpack(">i", header)
        return self._read(length)

    def _read(self, n):
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                return None
            data += chunk
        return bytes(data)

    def call(self, req):
        self.correlation_id += 1
        self.send_raw(encode_request(req, 0, self.correlation_id, "raw"))
        payload = self.read_frame()
        assert payload is not None, "connection closed instead of a response"
        cid, response = decode_response(payload, req.API_KEY)
        assert cid == self.correlation_id
        return response

    def closed_by_broker(self) -> bool:
        self.sock.settimeout(10)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self):
        self.sock.close()


def _batch(n=5, value=b"v"):
    now = int(time.time() * 1000)
    return build_batch([(now, b"k%d" % i, value + b"%d" % i, None) for i in range(n)])


@pytest.fixture
def broker(kafkalite_broker):
    create = m.CreateTopicsRequest(topics=[m.CreatableTopic("good", 1, 1, {}, {})],
                                   timeout_ms=10000)
    result = request("127.0.0.1", kafkalite_broker.brokers[1].port, create)
    assert result.topics[0].error_code == 0, result
    return kafkalite_broker.brokers[1]


@pytest.fixture
def bystander(broker):
    """A well-behaved client on its own connection during every bad case."""
    client = RawClient(broker.port)
    yield client
    client.close()


def _log_end(client):
    response = client.call(m.ListOffsetsRequest(topics=[
        m.ListOffsetsTopic("good", [m.ListOffsetsPartition(0, -1)])]))
    return response.topics[0].partitions[0].offset


def _bystander_works(client):
    before = _log_end(client)
    response = client.call(m.ProduceRequest(acks=1, topic_data={"good": {0: _batch(3)}}))
    assert response.responses["good"][0].error_code == 0
    assert _log_end(client) == before + 3
    return before + 3


CLOSE_CASES = {
    # a valid length around random bytes (seeded: the same bytes every run)
    "random bytes": lambda: encode_frame(random.Random(1234).randbytes(64)),
    "oversized length": lambda: struct.pack(">i", 2**31 - 1) + b"xx",
    "negative length": lambda: struct.pack(">i", -5),
    "garbage msgpack": lambda: encode_frame(b"\xc1\xc1\xc1 not msgpack"),
    "wrong envelope shape": lambda: encode_frame(msgpack.packb({"hello": "world"})),
}


@pytest.mark.parametrize("case", sorted(CLOSE_CASES))
def test_unreadable_input_closes_only_that_connection(broker, bystander, case):
    before = _log_end(bystander)
    bad = RawClient(broker.port)
    bad.send_raw(CLOSE_CASES[case]())
    assert bad.closed_by_broker()
    assert _log_end(bystander) == before, "nothing may be appended"
    _bystander_works(bystander)


def test_truncated_frame_then_hangup(broker, bystander):
    frame = encode_request(m.ProduceRequest(acks=1, topic_data={"good": {0: _batch()}}), 0, 1,
                           "x")
    half = len(frame) // 2
    # the frame in two writes, a bystander's produce between them: the broker holds the first
    # half without blocking anyone, and the second half completes one produce of 5 records
    split = RawClient(broker.port)
    split.send_raw(frame[:half])
    before = _bystander_works(bystander)
    split.send_raw(frame[half:])
    cid, response = decode_response(split.read_frame(), m.ProduceRequest.API_KEY)
    assert cid == 1 and response.responses["good"][0].error_code == 0
    assert response.responses["good"][0].base_offset == before
    assert _log_end(bystander) == before + 5
    split.close()
    # the same half, then a hang-up: the broker drops what it held and serves the others
    bad = RawClient(broker.port)
    bad.send_raw(frame[:half])
    bad.close()
    _bystander_works(bystander)


@pytest.mark.parametrize("api_key,api_version", [(99, 0), (0, 7), (1, -1)])
def test_unknown_api_or_version_gets_an_error_response(broker, bystander, api_key, api_version):
    bad = RawClient(broker.port)
    bad.send_raw(encode_frame(encode_request_payload(api_key, api_version, 42, "x", {})))
    cid, body = decode_response(bad.read_frame(), 3)
    assert cid == 42
    assert isinstance(body, m.RequestErrorResponse)
    assert body.error_code == errors.UnsupportedVersionError.code
    # the connection stays usable
    assert bad.call(m.ApiVersionsRequest()).error_code == 0
    _bystander_works(bystander)


def test_malformed_body_gets_invalid_request_naming_the_field(broker, bystander):
    bad = RawClient(broker.port)
    bad.send_raw(encode_frame(encode_request_payload(
        0, 0, 7, "x", {"transactional_id": None, "acks": "all", "timeout_ms": 1,
                       "topic_data": {}})))
    cid, body = decode_response(bad.read_frame(), 0)
    assert cid == 7 and body.error_code == errors.InvalidRequestError.code
    assert "acks" in body.error_message
    _bystander_works(bystander)


def test_bad_crc_is_rejected_and_nothing_appended(broker, bystander):
    batch = bytearray(_batch(5))
    batch[-3] ^= 0x40
    before = _log_end(bystander)
    client = RawClient(broker.port)
    response = client.call(m.ProduceRequest(acks=1, topic_data={"good": {0: bytes(batch)}}))
    result = response.responses["good"][0]
    assert result.error_code == errors.CorruptRecordError.code
    assert "CRC" in result.error_message
    assert _log_end(bystander) == before
    end = _bystander_works(bystander)
    fetched = client.call(m.FetchRequest(max_wait_ms=0, topics=[
        m.FetchTopic("good", [m.FetchPartition(0, 0, 1 << 20)])]))
    records = list(iter_records(fetched.responses[0].partitions[0].records))
    assert len(records) == end


def test_not_a_batch_at_all(broker, bystander):
    client = RawClient(broker.port)
    response = client.call(m.ProduceRequest(acks=1, topic_data={"good": {0: b"\x00" * 80}}))
    assert response.responses["good"][0].error_code == errors.CorruptRecordError.code
    _bystander_works(bystander)


def test_produce_to_missing_topic(broker, bystander):
    client = RawClient(broker.port)
    response = client.call(m.ProduceRequest(acks=1, topic_data={"missing": {0: _batch()}}))
    assert response.responses["missing"][0].error_code == \
        errors.UnknownTopicOrPartitionError.code
    _bystander_works(bystander)


@pytest.mark.parametrize("name", ["bad name", "a/b", "x" * 250, "..", ""])
def test_invalid_topic_names(broker, bystander, name):
    client = RawClient(broker.port)
    created = client.call(m.CreateTopicsRequest(topics=[m.CreatableTopic(name, 1, 1, {}, {})]))
    assert created.topics[0].error_code == errors.InvalidTopicError.code
    metadata = client.call(m.MetadataRequest(topics=[name]))
    assert metadata.topics[0].error_code == errors.InvalidTopicError.code
    _bystander_works(bystander)


def test_invalid_acks(broker, bystander):
    client = RawClient(broker.port)
    response = client.call(m.ProduceRequest(acks=2, topic_data={"good": {0: _batch()}}))
    assert response.responses["good"][0].error_code == errors.InvalidRequiredAcksError.code
    _bystander_works(bystander)
