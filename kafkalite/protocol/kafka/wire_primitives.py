"""The primitives of Kafka's wire format that the struct-written hot answers share
(``produce_response``, ``fetch_response``): big-endian integers, unsigned varints, strings,
bytes and array counts in both their classic and their flexible (KIP-482, compact) forms.

kio writes the same primitives for every other answer; these exist only so that the two answers
a broker sends most need not go through kio's generic entity path (see those modules for why).
"""

from __future__ import annotations

import struct

__all__ = ["I16", "I32", "I64", "NO_TAGS", "response_header", "uvarint", "string",
           "nullable_string", "count", "nullable_count", "nullable_bytes_prefix"]

I16 = struct.Struct(">h")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")
NO_TAGS = b"\x00"          # an empty tagged-field section of a flexible version


def response_header(correlation_id: int, flexible: bool) -> bytes:
    """ResponseHeader v0 (the correlation id), or v1 (with empty tagged fields) for a flexible
    version."""
    return I32.pack(correlation_id) + NO_TAGS if flexible else I32.pack(correlation_id)


def uvarint(value: int) -> bytes:
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def string(value: str, flexible: bool) -> bytes:
    data = value.encode()
    if flexible:
        return uvarint(len(data) + 1) + data
    if len(data) > 0x7FFF:
        raise OverflowError("string too long")
    return I16.pack(len(data)) + data


def nullable_string(value: str | None, flexible: bool) -> bytes:
    if value is None:
        return b"\x00" if flexible else I16.pack(-1)
    return string(value, flexible)


def count(n: int, flexible: bool) -> bytes:
    """An array's length prefix."""
    return uvarint(n + 1) if flexible else I32.pack(n)


def nullable_count(n: int | None, flexible: bool) -> bytes:
    """A nullable array's length prefix (None: Kafka's null)."""
    if n is None:
        return b"\x00" if flexible else I32.pack(-1)
    return count(n, flexible)


def nullable_bytes_prefix(value: bytes | None, flexible: bool) -> bytes:
    """The length prefix of nullable bytes (records, in the Fetch answer); the caller writes the
    bytes after it, uncopied."""
    if value is None:
        return b"\x00" if flexible else I32.pack(-1)
    return uvarint(len(value) + 1) if flexible else I32.pack(len(value))
