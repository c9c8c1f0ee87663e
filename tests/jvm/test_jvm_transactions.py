"""Kafka 2.8.2's Java client and its transactions against both systems (issue 22).

The Java transactional producer (Transactions.java) commits and aborts transactions over three
partitions; the Java consumer then reads the topic read_committed (exactly the committed records,
at the offsets the producer was given) and read_uncommitted (every record, never a marker), and
librdkafka's read_committed consumer must agree. A consume-transform-produce copier (the Java
consumer read_committed and sendOffsetsToTransaction with its group metadata, KIP-447) aborts one
transaction and commits the rest: the output, read by librdkafka, holds every input record
exactly once, and the group's committed offsets are the input's end.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import (OFFSET_BEGINNING, Consumer, IsolationLevel, KafkaError, Producer,
                             TopicPartition)
from confluent_kafka.admin import AdminClient, OffsetSpec
from jvm_apps import create_topic, jvm_classes, read_all, run_java, unique  # noqa: F401

from kafkalite.local.cluster import wait_until
from kafkalite.testing.oracle_fixtures import SYSTEMS

pytestmark = [pytest.mark.integration]

PARTITIONS = 3


def _stable(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """Wait until no transaction is open on any partition (read_committed's latest offset is
    the high watermark: the markers are written after the commit returns); the end offsets."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tps = [TopicPartition(topic, p) for p in range(partitions)]

    def ends() -> dict[int, int] | None:
        got = {}
        for level in (IsolationLevel.READ_UNCOMMITTED, IsolationLevel.READ_COMMITTED):
            answer = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps},
                                        isolation_level=level, request_timeout=30)
            got[level] = {tp.partition: f.result(30).offset for tp, f in answer.items()}
        same = got[IsolationLevel.READ_UNCOMMITTED] == got[IsolationLevel.READ_COMMITTED]
        return got[IsolationLevel.READ_COMMITTED] if same else None
    return wait_until(ends, 60, f"{topic} stable")


def _read_to_end(bootstrap: str, topic: str, partitions: int, isolation: str) -> list:
    """Every record librdkafka reads of ``topic`` up to each partition's end (the LSO for
    read_committed), as ``(partition, value)``."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("jvm-txn-reader"),
                         "enable.auto.commit": False, "isolation.level": isolation,
                         "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        got, ended = [], set()
        deadline = time.monotonic() + 60
        while len(ended) < partitions:
            assert time.monotonic() < deadline, f"read {len(got)} records, ends {ended}"
            for msg in consumer.consume(500, timeout=0.5):
                if msg.error() is not None:
                    assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                    ended.add(msg.partition())
                else:
                    got.append((msg.partition(), msg.value().decode()))
        return got
    finally:
        consumer.close()


def _consumed(lines: list[dict]) -> list[tuple[int, int, str]]:
    return sorted((r["partition"], r["offset"], bytes.fromhex(r["value"]).decode())
                  for r in (line["record"] for line in lines if line["event"] == "consumed"))


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_java_transactional_producer_and_read_committed_consumer(system, jvm_classes):
    bootstrap = system.bootstrap_servers
    topic = unique("jvm-txn")
    create_topic(bootstrap, topic, PARTITIONS)
    lines = run_java(jvm_classes, "Transactions", "produce", bootstrap, topic,
                     unique("jvm-txn-id"), "5", "6")
    sent = [line for line in lines if line["event"] == "sent"]
    assert [line["outcome"] for line in lines if line["event"] == "ended"] == [
        "commit", "abort", "commit", "abort", "commit"]
    assert len(sent) == 30
    committed = sorted((s["partition"], s["offset"], s["value"]) for s in sent
                       if s["outcome"] == "commit")
    everything = sorted((s["partition"], s["offset"], s["value"]) for s in sent)

    # each transaction wrote 2 records and a marker to each partition: 5 markers, 15 offsets
    ends = _stable(bootstrap, topic, PARTITIONS)
    assert ends == {p: 15 for p in range(PARTITIONS)}
    for p in range(PARTITIONS):
        offsets = [o for part, o, _ in everything if part == p]
        assert offsets == [t * 3 + i for t in range(5) for i in range(2)], (p, offsets)

    lines = run_java(jvm_classes, "Transactions", "consume", bootstrap, topic, "read_committed")
    assert _consumed(lines) == committed
    assert lines[-1] == {"event": "done", "end_offsets": {str(p): 15 for p in range(PARTITIONS)}}
    lines = run_java(jvm_classes, "Transactions", "consume", bootstrap, topic,
                     "read_uncommitted")
    assert _consumed(lines) == everything

    by_librdkafka = sorted((m.partition(), m.offset(), m.value().decode())
                           for m in read_all(bootstrap, topic, PARTITIONS, len(committed),
                                             isolation="read_committed"))
    assert by_librdkafka == committed


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_java_consume_transform_produce_copies_exactly_once(system, jvm_classes):
    bootstrap = system.bootstrap_servers
    source, sink, group = unique("jvm-copy-in"), unique("jvm-copy-out"), unique("jvm-copy-g")
    create_topic(bootstrap, source, 2)
    create_topic(bootstrap, sink, 2)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    values = [f"value-{i}" for i in range(40)]
    for i, value in enumerate(values):
        producer.produce(source, key=str(i).encode(), value=value.encode(), partition=i % 2)
    assert producer.flush(30) == 0

    lines = run_java(jvm_classes, "Transactions", "copy", bootstrap, source, sink, group,
                     unique("jvm-copy-id"), str(len(values)))
    assert [line["event"] for line in lines].count("aborted") == 1
    assert lines[-1] == {"event": "done", "copied": len(values)}

    _stable(bootstrap, sink, 2)
    got = _read_to_end(bootstrap, sink, 2, "read_committed")
    assert sorted(got) == sorted((i % 2, v.upper()) for i, v in enumerate(values))
    # the aborted transaction's copies are in the log, never read by read_committed
    everything = _read_to_end(bootstrap, sink, 2, "read_uncommitted")
    assert len(everything) > len(values)
    assert set(everything) == set(got)

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    try:
        offsets = consumer.committed([TopicPartition(source, p) for p in range(2)], timeout=30)
        assert [(tp.partition, tp.offset) for tp in offsets] == [(0, 20), (1, 20)]
    finally:
        consumer.close()
