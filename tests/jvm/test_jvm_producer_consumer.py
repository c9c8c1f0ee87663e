"""Kafka 2.8.2's Java producer and consumer against both systems, cross-checked with librdkafka.

One idempotent producer (acks=all, a custom partitioner) per compression codec (none, gzip,
snappy, lz4, zstd) sends records with headers (repeated keys, empty and null values), null keys,
null values, and explicit or producer-clock timestamps. The Java consumer and confluent-kafka then
read the topic back: both must see every record byte for byte where the producer's metadata said
it went (partition, offset, timestamp).
"""

from __future__ import annotations

import time

import pytest
from jvm_apps import create_topic, jvm_classes, read_all, record_of, run_java, unique  # noqa: F401

from kafkalite.testing.oracle_fixtures import SYSTEMS

pytestmark = [pytest.mark.integration]

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
PER_CODEC = 12
PARTITIONS = 3


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_java_producer_every_codec_read_back_by_java_and_librdkafka(system, jvm_classes):
    bootstrap = system.bootstrap_servers
    topic = unique("jvm-codecs")
    create_topic(bootstrap, topic, PARTITIONS)
    base_ts = int(time.time() * 1000) - 60_000
    lines = run_java(jvm_classes, "ProduceConsume", "produce", bootstrap, topic,
                     str(PER_CODEC), str(base_ts))
    sent = [line for line in lines if line["event"] == "sent"]
    assert [s["codec"] for s in sent] == [c for c in CODECS for _ in range(PER_CODEC)]

    for i, s in enumerate(sent):
        n = i % PER_CODEC
        # the custom partitioner: "N:..." to partition N mod 3, no key to the last partition
        if s["key"] is None:
            assert n % 7 == 6
            assert s["partition"] == PARTITIONS - 1
        else:
            assert bytes.fromhex(s["key"]).decode() == f"{n}:{s['codec']}-{n}"
            assert s["partition"] == n % PARTITIONS
        assert (s["value"] is None) == (n % 9 == 8)
        if n % 2 == 0:
            assert s["timestamp"] == base_ts + n
    # idempotent acks=all writes: every partition's offsets are 0..n-1, no gap, no duplicate
    for p in range(PARTITIONS):
        offsets = sorted(s["offset"] for s in sent if s["partition"] == p)
        assert offsets == list(range(len(offsets))), (p, offsets)

    expected = {(s["partition"], s["offset"]): {
        "topic": topic, "partition": s["partition"], "offset": s["offset"],
        "timestamp": s["timestamp"], "timestamp_type": "CreateTime", "key": s["key"],
        "value": s["value"], "headers": s["headers"]} for s in sent}

    lines = run_java(jvm_classes, "ProduceConsume", "consume", bootstrap, topic,
                     unique("jvm-codecs-g"), str(len(sent)))
    by_java = {(r["partition"], r["offset"]): r
               for r in (line["record"] for line in lines if line["event"] == "consumed")}
    assert lines[-1] == {"event": "done", "consumed": len(sent)}
    assert by_java == expected

    by_librdkafka = {(m.partition(), m.offset()): record_of(m)
                     for m in read_all(bootstrap, topic, PARTITIONS, len(sent))}
    assert by_librdkafka == expected
    # a header whose value is null stays null; an empty one stays empty
    first = expected[(0, 0)]["headers"]
    assert ["empty", ""] in first and ["null", None] in first
