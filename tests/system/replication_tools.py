"""Helpers shared by the replication system tests (no test functions here)."""

from __future__ import annotations

import glob
import os
import threading
import time

from kafkalite import AdminClient, Consumer, NewTopic, Producer, TopicPartition
from kafkalite.record.header import iter_headers


def create_topic(bootstrap, name, partitions, rf, **configs):
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(name, partitions, rf,
                                      topic_configs={k.replace("_", "."): str(v)
                                                     for k, v in configs.items()})],
                            timeout_ms=30000)


class BackgroundProducer:
    """acks=all producer in a thread; remembers what was acknowledged and what failed."""

    def __init__(self, bootstrap, topic, keys=20, acks="all", pace_every=20):
        self.bootstrap, self.topic, self.keys, self.acks = bootstrap, topic, keys, acks
        self.pace_every = pace_every
        self.acknowledged = []      # (key, sequence, partition, offset)
        self.failed = []
        self.sent = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def _run(self):
        producer = Producer(bootstrap_servers=self.bootstrap, acks=self.acks, linger_ms=2,
                            retries=1_000_000, retry_backoff_ms=100,
                            request_timeout_ms=5000, delivery_timeout_ms=120000,
                            max_in_flight_requests_per_connection=1)
        sequence = 0
        while not self._stop.is_set():
            key = b"key-%d" % (sequence % self.keys)
            value = b"%s:%d" % (key, sequence)
            future = producer.send(self.topic, key=key, value=value)
            future.add_callback(self._acked, key, sequence)
            future.add_errback(self._failed, sequence)
            sequence += 1
            self.sent = sequence
            if sequence % self.pace_every == 0:
                time.sleep(0.005)
        producer.flush(timeout=120)
        producer.close(timeout=30)

    def _acked(self, metadata, key, sequence):
        with self._lock:
            self.acknowledged.append((key, sequence, metadata.partition, metadata.offset))

    def _failed(self, exc, sequence):
        with self._lock:
            self.failed.append((sequence, exc))

    def acked_count(self):
        with self._lock:
            return len(self.acknowledged)

    def stop(self):
        self._stop.set()
        self.thread.join(180)


def read_all(bootstrap, topic, partitions, timeout_s=90, acknowledged=()):
    """Every record up to the end offsets; with ``acknowledged`` ((partition, offset) pairs),
    first wait until the end offsets cover them: after a failover the new leader learns the
    high watermark from its followers' next fetches."""
    consumer = Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                        request_timeout_ms=10000)
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    records = []
    deadline = time.monotonic() + timeout_s
    wanted = {}
    for partition, offset in acknowledged:
        wanted[partition] = max(wanted.get(partition, 0), offset + 1)
    ends = consumer.end_offsets(tps)
    while any(ends[tp] < wanted.get(tp.partition, 0) for tp in tps):
        if time.monotonic() > deadline:
            raise AssertionError(f"end offsets {ends} never covered {wanted}")
        time.sleep(0.1)
        ends = consumer.end_offsets(tps)
    while time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            records.extend(batch)
        if all(consumer.position(tp) >= ends[tp] for tp in tps):
            break
    consumer.close()
    return records


def log_bytes_up_to(log_dir, high_watermark):
    """The bytes of every whole batch below ``high_watermark`` in a partition directory."""
    data = bytearray()
    for path in sorted(glob.glob(os.path.join(log_dir, "*.log"))):
        with open(path, "rb") as f:
            content = f.read()
        for pos, header in iter_headers(content, verify_crc=True):
            if header.last_offset >= high_watermark:
                return bytes(data)
            data += content[pos:pos + header.size]
    return bytes(data)
