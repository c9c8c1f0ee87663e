"""The envelope: one msgpack value per frame.

* request  frame payload: ``[api_key, api_version, correlation_id, client_id, body]``
* response frame payload: ``[correlation_id, body]``

msgpack settings: packing with ``use_bin_type=True`` (bytes → bin, str → str); unpacking with
``raw=False`` (str must be valid UTF-8) and ``strict_map_key=False`` (partition numbers are int
map keys).

Errors, so a broker can always decide what to do:

* payload is not one well-formed msgpack value, or the header is not as above →
  ``InvalidRequestError`` with ``exc.header = None`` (no correlation id: close the connection);
* the header is fine but the API key is unknown or the version out of range →
  ``UnsupportedVersionError`` with ``exc.header`` set;
* the header is fine but the body is malformed → ``InvalidRequestError`` with ``exc.header`` set.

With ``exc.header`` set, answer with ``encode_error_response(exc.header.correlation_id,
code_of(exc), str(exc.message))``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import msgpack

from kafkalite.errors import InvalidRequestError, KafkaError, UnsupportedVersionError
from kafkalite.protocol.framing import encode_frame
from kafkalite.protocol.messages import (
    Request,
    RequestErrorResponse,
    Response,
    request_class_for,
    response_class_for,
)

__all__ = [
    "RequestHeader", "pack", "unpack",
    "encode_request_payload", "decode_request_envelope", "parse_request_body",
    "encode_response_payload", "decode_response_envelope", "parse_response_body",
    "encode_request", "decode_request", "encode_response", "decode_response",
    "encode_error_response",
]

_INT16 = (-(1 << 15), (1 << 15) - 1)
_INT32 = (-(1 << 31), (1 << 31) - 1)


class RequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def pack(value: Any) -> bytes:
    """One msgpack value; TypeError/ValueError become InvalidRequestError."""
    try:
        return msgpack.packb(value, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidRequestError(f"cannot encode message: {exc}") from None


def unpack(payload: bytes) -> Any:
    """Exactly one msgpack value from ``payload``; anything else raises InvalidRequestError."""
    try:
        return msgpack.unpackb(payload, raw=False, strict_map_key=False, use_list=True)
    except msgpack.ExtraData:
        raise InvalidRequestError("malformed frame: extra bytes after the msgpack value") from None
    except Exception as exc:  # OutOfData, FormatError, StackError, UnicodeDecodeError, TypeError...
        raise InvalidRequestError(
            f"malformed frame: not a msgpack value ({type(exc).__name__}: {exc})") from None


def _with_header(exc: KafkaError, header: RequestHeader | None) -> KafkaError:
    exc.header = header  # type: ignore[attr-defined]
    return exc


def _int_in(v: Any, bounds: tuple[int, int]) -> bool:
    return type(v) is int and bounds[0] <= v <= bounds[1]


# --- requests ---------------------------------------------------------------------------------


def encode_request_payload(api_key: int, api_version: int, correlation_id: int,
                           client_id: str | None, body: Any) -> bytes:
    return pack([int(api_key), api_version, correlation_id, client_id, body])


def decode_request_envelope(payload: bytes) -> tuple[RequestHeader, Any]:
    """``(header, raw body)``; InvalidRequestError (``.header`` None) when unreadable."""
    try:
        value = unpack(payload)
    except InvalidRequestError as exc:
        raise _with_header(exc, None) from None
    if type(value) is not list or len(value) != 5:
        raise _with_header(InvalidRequestError(
            "malformed request: expected [api_key, api_version, correlation_id, client_id, body]"
        ), None)
    api_key, api_version, correlation_id, client_id, body = value
    for name, v, bounds in (("api_key", api_key, _INT16), ("api_version", api_version, _INT16),
                            ("correlation_id", correlation_id, _INT32)):
        if not _int_in(v, bounds):
            raise _with_header(InvalidRequestError(
                f"malformed request header: {name} must be an int{16 if bounds is _INT16 else 32}"
                f", got {type(v).__name__}"), None)
    if client_id is not None and type(client_id) is not str:
        raise _with_header(InvalidRequestError(
            f"malformed request header: client_id must be a str or nil, "
            f"got {type(client_id).__name__}"), None)
    return RequestHeader(api_key, api_version, correlation_id, client_id), body


def parse_request_body(header: RequestHeader, body: Any) -> Request:
    """The request object; UnsupportedVersionError/InvalidRequestError carry ``.header``."""
    try:
        cls = request_class_for(header.api_key, header.api_version)
        return cls.from_body(body, header.api_version)
    except (UnsupportedVersionError, InvalidRequestError) as exc:
        raise _with_header(exc, header) from None


def encode_request(req: Request, api_version: int = 0, correlation_id: int = 0,
                   client_id: str | None = None) -> bytes:
    """A whole request frame (length prefix included)."""
    return encode_frame(encode_request_payload(req.API_KEY, api_version, correlation_id,
                                               client_id, req.to_body(api_version)))


def decode_request(payload: bytes) -> tuple[RequestHeader, Request]:
    """Frame payload (no length prefix) → ``(header, request)``. See the module doc for errors."""
    header, body = decode_request_envelope(payload)
    return header, parse_request_body(header, body)


# --- responses --------------------------------------------------------------------------------


def encode_response_payload(correlation_id: int, body: Any) -> bytes:
    return pack([correlation_id, body])


def decode_response_envelope(payload: bytes) -> tuple[int, Any]:
    """``(correlation_id, raw body)``; InvalidRequestError when unreadable."""
    value = unpack(payload)
    if type(value) is not list or len(value) != 2:
        raise InvalidRequestError("malformed response: expected [correlation_id, body]")
    correlation_id, body = value
    if not _int_in(correlation_id, _INT32):
        raise InvalidRequestError(
            f"malformed response: correlation_id must be an int32, got {type(correlation_id).__name__}")
    return correlation_id, body


def parse_response_body(api_key: int, body: Any,
                        api_version: int = 0) -> Response | RequestErrorResponse:
    """The response object for ``api_key``, or a RequestErrorResponse if the broker sent one."""
    if RequestErrorResponse.is_request_error(body):
        return RequestErrorResponse.from_body(body)
    return response_class_for(api_key, api_version).from_body(body, api_version)


def encode_response(correlation_id: int, resp: Response | RequestErrorResponse,
                    api_version: int = 0) -> bytes:
    """A whole response frame (length prefix included)."""
    return encode_frame(encode_response_payload(correlation_id, resp.to_body(api_version)))


def encode_error_response(correlation_id: int, error_code: int,
                          error_message: str | None = None) -> bytes:
    """A whole frame carrying a RequestErrorResponse."""
    return encode_response(correlation_id, RequestErrorResponse(error_code=error_code,
                                                                error_message=error_message))


def decode_response(payload: bytes, api_key: int,
                    api_version: int = 0) -> tuple[int, Response | RequestErrorResponse]:
    """Frame payload (no length prefix) → ``(correlation_id, response)``."""
    correlation_id, body = decode_response_envelope(payload)
    return correlation_id, parse_response_body(api_key, body, api_version)
