"""The JVM's hashes, and the order in which its hash maps iterate, for output that must match Kafka's tools line
for line (they print maps as they iterate): ``java.util.HashMap`` and Scala 2.13's
``mutable.HashMap`` (Kafka 2.8's tools are Scala 2.13), over the keys those tools use: strings,
ints and ``TopicPartition``.

Both tables start with 16 buckets and double at a load factor of 0.75; a key's bucket is its
spread hash (``h ^ (h >>> 16)``) masked by the table size, and the buckets are read in order.
Within a bucket a Java map keeps insertion order, a Scala map orders by spread hash.
"""

from __future__ import annotations

from typing import Callable, Iterable, TypeVar

__all__ = ["java_string_hash", "topic_partition_hash", "java_hash_map_order",
           "scala_hash_map_order"]

K = TypeVar("K")


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over the string's UTF-16 code
    units (a character outside the BMP counts as its two surrogates; a lone surrogate as itself),
    in int32 arithmetic that wraps."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return _int32(h)


def topic_partition_hash(topic: str, partition: int) -> int:
    """``org.apache.kafka.common.TopicPartition.hashCode``."""
    return _int32(31 * (31 + partition) + java_string_hash(topic))


def _spread(h: int) -> int:
    u = h & 0xFFFFFFFF
    return _int32(u ^ (u >> 16))


def java_hash_map_order(keys: Iterable[K], hash_of: Callable[[K], int]) -> list[K]:
    """The iteration order of a ``java.util.HashMap`` the ``keys`` were put into in order."""
    keys = list(dict.fromkeys(keys))
    size = 16
    while len(keys) > size * 3 // 4:          # resized once size exceeds 0.75 * capacity
        size *= 2
    buckets: list[list[K]] = [[] for _ in range(size)]
    for key in keys:
        buckets[_spread(hash_of(key)) & (size - 1)].append(key)
    return [key for bucket in buckets for key in bucket]


def scala_hash_map_order(keys: Iterable[K], hash_of: Callable[[K], int]) -> list[K]:
    """The iteration order of a Scala 2.13 ``mutable.HashMap`` built from ``keys`` in order."""
    keys = list(dict.fromkeys(keys))
    size = 16
    while len(keys) >= int(size * 0.75):      # grown before the insert that reaches 0.75
        size *= 2
    buckets: list[list[tuple[int, int, K]]] = [[] for _ in range(size)]
    for order, key in enumerate(keys):
        h = _spread(hash_of(key))
        buckets[h & (size - 1)].append((h, order, key))
    return [key for bucket in buckets for _, _, key in sorted(bucket, key=lambda e: e[:2])]
