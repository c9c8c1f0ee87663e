"""Client benchmarks: producer send() cost, batch building, consumer decoding, end to end.

    python bench/client_bench.py [--records 1000000] [--value-size 100] [--partitions 1]

The end-to-end numbers run the clients against the in-memory fake broker of the unit tests
(tests/unit/test_client_fakebroker.py) started in a SEPARATE PROCESS, so, as with a real broker on
the same machine, the client and the broker each get a core and do not share a GIL. The fake
broker does less work than a real one (no disk, no replication), so these numbers bound what the
client itself can do; ``kafkalite perf produce|consume`` measures against a real broker.

Printed numbers (records/s unless noted):

* ``send() null key`` / ``send() keyed``: microseconds per ``Producer.send`` call with sending
  switched off (huge linger and batch size), i.e. the cost on the caller's thread.
* ``build_batch``: encoding accumulated record tuples into wire batches (the sender's work).
* ``decode_records``: fetched bytes -> ConsumerRecord tuples (the consumer's work).
* ``produce acks=1``: N records through ``send()`` + ``flush()`` to the fake broker.
* ``consume``: the same records read back with ``for record in consumer``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "unit"))

from kafkalite.client import Consumer, Producer  # noqa: E402
from kafkalite.client.decoder import decode_records  # noqa: E402
from kafkalite.record import build_batch  # noqa: E402


def _serve(conn, partitions: int) -> None:
    from test_client_fakebroker import FakeCluster

    cluster = FakeCluster(1)
    cluster.create_topic("bench", partitions)
    conn.send(cluster.bootstrap)
    conn.recv()           # wait until told to stop
    cluster.close()


def start_broker(partitions: int):
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_serve, args=(child, partitions), daemon=True)
    proc.start()
    return proc, parent, parent.recv()


def bench_send_cost(bootstrap: str, n: int, value: bytes) -> None:
    producer = Producer(bootstrap, linger_ms=10**9, batch_size=1 << 40,
                        buffer_memory=1 << 40, max_request_size=1 << 40)
    producer.send("bench", value)   # metadata
    send = producer.send
    t0 = time.perf_counter()
    for _ in range(n):
        send("bench", value)
    null_us = (time.perf_counter() - t0) / n * 1e6
    keys = [b"key-%d" % (i % 1000) for i in range(n)]
    t0 = time.perf_counter()
    for k in keys:
        send("bench", value, key=k)
    keyed_us = (time.perf_counter() - t0) / n * 1e6
    producer.close(timeout=0)
    print(f"send() null key           {null_us:8.2f} us/record  ({1 / null_us * 1e6:,.0f}/s)")
    print(f"send() keyed (1000 keys)  {keyed_us:8.2f} us/record  ({1 / keyed_us * 1e6:,.0f}/s)")


def bench_build(n: int, value: bytes) -> list[bytes]:
    now = int(time.time() * 1000)
    records = [(now + i, None, value, None) for i in range(1000)]
    batches = []
    t0 = time.perf_counter()
    for i in range(n // 1000):
        batches.append(build_batch(records, base_offset=i * 1000))
    dt = time.perf_counter() - t0
    print(f"build_batch (1000/batch)  {n / dt:12,.0f} records/s")
    return batches


def bench_decode(batches: list[bytes], n: int) -> None:
    chunk = 8                                   # ~1 MiB fetch responses
    total = 0
    t0 = time.perf_counter()
    for i in range(0, len(batches), chunk):
        data = b"".join(batches[i:i + chunk])
        total += len(decode_records(data, "bench", 0, i * 1000).records)
    dt = time.perf_counter() - t0
    print(f"decode_records            {total / dt:12,.0f} records/s")


def bench_produce(bootstrap: str, n: int, value: bytes) -> None:
    producer = Producer(bootstrap, acks=1)
    producer.send("bench", value).get(10)
    t0 = time.perf_counter()
    send = producer.send
    for _ in range(n):
        send("bench", value)
    producer.flush()
    dt = time.perf_counter() - t0
    metrics = producer.metrics()
    producer.close()
    print(f"produce acks=1 end to end {n / dt:12,.0f} records/s  "
          f"({n * len(value) / dt / 1e6:.1f} MB/s, {metrics['requests']} requests)")


def bench_consume(bootstrap: str, n: int) -> None:
    consumer = Consumer("bench", bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                        consumer_timeout_ms=2000)
    consumer.poll(timeout_ms=5000, max_records=1)
    count = 1
    t0 = time.perf_counter()
    for _record in consumer:
        count += 1
        if count >= n:
            break
    dt = time.perf_counter() - t0
    consumer.close()
    print(f"consume end to end        {count / dt:12,.0f} records/s  ({count:,} records)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=1)
    args = parser.parse_args()
    value = os.urandom(args.value_size)
    n = args.records
    proc, pipe, bootstrap = start_broker(args.partitions)
    try:
        print(f"{n:,} records of {args.value_size} bytes, {args.partitions} partition(s), "
              f"fake broker in pid {proc.pid}")
        bench_send_cost(bootstrap, min(n, 300_000), value)
        batches = bench_build(n, value)
        bench_decode(batches, n)
    finally:
        pipe.send("stop")
        proc.join(5)
    # a fresh broker (the send-cost run left unsent data nowhere, but start clean)
    proc, pipe, bootstrap = start_broker(args.partitions)
    try:
        bench_produce(bootstrap, n, value)
        bench_consume(bootstrap, n)
    finally:
        pipe.send("stop")
        proc.join(5)


if __name__ == "__main__":
    main()
