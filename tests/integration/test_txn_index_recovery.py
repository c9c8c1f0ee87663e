"""A partition's aborted transaction index on a real broker, through a kill -9 and recovery,
judged by confluent-kafka (librdkafka's read_committed filter needs the broker's
``aborted_transactions``) and by Kafka 2.8.2's kafka-dump-log (Kafka's own TransactionIndex
reader):

* a committed, an aborted and a committed transaction of confluent's transactional producer
  leave one ``.txnindex`` entry, Kafka's bytes: producer id, first offset 3, marker 5, LSO 6;
* the broker is killed and the segment's indexes deleted (what recovery then rebuilds from the
  batches alone); once restarted, the rebuilt entry is the same and a read_committed consumer
  still reads exactly the committed records, a read_uncommitted one every record;
* a broker stopped cleanly with a transaction open writes a producer snapshot at its log end
  (Kafka's reader sees the open transaction's first offset in it); restarted, it keeps the open
  transaction invisible to read_committed until the producer commits it.
"""

from __future__ import annotations

import os
import re
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.local.cluster import wait_until
from kafkalite.testing.apache_kafka import run_tool

pytestmark = pytest.mark.integration

SETTINGS = {"transaction_state_log_replication_factor": 1, "transaction_state_log_min_isr": 1,
            "offsets_topic_replication_factor": 1}


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _read(bootstrap: str, topic: str, isolation: str, expected: int) -> list[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": _unique("reader"),
                         "isolation.level": isolation, "enable.auto.commit": False,
                         "enable.partition.eof": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    values: list[str] = []

    def poll_once() -> None:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value().decode())
    try:
        wait_until(lambda: poll_once() or len(values) >= expected, 60,
                   f"{expected} records of {topic} ({isolation})")
        for _ in range(4):  # and nothing more arrives
            poll_once()
    finally:
        consumer.close()
    return values


def _transaction(producer: Producer, topic: str, values: list[str], commit: bool) -> None:
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value=value.encode(), partition=0)
    assert producer.flush(30) == 0   # the records are in the log before the marker
    if commit:
        producer.commit_transaction(60)
    else:
        producer.abort_transaction(60)


def _dump_txn_index(path: str) -> list[str]:
    proc = run_tool("kafka-dump-log", "--files", path)
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stdout.splitlines() if line.startswith("version:")]


def test_the_txn_index_survives_kill_and_recovery(kafkalite_cluster_factory):
    cluster = kafkalite_cluster_factory(1, **SETTINGS)
    bootstrap = cluster.bootstrap_servers
    topic = _unique("txn-index")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    cluster.wait_for_leader(topic, 0)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": _unique("tx"),
                         "linger.ms": 0})
    producer.init_transactions(60)
    _transaction(producer, topic, ["c1", "c2"], commit=True)    # 0-1, COMMIT at 2
    _transaction(producer, topic, ["a1", "a2"], commit=False)   # 3-4, ABORT at 5
    _transaction(producer, topic, ["c3"], commit=True)          # 6, COMMIT at 7
    assert _read(bootstrap, topic, "read_committed", 3) == ["c1", "c2", "c3"]

    (broker,) = cluster.brokers.values()
    partition_dir = os.path.join(broker.log_dir, f"{topic}-0")
    index_path = os.path.join(partition_dir, f"{0:020d}.txnindex")
    before = _dump_txn_index(index_path)
    assert len(before) == 1 and re.fullmatch(
        r"version: 0 producerId: \d+ firstOffset: 3 lastOffset: 5 lastStableOffset: 6",
        before[0]), before

    cluster.kill(broker.broker_id)
    for name in os.listdir(partition_dir):
        if name.endswith((".index", ".timeindex", ".txnindex")):
            os.unlink(os.path.join(partition_dir, name))
    cluster.restart(broker.broker_id)
    cluster.wait_for_leader(topic, 0, 60)

    assert _read(bootstrap, topic, "read_committed", 3) == ["c1", "c2", "c3"]
    assert _read(bootstrap, topic, "read_uncommitted", 5) == ["c1", "c2", "a1", "a2", "c3"]
    assert os.path.exists(index_path), "recovery did not rebuild the txn index"
    assert _dump_txn_index(index_path) == before


def test_a_clean_shutdown_snapshots_an_open_transaction(kafkalite_cluster_factory):
    cluster = kafkalite_cluster_factory(1, **SETTINGS)
    bootstrap = cluster.bootstrap_servers
    topic = _unique("txn-snapshot")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    cluster.wait_for_leader(topic, 0)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": _unique("tx"),
                         "linger.ms": 0, "transaction.timeout.ms": 300000})
    producer.init_transactions(60)
    _transaction(producer, topic, ["c1"], commit=True)          # 0, COMMIT at 1
    producer.begin_transaction()
    producer.produce(topic, value=b"o1", partition=0)
    producer.produce(topic, value=b"o2", partition=0)
    assert producer.flush(30) == 0                              # 2-3, open
    assert _read(bootstrap, topic, "read_uncommitted", 3) == ["c1", "o1", "o2"]

    (broker,) = cluster.brokers.values()
    assert cluster.terminate(broker.broker_id) == 0             # a clean shutdown
    snapshot = os.path.join(broker.log_dir, f"{topic}-0", f"{4:020d}.snapshot")
    proc = run_tool("kafka-dump-log", "--files", snapshot)
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr
    entries = [line for line in proc.stdout.splitlines() if line.startswith("producerId:")]
    assert len(entries) == 1, proc.stdout
    assert re.match(r"producerId: \d+ producerEpoch: 0 coordinatorEpoch: \d+ "
                    r"currentTxnFirstOffset: Some\(2\) firstSequence: \d+ lastSequence: 2 "
                    r"lastOffset: 3 ", entries[0]), entries[0]

    cluster.restart(broker.broker_id)
    cluster.wait_for_leader(topic, 0, 60)
    assert _read(bootstrap, topic, "read_committed", 1) == ["c1"]
    producer.commit_transaction(60)
    assert _read(bootstrap, topic, "read_committed", 3) == ["c1", "o1", "o2"]
