"""Idempotent producers (enable.idempotence, acks=all) against real brokers, with two clients:
confluent-kafka (librdkafka, Kafka's protocol) and kafkalite's own Producer (native protocol).

- kill -9 of the partition leader mid-stream: afterwards the partition holds every record that
  was sent, each exactly once, in the order it was sent, at the offset it was acknowledged with;
- a lost response: a TCP proxy in front of the broker forwards an acks=all Produce request but
  not its response and drops the connection, so the client retries the same producer id and
  sequence; the broker recognises the retry and the log holds the batch once;
- a lost response and then the leader's death before the retry: the retry reaches the new leader,
  which deduplicates it from the producer state it replayed as a follower.

Brokers use a 3 s ZooKeeper session, so the controller notices a kill -9 within about 3 s.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from confluent_kafka import Producer as ConfluentProducer

from kafkalite import Producer
from kafkalite.local.cluster import wait_until

from replication_tools import create_topic, read_all
from response_dropping_proxy import PRODUCE, ResponseDroppingProxy

pytestmark = [pytest.mark.system]

TOPIC = "idem"
FAST_FAILURE = {"zookeeper_session_timeout_ms": 3000, "zookeeper_connection_timeout_ms": 15000,
                "replica_lag_time_max_ms": 5000}
CLIENTS = ("confluent-kafka", "kafkalite")


class IdempotentClient:
    """One idempotent acks=all producer of either kind, sending to partition 0 of TOPIC.

    Remembers what was acknowledged (``acked``: value -> offset) and what failed; ``pump``
    lets the client deliver its reports (confluent-kafka reports only inside ``poll``)."""

    def __init__(self, kind: str, bootstrap: str):
        self.kind = kind
        self.acked: dict[bytes, int] = {}
        self.failed: list[tuple[bytes, str]] = []
        self.fatal: str | None = None
        self.sent = 0
        self._changed = threading.Condition()
        if kind == "confluent-kafka":
            self._producer = ConfluentProducer({
                "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                "linger.ms": 2, "message.timeout.ms": 60000, "retry.backoff.ms": 100,
                "reconnect.backoff.max.ms": 500, "error_cb": self._error})
        else:
            self._producer = Producer(bootstrap_servers=bootstrap, acks="all",
                                      enable_idempotence=True, linger_ms=2, retries=1_000_000,
                                      retry_backoff_ms=100, request_timeout_ms=15000,
                                      delivery_timeout_ms=60000)

    def send(self, value: bytes) -> None:
        self.sent += 1
        if self.kind == "confluent-kafka":
            while True:
                try:
                    self._producer.produce(TOPIC, value=value, partition=0,
                                           on_delivery=self._confluent_report)
                    return
                except BufferError:
                    self._producer.poll(0.05)
        future = self._producer.send(TOPIC, value=value, partition=0)
        future.add_callback(lambda md: self._report(value, md.offset, None))
        future.add_errback(lambda exc: self._report(value, None, repr(exc)))

    def _confluent_report(self, err, msg) -> None:
        self._report(msg.value(), msg.offset(), None if err is None else str(err))

    def _report(self, value: bytes, offset, error) -> None:
        with self._changed:
            if error is None:
                self.acked[value] = offset
            else:
                self.failed.append((value, error))
            self._changed.notify_all()

    def _error(self, err) -> None:
        if err.fatal():
            self.fatal = str(err)

    def outstanding(self) -> int:
        with self._changed:
            return self.sent - len(self.acked) - len(self.failed)

    def pump(self, timeout_s: float) -> None:
        if self.kind == "confluent-kafka":
            self._producer.poll(timeout_s)
        else:
            with self._changed:
                self._changed.wait(timeout_s)

    def wait_all(self, timeout_s: float = 90) -> None:
        wait_until(lambda: self.pump(0.05) or self.outstanding() == 0 or self.fatal, timeout_s,
                   f"{self.kind}: every record sent to be acknowledged or failed")

    def close(self) -> None:
        if self.kind == "confluent-kafka":
            self._producer.flush(30)
            self._producer = None       # librdkafka's handle goes (and stops reconnecting)
        else:
            self._producer.close(timeout=30)


class Stream(threading.Thread):
    """Sends ``b"%08d" % seq`` for seq = 0, 1, ... until stopped, at most 200 unacknowledged."""

    def __init__(self, client: IdempotentClient):
        super().__init__(daemon=True)
        self.client = client
        self._stopping = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            seq = 0
            while not self._stopping.is_set() and self.client.fatal is None:
                if self.client.outstanding() >= 200:
                    self.client.pump(0.05)
                    continue
                self.client.send(b"%08d" % seq)
                seq += 1
                self.client.pump(0)
        except BaseException as exc:  # noqa: BLE001 - reported by stop()
            self.error = exc

    def stop(self) -> None:
        self._stopping.set()
        self.join(60)
        assert not self.is_alive() and self.error is None, self.error


def check_exactly_once(client: IdempotentClient, records) -> list[bytes]:
    """Every record sent is stored once, where its acknowledgement said; returns the stored
    values in offset order."""
    assert client.fatal is None, f"{client.kind} failed fatally: {client.fatal}"
    assert not client.failed, f"{len(client.failed)} deliveries failed: {client.failed[:3]}"
    stored = sorted((r.offset, r.value) for r in records)
    counts = Counter(value for _offset, value in stored)
    duplicates = {value: n for value, n in counts.items() if n > 1}
    assert not duplicates, f"{len(duplicates)} records stored more than once: " \
                           f"{sorted(duplicates.items())[:5]}"
    missing = [value for value in client.acked if value not in counts]
    assert not missing, f"{len(missing)} acknowledged records missing: {sorted(missing)[:5]}"
    where = {value: offset for offset, value in stored}
    moved = [(value, offset, where[value]) for value, offset in client.acked.items()
             if where[value] != offset]
    assert not moved, f"records not at their acknowledged offsets: {moved[:5]}"
    assert len(stored) == client.sent, f"{client.sent} sent, {len(stored)} stored"
    return [value for _offset, value in stored]


def proxied_cluster(factory, num_brokers: int):
    """Brokers that advertise a ResponseDroppingProxy each: every client goes through them."""
    cluster = factory(num_brokers, start=False, **FAST_FAILURE)
    proxies = {}
    for broker_id, broker in cluster.brokers.items():
        proxies[broker_id] = ResponseDroppingProxy(broker.port)
        broker.overrides["advertised.listeners"] = f"PLAINTEXT://{proxies[broker_id].address}"
    cluster.start()
    return cluster, proxies


@pytest.fixture
def proxies_closed():
    made: list = []
    yield made
    for proxy_map in made:
        for proxy in proxy_map.values():
            proxy.close()


def marked(marker: bytes):
    return lambda api_key, payload: api_key == PRODUCE and marker in payload


@pytest.mark.parametrize("kind", CLIENTS)
def test_leader_kill_mid_stream_keeps_every_record_once_and_in_order(
        kafkalite_cluster_factory, kind):
    cluster = kafkalite_cluster_factory(3, **FAST_FAILURE)
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, TOPIC, 1, 3, min_insync_replicas=2)
    wait_until(lambda: len(cluster.partition_metadata(TOPIC, 0).isr) == 3, 30, "3 in sync")
    client = IdempotentClient(kind, bootstrap)
    stream = Stream(client)
    stream.start()
    try:
        wait_until(lambda: len(client.acked) >= 500 or client.fatal, 60, "500 acknowledged")
        victim = cluster.wait_for_leader(TOPIC, 0)
        acked_at_kill = len(client.acked)
        cluster.kill(victim)
        wait_until(lambda: cluster.leader_of(TOPIC, 0) not in (-1, victim), 30, "a new leader")
        wait_until(lambda: len(client.acked) >= acked_at_kill + 500 or client.fatal, 60,
                   "500 more acknowledged by the new leader")
    finally:
        stream.stop()
        client.wait_all()
        client.close()
    records = read_all(bootstrap, TOPIC, 1, acknowledged=[(0, o) for o in client.acked.values()])
    print(f"\n{kind}: killed leader {victim} after {acked_at_kill} acks; sent {client.sent}, "
          f"acknowledged {len(client.acked)}, stored {len(records)}")
    values = check_exactly_once(client, records)
    assert values == sorted(values), "records stored out of the order they were sent in"


@pytest.mark.parametrize("kind", CLIENTS)
def test_lost_response_retry_is_stored_once(kafkalite_cluster_factory, proxies_closed, kind):
    cluster, proxies = proxied_cluster(kafkalite_cluster_factory, 1)
    proxies_closed.append(proxies)
    proxy = proxies[1]
    create_topic(cluster.bootstrap_servers, TOPIC, 1, 1)
    client = IdempotentClient(kind, proxy.address)
    try:
        for i in range(5):
            client.send(b"before-%d" % i)
        client.wait_all()
        proxy.lose_response(marked(b"lost-response"), hold=False)
        client.send(b"lost-response")
        client.wait_all()
        for i in range(5):
            client.send(b"after-%d" % i)
        client.wait_all()
    finally:
        client.close()
    assert proxy.lost_event.is_set(), "the proxy never saw the Produce request to lose"
    retries = proxy.forwarded(PRODUCE, b"lost-response")
    records = read_all(proxy.address, TOPIC, 1, acknowledged=[(0, o) for o in client.acked.values()])
    print(f"\n{kind}: the Produce request carrying the lost response reached the broker "
          f"{retries} times; stored {[r.value for r in records]}")
    assert retries >= 2, "the client never retried the request whose response was lost"
    assert check_exactly_once(client, records) == (
        [b"before-%d" % i for i in range(5)] + [b"lost-response"] +
        [b"after-%d" % i for i in range(5)])


@pytest.mark.parametrize("kind", CLIENTS)
def test_lost_response_retried_on_a_new_leader_is_stored_once(
        kafkalite_cluster_factory, proxies_closed, kind):
    cluster, proxies = proxied_cluster(kafkalite_cluster_factory, 3)
    proxies_closed.append(proxies)
    bootstrap = ",".join(p.address for p in proxies.values())
    create_topic(cluster.bootstrap_servers, TOPIC, 1, 3, min_insync_replicas=2)
    wait_until(lambda: len(cluster.partition_metadata(TOPIC, 0).isr) == 3, 30, "3 in sync")
    leader = cluster.wait_for_leader(TOPIC, 0)
    client = IdempotentClient(kind, bootstrap)
    try:
        for i in range(5):
            client.send(b"before-%d" % i)
        client.wait_all()
        proxies[leader].lose_response(marked(b"lost-response"), hold=True)
        client.send(b"lost-response")
        wait_until(lambda: client.pump(0.05) or proxies[leader].lost_event.is_set(), 30,
                   "the leader's response to the marked Produce request (held back)")
        # the ISR has the batch (acks=all answered); the client has not heard: kill the leader
        cluster.kill(leader)
        new_leader = wait_until(lambda: (lambda b: b if b not in (-1, leader) else None)(
            cluster.leader_of(TOPIC, 0)), 30, "a new leader")
        proxies[leader].release()
        client.wait_all()
        for i in range(5):
            client.send(b"after-%d" % i)
        client.wait_all()
    finally:
        client.close()
    retried_on_new_leader = proxies[new_leader].forwarded(PRODUCE, b"lost-response")
    records = read_all(bootstrap, TOPIC, 1, acknowledged=[(0, o) for o in client.acked.values()])
    print(f"\n{kind}: response lost from leader {leader}, which was then killed; the retry "
          f"reached new leader {new_leader} {retried_on_new_leader} time(s); stored "
          f"{[r.value for r in records]}")
    assert retried_on_new_leader >= 1, "the retry never reached the new leader"
    assert check_exactly_once(client, records) == (
        [b"before-%d" % i for i in range(5)] + [b"lost-response"] +
        [b"after-%d" % i for i in range(5)])
