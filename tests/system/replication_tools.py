"""Helpers shared by the replication and fault system tests (no test functions here).

- ``BackgroundProducer``: an acks=all producer thread remembering every acknowledged
  (key, sequence, partition, offset) and every failure; values are ``b"key-K:SEQ"``.
- ``read_all``: every record up to the high watermarks (waiting until they cover what was acked),
  read by confluent-kafka, an independent client; a read that times out fails.
- ``try_produce``: one send, no retries, to one broker: what that broker answers.
- Jepsen-style checks after a fault: ``history_problems`` (every acknowledged record read back at
  its offset with its value; per partition, records in the order they were sent, a retried batch
  at most repeated, such duplicates counted by ``duplicates``) and ``replica_divergence`` (below
  the high watermark every replica holds the same record, key, headers and timestamp at every
  offset, read from the log directories at rest by kafka-python's decoder); ``jepsen_problems``
  runs all of them on a cluster after waiting until every replica is back in the ISR.
"""

from __future__ import annotations

import glob
import os
import threading
import time
from collections import Counter, defaultdict

from typing import NamedTuple

from kafkalite import AdminClient, NewTopic, Producer
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
        self.crashed = None         # the exception that ended the producer thread, if any
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def _run(self):
        try:
            self._produce()
        except BaseException as exc:
            self.crashed = exc
            raise

    def _produce(self):
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
        """How many records were acknowledged; raises if the producer thread died (so a wait on
        this count names the cause instead of only timing out)."""
        if self.crashed is not None:
            raise RuntimeError(f"the producer thread died: {self.crashed!r}") from self.crashed
        with self._lock:
            return len(self.acknowledged)

    def acked_since(self, count):
        """How many records were acknowledged after the first ``count``."""
        return self.acked_count() - count

    def failure_kinds(self):
        """Counter of the failed sends' exception class names."""
        with self._lock:
            return Counter(type(exc).__name__ for _seq, exc in self.failed)

    def stop(self):
        self._stop.set()
        self.thread.join(180)


class ReadRecord(NamedTuple):
    """A record read back by the independent reader."""
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple
    timestamp: int


def read_all(bootstrap, topic, partitions, timeout_s=90, acknowledged=()):
    """Every record up to the high watermarks, read by confluent-kafka (librdkafka), not by
    kafkalite's own client; with ``acknowledged`` ((partition, offset) pairs), first wait until
    the high watermarks cover them: after a failover the new leader learns the high watermark
    from its followers' next fetches. A read that does not reach the ends by ``timeout_s`` fails.
    Records read twice at one offset (a reader's retry) are counted once; records stored twice
    (at two offsets) are the checks' business."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer as IndependentConsumer
    from confluent_kafka import KafkaError
    from confluent_kafka import TopicPartition as Tp

    if isinstance(bootstrap, (list, tuple)):
        bootstrap = ",".join(bootstrap)
    consumer = IndependentConsumer({
        "bootstrap.servers": bootstrap, "group.id": f"read-all-{topic}-{time.monotonic_ns()}",
        "enable.auto.commit": False, "enable.partition.eof": True,
        "socket.timeout.ms": 10000, "topic.metadata.refresh.interval.ms": 1000})
    deadline = time.monotonic() + timeout_s
    wanted = {}
    for partition, offset in acknowledged:
        wanted[partition] = max(wanted.get(partition, 0), offset + 1)
    try:
        def ends():
            return {p: high_watermark(consumer, topic, p, deadline) for p in range(partitions)}
        marks = ends()
        while any(marks[p] < wanted.get(p, 0) for p in range(partitions)):
            if time.monotonic() > deadline:
                raise AssertionError(f"high watermarks {marks} never covered {wanted}")
            time.sleep(0.1)
            marks = ends()
        consumer.assign([Tp(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        at = {}
        done = {p for p in range(partitions) if marks[p] == 0}
        while len(done) < partitions:
            if time.monotonic() > deadline:
                raise AssertionError(f"reading {topic} back timed out after {timeout_s} s: "
                                     f"{len(at)} records, partitions {sorted(done)} of "
                                     f"{partitions} read to {marks}")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() != KafkaError._PARTITION_EOF:
                    raise AssertionError(f"reading {topic} back: {msg.error()}")
                if msg.offset() >= marks[msg.partition()]:
                    done.add(msg.partition())
                continue
            if msg.offset() < marks[msg.partition()]:
                _ts_type, timestamp = msg.timestamp()
                at[(msg.partition(), msg.offset())] = ReadRecord(
                    msg.partition(), msg.offset(), msg.key(), msg.value(),
                    tuple(msg.headers() or ()), timestamp)
            if msg.offset() + 1 >= marks[msg.partition()]:
                done.add(msg.partition())
        return [at[k] for k in sorted(at)]
    finally:
        consumer.close()


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


def try_produce(address, topic, partition, value, acks="all", timeout_s=20):
    """One send of ``value`` to ``address`` (only: the producer bootstraps from it) without
    retries: ``(offset, None)`` when acknowledged, ``(None, exception)`` otherwise."""
    producer = Producer(bootstrap_servers=address, acks=acks, retries=0, linger_ms=0,
                        request_timeout_ms=int(timeout_s * 1000 / 2),
                        delivery_timeout_ms=int(timeout_s * 1000), max_block_ms=5000)
    try:
        metadata = producer.send(topic, value=value, partition=partition).get(timeout=timeout_s)
        return metadata.offset, None
    except Exception as exc:  # noqa: BLE001 - the answer is the point
        return None, exc
    finally:
        producer.close(timeout=5)


# --- Jepsen-style checks -----------------------------------------------------------------------

def _sequence(value):
    """The producer's sequence number in a ``b"key-K:SEQ"`` value; None for anything else
    (a test's own probe records)."""
    key, _, sequence = (value or b"").rpartition(b":")
    return int(sequence) if key.startswith(b"key-") and sequence.isdigit() else None


def history_problems(acknowledged, records):
    """What is wrong with ``records`` (read back) given ``acknowledged`` ((key, sequence,
    partition, offset) tuples): acknowledged records missing or different at their offset, and
    per partition a record out of the order the producer sent in (sequences grow with the offset;
    a retried batch may repeat earlier ones, nothing new may come out of order; records that
    are not the producer's are left out of the order check)."""
    at = {(r.partition, r.offset): (r.key, r.value) for r in records}
    problems = []
    for key, sequence, partition, offset in acknowledged:
        want = (key, b"%s:%d" % (key, sequence))
        got = at.get((partition, offset))
        if got != want:
            problems.append(f"acknowledged {want!r} at partition {partition} offset {offset}, "
                            f"read {got!r}")
    seen, newest = defaultdict(set), defaultdict(lambda: -1)
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        sequence = _sequence(record.value)
        if sequence is None or sequence in seen[record.partition]:
            continue                                    # a retried batch, written again
        if sequence < newest[record.partition]:
            problems.append(f"partition {record.partition} offset {record.offset}: sequence "
                            f"{sequence} after {newest[record.partition]}")
        seen[record.partition].add(sequence)
        newest[record.partition] = max(newest[record.partition], sequence)
    return problems


def replica_log(log_dir, high_watermark):
    """{offset: (key, value, headers, timestamp)} of every record below ``high_watermark`` in one
    replica's partition directory, decoded by kafka-python's record reader (not kafkalite's),
    CRCs checked."""
    from kafka.record import MemoryRecords

    records = MemoryRecords(log_bytes_up_to(log_dir, high_watermark))
    out = {}
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc(), f"{log_dir}: a batch fails its CRC"
        for record in batch:
            if record.offset < high_watermark:
                out[record.offset] = (record.key, record.value, tuple(record.headers),
                                      record.timestamp)
    return out


def duplicates(records):
    """How many of the producer's records are stored more than once (a retried batch written
    again: at-least-once allows it, the fault tests report it)."""
    counts = Counter((r.partition, _sequence(r.value)) for r in records
                     if _sequence(r.value) is not None)
    return sum(n - 1 for n in counts.values() if n > 1)


def replica_divergence(log_dirs, high_watermark):
    """Offsets below ``high_watermark`` where the replicas ({broker: partition dir}) do not all
    hold the same record (key, value, headers and timestamp); a replica without the offset
    counts as holding nothing."""
    logs = {broker: replica_log(path, high_watermark) for broker, path in log_dirs.items()}
    problems = []
    for offset in range(high_watermark):
        values = {broker: log.get(offset) for broker, log in logs.items()}
        if len(set(values.values())) > 1 or None in values.values():
            problems.append(f"offset {offset}: {values}")
    return problems


def wait_replicas_in_sync(cluster, topic, partitions, timeout_s=90):
    """Until every partition's ISR holds all its replicas (a LocalCluster's metadata)."""
    from kafkalite.local.cluster import wait_until

    def in_sync():
        for p in range(partitions):
            meta = cluster.partition_metadata(topic, p)
            if meta is None or sorted(meta.isr) != sorted(meta.replicas) or meta.leader < 0:
                return False
        return True
    wait_until(in_sync, timeout_s, f"every replica of {topic} back in the ISR", interval_s=0.2,
               on_timeout=cluster.describe_logs)


def high_watermark(consumer, topic, partition, deadline):
    """One partition's high watermark, asked by confluent-kafka ``consumer``.

    A moved leader (NOT_LEADER_FOR_PARTITION while the controller moves a leader back to its
    preferred replica, say) is retried until ``deadline`` (time.monotonic()), as a Kafka user
    would: get_watermark_offsets does not retry by itself, and its errors do not carry
    librdkafka's retriable flag. Anything else is raised at once."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka import TopicPartition as Tp

    while True:
        try:
            return consumer.get_watermark_offsets(Tp(topic, partition), timeout=10)[1]
        except KafkaException as e:
            moved = e.args[0].code() in (KafkaError.NOT_LEADER_FOR_PARTITION,
                                         KafkaError.LEADER_NOT_AVAILABLE)
            if not moved or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def high_watermarks(bootstrap, topic, partitions, timeout_s=30.0):
    """{partition: high watermark}, asked by confluent-kafka."""
    from confluent_kafka import Consumer as IndependentConsumer

    consumer = IndependentConsumer({"bootstrap.servers": bootstrap, "group.id": "watermarks",
                                    "enable.auto.commit": False})
    deadline = time.monotonic() + timeout_s
    try:
        return {p: high_watermark(consumer, topic, p, deadline) for p in range(partitions)}
    finally:
        consumer.close()


def jepsen_problems(cluster, topic, partitions, acknowledged, timeout_s=90):
    """After the faults are healed and the producer stopped: every check above, on
    ``cluster`` (a LocalCluster). Waits until all replicas are in sync, reads everything back,
    then STOPS the cluster (cleanly) and compares the replicas' log directories at rest.
    Returns (records read, problems)."""
    wait_replicas_in_sync(cluster, topic, partitions, timeout_s)
    bootstrap = cluster.bootstrap_servers
    records = read_all(bootstrap, topic, partitions, timeout_s=timeout_s,
                       acknowledged=[(p, o) for _k, _s, p, o in acknowledged])
    marks = high_watermarks(bootstrap, topic, partitions)
    replicas = {p: cluster.partition_metadata(topic, p).replicas for p in range(partitions)}
    problems = history_problems(acknowledged, records)
    print(f"  read back by confluent-kafka: {len(records)} records, {duplicates(records)} of the "
          f"producer's stored twice (a retried batch written again)")
    cluster.stop()
    for partition, mark in sorted(marks.items()):
        dirs = {b: os.path.join(cluster.brokers[b].log_dir, f"{topic}-{partition}")
                for b in replicas[partition]}
        problems += [f"partition {partition} replicas differ at {p}"
                     for p in replica_divergence(dirs, mark)]
    return records, problems


def step_printer():
    """``step(what)`` prints what a fault test is doing, with the seconds since it started (the
    log a failed run leaves behind)."""
    started = time.monotonic()

    def step(what):
        print(f"  {time.monotonic() - started:6.1f} s  {what}")
    return step


def start_acks_all_traffic(bootstrap, topic, partitions, acked=300):
    """The fault tests' load: the topic with rf 3 and min.insync.replicas 2, and an acks=all
    BackgroundProducer that has had ``acked`` records acknowledged."""
    from kafkalite.local.cluster import wait_until

    create_topic(bootstrap, topic, partitions, 3, min_insync_replicas=2)
    producer = BackgroundProducer(bootstrap, topic, pace_every=2).start()
    wait_until(lambda: producer.acked_count() > acked, 60, f"{acked} acknowledged records")
    return producer
