"""Kafka 2.8.2's kafka-dump-log (DumpLogSegments) reads kafkalite's ``.txnindex`` and ``.snapshot``
files: Kafka's own readers (TransactionIndex, ProducerStateManager.readSnapshot) are the judge of
the formats, byte for byte. The files are written by kafkalite's Log as a partition writes them
(aborted transactions indexed through rolls, snapshots at a roll and at close), and by brokers:
the same transactions of librdkafka's producer leave the same entries on every replica of
kafkalite as on Apache Kafka's (producer ids aside), and the same producer snapshots at each
segment roll."""

from __future__ import annotations

import os
import re
import struct

from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic
from kafka_tool_checks import admin, tool, unique, wait_for_leaders

from kafkalite.local.cluster import wait_until

from kafkalite.config import TopicConfig
from kafkalite.log import Log
from kafkalite.log.producer_snapshot import ProducerSnapshotEntry
from kafkalite.log.txn_index import AbortedTxn
from kafkalite.record.batch import build_batch

TS = 1_600_000_000_000


def _data(pid: int, n: int = 3) -> bytes:
    return build_batch([(TS, b"k", b"v", None)] * n, producer_id=pid, producer_epoch=2,
                       base_sequence=0, transactional=True)


def _abort(pid: int) -> bytes:
    record = (TS, struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 7), None)
    return build_batch([record], producer_id=pid, producer_epoch=2, transactional=True,
                       control=True)


def test_dump_log_reads_kafkalites_txn_index(tmp_path):
    log = Log(str(tmp_path / "t-0"), TopicConfig(file_delete_delay_ms=0))
    log.append(_data(1000))                 # 0-2
    log.append(_data(2000))                 # 3-5
    log.append(_abort(1000))                # 6: pid 2000 still open, LSO 3
    log.append_aborted_txn(AbortedTxn(1000, 0, 6, 3))
    log.append(_abort(2000))                # 7
    log.append_aborted_txn(AbortedTxn(2000, 3, 7, 8))
    log.roll()
    log.append(_data(2**40 + 5))            # 8-10
    log.append(_abort(2**40 + 5))           # 11
    log.append_aborted_txn(AbortedTxn(2**40 + 5, 8, 11, 12))
    log.close()
    first = os.path.join(log.dir, f"{0:020d}.txnindex")
    second = os.path.join(log.dir, f"{8:020d}.txnindex")
    out = tool("kafka-dump-log", "--files", f"{first},{second}").stdout
    lines = [line for line in out.splitlines() if line.startswith("version:")]
    assert lines == [
        "version: 0 producerId: 1000 firstOffset: 0 lastOffset: 6 lastStableOffset: 3",
        "version: 0 producerId: 2000 firstOffset: 3 lastOffset: 7 lastStableOffset: 8",
        f"version: 0 producerId: {2**40 + 5} firstOffset: 8 lastOffset: 11 "
        "lastStableOffset: 12",
    ], out
    assert f"Dumping {first}" in out and f"Dumping {second}" in out


def test_dump_log_reads_kafkalites_producer_snapshots(tmp_path):
    entries = [
        ProducerSnapshotEntry(producer_id=1000, producer_epoch=2, last_sequence=9,
                              last_offset=42, offset_delta=4, timestamp=TS + 1,
                              coordinator_epoch=7, current_txn_first_offset=38),
        ProducerSnapshotEntry(producer_id=3000, producer_epoch=0, last_sequence=-1,
                              last_offset=-1, offset_delta=0, timestamp=TS + 2,
                              coordinator_epoch=3, current_txn_first_offset=-1),
    ]
    log = Log(str(tmp_path / "t-0"), TopicConfig(file_delete_delay_ms=0))
    log.producer_state_source = lambda: entries
    log.append(build_batch([(TS, None, b"v", None)] * 43))   # 0-42
    log.close()                                               # the snapshot at the end
    path = os.path.join(log.dir, f"{43:020d}.snapshot")
    out = tool("kafka-dump-log", "--files", path).stdout
    lines = [line.strip() for line in out.splitlines() if line.startswith("producerId:")]
    assert lines == [
        "producerId: 1000 producerEpoch: 2 coordinatorEpoch: 7 currentTxnFirstOffset: Some(38) "
        f"firstSequence: 5 lastSequence: 9 lastOffset: 42 offsetDelta: 4 timestamp: {TS + 1}",
        "producerId: 3000 producerEpoch: 0 coordinatorEpoch: 3 currentTxnFirstOffset: None",
    ], out


def test_dump_log_sees_a_damaged_snapshot_as_corrupt(tmp_path):
    """The CRC is Kafka's: a flipped byte in an entry is refused by Kafka's reader too."""
    log = Log(str(tmp_path / "t-0"), TopicConfig(file_delete_delay_ms=0))
    log.take_producer_snapshot([ProducerSnapshotEntry(1, 0, 0, 0, 0, TS, -1, -1)], offset=5)
    path = os.path.join(log.dir, f"{5:020d}.snapshot")
    with open(path, "r+b") as f:
        f.seek(20)
        byte = f.read(1)
        f.seek(20)
        f.write(bytes([byte[0] ^ 0xFF]))
    proc = tool("kafka-dump-log", "--files", path)
    assert "producerId:" not in proc.stdout
    assert "CRC is no longer valid" in proc.stderr, proc.stderr


def _replica_entries(cluster, topic: str, replicas: list[int]) -> list[list[str]]:
    """kafka-dump-log of the first segment's .txnindex on each replica, producer ids masked."""
    out = []
    for broker in replicas:
        path = os.path.join(cluster.brokers[broker].log_dir, f"{topic}-0",
                            f"{0:020d}.txnindex")
        if not os.path.exists(path):
            out.append([])
            continue
        text = tool("kafka-dump-log", "--files", path).stdout
        out.append([re.sub(r"producerId: \d+", "producerId: P", line)
                    for line in text.splitlines() if line.startswith("version:")])
    return out


def test_brokers_index_the_same_aborted_transactions_as_kafka(kafka_systems):
    """Commit, abort, commit, abort by librdkafka's transactional producer on a topic with
    three replicas: every replica's .txnindex holds Kafka's two entries (first offset, marker,
    LSO), on kafkalite as on Apache Kafka 2.8.2."""
    expected = ["version: 0 producerId: P firstOffset: 3 lastOffset: 5 lastStableOffset: 6",
                "version: 0 producerId: P firstOffset: 8 lastOffset: 9 lastStableOffset: 10"]
    for name, cluster in kafka_systems.items():
        bootstrap = cluster.bootstrap_servers
        topic = unique("td-txnindex")
        client = admin(bootstrap)
        client.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
        replicas = wait_for_leaders(bootstrap, topic, 1)[0].replicas
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "log_level": 0,
                             "transactional.id": unique("td-tx")})
        producer.init_transactions(60)
        for values, commit in ((["c1", "c2"], True), (["a1", "a2"], False), (["c3"], True),
                               (["a3"], False)):
            producer.begin_transaction()
            for value in values:
                producer.produce(topic, value=value.encode(), partition=0)
            assert producer.flush(30) == 0
            if commit:
                producer.commit_transaction(60)
            else:
                producer.abort_transaction(60)
        wait_until(lambda: _replica_entries(cluster, topic, replicas)
                   == [expected] * len(replicas), 60,
                   f"{name}: every replica's .txnindex holds the two aborted transactions")


def _snapshots(cluster, topic: str, broker: int) -> dict[str, list[str]]:
    """kafka-dump-log of every .snapshot of the partition on ``broker``: {file name: entries},
    producer ids, timestamps and coordinator epochs masked."""
    directory = os.path.join(cluster.brokers[broker].log_dir, f"{topic}-0")
    out = {}
    for name in sorted(n for n in os.listdir(directory) if n.endswith(".snapshot")):
        text = tool("kafka-dump-log", "--files", os.path.join(directory, name)).stdout
        out[name] = [re.sub(r"(producerId|timestamp|coordinatorEpoch): -?\d+", r"\1: X",
                            line.strip())
                     for line in text.splitlines() if line.startswith("producerId:")]
    return out


def test_brokers_snapshot_the_producer_state_at_each_roll_as_kafka(kafka_systems):
    """A topic whose every batch rolls a segment (segment.bytes=100): the snapshot each roll
    takes of the transactional producer's state (sequence, last offset, open transaction) is
    Kafka's, file for file, on every replica."""
    outputs = {}
    for name, cluster in kafka_systems.items():
        bootstrap = cluster.bootstrap_servers
        topic = unique("td-snapshot")
        client = admin(bootstrap)
        client.create_topics([NewTopic(topic, 1, 3, config={"segment.bytes": "100"})])[
            topic].result(30)
        replicas = wait_for_leaders(bootstrap, topic, 1)[0].replicas
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "log_level": 0,
                             "transactional.id": unique("td-tx")})
        producer.init_transactions(60)
        for value, commit in ((b"c1", True), (b"a1", False), (b"c2", True)):
            producer.begin_transaction()
            producer.produce(topic, value=value, partition=0)
            assert producer.flush(30) == 0
            if commit:
                producer.commit_transaction(60)
            else:
                producer.abort_transaction(60)
        # offsets: c1 0, COMMIT 1, a1 2, ABORT 3, c2 4, COMMIT 5: snapshots at 1 to 5
        names = [f"{o:020d}.snapshot" for o in range(1, 6)]
        wait_until(lambda: all(list(_snapshots(cluster, topic, b)) == names for b in replicas),
                   60, f"{name}: the snapshots of five rolls on every replica")
        dumps = [_snapshots(cluster, topic, b) for b in replicas]
        assert all(d == dumps[0] for d in dumps), dumps
        outputs[name] = dumps[0]
    assert outputs["kafkalite"] == outputs["kafka"], outputs
