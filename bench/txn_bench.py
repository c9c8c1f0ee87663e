"""Transactional produce beside idempotent produce, kafkalite against Apache Kafka 2.8.2 (issue 22).

    .venv/bin/python bench/txn_bench.py [--records 100000] [--repetitions 3] [--quick]
                                        [--systems kafkalite,kafka] [--json out.jsonl]
                                        [--zookeeper HOST:PORT]

One invocation starts its own ZooKeeper (or uses ``--zookeeper``), then 3 kafkalite brokers, runs
every row, stops them, then 3 Apache Kafka 2.8.2 brokers on another chroot of the same ZooKeeper,
with identical settings (SHARED_SETTINGS: replication factor 3, min.insync.replicas 2; the
transaction log rf 3 and min.isr 2), and runs the same rows. The client is confluent-kafka
(librdkafka) for both systems, with acks=all and 100-byte values. Each system first gets the same
warm-up pass (a whole pass, not measured: the JVM's JIT and both systems' caches settle), then
``--repetitions`` measured passes; a figure is the median over the passes. Kafka's brokers run
as the project's oracle runs them (``kafkalite.testing.apache_kafka``: a 512 MB heap, the serial
GC), not with Kafka's production JVM settings (G1, 1 GB).

Rows:
- idempotent produce: records/s of ``enable.idempotence`` without transactions;
- transactional produce with transactions of 1, 100 and 10,000 records: records/s over the whole
  row (begin, produce, commit), and the latency of ``commit_transaction()`` (p50, p99, in ms);
- consume of the transactional output (every transaction of the three rows, one topic) at
  read_uncommitted and at read_committed: records/s from assign to the last record (per pass, the
  median of 3 reads at each level, the levels taking turns).

A transactional row runs ``records / size`` transactions, at least ``--min-transactions`` and at
most ``--max-transactions`` (1-record transactions are bounded by the commit's round trips, not by
the records). The load average (1 minute) is sampled after each measurement and shown beside the
figures: the machine is shared, and the absolute numbers mean little without it.

Prints one table (both absolutes and the ratio kafkalite/Kafka per row); ``--json`` writes one JSON
line per row and metric with every repetition's value.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

SYSTEMS = ("kafkalite", "kafka")
TXN_SIZES = (1, 100, 10_000)
RECORDS_PER_S = "records/s"
P50, P99 = "commit p50 ms", "commit p99 ms"
IDEMPOTENT = "idempotent produce"
CONSUME_UNCOMMITTED = "consume read_uncommitted"
CONSUME_COMMITTED = "consume read_committed"


def txn_row(size: int) -> str:
    return f"txn produce, {size:,} rec/txn"


#: (row, metric) in the table's order
METRICS: list[tuple[str, str]] = [(IDEMPOTENT, RECORDS_PER_S)]
for _size in TXN_SIZES:
    METRICS += [(txn_row(_size), RECORDS_PER_S), (txn_row(_size), P50), (txn_row(_size), P99)]
METRICS += [(CONSUME_UNCOMMITTED, RECORDS_PER_S), (CONSUME_COMMITTED, RECORDS_PER_S)]

#: reads of the transactional output at each isolation level per pass
CONSUME_READS = 3
#: a bound on every wait, so that a stuck broker ends the bench instead of hanging it
OP_TIMEOUT_S = 180.0


@dataclass
class Plan:
    """The numbers of one pass."""
    records: int                  # idempotent produce; the budget of each transactional row
    min_transactions: int
    max_transactions: int
    value_size: int = 100

    def transactions(self, size: int) -> int:
        return max(self.min_transactions, min(self.max_transactions, self.records // size))


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (as most latency tools report it): never interpolated."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


# ------------------------------------------------------------------------------- measurements

def create_topics(bootstrap: str, topics: list[str], partitions: int) -> None:
    """``topics`` with replication factor 3, waited on until each partition has a leader and a
    full ISR (a produce with acks=all before that would measure the election)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafkalite.local.cluster import wait_until

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, partitions, 3) for t in topics]).values():
        future.result(OP_TIMEOUT_S)

    def ready() -> bool:
        listed = admin.list_topics(timeout=10).topics
        for topic in topics:
            meta = listed.get(topic)
            if meta is None or meta.error is not None or len(meta.partitions) != partitions:
                return False
            if not all(p.leader >= 0 and len(p.isrs) == 3 for p in meta.partitions.values()):
                return False
        return True
    wait_until(ready, OP_TIMEOUT_S, f"leaders and full ISRs for {len(topics)} topics")


def _produce_all(producer: Any, topic: str, n: int, value: bytes) -> None:
    """``n`` records; a full local queue is drained by serving delivery reports."""
    produce = producer.produce
    for _ in range(n):
        try:
            produce(topic, value)
        except BufferError:
            producer.poll(0.01)
            produce(topic, value)


def idempotent_produce(bootstrap: str, topic: str, n: int, value: bytes) -> float:
    """records/s of an idempotent producer (acks=all), from the first produce to flush's end."""
    from confluent_kafka import Producer

    failed: list[Any] = []
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "acks": "all", "linger.ms": 5, "queue.buffering.max.messages": 1_000_000,
                         # the callback runs for failures only: a Python call per record would
                         # measure the interpreter, not the broker
                         "delivery.report.only.error": True,
                         "on_delivery": lambda err, _msg: err is None or failed.append(err)})
    # metadata and the producer id first: the row measures records, not the client's start
    producer.list_topics(topic, timeout=OP_TIMEOUT_S)
    start = time.perf_counter()
    _produce_all(producer, topic, n, value)
    remaining = producer.flush(OP_TIMEOUT_S)
    elapsed = time.perf_counter() - start
    if remaining or failed:
        raise RuntimeError(f"idempotent produce: {remaining} undelivered, {len(failed)} failed "
                           f"(first: {failed[:1]})")
    return n / elapsed


def transactional_produce(bootstrap: str, topic: str, size: int, count: int,
                          value: bytes) -> tuple[float, list[float]]:
    """``count`` transactions of ``size`` records each: (records/s over all of them, the
    latency of each ``commit_transaction()`` in ms). ``init_transactions`` is not measured."""
    from confluent_kafka import Producer

    failed: list[Any] = []
    producer = Producer({"bootstrap.servers": bootstrap,
                         "transactional.id": f"txn-bench-{uuid.uuid4().hex[:12]}",
                         "acks": "all", "linger.ms": 5, "queue.buffering.max.messages": 1_000_000,
                         "transaction.timeout.ms": 120_000, "delivery.report.only.error": True,
                         "on_delivery": lambda err, _msg: err is None or failed.append(err)})
    producer.init_transactions(OP_TIMEOUT_S)
    producer.list_topics(topic, timeout=OP_TIMEOUT_S)
    commits: list[float] = []
    start = time.perf_counter()
    for _ in range(count):
        producer.begin_transaction()
        _produce_all(producer, topic, size, value)
        before = time.perf_counter()
        producer.commit_transaction(OP_TIMEOUT_S)
        commits.append((time.perf_counter() - before) * 1000.0)
    elapsed = time.perf_counter() - start
    if failed:
        raise RuntimeError(f"transactional produce: {len(failed)} failed (first: {failed[0]})")
    return size * count / elapsed, commits


def consume(bootstrap: str, topic: str, partitions: int, expected: int, isolation: str) -> float:
    """records/s reading ``topic`` from its start at ``isolation`` until ``expected`` records
    (control records are not records: librdkafka skips them)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    # librdkafka pauses fetching for fetch.queue.backoff.ms (1 s) whenever its queue is full;
    # shortened so that the row measures the broker, not that pause (a client setting)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-bench-unused",
                         "enable.auto.commit": False, "isolation.level": isolation,
                         "fetch.queue.backoff.ms": 5})
    try:
        consumer.list_topics(topic, timeout=OP_TIMEOUT_S)
        got = 0
        start = time.perf_counter()
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        deadline = start + OP_TIMEOUT_S
        while got < expected and time.perf_counter() < deadline:
            for message in consumer.consume(min(10_000, expected - got), 1.0):
                if message.error() is None:
                    got += 1
        elapsed = time.perf_counter() - start
    finally:
        consumer.close()
    if got != expected:
        raise RuntimeError(f"consume {isolation}: {got} records of {expected}")
    return expected / elapsed


# ------------------------------------------------------------------------------------ passes

Sample = tuple[float, float]          # (value, 1-minute load average just after it)


def run_pass(bootstrap: str, plan: Plan, partitions: int,
             record: Callable[[str, str, float], None]) -> None:
    """Every row once, on fresh topics; ``record(row, metric, value)`` for each figure."""
    value = (os.urandom(plan.value_size).hex().encode())[:plan.value_size]
    tag = uuid.uuid4().hex[:8]
    idem_topic, txn_topic = f"txn-bench-idem-{tag}", f"txn-bench-txn-{tag}"
    create_topics(bootstrap, [idem_topic, txn_topic], partitions)
    record(IDEMPOTENT, RECORDS_PER_S, idempotent_produce(bootstrap, idem_topic, plan.records,
                                                         value))
    written = 0
    for size in TXN_SIZES:
        count = plan.transactions(size)
        rate, commits = transactional_produce(bootstrap, txn_topic, size, count, value)
        written += size * count
        record(txn_row(size), RECORDS_PER_S, rate)
        record(txn_row(size), P50, percentile(commits, 0.50))
        record(txn_row(size), P99, percentile(commits, 0.99))
    # one read of the output takes well under a second: a pass's figure is the median of a few
    # reads, the two levels taking turns so that neither always reads second
    rates: dict[str, list[float]] = {CONSUME_UNCOMMITTED: [], CONSUME_COMMITTED: []}
    for _ in range(CONSUME_READS):
        for row, isolation in ((CONSUME_UNCOMMITTED, "read_uncommitted"),
                               (CONSUME_COMMITTED, "read_committed")):
            rates[row].append(consume(bootstrap, txn_topic, partitions, written, isolation))
    for row, values in rates.items():
        record(row, RECORDS_PER_S, statistics.median(values))


def run_system(system: str, bootstrap: str, plan: Plan, repetitions: int,
               partitions: int) -> dict[tuple[str, str], list[Sample]]:
    """The warm-up pass, then ``repetitions`` measured passes: every figure with its load."""
    started = time.monotonic()
    run_pass(bootstrap, plan, partitions, lambda *_: None)
    print(f"  {system}: warm-up pass in {time.monotonic() - started:.0f} s", flush=True)
    samples: dict[tuple[str, str], list[Sample]] = {key: [] for key in METRICS}

    def record(row: str, metric: str, value: float) -> None:
        samples[(row, metric)].append((value, os.getloadavg()[0]))

    for repetition in range(repetitions):
        started = time.monotonic()
        run_pass(bootstrap, plan, partitions, record)
        print(f"  {system}: pass {repetition + 1}/{repetitions} in "
              f"{time.monotonic() - started:.0f} s (load {os.getloadavg()[0]:.1f})", flush=True)
    return samples


# -------------------------------------------------------------------------------- clusters

def settings(internal_partitions: int) -> dict[str, Any]:
    """What both systems get: the oracle's shared settings, the transaction log's replication
    spelled out (Kafka's defaults, rf 3 and min.isr 2), the internal topics' partitions."""
    from kafkalite.testing.oracle_fixtures import SHARED_SETTINGS

    return {**SHARED_SETTINGS, "transaction.state.log.replication.factor": 3,
            "transaction.state.log.min.isr": 2,
            "transaction.state.log.num.partitions": internal_partitions,
            "offsets.topic.num.partitions": internal_partitions}


def start_cluster(system: str, zk_connect: str, workdir: str, overrides: dict[str, Any]) -> Any:
    """3 brokers of ``system`` on a fresh chroot of ``zk_connect``, started and listing each
    other."""
    from kafkalite.local.zookeeper import create_chroots

    chroot = create_chroots(zk_connect, f"txn-bench-{system}")[0]
    if system == "kafka":
        from kafkalite.testing.apache_kafka import ApacheKafkaCluster

        cluster: Any = ApacheKafkaCluster(f"{zk_connect}{chroot}", 3,
                                          workdir=os.path.join(workdir, "kafka"),
                                          overrides=dict(overrides))
    else:
        from kafkalite.local.cluster import LocalCluster

        cluster = LocalCluster(f"{zk_connect}{chroot}", 3,
                               workdir=os.path.join(workdir, "kafkalite"),
                               overrides=dict(overrides), die_with_parent=signal.SIGKILL,
                               start_timeout_s=OP_TIMEOUT_S)
    try:
        cluster.start()
    except BaseException:
        print(cluster.describe_logs(), file=sys.stderr)
        cluster.stop()
        raise
    return cluster


# ---------------------------------------------------------------------------------- report

def _median(samples: list[Sample]) -> float | None:
    return statistics.median(v for v, _ in samples) if samples else None


def _load(samples: list[Sample]) -> float | None:
    return statistics.median(load for _, load in samples) if samples else None


def summary(results: dict[str, dict[tuple[str, str], list[Sample]]]) -> list[dict[str, Any]]:
    """One dict per (row, metric): each system's median, values and load, and the ratio."""
    lines = []
    for row, metric in METRICS:
        line: dict[str, Any] = {"row": row, "metric": metric}
        for system, samples in results.items():
            got = samples[(row, metric)]
            line[system] = {"median": _median(got), "values": [v for v, _ in got],
                            "load": _load(got)}
        kl, ak = (line.get(s, {}).get("median") for s in SYSTEMS)
        line["ratio"] = kl / ak if kl is not None and ak else None
        lines.append(line)
    return lines


def _figure(value: float | None, metric: str) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if metric != RECORDS_PER_S else f"{value:,.0f}"


def table(lines: list[dict[str, Any]], repetitions: int) -> str:
    """The one table: per row and metric, both medians, the ratio, each system's load."""
    head = (f"{'row':<28} {'metric':<14} {'kafkalite':>11} {'kafka':>11} {'kl/kafka':>9} "
            f"{'load kl':>8} {'load kafka':>10}")
    out = [f"median of {repetitions} repetitions; load = 1-minute load average after the "
           f"measurement (median); {os.cpu_count()} cores", head, "-" * len(head)]
    for line in lines:
        kl, ak = line.get("kafkalite", {}), line.get("kafka", {})
        ratio = "-" if line["ratio"] is None else f"{line['ratio']:.2f}"
        loads = [("-" if s.get("load") is None else f"{s['load']:.1f}") for s in (kl, ak)]
        out.append(f"{line['row']:<28} {line['metric']:<14} "
                   f"{_figure(kl.get('median'), line['metric']):>11} "
                   f"{_figure(ak.get('median'), line['metric']):>11} {ratio:>9} "
                   f"{loads[0]:>8} {loads[1]:>10}")
    return "\n".join(out)


# ------------------------------------------------------------------------------------ main

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, help="idempotent records, and each transactional "
                        "row's budget (default 100000; --quick 2000)")
    parser.add_argument("--repetitions", type=int, help="measured passes (default 3)")
    parser.add_argument("--min-transactions", type=int, help="per row (default 3; --quick 1)")
    parser.add_argument("--max-transactions", type=int, help="per row (default 100; --quick 5)")
    parser.add_argument("--partitions", type=int, default=3, help="of the measured topics")
    parser.add_argument("--internal-partitions", type=int, help="of __transaction_state and "
                        "__consumer_offsets on both systems (default 50, Kafka's; --quick 5)")
    parser.add_argument("--quick", action="store_true", help="small numbers, for a smoke test")
    parser.add_argument("--systems", default=",".join(SYSTEMS),
                        help="comma-separated, in the order run (default kafkalite,kafka)")
    parser.add_argument("--json", help="write one JSON line per row and metric to this file")
    parser.add_argument("--zookeeper", help="an existing ZooKeeper (host:port, no chroot) "
                        "instead of starting one")
    args = parser.parse_args(argv)
    quick = args.quick
    defaults = {"records": 2000 if quick else 100_000, "repetitions": 3,
                "min_transactions": 1 if quick else 3, "max_transactions": 5 if quick else 100,
                "internal_partitions": 5 if quick else 50}
    for name, default in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, default)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in args.systems if s not in SYSTEMS]
    if unknown or not args.systems:
        parser.error(f"--systems: {unknown or 'none'}; known: {', '.join(SYSTEMS)}")
    if args.repetitions < 1 or args.records < 1:
        parser.error("--repetitions and --records must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    import confluent_kafka

    from kafkalite.local.zookeeper import start_zookeeper

    args = parse_args(argv)
    plan = Plan(args.records, args.min_transactions, args.max_transactions)
    overrides = settings(args.internal_partitions)
    print(f"txn_bench: confluent-kafka {confluent_kafka.version()[0]} (librdkafka "
          f"{confluent_kafka.libversion()[0]}); 3 brokers each, rf 3, min.insync.replicas 2, "
          f"acks=all, {plan.value_size}-byte values, {args.partitions} partitions; "
          f"{plan.records:,} idempotent records; transactions per row: "
          + ", ".join(f"{plan.transactions(s)} x {s:,}" for s in TXN_SIZES), flush=True)
    workdir = tempfile.mkdtemp(prefix="kafkalite-txn-bench-")
    zookeeper = None if args.zookeeper else start_zookeeper(os.path.join(workdir, "zk"))
    zk_connect = args.zookeeper or zookeeper.connect_string
    results: dict[str, dict[tuple[str, str], list[Sample]]] = {}
    try:
        for system in args.systems:
            started = time.monotonic()
            cluster = start_cluster(system, zk_connect, workdir, overrides)
            print(f"  {system}: 3 brokers up in {time.monotonic() - started:.0f} s", flush=True)
            try:
                results[system] = run_system(system, cluster.bootstrap_servers, plan,
                                             args.repetitions, args.partitions)
            except BaseException:
                print(cluster.describe_logs(), file=sys.stderr)
                raise
            finally:
                cluster.stop()
    finally:
        if zookeeper is not None:
            zookeeper.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    lines = summary(results)
    print()
    print(table(lines, args.repetitions))
    if args.json:
        with open(args.json, "w") as fh:
            for line in lines:
                fh.write(json.dumps(line, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
