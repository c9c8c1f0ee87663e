"""Build kio response entities from plain values, for whichever API version a client speaks.

kio generates one frozen dataclass per message *and version*; fields come and go between versions
(``leader_epoch`` appears in Metadata v7, ``topic_id`` in v10, ...). The broker's handlers answer
with one plain dict per response, holding the union of the fields of every version, and
``build(cls, values)`` keeps what ``cls`` has: fields the version lacks are dropped, fields the
dict lacks take the schema's default. Values are plain Python: ints for error codes and
durations and timestamps in milliseconds, ``str`` topic ids (base64url, as in ZooKeeper) or None, lists of dicts
for nested entities. The kio-specific types (``ErrorCode``, ``timedelta``, ``UUID``, tuples of
nested entities) are made here, and nowhere else.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import typing
import uuid
from functools import lru_cache
from typing import Any

from kio.schema.errors import ErrorCode

__all__ = ["build", "field_names", "millis", "topic_uuid", "unknown_keys"]

_KIND_PLAIN = 0
_KIND_ERROR = 1
_KIND_MILLIS = 2
_KIND_UUID = 3
_KIND_ENTITY = 4
_KIND_ENTITIES = 5
_KIND_TUPLE = 6
_KIND_DATETIME = 7
_KIND_TEXT = 8      # a string field that this version does not allow to be null
_KIND_BLOB = 9      # a bytes field that this version does not allow to be null
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


class _Field(typing.NamedTuple):
    name: str
    kind: int
    nested: type | None
    required: bool


def _nested_entity(annotation) -> tuple[int, type | None]:
    """(kind, nested class) for a field whose type is an entity or a tuple of something."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is tuple:
        inner = args[0]
        if dataclasses.is_dataclass(inner):
            return _KIND_ENTITIES, inner
        return _KIND_TUPLE, None
    if origin is typing.Union or isinstance(annotation, type(int | None)):
        for arg in args:
            if arg is not type(None):
                return _nested_entity(arg)
    if dataclasses.is_dataclass(annotation):
        return _KIND_ENTITY, annotation
    return _KIND_PLAIN, None


def _is_optional(annotation) -> bool:
    return (typing.get_origin(annotation) is typing.Union
            or isinstance(annotation, type(int | None))) and type(None) in typing.get_args(
                annotation)


@lru_cache(maxsize=None)
def _fields(cls: type) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        kafka_type = f.metadata.get("kafka_type")
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if kafka_type == "error_code":
            out.append(_Field(f.name, _KIND_ERROR, None, required))
        elif kafka_type in ("timedelta_i32", "timedelta_i64"):
            out.append(_Field(f.name, _KIND_MILLIS, None, required))
        elif kafka_type == "datetime_i64":
            out.append(_Field(f.name, _KIND_DATETIME, None, required))
        elif kafka_type == "uuid":
            out.append(_Field(f.name, _KIND_UUID, None, required))
        elif (kafka_type in ("string", "bytes") and not _is_optional(hints[f.name])
              and typing.get_origin(hints[f.name]) is not tuple):
            out.append(_Field(f.name, _KIND_TEXT if kafka_type == "string" else _KIND_BLOB,
                              None, required))
        elif kafka_type is not None:
            kind, nested = _nested_entity(hints[f.name])
            out.append(_Field(f.name, kind if kind == _KIND_TUPLE else _KIND_PLAIN, None,
                              required))
        else:
            kind, nested = _nested_entity(hints[f.name])
            out.append(_Field(f.name, kind, nested, required))
    return tuple(out)


def field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in _fields(cls))


@lru_cache(maxsize=4096)
def _error_code(code: int) -> ErrorCode:
    try:
        return ErrorCode(code)
    except ValueError:
        return ErrorCode.unknown_server_error


_ZERO_UUID = uuid.UUID(int=0)


@lru_cache(maxsize=65536)
def topic_uuid(topic_id: str | None) -> uuid.UUID:
    """A ZooKeeper-style base64url topic id as a UUID (the zero UUID when there is none)."""
    if not topic_id:
        return _ZERO_UUID
    try:
        raw = base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4))
        return uuid.UUID(bytes=raw) if len(raw) == 16 else _ZERO_UUID
    except (ValueError, TypeError):
        return _ZERO_UUID


def no_time(millis_value: int) -> datetime.datetime:
    """A timestamp kio writes as ``millis_value`` even when negative, for the fields that are
    not nullable but where Kafka sends -1 (the delegation token answers' error timestamps):
    kio cannot write None there."""
    return _EPOCH + datetime.timedelta(milliseconds=millis_value)


def millis(value) -> int:
    """A kio duration (timedelta) in whole milliseconds."""
    if isinstance(value, datetime.timedelta):
        return (value.days * 86_400_000 + value.seconds * 1000 + value.microseconds // 1000)
    return int(value)


def _convert(f: _Field, value: Any) -> Any:
    kind = f.kind
    if kind == _KIND_TEXT or kind == _KIND_BLOB:
        # one value serves every version: where an older version has no null (JoinGroup's
        # protocol_name is nullable only from v7), None goes out empty, as Kafka sends it
        if value is None:
            return "" if kind == _KIND_TEXT else b""
        return value
    if kind == _KIND_PLAIN or value is None and kind != _KIND_ERROR:
        if kind == _KIND_UUID:
            return _ZERO_UUID
        return value
    if kind == _KIND_ERROR:
        return _error_code(value or 0)
    if kind == _KIND_MILLIS:
        return datetime.timedelta(milliseconds=value)
    if kind == _KIND_DATETIME:
        if isinstance(value, datetime.datetime):   # see ``no_time``
            return value
        # Kafka's -1 ("no time", e.g. log_append_time of a CreateTime topic) is kio's None
        return None if value < 0 else _EPOCH + datetime.timedelta(milliseconds=value)
    if kind == _KIND_UUID:
        return value if isinstance(value, uuid.UUID) else topic_uuid(value)
    if kind == _KIND_ENTITIES:
        nested = f.nested
        return tuple(build(nested, item) for item in value)
    if kind == _KIND_ENTITY:
        return build(f.nested, value)
    return tuple(value)  # _KIND_TUPLE: arrays of primitives


def build(cls: type, values: dict) -> Any:
    """An instance of kio entity ``cls`` from ``values`` (see the module docstring).

    A field the schema requires and ``values`` lacks is an error in the handler: it raises
    KeyError naming the class and field, so a missing field never goes out as a guess.
    """
    if not isinstance(values, dict):  # already an entity of the right class
        return values
    kwargs = {}
    for f in _fields(cls):
        if f.name in values:
            kwargs[f.name] = _convert(f, values[f.name])
        elif f.required:
            raise KeyError(f"{cls.__module__}.{cls.__name__}: no value for field {f.name!r}")
    return cls(**kwargs)


def unknown_keys(cls: type, values: dict, path: str = "") -> set[str]:
    """The keys of ``values`` (recursively, as dotted paths) that entity ``cls`` has no field
    for. ``build`` drops such keys, since one dict serves every version; a key that no version
    of an API knows is a misspelling, which the converters' tests catch with this."""
    if not isinstance(values, dict):
        return set()
    fields = {f.name: f for f in _fields(cls)}
    unknown = set()
    for key, value in values.items():
        f = fields.get(key)
        if f is None:
            unknown.add(path + key)
        elif f.kind == _KIND_ENTITY and isinstance(value, dict):
            unknown |= unknown_keys(f.nested, value, f"{path}{key}.")
        elif f.kind == _KIND_ENTITIES and value:
            for item in value:
                unknown |= unknown_keys(f.nested, item, f"{path}{key}[].")
    return unknown
