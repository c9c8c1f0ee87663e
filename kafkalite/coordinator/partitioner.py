"""Which ``__consumer_offsets`` partition holds a group (and so which broker coordinates it):
Kafka's ``GroupMetadataManager.partitionFor``, i.e.
``Utils.abs(groupId.hashCode) % offsets.topic.num.partitions``.

``java_string_hash`` is Java's ``String.hashCode`` (``kafkalite.jvm_hashing``). Kafka's ``Utils.abs`` is ``Math.abs`` except that ``Integer.MIN_VALUE``
(whose ``Math.abs`` is itself, negative) gives 0.
"""

from __future__ import annotations

from kafkalite.jvm_hashing import java_string_hash

__all__ = ["java_string_hash", "java_abs", "partition_for"]


def java_abs(n: int) -> int:
    """Kafka's ``Utils.abs`` of an int32: ``Math.abs``, but 0 for ``Integer.MIN_VALUE``."""
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition of ``group_id`` (and so its coordinator)."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return java_abs(java_string_hash(group_id)) % num_partitions
