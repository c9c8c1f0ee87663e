"""A LeaderAndIsr replayed by a client with every claim ZooKeeper backs (issue 24).

The fuzz case: a mutated copy of the controller's own LeaderAndIsr, sent over a client connection
with the real controller id, controller epoch and broker epoch, is admitted (it is, in all it
claims, the controller's) -- but its partition state is at the leader epoch the partition already
has, so Kafka 2.8's ReplicaManager ignores it ("matches the current leader epoch") and answers
STALE_CONTROLLER_EPOCH for the partition. Here it named ISR [33], a broker that does not exist:
applied, it stopped the leader's high watermark and acks=1 records were acknowledged but never
readable. Records are written and read back with confluent-kafka (librdkafka, Kafka's protocol).
"""

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka import TopicPartition as ConfluentTopicPartition

from kafkalite.errors import StaleControllerEpochError
from kafkalite.local.cluster import request, wait_until
from kafkalite.protocol import messages as m
from kafkalite.zk import ZkClient

pytestmark = pytest.mark.system

TOPIC = "fz"


@pytest.fixture
def cluster(kafkalite_cluster_factory):
    return kafkalite_cluster_factory(2)


@pytest.fixture
def zk(cluster):
    client = ZkClient(cluster.zk_connect).start()
    yield client
    client.stop()


def produce_acks_1(bootstrap: str, values: list[bytes]) -> list[tuple[int, bytes]]:
    """Send with acks=1; return (offset, value) of every acknowledged record (none may fail)."""
    producer = ConfluentProducer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0})
    acked, failed = [], []

    def report(err, msg):
        (failed if err else acked).append((err, msg.offset(), msg.value()))
    for value in values:
        producer.produce(TOPIC, value=value, partition=0, on_delivery=report)
    assert producer.flush(30) == 0
    assert not failed, failed
    return [(offset, value) for _err, offset, value in acked]


def read_back(bootstrap: str, wanted_end: int) -> list[tuple[int, bytes]]:
    """Every record of fz-0 once its high watermark reaches ``wanted_end``."""
    consumer = ConfluentConsumer({"bootstrap.servers": bootstrap, "group.id": "fz-read-back",
                                 "enable.auto.commit": False})
    try:
        tp = ConfluentTopicPartition(TOPIC, 0)
        wait_until(lambda: consumer.get_watermark_offsets(tp, timeout=5)[1] >= wanted_end, 20,
                   f"the high watermark of {TOPIC}-0 to reach {wanted_end} (the acknowledged "
                   "records to become readable)")
        consumer.assign([ConfluentTopicPartition(TOPIC, 0, 0)])
        got = []
        wait_until(lambda: got.extend((msg.offset(), msg.value())
                                      for msg in consumer.consume(100, 0.2)
                                      if msg.error() is None) or len(got) >= wanted_end,
                   30, f"{wanted_end} records")
        return sorted(got)
    finally:
        consumer.close()


def replayed_leader_and_isr(zk, cluster, leader: int) -> m.LeaderAndIsrRequest:
    """The controller's LeaderAndIsr for fz-0, as ZooKeeper backs it, with the ISR mutated."""
    state = zk.get_partition_state(TOPIC, 0)
    return m.LeaderAndIsrRequest(
        controller_id=zk.get_controller_id(), controller_epoch=zk.get_controller_epoch().epoch,
        broker_epoch=zk.get_broker(leader).broker_epoch, partition_states=[
            m.LeaderAndIsrPartitionState(TOPIC, 0, state.controller_epoch, state.leader,
                                         state.leader_epoch, [33], state.zk_version, [1, 2])],
        live_leaders=[m.LeaderAndIsrLiveLeader(leader, "127.0.0.1",
                                               cluster.brokers[leader].port)])


def test_replayed_leader_and_isr_at_the_same_leader_epoch_is_ignored(cluster, zk):
    zk.create_topic(TOPIC, {0: [1, 2]})
    leader = cluster.wait_for_leader(TOPIC, 0)
    wait_until(lambda: sorted(zk.get_partition_state(TOPIC, 0).isr) == [1, 2], 30,
               "both replicas in the ISR")
    before = zk.get_partition_state(TOPIC, 0)
    acknowledged = produce_acks_1(cluster.bootstrap_servers, [b"before-%d" % i for i in range(2)])

    forged = replayed_leader_and_isr(zk, cluster, leader)
    answer = request("127.0.0.1", cluster.brokers[leader].port, forged)

    acknowledged += produce_acks_1(cluster.bootstrap_servers, [b"after-%d" % i for i in range(2)])
    assert read_back(cluster.bootstrap_servers, len(acknowledged)) == sorted(acknowledged)
    assert answer.error_code == 0, answer
    assert answer.partition_errors == [
        m.PartitionError(TOPIC, 0, StaleControllerEpochError.code)], answer
    assert "matches the current leader epoch" in cluster.brokers[leader].log_tail(400)
    after = zk.get_partition_state(TOPIC, 0)
    assert (after.leader, after.leader_epoch, after.isr) == \
        (before.leader, before.leader_epoch, before.isr)
    for broker in (1, 2):
        seen = cluster.partition_metadata(TOPIC, 0, brokers=[broker])
        assert sorted(seen.isr) == [1, 2], (broker, seen)
