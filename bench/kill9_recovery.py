"""How much a broker re-verifies when it restarts after kill -9: bytes and segments past the
checkpointed recovery points, at N offsets per partition.

    python bench/kill9_recovery.py [--offsets 300000] [--partitions 3] [--segment-bytes 1048576]
                                   [--live-s 65] [--kills 3]

One broker (kafkalite.local.cluster.LocalCluster, a real ZooKeeper), a topic of ``--partitions``
partitions filled with ``--offsets`` records each as fast as the producer goes, then kill -9 at
once (before any checkpoint). Then ``--kills`` times: restart, keep a light producer going for
``--live-s`` seconds (past the first recovery-point checkpoint: 30 s after the start in Kafka, 60 s
before issue 24), kill -9.

After each kill the script reads what the next start will re-verify from the files alone, by the
loader's rule (Kafka's ``logSegments(recoveryPoint, Long.MaxValue)``): every segment from the one
holding the partition's checkpointed recovery point on. Counting from the files works for any
version of the broker; a broker that logs the count (``recovered N log(s) ... re-verified``) is
checked against it. Wall-clock times are printed for information only.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import time
from bisect import bisect_right

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kafkalite.local.cluster import LocalCluster, wait_until  # noqa: E402
from kafkalite.local.zookeeper import start_zookeeper  # noqa: E402
from kafkalite.log.checkpoint import RECOVERY_POINT_CHECKPOINT, read_checkpoint  # noqa: E402

TOPIC = "kill9"
LOGGED = re.compile(r"recovered (\d+) log\(s\) in \S+: re-verified (\d+) segment\(s\), (\d+) bytes")


def to_reverify(log_dir: str, topic: str | None = None) -> tuple[int, int, int]:
    """(segments, bytes, total bytes) the next unclean start re-verifies, from the files: of
    ``topic``'s partitions, or of every partition in ``log_dir`` (None)."""
    points = read_checkpoint(os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT))
    segments = size = total = 0
    for name in os.listdir(log_dir):
        path = os.path.join(log_dir, name)
        head, _, tail = name.rpartition("-")
        if (topic is not None and head != topic) or not head or not tail.isdigit() \
                or not os.path.isdir(path):
            continue
        topic_of = head
        partition = int(tail)
        bases = sorted(int(f[:20]) for f in os.listdir(path) if f.endswith(".log"))
        first = max(0, bisect_right(bases, points.get((topic_of, partition), 0)) - 1)
        for i, base in enumerate(bases):
            bytes_ = os.path.getsize(os.path.join(path, f"{base:020d}.log"))
            total += bytes_
            if i >= first:
                segments += 1
                size += bytes_
    return segments, size, total


def produce(bootstrap: str, partitions: int, per_partition: int) -> None:
    from kafkalite.client import Producer

    value = b"v" * 20
    with Producer(bootstrap, acks=1, linger_ms=20, batch_size=256 * 1024) as producer:
        for i in range(per_partition):
            key = b"key-%d" % (i % 20)
            for p in range(partitions):
                producer.send(TOPIC, value=value, key=key, partition=p)
        producer.flush(timeout=600)


def light_producer_for(bootstrap: str, partitions: int, seconds: float) -> None:
    from kafkalite.client import Producer

    end = time.monotonic() + seconds
    with Producer(bootstrap, acks=1, linger_ms=5) as producer:
        i = 0
        while time.monotonic() < end:
            producer.send(TOPIC, value=b"light-%d" % i, partition=i % partitions)
            i += 1
            time.sleep(0.02)
        producer.flush(timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--offsets", type=int, default=300_000)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--segment-bytes", type=int, default=1024 * 1024)
    parser.add_argument("--live-s", type=float, default=65.0)
    parser.add_argument("--kills", type=int, default=3)
    args = parser.parse_args()
    for noisy in ("kafkalite", "kazoo"):    # clients log every dropped connection
        logging.getLogger(noisy).setLevel(logging.CRITICAL)

    from kafkalite.client import AdminClient, NewTopic

    zk = start_zookeeper()
    cluster = LocalCluster(zk.connect_string, 1,
                           overrides={"log.segment.bytes": args.segment_bytes})
    try:
        cluster.start()
        broker = cluster.brokers[1]
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient(bootstrap)
        admin.create_topics([NewTopic(TOPIC, args.partitions, 1)])
        admin.close()
        cluster.wait_for_leader(TOPIC, args.partitions - 1)
        started = time.monotonic()
        produce(bootstrap, args.partitions, args.offsets)
        print(f"filled {args.partitions} x {args.offsets} offsets in "
              f"{time.monotonic() - started:.1f} s (segment.bytes {args.segment_bytes})")
        for round_ in range(args.kills + 1):
            if round_:
                light_producer_for(bootstrap, args.partitions, args.live_s)
            cluster.kill(1)
            segments, size, total = to_reverify(broker.log_dir, TOPIC)
            logged_before = len(LOGGED.findall(broker.log_tail(10**6)))
            began = time.monotonic()
            cluster.restart(1)
            cluster.wait_for_leader(TOPIC, args.partitions - 1, timeout_s=120)
            up_s = time.monotonic() - began
            logged = LOGGED.findall(broker.log_tail(10**6))[logged_before:]
            said = (f"; the broker logged {logged[-1][1]} segment(s), {logged[-1][2]} bytes"
                    if logged else "; the broker does not log it")
            print(f"kill -9 #{round_ + 1}{'' if round_ else ' (before any checkpoint)'}: "
                  f"re-verifies {segments} segment(s), {size} of {total} bytes "
                  f"({100 * size / max(total, 1):.0f}%){said}; up again in {up_s:.1f} s")
    finally:
        cluster.stop()
        cluster.cleanup()
        zk.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
