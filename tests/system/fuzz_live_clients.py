"""Real clients working beside the broker fuzz, and the check that nothing they were promised was
lost (tests/system/test_protocol_fuzz.py, bench/protocol_fuzz.py; no test functions here).

- ``KafkaLiveTraffic``: a confluent-kafka producer (acks=all, idempotent) and an assign()-ing
  consumer, each in a thread, on a topic of their own (Kafka's protocol).
- ``NativeLiveTraffic``: kafkalite's own Producer (acks=all, idempotent) and Consumer (assign,
  from the beginning), each in a thread, on another topic (the native protocol).

Both remember every acknowledged record as value -> (partition, offset). ``verify`` then reads each
topic from the beginning up to its end offsets and requires every acknowledged record at its
acknowledged (partition, offset) with its value, exactly once.
"""

from __future__ import annotations

import threading
import time

PACE_EVERY, PACE_SLEEP_S = 10, 0.02     # at most ~500 records/s per producer: steady traffic
                                        # that leaves the brokers' CPU to the fuzz
STOP_TIMEOUT_S = 30      # what a producer has not had acknowledged this long after stop() is
                         # left unacknowledged (it stays out of ``acked``)


class _Traffic:
    def __init__(self, bootstrap: str, topic: str, partitions: int):
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.acked: dict[bytes, tuple[int, int]] = {}      # value -> (partition, offset)
        self.failed: list = []
        self.sent = 0
        self.consumed = 0
        self.consumer_errors: list = []
        self.stop_error: str | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._produce, daemon=True),
                         threading.Thread(target=self._consume, daemon=True)]

    def start(self):
        for t in self._threads:
            t.start()
        return self

    def counts(self) -> tuple[int, int]:
        """(acknowledged, consumed) so far."""
        with self._lock:
            return len(self.acked), self.consumed

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self) -> None:
        """Stop producing and consuming: what is not acknowledged STOP_TIMEOUT_S later stays
        unacknowledged."""
        self._stop.set()
        for t in self._threads:
            t.join(STOP_TIMEOUT_S + 60)

    def _acked(self, value: bytes, partition: int, offset: int) -> None:
        with self._lock:
            self.acked[value] = (partition, offset)

    def _failed(self, value: bytes, error) -> None:
        with self._lock:
            self.failed.append((value, str(error)))

    def _read(self, count: int) -> None:
        with self._lock:
            self.consumed += count

    def describe(self) -> str:
        return (f"sent {self.sent}, acknowledged {len(self.acked)}, failed {len(self.failed)}; "
                f"consumer read {self.consumed}"
                + (f"; at stop: {self.stop_error}" if self.stop_error else ""))

    def verify(self, timeout_s: float = 120) -> list[str]:
        """Problems with the acknowledged records: missing, moved, or there more than once."""
        records, ends = self.read_back(timeout_s)
        problems = []
        where: dict[bytes, list] = {}
        for position, value in records.items():
            where.setdefault(value, []).append(position)
        missing = [(v, po) for v, po in self.acked.items() if v not in where]
        moved = [(v, po, where[v]) for v, po in self.acked.items()
                 if v in where and where[v][0] != po]
        twice = [(v, where[v]) for v in self.acked if len(where.get(v, ())) > 1]
        if missing:
            problems.append(f"{self.topic}: {len(missing)} of {len(self.acked)} acknowledged "
                            f"records are missing (end offsets {ends}): {missing[:3]}")
        if moved:
            problems.append(f"{self.topic}: {len(moved)} acknowledged records are at another "
                            f"offset than acknowledged: {moved[:3]}")
        if twice:
            problems.append(f"{self.topic}: {len(twice)} acknowledged records are there more "
                            f"than once: {twice[:3]}")
        return problems

    def read_back(self, timeout_s: float):
        raise NotImplementedError

    def _produce(self) -> None:
        raise NotImplementedError

    def _consume(self) -> None:
        raise NotImplementedError


class KafkaLiveTraffic(_Traffic):
    protocol = "kafka"

    def _produce(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                             "enable.idempotence": True, "linger.ms": 5,
                             "message.timeout.ms": 120000})

        def report(err, msg):
            if err is None:
                self._acked(msg.value(), msg.partition(), msg.offset())
            else:
                self._failed(msg.value(), err)

        seq = 0
        while not self._stop.is_set():
            try:
                producer.produce(self.topic, key=b"k%d" % (seq % 16), value=b"live-%08d" % seq,
                                 on_delivery=report)
                seq += 1
                self.sent = seq
            except BufferError:
                producer.poll(0.05)
            producer.poll(0)
            if seq % PACE_EVERY == 0:
                time.sleep(PACE_SLEEP_S)
        left = producer.flush(STOP_TIMEOUT_S)
        if left:
            self.stop_error = f"{left} records unacknowledged after {STOP_TIMEOUT_S} s"

    def _consume(self) -> None:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "fuzz-unused",
                             "enable.auto.commit": False, "fetch.queue.backoff.ms": 5})
        consumer.assign([TopicPartition(self.topic, p, 0) for p in range(self.partitions)])
        while not self._stop.is_set():
            messages = consumer.consume(500, 0.2)
            self._read(sum(1 for message in messages if message.error() is None))
            self.consumer_errors += [str(msg.error()) for msg in messages if msg.error()]
        consumer.close()

    def read_back(self, timeout_s: float):
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "fuzz-verify",
                             "enable.auto.commit": False, "fetch.queue.backoff.ms": 5})
        ends = {p: consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=30)[1]
                for p in range(self.partitions)}
        # from the log start offset, not 0: if records were deleted, the rest is still read
        # (an offset out of range would make librdkafka jump to the end of the partition)
        consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING)
                         for p in range(self.partitions)])
        records: dict[tuple[int, int], bytes] = {}
        positions = {p: 0 for p in range(self.partitions)}
        deadline = time.monotonic() + timeout_s
        while any(positions[p] < ends[p] for p in ends) and time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.5):
                if message.error() is None:
                    records[(message.partition(), message.offset())] = message.value()
                    positions[message.partition()] = message.offset() + 1
        consumer.close()
        return records, ends


class NativeLiveTraffic(_Traffic):
    protocol = "native"

    def _produce(self) -> None:
        from kafkalite import Producer

        producer = Producer(bootstrap_servers=self.bootstrap, acks="all",
                            enable_idempotence=True, linger_ms=5, request_timeout_ms=10000,
                            delivery_timeout_ms=120000, client_id="fuzz-live-producer")
        seq = 0
        while not self._stop.is_set():
            value = b"native-%08d" % seq
            future = producer.send(self.topic, key=b"k%d" % (seq % 16), value=value)
            future.add_callback(lambda md, v=value: self._acked(v, md.partition, md.offset))
            future.add_errback(lambda exc, v=value: self._failed(v, exc))
            seq += 1
            self.sent = seq
            if seq % PACE_EVERY == 0:
                time.sleep(PACE_SLEEP_S)
        try:
            producer.flush(STOP_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - what was not acknowledged by now is not
            self.stop_error = f"{type(exc).__name__}: {exc}"
        producer.close(5)

    def _consumer(self):
        from kafkalite import Consumer, TopicPartition

        consumer = Consumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False,
                            client_id="fuzz-live-consumer", fetch_max_wait_ms=200)
        partitions = [TopicPartition(self.topic, p) for p in range(self.partitions)]
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        return consumer, partitions

    def _consume(self) -> None:
        consumer, _ = self._consumer()
        while not self._stop.is_set():
            try:
                batches = consumer.poll(timeout_ms=200)
            except Exception as exc:  # noqa: BLE001 - counted; the consumer goes on
                self.consumer_errors.append(f"{type(exc).__name__}: {exc}")
                continue
            self._read(sum(len(batch) for batch in batches.values()))
        consumer.close()

    def read_back(self, timeout_s: float):
        consumer, partitions = self._consumer()
        ends = consumer.end_offsets(partitions)
        records: dict[tuple[int, int], bytes] = {}
        deadline = time.monotonic() + timeout_s
        while (any(consumer.position(tp) < ends[tp] for tp in partitions)
               and time.monotonic() < deadline):
            for batch in consumer.poll(timeout_ms=500).values():
                for record in batch:
                    records[(record.partition, record.offset)] = record.value
        consumer.close()
        return records, {tp.partition: end for tp, end in ends.items()}
