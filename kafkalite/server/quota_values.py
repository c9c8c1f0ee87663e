"""Java's number conventions where Kafka 2.8's quota code relies on them: the strings a quota
is stored as (``Double.toString``, ``Long.toString`` after Scala's saturating ``toLong``) and
the way a stored string is read back (``Double.parseDouble``), plus the iteration order of the
``java.util.HashMap`` Kafka's quota entities are kept in (their entity types' order on the wire).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Iterable

from kafkalite.jvm_hashing import java_string_hash

__all__ = ["java_double_to_string", "java_parse_double", "saturating_long", "saturating_int",
           "hash_map_order"]

LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1

# what Double.parseDouble accepts (after trimming): decimal and scientific forms with an
# optional type suffix, NaN and Infinity (hexadecimal floats are left out: nothing writes them)
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fFdD]?)")


def java_double_to_string(value: float) -> str:
    """``Double.toString``: ``50.0``, ``1.0E7``, ``1.0E-4``, ``NaN``, ``Infinity``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    trailing = len(digit_tuple) - len("".join(map(str, digit_tuple)).rstrip("0"))
    exponent += trailing
    sci = len(digits) - 1 + exponent                 # value = d.ddd * 10^sci
    minus = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if sci >= 0:
            whole = digits[:sci + 1].ljust(sci + 1, "0")
            return f"{minus}{whole}.{digits[sci + 1:] or '0'}"
        return f"{minus}0.{'0' * (-sci - 1)}{digits}"
    return f"{minus}{digits[0]}.{digits[1:] or '0'}E{sci}"


def java_parse_double(text: str) -> float:
    """``Double.parseDouble``; ValueError (Java's NumberFormatException) otherwise."""
    stripped = text.strip(" \t\n\r\x0b\x0c\x00")
    if not _JAVA_DOUBLE.fullmatch(stripped):
        raise ValueError(f"not a Java double: {text!r}")
    if stripped[-1] in "fFdD" and not stripped.endswith("Infinity"):
        stripped = stripped[:-1]
    return float(stripped.replace("Infinity", "inf"))


def _saturating(value: float, low: int, high: int) -> int:
    """Scala's Double.toLong / toInt: toward zero, NaN as 0, clamped to the type's range."""
    if math.isnan(value):
        return 0
    if value >= high:
        return high
    if value <= low:
        return low
    return int(value)


def saturating_long(value: float) -> int:
    return _saturating(value, LONG_MIN, LONG_MAX)


def saturating_int(value: float) -> int:
    return _saturating(value, INT_MIN, INT_MAX)


def _table_size_for(capacity: int) -> int:
    size = 1
    while size < capacity:
        size <<= 1
    return size


def hash_map_order(keys: Iterable[str], initial_capacity: int) -> list[str]:
    """The iteration order of ``new HashMap<>(initial_capacity)`` after putting ``keys`` (string
    keys, duplicates kept at their first place): by bucket of the final table, insertion order
    within a bucket."""
    distinct = list(dict.fromkeys(keys))
    size = _table_size_for(max(initial_capacity, 1))
    while len(distinct) > int(size * 0.75):
        size <<= 1

    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (size - 1)

    return sorted(distinct, key=bucket)
