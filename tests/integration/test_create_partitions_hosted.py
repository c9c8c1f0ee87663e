"""Every partition a broker advertises after CreatePartitions is hosted by its named leader
(issue 24, bug 2): a topic grown from 1 to 64 partitions under a confluent-kafka acks=1
producer, once on a quiet cluster and once with a new leader killed (-9) and restarted right
after the CreatePartitions (its LeaderAndIsr fails or is refused meanwhile). Then every live
broker's metadata lists the 64 partitions with a live leader, and confluent-kafka delivers a
record to each partition with acks=1 (a leader that does not host its partition answers
UNKNOWN_TOPIC_OR_PARTITION until the message times out: the delivery fails)."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kafkalite.local.cluster import request, wait_until
from kafkalite.protocol import messages as m

pytestmark = pytest.mark.integration

PARTITIONS = 64
TIMEOUT_S = 60


def advertised(cluster, topic):
    """{broker: {partition: leader}} of each live broker's own metadata."""
    views = {}
    for broker in cluster.live_brokers():
        response = request("127.0.0.1", broker.port, m.MetadataRequest(
            topics=[topic], allow_auto_topic_creation=False), timeout_s=5.0)
        views[broker.broker_id] = {p.partition: p.leader
                                   for p in response.topics[0].partitions}
    return views


def every_partition_advertised(cluster, topic):
    live = {b.broker_id for b in cluster.live_brokers()}
    views = advertised(cluster, topic)
    return views if all(len(v) == PARTITIONS and set(v.values()) <= live
                        for v in views.values()) else None


def deliver_to_every_partition(bootstrap, topic):
    failures, delivered = [], []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1,
                         "message.timeout.ms": TIMEOUT_S * 1000, "log_level": 0})

    def done(err, msg):
        (failures if err else delivered).append((msg.partition(), err))
    for partition in range(PARTITIONS):
        producer.produce(topic, value=f"p{partition}".encode(), partition=partition,
                         on_delivery=done)
    assert producer.flush(TIMEOUT_S + 10) == 0
    assert failures == []
    assert sorted(p for p, _ in delivered) == list(range(PARTITIONS))


@pytest.mark.parametrize("restart_a_leader", [False, True])
def test_grown_partitions_are_hosted_by_their_advertised_leaders(kafkalite_cluster_factory,
                                                                 restart_a_leader):
    cluster = kafkalite_cluster_factory(3)
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    topic = "grow"
    admin.create_topics([NewTopic(topic, 1, 2)])[topic].result(TIMEOUT_S)
    load = Producer({"bootstrap.servers": bootstrap, "acks": 1, "log_level": 0,
                     "topic.metadata.refresh.interval.ms": 500})
    load_failures = []
    for i in range(200):
        load.produce(topic, value=b"%d" % i,
                     on_delivery=lambda err, _m: err and load_failures.append(err))
    admin.create_partitions([NewPartitions(topic, PARTITIONS)])[topic].result(TIMEOUT_S)
    if restart_a_leader:
        cluster.kill(2)
        cluster.restart(2, wait=False)
    for i in range(200):          # keeps producing while the partitions come
        load.produce(topic, value=b"more-%d" % i,
                     on_delivery=lambda err, _m: err and load_failures.append(err))
        load.poll(0)
    cluster.wait_for_brokers([1, 2, 3], timeout_s=TIMEOUT_S)
    views = wait_until(lambda: every_partition_advertised(cluster, topic), TIMEOUT_S,
                       "every broker advertises 64 partitions with live leaders")
    assert views
    deliver_to_every_partition(bootstrap, topic)
    assert load.flush(TIMEOUT_S + 10) == 0
    assert load_failures == []
