"""kafka-python's and aiokafka's transactional producers against kafkalite's transaction
coordinator (issue 22), unchanged, on three brokers (replication factor 3, min.insync.replicas 2):
a committed and an aborted transaction each, offsets sent to the transaction, and fencing by a
second producer with the same transactional id. kcat, reading read_committed, judges: exactly
the committed records; the group's offsets, read back by confluent-kafka, are the ones the
committed transaction sent.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import ProducerFenced as AioProducerFenced
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer
from kafka.errors import KafkaError as KafkaPythonError
from kafka.structs import OffsetAndMetadata, TopicPartition as KpTopicPartition

from kafka_clients_tools import kcat

pytestmark = pytest.mark.integration

SETTINGS = {"min_insync_replicas": 2, "default_replication_factor": 3,
            "auto_create_topics_enable": "true"}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def read_committed(bootstrap: str, topic: str) -> list[str]:
    out = kcat("-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q",
               "-X", "isolation.level=read_committed", "-f", "%s\\n")
    return out.splitlines()


def create_topics(bootstrap: str, *names: str) -> None:
    """One partition each, replication factor 3 (TxnOffsetCommit refuses unknown topics, as
    Kafka's does)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(n, 1, 3) for n in names]).values():
        future.result(30)


def committed_offset(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        [tp] = consumer.committed([TopicPartition(topic, 0)], timeout=30)
        return tp.offset
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def cluster(request, zookeeper, tmp_path_factory):
    from kafkalite.local.cluster import LocalCluster
    from kafkalite.testing.oracle_fixtures import session_chroot

    overrides = {key.replace("_", "."): value for key, value in SETTINGS.items()}
    chroot = session_chroot(zookeeper, "txn-py")
    made = LocalCluster(f"{zookeeper.connect_string}{chroot}", 3,
                        workdir=str(tmp_path_factory.mktemp("txn-py")), overrides=overrides)
    made.start()
    failed_before = request.session.testsfailed
    yield made
    if request.session.testsfailed > failed_before:
        print(made.describe_logs())
    made.stop()


def test_kafka_python_commits_aborts_and_sends_offsets(cluster):
    bootstrap = cluster.bootstrap_servers
    topic, source, group = unique("kp"), unique("kp-in"), unique("kp-g")
    create_topics(bootstrap, topic, source)
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=unique("kp-tx"),
                             acks="all")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"committed", partition=0)
        producer.send_offsets_to_transaction(
            {KpTopicPartition(source, 0): OffsetAndMetadata(42, "", -1)}, group)
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(topic, b"aborted", partition=0)
        producer.send_offsets_to_transaction(
            {KpTopicPartition(source, 0): OffsetAndMetadata(99, "", -1)}, group)
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close()
    assert read_committed(bootstrap, topic) == ["committed"]
    assert committed_offset(bootstrap, group, source) == 42


def test_kafka_python_is_fenced_by_a_second_producer(cluster):
    bootstrap = cluster.bootstrap_servers
    topic, transactional_id = unique("kp-fence"), unique("kp-tx")
    create_topics(bootstrap, topic)
    first = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id)
    second = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id)
    try:
        first.init_transactions()
        first.begin_transaction()
        first.send(topic, b"zombie", partition=0)
        first.flush()
        second.init_transactions()            # aborts the first's transaction, fences it
        with pytest.raises(KafkaPythonError):
            first.commit_transaction()
        second.begin_transaction()
        second.send(topic, b"second", partition=0)
        second.commit_transaction()
    finally:
        first.close(timeout=5)
        second.close()
    assert read_committed(bootstrap, topic) == ["second"]


def test_aiokafka_commits_aborts_sends_offsets_and_is_fenced(cluster):
    bootstrap = cluster.bootstrap_servers
    topic, source, group = unique("aio"), unique("aio-in"), unique("aio-g")
    create_topics(bootstrap, topic, source)
    transactional_id = unique("aio-tx")

    async def scenario():
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap,
                                    transactional_id=transactional_id)
        await producer.start()
        try:
            async with producer.transaction():
                await producer.send_and_wait(topic, b"committed", partition=0)
                await producer.send_offsets_to_transaction(
                    {AioTopicPartition(source, 0): 7}, group)
            await producer.begin_transaction()
            await producer.send_and_wait(topic, b"aborted", partition=0)
            await producer.abort_transaction()
            # a second producer with the same id fences this one
            await producer.begin_transaction()
            await producer.send_and_wait(topic, b"zombie", partition=0)
            second = AIOKafkaProducer(bootstrap_servers=bootstrap,
                                      transactional_id=transactional_id)
            await second.start()
            try:
                with pytest.raises(AioProducerFenced):
                    await producer.commit_transaction()
                async with second.transaction():
                    await second.send_and_wait(topic, b"second", partition=0)
            finally:
                await second.stop()
        finally:
            await producer.stop()

    asyncio.run(scenario())
    assert read_committed(bootstrap, topic) == ["committed", "second"]
    assert committed_offset(bootstrap, group, source) == 7
