"""Kafka's request and response frames, through kio's schema-generated codecs.

A request frame (the int32 length already removed) is a request header -- v1, or v2 with tagged
fields for flexible versions -- then the body of the request class for that API and version. A
response is the response header -- v0 (the correlation id), or v1 with tagged fields for flexible
versions, except ApiVersions, which always answers with v0 so a client can read it before it knows
what the broker speaks -- then the body.

Record data stays opaque here: kio reads and writes a Produce or Fetch ``records`` field as bytes.

Malformed input raises ``InvalidRequestError`` with what is wrong; nothing else escapes the
decoder for bad bytes. Trailing bytes after a complete body are not an error (Kafka's rule).
"""

from __future__ import annotations

import io
import struct
from functools import lru_cache
from typing import Any, NamedTuple

from kio.index import load_request_schema, load_response_schema
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer

from kafkalite.errors import InvalidRequestError
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka.entities import build
from kafkalite.protocol.kafka.versions import is_supported

__all__ = ["KafkaRequestHeader", "peek_header", "decode_request", "encode_response",
           "request_class", "response_class"]

# The fixed start of every request header, whatever its version: enough to answer (or refuse)
# a request whose version kafkalite cannot parse.
_FIXED = struct.Struct(">hhi")


class KafkaRequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def peek_header(payload) -> tuple[int, int, int]:
    """``(api_key, api_version, correlation_id)`` from a frame's first 8 bytes."""
    if len(payload) < _FIXED.size:
        raise InvalidRequestError(f"a Kafka request header needs {_FIXED.size} bytes, the frame "
                                  f"has {len(payload)}")
    return _FIXED.unpack_from(payload, 0)


@lru_cache(maxsize=None)
def request_class(api_key: int, api_version: int) -> type:
    return load_request_schema(api_key, api_version)


@lru_cache(maxsize=None)
def response_class(api_key: int, api_version: int) -> type:
    return load_response_schema(api_key, api_version)


@lru_cache(maxsize=None)
def _reader(cls: type):
    return entity_reader(cls)


@lru_cache(maxsize=None)
def _writer(cls: type):
    return entity_writer(cls)


def decode_request(payload) -> tuple[KafkaRequestHeader, Any]:
    """The header and body entity of one request frame of a supported API and version."""
    api_key, api_version, _ = peek_header(payload)
    if not is_supported(api_key, api_version):
        raise InvalidRequestError(f"{ApiKey.name_of(api_key)} v{api_version} is not supported")
    cls = request_class(api_key, api_version)
    header_cls = cls.__header_schema__
    view = memoryview(payload)
    try:
        header, offset = _reader(header_cls)(view, 0)
        body, size = _reader(cls)(view, offset)
    except Exception as exc:  # noqa: BLE001 - kio raises several kinds for bad bytes
        raise InvalidRequestError(
            f"malformed {ApiKey.name_of(api_key)} v{api_version} request: "
            f"{type(exc).__name__}: {exc}") from None
    # Bytes after the body are ignored, as Kafka's parser ignores them: librdkafka 2.x sends
    # three extra bytes with its all-topics Metadata v11 request.
    return KafkaRequestHeader(api_key, api_version, header.correlation_id, header.client_id), body


def _response_header(api_key: int, cls: type, correlation_id: int) -> bytes:
    buf = io.BytesIO()
    if api_key == ApiKey.API_VERSIONS or not cls.__flexible__:
        _writer(ResponseHeaderV0)(buf, ResponseHeaderV0(correlation_id=correlation_id))
    else:
        _writer(ResponseHeaderV1)(buf, ResponseHeaderV1(correlation_id=correlation_id))
    return buf.getvalue()


def encode_response(api_key: int, api_version: int, correlation_id: int, values) -> bytes:
    """The response frame payload (header and body) for ``values`` (a dict, see ``build``)."""
    cls = response_class(api_key, api_version)
    body = build(cls, values)
    buf = io.BytesIO()
    buf.write(_response_header(api_key, cls, correlation_id))
    _writer(cls)(buf, body)
    return buf.getvalue()


def encode_request(api_key: int, api_version: int, correlation_id: int,
                   client_id: str | None, values) -> bytes:
    """A request frame payload: for tests, fuzzers and tools that speak Kafka to a broker."""
    cls = request_class(api_key, api_version)
    header_cls = cls.__header_schema__
    buf = io.BytesIO()
    header = header_cls(request_api_key=api_key, request_api_version=api_version,
                        correlation_id=correlation_id, client_id=client_id)
    _writer(header_cls)(buf, header)
    _writer(cls)(buf, build(cls, values))
    return buf.getvalue()


def decode_response(api_key: int, api_version: int, payload) -> tuple[int, Any]:
    """``(correlation_id, body entity)`` of a response frame: for tests and tools."""
    cls = response_class(api_key, api_version)
    header_cls = (ResponseHeaderV0 if api_key == ApiKey.API_VERSIONS or not cls.__flexible__
                  else ResponseHeaderV1)
    view = memoryview(payload)
    header, offset = _reader(header_cls)(view, 0)
    body, _ = _reader(cls)(view, offset)
    return header.correlation_id, body


# Keep the header classes referenced: request classes name them through __header_schema__.
_HEADERS = (RequestHeaderV1, RequestHeaderV2)
