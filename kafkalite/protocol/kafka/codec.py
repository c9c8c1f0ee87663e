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

import dataclasses
import io
import struct
import typing
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
from kafkalite.protocol.kafka import fetch_v0_v3
from kafkalite.protocol.kafka.entities import build

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
    if api_key == ApiKey.FETCH and api_version in fetch_v0_v3.VERSIONS:
        return fetch_v0_v3.request_schema(api_version)   # kio has none below v4
    return load_request_schema(api_key, api_version)


@lru_cache(maxsize=None)
def response_class(api_key: int, api_version: int) -> type:
    if api_key == ApiKey.FETCH and api_version in fetch_v0_v3.VERSIONS:
        return fetch_v0_v3.response_schema(api_version)
    return load_response_schema(api_key, api_version)


@lru_cache(maxsize=None)
def _reader(cls: type):
    return entity_reader(cls)


@lru_cache(maxsize=None)
def _writer(cls: type):
    return entity_writer(cls)


def decode_request(payload) -> tuple[KafkaRequestHeader, Any]:
    """The header and body entity of one request frame (whether the broker serves the API at
    that version is the API table's to say: ``server.api_table``)."""
    api_key, api_version, _ = peek_header(payload)
    try:
        cls = request_class(api_key, api_version)
    except Exception:  # noqa: BLE001 - kio knows no such API or version
        raise InvalidRequestError(f"{ApiKey.name_of(api_key)} v{api_version} is not a request "
                                  "kio knows") from None
    header_cls = cls.__header_schema__
    view = memoryview(payload)
    _check_structure(header_cls, cls, view, api_key, api_version)
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


# --- array counts, checked before kio reads them --------------------------------------------
# kio's native reader sizes a compact array's list from the declared element count before it
# reads a single element, so a few bytes declaring ~2**32 elements make it ask for tens of GB:
# the allocation fails and Rust aborts the whole broker process (not an exception). And kio
# reads a null array (count -1, or compact 0) as None even where the schema says the array is
# not nullable, which Kafka refuses ("non-nullable field ... was serialized as null") and the
# handlers do not expect. So the frame's structure is walked here first: an array declaring
# more elements than bytes remain -- every element takes at least one byte -- or a null where
# null is not allowed is refused as the invalid request it is.

_FIXED_WIDTH = {"int8": 1, "uint8": 1, "bool": 1, "int16": 2, "uint16": 2, "error_code": 2,
                "int32": 4, "uint32": 4, "timedelta_i32": 4, "int64": 8, "uint64": 8,
                "float64": 8, "timedelta_i64": 8, "datetime_i64": 8, "uuid": 16}
_OP_FIXED, _OP_VARLEN, _OP_LEN16, _OP_LEN32, _OP_ARRAY, _OP_CARRAY, _OP_ENTITY, _OP_NENTITY = \
    range(8)


class _Truncated(Exception):
    pass


def _uvarint(view, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(view):
            raise _Truncated
        byte = view[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise InvalidRequestError("a varint is longer than 5 bytes")


def _primitive_op(kafka_type: str, flexible: bool, legacy_string: bool) -> tuple:
    if kafka_type in _FIXED_WIDTH:
        return (_OP_FIXED, _FIXED_WIDTH[kafka_type])
    if kafka_type == "string":
        return (_OP_VARLEN,) if flexible and not legacy_string else (_OP_LEN16,)
    if kafka_type in ("bytes", "records"):
        return (_OP_VARLEN,) if flexible else (_OP_LEN32,)
    raise TypeError(f"no layout for kafka_type {kafka_type!r}")


@lru_cache(maxsize=None)
def _layout(cls: type) -> tuple[tuple, dict | None]:
    """(ops for the untagged fields in wire order, {tag: op} or None when not flexible)."""
    flexible = cls.__flexible__
    hints = typing.get_type_hints(cls)
    ops, tagged = [], {}
    for f in dataclasses.fields(cls):
        annotation, optional = hints[f.name], False
        if typing.get_origin(annotation) in (typing.Union, type(int | None)):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            annotation, optional = args[0], True
        if typing.get_origin(annotation) is tuple:
            inner = typing.get_args(annotation)[0]
            item = ((_OP_ENTITY, inner) if dataclasses.is_dataclass(inner) else
                    _primitive_op(f.metadata["kafka_type"], flexible, False))
            op = (_OP_CARRAY if flexible else _OP_ARRAY, item, optional, f.name)
        elif dataclasses.is_dataclass(annotation):
            op = (_OP_NENTITY if optional else _OP_ENTITY, annotation)
        else:
            op = _primitive_op(f.metadata["kafka_type"], flexible,
                               cls.__name__ == "RequestHeader" and f.name == "client_id")
        if "tag" in f.metadata:
            tagged[f.metadata["tag"]] = op
        elif op[0] == _OP_FIXED and ops and ops[-1][0] == _OP_FIXED:
            ops[-1] = (_OP_FIXED, ops[-1][1] + op[1])    # one step over adjacent fixed fields
        else:
            ops.append(op)
    return tuple(ops), (tagged if flexible else None)


def _walk_entity(cls: type, view, pos: int) -> int:
    ops, tagged = _layout(cls)
    for op in ops:
        pos = _walk(op, view, pos)
    if tagged is not None:
        if pos < len(view) and view[pos] == 0:     # the usual case: no tagged fields
            return pos + 1
        count, pos = _uvarint(view, pos)
        for _ in range(count):
            tag, pos = _uvarint(view, pos)
            size, pos = _uvarint(view, pos)
            end = pos + size
            if end > len(view):
                raise _Truncated
            if tag in tagged:
                _walk(tagged[tag], view[:end], pos)
            pos = end
    return pos


def _walk(op: tuple, view, pos: int) -> int:
    kind = op[0]
    if kind == _OP_FIXED:
        pos += op[1]
    elif kind == _OP_VARLEN:
        length, pos = _uvarint(view, pos)
        pos += max(0, length - 1)
    elif kind == _OP_LEN16 or kind == _OP_LEN32:
        width = 2 if kind == _OP_LEN16 else 4
        if pos + width > len(view):
            raise _Truncated
        length = int.from_bytes(view[pos:pos + width], "big", signed=True)
        pos += width + max(0, length)
    elif kind == _OP_ARRAY or kind == _OP_CARRAY:
        if kind == _OP_CARRAY:
            count, pos = _uvarint(view, pos)
            count -= 1
        else:
            if pos + 4 > len(view):
                raise _Truncated
            count = int.from_bytes(view[pos:pos + 4], "big", signed=True)
            pos += 4
        if count > len(view) - pos:
            raise InvalidRequestError(f"array {op[3]} declares {count} elements with "
                                      f"{len(view) - pos} bytes left in the frame")
        if count < 0 and not op[2]:
            raise InvalidRequestError(f"non-nullable array {op[3]} is null")
        item = op[1]
        if item[0] == _OP_ENTITY and _layout(item[1])[1] is None and \
                len(_layout(item[1])[0]) == 1 and _layout(item[1])[0][0][0] == _OP_FIXED:
            item = _layout(item[1])[0][0]        # an entity of fixed-width fields only
        if item[0] == _OP_FIXED:
            pos += max(0, count) * item[1]
        else:
            for _ in range(max(0, count)):
                pos = _walk(item, view, pos)
    elif kind == _OP_ENTITY:
        pos = _walk_entity(op[1], view, pos)
    else:  # _OP_NENTITY: an int8 marker (-1 null), then the entity
        if pos >= len(view):
            raise _Truncated
        marker = view[pos]
        pos += 1
        if marker != 0xFF:
            pos = _walk_entity(op[1], view, pos)
    if pos > len(view):
        raise _Truncated
    return pos


def _check_structure(header_cls: type, cls: type, view, api_key: int,
                     api_version: int) -> None:
    try:
        _walk_entity(cls, view, _walk_entity(header_cls, view, 0))
    except _Truncated:
        raise InvalidRequestError(f"malformed {ApiKey.name_of(api_key)} v{api_version} "
                                  f"request: truncated") from None
    except InvalidRequestError as exc:
        raise InvalidRequestError(f"malformed {ApiKey.name_of(api_key)} v{api_version} "
                                  f"request: {exc.message}") from None


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
