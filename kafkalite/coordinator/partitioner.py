"""Which ``__consumer_offsets`` partition holds a group (and so which broker coordinates it):
Kafka's ``GroupMetadataManager.partitionFor``, i.e.
``Utils.abs(groupId.hashCode) % offsets.topic.num.partitions``.

``java_string_hash`` is Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over the
string's UTF-16 code units (a character outside the BMP counts as its two surrogates), in int32
arithmetic that wraps. Kafka's ``Utils.abs`` is ``Math.abs`` except that ``Integer.MIN_VALUE``
(whose ``Math.abs`` is itself, negative) gives 0.
"""

from __future__ import annotations

import struct

__all__ = ["java_string_hash", "java_abs", "partition_for"]


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` of ``text``, as a signed int32."""
    data = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for (unit,) in struct.iter_unpack(">H", data):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def java_abs(n: int) -> int:
    """Kafka's ``Utils.abs`` of an int32: ``Math.abs``, but 0 for ``Integer.MIN_VALUE``."""
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition of ``group_id`` (and so its coordinator)."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return java_abs(java_string_hash(group_id)) % num_partitions
