"""kafkalite's clients as users write their loops, beside ``kafkalite perf`` and confluent-kafka,
against the same real broker, in one run (issue 13's table).

    python bench/client_bench.py [--records 1000000] [--value-size 100]
                                 [--sections plain,perf,confluent,latency,keyed,acks,micro]
                                 [--latency-records 2000] [--keyed-records 300000]
                                 [--bootstrap-server HOST:PORT]

Without ``--bootstrap-server`` it starts its own ZooKeeper and one broker (``bench_cluster``);
the ``acks`` section starts three brokers of its own (acks=all needs replicas). The garbage
collector stays on and the loops are the plain ones a user writes:

* ``plain``: ``for _ in range(n): producer.send(topic, value)`` then ``flush()`` (acks=1,
  default settings otherwise), and a ``poll()`` loop counting records (``plain_loop_bench``);
* ``perf``: ``kafkalite perf produce`` and ``perf consume`` (gc paused, ``map`` over send) on
  the same records;
* ``confluent``: confluent-kafka's ``produce()`` loop and ``consume()`` loop
  (``kafka_client_bench``);
* ``latency``: one record at a time, 1 ms apart, ``send().get()`` each (ack latency), with a
  consumer already waiting in another process (end-to-end latency: the consumer's clock minus
  the send time carried in the value; same machine, same clock);
* ``keyed``: every record with its own key, to a topic of 1 and of 1,000 partitions;
* ``acks``: acks=1 and acks=all to a topic of replication factor 3 on three brokers;
* ``micro``: CPU time (not wall time) per ``send()`` and per decoded record, the client's own
  costs whatever the machine's load.

Each line says the load average when it was measured, and for throughput the records per
CPU-second of the client process and of the broker(s): on a shared, loaded machine the wall
rate moves with the load, the CPU costs much less. Run several times. Nothing here asserts on
speed.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import re
import subprocess
import sys
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from bench_cluster import bootstrap_servers  # noqa: E402
from plain_loop_bench import poll_loop, produce_loop  # noqa: E402

from kafkalite import AdminClient, Consumer, NewTopic, Producer, TopicPartition  # noqa: E402

SECTIONS = ("plain", "perf", "confluent", "latency", "keyed", "acks", "micro")


def load() -> str:
    return "load %.1f" % os.getloadavg()[0]


def row(what: str, value: str, note: str = "") -> None:
    print(f"{what:<44} {value:>22}   {load()}{'  ' + note if note else ''}", flush=True)


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f} rec/s"


def broker_pids(bootstrap: str) -> list[int]:
    """The broker processes listening on ``bootstrap``'s ports (this machine's)."""
    pids = []
    for address in bootstrap.split(","):
        port = address.rsplit(":", 1)[-1]
        out = subprocess.run(["pgrep", "-f", f"listeners=PLAINTEXT://[^ ]*:{port}"],
                             capture_output=True, text=True).stdout
        pids += [int(p) for p in out.split()]
    return pids


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])     # utime + stime, in ticks
        except OSError:
            pass
    return total / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """Wall time, this process's CPU time and the brokers' CPU time over a ``with`` block: on a
    loaded machine the wall rate says little, records per CPU-second say what each side costs
    (on 2 idle cores the client and the broker each get one: the slower bounds the rate)."""

    def __init__(self, bootstrap: str):
        self.pids = broker_pids(bootstrap)

    def __enter__(self):
        self.wall, self.cpu, self.broker = (time.perf_counter(), time.process_time(),
                                            cpu_seconds(self.pids))
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu
        self.broker = cpu_seconds(self.pids) - self.broker

    def note(self, n: int) -> str:
        return (f"per CPU-s: client {n / max(self.cpu, 1e-9):,.0f}, broker "
                f"{n / max(self.broker, 1e-9):,.0f}")


def measured(what: str, bootstrap: str, n: int, fn, *args, **kwargs) -> float:
    with CpuMeter(bootstrap) as meter:
        fn(*args, **kwargs)
    row(what, rate(n, meter.wall), meter.note(n))
    return meter.wall


def new_topic(bootstrap: str, partitions: int = 1, replication: int = 1) -> str:
    topic = "bench-" + uuid.uuid4().hex[:8]
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(topic, partitions, replication)], timeout_ms=60000)
    return topic


# --- sections -----------------------------------------------------------------------------------
def plain(bootstrap: str, n: int, value: bytes) -> str:
    topic = new_topic(bootstrap)
    measured("kafkalite for-loop send() acks=1", bootstrap, n, produce_loop, bootstrap, topic,
             n, value)
    measured("kafkalite poll() loop", bootstrap, n, poll_loop, bootstrap, topic, n)
    return topic


def perf(bootstrap: str, n: int, size: int) -> None:
    topic = new_topic(bootstrap)
    cli = [sys.executable, "-m", "kafkalite", "perf"]
    out = subprocess.run(cli + ["produce", "--topic", topic, "--num-records", str(n),
                                "--record-size", str(size), "--bootstrap-server", bootstrap],
                         capture_output=True, text=True, check=True).stdout
    row("kafkalite perf produce (gc paused, map)", _perf_rate(out, "records sent"))
    out = subprocess.run(cli + ["consume", "--topic", topic, "--messages", str(n),
                                "--bootstrap-server", bootstrap],
                         capture_output=True, text=True, check=True).stdout
    row("kafkalite perf consume (gc paused)", _perf_rate(out, "records received"))


def _perf_rate(out: str, what: str) -> str:
    found = re.findall(what + r", ([\d.]+) records/sec", out)
    return f"{float(found[-1]):,.0f} rec/s" if found else "(no result line)"


def confluent(bootstrap: str, n: int, value: bytes) -> None:
    try:
        import kafka_client_bench as kc
    except ImportError as exc:  # pragma: no cover
        row("confluent-kafka", "not run", str(exc))
        return
    topic = new_topic(bootstrap)
    measured("confluent-kafka produce() loop acks=1", bootstrap, n, kc.produce, bootstrap,
             topic, n, value, "1", "none")
    measured("confluent-kafka consume() loop", bootstrap, n, kc.consume, bootstrap, topic, 1, n)


def _latency_consumer(bootstrap: str, topic: str, n: int, pipe) -> None:
    consumer = Consumer(bootstrap_servers=bootstrap, auto_offset_reset="latest")
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.position(tp)                 # resolved before the producer starts
    pipe.send("ready")
    delays = []
    deadline = time.monotonic() + 120
    while len(delays) < n and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=100).values():
            now = time.time_ns()
            delays.extend(now - int(r.value[:20]) for r in records)
    consumer.close()
    pipe.send(delays)


def _pct(values: list, q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def latency(bootstrap: str, n: int, size: int) -> None:
    topic = new_topic(bootstrap)
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_latency_consumer, args=(bootstrap, topic, n, child), daemon=True)
    proc.start()
    if not parent.poll(120):
        raise SystemExit("the latency consumer did not start")
    parent.recv()
    producer = Producer(bootstrap_servers=bootstrap, acks=1)
    producer.send(topic, b"0" * 20).get(30)      # metadata and connection, not measured
    pad = b"x" * max(size - 20, 0)
    acks = []
    for _ in range(n):
        start = time.time_ns()
        producer.send(topic, b"%020d" % start + pad).get(30)
        acks.append(time.time_ns() - start)
        time.sleep(0.001)
    producer.close()
    if not parent.poll(120):
        raise SystemExit("the latency consumer did not answer")
    delays = [d for d in parent.recv()]
    proc.join(10)
    delays = delays[1:] if len(delays) > n else delays
    row("ack latency p50 / p99 (1 ms apart)",
        f"{_pct(acks, 0.5) / 1e6:.2f} / {_pct(acks, 0.99) / 1e6:.2f} ms")
    row("end-to-end latency p50 / p99", f"{_pct(delays, 0.5) / 1e6:.2f} / "
        f"{_pct(delays, 0.99) / 1e6:.2f} ms", f"({len(delays)} records)")


def keyed(bootstrap: str, n: int, value: bytes) -> None:
    keys = [b"key-%012d" % i for i in range(n)]
    rates = {}
    for partitions in (1, 1000):
        topic = new_topic(bootstrap, partitions)
        producer = Producer(bootstrap_servers=bootstrap, acks=1)
        producer.partitions_for(topic)
        with CpuMeter(bootstrap) as meter:
            for key in keys:
                producer.send(topic, value, key=key)
            producer.flush()
        producer.close()
        rates[partitions] = n / meter.wall
        row(f"keyed send() loop, {partitions} partition(s)", rate(n, meter.wall),
            meter.note(n))
    row("keyed: 1,000 partitions / 1 partition", f"{rates[1000] / rates[1] * 100:.0f} %")


def acks_all(n: int, value: bytes) -> None:
    with bootstrap_servers(None, num_brokers=3) as bootstrap:
        topic = new_topic(bootstrap, 1, 3)
        one = measured("3 brokers, rf 3: send() loop acks=1", bootstrap, n, produce_loop,
                       bootstrap, topic, n, value)
        every = measured("3 brokers, rf 3: send() loop acks=all", bootstrap, n, produce_loop,
                         bootstrap, topic, n, value, acks="all")
        row("acks=all / acks=1", f"{one / every * 100:.0f} %")


def micro(bootstrap: str, n: int, value: bytes) -> None:
    from kafkalite.client.decoder import decode_records
    from kafkalite.record import build_batch

    topic = new_topic(bootstrap)
    producer = Producer(bootstrap_servers=bootstrap, linger_ms=10**9, batch_size=1 << 40,
                        buffer_memory=1 << 40, max_request_size=1 << 40)
    producer.partitions_for(topic)
    send = producer.send
    start = time.process_time()
    for _ in range(n):
        send(topic, value)
    row("send() CPU time, nothing sent", f"{(time.process_time() - start) / n * 1e6:.2f} us")
    producer.close(timeout=0)
    now = int(time.time() * 1000)
    data = b"".join(build_batch([(now, None, value, None)] * 1000, base_offset=i * 1000)
                    for i in range(10))
    start = time.process_time()
    for _ in range(max(n // 10000, 1)):
        decode_records(data, topic, 0, 0)
    seconds = time.process_time() - start
    row("decode CPU time per record", f"{seconds / (max(n // 10000, 1) * 10000) * 1e6:.3f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--sections", default=",".join(SECTIONS))
    parser.add_argument("--latency-records", type=int, default=2000)
    parser.add_argument("--keyed-records", type=int, default=300_000)
    parser.add_argument("--bootstrap-server")
    args = parser.parse_args()
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; choose from {SECTIONS}")
    n = args.records
    value = os.urandom(args.value_size // 2).hex().encode()[:args.value_size]
    print(f"{n:,} x {args.value_size} B, gc on, {os.cpu_count()} cores, {load()}", flush=True)
    need_one = set(sections) - {"acks"}
    with (bootstrap_servers(args.bootstrap_server) if need_one
          else contextlib.nullcontext(None)) as bootstrap:
        for section in sections:
            if section == "plain":
                plain(bootstrap, n, value)
            elif section == "perf":
                perf(bootstrap, n, args.value_size)
            elif section == "confluent":
                confluent(bootstrap, n, value)
            elif section == "latency":
                latency(bootstrap, args.latency_records, args.value_size)
            elif section == "keyed":
                keyed(bootstrap, args.keyed_records, value)
            elif section == "micro":
                micro(bootstrap, min(n, 300_000), value)
    if "acks" in sections:
        acks_all(n, value)


if __name__ == "__main__":
    main()
