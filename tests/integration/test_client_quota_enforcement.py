"""Client quotas are enforced (issue 23, item 1), judged by confluent-kafka on the shared 3-broker
clusters of both systems, kafkalite and Apache Kafka 2.8.2, with the same expectations.

Kafka's own kafka-configs sets the quotas (through the brokers) on client ids of this test only;
then, at once for 20 s (one client run, to keep the suite short):

* a producer with ``producer_byte_rate=1048576`` writes as fast as it can;
* a consumer with ``consumer_byte_rate=1048576`` reads a topic filled beforehand;
* a third client, with ``request_percentage=0.01``, sends one small Produce after another;

then Kafka's Java producer (kafka-producer-perf-test) with the first client id must report
throttling in its own ``produce-throttle-time-max`` metric.

The consumer must be held at 0.9-1.1 MB/s over the 20 s (the issue's target: the one rate this
suite asserts; the measured rates are printed), the producer at 0.9-1.25 MB/s (see below), and
all three must see throttling in librdkafka's statistics (``brokers[].throttle``: the
``throttle_time_ms`` of the answers). Each topic has one partition and one replica, so one broker
enforces its quota (quotas are per broker, as in Kafka).

How Kafka's quotas hold a greedy client (kafkalite computes the same): the rate is measured over
11 one-second windows, and over at least 10 s, so a client first gets 10 s worth at once, then
next to nothing until its oldest window expires, then 10 s worth again: about 1 MB/s over each
11-12 s cycle, and over the first 20 s (two cycles' bursts). A span starting later can see one
burst only (0.5-0.9 MB/s on both systems). A burst's allowance grows with its own length (the
rate divides by 10 s plus the time elapsed), and a throttled Produce is still written (a throttled
Fetch is not): so Apache Kafka 2.8.2 itself held this producer at 1.08-1.15 times its quota over
the 20 s (kafkalite: 1.15), the consumer at 0.94 (kafkalite: 1.04). The producer's upper bound is
therefore Kafka's, not the issue's 1.1. It sends one request at a time in 128 KB batches: with
librdkafka's 5 in flight of 1 MB, the requests already sent when the first throttle comes add to
each burst (1.28 times the quota on Kafka, 1.34 on kafkalite).
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.testing.apache_kafka import run_tool
from kafkalite.testing.oracle_fixtures import SYSTEMS

pytestmark = [pytest.mark.integration]

RATE = 1048576                  # bytes per second, both byte-rate quotas
SECONDS = 20.0                  # the measured run (issue 23)
VALUE = os.urandom(10000)       # incompressible, large next to a record's overhead
FILL_BYTES = 28 * RATE          # what the consumer may read: more than 20 s at its quota


def _configs(bootstrap: str, client_id: str, config: str) -> None:
    proc = run_tool("kafka-configs", "--bootstrap-server", bootstrap, "--alter", "--add-config",
                    config, "--entity-type", "clients", "--entity-name", client_id)
    assert proc.returncode == 0, f"kafka-configs failed:\n{proc.stdout}\n{proc.stderr}"


class _Throttles:
    """The largest ``throttle`` a client's statistics reported, per broker."""

    def __init__(self):
        self.max_ms = 0

    def __call__(self, stats_json: str) -> None:
        stats = json.loads(stats_json)
        for broker in stats.get("brokers", {}).values():
            self.max_ms = max(self.max_ms, broker.get("throttle", {}).get("max", 0))


def _fill(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "quota-filler",
                         "linger.ms": 20, "acks": 1})
    for _ in range(FILL_BYTES // len(VALUE) + 1):
        while True:
            try:
                producer.produce(topic, VALUE)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(60) == 0


def _produce(bootstrap: str, topic: str, client_id: str, throttles: _Throttles, out: dict):
    delivered = [0]
    deadline = [float("inf")]

    def on_delivery(err, msg):
        if err is None and time.monotonic() < deadline[0]:
            delivered[0] += len(msg.value())

    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "acks": 1,
                         "linger.ms": 5, "queue.buffering.max.kbytes": 4096,
                         "batch.size": 131072, "max.in.flight.requests.per.connection": 1,
                         "statistics.interval.ms": 500, "stats_cb": throttles})
    deadline[0] = time.monotonic() + SECONDS
    while time.monotonic() < deadline[0]:
        try:
            producer.produce(topic, VALUE, on_delivery=on_delivery)
        except BufferError:
            producer.poll(0.02)
        producer.poll(0)
    producer.flush(30)
    producer.poll(1)                 # a last statistics report
    out["produce"] = delivered[0] / SECONDS


def _consume(bootstrap: str, topic: str, client_id: str, throttles: _Throttles, out: dict):
    consumer = Consumer({"bootstrap.servers": bootstrap, "client.id": client_id,
                         "group.id": f"g-{client_id}", "enable.auto.commit": False,
                         "statistics.interval.ms": 500, "stats_cb": throttles})
    consumer.assign([TopicPartition(topic, 0, 0)])
    read = 0
    try:
        start = time.monotonic()
        while time.monotonic() < start + SECONDS:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                read += len(msg.value())
        consumer.poll(1)
    finally:
        consumer.close()
    out["fetch"] = read / SECONDS


def _small_requests(bootstrap: str, topic: str, client_id: str, throttles: _Throttles):
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "acks": 1,
                         "linger.ms": 0, "statistics.interval.ms": 500, "stats_cb": throttles})
    deadline = time.monotonic() + SECONDS
    while time.monotonic() < deadline and throttles.max_ms == 0:
        producer.produce(topic, b"x")
        producer.flush(5)            # one Produce request after another
    producer.flush(10)
    producer.poll(1)


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_byte_rate_and_request_quotas_hold_a_client_back(system):
    bootstrap = system.bootstrap_servers
    tag = uuid.uuid4().hex[:8]
    produced, filled, small = f"qp-{tag}", f"qf-{tag}", f"qr-{tag}"
    # one client id for both byte rates (the producer and the consumer each use one of them),
    # another for the request quota; both tools at once
    client_id, busy_id = f"qbytes-{tag}", f"qreq-{tag}"
    with ThreadPoolExecutor(2) as pool:
        for done in [pool.submit(_configs, bootstrap, client_id,
                                 f"producer_byte_rate={RATE},consumer_byte_rate={RATE}"),
                     pool.submit(_configs, bootstrap, busy_id, "request_percentage=0.01")]:
            done.result(120)                 # a failed kafka-configs fails the test here
    producer_id = consumer_id = client_id
    # the brokers apply the quotas on ZooKeeper's change notification while the topics are made
    # and filled (by another client id): a quota applied late would let a burst through
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in (produced, filled, small)]
                                      ).values():
        future.result(60)
    _fill(bootstrap, filled)

    throttles = {name: _Throttles() for name in ("produce", "fetch", "request")}
    rates: dict = {}
    threads = [
        threading.Thread(target=_produce, args=(bootstrap, produced, producer_id,
                                                throttles["produce"], rates)),
        threading.Thread(target=_consume, args=(bootstrap, filled, consumer_id,
                                                throttles["fetch"], rates)),
        threading.Thread(target=_small_requests, args=(bootstrap, small, busy_id,
                                                       throttles["request"])),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    seen = {name: t.max_ms for name, t in throttles.items()}
    print(f"{system.__class__.__name__}: produce {rates.get('produce', 0) / 1e6:.3f} MB/s, "
          f"fetch {rates.get('fetch', 0) / 1e6:.3f} MB/s (quota {RATE / 1e6:.3f} MB/s each); "
          f"largest throttle_time_ms seen: {seen}")
    assert 0.9 * RATE <= rates["produce"] <= 1.25 * RATE, (rates, seen)
    assert 0.9 * RATE <= rates["fetch"] <= 1.1 * RATE, (rates, seen)
    assert all(ms > 0 for ms in seen.values()), seen

    # Kafka's Java client is held back too (same client id, so the same rate): 13 MB, more than
    # the 10 s a quota's rate first allows, are throttled (its own metric says so)
    perf = run_tool("kafka-producer-perf-test", "--topic", produced, "--num-records", "1300",
                    "--record-size", "10000", "--throughput", "-1", "--print-metrics",
                    "--producer-props", f"bootstrap.servers={bootstrap}",
                    f"client.id={producer_id}", "acks=1")
    assert perf.returncode == 0, perf.stderr
    throttle_max = _java_metric(perf.stdout, "producer-metrics:produce-throttle-time-max")
    print(f"Java producer: produce-throttle-time-max {throttle_max} ms")
    assert throttle_max > 0, perf.stdout[-2000:]


def _java_metric(output: str, name: str) -> float:
    """A metric's value from ProducerPerformance's --print-metrics table."""
    for line in output.splitlines():
        if line.startswith(name + ":{"):                # name:{tags}   : value
            return float(line.rsplit(":", 1)[1].strip())
    raise AssertionError(f"no metric {name} in the tool's output:\n{output[-2000:]}")
