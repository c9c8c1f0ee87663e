"""Shared JSON helpers for the znode payloads (private to zk_schema)."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any


class SchemaError(ValueError):
    """A znode's bytes are not the payload its path promises (bad JSON, wrong shape, missing field)."""


def dump(obj: Any) -> bytes:
    """Compact UTF-8 JSON, as Kafka's Jackson writes it (no spaces)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def load_object(data: bytes | bytearray | memoryview | None, what: str) -> dict[str, Any]:
    """Parse ``data`` as a JSON object, or raise SchemaError naming ``what``."""
    if data is None:
        raise SchemaError(f"{what}: no data")
    try:
        obj = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SchemaError(f"{what}: not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise SchemaError(f"{what}: expected a JSON object, got {type(obj).__name__}")
    return obj


def field(obj: dict[str, Any], key: str, what: str) -> Any:
    try:
        return obj[key]
    except KeyError:
        raise SchemaError(f"{what}: missing field {key!r}") from None


def as_int(value: Any, what: str, key: str) -> int:
    """An integer field; Kafka writes some integers as strings (timestamps, block bounds)."""
    if isinstance(value, bool):
        raise SchemaError(f"{what}: field {key!r} must be an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise SchemaError(f"{what}: field {key!r} must be an integer, got {value!r}")


def int_field(obj: dict[str, Any], key: str, what: str, default: Any = ...) -> int:
    if key not in obj and default is not ...:
        return default
    return as_int(field(obj, key, what), what, key)


def str_field(obj: dict[str, Any], key: str, what: str, default: Any = ...,
              nullable: bool = False) -> Any:
    if key not in obj and default is not ...:
        return default
    value = field(obj, key, what)
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise SchemaError(f"{what}: field {key!r} must be a string, got {value!r}")
    return value


def int_list(value: Any, what: str, key: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise SchemaError(f"{what}: field {key!r} must be a list of integers, got {value!r}")
    return tuple(as_int(v, what, key) for v in value)


def dict_field(obj: dict[str, Any], key: str, what: str, default: Any = ...) -> dict:
    if key not in obj and default is not ...:
        return default
    value = field(obj, key, what)
    if not isinstance(value, dict):
        raise SchemaError(f"{what}: field {key!r} must be an object, got {value!r}")
    return value


def load_text(data: bytes | bytearray | memoryview | None, what: str) -> str:
    if data is None:
        raise SchemaError(f"{what}: no data")
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        raise SchemaError(f"{what}: not UTF-8 text") from None


def load_int_text(data: bytes | bytearray | memoryview | None, what: str) -> int:
    text = load_text(data, what).strip()
    try:
        return int(text)
    except ValueError:
        raise SchemaError(f"{what}: expected an integer as text, got {text!r}") from None


def topic_partition_list(obj: dict[str, Any], what: str) -> tuple[tuple[str, int], ...]:
    """``"partitions":[{"topic":t,"partition":p}, ...]`` -> ((t, p), ...)."""
    items = field(obj, "partitions", what)
    if not isinstance(items, list):
        raise SchemaError(f"{what}: field 'partitions' must be a list")
    out = []
    for item in items:
        if not isinstance(item, dict):
            raise SchemaError(f"{what}: each partition must be an object, got {item!r}")
        out.append((str_field(item, "topic", what), int_field(item, "partition", what)))
    return tuple(out)


def random_uuid_base64() -> str:
    """A random UUID as URL-safe base64 without padding (22 chars), as Kafka's Uuid prints."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")
        if not text.startswith("-"):  # ids starting with '-' read like CLI flags; Kafka avoids them too
            return text


def child_name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def segment(name: str, what: str) -> str:
    """``name`` as one path segment: non-empty, no '/', not '.' or '..'."""
    if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
        raise SchemaError(f"{what} {name!r} cannot be a znode name")
    return name
