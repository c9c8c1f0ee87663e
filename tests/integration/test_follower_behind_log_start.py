"""A follower that comes back behind its leader's log start catches up (Kafka's
``fetchOffsetAndTruncate``), on kafkalite as on Apache Kafka 2.8.2.

While one replica of a partition (rf 3) is down, records are written and DeleteRecords moves the
leader's log start past everything the dead replica holds (Kafka Streams does exactly this to its
repartition topics after each commit). Restarted, its first fetch is out of range; the leader's
answer carries no log start offset, so the follower must ask the leader (ListOffsets) and start
over at its log start. Judged with confluent-kafka: the replica is back in the ISR, and a further
DeleteRecords completes (its low watermark counts the restarted replica's log start).
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.local.cluster import wait_until

pytestmark = [pytest.mark.integration]

SETTINGS = {
    "min.insync.replicas": 2, "default.replication.factor": 3,
    "zookeeper.session.timeout.ms": 3000, "zookeeper.connection.timeout.ms": 15000,
    "replica.lag.time.max.ms": 5000,
}
TOPIC = "behind-log-start"


@pytest.fixture(params=["kafkalite", "kafka"])
def cluster(request: pytest.FixtureRequest, zk_connect: str,
            tmp_path_factory: Any) -> Iterator[Any]:
    if request.param == "kafka":
        from kafkalite.testing.apache_kafka import ApacheKafkaCluster
        from kafkalite.testing.oracle_fixtures import serve_cluster

        made = ApacheKafkaCluster(zk_connect, 3, workdir=str(tmp_path_factory.mktemp("kafka")),
                                  overrides=dict(SETTINGS))
        yield from serve_cluster(request, made)
        return
    factory = request.getfixturevalue("kafkalite_cluster_factory")
    yield factory(3, **{key.replace(".", "_"): value for key, value in SETTINGS.items()})


def _partition(admin: AdminClient):
    return admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[0]


def _produce(bootstrap: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(count):
        producer.produce(TOPIC, value=b"v%d" % i, partition=0)
    assert producer.flush(30) == 0


def _delete_before(admin: AdminClient, offset: int) -> int:
    """DeleteRecords up to ``offset``; the low watermark it answers."""
    futures = admin.delete_records([TopicPartition(TOPIC, 0, offset)], request_timeout=30,
                                   operation_timeout=20)
    (done,) = futures.values()
    return done.result(40).low_watermark


def test_follower_restarted_behind_the_leaders_log_start_catches_up(cluster):
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 3)])[TOPIC].result(30)
    wait_until(lambda: len(_partition(admin).isrs) == 3, 30, "a full ISR")
    _produce(bootstrap, 20)
    part = _partition(admin)
    follower = next(b for b in part.replicas if b != part.leader)

    cluster.kill(follower)
    wait_until(lambda: follower not in _partition(admin).isrs, 30,
               f"broker {follower} out of the ISR")
    _produce(bootstrap, 50)
    assert _delete_before(admin, 70) == 70       # everything the dead replica holds, and more

    cluster.restart(follower)
    wait_until(lambda: follower in _partition(admin).isrs, 30,
               f"the restarted broker {follower} back in the ISR",
               on_timeout=lambda: f"ISR {_partition(admin).isrs}")
    _produce(bootstrap, 10)
    # the low watermark is the smallest log start over the live replicas: the restarted one's
    # must have moved to the leader's
    assert _delete_before(admin, 75) == 75
