"""OffsetCommit to a topic that does not exist, through confluent-kafka, on both systems.

Kafka 2.8 answers UNKNOWN_TOPIC_OR_PARTITION for each such partition and stores nothing; a
partition of an existing topic in the same request is committed. kafkalite used to answer success
and keep offsets of a topic that never was (the first difference found with Kafka beside it).
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.testing.oracle_fixtures import SYSTEMS

pytestmark = [pytest.mark.integration]


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_commit_to_unknown_topic_is_refused_per_partition(system):
    name = f"commit-known-{uuid.uuid4().hex[:8]}"
    missing = f"commit-missing-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": system.bootstrap_servers})
    admin.create_topics([NewTopic(name, 1, 3)])[name].result(30)
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": system.bootstrap_servers, "group.id": group,
                         "enable.auto.commit": False})
    try:
        with pytest.raises(KafkaException) as refused:
            consumer.commit(offsets=[TopicPartition(missing, 0, 5)], asynchronous=False)
        assert refused.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART, refused.value

        consumer.commit(offsets=[TopicPartition(name, 0, 7)], asynchronous=False)
        committed = consumer.committed([TopicPartition(name, 0), TopicPartition(missing, 0)],
                                       timeout=30)
        assert [(tp.topic, tp.offset) for tp in committed] == [(name, 7), (missing, -1001)]
    finally:
        consumer.close()
