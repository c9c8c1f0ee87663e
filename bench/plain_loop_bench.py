"""kafkalite's own clients as a user writes them: a plain ``for`` loop of ``send()``, then a plain
``poll()`` loop, against a real broker, with the garbage collector on.

    python bench/plain_loop_bench.py [--records 1000000] [--value-size 100]
                                     [--bootstrap-server HOST:PORT] [--linger-ms MS]

Without ``--bootstrap-server`` it starts its own ZooKeeper and one broker. No tricks in the loop:
no ``map()``, no gc switch, default client settings apart from ``acks=1`` (and ``linger_ms``
when ``--linger-ms`` is given, to compare with the default).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_cluster import bootstrap_servers  # noqa: E402

from kafkalite import AdminClient, Consumer, NewTopic, Producer, TopicPartition  # noqa: E402


def produce_loop(bootstrap: str, topic: str, n: int, value: bytes, acks=1, **settings) -> float:
    producer = Producer(bootstrap_servers=bootstrap, acks=acks, **settings)
    start = time.perf_counter()
    for _ in range(n):
        producer.send(topic, value)
    producer.flush()
    elapsed = time.perf_counter() - start
    producer.close()
    return elapsed


def poll_loop(bootstrap: str, topic: str, n: int) -> float:
    consumer = Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    consumer.assign([TopicPartition(topic, 0)])
    got = 0
    start = time.perf_counter()
    while got < n:
        for records in consumer.poll(timeout_ms=1000).values():
            got += len(records)
    elapsed = time.perf_counter() - start
    consumer.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--bootstrap-server")
    parser.add_argument("--linger-ms", type=float, help="the producer's linger_ms (default: "
                        "the Producer's default)")
    args = parser.parse_args()
    with bootstrap_servers(args.bootstrap_server) as bootstrap:
        topic = "plain-" + uuid.uuid4().hex[:8]
        with AdminClient(bootstrap_servers=bootstrap) as admin:
            admin.create_topics([NewTopic(topic, 1, 1)], timeout_ms=30000)
        value = os.urandom(args.value_size // 2).hex().encode()[:args.value_size]
        n = args.records
        settings = {} if args.linger_ms is None else {"linger_ms": args.linger_ms}
        seconds = produce_loop(bootstrap, topic, n, value, **settings)
        linger = "" if args.linger_ms is None else f" linger_ms={args.linger_ms:g}"
        print(f"for-loop send() acks=1{linger}   {n / seconds:>12,.0f} rec/s  ({seconds:.2f} s)")
        seconds = poll_loop(bootstrap, topic, n)
        print(f"poll() loop              {n / seconds:>12,.0f} rec/s  ({seconds:.2f} s)")


if __name__ == "__main__":
    main()
