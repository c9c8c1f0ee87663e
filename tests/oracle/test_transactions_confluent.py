"""Transactions (KIP-98, KIP-447) through confluent-kafka, unchanged, on both systems.

librdkafka's transactional producer and its read_committed / read_uncommitted consumers judge the
broker: commit and abort (read_committed sees exactly the committed records, read_uncommitted all
of them and never a marker, each marker taking one offset), an open transaction holding the last
stable offset (LSO) back, fencing by a second producer with the same transactional id, offsets
committed with send_offsets_to_transaction only at the commit, the coordinator aborting a
transaction past its transaction.timeout.ms, and the refusal of a timeout above
transaction.max.timeout.ms. Each test runs on Apache Kafka 2.8.2 and on kafkalite: what
librdkafka reports is asserted as Kafka gives it, so the two systems must agree. Topics have
replication factor 3 (the shared clusters have min.insync.replicas 2); every id is unique, since
the clusters are shared with the session.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import (OFFSET_BEGINNING, Consumer, IsolationLevel, KafkaError,
                             KafkaException, Producer, TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from kafkalite.local.cluster import wait_until
from kafkalite.testing.oracle_fixtures import SYSTEMS

pytestmark = [pytest.mark.integration]

TIMEOUT_S = 60


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap: str, partitions: int = 1) -> str:
    """A new topic (replication factor 3) whose partitions all have a leader."""
    topic = unique("txn")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 3)])[topic].result(30)

    def led() -> bool:
        meta = admin.list_topics(topic, timeout=5).topics.get(topic)
        return (meta is not None and meta.error is None and len(meta.partitions) == partitions
                and all(p.leader >= 0 for p in meta.partitions.values()))
    wait_until(led, 30, f"leaders for {topic}")
    return topic


def producer(bootstrap: str, transactional_id: str, **extra) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                     "linger.ms": 0, **extra})


def produce(prod: Producer, topic: str, values: list[str], partition: int = 0) -> None:
    """Send ``values`` and wait until each is acknowledged (so they are in the log)."""
    failures: list = []

    def delivered(err, _msg):
        if err is not None:
            failures.append(err)
    for value in values:
        prod.produce(topic, value=value.encode(), partition=partition, on_delivery=delivered)
    assert prod.flush(30) == 0, "records left unsent"
    assert not failures, failures


def end_offsets(bootstrap: str, topic: str, partition: int = 0) -> dict[str, int]:
    """ListOffsets (latest) of the partition in each isolation level: the high watermark and
    the last stable offset, asked of the leader by the AdminClient."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, partition)
    out = {}
    for name, level in (("read_uncommitted", IsolationLevel.READ_UNCOMMITTED),
                        ("read_committed", IsolationLevel.READ_COMMITTED)):
        answer = admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=level,
                                    request_timeout=30)
        out[name] = answer[tp].result(30).offset
    return out


def wait_stable(bootstrap: str, topic: str, partition: int = 0) -> int:
    """Wait until no transaction is open on the partition (its LSO is its high watermark: the
    markers of an ended transaction are written after EndTxn answers); the offset."""
    def stable():
        ends = end_offsets(bootstrap, topic, partition)
        return ends["read_committed"] == ends["read_uncommitted"] and ends["read_committed"]
    return wait_until(stable, TIMEOUT_S, f"{topic}-{partition} stable")


def reader(bootstrap: str, isolation: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": unique("txn-reader"),
                     "enable.auto.commit": False, "isolation.level": isolation,
                     "enable.partition.eof": True})


def read_to_end(consumer: Consumer, until_eof: int = 1) -> list[tuple[int, str]]:
    """``(offset, value)`` of each record the consumer gets until its partition's end
    (librdkafka's end-of-partition event: the LSO for read_committed, else the high
    watermark)."""
    got: list[tuple[int, str]] = []
    eofs = 0
    deadline = time.monotonic() + TIMEOUT_S
    while eofs < until_eof:
        assert time.monotonic() < deadline, f"no end of partition; read {got}"
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error() is not None:
            assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
            eofs += 1
            continue
        got.append((msg.offset(), msg.value().decode()))
    return got


def read_all(bootstrap: str, topic: str, isolation: str) -> list[tuple[int, str]]:
    consumer = reader(bootstrap, isolation)
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        return read_to_end(consumer)
    finally:
        consumer.close()


def fatal_code(exc: KafkaException) -> tuple[bool, int, str]:
    err = exc.args[0]
    return err.fatal(), err.code(), err.name()


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_commit_and_abort_as_each_isolation_level_reads_them(system):
    bootstrap = system.bootstrap_servers
    topic = create_topic(bootstrap)
    prod = producer(bootstrap, unique("tx-commit-abort"))
    prod.init_transactions(30)
    batches = [("commit", ["c1", "c2", "c3"]), ("abort", ["a1", "a2"]),
               ("commit", ["c4"]), ("abort", ["a3"])]
    for ending, values in batches:
        prod.begin_transaction()
        produce(prod, topic, values)
        if ending == "commit":
            prod.commit_transaction(30)
        else:
            prod.abort_transaction(30)
    # each transaction's records, then its marker (one offset, never delivered)
    expected, offset = [], 0
    for ending, values in batches:
        expected += [(ending, offset + i, v) for i, v in enumerate(values)]
        offset += len(values) + 1
    assert wait_stable(bootstrap, topic) == offset == 11

    assert read_all(bootstrap, topic, "read_uncommitted") == [(o, v) for _, o, v in expected]
    assert read_all(bootstrap, topic, "read_committed") == [
        (o, v) for ending, o, v in expected if ending == "commit"]
    prod.flush(5)


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_open_transaction_is_invisible_to_read_committed_until_its_commit(system):
    bootstrap = system.bootstrap_servers
    topic = create_topic(bootstrap)
    prod = producer(bootstrap, unique("tx-open"))
    prod.init_transactions(30)
    prod.begin_transaction()
    produce(prod, topic, ["c1", "c2", "c3"])
    prod.commit_transaction(30)
    assert wait_stable(bootstrap, topic) == 4          # 3 records and the commit marker

    prod.begin_transaction()
    produce(prod, topic, [f"open{i}" for i in range(5)])
    # the open transaction starts at offset 4: the LSO stays there, the high watermark moves on
    assert end_offsets(bootstrap, topic) == {"read_uncommitted": 9, "read_committed": 4}

    committed_reader = reader(bootstrap, "read_committed")
    uncommitted_reader = reader(bootstrap, "read_uncommitted")
    try:
        for consumer in (committed_reader, uncommitted_reader):
            consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        assert read_to_end(committed_reader) == [(0, "c1"), (1, "c2"), (2, "c3")]
        assert read_to_end(uncommitted_reader) == [
            (0, "c1"), (1, "c2"), (2, "c3")] + [(4 + i, f"open{i}") for i in range(5)]
        # a read_committed consumer waiting at the LSO gets nothing while the transaction is open
        assert [m for m in committed_reader.consume(100, timeout=3) if m.error() is None] == []
        assert committed_reader.position([TopicPartition(topic, 0)])[0].offset == 4
        assert end_offsets(bootstrap, topic)["read_committed"] == 4

        prod.commit_transaction(30)
        got = read_to_end(committed_reader)
        assert got == [(4 + i, f"open{i}") for i in range(5)]
        assert wait_stable(bootstrap, topic) == 10
        lo, hi = committed_reader.get_watermark_offsets(TopicPartition(topic, 0), timeout=30,
                                                        cached=False)
        assert (lo, hi) == (0, 10)
    finally:
        committed_reader.close()
        uncommitted_reader.close()
    prod.flush(5)


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_second_producer_with_the_same_transactional_id_fences_the_first(system):
    bootstrap = system.bootstrap_servers
    topic = create_topic(bootstrap)
    tid = unique("tx-fence")
    first = producer(bootstrap, tid)
    first.init_transactions(30)
    first.begin_transaction()
    produce(first, topic, ["first1", "first2"])

    # the second InitProducerId bumps the epoch and aborts the first's open transaction
    second = producer(bootstrap, tid)
    second.init_transactions(30)
    with pytest.raises(KafkaException) as fenced:
        first.commit_transaction(30)
    # what Kafka 2.8 gives librdkafka: EndTxn v3 answers PRODUCER_FENCED, reported as a fatal
    # error of the producer (librdkafka's _FENCED)
    assert fatal_code(fenced.value) == (True, KafkaError._FENCED, "_FENCED"), fenced.value
    with pytest.raises(KafkaException) as still:
        first.begin_transaction()
    assert still.value.args[0].fatal()

    second.begin_transaction()
    produce(second, topic, ["second1"])
    second.commit_transaction(30)
    # first's two records, the abort marker, second's record, its commit marker
    assert wait_stable(bootstrap, topic) == 5
    assert read_all(bootstrap, topic, "read_committed") == [(3, "second1")]
    assert read_all(bootstrap, topic, "read_uncommitted") == [
        (0, "first1"), (1, "first2"), (3, "second1")]
    second.flush(5)


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_send_offsets_to_transaction_commits_the_group_offsets_at_the_commit(system):
    bootstrap = system.bootstrap_servers
    source, sink = create_topic(bootstrap), create_topic(bootstrap)
    plain = Producer({"bootstrap.servers": bootstrap})
    for i in range(6):
        plain.produce(source, value=f"in{i}".encode(), partition=0)
    assert plain.flush(30) == 0

    group = unique("txn-group")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})
    prod = producer(bootstrap, unique("tx-offsets"))
    try:
        consumer.subscribe([source])
        got = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < 6:
            assert time.monotonic() < deadline, f"read {len(got)} of 6"
            got += [m for m in consumer.consume(6, timeout=1) if m.error() is None]
        # a plain commit first: the offsets the aborted transaction must leave as they are
        consumer.commit(offsets=[TopicPartition(source, 0, 2)], asynchronous=False)
        prod.init_transactions(30)

        def committed() -> int:
            return consumer.committed([TopicPartition(source, 0)], timeout=30)[0].offset

        prod.begin_transaction()
        produce(prod, sink, ["out-aborted"])
        prod.send_offsets_to_transaction([TopicPartition(source, 0, 6)],
                                         consumer.consumer_group_metadata(), 30)
        prod.abort_transaction(30)
        # committed() asks with require_stable (librdkafka is read_committed): it waits out the
        # markers, then sees the plain commit unchanged
        assert committed() == 2

        prod.begin_transaction()
        produce(prod, sink, ["out-committed"])
        prod.send_offsets_to_transaction([TopicPartition(source, 0, 6)],
                                         consumer.consumer_group_metadata(), 30)
        prod.commit_transaction(30)
        wait_until(lambda: committed() == 6, TIMEOUT_S, "the transaction's offsets committed")
        assert wait_stable(bootstrap, sink) == 4
        assert read_all(bootstrap, sink, "read_committed") == [(2, "out-committed")]
    finally:
        consumer.close()
    # another member of the group (a new consumer) resumes from the transaction's offsets
    late = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "enable.auto.commit": False})
    try:
        assert late.committed([TopicPartition(source, 0)], timeout=30)[0].offset == 6
    finally:
        late.close()
    prod.flush(5)


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_transaction_timeout_aborts_an_abandoned_transaction(system):
    bootstrap = system.bootstrap_servers
    topic = create_topic(bootstrap)
    prod = producer(bootstrap, unique("tx-timeout"), **{"transaction.timeout.ms": 5000,
                                                         "message.timeout.ms": 5000})
    prod.init_transactions(30)
    prod.begin_transaction()
    produce(prod, topic, ["left1", "left2"])
    assert end_offsets(bootstrap, topic) == {"read_uncommitted": 2, "read_committed": 0}

    # the producer does nothing more: the coordinator aborts the transaction once it is older
    # than 5 s, at its next check (transaction.abort.timed.out.transaction.cleanup.interval.ms,
    # 10 s on both): the abort marker makes the partition stable
    assert wait_stable(bootstrap, topic) == 3
    assert read_all(bootstrap, topic, "read_committed") == []
    assert read_all(bootstrap, topic, "read_uncommitted") == [(0, "left1"), (1, "left2")]
    # the abort bumped the producer's epoch: its commit is refused as Kafka refuses it
    with pytest.raises(KafkaException) as late:
        prod.commit_transaction(30)
    assert fatal_code(late.value) == (True, KafkaError._FENCED, "_FENCED"), late.value


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_transaction_timeout_above_the_maximum_is_refused(system):
    prod = producer(system.bootstrap_servers, unique("tx-too-long"),
                    **{"transaction.timeout.ms": 900_001})
    with pytest.raises(KafkaException) as refused:
        prod.init_transactions(30)
    err = refused.value.args[0]
    assert err.code() == KafkaError.INVALID_TRANSACTION_TIMEOUT, err
