import random

import pytest
from hypothesis import given, strategies as st

from kafkalite.client.partitioner import DefaultPartitioner, murmur2, partition_for_key

# Kafka's own vectors (clients' UtilsTest.testMurmur2)
KAFKA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize("key,expected", sorted(KAFKA_MURMUR2.items()))
def test_murmur2_matches_kafka(key, expected):
    assert murmur2(key) == expected


def test_partition_is_positive_hash_modulo():
    # toPositive(-790332482) = 1357151166; 1357151166 % 50 = 16
    assert partition_for_key(b"foobar", 50) == 16


@given(st.binary(max_size=64), st.integers(1, 500))
def test_partition_in_range_and_stable(key, n):
    first = partition_for_key(key, n)
    assert 0 <= first < n
    assert partition_for_key(key, n) == first


def test_keyed_records_ignore_stickiness():
    partitioner = DefaultPartitioner(random.Random(1))
    parts = list(range(6))
    assert {partitioner.partition("t", b"k", parts) for _ in range(20)} == {
        partition_for_key(b"k", 6)}


def test_unkeyed_records_stick_until_new_batch_then_rotate():
    partitioner = DefaultPartitioner(random.Random(7))
    parts = list(range(4))
    first = partitioner.partition("t", None, parts)
    assert all(partitioner.partition("t", None, parts) == first for _ in range(10))
    seen = {first}
    for _ in range(3):
        partitioner.on_new_batch("t", parts)
        seen.add(partitioner.partition("t", None, parts))
    assert seen == set(parts)
