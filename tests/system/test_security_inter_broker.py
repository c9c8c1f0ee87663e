"""security.inter.broker.protocol=SASL_SSL: replica fetchers and the controller log in to the
other brokers as ``admin`` over TLS (SCRAM-SHA-512), and only ``admin`` is a super user, so a
controller request that came any other way would be refused with CLUSTER_AUTHORIZATION_FAILED,
a follower fetch with TOPIC_AUTHORIZATION_FAILED on every partition (Kafka 2.8's answers).
Replication keeps every ISR full, and killing a leader still moves leadership with nothing
acknowledged lost.
"""

from __future__ import annotations

import pytest

from kafkalite.local.cluster import wait_until
from kafkalite.testing.secure_cluster import secure_cluster

confluent_kafka = pytest.importorskip("confluent_kafka", reason="needs confluent-kafka")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

pytestmark = [pytest.mark.system]

TOPIC = "inter-broker"


def produce_all(settings: dict, values, partition: int) -> list:
    outcomes = []
    producer = Producer({**settings, "acks": "all", "enable.idempotence": True})
    for value in values:
        producer.produce(TOPIC, value=value, partition=partition,
                         on_delivery=lambda err, msg: outcomes.append(err))
    producer.flush(60)
    return outcomes


def read_all(settings: dict, partition: int, count: int) -> list[bytes]:
    consumer = Consumer({**settings, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, partition, 0)])
    got = []
    try:
        def more():
            got.extend(m.value() for m in consumer.consume(100, timeout=1) if not m.error())
            return len(got) >= count
        wait_until(more, 60, f"{count} records of {TOPIC}-{partition}")
    finally:
        consumer.close()
    return got


def test_replication_and_failover_over_sasl_ssl(zookeeper, tmp_path):
    with secure_cluster(zookeeper, str(tmp_path), name="interbroker",
                        inter_broker="SASL_SSL") as secure:
        cluster = secure.cluster
        admin_settings = secure.librdkafka("admin")
        admin = AdminClient(admin_settings)
        admin.create_topics([NewTopic(TOPIC, 3, 3)])[TOPIC].result(60)

        def partitions():        # Metadata as admin: anonymous clients may not Describe
            return admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions

        def leader_of(partition: int) -> int:
            return partitions()[partition].leader

        def full_isr():
            parts = partitions()
            return len(parts) == 3 and all(len(p.isrs) == 3 and p.leader > 0
                                           for p in parts.values())
        wait_until(full_isr, 60, "every replica of every partition in sync")
        first = [b"before-%d" % i for i in range(50)]
        assert produce_all(admin_settings, first, 0) == [None] * 50
        wait_until(full_isr, 60, "followers caught up over SASL_SSL")

        leader = leader_of(0)
        cluster.kill(leader)
        wait_until(lambda: leader_of(0) not in (-1, leader), 60,
                   f"a new leader after killing broker {leader}")
        second = [b"after-%d" % i for i in range(50)]
        assert produce_all(admin_settings, second, 0) == [None] * 50
        assert read_all(admin_settings, 0, 100) == first + second

        cluster.restart(leader)
        wait_until(full_isr, 90, f"broker {leader} back in every ISR")
        log = open(cluster.brokers[leader].log_path).read()
        assert "CLUSTER_AUTHORIZATION_FAILED" not in log and "not authorized" not in log
