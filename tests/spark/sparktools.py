"""Helpers for the Spark tests: topics, producing records, reading everything back."""

from __future__ import annotations

import itertools
import time

from kafkalite.client import AdminClient, Consumer, NewTopic, Producer, TopicPartition

_names = itertools.count()


def unique_topic(prefix: str) -> str:
    return f"{prefix}-{int(time.time() * 1000) % 10**8}-{next(_names)}"


def create_topic(bootstrap: str, name: str, partitions: int = 3, replication_factor: int = 3,
                 configs: dict | None = None) -> str:
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(name, partitions, replication_factor,
                                      topic_configs=configs)])
    return name


def produce(bootstrap: str, topic: str, records, linger_ms: int = 5) -> list[tuple]:
    """Produce ``records`` (dicts of send() arguments); returns
    ``[(partition, offset, key, value, timestamp_ms, headers)]`` as acknowledged."""
    out = []
    with Producer(bootstrap_servers=bootstrap, acks="all", linger_ms=linger_ms) as producer:
        sent = [(r, producer.send(topic, **r)) for r in records]
        producer.flush()
        for r, future in sent:
            md = future.get(30)
            out.append((md.partition, md.offset, r.get("key"), r.get("value"), md.timestamp,
                        tuple(r.get("headers") or ())))
    return out


def simple_records(n: int, start: int = 0, prefix: str = "v") -> list[dict]:
    return [{"key": f"k{i % 7}".encode(), "value": f"{prefix}{i}".encode()}
            for i in range(start, start + n)]


def read_all(bootstrap: str, topic: str) -> list[tuple]:
    """Every record of ``topic`` below the high watermark, as
    ``(partition, offset, key, value, headers)``, sorted."""
    out = []
    with Consumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                  auto_offset_reset="earliest", allow_auto_create_topics=False) as consumer:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        ends = consumer.end_offsets(tps)
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + 60
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, f"could not read {topic} to its end"
            for tp, records in consumer.poll(500).items():
                out.extend((r.partition, r.offset, r.key, r.value, tuple(r.headers))
                           for r in records if r.offset < ends[tp])
    return sorted(out)


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    with Consumer(bootstrap_servers=bootstrap, enable_auto_commit=False) as consumer:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        return {tp.partition: off for tp, off in consumer.end_offsets(tps).items()}


def rows_as_tuples(rows) -> list[tuple]:
    return sorted((r.partition, r.offset, bytes(r.key) if r.key is not None else None,
                   bytes(r.value) if r.value is not None else None) for r in rows)


def consume_with_confluent(bootstrap: str, topic: str) -> list:
    """Every record of ``topic`` below the high watermarks, read by confluent-kafka (librdkafka:
    a client independent of kafkalite's), as confluent_kafka Messages in partition/offset order."""
    import uuid

    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as Partition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        parts = sorted(consumer.list_topics(topic, timeout=30).topics[topic].partitions)
        ends = {p: consumer.get_watermark_offsets(Partition(topic, p), timeout=30)[1]
                for p in parts}
        consumer.assign([Partition(topic, p, 0) for p in parts])
        out, positions = [], {p: 0 for p in parts}
        deadline = time.monotonic() + 60
        while any(positions[p] < ends[p] for p in parts):
            assert time.monotonic() < deadline, f"could not read {topic} to its end: {positions}"
            for msg in consumer.consume(100, 0.5):
                assert msg.error() is None, msg.error()
                if msg.offset() < ends[msg.partition()]:
                    positions[msg.partition()] = msg.offset() + 1
                    out.append(msg)
        return sorted(out, key=lambda m: (m.partition(), m.offset()))
    finally:
        consumer.close()
