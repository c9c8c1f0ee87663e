"""kill -9 of partition leaders under a real Kafka client: confluent-kafka (librdkafka) produces
with acks=all and enable.idempotence=True to a topic with replication factor 3 and
min.insync.replicas 2 while the leaders of its partitions are killed (and restarted) one after
the other. Afterwards a confluent-kafka consumer reads the topic back:

- every record whose delivery callback reported success is there, at the offset it was
  acknowledged with (nothing acknowledged is lost);
- in each partition the records are in the order they were produced;
- no record is there twice (the idempotent producer's retries are deduplicated, also by a new
  leader).

Leaders are found and killed the way tests/system/test_replication.py does it (LocalCluster's
``leader_of`` / ``kill`` / ``restart``); nothing here uses kafkalite's own clients.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.local.cluster import wait_until

pytestmark = [pytest.mark.system, pytest.mark.slow]

TOPIC, PARTITIONS = "failover", 3


class IdempotentProducer:
    """confluent-kafka, acks=all, idempotent, in a thread; values are ``b"<seq>"``."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.acked: dict[int, tuple[int, int]] = {}       # seq -> (partition, offset)
        self.failed: list[tuple[int, str]] = []
        self.fatal: str | None = None
        self.sent = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "IdempotentProducer":
        self.thread.start()
        return self

    def _run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                             "enable.idempotence": True, "linger.ms": 5,
                             "message.timeout.ms": 180000, "retry.backoff.ms": 100,
                             "error_cb": self._error})

        def report(err, msg):
            seq = int(msg.value())
            with self._lock:
                if err is None:
                    self.acked[seq] = (msg.partition(), msg.offset())
                else:
                    self.failed.append((seq, str(err)))

        seq = 0
        while not self._stop.is_set() and self.fatal is None:
            try:
                producer.produce(TOPIC, key=b"key-%d" % (seq % 64), value=b"%d" % seq,
                                 on_delivery=report)
                seq += 1
                self.sent = seq
            except BufferError:
                producer.poll(0.05)
            producer.poll(0)
            if seq % 20 == 0:
                time.sleep(0.002)
        producer.flush(240)

    def _error(self, err) -> None:
        if err.fatal():
            self.fatal = str(err)

    def acked_count(self) -> int:
        with self._lock:
            return len(self.acked)

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(300)


def read_topic(bootstrap: str, wanted: dict[int, int], timeout_s: float = 120):
    """Every record of TOPIC in offset order per partition, once the high watermarks cover
    ``wanted`` ({partition: end offset}): a new leader learns the high watermark from its
    followers' next fetches."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "failover-check",
                         "enable.auto.commit": False, "fetch.queue.backoff.ms": 5})
    deadline = time.monotonic() + timeout_s

    def ends():
        return {p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1]
                for p in range(PARTITIONS)}

    high = wait_until(lambda: (lambda e: e if all(e[p] >= wanted.get(p, 0) for p in e)
                               else None)(ends()), timeout_s,
                      f"high watermarks covering {wanted}")
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    records: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
    positions = {p: 0 for p in range(PARTITIONS)}
    while any(positions[p] < high[p] for p in high) and time.monotonic() < deadline:
        for message in consumer.consume(1000, 0.5):
            if message.error() is None:
                records[message.partition()].append((message.offset(), message.value()))
                positions[message.partition()] = message.offset() + 1
    consumer.close()
    return records, high


def test_leader_kills_under_an_idempotent_acks_all_producer(kafkalite_cluster_factory):
    cluster = kafkalite_cluster_factory(3, replica_lag_time_max_ms=4000)
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3,
                                  config={"min.insync.replicas": "2"})])[TOPIC].result(60)
    del admin
    for p in range(PARTITIONS):
        wait_until(lambda: cluster.leader_of(TOPIC, p) > 0, 60, f"a leader for partition {p}")

    producer = IdempotentProducer(bootstrap).start()
    kills = []
    started = time.monotonic()
    try:
        for round_, partition in enumerate((0, 1, 2)):
            target = 3000 * (round_ + 1)
            wait_until(lambda: producer.acked_count() > target or producer.fatal, 120,
                       f"{target} acknowledged records")
            assert producer.fatal is None, producer.fatal
            # a leader with two followers in sync: acks=all has both of them
            wait_until(lambda: len(cluster.partition_metadata(TOPIC, partition).isr) == 3, 60,
                       f"all three replicas of partition {partition} in sync")
            victim = cluster.wait_for_leader(TOPIC, partition)
            cluster.kill(victim)
            kills.append((round(time.monotonic() - started, 1), partition, victim,
                          producer.acked_count()))
            wait_until(lambda: cluster.leader_of(TOPIC, partition) not in (-1, victim), 60,
                       f"a new leader for partition {partition}")
            cluster.restart(victim)
        wait_until(lambda: producer.acked_count() > 12000 or producer.fatal, 120,
                   "more acknowledged records after the kills")
    finally:
        producer.stop()

    acked = dict(producer.acked)
    wanted: dict[int, int] = {}
    for partition, offset in acked.values():
        wanted[partition] = max(wanted.get(partition, 0), offset + 1)
    records, high = read_topic(bootstrap, wanted)
    print(f"\nfailover: kills (s, partition, broker, acked then) {kills}; sent {producer.sent}, "
          f"acknowledged {len(acked)}, failed {len(producer.failed)}, fatal {producer.fatal}; "
          f"read {sum(len(r) for r in records.values())}, high watermarks {high}")

    stored = {(p, offset): value for p, rs in records.items() for offset, value in rs}
    lost = [(seq, where) for seq, where in acked.items() if stored.get(where) != b"%d" % seq]
    assert not lost, f"{len(lost)} acknowledged records lost or moved: {sorted(lost)[:5]}"
    seen = defaultdict(int)
    for rs in records.values():
        for _offset, value in rs:
            seen[int(value)] += 1
    duplicates = {seq: n for seq, n in seen.items() if n > 1}
    assert not duplicates, f"{len(duplicates)} records stored twice: {sorted(duplicates)[:5]}"
    for partition, rs in records.items():
        sequences = [int(value) for _offset, value in rs]
        out_of_order = [(a, b) for a, b in zip(sequences, sequences[1:]) if b <= a]
        assert not out_of_order, f"partition {partition} out of order at {out_of_order[:5]}"
    assert producer.fatal is None, f"the idempotent producer failed fatally: {producer.fatal}"
    assert not producer.failed, f"{len(producer.failed)} deliveries failed: {producer.failed[:5]}"
    assert all(b.running for b in cluster.brokers.values())

