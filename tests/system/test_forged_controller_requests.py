"""Controller requests (LeaderAndIsr, UpdateMetadata, StopReplica) forged by an ordinary client.

A broker takes them only from the broker ZooKeeper names as controller, at the epoch ZooKeeper
holds, addressed to this broker's current registration (its broker epoch). A claimed epoch the
broker cannot confirm in ZooKeeper is refused and logged, and nothing changes: every acknowledged
record stays readable and ZooKeeper's view of the partition is untouched.
"""

import pytest

from kafkalite import Consumer, Producer, TopicPartition
from kafkalite.errors import (NotControllerError, StaleBrokerEpochError,
                              StaleControllerEpochError)
from kafkalite.protocol import messages as m
from kafkalite.local.cluster import request, wait_until
from kafkalite.zk import ZkClient

pytestmark = pytest.mark.system

TOPIC = "forged"
REFUSED = {StaleControllerEpochError.code, NotControllerError.code, StaleBrokerEpochError.code}


@pytest.fixture
def cluster(kafkalite_cluster_factory):
    return kafkalite_cluster_factory(3)


@pytest.fixture
def zk(cluster):
    client = ZkClient(cluster.zk_connect).start()
    yield client
    client.stop()


@pytest.fixture
def acknowledged(cluster, zk):
    return produce_acknowledged(cluster, zk)


def produce_acknowledged(cluster, zk):
    zk.create_topic(TOPIC, {0: [1, 2, 3], 1: [2, 3, 1]})
    wait_until(lambda: all(cluster.partition_metadata(TOPIC, p).leader >= 0 for p in (0, 1)),
               30, "leaders for the topic")
    producer = Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=0)
    sent = [producer.send(TOPIC, value=b"v%d" % i, partition=i % 2) for i in range(200)]
    producer.flush(30)
    producer.close()
    return sorted((f.get(10).partition, f.get(10).offset, b"v%d" % i) for i, f in enumerate(sent))


def read_all(cluster, acknowledged, partitions=(0, 1)):
    """Every record of the topic, once the end offsets cover ``acknowledged`` (after a failover
    the new leader learns the high watermark from its followers' next fetches)."""
    consumer = Consumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False)
    tps = [TopicPartition(TOPIC, p) for p in partitions]
    consumer.assign(tps)
    consumer.seek_to_beginning()
    wanted = {p: 1 + max(o for q, o, _v in acknowledged if q == p) for p in partitions}
    ends = wait_until(lambda: (lambda e: e if all(e[tp] >= wanted[tp.partition] for tp in tps)
                               else None)(consumer.end_offsets(tps)),
                      30, f"end offsets covering {wanted}")
    got = []
    want = sum(ends.values())
    wait_until(lambda: got.extend((r.partition, r.offset, r.value)
                                  for batch in consumer.poll(timeout_ms=200).values()
                                  for r in batch) or len(got) >= want,
               30, f"{want} records")
    consumer.close()
    return sorted(got)


def leader_port(cluster, partition):
    return cluster.brokers[cluster.leader_of(TOPIC, partition)].port


def states(zk):
    return {p: zk.get_partition_state(TOPIC, p) for p in (0, 1)}


def real_epoch(zk):
    return zk.get_controller_epoch().epoch


def forged_leader_and_isr(leader_id, controller_id, controller_epoch, broker_epoch=-1):
    return m.LeaderAndIsrRequest(
        controller_id=controller_id, controller_epoch=controller_epoch,
        broker_epoch=broker_epoch, partition_states=[
            m.LeaderAndIsrPartitionState(TOPIC, 0, controller_epoch, 99, 50, [99], 0,
                                         [leader_id, 99])],
        live_leaders=[m.LeaderAndIsrLiveLeader(99, "127.0.0.1", 1)])


def forge_every_claim_zookeeper_does_not_back(cluster, zk):
    leader = cluster.wait_for_leader(TOPIC, 0)
    controller, epoch = zk.get_controller_id(), real_epoch(zk)
    broker_epoch = zk.get_broker(leader).broker_epoch
    return {
        # the issue's reproduction: controller 7 (no such broker) at epoch 33 tells partition 0's
        # leader to follow broker 99
        "no such controller, far higher epoch": forged_leader_and_isr(leader, 7, epoch + 32),
        "real id, higher epoch": forged_leader_and_isr(leader, controller, epoch + 1,
                                                       broker_epoch),
        "other broker, real epoch": forged_leader_and_isr(
            leader, next(b for b in (1, 2, 3) if b != controller), epoch, broker_epoch),
        "real id and epoch, stale broker epoch": forged_leader_and_isr(
            leader, controller, epoch, broker_epoch - 1),
        "real id and epoch, no broker epoch": forged_leader_and_isr(leader, controller, epoch),
    }


def test_forged_controller_requests_change_nothing(cluster, zk, acknowledged):
    before = states(zk)
    leader0 = cluster.wait_for_leader(TOPIC, 0)
    for claim, forged in forge_every_claim_zookeeper_does_not_back(cluster, zk).items():
        answer = request("127.0.0.1", leader_port(cluster, 0), forged)
        assert answer.error_code in REFUSED, (claim, answer)
        assert states(zk) == before, claim
    assert "refused" in cluster.brokers[leader0].log_tail(400)

    leader1 = cluster.wait_for_leader(TOPIC, 1)
    port = cluster.brokers[leader1].port
    epoch = real_epoch(zk)
    stop = m.StopReplicaRequest(controller_id=7, controller_epoch=epoch + 5,
                                delete_partitions=True,
                                partitions=[m.TopicPartition(TOPIC, 1)])
    assert request("127.0.0.1", port, stop).error_code in REFUSED
    update = m.UpdateMetadataRequest(controller_id=7, controller_epoch=epoch + 5,
                                     partition_states=[], live_brokers=[])
    assert request("127.0.0.1", port, update).error_code in REFUSED
    # the broker still knows its peers (an empty forged UpdateMetadata would have erased them)
    brokers = request("127.0.0.1", port, m.MetadataRequest(topics=[TOPIC])).brokers
    assert sorted(b.node_id for b in brokers) == [1, 2, 3]
    assert states(zk) == before
    assert read_all(cluster, acknowledged) == acknowledged

    # the real controller is still obeyed: a leader's kill moves leadership, nothing is lost
    cluster.kill(leader0)
    wait_until(lambda: cluster.partition_metadata(TOPIC, 0).leader not in (-1, leader0), 60,
               "a new leader elected by the real controller")
    cluster.restart(leader0)
    assert read_all(cluster, acknowledged) == acknowledged


def test_control_plane_listener_is_the_only_door(kafkalite_cluster_factory):
    """control.plane.listener.name (KIP-291): the controller talks to the brokers on CONTROL, so
    even a perfect forgery (the real controller id, epoch and broker epoch) is refused on the
    clients' listener, while the real controller still moves leadership."""
    from kafkalite.local.ports import free_port

    cluster = kafkalite_cluster_factory(3, start=False)
    for broker in cluster.brokers.values():
        broker.overrides.update({
            "listeners": f"PLAINTEXT://127.0.0.1:{broker.port},CONTROL://127.0.0.1:{free_port()}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROL:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "control.plane.listener.name": "CONTROL"})
    cluster.start()
    zk = ZkClient(cluster.zk_connect).start()
    try:
        acknowledged_records = produce_acknowledged(cluster, zk)
        leader = cluster.wait_for_leader(TOPIC, 0)
        perfect = forged_leader_and_isr(leader, zk.get_controller_id(), real_epoch(zk),
                                        zk.get_broker(leader).broker_epoch)
        before = states(zk)
        answer = request("127.0.0.1", leader_port(cluster, 0), perfect)
        assert answer.error_code == NotControllerError.code, answer
        # refused by the API table's listener rule before any handler runs
        assert "controller's listener, not on PLAINTEXT" in answer.error_message
        assert states(zk) == before
        assert read_all(cluster, acknowledged_records) == acknowledged_records
        cluster.kill(leader)
        wait_until(lambda: cluster.partition_metadata(TOPIC, 0).leader not in (-1, leader), 60,
                   "a new leader, told over the CONTROL listener")
        assert read_all(cluster, acknowledged_records) == acknowledged_records
    finally:
        zk.stop()
