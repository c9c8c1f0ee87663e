"""confluent-kafka throughput over SASL_SSL (SCRAM-SHA-512, TLS) beside PLAINTEXT, against the
same kafkalite broker with its ACL authorizer on.

    python bench/security_bench.py [--records 300000] [--value-size 100] [--rounds 2]
                                   [--brokers 1]

It starts its own ZooKeeper and cluster (``kafkalite.testing.secure_cluster``: each broker has a
PLAINTEXT and a SASL_SSL listener; the PLAINTEXT client is the anonymous super user, the SASL_SSL
one ``admin``, a super user too, so both pay the same authorizer lookups). Each round produces
the records (acks=1, linger 5 ms, a plain ``produce()`` loop, then ``flush()``) and consumes them
back (``consume(10000)`` until all are read), over each protocol in turn, into a topic of its own.
Prints records/s and MB/s per protocol and the SASL_SSL/PLAINTEXT ratio (the best round of
each), plus the time to open an authenticated connection (TLS + SCRAM) against a plain one.

On a shared machine wall-clock rates swing with the neighbours' load, so each phase also reports
the brokers' own CPU time per record (user + system, from /proc): the ratio of those is the cost
of TLS and SASL to the broker, and it barely moves with load.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def produce(settings: dict, topic: str, n: int, value: bytes) -> float:
    from confluent_kafka import Producer

    producer = Producer({**settings, "acks": "1", "linger.ms": 5,
                         "queue.buffering.max.messages": 1_000_000,
                         "delivery.report.only.error": True})
    failed = []
    start = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                producer.produce(topic, value, on_delivery=lambda e, m: failed.append(e))
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(300)
    elapsed = time.perf_counter() - start
    if failed:
        raise SystemExit(f"{len(failed)} records failed: {failed[0]}")
    return elapsed


def consume(settings: dict, topic: str, n: int) -> float:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**settings, "group.id": "bench", "enable.auto.commit": False,
                         "fetch.queue.backoff.ms": 5})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = 0
    start = time.perf_counter()
    while got < n:
        got += sum(1 for m in consumer.consume(10000, timeout=1) if not m.error())
        if time.perf_counter() - start > 300:
            raise SystemExit(f"consumed {got} of {n} records in 300 s")
    elapsed = time.perf_counter() - start
    consumer.close()
    return elapsed


def broker_cpu_s(pids) -> float:
    """User + system CPU seconds the broker processes have used (Linux /proc)."""
    total = 0.0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def connect_time(settings: dict, rounds: int = 10) -> float:
    """Seconds to bootstrap a client (connect, TLS, SASL, Metadata), the median of ``rounds``."""
    from confluent_kafka.admin import AdminClient

    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        AdminClient(settings).list_topics(timeout=30)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--brokers", type=int, default=1)
    args = parser.parse_args()

    from confluent_kafka.admin import AdminClient, NewTopic

    from kafkalite.testing.secure_cluster import secure_cluster
    from kafkalite.local.zookeeper import start_zookeeper

    workdir = tempfile.mkdtemp(prefix="kafkalite-security-bench-")
    zookeeper = start_zookeeper(os.path.join(workdir, "zk"))
    value = b"x" * args.value_size
    mb = args.records * args.value_size / 1e6
    try:
        with secure_cluster(zookeeper, workdir, num_brokers=args.brokers,
                            name="bench") as secure:
            plaintext = {"bootstrap.servers": secure.cluster.bootstrap_servers}
            protocols = {"PLAINTEXT": plaintext, "SASL_SSL": secure.librdkafka("admin")}
            admin = AdminClient(secure.librdkafka("admin"))
            best: dict[str, dict[str, float]] = {p: {} for p in protocols}
            cpu: dict[str, dict[str, float]] = {p: {} for p in protocols}    # µs per record
            pids = [b.pid for b in secure.cluster.brokers.values()]
            for round_ in range(args.rounds):
                for name, settings in protocols.items():
                    topic = f"bench-{name.lower()}-{round_}"
                    admin.create_topics([NewTopic(topic, 1, args.brokers)])[topic].result(60)
                    for what, run in (("produce", lambda: produce(settings, topic, args.records,
                                                                  value)),
                                      ("consume", lambda: consume(settings, topic,
                                                                  args.records))):
                        before = broker_cpu_s(pids)
                        elapsed = run()
                        per_record = (broker_cpu_s(pids) - before) / args.records * 1e6
                        rate = args.records / elapsed
                        best[name][what] = max(best[name].get(what, 0.0), rate)
                        cpu[name][what] = min(cpu[name].get(what, float("inf")), per_record)
                        print(f"round {round_ + 1} {name:9s} {what}: {rate:10,.0f} records/s "
                              f"{mb / elapsed:7.1f} MB/s, broker CPU {per_record:5.1f} "
                              f"µs/record")
            print()
            for what in ("produce", "consume"):
                ratio = best["SASL_SSL"][what] / best["PLAINTEXT"][what]
                print(f"{what}: SASL_SSL {best['SASL_SSL'][what]:,.0f} records/s, PLAINTEXT "
                      f"{best['PLAINTEXT'][what]:,.0f} records/s -> SASL_SSL/PLAINTEXT = "
                      f"{ratio:.2f}; broker CPU {cpu['SASL_SSL'][what]:.1f} vs "
                      f"{cpu['PLAINTEXT'][what]:.1f} µs/record -> "
                      f"{cpu['SASL_SSL'][what] / cpu['PLAINTEXT'][what]:.2f}x")
            plain_s, secure_s = connect_time(plaintext), connect_time(protocols["SASL_SSL"])
            print(f"bootstrap (connect + Metadata): PLAINTEXT {plain_s * 1000:.1f} ms, SASL_SSL "
                  f"with SCRAM-SHA-512 {secure_s * 1000:.1f} ms")
    finally:
        zookeeper.stop()


if __name__ == "__main__":
    main()
