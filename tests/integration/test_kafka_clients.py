"""Real Kafka clients, unchanged, against a 3-broker kafkalite cluster (rf 3, min.insync 2).

kcat, confluent-kafka (librdkafka), kafka-python and aiokafka speak Kafka's own protocol to the
brokers' ports: metadata, topic administration, idempotent acks=all produce, fetch, ListOffsets
by timestamp, CreatePartitions and DescribeConfigs. One cluster serves the whole module; every
test uses topics of its own. Clients here assign partitions; their consumer groups (the brokers'
group coordinator) are tested in test_broker_consumer_groups.py and the system tests.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter, defaultdict

import pytest

from kafkalite.local.cluster import wait_until

from kafka_clients_tools import (
    CREATE_TIME,
    check_stored_codec,
    confluent_consumer,
    confluent_read,
    create_topic,
    kcat,
    module_cluster,
    needs_kcat,
    norm_headers,
    parse_kcat_brokers,
    topic_names,
    wait_topic_ready,
)

pytestmark = [
    pytest.mark.integration,
    # kafka-python 3 loads its protocol schemas with importlib.resources' legacy functions
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]


@pytest.fixture(scope="module")
def cluster(request, zookeeper, tmp_path_factory):
    yield from module_cluster(request, zookeeper, tmp_path_factory, "kafka-clients")


# --- kcat ------------------------------------------------------------------------------------

@needs_kcat
def test_kcat_lists_all_brokers(cluster):
    listing = kcat("-b", cluster.bootstrap_servers, "-L")
    announced, brokers, controllers = parse_kcat_brokers(listing)
    assert announced == 3, listing
    assert brokers == {b.broker_id: b.address for b in cluster.brokers.values()}, listing
    assert controllers == [cluster.controller_id()], listing


@needs_kcat
def test_kcat_keyed_lines_round_trip(cluster):
    topic = "kcat-keyed"
    create_topic(cluster, topic, 3)
    sent = [(f"key-{i % 23}", f"value {i} {'x' * (i % 40)}") for i in range(600)]
    lines = "".join(f"{k}:{v}\n" for k, v in sent).encode()
    kcat("-b", cluster.bootstrap_servers, "-P", "-t", topic, "-K:", "-X", "acks=all",
         input=lines)
    out = kcat("-b", cluster.bootstrap_servers, "-C", "-t", topic, "-e", "-q",
               "-o", "beginning", "-K:")
    read = [tuple(line.split(":", 1)) for line in out.splitlines()]
    assert len(read) == len(sent)
    assert Counter(read) == Counter(sent)
    # one key lives in one partition, so its values come back in the order they were sent
    by_key = defaultdict(list)
    for key, value in read:
        by_key[key].append(int(value.split()[1]))
    assert all(values == sorted(values) for values in by_key.values()), by_key


# --- confluent-kafka -------------------------------------------------------------------------

def test_confluent_idempotent_producer_20k_keyed_records(cluster):
    from confluent_kafka import Producer, TopicPartition

    topic, partitions, total = "confluent-idempotent", 6, 20_000
    create_topic(cluster, topic, partitions)
    rnd = random.Random(20_000)
    sent = []
    for i in range(total):
        headers = [("seq", b"%d" % i), ("bin", rnd.randbytes(8)), ("empty", b"")]
        if i % 7 == 0:
            headers += [("dup", b"first"), ("dup", b"second")]
        sent.append((b"key-%d" % (i % 997), b"%d:" % i + rnd.randbytes(rnd.randrange(200)),
                     tuple(headers)))

    delivered: dict[int, tuple[int, int]] = {}     # index -> (partition, offset)
    failures = []

    def on_delivery(index):
        def report(err, message):
            if err is not None:
                failures.append((index, err))
            else:
                delivered[index] = (message.partition(), message.offset())
        return report

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5})
    for index, (key, value, headers) in enumerate(sent):
        while True:
            try:
                producer.produce(topic, key=key, value=value, headers=list(headers),
                                 on_delivery=on_delivery(index))
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    assert producer.flush(120) == 0, "records still queued after two minutes"
    assert not failures, failures[:5]
    assert len(delivered) == total

    # idempotence: per partition the acknowledged offsets are 0..n-1, in produce order
    produced_in = defaultdict(list)
    for index in range(total):
        partition, offset = delivered[index]
        produced_in[partition].append((offset, index))
    for partition, entries in produced_in.items():
        assert [o for o, _ in entries] == list(range(len(entries))), \
            f"partition {partition}: acknowledged offsets are not 0..{len(entries) - 1}"

    messages = confluent_read(cluster.bootstrap_servers, topic, partitions, total)
    assert len(messages) == total
    got = [(msg.key(), msg.value(), norm_headers(msg.headers())) for msg in messages]
    assert Counter(got) == Counter(sent)
    assert {msg.timestamp()[0] for msg in messages} == {CREATE_TIME}
    read_in = defaultdict(list)
    for msg, record in zip(messages, got):
        read_in[msg.partition()].append((msg.offset(), record))
    assert set(read_in) == set(produced_in)
    for partition, entries in read_in.items():
        assert [o for o, _ in entries] == list(range(len(entries))), \
            f"partition {partition} read out of order"
        assert [r for _, r in entries] == [sent[i] for _, i in produced_in[partition]], \
            f"partition {partition}: records differ from what was produced there"

    consumer = confluent_consumer(cluster.bootstrap_servers)
    try:
        marks = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
                 for p in range(partitions)}
    finally:
        consumer.close()
    assert {p: low for p, (low, _) in marks.items()} == {p: 0 for p in range(partitions)}
    assert {p: high for p, (_, high) in marks.items()} == \
        {p: len(read_in.get(p, ())) for p in range(partitions)}
    assert sum(high for _, high in marks.values()) == total


def test_confluent_offsets_for_times(cluster):
    from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition

    topic, base = "confluent-times", 1_700_000_000_000
    create_topic(cluster, topic, 2)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                         "linger.ms": 5})
    for i in range(50):
        producer.produce(topic, value=b"p0-%d" % i, partition=0, timestamp=base + i * 1000)
        producer.produce(topic, value=b"p1-%d" % i, partition=1,
                         timestamp=base + 500 + i * 1000)
    assert producer.flush(60) == 0

    consumer = confluent_consumer(cluster.bootstrap_servers)
    try:
        def offset_for(partition, timestamp):
            [answer] = consumer.offsets_for_times([TopicPartition(topic, partition, timestamp)],
                                                  timeout=30)
            assert answer.error is None, answer.error
            return answer.offset

        cases = {
            (0, base - 1): 0,               # before everything: the first record
            (0, base): 0,
            (0, base + 10_000): 10,         # exactly a record's timestamp
            (0, base + 10_001): 11,         # between two records: the later one
            (0, base + 49_000): 49,         # the last record
            (0, base + 49_001): -1,         # after everything: no such offset (OFFSET_END)
            (1, base + 10_000): 10,         # partition 1's record 10 is at base + 10_500
            (1, base + 10_500): 10,
            (1, base + 10_501): 11,
        }
        answers = {case: offset_for(*case) for case in cases}
        assert answers == cases
    finally:
        consumer.close()
    # a topic that does not exist has no offsets (and asking does not create it)
    consumer = confluent_consumer(cluster.bootstrap_servers)
    try:
        with pytest.raises(KafkaException) as refused:
            consumer.offsets_for_times([TopicPartition("confluent-times-missing", 0, base)],
                                       timeout=30)
    finally:
        consumer.close()
    assert refused.value.args[0].code() in (KafkaError._UNKNOWN_PARTITION,
                                            KafkaError._UNKNOWN_TOPIC,
                                            KafkaError.UNKNOWN_TOPIC_OR_PART), refused.value
    assert "confluent-times-missing" not in topic_names(cluster)


def test_unknown_topic_without_auto_create_then_kafka_python_metadata_creates_one(cluster):
    from confluent_kafka import KafkaError
    from kafka import KafkaProducer

    absent = "never-auto-created"
    # librdkafka's consumer asks with allow_auto_topic_creation=false (its default)
    consumer = confluent_consumer(cluster.bootstrap_servers, **{
        "allow.auto.create.topics": False})
    try:
        metadata = consumer.list_topics(absent, timeout=30)
    finally:
        consumer.close()
    assert metadata.topics[absent].error is not None
    assert metadata.topics[absent].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert absent not in topic_names(cluster)

    # kafka-python's producer asks with allow_auto_topic_creation=true: the cluster default
    # (auto.create.topics.enable=true) creates it with num.partitions and the default rf
    created = "auto-created-by-kafka-python"
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers.split(","),
                             max_block_ms=60_000)
    try:
        assert producer.partitions_for(created) == {0}
        metadata = producer.send(created, key=b"k", value=b"first").get(timeout=60)
    finally:
        producer.close(timeout=30)
    assert (metadata.partition, metadata.offset) == (0, 0)
    wait_topic_ready(cluster, created, 1)
    # the creation above went through the controller after the refused request: the unknown
    # topic did not appear in between
    assert absent not in topic_names(cluster)
    assert created in topic_names(cluster)


def test_confluent_describe_configs_uses_kafka_names(cluster):
    from confluent_kafka.admin import AdminClient, ConfigResource

    topic = "confluent-configs"
    create_topic(cluster, topic, 1, config={"retention.ms": "3600000"})
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource], request_timeout=30)[resource].result(timeout=60)
    assert {"retention.ms", "cleanup.policy", "min.insync.replicas"} <= set(entries)
    assert entries["retention.ms"].value == "3600000"
    assert not entries["retention.ms"].is_default
    assert entries["cleanup.policy"].value == "delete"
    assert entries["min.insync.replicas"].value == "2"      # the brokers' default


def test_confluent_create_partitions_grows_topic(cluster):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewPartitions

    topic = "confluent-grow"
    create_topic(cluster, topic, 2)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_partitions([NewPartitions(topic, 4)],
                            request_timeout=30)[topic].result(timeout=60)

    def partitions_seen():
        return len(admin.list_topics(topic, timeout=10).topics[topic].partitions)
    wait_until(lambda: partitions_seen() == 4, 60, f"{topic} with 4 partitions in metadata")
    wait_topic_ready(cluster, topic, 4)
    # the new partitions take records like the old ones
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                        "topic.metadata.refresh.interval.ms": 1000})
    for partition in range(4):
        producer.produce(topic, value=b"to %d" % partition, partition=partition)
    assert producer.flush(60) == 0
    messages = confluent_read(cluster.bootstrap_servers, topic, 4, 4)
    assert sorted((m.partition(), m.offset(), m.value()) for m in messages) == \
        [(p, 0, b"to %d" % p) for p in range(4)]


# --- kafka-python ----------------------------------------------------------------------------

def test_kafka_python_admin_create_list_delete(cluster):
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers.split(","),
                             request_timeout_ms=30_000)
    try:
        names = ["kafka-python-keep", "kafka-python-drop"]
        response = admin.create_topics([NewTopic(n, 3, 3) for n in names], timeout_ms=30_000)
        errors = {t["name"]: t["error_code"] for t in response["topics"]}
        assert errors == {n: 0 for n in names}
        wait_until(lambda: set(names) <= set(admin.list_topics()), 60, "both topics listed")
        for name in names:
            wait_topic_ready(cluster, name, 3)
        described = {t["name"]: t for t in admin.describe_topics(names)}
        for name in names:
            assert described[name]["error_code"] == 0
            partitions = described[name]["partitions"]
            assert sorted(p["partition_index"] for p in partitions) == [0, 1, 2]
            assert all(sorted(p["replica_nodes"]) == [1, 2, 3] for p in partitions)

        response = admin.delete_topics(["kafka-python-drop"], timeout_ms=30_000)
        assert {t["name"]: t["error_code"] for t in response["topics"]} == \
            {"kafka-python-drop": 0}
        wait_until(lambda: "kafka-python-drop" not in admin.list_topics(), 60,
                   "the deleted topic to leave list_topics")
        assert "kafka-python-keep" in admin.list_topics()
        wait_until(lambda: "kafka-python-drop" not in topic_names(cluster), 60,
                   "the deleted topic to leave every broker's metadata")
    finally:
        admin.close()


def test_kafka_python_produce_consume(cluster):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic, partitions, total = "kafka-python-data", 3, 1000
    create_topic(cluster, topic, partitions)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers.split(","),
                             acks="all", linger_ms=5, compression_type="gzip")
    base = 1_650_000_000_000
    sent = {}
    try:
        futures = []
        for i in range(total):
            record = (b"key-%d" % (i % 41), b"value-%d-" % i + b"z" * (i % 100),
                      (("seq", b"%d" % i), ("empty", b"")), base + i)
            futures.append((record, producer.send(topic, key=record[0], value=record[1],
                                                  headers=list(record[2]),
                                                  timestamp_ms=record[3])))
        producer.flush(timeout=60)
        for record, future in futures:
            metadata = future.get(timeout=60)
            sent[(metadata.partition, metadata.offset)] = record
    finally:
        producer.close(timeout=30)
    assert len(sent) == total

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers.split(","),
                             group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        got = {}
        wait_until(lambda: _kafka_python_poll(consumer, got) >= total, 90,
                   f"{total} records through kafka-python")
        ends = consumer.end_offsets(tps)
    finally:
        consumer.close()
    assert len(got) == total
    assert got == sent
    counts = Counter(p for p, _ in sent)
    assert {tp.partition: end for tp, end in ends.items()} == \
        {p: counts[p] for p in range(partitions)}
    check_stored_codec(cluster, topic, partitions, counts, "gzip")


def _kafka_python_poll(consumer, got: dict) -> int:
    for records in consumer.poll(timeout_ms=500).values():
        for r in records:
            assert r.timestamp_type == 0
            got[(r.partition, r.offset)] = (r.key, r.value, norm_headers(r.headers),
                                            r.timestamp)
    return len(got)


# --- aiokafka --------------------------------------------------------------------------------

def test_aiokafka_produce_consume(cluster):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    topic, partitions, total = "aiokafka-data", 3, 1000
    create_topic(cluster, topic, partitions)
    base = 1_660_000_000_000

    async def produce():
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all",
                                    enable_idempotence=True, compression_type="lz4",
                                    linger_ms=5)
        await producer.start()
        try:
            records = [(b"key-%d" % (i % 37), b"aio-%d-" % i + b"q" * (i % 90),
                        (("seq", b"%d" % i), ("null", None)), base + i * 3)
                       for i in range(total)]
            futures = [await producer.send(topic, key=k, value=v, headers=list(h),
                                           timestamp_ms=ts) for k, v, h, ts in records]
            metadata = await asyncio.gather(*futures)
            return {(md.partition, md.offset): record for md, record in zip(metadata, records)}
        finally:
            await producer.stop()

    async def consume():
        consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap_servers,
                                    enable_auto_commit=False, auto_offset_reset="earliest")
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            got = {}
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 90
            while len(got) < total and loop.time() < deadline:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    for r in records:
                        assert r.timestamp_type == 0
                        got[(r.partition, r.offset)] = (r.key, r.value, norm_headers(r.headers),
                                                        r.timestamp)
            return got, await consumer.end_offsets(tps)
        finally:
            await consumer.stop()

    sent = asyncio.run(produce())
    assert len(sent) == total
    got, ends = asyncio.run(consume())
    assert got == sent
    counts = Counter(p for p, _ in sent)
    assert {tp.partition: end for tp, end in ends.items()} == \
        {p: counts[p] for p in range(partitions)}
    check_stored_codec(cluster, topic, partitions, counts, "lz4")
