"""A group's ``__consumer_offsets`` partition: Kafka's ``Utils.abs(groupId.hashCode) % n``.

The table's hash values and partitions were printed by Java 17 (``String.hashCode`` and Kafka's
``Utils.abs``: ``n == Integer.MIN_VALUE ? 0 : Math.abs(n)``).
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalite.coordinator.partitioner import java_abs, java_string_hash, partition_for

# group id, Java's hashCode, partition of 50, partition of 7
JAVA = [
    ("", 0, 0, 0),
    ("a", 97, 47, 6),
    ("Aa", 2112, 12, 5),                        # "Aa" and "BB" collide in Java
    ("BB", 2112, 12, 5),
    ("hello", 99162322, 22, 0),
    ("polygenelubricants", -2147483648, 0, 0),  # Integer.MIN_VALUE: Utils.abs gives 0
    ("my-group", -1906497762, 12, 1),
    ("console-consumer-12345", 158455506, 6, 6),
    ("test-group", 627841412, 12, 2),
    ("connect-cluster", 1440343063, 13, 5),
    ("\u00e9t\u00e9", 227742, 42, 4),
    ("\U0001F600group", -1231696132, 32, 2),  # outside the BMP: two UTF-16 surrogates
    ("group-\u4e2d\u6587", 506956552, 2, 4),
    ("GROUP_WITH_A_RATHER_LONG_NAME_0123456789", 588430766, 16, 0),
]


@pytest.mark.parametrize("group, java_hash, p50, p7", JAVA)
def test_matches_java(group, java_hash, p50, p7):
    assert java_string_hash(group) == java_hash
    assert partition_for(group, 50) == p50
    assert partition_for(group, 7) == p7


def test_kafka_utils_abs():
    assert java_abs(-2**31) == 0
    assert java_abs(-5) == 5
    assert java_abs(2**31 - 1) == 2**31 - 1


def test_partition_count_must_be_positive():
    with pytest.raises(ValueError):
        partition_for("g", 0)


@given(st.text(max_size=40), st.integers(1, 1000))
def test_hash_is_an_int32_and_partition_in_range(group, n):
    value = java_string_hash(group)
    assert -2**31 <= value < 2**31
    assert 0 <= partition_for(group, n) < n


@given(st.text(max_size=40))
def test_hash_follows_javas_recurrence(group):
    # s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, wrapped to int32
    units = group.encode("utf-16-be", "surrogatepass")
    total = sum(int.from_bytes(units[i:i + 2], "big") * 31 ** (len(units) // 2 - 1 - i // 2)
                for i in range(0, len(units), 2))
    wrapped = total % 2**32
    assert java_string_hash(group) == (wrapped - 2**32 if wrapped >= 2**31 else wrapped)
