"""End-to-end latency with Python clients: kafkalite beside Redis Streams and Apache Kafka 2.8.2.

    python bench/peers.py [--rates 1000 5000] [--seconds 10] [--reps 3]
                          [--peers redis kafkalite-native kafkalite kafka] [--json peers.jsonl]

Issue 26 sets kafkalite's end-to-end p99 against Redis Streams', measured here with Python
clients. Each peer runs the same scenario, one after the other in one invocation, on this
machine: a producer in this process sends a 100-byte record every 1/rate seconds (paced on the
clock, not slept between sends), each carrying its send time (``time.time_ns()``); a consumer in a
process of its own, already waiting before the first record, takes the difference on arrival.
Same machine, same clock. The first second's samples are dropped (connections warming).

Peers (client, server):

- ``redis``: redis-py with hiredis; ``XADD`` to a stream, ``XREAD BLOCK`` on it (Redis 7 from
  apt: ``apt-get install redis-server``; ``pip install redis hiredis``);
- ``kafkalite-native``: kafkalite's own Producer (acks=1, linger_ms 0) and Consumer, on its
  native protocol, one broker;
- ``kafkalite``: confluent-kafka (acks=1, linger.ms 0, fetch.wait.max.ms 100) against one
  kafkalite broker, on Kafka's protocol;
- ``kafka``: the same confluent-kafka settings against one Apache Kafka 2.8.2 broker
  (``scripts/setup.sh --apache-kafka`` fetches it).

Each shape runs once as a warm-up (its figures are the cold column), then ``--reps`` times: the
table gives the median of each percentile. Nothing here asserts; it prints.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Callable, Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from bench_cluster import bootstrap_servers  # noqa: E402
from vs_kafka_clients import percentiles  # noqa: E402

PEERS = ("redis", "kafkalite-native", "kafkalite", "kafka")
STREAM = "peers"
VALUE_SIZE = 100
STAMP = 20                    # the send time's digits at the start of each value


# --- servers ------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def redis_server(workdir: str) -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed: apt-get install redis-server")
    port = _free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", workdir],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        import redis

        client = redis.Redis(port=port)
        deadline = time.monotonic() + 30
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("redis-server did not start")
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def new_topic(bootstrap: str) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = "peers-" + uuid.uuid4().hex[:10]
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        meta = admin.list_topics(name, timeout=5).topics.get(name)
        if meta is not None and meta.error is None and meta.partitions \
                and meta.partitions[0].leader >= 0:
            return name
        time.sleep(0.1)
    raise RuntimeError(f"topic {name} has no leader")


# --- consumers (each in a process of its own) ---------------------------------------------------

def _delay_us(value: bytes, now_ns: int) -> float:
    return (now_ns - int(value[:STAMP])) / 1000.0


def consume_redis(address: str, where: str, n: int, pipe) -> None:
    import redis

    host, port = address.split(":")
    client = redis.Redis(host=host, port=int(port))
    last = "0-0"                # a fresh stream: from its start (the warm-up record too)
    delays: list[float] = []
    pipe.send("ready")
    deadline = time.monotonic() + 120
    while len(delays) < n and time.monotonic() < deadline:
        answer = client.xread({where: last}, block=100)
        now = time.time_ns()
        for _stream, entries in answer:
            for entry_id, fields in entries:
                delays.append(_delay_us(fields[b"v"], now))
                last = entry_id
    pipe.send(delays)


def consume_kafkalite_native(address: str, where: str, n: int, pipe) -> None:
    from kafkalite import Consumer, TopicPartition

    consumer = Consumer(bootstrap_servers=address, auto_offset_reset="earliest")
    tp = TopicPartition(where, 0)
    consumer.assign([tp])
    consumer.position(tp)                  # resolved before the producer starts
    delays: list[float] = []
    pipe.send("ready")
    deadline = time.monotonic() + 120
    while len(delays) < n and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=100).values():
            now = time.time_ns()
            delays.extend(_delay_us(r.value, now) for r in records)
    consumer.close()
    pipe.send(delays)


def consume_confluent(address: str, where: str, n: int, pipe) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": address, "group.id": "peers-" + where,
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                         "log_level": 0})
    consumer.assign([TopicPartition(where, 0, 0)])
    consumer.poll(0.5)                     # connected and fetching before the producer starts
    delays: list[float] = []
    pipe.send("ready")
    deadline = time.monotonic() + 120
    while len(delays) < n and time.monotonic() < deadline:
        message = consumer.poll(0.1)
        if message is not None and message.error() is None:
            delays.append(_delay_us(message.value(), time.time_ns()))
    consumer.close()
    pipe.send(delays)


# --- producers ----------------------------------------------------------------------------------

@contextlib.contextmanager
def redis_sender(address: str, where: str) -> Iterator[Callable[[bytes], None]]:
    import redis

    host, port = address.split(":")
    client = redis.Redis(host=host, port=int(port))
    client.xadd(where, {"v": b"0" * STAMP})        # as the others' warm-up record
    yield lambda value: client.xadd(where, {"v": value})
    client.close()


@contextlib.contextmanager
def kafkalite_native_sender(address: str, where: str) -> Iterator[Callable[[bytes], None]]:
    from kafkalite import Producer

    producer = Producer(bootstrap_servers=address, acks=1, linger_ms=0)
    producer.send(where, b"0" * STAMP).get(30)     # metadata and connection, not measured
    yield lambda value: producer.send(where, value)
    producer.flush()
    producer.close()


@contextlib.contextmanager
def confluent_sender(address: str, where: str) -> Iterator[Callable[[bytes], None]]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": address, "acks": "1", "linger.ms": 0,
                         "log_level": 0})
    producer.produce(where, b"0" * STAMP)        # metadata and connection, not measured
    producer.flush(30)

    def send(value: bytes) -> None:
        producer.produce(where, value)
        producer.poll(0)
    yield send
    producer.flush(30)


SENDERS = {"redis": redis_sender, "kafkalite-native": kafkalite_native_sender,
           "kafkalite": confluent_sender, "kafka": confluent_sender}
CONSUMERS = {"redis": consume_redis, "kafkalite-native": consume_kafkalite_native,
             "kafkalite": consume_confluent, "kafka": consume_confluent}


def one_pass(peer: str, address: str, rate: int, seconds: float) -> dict[str, float]:
    """One paced run: the consumer's p50/p99/p99.9/max in ms."""
    where = STREAM + "-" + uuid.uuid4().hex[:8] if peer == "redis" else new_topic(address)
    n = int(rate * seconds)
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    # the consumer skips the warm-up record the producer sends first, counting n + 1
    proc = ctx.Process(target=CONSUMERS[peer], args=(address, where, n + 1, child), daemon=True)
    proc.start()
    try:
        if not parent.poll(120):
            raise RuntimeError(f"{peer}: the consumer did not start")
        parent.recv()
        pad = b"x" * (VALUE_SIZE - STAMP)
        with SENDERS[peer](address, where) as send:
            start = time.perf_counter()
            for i in range(n):
                due = start + i / rate
                late = due - time.perf_counter()
                if late > 0:
                    time.sleep(late)
                send(b"%020d" % time.time_ns() + pad)
        if not parent.poll(120):
            raise RuntimeError(f"{peer}: the consumer did not answer")
        delays = parent.recv()
    finally:
        proc.join(10)
        if proc.is_alive():
            proc.kill()
    delays = [d for d in delays if d < 60e6][-n:]      # the warm-up record: sent long before
    if len(delays) < n * 0.99:
        raise RuntimeError(f"{peer}: the consumer read {len(delays)} of {n} records")
    return percentiles(delays[rate:])


# --- the run ------------------------------------------------------------------------------------

@contextlib.contextmanager
def server(peer: str, workdir: str) -> Iterator[str]:
    if peer == "redis":
        folder = os.path.join(workdir, peer)
        os.makedirs(folder, exist_ok=True)
        with redis_server(folder) as address:
            yield address
    else:                                  # one broker on a ZooKeeper of its own
        with bootstrap_servers(None, system="kafka" if peer == "kafka" else "kafkalite") \
                as address:
            yield address


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rates", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--peers", nargs="+", choices=PEERS, default=list(PEERS))
    parser.add_argument("--json", help="append one JSON line per figure to this file")
    args = parser.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="peers-")
    table: list[tuple] = []
    try:
        for peer in args.peers:
            with server(peer, workdir) as address:
                for rate in args.rates:
                    cold = one_pass(peer, address, rate, args.seconds)
                    warm = [one_pass(peer, address, rate, args.seconds) for _ in range(args.reps)]
                    load = os.getloadavg()[0]
                    figures = {q: statistics.median(p[q] for p in warm)
                               for q in ("p50", "p99", "p99.9")}
                    table.append((peer, rate, figures, cold, load))
                    print(f"  {peer:<17} {rate:>6,} rec/s  p50 {figures['p50']:.3f}  "
                          f"p99 {figures['p99']:.3f}  p99.9 {figures['p99.9']:.3f} ms  "
                          f"(cold p99 {cold['p99']:.3f}; load {load:.1f})", flush=True)
                    if args.json:
                        with open(args.json, "a") as fh:
                            fh.write(json.dumps({"peer": peer, "rate": rate, **figures,
                                                 "cold": cold, "load": load,
                                                 "passes": warm}) + "\n")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("\n| client, server | rate | e2e p50 | p99 | p99.9 | cold p99 | load |")
    print("|---|---|---|---|---|---|---|")
    for peer, rate, f, cold, load in table:
        print(f"| {peer} | {rate:,} rec/s | {f['p50']:.3f} ms | {f['p99']:.3f} ms | "
              f"{f['p99.9']:.3f} ms | {cold['p99']:.3f} ms | {load:.1f} |")


if __name__ == "__main__":
    main()
