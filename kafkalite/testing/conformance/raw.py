"""Raw Kafka-protocol requests over a plain socket, for what no client library can express.

confluent-kafka negotiates versions and hides error codes behind retries; an unsupported version,
an OffsetForLeaderEpoch question or one exact error code needs the request itself. Frames are
built and read with kio's schema-generated classes (through ``kafkalite.protocol.kafka.codec``,
which is only kio plus framing), and the response entity is turned into plain data: error codes
by name, durations in milliseconds, record bytes by their length.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import itertools
import socket
import struct
import uuid
from typing import Any

from kio.index import api_key_map

from kafkalite.protocol.kafka import codec

_correlation = itertools.count(1)


def api_name(api_key: int) -> str:
    """``"OffsetForLeaderEpoch"`` for 23 (kio's schema name, in Kafka's spelling)."""
    snake = api_key_map[api_key]
    return "".join(part.capitalize() for part in snake.split("_"))


def plain(value: Any, raw_records: bool = False) -> Any:
    """A kio entity (or any part of one) as JSON-able data; record bytes as their length, or
    as the bytes themselves with ``raw_records`` (for a scenario to decode)."""
    if dataclasses.is_dataclass(value):
        return {f.name: plain(getattr(value, f.name), raw_records)
                for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [plain(item, raw_records) for item in value]
    if isinstance(value, enum.Enum):
        return value.name.upper()
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value) if raw_records else {"bytes": len(value)}
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def _read_exact(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise ConnectionError(f"connection closed after {got} of {n} bytes")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def send_frame(address: str, payload: bytes, timeout_s: float = 10.0) -> bytes | None:
    """Send one request frame; the response payload, or None when the broker closed the
    connection without answering (what Kafka does to a request it cannot parse)."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        try:
            size = struct.unpack(">i", _read_exact(sock, 4))[0]
            return _read_exact(sock, size)
        except ConnectionError:
            return None


def call(address: str, api_key: int, version: int, body: dict,
         timeout_s: float = 10.0, raw_records: bool = False) -> dict | str:
    """Send a request built from ``body`` (field name -> value) and return the response body as
    plain data, or ``"connection closed"``."""
    correlation_id = next(_correlation)
    payload = codec.encode_request(api_key, version, correlation_id, "conformance", body)
    answer = send_frame(address, payload, timeout_s)
    if answer is None:
        return "connection closed"
    got_id, entity = codec.decode_response(api_key, version, answer)
    if got_id != correlation_id:
        return f"correlation id {got_id}, sent {correlation_id}"
    return plain(entity, raw_records)


def call_header_only(address: str, api_key: int, version: int, client_id: str = "conformance",
                     timeout_s: float = 10.0) -> dict | str:
    """A request header (v1, or v2 for ApiVersions v3+) for ``api_key``/``version`` and no
    body, for versions nobody can encode: the answer is read as an ApiVersions v0 response
    when it is one (Kafka answers an unsupported ApiVersions version so), else reported by its
    length."""
    correlation_id = next(_correlation)
    name = client_id.encode()
    payload = struct.pack(">hhih", api_key, version, correlation_id, len(name)) + name
    if api_key == 18 and version >= 3:
        payload += b"\x00"      # header v2: no tagged fields (ApiVersions is flexible from v3)
    answer = send_frame(address, payload, timeout_s)
    if answer is None:
        return "connection closed"
    if api_key == 18:
        _, entity = codec.decode_response(18, 0, answer)
        return plain(entity)
    return {"response_bytes": len(answer)}
