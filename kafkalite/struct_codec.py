"""Kafka's classic (non-flexible) struct encoding, for the version-prefixed keys and values of
the internal topics: ``__consumer_offsets`` (kafkalite.coordinator.records) and
``__transaction_state`` (kafkalite.txn.log_records).

Kafka writes those records with ``MessageUtil.toVersionPrefixedBytes`` and its generated
message classes. None of their versions is flexible, so the encoding is the classic one,
big-endian throughout:

* every key and value starts with its version, an int16;
* ``int8``/``int16``/``int32``/``int64``: two's complement, big-endian;
* ``string``: int16 length, then UTF-8 bytes; a nullable string is length -1 for null;
* ``bytes``: int32 length, then the bytes;
* ``[]T``: int32 count, then the elements; a nullable array is count -1 for null.

Neither kio nor kafka-python ships these internal schemas, so both codecs share this small
reader and writer. Pure: no I/O. The Writer refuses values its field cannot hold (ValueError,
naming the field); the Reader raises CorruptRecordError naming the field and the byte position
for anything that does not decode (truncation, negative lengths where null is not allowed, bad
UTF-8, counts larger than the bytes left could hold).
"""

from __future__ import annotations

import struct

from kafkalite.errors import CorruptRecordError

__all__ = ["Writer", "Reader"]

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}
_I16_MAX = _RANGES["int16"][1]
_I32_MAX = _RANGES["int32"][1]


class Writer:
    """Builds one version-prefixed key or value; ``done()`` gives its bytes."""

    __slots__ = ("parts",)

    def __init__(self, version: int):
        self.parts: list[bytes] = []
        self._int(_I16, "int16", "version", version)

    def _int(self, fmt: struct.Struct, kind: str, name: str, value: int) -> None:
        low, high = _RANGES[kind]
        # bool is an int subclass: refuse it so a flag never lands where a number belongs
        if type(value) is not int or not low <= value <= high:
            raise ValueError(f"{name}={value!r} is not an {kind}")
        self.parts.append(fmt.pack(value))

    def int8(self, name: str, value: int) -> None:
        self._int(_I8, "int8", name, value)

    def int16(self, name: str, value: int) -> None:
        self._int(_I16, "int16", name, value)

    def int32(self, name: str, value: int) -> None:
        self._int(_I32, "int32", name, value)

    def int64(self, name: str, value: int) -> None:
        self._int(_I64, "int64", name, value)

    def string(self, name: str, value: str | None, nullable: bool = False) -> None:
        if value is None:
            if not nullable:
                raise ValueError(f"{name} must not be null")
            self.parts.append(_I16.pack(-1))
            return
        if not isinstance(value, str):
            raise ValueError(f"{name} must be a str, got {type(value).__name__}")
        data = value.encode("utf-8")
        if len(data) > _I16_MAX:
            raise ValueError(f"{name} is {len(data)} bytes in UTF-8; Kafka's limit is {_I16_MAX}")
        self.parts.append(_I16.pack(len(data)))
        self.parts.append(data)

    def bytes_(self, name: str, value) -> None:
        if value is None:
            raise ValueError(f"{name} must not be null")
        data = bytes(value)
        if len(data) > _I32_MAX:
            raise ValueError(f"{name} is too long for Kafka's bytes field")
        self.parts.append(_I32.pack(len(data)))
        self.parts.append(data)

    def count(self, name: str, n: int | None, nullable: bool = False) -> None:
        """An array's count; None writes a null array (-1) where the field is nullable."""
        if n is None:
            if not nullable:
                raise ValueError(f"{name} must not be null")
            self.parts.append(_I32.pack(-1))
            return
        self.int32(name, n)

    def done(self) -> bytes:
        return b"".join(self.parts)


class Reader:
    """Reads one key or value; ``what`` names it in the errors."""

    __slots__ = ("data", "pos", "what")

    def __init__(self, data, what: str):
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise CorruptRecordError(f"{what}: expected bytes, got {type(data).__name__}")
        self.data = bytes(data)
        self.pos = 0
        self.what = what

    def fail(self, message: str):
        raise CorruptRecordError(f"{self.what}: {message} at byte {self.pos} "
                                 f"({len(self.data)} bytes)")

    def _unpack(self, fmt: struct.Struct, field: str) -> int:
        if self.pos + fmt.size > len(self.data):
            self.fail(f"truncated {field}")
        (value,) = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return value

    def int8(self, field: str) -> int:
        return self._unpack(_I8, field)

    def int16(self, field: str) -> int:
        return self._unpack(_I16, field)

    def int32(self, field: str) -> int:
        return self._unpack(_I32, field)

    def int64(self, field: str) -> int:
        return self._unpack(_I64, field)

    def string(self, field: str, nullable: bool = False) -> str | None:
        length = self.int16(field)
        if length < 0:
            if nullable and length == -1:
                return None
            self.fail(f"{field} has length {length}" +
                      ("" if nullable else " but is not nullable"))
        end = self.pos + length
        if end > len(self.data):
            self.fail(f"truncated {field} (declares {length} bytes)")
        try:
            value = self.data[self.pos:end].decode("utf-8")
        except UnicodeDecodeError:
            self.fail(f"{field} is not valid UTF-8")
        self.pos = end
        return value

    def bytes_(self, field: str) -> bytes:
        length = self.int32(field)
        if length < 0:
            self.fail(f"{field} has length {length} but is not nullable")
        end = self.pos + length
        if end > len(self.data):
            self.fail(f"truncated {field} (declares {length} bytes)")
        value = self.data[self.pos:end]
        self.pos = end
        return value

    def count(self, field: str, min_element_size: int, nullable: bool = False) -> int | None:
        """An array's count (None for a null array where the field is nullable)."""
        n = self.int32(field)
        if n < 0:
            if nullable and n == -1:
                return None
            self.fail(f"{field} has {n} elements" +
                      ("" if nullable else " but is not nullable"))
        # each element takes at least min_element_size bytes: refuse impossible counts early
        if n * min_element_size > len(self.data) - self.pos:
            self.fail(f"{field} claims {n} elements, more than the bytes left can hold")
        return n
