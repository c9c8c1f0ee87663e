"""The msgpack envelope: headers, garbage input, unsupported APIs, request-level errors."""

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite import errors
from kafkalite.protocol import (
    ApiKey,
    FetchPartition,
    FetchRequest,
    FetchTopic,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    RequestErrorResponse,
    RequestHeader,
    decode_request,
    decode_request_envelope,
    decode_response,
    decode_response_envelope,
    encode_error_response,
    encode_request,
    encode_request_payload,
    encode_response,
    encode_response_payload,
    pack,
    parse_response_body,
    unpack,
)

FAST = settings(deadline=None, max_examples=300, derandomize=True)


def packb(value):
    return msgpack.packb(value, use_bin_type=True)


VALID = encode_request(
    FetchRequest(topics=[FetchTopic("topic", [FetchPartition(0, 10, 1000), FetchPartition(1, 0, 5)])]),
    0, 42, "client")[4:]


def test_request_payload_shape():
    assert msgpack.unpackb(VALID, raw=False)[:4] == [1, 0, 42, "client"]
    payload = encode_request_payload(ApiKey.METADATA, 0, 9, None, {
        "topics": None, "allow_auto_topic_creation": True,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False})
    header, req = decode_request(payload)
    assert header == RequestHeader(3, 0, 9, None)
    assert req == MetadataRequest()
    assert type(header.api_key) is int


def test_response_payload_shape():
    payload = encode_response(5, MetadataResponse())[4:]
    assert msgpack.unpackb(payload, raw=False)[0] == 5
    assert decode_response_envelope(encode_response_payload(8, {"a": 1})) == (8, {"a": 1})


GARBAGE = [
    b"",                                  # nothing
    b"\xc1",                              # a byte msgpack never uses
    b"\x95\x01\x00",                      # truncated array
    VALID[:-1],                           # truncated body
    VALID + b"\x00",                      # extra bytes after the value
    b"\xa2\xff\xfe",                      # str that is not UTF-8
    b"\x91" * 200_000,                    # absurd nesting
    b"\x81\x91\x01\x02",                  # map with an array key (unhashable)
    b"\xd4\x05\x00",                      # ext type
    b"\xd6\xff\x00\x00\x00\x01",          # timestamp ext
    b"\xdd\xff\xff\xff\xff",              # array claiming 4G elements
    b"\xc6\x7f\xff\xff\xff",              # bin claiming 2 GiB
    packb(None), packb(5), packb("x"), packb({"api_key": 1}),
    packb([1, 0, 1, "c"]),                 # 4 elements
    packb([1, 0, 1, "c", {}, 6]),          # 6 elements
    packb(["1", 0, 1, "c", {}]),           # api_key not an int
    packb([1, 0.0, 1, "c", {}]),           # api_version a float
    packb([1, 0, 2**31, "c", {}]),         # correlation id beyond int32
    packb([1, 0, 1, 5, {}]),               # client_id not a str
    packb([1, 0, True, "c", {}]),          # bool is not an int
    packb([2**16, 0, 1, "c", {}]),         # api key beyond int16
]


@pytest.mark.parametrize("payload", GARBAGE, ids=range(len(GARBAGE)))
def test_garbage_request_raises_invalid_request_without_header(payload):
    with pytest.raises(errors.InvalidRequestError) as info:
        decode_request(payload)
    assert info.value.header is None
    assert str(info.value)


@pytest.mark.parametrize("payload", GARBAGE, ids=range(len(GARBAGE)))
def test_garbage_response_raises_invalid_request(payload):
    with pytest.raises(errors.InvalidRequestError):
        decode_response(payload, ApiKey.FETCH)


def test_unpack_and_pack_errors():
    with pytest.raises(errors.InvalidRequestError, match="extra bytes"):
        unpack(b"\x01\x02")
    with pytest.raises(errors.InvalidRequestError, match="cannot encode"):
        pack(object())
    with pytest.raises(errors.InvalidRequestError, match="cannot encode"):
        pack(2**70)
    with pytest.raises(errors.InvalidRequestError, match="cannot encode"):
        encode_request(ProduceRequest(topic_data={"t": {0: object()}}))


@FAST
@given(st.binary(max_size=200))
def test_random_bytes_only_raise_protocol_errors(data):
    for payload in (data, VALID[:7] + data):
        try:
            decode_request(payload)
        except (errors.InvalidRequestError, errors.UnsupportedVersionError):
            pass
        try:
            decode_response(payload, ApiKey.METADATA)
        except (errors.InvalidRequestError, errors.UnsupportedVersionError):
            pass


@FAST
@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=6))
def test_corrupted_valid_request_only_raises_protocol_errors(flips):
    data = bytearray(VALID)
    for pos, value in flips:
        data[pos] = value
    try:
        header, req = decode_request(bytes(data))
    except errors.UnsupportedVersionError as exc:
        assert exc.header is not None
    except errors.InvalidRequestError as exc:
        assert exc.header is None or isinstance(exc.header, RequestHeader)
    else:
        assert isinstance(header, RequestHeader)


values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=5)
    | st.binary(max_size=5) | st.floats(allow_nan=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3) | st.integers(-(2**63), 2**64 - 1),
                                                                inner, max_size=4),
    max_leaves=20)


@FAST
@given(api_key=st.sampled_from([int(k) for k in ApiKey]), body=values)
def test_random_bodies_only_raise_protocol_errors(api_key, body):
    payload = packb([api_key, 0, 1, "c", body])
    try:
        decode_request(payload)
    except errors.InvalidRequestError as exc:
        assert exc.header == RequestHeader(api_key, 0, 1, "c")
    try:
        decode_response(packb([1, body]), api_key)
    except errors.InvalidRequestError:
        pass


def test_unknown_api_key_is_unsupported_and_keeps_the_header():
    payload = packb([99, 0, 77, "me", {}])
    with pytest.raises(errors.UnsupportedVersionError) as info:
        decode_request(payload)
    assert not isinstance(info.value, errors.InvalidRequestError)
    assert info.value.header == RequestHeader(99, 0, 77, "me")
    assert "99" in str(info.value)


def test_unsupported_version_keeps_the_header():
    payload = packb([int(ApiKey.FETCH), 3, 78, None, {}])
    with pytest.raises(errors.UnsupportedVersionError) as info:
        decode_request(payload)
    assert info.value.header.correlation_id == 78
    assert "FETCH version 3" in str(info.value)


def test_bad_body_keeps_the_header():
    payload = packb([int(ApiKey.FETCH), 0, 79, "c", {"replica_id": "x"}])
    with pytest.raises(errors.InvalidRequestError) as info:
        decode_request(payload)
    assert info.value.header.correlation_id == 79


def test_envelope_without_body_check():
    header, body = decode_request_envelope(packb([99, 5, 1, None, [1, 2]]))
    assert header == RequestHeader(99, 5, 1, None) and body == [1, 2]


def test_request_error_response_roundtrip():
    frame = encode_error_response(13, errors.UnsupportedVersionError.code, "no such api")
    correlation_id, resp = decode_response(frame[4:], ApiKey.FETCH)
    assert correlation_id == 13
    assert resp == RequestErrorResponse(error_code=35, error_message="no such api")
    exc = resp.exception()
    assert isinstance(exc, errors.UnsupportedVersionError) and exc.message == "no such api"
    # whatever API the client expected, the error body is recognised
    for key in ApiKey:
        assert isinstance(parse_response_body(key, {"request_error": [42, None]}), RequestErrorResponse)


@pytest.mark.parametrize("body", [{"request_error": 5}, {"request_error": [1]},
                                  {"request_error": ["x", None]}, {"request_error": [1, 2]},
                                  {"request_error": [2**20, None]}])
def test_malformed_request_error_body(body):
    with pytest.raises(errors.InvalidRequestError):
        parse_response_body(ApiKey.FETCH, body)


def test_response_for_unknown_api_key():
    with pytest.raises(errors.UnsupportedVersionError):
        decode_response(encode_response_payload(1, {}), 99)
