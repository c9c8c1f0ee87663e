"""Controller duties with real broker processes: reassignment, preferred election, deletion,
controlled shutdown."""

import os

import pytest

import zk_schema
from kafkalite import Producer
from kafkalite.local.cluster import wait_until
from kafkalite.zk import ZkClient

from replication_tools import create_topic, read_all

pytestmark = pytest.mark.system


@pytest.fixture
def zk(zk_connect):
    client = ZkClient(zk_connect, session_timeout_ms=6000).start()
    yield client
    client.stop()


def _produce(bootstrap, topic, n, partition=0):
    with Producer(bootstrap_servers=bootstrap, acks="all") as producer:
        for i in range(n):
            producer.send(topic, value=b"%d" % i, partition=partition)


def test_partition_reassignment_moves_replicas(kafkalite_cluster_factory, zk):
    cluster = kafkalite_cluster_factory(3)
    bootstrap = cluster.bootstrap_servers
    zk.create_topic("moving", {0: [1, 2]})
    wait_until(lambda: cluster.leader_of("moving", 0) == 1, 30, "leader 1")
    _produce(bootstrap, "moving", 500)
    request = zk_schema.PartitionReassignment({("moving", 0): (3, 2)})
    zk.create(zk_schema.REASSIGN_PARTITIONS_PATH, request.encode())
    wait_until(lambda: not zk.exists(zk_schema.REASSIGN_PARTITIONS_PATH), 60,
               "the reassignment to finish")
    # brokers learn the outcome from the UpdateMetadata that follows the znode's removal
    wait_until(lambda: cluster.partition_metadata("moving", 0).replicas == [3, 2], 30,
               "the brokers' metadata to show the new replicas")
    meta = cluster.partition_metadata("moving", 0)
    assert sorted(meta.isr) == [2, 3] and meta.leader in (2, 3)
    assert zk.get_topic_assignment("moving").partitions[0] == (3, 2)
    wait_until(lambda: not os.path.exists(os.path.join(cluster.brokers[1].log_dir, "moving-0")),
               30, "broker 1 to delete its old replica")
    assert len(read_all(bootstrap, "moving", 1)) == 500


def test_preferred_leader_election_on_demand(kafkalite_cluster_factory, zk):
    cluster = kafkalite_cluster_factory(2, auto_leader_rebalance_enable="false")
    zk.create_topic("pref", {0: [1, 2]})
    wait_until(lambda: cluster.leader_of("pref", 0) == 1, 30, "leader 1")
    cluster.restart(1)                       # leadership moves to 2 while 1 is away
    wait_until(lambda: sorted(cluster.partition_metadata("pref", 0).isr) == [1, 2], 60,
               "broker 1 back in the ISR")
    assert cluster.leader_of("pref", 0) == 2
    election = zk_schema.PreferredReplicaElection((("pref", 0),))
    zk.create(zk_schema.PREFERRED_REPLICA_ELECTION_PATH, election.encode())
    wait_until(lambda: cluster.leader_of("pref", 0) == 1, 30, "the preferred leader back")


def test_controlled_shutdown_moves_leadership_before_stopping(kafkalite_cluster_factory):
    cluster = kafkalite_cluster_factory(2)
    create_topic(cluster.bootstrap_servers, "calm", 4, 2)
    # every broker's metadata must agree first: right after CreateTopics one of them may not
    # have had its UpdateMetadata yet, and would name no leader
    led = [p for p in range(4) if cluster.wait_for_leader("calm", p) == 1]
    assert led
    assert cluster.terminate(1) == 0          # SIGTERM: a clean, controlled shutdown
    log = open(cluster.brokers[1].log_path).read()
    assert "controlled shutdown: leadership moved away" in log
    assert all(cluster.leader_of("calm", p) == 2 for p in range(4))


def test_topic_deletion_removes_logs_everywhere(kafkalite_cluster_factory, zk):
    cluster = kafkalite_cluster_factory(2)
    create_topic(cluster.bootstrap_servers, "doomed", 2, 2)
    _produce(cluster.bootstrap_servers, "doomed", 10)
    zk.mark_topic_for_deletion("doomed")
    wait_until(lambda: not zk.topic_exists("doomed"), 30, "the topic's znodes to go")
    for broker in cluster.brokers.values():
        wait_until(lambda: not any(name.startswith("doomed-")
                                   for name in os.listdir(broker.log_dir)), 30,
                   f"broker {broker.broker_id} to delete the logs")
    assert not zk.exists(zk_schema.delete_topic_path("doomed"))


def test_broker_re_registers_after_its_session_expires(kafkalite_cluster_factory, zk):
    cluster = kafkalite_cluster_factory(2)
    create_topic(cluster.bootstrap_servers, "again", 1, 2)
    victim = next(b for b in cluster.brokers if b != cluster.controller_id())
    cluster.pause(victim)                     # frozen: its ZooKeeper session times out
    try:
        wait_until(lambda: victim not in zk.get_broker_ids(), 60,
                   f"/brokers/ids/{victim} to vanish with the expired session")
    finally:
        cluster.resume(victim)
    wait_until(lambda: victim in zk.get_broker_ids(), 60, f"broker {victim} to re-register")
    wait_until(lambda: sorted(cluster.partition_metadata("again", 0).isr) == [1, 2], 60,
               f"broker {victim} back in the ISR")
    log = open(cluster.brokers[victim].log_path).read()
    assert "ZooKeeper session expired" in log and "registering again" in log
