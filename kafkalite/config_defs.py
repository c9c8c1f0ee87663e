"""The machinery of kafkalite's configuration table (``kafkalite.config``): value types, validators,
``ConfigDef`` (one row of the table), and readers for Kafka-style ``.properties`` files and
``--override key=value`` flags. The table itself, with every key, is ``kafkalite.config``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from kafkalite.errors import ConfigError

# --- types and validators ----------------------------------------------------------------------

def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ValueError("expected true or false")


def _parse_list(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


_PARSERS: dict[str, Callable[[str], Any]] = {
    "int": lambda s: int(s.strip()),
    "long": lambda s: int(s.strip()),
    "double": lambda s: float(s.strip()),
    "boolean": _parse_bool,
    "string": lambda s: s.strip(),
    "list": _parse_list,
    "password": lambda s: s,
}


_TYPE_WORDS = {"int": "an integer", "long": "an integer", "double": "a number",
               "boolean": "true or false", "string": "a string", "list": "a list",
               "password": "a string"}


@dataclass(frozen=True)
class Validator:
    check: Callable[[Any], bool]
    allowed: str
    #: the whole refusal of a value, in Kafka's words, where Kafka's validator has its own
    kafka_refusal: Callable[[str, Any], str] | None = None


def at_least(low: int | float) -> Validator:
    return Validator(lambda v: v >= low, f"a number >= {low}")


def between(low: int | float, high: int | float) -> Validator:
    return Validator(lambda v: low <= v <= high, f"a number in [{low}, {high}]")


def one_of(*choices: Any) -> Validator:
    return Validator(lambda v: v in choices, "one of " + ", ".join(map(str, choices)))


def each_one_of(*choices: str) -> Validator:
    return Validator(lambda v: bool(v) and all(item in choices for item in v),
                     "a comma-separated list of " + ", ".join(choices))


_LISTENER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*://[^:/\s]*:\d{1,5}$")
listeners_valid = Validator(lambda v: all(_LISTENER.match(item) for item in v),
                            "a comma-separated list of NAME://host:port (host may be empty)")
non_empty = Validator(lambda v: bool(v), "a non-empty value")
# 'producer' keeps each batch as its producer compressed it; any other value makes the leader
# re-encode batches in another codec with it (kafkalite.record.recompress), as Kafka does
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
compression_type = one_of(*COMPRESSION_TYPES)


# Kafka 2.8's ApiVersion list (kafka.api.ApiVersion.allVersions): (version, magic)
_API_VERSIONS = (
    ("0.8.0", 0), ("0.8.1", 0), ("0.8.2", 0), ("0.9.0", 0),
    ("0.10.0-IV0", 1), ("0.10.0-IV1", 1), ("0.10.1-IV0", 1), ("0.10.1-IV1", 1),
    ("0.10.1-IV2", 1), ("0.10.2-IV0", 1),
    ("0.11.0-IV0", 2), ("0.11.0-IV1", 2), ("0.11.0-IV2", 2), ("1.0-IV0", 2), ("1.1-IV0", 2),
    ("2.0-IV0", 2), ("2.0-IV1", 2), ("2.1-IV0", 2), ("2.1-IV1", 2), ("2.1-IV2", 2),
    ("2.2-IV0", 2), ("2.2-IV1", 2), ("2.3-IV0", 2), ("2.3-IV1", 2), ("2.4-IV0", 2),
    ("2.4-IV1", 2), ("2.5-IV0", 2), ("2.6-IV0", 2), ("2.7-IV0", 2), ("2.7-IV1", 2),
    ("2.7-IV2", 2), ("2.8-IV0", 2), ("2.8-IV1", 2),
)
#: every key ApiVersion.apply accepts (full and short versions) -> the magic it stores
FORMAT_VERSIONS: dict[str, int] = {v: m for v, m in _API_VERSIONS}
FORMAT_VERSIONS.update({v.split("-")[0]: m for v, m in _API_VERSIONS})


def _key(version: str) -> str:
    # ApiVersion.apply: "0.10.2.1" is 0.10.2, "2.8.1" is 2.8 (three parts below 1.0, else two)
    parts = version.split(".")
    return ".".join(parts[:3 if version.startswith("0.") else 2])


def check_format_version(version: str) -> bool:
    """Whether Kafka's ApiVersion accepts ``version`` (the config validator)."""
    return isinstance(version, str) and _key(version) in FORMAT_VERSIONS


@lru_cache(maxsize=64)   # asked on every append to a topic
def record_magic(version: str) -> int:
    """The magic a topic of ``message.format.version`` ``version`` stores (ConfigError if it is
    not a Kafka version)."""
    magic = FORMAT_VERSIONS.get(_key(version))
    if magic is None:
        raise ConfigError(f"Version `{version}` is not a valid version")
    return magic


# message.format.version: Kafka's ApiVersionValidator (its ConfigException names the version)
format_version = Validator(
    check_format_version, "a Kafka version (ApiVersion), e.g. 0.10.2, 0.11.0 or 2.8-IV1",
    lambda name, value: f"Invalid value {value} for configuration {name}: Version `{value}` is "
                        "not a valid version")


@dataclass(frozen=True)
class ConfigDef:
    name: str
    type: str
    default: Any
    doc: str
    validator: Validator | None = None
    topic_name: str | None = None  # broker key whose value is the default of this topic key

    @property
    def attr(self) -> str:
        return self.name.replace(".", "_")

    def parse(self, raw: Any) -> Any:
        if isinstance(raw, str):
            try:
                value = _PARSERS[self.type](raw)
            except ValueError as exc:
                raise ConfigError(
                    f"invalid value {raw!r} for configuration {self.name}: {exc}; "
                    f"expected {_TYPE_WORDS[self.type]}") from None
        else:
            value = self._coerce(raw)
        if value is not None and self.validator and not self.validator.check(value):
            if self.validator.kafka_refusal is not None:
                raise ConfigError(self.validator.kafka_refusal(self.name, value))
            raise ConfigError(f"invalid value {raw!r} for configuration {self.name}: "
                              f"allowed is {self.validator.allowed}")
        return value

    def _coerce(self, raw: Any) -> Any:
        expected = {"int": int, "long": int, "double": (int, float), "boolean": bool,
                    "string": str, "password": str, "list": (list, tuple)}[self.type]
        if raw is None and self.default is None:
            return None
        if isinstance(raw, bool) and self.type in ("int", "long", "double"):
            raise ConfigError(f"invalid value {raw!r} for configuration {self.name}: "
                              f"expected {_TYPE_WORDS[self.type]}")
        if not isinstance(raw, expected):
            raise ConfigError(f"invalid value {raw!r} for configuration {self.name}: "
                              f"expected {_TYPE_WORDS[self.type]}")
        return tuple(raw) if self.type == "list" else raw


def as_given(value: Any) -> str:
    """A value given in code (an int, a bool, a list) as a properties file would hold it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    return str(value)


def read_properties(path: str | Path) -> dict[str, str]:
    """Read a Java-style .properties file (``key=value`` or ``key: value``, ``#``/``!`` comments,
    backslash line continuations)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    values: dict[str, str] = {}
    pending = ""
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not pending and (not stripped or stripped[0] in "#!"):
            continue
        if stripped.endswith("\\") and not stripped.endswith("\\\\"):
            pending += stripped[:-1]
            continue
        stripped, pending = pending + stripped, ""
        match = re.match(r"^([^=:\s]+)\s*[=:\s]\s*(.*)$", stripped)
        if not match:
            raise ConfigError(f"{path}:{number}: expected key=value, got {line!r}")
        values[match.group(1)] = match.group(2)
    return values


def parse_overrides(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Parse ``--override key=value`` flags."""
    result = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"override {item!r} must look like key=value")
        key, value = item.split("=", 1)
        result[key.strip()] = value
    return result
