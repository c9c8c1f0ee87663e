"""Jepsen-style checks after a fault, for BackgroundProducer's records ("key-K:SEQ" values).

- every acknowledged record is read back at the offset it was acknowledged at, with its value;
- order holds per partition: a key's sequence numbers grow with the offset (a retried send may
  repeat one, never go back before it);
- replicas agree: below the high watermark, every replica's log holds the same batches, byte for
  byte (no offset holds two different records on different replicas).
"""

from __future__ import annotations

import os

from kafkalite import Consumer, TopicPartition
from kafkalite.testing.cluster import wait_until

from replication_tools import log_bytes_up_to, read_all


def acknowledged_problems(bootstrap, topic, partitions, acknowledged) -> list[str]:
    """What is wrong with reading back ``acknowledged`` ((key, seq, partition, offset) tuples)."""
    records = read_all(bootstrap, topic, partitions,
                       acknowledged=[(p, o) for _k, _s, p, o in acknowledged])
    at = {(r.partition, r.offset): r.value for r in records}
    problems = []
    for key, sequence, partition, offset in acknowledged:
        want = b"%s:%d" % (key, sequence)
        got = at.get((partition, offset))
        if got != want:
            problems.append(f"acknowledged {want!r} at {topic}-{partition}@{offset}, read {got!r}")
    problems += order_problems(records)
    return problems


def order_problems(records) -> list[str]:
    highest: dict[tuple[int, bytes], int] = {}
    problems = []
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        key, _, sequence = record.value.rpartition(b":")
        sequence = int(sequence)
        previous = highest.get((record.partition, key), -1)
        if sequence < previous:
            problems.append(f"partition {record.partition} offset {record.offset}: {key!r} went "
                            f"back from {previous} to {sequence}")
        highest[(record.partition, key)] = max(previous, sequence)
    return problems


def high_watermarks(bootstrap, topic, partitions) -> dict[int, int]:
    consumer = Consumer(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in range(partitions)])
    finally:
        consumer.close()
    return {tp.partition: offset for tp, offset in ends.items()}


def replica_divergence(cluster, topic, partitions, timeout_s=60) -> list[str]:
    """Wait until every live replica holds the high watermark, then compare their logs."""
    problems = []
    for partition, high_watermark in high_watermarks(cluster.bootstrap_servers, topic,
                                                     partitions).items():
        dirs = {b.broker_id: os.path.join(b.log_dir, f"{topic}-{partition}")
                for b in cluster.live_brokers() if os.path.isdir(
                    os.path.join(b.log_dir, f"{topic}-{partition}"))}

        def contents():
            return {broker: log_bytes_up_to(path, high_watermark) for broker, path in dirs.items()}

        def caught_up():
            got = contents()
            return got if len({len(v) for v in got.values()}) == 1 else None
        try:
            got = wait_until(caught_up, timeout_s, f"replicas of {topic}-{partition} to reach "
                                                   f"the high watermark {high_watermark}")
        except Exception as exc:  # noqa: BLE001 - reported with the others
            problems.append(str(exc))
            continue
        if len(set(got.values())) != 1:
            problems.append(f"{topic}-{partition}: replicas {sorted(got)} hold different records "
                            f"below the high watermark {high_watermark}")
    return problems
