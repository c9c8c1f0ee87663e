"""An idempotent acks=all confluent-kafka (librdkafka) producer across broker restarts: a rolling
restart of all three brokers under load, and a restart of the whole cluster.

Judged by the client: every delivery report succeeds, and a confluent-kafka consumer reading
every partition from offset 0 finds each delivered record exactly once, at the partition and
offset its delivery report gave, in the order it was produced. One 3-broker cluster (rf 3,
min.insync.replicas 2) serves the module; each test has its own topic.
"""

from __future__ import annotations

import os
import sys
import threading
import uuid
from collections import Counter

import pytest
from confluent_kafka import Producer

from kafkalite.local.cluster import wait_until

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "integration"))

from kafka_clients_tools import confluent_read, create_topic, module_cluster  # noqa: E402
from kafka_clients_tools import wait_topic_ready  # noqa: E402

pytestmark = [pytest.mark.system]

PARTITIONS = 3
#: the broker's log line once the controller moved its leaderships away
CONTROLLED_SHUTDOWN_DONE = "controlled shutdown: leadership moved away"


@pytest.fixture(scope="module")
def cluster(request, zookeeper, tmp_path_factory):
    yield from module_cluster(request, zookeeper, tmp_path_factory, "confluent-restarts")


class Deliveries:
    """The delivery reports of one producer: value -> (partition, offset), and the errors."""

    def __init__(self):
        self.lock = threading.Lock()
        self.delivered: dict[bytes, tuple[int, int]] = {}
        self.errors: list[tuple[bytes, str]] = []

    def callback(self, err, msg) -> None:
        with self.lock:
            if err is not None:
                self.errors.append((msg.value(), str(err)))
            else:
                self.delivered[msg.value()] = (msg.partition(), msg.offset())

    def count(self) -> int:
        with self.lock:
            return len(self.delivered)


def _producer(cluster) -> Producer:
    # librdkafka's defaults otherwise: retries without end within message.timeout.ms (5 min),
    # 5 requests in flight per broker, order kept by the idempotent producer
    return Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                     "enable.idempotence": True, "linger.ms": 5, "log_level": 3})


def _controlled_shutdowns(cluster, broker_id: int) -> int:
    """How many controlled shutdowns the broker's log (kept across restarts) reports."""
    with open(cluster.brokers[broker_id].log_path, errors="replace") as f:
        return f.read().count(CONTROLLED_SHUTDOWN_DONE)


def _check_read_back(cluster, topic: str, deliveries: Deliveries, produced: list[bytes]) -> None:
    """Each delivered record once, where its report put it, in production order per partition;
    nothing read that was not delivered."""
    assert deliveries.errors == [], deliveries.errors[:10]
    assert set(deliveries.delivered) == set(produced)
    messages = confluent_read(cluster.bootstrap_servers, topic, PARTITIONS,
                              len(deliveries.delivered), timeout_s=120)
    read = [(m.value(), (m.partition(), m.offset())) for m in messages]
    counts = Counter(value for value, _ in read)
    duplicates = {value: n for value, n in counts.items() if n > 1}
    lost = set(deliveries.delivered) - set(counts)
    assert (len(lost), len(duplicates)) == (0, 0), \
        f"lost {sorted(lost)[:10]}, duplicated {list(duplicates.items())[:10]}"
    assert dict(read) == deliveries.delivered
    rank = {value: index for index, value in enumerate(produced)}
    for partition in range(PARTITIONS):
        in_log = [value for value, (p, _) in sorted(read, key=lambda r: r[1]) if p == partition]
        assert in_log == sorted(in_log, key=rank.__getitem__), f"partition {partition} reordered"


def test_rolling_restart_under_idempotent_load_loses_and_duplicates_nothing(cluster):
    """Each broker in turn (the controller last): SIGTERM (a controlled shutdown its log reports,
    exit 0), start again, wait until every replica of the topic is back in the ISR and until the
    producer got more records through; the producer sends all along."""
    topic = f"rolling-{uuid.uuid4().hex[:8]}"
    create_topic(cluster, topic, PARTITIONS)
    producer = _producer(cluster)
    deliveries = Deliveries()
    produced: list[bytes] = []
    stop = threading.Event()

    def load():
        seq = 0
        while not stop.is_set():
            value = f"r{seq:06d}".encode()
            producer.produce(topic, key=f"k{seq % 30}".encode(), value=value,
                             on_delivery=deliveries.callback)
            produced.append(value)
            seq += 1
            producer.poll(0.01)         # about 100 records a second at most

    loader = threading.Thread(target=load, name="rolling-load", daemon=True)
    loader.start()
    try:
        wait_until(lambda: deliveries.count() >= 100, 60, "the load to start")
        controller = cluster.controller_id()
        for broker_id in sorted(cluster.brokers, key=lambda b: (b == controller, b)):
            before = deliveries.count()
            moved = _controlled_shutdowns(cluster, broker_id)
            assert cluster.terminate(broker_id) == 0, cluster.brokers[broker_id].log_tail()
            assert _controlled_shutdowns(cluster, broker_id) == moved + 1, \
                f"broker {broker_id} stopped without a controlled shutdown"
            cluster.restart(broker_id)
            wait_topic_ready(cluster, topic, PARTITIONS, timeout_s=120)
            wait_until(lambda: deliveries.count() >= before + 100, 120,
                       f"records delivered after broker {broker_id} restarted")
            assert not deliveries.errors, deliveries.errors[:10]
    finally:
        stop.set()
        loader.join(30)
    assert producer.flush(120) == 0
    _check_read_back(cluster, topic, deliveries, produced)


def test_idempotent_producer_across_a_full_cluster_restart(cluster):
    """One producer: records before the cluster stops, records sent while every broker is down
    (queued by the client), and records after it is back; all are accepted, none twice."""
    topic = f"full-restart-{uuid.uuid4().hex[:8]}"
    create_topic(cluster, topic, PARTITIONS)
    producer = _producer(cluster)
    deliveries = Deliveries()
    produced: list[bytes] = []

    def send(prefix: str, count: int) -> None:
        for seq in range(count):
            value = f"{prefix}{seq:04d}".encode()
            producer.produce(topic, key=f"k{seq % 10}".encode(), value=value,
                             on_delivery=deliveries.callback)
            produced.append(value)
            producer.poll(0)

    send("before-", 300)
    assert producer.flush(60) == 0
    assert deliveries.count() == 300 and not deliveries.errors

    cluster.stop()
    assert not cluster.live_brokers()
    send("down-", 100)
    cluster.start()
    wait_topic_ready(cluster, topic, PARTITIONS, timeout_s=120)
    send("after-", 300)
    assert producer.flush(120) == 0
    _check_read_back(cluster, topic, deliveries, produced)
