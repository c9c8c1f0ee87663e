"""Kafka's default partitioner: murmur2 of the key, so keys land where Kafka puts them.

Records without a key use a sticky partition: every record goes to the same partition until the
producer closes that partition's batch, then the next partition in turn is picked (KIP-480), which
fills batches instead of scattering single records.
"""

from __future__ import annotations

import itertools
import random
import struct

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF
_WORDS: dict = {}       # word count -> struct unpacker of that many little-endian uint32


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: 32-bit murmur2 with Kafka's seed, as a signed Java int.

    Pure Python, so it is a keyed send()'s main cost (the producer caches the hashes of recent
    keys); the 4-byte words come out of one ``struct`` call and the masks are folded (the low 32
    bits of ``a ^ b`` are those of the low 32 bits of each). No maintained package offers
    Kafka's murmur2 in C (mmh3 is MurmurHash3, a different hash).
    """
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n = length >> 2
    if n:
        words = _WORDS.get(n)
        if words is None:
            words = struct.Struct("<%dI" % n).unpack_from
            if n <= 64:                  # keys up to 256 bytes: a few dozen formats at most
                _WORDS[n] = words
        for k in words(data):
            k = (k * _M) & _MASK
            h = ((h * _M) ^ ((k ^ (k >> 24)) * _M)) & _MASK
    tail = length & 3
    if tail:
        body = n << 2
        if tail == 3:
            h ^= data[body + 2] << 16
        if tail >= 2:
            h ^= data[body + 1] << 8
        h ^= data[body]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


def to_positive(value: int) -> int:
    return value & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's DefaultPartitioner picks for a non-null serialized key."""
    return to_positive(murmur2(key)) % num_partitions


class DefaultPartitioner:
    """murmur2 for keyed records; sticky round-robin for records without a key."""

    def __init__(self, rng: random.Random | None = None):
        self._rng = rng or random.Random()
        self._sticky: dict[str, int] = {}
        self._counters: dict[str, itertools.count] = {}

    def partition(self, topic: str, key: bytes | None, partitions: list[int],
                  available: list[int] | None = None) -> int:
        if key is not None:
            return partitions[partition_for_key(key, len(partitions))]
        sticky = self._sticky.get(topic)
        if sticky is None or sticky not in partitions:
            sticky = self._next_sticky(topic, available or partitions)
        return sticky

    def on_new_batch(self, topic: str, partitions: list[int],
                     available: list[int] | None = None) -> None:
        """The sticky partition's batch was closed: move to the next partition."""
        self._next_sticky(topic, available or partitions)

    def _next_sticky(self, topic: str, candidates: list[int]) -> int:
        counter = self._counters.get(topic)
        if counter is None:
            counter = self._counters[topic] = itertools.count(self._rng.randrange(1 << 16))
        choice = candidates[next(counter) % len(candidates)]
        self._sticky[topic] = choice
        return choice
