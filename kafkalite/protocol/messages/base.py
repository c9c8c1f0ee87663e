"""The codec's machinery every API module builds on: field validators (``Int16``, ``array``,
``struct``, ...), the ``Message`` / ``Request`` / ``Response`` bases, the ``_message`` class
decorator that derives a class's wire schema from its type hints, the nested entries several
APIs share, and ``RequestErrorResponse`` (the request-level error body, tied to no API).

It imports no API module, so each of them can import it (``kafkalite.protocol.messages`` is
the package that gathers them all).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Callable, ClassVar, NamedTuple

from kafkalite.errors import InvalidRequestError, KafkaError, for_code
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.topic_partition import INT32


# ================================================================================================
# Field validators
#
# A validator is ``f(value) -> value``: it returns the (possibly converted) value or raises
# ``_BadField``. It carries ``.expected`` (a name for messages) and ``.identity`` (True when it
# returns its input unchanged, so containers of it need no copy). Paths to a bad field are built
# only when something is wrong: a container that sees a failure re-runs its (pure) element
# validators to find which element failed and prepends that segment.
# ================================================================================================


class _BadField(Exception):
    def __init__(self, expected: str, value: Any):
        super().__init__(expected)
        self.expected = expected
        self.got = _describe(value)
        self.path: list[str] = []   # innermost first


def _describe(value: Any) -> str:
    kind = type(value).__name__
    if type(value) is int:
        return f"int {value}"
    if isinstance(value, (list, tuple)):
        return f"{kind} of length {len(value)}"
    return kind


Validator = Callable[[Any], Any]


def _mark(fn: Validator, expected: str, identity: bool) -> Validator:
    fn.expected = expected      # type: ignore[attr-defined]
    fn.identity = identity      # type: ignore[attr-defined]
    return fn


def _int_validator(bits: int) -> Validator:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    name = f"int{bits}"

    def check(v: Any) -> Any:
        if type(v) is int and lo <= v <= hi:
            return v
        raise _BadField(name, v)

    return _mark(check, name, True)


def _type_validator(kind: type, name: str) -> Validator:
    def check(v: Any) -> Any:
        if type(v) is kind:
            return v
        raise _BadField(name, v)

    return _mark(check, name, True)


I8 = _int_validator(8)
I16 = _int_validator(16)
I32 = _int_validator(32)
I64 = _int_validator(64)
BOOL = _type_validator(bool, "bool")
STR = _type_validator(str, "str")
BYTES = _type_validator(bytes, "bytes")
FLOAT64 = _type_validator(float, "float64")

Int8 = Annotated[int, I8]
Int16 = Annotated[int, I16]
Int32 = Annotated[int, I32]
Int64 = Annotated[int, I64]


def nullable(inner: Validator) -> Validator:
    name = f"{inner.expected} or nil"

    def check(v: Any) -> Any:
        if v is None:
            return None
        try:
            return inner(v)
        except _BadField as err:
            if not err.path:
                err.expected = name
            raise

    return _mark(check, name, inner.identity)


def array(elem: Validator) -> Validator:
    name = f"array of {elem.expected}"

    def locate(v: Any, err: _BadField) -> None:
        for i, x in enumerate(v):
            try:
                elem(x)
            except _BadField:
                err.path.append(f"[{i}]")
                return

    if elem.identity:
        def check(v: Any) -> Any:
            if type(v) is not list and type(v) is not tuple:
                raise _BadField(name, v)
            try:
                for x in v:
                    elem(x)
            except _BadField as err:
                locate(v, err)
                raise
            return v
    else:
        def check(v: Any) -> Any:
            if type(v) is not list and type(v) is not tuple:
                raise _BadField(name, v)
            try:
                return [elem(x) for x in v]
            except _BadField as err:
                locate(v, err)
                raise

    return _mark(check, name, elem.identity)


def mapping(key: Validator, value: Validator) -> Validator:
    name = f"map of {key.expected} to {value.expected}"

    def locate(v: dict, err: _BadField) -> None:
        for k, x in v.items():
            try:
                key(k)
            except _BadField:
                err.path.append(f"<key {k!r}>")
                return
            try:
                value(x)
            except _BadField:
                err.path.append(f"[{k!r}]")
                return

    identity = key.identity and value.identity
    if identity:
        def check(v: Any) -> Any:
            if type(v) is not dict:
                raise _BadField(name, v)
            try:
                for k, x in v.items():
                    key(k)
                    value(x)
            except _BadField as err:
                locate(v, err)
                raise
            return v
    else:
        def check(v: Any) -> Any:
            if type(v) is not dict:
                raise _BadField(name, v)
            try:
                return {key(k): value(x) for k, x in v.items()}
            except _BadField as err:
                locate(v, err)
                raise

    return _mark(check, name, identity)


_STRUCTS: dict[type, Validator] = {}


def struct(cls: type) -> Validator:
    """Validator turning an array ``[f1, f2, ...]`` into the NamedTuple ``cls``."""
    cached = _STRUCTS.get(cls)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(cls, include_extras=True)
    names = cls._fields
    fields = tuple(_validator_for(hints[n], f"{cls.__name__}.{n}") for n in names)
    n_fields = len(names)
    name = f"{cls.__name__} (array of {n_fields})"
    new = tuple.__new__

    def check(v: Any) -> Any:
        if (type(v) is not list and not isinstance(v, tuple)) or len(v) != n_fields:
            raise _BadField(name, v)
        try:
            return new(cls, [f(x) for f, x in zip(fields, v)])
        except _BadField as err:
            for fname, f, x in zip(names, fields, v):
                try:
                    f(x)
                except _BadField:
                    err.path.append("." + fname)
                    break
            raise

    _mark(check, name, False)
    _STRUCTS[cls] = check
    return check


def _validator_for(hint: Any, where: str) -> Validator:
    """The validator for a type hint (ints must say their width: Int8/Int16/Int32/Int64)."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Annotated:
        meta = hint.__metadata__[0]
        return I32 if meta == INT32 else meta     # TopicPartition's partition says "int32"
    if hint is str:
        return STR
    if hint is bytes:
        return BYTES
    if hint is bool:
        return BOOL
    if hint is float:
        return FLOAT64
    if origin in (typing.Union, types.UnionType):
        others = [a for a in args if a is not type(None)]
        if len(others) == 1 and len(args) == 2:
            return nullable(_validator_for(others[0], where))
    if origin is list and len(args) == 1:
        return array(_validator_for(args[0], where))
    if origin is dict and len(args) == 2:
        return mapping(_validator_for(args[0], where), _validator_for(args[1], where))
    if isinstance(hint, type) and issubclass(hint, tuple) and hasattr(hint, "_fields"):
        return struct(hint)
    raise TypeError(f"{where}: no wire type for {hint!r} (ints need Int8/Int16/Int32/Int64)")


# ================================================================================================
# Message base
# ================================================================================================


class Message:
    """Base of every request and response class."""

    __slots__ = ()
    API_KEY: ClassVar[int]
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 0
    _SCHEMA: ClassVar[tuple[tuple[str, Validator], ...]] = ()
    _NAMES: ClassVar[tuple[str, ...]] = ()

    def to_body(self, version: int = 0) -> dict[str, Any]:
        """The msgpack-ready body: a dict keyed by field name (nested entries stay tuples)."""
        return {name: getattr(self, name) for name in self._NAMES}

    @classmethod
    def from_body(cls, body: Any, version: int = 0):
        """Build from a decoded body, checking every field; raises InvalidRequestError."""
        if type(body) is not dict:
            raise InvalidRequestError(
                f"{cls.__name__}: body must be a map, got {_describe(body)}")
        values = {}
        for name, check in cls._SCHEMA:
            try:
                raw = body[name]
            except KeyError:
                raise InvalidRequestError(f"{cls.__name__}: missing field '{name}'") from None
            try:
                values[name] = check(raw)
            except _BadField as err:
                path = name + "".join(reversed(err.path))
                raise InvalidRequestError(
                    f"{cls.__name__}: field '{path}': expected {err.expected}, got {err.got}"
                ) from None
        return cls(**values)


class Request(Message):
    __slots__ = ()

    def expects_response(self) -> bool:
        """False when the broker sends no response at all (Produce with acks=0)."""
        return True

    def error_response(self, error_code: int, error_message: str | None = None) -> Response:
        raise NotImplementedError


class Response(Message):
    __slots__ = ()


def _message(api_key: ApiKey):
    """Class decorator: make a keyword-only slotted dataclass and derive its wire schema."""

    def wrap(cls):
        repr_flag = "__repr__" not in cls.__dict__
        cls = dataclass(slots=True, kw_only=True, repr=repr_flag)(cls)
        cls.API_KEY = api_key
        hints = typing.get_type_hints(cls, include_extras=True)
        schema = tuple((f.name, _validator_for(hints[f.name], f"{cls.__name__}.{f.name}"))
                       for f in dataclasses.fields(cls))
        cls._SCHEMA = schema
        cls._NAMES = tuple(name for name, _ in schema)
        return cls

    return wrap


def _bytes_summary(data: Any) -> str:
    return f"<{len(data)} bytes>"


# ================================================================================================
# Shared nested entries
# ================================================================================================


class PartitionError(NamedTuple):
    topic: str
    partition: Int32
    error_code: Int16


# ================================================================================================
# The request-level error body (not tied to an API)
# ================================================================================================

REQUEST_ERROR_KEY = "request_error"


@dataclass(slots=True, kw_only=True)
class RequestErrorResponse:
    """A response saying the whole request failed: ``{"request_error": [code, message]}``."""

    error_code: Int16
    error_message: str | None = None

    def to_body(self, version: int = 0) -> dict[str, Any]:
        return {REQUEST_ERROR_KEY: [self.error_code, self.error_message]}

    @classmethod
    def from_body(cls, body: Any, version: int = 0) -> RequestErrorResponse:
        value = body.get(REQUEST_ERROR_KEY) if type(body) is dict else None
        if ((type(value) is not list and type(value) is not tuple) or len(value) != 2
                or type(value[0]) is not int or not -32768 <= value[0] <= 32767
                or not (value[1] is None or type(value[1]) is str)):
            raise InvalidRequestError(
                "RequestErrorResponse: field 'request_error': expected [int16, str or nil]")
        return cls(error_code=value[0], error_message=value[1])

    @staticmethod
    def is_request_error(body: Any) -> bool:
        return type(body) is dict and REQUEST_ERROR_KEY in body

    def exception(self) -> KafkaError:
        """The exception this error stands for (``errors.for_code``)."""
        return for_code(self.error_code, self.error_message)
