"""kafkalite's own transactional Producer and read_committed Consumer (issue 22) on a real
3-broker kafkalite cluster (replication factor 3, min.insync.replicas 2), each judged by an
independent client:

* what kafkalite's Producer writes in committed and aborted transactions is read back by
  confluent-kafka (librdkafka): read_committed sees exactly the committed records, and
  read_uncommitted all of them;
* what confluent-kafka's transactional producer writes is read by kafkalite's Consumer the same
  way, and an open transaction holds kafkalite's read_committed consumer (and its end offsets,
  the last stable offset) back until its commit;
* a second kafkalite Producer with the same transactional id fences the first;
* ``send_offsets_to_transaction`` with ``Consumer.group_metadata()`` commits the group's offsets
  at the commit and not at an abort, as confluent-kafka's ``committed()`` reads them.

kafkalite's own clients speak only kafkalite's native protocol, so these run against kafkalite
alone (tests/oracle/test_transactions_confluent.py runs confluent-kafka against both systems).
Every wait polls a condition with a deadline.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter

import pytest

from kafka_clients_tools import create_topic, module_cluster

from kafkalite.local.cluster import wait_until

pytestmark = [pytest.mark.integration]

PARTITIONS = 3
TIMEOUT_S = 60


@pytest.fixture(scope="module")
def cluster(request, zookeeper, tmp_path_factory):
    yield from module_cluster(request, zookeeper, tmp_path_factory, "own-client-txn")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def new_topic(cluster, partitions: int = PARTITIONS) -> str:
    name = unique("own-txn")
    create_topic(cluster, name, partitions)
    return name


def txn_producer(cluster, transactional_id: str):
    from kafkalite import Producer

    return Producer(cluster.bootstrap_servers, transactional_id=transactional_id,
                    max_block_ms=TIMEOUT_S * 1000)


def confluent_end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[str, list[int]]:
    """Latest offsets per partition as confluent-kafka's AdminClient lists them, per isolation
    level: the high watermarks and the last stable offsets."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap})
    out = {}
    for name, level in (("read_uncommitted", IsolationLevel.READ_UNCOMMITTED),
                        ("read_committed", IsolationLevel.READ_COMMITTED)):
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        answer = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps},
                                    isolation_level=level, request_timeout=30)
        out[name] = [answer[tp].result(30).offset for tp in tps]
    return out


def wait_stable(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> list[int]:
    """Wait until no transaction is open on the topic (every LSO is its high watermark: the
    markers are written after EndTxn answers); the end offsets."""
    def stable():
        ends = confluent_end_offsets(bootstrap, topic, partitions)
        return ends["read_committed"] == ends["read_uncommitted"] and ends["read_committed"]
    return wait_until(stable, TIMEOUT_S, f"{topic} stable")


def confluent_read(bootstrap: str, topic: str, isolation: str,
                   partitions: int = PARTITIONS) -> list[bytes]:
    """Every value of ``topic`` confluent-kafka reads at ``isolation`` up to each partition's
    end (librdkafka's end-of-partition event: the LSO for read_committed)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("judge"),
                         "enable.auto.commit": False, "isolation.level": isolation,
                         "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        values: list[bytes] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + TIMEOUT_S
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"no end of partition; read {values}"
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                at_end.add(msg.partition())
                continue
            values.append(msg.value())
        return values
    finally:
        consumer.close()


def own_consumer(cluster, isolation: str, **options):
    from kafkalite import Consumer

    return Consumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest",
                    enable_auto_commit=False, isolation_level=isolation, **options)


def own_read(cluster, topic: str, isolation: str, partitions: int = PARTITIONS) -> list[bytes]:
    """Every value kafkalite's Consumer reads at ``isolation`` until its positions reach the
    end offsets it lists at that level (the LSO for read_committed)."""
    from kafkalite import TopicPartition

    consumer = own_consumer(cluster, isolation)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        ends = consumer.end_offsets(tps)
        values: list[bytes] = []
        deadline = time.monotonic() + TIMEOUT_S
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, f"positions short of {ends}; read {values}"
            for records in consumer.poll(500).values():
                values.extend(r.value for r in records)
        return values
    finally:
        consumer.close()


def test_own_producer_commits_and_aborts_as_confluent_reads_them(cluster):
    bootstrap = cluster.bootstrap_servers
    topic = new_topic(cluster)
    plan = [("commit", 30), ("abort", 20), ("commit", 1), ("abort", 7), ("commit", 12)]
    committed: list[bytes] = []
    everything: list[bytes] = []
    with txn_producer(cluster, unique("own-tx")) as producer:
        producer.init_transactions()
        for n, (ending, count) in enumerate(plan):
            producer.begin_transaction()
            values = [b"%s-%d-%d" % (ending.encode(), n, i) for i in range(count)]
            futures = [producer.send(topic, value, key=b"k%d" % i)
                       for i, value in enumerate(values)]
            if ending == "commit":
                producer.commit_transaction()
                committed += values
                assert all(f.get(0).offset >= 0 for f in futures)
            else:
                producer.flush()       # written, then aborted: read_uncommitted sees them
                producer.abort_transaction()
            everything += values
    wait_stable(bootstrap, topic)
    assert Counter(confluent_read(bootstrap, topic, "read_committed")) == Counter(committed)
    assert Counter(confluent_read(bootstrap, topic, "read_uncommitted")) == Counter(everything)


def confluent_txn_producer(bootstrap: str, transactional_id: str):
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "linger.ms": 0})
    producer.init_transactions(30)
    return producer


def confluent_send(producer, topic: str, values: list[bytes]) -> None:
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % PARTITIONS)
    assert producer.flush(30) == 0


def test_own_consumer_reads_what_confluent_committed(cluster):
    bootstrap = cluster.bootstrap_servers
    topic = new_topic(cluster)
    producer = confluent_txn_producer(bootstrap, unique("cf-tx"))
    committed: list[bytes] = []
    everything: list[bytes] = []
    for n, (ending, count) in enumerate([("commit", 25), ("abort", 15), ("commit", 4),
                                         ("abort", 9), ("abort", 2), ("commit", 10)]):
        producer.begin_transaction()
        values = [b"cf-%s-%d-%d" % (ending.encode(), n, i) for i in range(count)]
        confluent_send(producer, topic, values)
        if ending == "commit":
            producer.commit_transaction(30)
            committed += values
        else:
            producer.abort_transaction(30)
        everything += values
    wait_stable(bootstrap, topic)
    read_committed = own_read(cluster, topic, "read_committed")
    assert Counter(read_committed) == Counter(committed)
    # within a partition, in the order written
    assert [v for v in read_committed if v.endswith(b"-0")] == [
        v for v in committed if v.endswith(b"-0")]
    assert Counter(own_read(cluster, topic, "read_uncommitted")) == Counter(everything)


def test_an_open_transaction_holds_own_read_committed_consumer_back(cluster):
    from kafkalite import TopicPartition

    bootstrap = cluster.bootstrap_servers
    topic = new_topic(cluster, 1)
    producer = confluent_txn_producer(bootstrap, unique("cf-open"))
    producer.begin_transaction()
    confluent_send(producer, topic, [b"before"])
    producer.commit_transaction(30)
    wait_stable(bootstrap, topic, 1)
    producer.begin_transaction()
    producer.produce(topic, value=b"open", partition=0)
    assert producer.flush(30) == 0
    tp = TopicPartition(topic, 0)
    committed_reader = own_consumer(cluster, "read_committed")
    uncommitted_reader = own_consumer(cluster, "read_uncommitted")
    try:
        committed_reader.assign([tp])
        uncommitted_reader.assign([tp])
        # before: one record and its marker (offsets 0, 1); the open one at 2
        assert committed_reader.end_offsets([tp]) == {tp: 2}
        assert uncommitted_reader.end_offsets([tp]) == {tp: 3}
        seen: list[bytes] = []
        wait_until(lambda: seen.extend(r.value for r in
                                       uncommitted_reader.poll(200).get(tp, [])) or
                   seen == [b"before", b"open"], TIMEOUT_S, "read_uncommitted reads the open one")
        got: list[bytes] = []
        wait_until(lambda: got.extend(r.value for r in committed_reader.poll(200).get(tp, []))
                   or committed_reader.position(tp) >= 2, TIMEOUT_S, "read up to the LSO")
        assert got == [b"before"]
        assert committed_reader.poll(500) == {}        # the open transaction stays invisible
        producer.commit_transaction(30)
        wait_until(lambda: got.extend(r.value for r in committed_reader.poll(200).get(tp, []))
                   or got == [b"before", b"open"], TIMEOUT_S, "the committed record")
        wait_until(lambda: committed_reader.end_offsets([tp]) == {tp: 4}, TIMEOUT_S,
                   "the LSO past the commit marker")
    finally:
        committed_reader.close()
        uncommitted_reader.close()


def test_a_second_own_producer_fences_the_first(cluster):
    from kafkalite.errors import ProducerFencedError

    bootstrap = cluster.bootstrap_servers
    topic = new_topic(cluster)
    tid = unique("own-fence")
    first = txn_producer(cluster, tid)
    second = txn_producer(cluster, tid)
    try:
        first.init_transactions()
        first.begin_transaction()
        first.send(topic, b"fenced", partition=0).get(TIMEOUT_S)
        second.init_transactions()           # bumps the epoch, aborts first's transaction
        with pytest.raises(ProducerFencedError):
            first.send(topic, b"more", partition=1).get(TIMEOUT_S)
            first.commit_transaction()
        with pytest.raises(ProducerFencedError):
            first.begin_transaction()
        second.begin_transaction()
        second.send(topic, b"winner", partition=2)
        second.commit_transaction()
    finally:
        first.close()
        second.close()
    wait_stable(bootstrap, topic)
    assert confluent_read(bootstrap, topic, "read_committed") == [b"winner"]


def test_send_offsets_to_transaction_commits_the_group_offsets_at_the_commit(cluster):
    from confluent_kafka import Consumer as ConfluentConsumer
    from confluent_kafka import TopicPartition as ConfluentTP

    from kafkalite import Producer, TopicPartition

    bootstrap = cluster.bootstrap_servers
    source = new_topic(cluster, 1)
    sink = new_topic(cluster, 1)
    group = unique("own-copier")
    with Producer(bootstrap, acks="all") as plain:
        for i in range(10):
            plain.send(source, b"in-%d" % i, partition=0)
        plain.flush()
    consumer = own_consumer(cluster, "read_committed", group_id=group)
    consumer.subscribe([source])
    tp = TopicPartition(source, 0)

    def judge_committed() -> int:
        judge = ConfluentConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                                   "enable.auto.commit": False})
        try:
            return judge.committed([ConfluentTP(source, 0)], timeout=30)[0].offset
        finally:
            judge.close()

    copied: list[bytes] = []
    with txn_producer(cluster, unique("own-copy")) as producer:
        producer.init_transactions()
        for ending in ("commit", "abort"):
            records: list = []
            wait_until(lambda: records.extend(consumer.poll(200, max_records=4).get(tp, []))
                       or records, TIMEOUT_S, "records to copy")
            producer.begin_transaction()
            for r in records:
                producer.send(sink, r.value.replace(b"in", b"out"), partition=0)
            meta = consumer.group_metadata()
            assert meta.group_id == group and meta.generation_id >= 1 and meta.member_id
            producer.send_offsets_to_transaction({tp: records[-1].offset + 1}, meta)
            if ending == "commit":
                producer.commit_transaction()
                done = records[-1].offset + 1
                copied += [r.value.replace(b"in", b"out") for r in records]
            else:
                producer.abort_transaction()
                assert records[-1].offset + 1 > done
    consumer.close(autocommit=False)
    wait_stable(bootstrap, sink, 1)
    # the committed transaction's offset, not the aborted one's
    wait_until(lambda: judge_committed() == done, TIMEOUT_S, "the group's transactional offset")
    assert confluent_read(bootstrap, sink, "read_committed", 1) == copied


def test_a_failed_record_makes_the_transaction_abortable_and_the_abort_bumps_the_epoch(cluster):
    from kafkalite.errors import KafkaError

    bootstrap = cluster.bootstrap_servers
    topic = unique("own-too-large")
    create_topic(cluster, topic, 1, config={"max.message.bytes": "2000"})
    with txn_producer(cluster, unique("own-bump")) as producer:
        producer.init_transactions()
        epoch = producer._transaction_manager.producer_epoch
        producer.begin_transaction()
        producer.send(topic, b"small", partition=0).get(TIMEOUT_S)
        too_large = producer.send(topic, b"x" * 5000, partition=0)
        with pytest.raises(KafkaError):       # MESSAGE_TOO_LARGE from the leader
            too_large.get(TIMEOUT_S)
        with pytest.raises(KafkaError, match="must be aborted"):
            producer.commit_transaction()
        producer.abort_transaction()          # then InitProducerId with the id and epoch
        assert producer._transaction_manager.producer_epoch == epoch + 1
        producer.begin_transaction()
        producer.send(topic, b"after", partition=0)
        producer.commit_transaction()
    wait_stable(bootstrap, topic, 1)
    assert confluent_read(bootstrap, topic, "read_committed", 1) == [b"after"]
    assert confluent_read(bootstrap, topic, "read_uncommitted", 1) == [b"small", b"after"]
