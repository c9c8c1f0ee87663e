"""Records cross between kafkalite's own clients and real Kafka clients, byte for byte.

kafkalite's Producer writes Kafka v2 batches that confluent-kafka (librdkafka) reads, and
librdkafka's batches are what kafkalite's Consumer reads, with every codec a v2 batch can carry
(none, gzip, snappy, lz4, zstd): keys, values, headers and timestamps come out as they went in,
including null and empty keys and values, null and repeated headers, and timestamps that go
backwards inside a batch. The stored batches are checked to carry the codec that was asked for,
so a producer that silently ignored it would fail the test. kafka-python's default partitioner
and kafkalite's put every key in the same partition (murmur2).

One 3-broker cluster (rf 3, min.insync.replicas 2) serves the whole module.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict

import pytest

from kafka_clients_tools import (
    CODECS,
    CREATE_TIME,
    Rec,
    check_stored_codec,
    confluent_read,
    create_topic,
    kafkalite_read,
    module_cluster,
    norm_headers,
)

pytestmark = [
    pytest.mark.integration,
    # kafka-python 3 loads its protocol schemas with importlib.resources' legacy functions
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

PARTITIONS = 3
RECORDS = 400


@pytest.fixture(scope="module")
def cluster(request, zookeeper, tmp_path_factory):
    yield from module_cluster(request, zookeeper, tmp_path_factory, "kafka-cross-clients")


def make_records(seed: int, count: int = RECORDS, base_ms: int = 1_600_000_000_000) -> list[Rec]:
    """Records with the edge cases a codec or a varint could get wrong. Values are mostly
    repetitive (compressible: librdkafka sends a batch uncompressed when compression would not
    shrink it) with random bytes mixed in, so "byte for byte" covers non-UTF-8 data."""
    rnd = random.Random(seed)
    records = []
    for i in range(count):
        key = b"key-%d" % (i % 50)
        value = (b"value %d " % i) * rnd.randrange(1, 30) + rnd.randbytes(rnd.randrange(0, 24))
        headers = [("trace", rnd.randbytes(16)), ("empty", b""),
                   ("utf8-ключ", ("значение %d" % i).encode())]
        if i % 5 == 0:
            headers += [("dup", b"one"), ("dup", b"two"), ("null", None)]
        if i % 17 == 3:
            headers = []
        # timestamps go backwards now and then: negative deltas inside a batch
        timestamp = base_ms + ((i * 7919) % 1000) * 1000 + i
        if i % 97 == 11:
            key = None                              # no key
        elif i % 97 == 12:
            key = b""                               # an empty key is not a null key
        if i % 89 == 7:
            value = None                            # a tombstone
        elif i % 89 == 8:
            value = b""
        records.append(Rec(key, value, tuple(headers), timestamp))
    return records


@pytest.mark.parametrize("codec", CODECS)
def test_kafkalite_producer_to_confluent_consumer(cluster, codec):
    from kafkalite import Producer

    topic = f"kafkalite-to-confluent-{codec}"
    create_topic(cluster, topic, PARTITIONS)
    records = make_records(seed=CODECS.index(codec))
    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=20,
                  compression_type=None if codec == "none" else codec) as producer:
        futures = [producer.send(topic, value=r.value, key=r.key, headers=list(r.headers),
                                 timestamp_ms=r.timestamp) for r in records]
        producer.flush()
        metadata = [f.get(timeout=60) for f in futures]
    sent = {(md.partition, md.offset): r for md, r in zip(metadata, records)}
    assert len(sent) == len(records)
    assert all(md.timestamp == r.timestamp for md, r in zip(metadata, records))

    messages = confluent_read(cluster.bootstrap_servers, topic, PARTITIONS, len(records))
    assert len(messages) == len(records)
    assert {m.timestamp()[0] for m in messages} == {CREATE_TIME}
    got = {(m.partition(), m.offset()): Rec(m.key(), m.value(), norm_headers(m.headers()),
                                            m.timestamp()[1]) for m in messages}
    assert got == sent
    check_stored_codec(cluster, topic, PARTITIONS, Counter(p for p, _ in sent), codec)


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_producer_to_kafkalite_consumer(cluster, codec):
    from confluent_kafka import Producer

    topic = f"confluent-to-kafkalite-{codec}"
    create_topic(cluster, topic, PARTITIONS)
    records = make_records(seed=100 + CODECS.index(codec))
    delivered, failures = {}, []

    def report(index):
        def on_delivery(err, message):
            if err is not None:
                failures.append((index, err))
            else:
                delivered[index] = (message.partition(), message.offset(),
                                    message.timestamp())
        return on_delivery

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                         "enable.idempotence": True, "compression.type": codec,
                         "linger.ms": 20})
    for index, r in enumerate(records):
        producer.produce(topic, key=r.key, value=r.value, headers=list(r.headers),
                         timestamp=r.timestamp, on_delivery=report(index))
        producer.poll(0)
    assert producer.flush(60) == 0
    assert not failures, failures[:5]
    assert all(delivered[i][2] == (CREATE_TIME, r.timestamp) for i, r in enumerate(records))
    sent = {delivered[i][:2]: r for i, r in enumerate(records)}
    assert len(sent) == len(records)

    read = kafkalite_read(cluster.bootstrap_servers, topic, PARTITIONS, len(records))
    assert len(read) == len(records)
    assert {r.timestamp_type for r in read} == {0}                  # CreateTime
    got = {(r.partition, r.offset): Rec(r.key, r.value, norm_headers(r.headers), r.timestamp)
           for r in read}
    assert got == sent
    check_stored_codec(cluster, topic, PARTITIONS, Counter(p for p, _ in sent), codec)


def test_partitioner_parity_kafka_python_and_kafkalite(cluster):
    """kafka-python's default partitioner (murmur2) and kafkalite's put each of 1,000 keys in
    the same partition: where the records landed, as both producers' RecordMetadata say and as
    a consumer finds them."""
    from kafka import KafkaProducer

    from kafkalite import Producer

    topic, partitions = "partitioner-parity", 7
    create_topic(cluster, topic, partitions)
    rnd = random.Random(1000)
    keys = [b"user-%d" % i for i in range(500)]
    while len(keys) < 1000:                    # binary keys of every length mod 4 (murmur2 tail)
        key = rnd.randbytes(rnd.randrange(1, 40))
        if key not in keys:
            keys.append(key)

    kafka_python = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers.split(","),
                                 acks="all", linger_ms=5)
    try:
        futures = [kafka_python.send(topic, key=k, value=b"kafka-python") for k in keys]
        kafka_python.flush(timeout=60)
        by_kafka_python = {k: f.get(timeout=60).partition for k, f in zip(keys, futures)}
    finally:
        kafka_python.close(timeout=30)
    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all") as producer:
        futures = [producer.send(topic, value=b"kafkalite", key=k) for k in keys]
        producer.flush()
        by_kafkalite = {k: f.get(timeout=60).partition for k, f in zip(keys, futures)}

    differ = {k: (by_kafka_python[k], by_kafkalite[k]) for k in keys
              if by_kafka_python[k] != by_kafkalite[k]}
    assert not differ, f"{len(differ)} keys placed differently, e.g. {list(differ.items())[:5]}"
    assert set(by_kafkalite.values()) == set(range(partitions))   # the keys spread out

    landed = defaultdict(dict)
    for m in confluent_read(cluster.bootstrap_servers, topic, partitions, 2 * len(keys)):
        landed[m.value().decode()][m.key()] = m.partition()
    assert landed["kafka-python"] == by_kafka_python
    assert landed["kafkalite"] == by_kafkalite
