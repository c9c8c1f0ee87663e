"""A real Kafka client against a real kafkalite broker: confluent-kafka (librdkafka) producing and
consuming over Kafka's wire protocol.

    python bench/kafka_client_bench.py [--records 1000000] [--value-size 100] [--partitions 1]
                                       [--acks 1] [--compression none]
                                       [--bootstrap-server HOST:PORT]

Without ``--bootstrap-server`` it starts its own ZooKeeper and one broker (kafkalite.testing), so
the numbers measure the broker: librdkafka is written in C and is not the bottleneck. Produce is a
plain loop of ``produce()`` (with ``poll(0)`` when the local queue is full), then ``flush()``;
consume is a plain loop of ``consume(10000)`` until every record is back, with librdkafka's
``fetch.queue.backoff.ms`` at 5 ms (see ``consume``). The garbage collector
stays on. Prints records/s and MB/s of record payload for each. A Python loop of ``produce()``
alone tops out near 0.9M calls/s on a 2-core machine, so the same records are also produced
from librdkafka's C loop (``kcat -P -l``), which is what shows the broker's own rate.
"""

from __future__ import annotations

import argparse
import os
import sys
import shutil
import subprocess
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_cluster import bootstrap_servers  # noqa: E402


def produce(bootstrap: str, topic: str, n: int, value: bytes, acks: str, compression: str):
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
                         "compression.type": compression, "enable.idempotence": False,
                         "queue.buffering.max.messages": 1_000_000,
                         # the callback runs only for failures: a Python call per record would
                         # measure the interpreter, not the broker
                         "delivery.report.only.error": True})
    failed = []

    def delivered(err, msg):
        if err is not None:
            failed.append(err)

    produce_ = producer.produce
    start = time.perf_counter()
    for _ in range(n):
        try:
            produce_(topic, value, on_delivery=delivered)
        except BufferError:
            producer.poll(0.01)
            produce_(topic, value, on_delivery=delivered)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - start
    if remaining or failed:
        raise SystemExit(f"produce failed: {remaining} undelivered, {len(failed)} errors "
                         f"(first: {failed[:1]})")
    return elapsed


def consume(bootstrap: str, topic: str, partitions: int, n: int):
    from confluent_kafka import Consumer, TopicPartition

    # librdkafka 2.4+ pauses fetching for fetch.queue.backoff.ms (1 s) whenever its local queue
    # holds queued.min.messages; a loop that drains 100k records in 0.1 s would then measure
    # that pause, not the broker, so the pause is shortened (a client setting, not a broker one).
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused",
                         "enable.auto.commit": False, "fetch.queue.backoff.ms": 5})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = 0
    start = time.perf_counter()
    deadline = start + 300
    while got < n and time.perf_counter() < deadline:
        for message in consumer.consume(10000, 1.0):
            if message.error() is None:
                got += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    if got < n:
        raise SystemExit(f"consume: only {got} of {n} records came back")
    return elapsed


def kcat_produce(bootstrap: str, topic: str, n: int, value: bytes) -> float | None:
    """The same records from librdkafka's C loop (kcat -P -l): no Python per record, so what
    is left is the broker (and librdkafka)."""
    kcat = shutil.which("kcat")
    if kcat is None:
        return None
    with tempfile.NamedTemporaryFile("wb", suffix=".lines") as lines:
        lines.write((value.replace(b"\n", b" ") + b"\n") * n)
        lines.flush()
        start = time.perf_counter()
        subprocess.run([kcat, "-b", bootstrap, "-P", "-t", topic, "-l", lines.name,
                        "-X", "acks=1", "-X", "linger.ms=5",
                        "-X", "queue.buffering.max.messages=1000000"], check=True)
        return time.perf_counter() - start


def report(what: str, n: int, size: int, seconds: float) -> None:
    print(f"{what:<34} {n / seconds:>12,.0f} rec/s  {n * size / seconds / 1e6:>8.1f} MB/s  "
          f"({seconds:.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--acks", default="1")
    parser.add_argument("--compression", default="none")
    parser.add_argument("--bootstrap-server")
    args = parser.parse_args()

    with bootstrap_servers(args.bootstrap_server) as bootstrap:
        from confluent_kafka.admin import AdminClient, NewTopic

        topic = "bench-" + uuid.uuid4().hex[:8]
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(30)
        value = os.urandom(args.value_size // 2).hex().encode()[:args.value_size]
        print(f"confluent-kafka {__import__('confluent_kafka').version()[0]} -> kafkalite at "
              f"{bootstrap}: {args.records:,} x {args.value_size} B, {args.partitions} "
              f"partition(s), acks={args.acks}, compression={args.compression}")
        report(f"produce (acks={args.acks})", args.records, args.value_size,
               produce(bootstrap, topic, args.records, value, args.acks, args.compression))
        report("consume", args.records, args.value_size,
               consume(bootstrap, topic, args.partitions, args.records))
        seconds = kcat_produce(bootstrap, topic, args.records, value)
        if seconds is None:
            print("kcat -P (C loop)                   not run: kcat is not installed")
        else:
            report("kcat -P (C loop, acks=1)", args.records, args.value_size, seconds)


if __name__ == "__main__":
    main()
