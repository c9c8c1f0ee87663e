"""kafkalite's own transactional clients under faults (issue 22), on a 3-broker kafkalite cluster
of their own (replication factor 3, min.insync.replicas 2; brokers are killed here):

* consume-transform-produce: kafkalite's read_committed Consumer (a group member) and its
  transactional Producer copy 2,000 records with ``send_offsets_to_transaction``, while the
  transaction coordinator, a leader of the output topic, or the group coordinator is killed
  with kill -9 a third of the way through. confluent-kafka, reading the output read_committed,
  finds every input record exactly once, and the group's committed offsets at the input's end;
* a transaction abandoned by its producer is aborted by the coordinator after the producer's
  ``transaction_timeout_ms`` (confluent-kafka's read_committed sees none of it, and the last
  stable offset moves on), and a timeout above ``transaction.max.timeout.ms`` is refused with
  INVALID_TRANSACTION_TIMEOUT at ``init_transactions()``.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

from kafka_clients_tools import create_topic, module_cluster
from test_own_client_transactions import (
    TIMEOUT_S,
    confluent_read,
    own_consumer,
    txn_producer,
    unique,
    wait_stable,
)

from kafkalite.local.cluster import request, wait_until
from kafkalite.protocol import messages as m

pytestmark = [pytest.mark.integration]

PARTITIONS = 3
RECORDS = 2000


@pytest.fixture(scope="module")
def cluster(request, zookeeper, tmp_path_factory):
    # the coordinator looks for timed-out transactions every second (Kafka's default: 10 s)
    yield from module_cluster(request, zookeeper, tmp_path_factory, "own-client-txn-faults", {
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000})


def coordinator_of(cluster, key: str, key_type: int) -> int:
    """The broker a live broker names as the coordinator of ``key`` (1: a transactional id)."""
    def found():
        for broker in cluster.live_brokers():
            try:
                answer = request(broker.host, broker.port,
                                 m.FindCoordinatorRequest(key=key, key_type=key_type))
            except OSError:
                continue
            if answer.error_code == 0:
                return (answer.node_id,)
        return None
    return wait_until(found, TIMEOUT_S, f"the coordinator of {key}")[0]


def copy(cluster, source: str, sink: str, group: str, tid: str, fault) -> None:
    """Copy every record of ``source`` to ``sink`` in transactions of up to 100 records, each
    committing the group's offsets; ``fault()`` runs once a third is committed. An abortable
    failure aborts and rewinds to the last committed offsets, as a copier must."""
    from kafkalite.errors import KafkaError, ProducerFencedError

    consumer = own_consumer(cluster, "read_committed", group_id=group, max_poll_records=100)
    consumer.subscribe([source])
    done: dict = {}
    faulted = False
    try:
        with txn_producer(cluster, tid) as producer:
            producer.init_transactions()
            deadline = time.monotonic() + 300
            while sum(done.values()) < RECORDS:
                assert time.monotonic() < deadline, f"copied only {sum(done.values())}"
                batch = consumer.poll(500)
                if not batch:
                    continue
                offsets = {tp: records[-1].offset + 1 for tp, records in batch.items()}
                producer.begin_transaction()
                try:
                    for records in batch.values():
                        for r in records:
                            producer.send(sink, b"copy-" + r.value, key=r.key)
                    producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
                    producer.commit_transaction()
                except ProducerFencedError:
                    raise
                except KafkaError:
                    producer.abort_transaction()
                    for tp in consumer.assignment():
                        consumer.seek(tp, done.get(tp, 0))
                    continue
                done.update(offsets)
                if not faulted and sum(done.values()) >= RECORDS // 3:
                    faulted = True
                    fault()
    finally:
        consumer.close(autocommit=False)


@pytest.mark.parametrize("victim", ["transaction_coordinator", "output_leader",
                                    "group_coordinator"])
def test_copy_exactly_once_through_a_kill_9(cluster, victim):
    from confluent_kafka import Consumer as ConfluentConsumer
    from confluent_kafka import TopicPartition as ConfluentTP

    from kafkalite import Producer

    bootstrap = cluster.bootstrap_servers
    source, sink = unique("copy-in"), unique("copy-out")
    create_topic(cluster, source, PARTITIONS)
    create_topic(cluster, sink, PARTITIONS)
    group, tid = unique("copier"), unique("copier-tx")
    with Producer(bootstrap, acks="all") as plain:
        for i in range(RECORDS):
            plain.send(source, b"in-%05d" % i, key=b"%d" % (i % 40))
        plain.flush()
    killed = []

    def fault():
        node = {"transaction_coordinator": lambda: coordinator_of(cluster, tid, 1),
                "group_coordinator": lambda: coordinator_of(cluster, group, 0),
                "output_leader": lambda: cluster.wait_for_leader(sink, 0)}[victim]()
        cluster.kill(node)
        killed.append(node)

    try:
        copy(cluster, source, sink, group, tid, fault)
    finally:
        for node in killed:
            cluster.restart(node)
    assert killed, "the fault never ran"
    wait_stable(bootstrap, sink)
    copied = Counter(confluent_read(bootstrap, sink, "read_committed"))
    assert copied == Counter(b"copy-in-%05d" % i for i in range(RECORDS))
    judge = ConfluentConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                               "enable.auto.commit": False})
    try:
        ends = [tp.offset for tp in judge.committed(
            [ConfluentTP(source, p) for p in range(PARTITIONS)], timeout=30)]
    finally:
        judge.close()
    assert sum(ends) == RECORDS, ends       # the group's offsets at the input's end


def test_an_abandoned_transaction_is_aborted_after_its_timeout(cluster):
    from kafkalite import Producer

    bootstrap = cluster.bootstrap_servers
    topic = unique("abandoned")
    create_topic(cluster, topic, 1)
    tid = unique("abandoned-tx")
    producer = Producer(bootstrap, transactional_id=tid, transaction_timeout_ms=3000)
    producer.init_transactions()
    producer.begin_transaction()
    producer.send(topic, b"abandoned", partition=0).get(TIMEOUT_S)
    producer.close(timeout=0)   # forced: neither committed nor aborted (a plain close aborts)
    wait_stable(bootstrap, topic, 1)          # the coordinator aborted it: the LSO moved on
    assert confluent_read(bootstrap, topic, "read_committed", 1) == []
    assert confluent_read(bootstrap, topic, "read_uncommitted", 1) == [b"abandoned"]
    with txn_producer(cluster, tid) as again:  # the id is usable again
        again.init_transactions()
        again.begin_transaction()
        again.send(topic, b"next", partition=0)
        again.commit_transaction()
    wait_stable(bootstrap, topic, 1)
    assert confluent_read(bootstrap, topic, "read_committed", 1) == [b"next"]


def test_a_timeout_above_the_brokers_maximum_is_refused(cluster):
    from kafkalite import Producer
    from kafkalite.errors import InvalidTransactionTimeoutError

    # transaction.max.timeout.ms defaults to 900000 (15 minutes)
    with Producer(cluster.bootstrap_servers, transactional_id=unique("too-long"),
                  transaction_timeout_ms=900001) as producer:
        with pytest.raises(InvalidTransactionTimeoutError):
            producer.init_transactions()
        with pytest.raises(InvalidTransactionTimeoutError):
            producer.begin_transaction()


def test_a_producer_stalled_past_its_timeout_is_fenced(cluster):
    """The copier-stopped-past-its-timeout case, in process: the coordinator aborts the
    transaction and bumps the epoch, so the stalled producer's commit is PRODUCER_FENCED
    (fatal, as Java's), and a new producer with the same id carries on."""
    from kafkalite import Producer
    from kafkalite.errors import ProducerFencedError

    bootstrap = cluster.bootstrap_servers
    topic = unique("stalled")
    create_topic(cluster, topic, 1)
    tid = unique("stalled-tx")
    with Producer(bootstrap, transactional_id=tid, transaction_timeout_ms=3000) as stalled:
        stalled.init_transactions()
        stalled.begin_transaction()
        stalled.send(topic, b"stalled", partition=0).get(TIMEOUT_S)
        wait_stable(bootstrap, topic, 1)      # the coordinator aborted it meanwhile
        with pytest.raises(ProducerFencedError):
            stalled.commit_transaction()
        with pytest.raises(ProducerFencedError):
            stalled.begin_transaction()
    with txn_producer(cluster, tid) as successor:
        successor.init_transactions()
        successor.begin_transaction()
        successor.send(topic, b"successor", partition=0)
        successor.commit_transaction()
    wait_stable(bootstrap, topic, 1)
    assert confluent_read(bootstrap, topic, "read_committed", 1) == [b"successor"]
