"""Spark batch read through the "kafkalite" data source vs plain consumers, in one run.

    python bench/spark_bench.py [--records 1000000] [--record-size 100] [--partitions 6]
                                [--brokers 3] [--bootstrap-server HOST:PORT]
                                [--min-partitions N] [--master local[2]] [--spark-runs 3]

Without ``--bootstrap-server`` it starts ZooKeeper and ``--brokers`` brokers on this machine (and
stops them at the end). It loads the records with ``kafkalite perf produce`` (acks=1), then reads
all of them

1. with ``kafkalite perf consume`` (the plain consumer tool; its nMsg.sec),
2. with a plain ``Consumer`` in this process (assign every partition, poll to the end),
3. with ``spark.read.format("kafkalite")`` on ``--master`` (count plus the sum of value lengths,
   so every record crosses from the Python workers to the JVM): the first read (a cold
   SparkSession: Python workers start and import) and then ``--spark-runs`` warm reads,

and prints records/s for each. Numbers, not assertions: the tests never time anything.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _cli(*args: str, timeout: float = 1800) -> str:
    out = subprocess.run([sys.executable, "-m", "kafkalite", *args], capture_output=True,
                         text=True, timeout=timeout, check=False)
    if out.returncode != 0:
        raise SystemExit(f"kafkalite {' '.join(args)} failed:\n{out.stdout}\n{out.stderr}")
    return out.stdout


def load(bootstrap: str, topic: str, records: int, record_size: int) -> str:
    output = _cli("perf", "produce", "--topic", topic, "--num-records", str(records),
                  "--record-size", str(record_size), "--throughput", "-1", "--acks", "1",
                  "--bootstrap-server", bootstrap)
    return output.strip().splitlines()[-1]


def perf_consume(bootstrap: str, topic: str, records: int) -> tuple[float, str]:
    output = _cli("perf", "consume", "--topic", topic, "--messages", str(records),
                  "--bootstrap-server", bootstrap, "--timeout", "60000")
    lines = output.strip().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("start.time"))
    names = [n.strip() for n in lines[header].split(",")]
    values = [v.strip() for v in lines[header + 1].split(",")]
    result = dict(zip(names, values))
    return float(result["nMsg.sec"]), lines[header + 1]


def plain_consumer(bootstrap: str, topic: str) -> tuple[int, float]:
    from kafkalite.client import Consumer, TopicPartition

    with Consumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                  auto_offset_reset="earliest", max_poll_records=20_000,
                  allow_auto_create_topics=False) as consumer:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        ends = consumer.end_offsets(tps)
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        total = sum(ends.values())
        n = 0
        started = time.perf_counter()
        while n < total:
            for records in consumer.poll(1000).values():
                n += len(records)
        return n, time.perf_counter() - started


def spark_read(spark, bootstrap: str, topic: str, min_partitions: int | None):
    from pyspark.sql import functions as F

    reader = (spark.read.format("kafkalite").option("kafkalite.bootstrap.servers", bootstrap)
              .option("subscribe", topic))
    if min_partitions:
        reader = reader.option("minPartitions", str(min_partitions))
    started = time.perf_counter()
    row = reader.load().agg(F.count("*").alias("n"),
                            F.sum(F.length("value")).alias("bytes")).collect()[0]
    return row.n, time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--bootstrap-server", default=None)
    parser.add_argument("--min-partitions", type=int, default=None)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--spark-runs", type=int, default=3)
    args = parser.parse_args(argv)

    from kafkalite.client import AdminClient, NewTopic
    from spark_integration.session import spark_session, spark_unavailable_reason

    reason = spark_unavailable_reason()
    if reason:
        print(f"cannot run the Spark benchmark: {reason}", file=sys.stderr)
        return 2
    zk = cluster = None
    bootstrap = args.bootstrap_server
    try:
        if bootstrap is None:
            from kafkalite.local.cluster import LocalCluster
            from kafkalite.local.zookeeper import start_zookeeper, unique_chroot

            workdir = tempfile.mkdtemp(prefix="kafkalite-spark-bench-")
            zk = start_zookeeper(os.path.join(workdir, "zookeeper"))
            cluster = LocalCluster(f"{zk.connect_string}{unique_chroot('spark-bench')}",
                                   args.brokers, workdir=os.path.join(workdir, "brokers"))
            cluster.start()
            bootstrap = cluster.bootstrap_servers
        topic = f"spark-bench-{int(time.time())}"
        with AdminClient(bootstrap_servers=bootstrap) as admin:
            brokers = len(admin.describe_cluster().brokers)
            admin.create_topics([NewTopic(topic, args.partitions, min(3, brokers))])
        print(f"topic {topic}: {args.partitions} partitions, replication factor "
              f"{min(3, brokers)}, {brokers} broker(s) at {bootstrap}")
        print(f"loading {args.records:,} records of {args.record_size} bytes "
              f"(kafkalite perf produce, acks=1) ...", flush=True)
        print("  " + load(bootstrap, topic, args.records, args.record_size))

        perf_rate, perf_line = perf_consume(bootstrap, topic, args.records)
        print(f"kafkalite perf consume: {perf_line}")
        n, elapsed = plain_consumer(bootstrap, topic)
        consumer_rate = n / elapsed

        spark = spark_session("kafkalite-spark-bench", args.master, driver_memory="2g",
                              log_level="ERROR")
        try:
            runs = []
            for i in range(1 + args.spark_runs):
                count, seconds = spark_read(spark, bootstrap, topic, args.min_partitions)
                if count != n:
                    raise SystemExit(f"Spark read {count} records, expected {n}")
                runs.append(seconds)
                print(f"  spark read {i + 1}: {count:,} records in {seconds:.2f} s", flush=True)
        finally:
            spark.stop()
        warm = min(runs[1:]) if len(runs) > 1 else runs[0]
        splits = f", minPartitions={args.min_partitions}" if args.min_partitions else ""
        print()
        print(f"{'reader':58} {'records/s':>12}")
        print(f"{'kafkalite perf consume (plain consumer tool)':58} {perf_rate:>12,.0f}")
        print(f"{'plain Consumer, one thread':58} {consumer_rate:>12,.0f}")
        print(f"{f'Spark batch read, {args.master}{splits}, first (cold) read':58} "
              f"{n / runs[0]:>12,.0f}")
        print(f"{f'Spark batch read, {args.master}{splits}, best warm read':58} "
              f"{n / warm:>12,.0f}")
        return 0
    finally:
        if cluster is not None:
            cluster.stop()
        if zk is not None:
            zk.stop()


if __name__ == "__main__":
    sys.exit(main())
