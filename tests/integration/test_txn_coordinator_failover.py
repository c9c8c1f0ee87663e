"""The transaction coordinator on three real brokers (replication factor 3, min.insync.replicas
2), judged by confluent-kafka (librdkafka), unchanged:

* a coordinator killed (kill -9) while its transaction is in PrepareCommit -- the commit is
  written to ``__transaction_state`` and answered, but the partition leader that must receive the
  COMMIT marker is stopped (SIGSTOP) -- is replaced by the next leader of its
  ``__transaction_state`` partition, which reloads the transaction and completes it: a
  read_committed consumer then reads every record of it exactly once, and the transactional id
  goes on (a new producer fences the old one);
* a second producer with the same transactional id, after the coordinator moved to another
  broker (SIGTERM), still fences the first: the epoch was reloaded from the log.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer,
                             TopicPartition)

from kafkalite.client import AdminClient, NewTopic
from kafkalite.coordinator.partitioner import partition_for
from kafkalite.local.cluster import wait_until
from kafkalite.txn import log_records
from kafkalite.txn.metadata import TxnState

from kafka_clients_tools import kcat

pytestmark = pytest.mark.integration

TXN_TOPIC = "__transaction_state"
TXN_PARTITIONS = 50
SETTINGS = {"min_insync_replicas": 2, "default_replication_factor": 3,
            "replica_lag_time_max_ms": 3000}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def txn_partition(transactional_id: str) -> int:
    return partition_for(transactional_id, TXN_PARTITIONS)


def create_topic(cluster, leader: int) -> str:
    """A one-partition topic, replicas on every broker, led by ``leader``."""
    topic = unique("txn-data")
    replicas = [leader] + [b for b in sorted(cluster.brokers) if b != leader]
    # (confluent-kafka 2.16 refuses a replica assignment: "a default partition count")
    with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, replica_assignments={0: replicas})])
    assert cluster.wait_for_leader(topic, 0) == leader
    return topic


def producer(cluster, transactional_id: str) -> Producer:
    return Producer({"bootstrap.servers": cluster.bootstrap_servers,
                     "transactional.id": transactional_id, "linger.ms": 0,
                     "transaction.timeout.ms": 120000})


def produce(prod: Producer, topic: str, values: list[str]) -> None:
    failures = []
    for value in values:
        prod.produce(topic, value=value.encode(), partition=0,
                     on_delivery=lambda err, _m: err and failures.append(err))
    assert prod.flush(30) == 0 and not failures, failures


def read_committed(bootstrap: str, topic: str, expected: int, timeout_s: float = 60) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("reader"),
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "enable.partition.eof": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    values: list[str] = []
    try:
        def enough():
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value().decode())
            return len(values) >= expected
        wait_until(enough, timeout_s, f"{expected} committed records of {topic}")
        # and nothing more arrives
        for _ in range(4):
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value().decode())
    finally:
        consumer.close()
    return values


def kcat_read_committed(bootstrap: str, topic: str) -> list[str]:
    """Every record of the partition kcat reads with read_committed, to its end."""
    out = kcat("-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q",
               "-X", "isolation.level=read_committed", "-f", "%s\\n")
    return out.splitlines()


def txn_states(bootstrap: str, transactional_id: str) -> list[TxnState]:
    """Every state written for the id to its ``__transaction_state`` partition, oldest first
    (read with librdkafka, decoded as Kafka's TransactionLog)."""
    partition = txn_partition(transactional_id)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("txn-log"),
                         "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.assign([TopicPartition(TXN_TOPIC, partition, OFFSET_BEGINNING)])
    states = []
    try:
        while True:
            message = consumer.poll(10)
            assert message is not None, "no answer reading __transaction_state"
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF
                break
            txn_id, entry = log_records.parse(message.key(), message.value())
            if txn_id == transactional_id and entry is not None:
                states.append(entry.state)
    finally:
        consumer.close()
    return states


def moved_from(cluster, partition: int, old_leader: int) -> int:
    """Wait until the live brokers agree on a new leader of ``__transaction_state-<p>``."""
    def moved():
        leader = cluster.leader_of(TXN_TOPIC, partition)
        return (leader,) if leader not in (-1, old_leader) else None
    return wait_until(moved, 60, f"a new leader of {TXN_TOPIC}-{partition}")[0]


def coordinator_elsewhere(cluster, avoid: set[int]) -> tuple[str, int]:
    """A transactional id whose coordinator (its ``__transaction_state`` partition's leader) is
    none of ``avoid``; the topic exists once a first producer has initialized."""
    for _ in range(200):
        candidate = unique("tx")
        leader = cluster.wait_for_leader(TXN_TOPIC, txn_partition(candidate))
        if leader not in avoid:
            return candidate, leader
    raise AssertionError(f"every coordinator is in {avoid}")


def test_a_coordinator_killed_in_prepare_commit_is_completed_by_the_next(
        kafkalite_cluster_factory):
    cluster = kafkalite_cluster_factory(3, **SETTINGS)
    bootstrap = cluster.bootstrap_servers
    first = producer(cluster, unique("warm-up"))
    first.init_transactions(60)               # creates __transaction_state
    controller = cluster.controller_id()
    leader = next(b for b in sorted(cluster.brokers) if b != controller)
    topic = create_topic(cluster, leader)
    transactional_id, coordinator = coordinator_elsewhere(cluster, {leader, controller})

    prod = producer(cluster, transactional_id)
    prod.init_transactions(60)
    prod.begin_transaction()
    values = [f"v{i}" for i in range(50)]
    produce(prod, topic, values)
    # the data partition's leader stops: its COMMIT marker cannot be written
    cluster.pause(leader)
    try:
        prod.commit_transaction(60)           # answered once PrepareCommit is written
        live = ",".join(cluster.brokers[b].address for b in sorted(cluster.brokers)
                        if b != leader)
        states = txn_states(live, transactional_id)
        assert states[-1] == TxnState.PREPARE_COMMIT, states
        cluster.kill(coordinator)
    finally:
        cluster.resume(leader)
    moved_from(cluster, txn_partition(transactional_id), coordinator)
    assert sorted(read_committed(bootstrap, topic, len(values)),
                  key=lambda v: int(v[1:])) == values
    wait_until(lambda: txn_states(bootstrap, transactional_id)[-1] == TxnState.COMPLETE_COMMIT,
               60, "CompleteCommit written by the new coordinator")
    assert kcat_read_committed(bootstrap, topic) == values
    # the id goes on: a new producer fences the old one and commits its own transaction
    second = producer(cluster, transactional_id)
    second.init_transactions(60)
    prod.begin_transaction()
    prod.produce(topic, value=b"zombie", partition=0)
    with pytest.raises(KafkaException):
        prod.commit_transaction(30)
    second.begin_transaction()
    produce(second, topic, ["after"])
    second.commit_transaction(60)
    assert read_committed(bootstrap, topic, len(values) + 1)[-1] == "after"


def test_the_epoch_survives_a_coordinator_move(kafkalite_cluster_factory):
    cluster = kafkalite_cluster_factory(3, **SETTINGS)
    first = producer(cluster, unique("warm-up"))
    first.init_transactions(60)
    topic = create_topic(cluster, cluster.controller_id())
    transactional_id, coordinator = coordinator_elsewhere(cluster, set())
    old = producer(cluster, transactional_id)
    old.init_transactions(60)
    old.begin_transaction()
    produce(old, topic, ["kept"])
    old.commit_transaction(60)
    cluster.terminate(coordinator)            # SIGTERM: leadership moves away cleanly
    moved_from(cluster, txn_partition(transactional_id), coordinator)
    new = producer(cluster, transactional_id)
    new.init_transactions(60)                 # epoch 1, from the reloaded epoch 0
    old.begin_transaction()
    old.produce(topic, value=b"zombie", partition=0)
    with pytest.raises(KafkaException):
        old.commit_transaction(30)
    new.begin_transaction()
    produce(new, topic, ["new"])
    new.commit_transaction(60)
    assert read_committed(cluster.bootstrap_servers, topic, 2) == ["kept", "new"]
    assert kcat_read_committed(cluster.bootstrap_servers, topic) == ["kept", "new"]
