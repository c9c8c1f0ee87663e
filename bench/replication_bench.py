"""Replication benchmarks on a local 3-broker cluster (real ZooKeeper, real broker processes).

1. Produce throughput with replication factor 3: acks=1 against acks=all.
2. Failover time: kill -9 the leader of a partition, then measure until a produce with acks=all
   succeeds again (the producer retries, refreshing metadata, as a user's would).

Prints numbers; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time

from kafkalite import AdminClient, NewTopic, Producer
from kafkalite.local.cluster import LocalCluster, wait_until
from kafkalite.local.zookeeper import ZooKeeperServer


def throughput(bootstrap: str, topic: str, acks, records: int, size: int) -> float:
    value = b"x" * size
    producer = Producer(bootstrap_servers=bootstrap, acks=acks, linger_ms=5,
                        batch_size=256 * 1024)
    started = time.perf_counter()
    for _ in range(records):
        producer.send(topic, value=value)
    producer.flush()
    elapsed = time.perf_counter() - started
    producer.close()
    return records / elapsed


def failover_once(cluster: LocalCluster, topic: str) -> float:
    # a clean election needs a live in-sync replica: start from a full ISR
    wait_until(lambda: len(cluster.partition_metadata(topic, 0).isr) == 3, 60, "full ISR")
    victim = cluster.wait_for_leader(topic, 0)
    producer = Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=0,
                        retries=1_000_000, retry_backoff_ms=50, request_timeout_ms=3000)
    producer.send(topic, value=b"warm", partition=0).get(timeout=30)
    cluster.kill(victim)
    killed = time.perf_counter()
    producer.send(topic, value=b"after", partition=0).get(timeout=120)
    elapsed = time.perf_counter() - killed
    producer.close()
    cluster.restart(victim)
    wait_until(lambda: len(cluster.partition_metadata(topic, 0).isr) == 3, 60, "full ISR")
    return elapsed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--failovers", type=int, default=3)
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kafkalite-bench-") as workdir:
        zk = ZooKeeperServer().start()
        cluster = LocalCluster(f"{zk.connect_string}/bench", 3, workdir=workdir, overrides={
            "zookeeper.session.timeout.ms": args.session_timeout_ms,
            "replica.lag.time.max.ms": 10000})
        try:
            cluster.start()
            with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
                admin.create_topics([NewTopic("rf3-acks1", 1, 3), NewTopic("rf3-all", 1, 3,
                                     topic_configs={"min.insync.replicas": "2"}),
                                     NewTopic("failover", 1, 3)], timeout_ms=30000)
            print(f"3 brokers, replication factor 3, {args.records:,} records of "
                  f"{args.record_size} bytes, one partition")
            one = throughput(cluster.bootstrap_servers, "rf3-acks1", 1, args.records,
                             args.record_size)
            every = throughput(cluster.bootstrap_servers, "rf3-all", "all", args.records,
                               args.record_size)
            print(f"  acks=1   : {one:12,.0f} records/s")
            print(f"  acks=all : {every:12,.0f} records/s  ({every / one:.0%} of acks=1)")
            times = [failover_once(cluster, "failover") for _ in range(args.failovers)]
            print(f"failover (kill -9 of the leader until an acks=all produce succeeds), "
                  f"zookeeper.session.timeout.ms={args.session_timeout_ms}:")
            print("  " + ", ".join(f"{t:.2f} s" for t in times)
                  + f"; median {statistics.median(times):.2f} s")
        finally:
            cluster.stop()
            zk.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
