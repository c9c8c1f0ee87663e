"""Read a topic to its end with confluent-kafka (librdkafka): the independent reader the tests and
benches judge kafkalite (and Apache Kafka) with, never kafkalite's own client.

``read_to_end`` assigns the partitions from their beginning and returns every message until each
partition has reported its end (librdkafka's partition EOF: the high watermark, or the last stable
offset with ``read_committed``), in the order read. Any other error fails, and so does not
reaching the end within ``timeout_s``: a read that stalls is a finding, not a short answer.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Iterable


def read_to_end(bootstrap: str, topic: str, partitions: int | Iterable[int] = 1, *,
                isolation_level: str = "read_uncommitted", timeout_s: float = 60,
                group_prefix: str = "independent-read") -> list[Any]:
    """Every message of ``partitions`` (a count, or the partition numbers) of ``topic``, read by
    confluent-kafka from the beginning to each partition's end: confluent_kafka Message objects
    (``.partition()``, ``.offset()``, ``.key()``, ``.value()``, ``.headers()``,
    ``.timestamp()``)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    wanted = set(range(partitions) if isinstance(partitions, int) else partitions)
    consumer = Consumer({"bootstrap.servers": bootstrap,
                         "group.id": f"{group_prefix}-{uuid.uuid4().hex[:12]}",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "isolation.level": isolation_level})
    messages: list[Any] = []
    ended: set[int] = set()
    deadline = time.monotonic() + timeout_s
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(wanted)])
        while not ended >= wanted:
            if time.monotonic() > deadline:
                raise AssertionError(f"reading {topic} {sorted(wanted)} ({isolation_level}) "
                                     f"did not reach the end in {timeout_s:.0f} s: "
                                     f"{len(messages)} read, ends seen {sorted(ended)}")
            for msg in consumer.consume(1000, timeout=0.2):
                if msg.error():
                    if msg.error().code() != KafkaError._PARTITION_EOF:
                        raise AssertionError(f"reading {topic}: {msg.error()}")
                    ended.add(msg.partition())
                    continue
                messages.append(msg)
    finally:
        consumer.close()
    return messages
