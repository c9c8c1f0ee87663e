"""A zombie controller: the controller broker is paused (SIGSTOP) past its ZooKeeper session,
another broker takes over, and then the zombie resumes believing it is still the controller.

On resume it acts on its stale view before it hears that its session is gone (an overdue
leader-imbalance check, an ISR shrink as the partitions' old leader): the test requires its log to
show such an attempt refused, so it cannot pass because nothing happened. It must change nothing:
its ZooKeeper writes fail the /controller_epoch check or the expired session, brokers refuse its
requests (tests/unit/test_controller_deposed.py and test_controller_fencing.py drive those paths
one by one), and, under an acks=all
producer (rf 3, min.insync.replicas 2), every acknowledged record is read back, in order, with
the replicas agreeing byte for byte.
"""

import re

import pytest

from kafkalite.protocol import messages as m
from kafkalite.local.cluster import request, wait_until
from kafkalite.zk import ZkClient

from replication_tools import BackgroundProducer, create_topic, jepsen_problems

pytestmark = pytest.mark.system

TOPIC, PARTITIONS = "zombie", 3
SESSION_MS = 4000
# what ZooKeeper answers a zombie's conditional write: its session is gone, or it was lost in the
# reconnection, or the znode's version moved on under the successor
REFUSALS = {"SessionExpiredError", "ConnectionLoss", "ConnectionLossError", "ZkBadVersionError",
            "BadVersionError", "ZkSessionExpiredError", "ZkConnectionLossError"}


def test_zombie_controller_changes_nothing(kafkalite_cluster_factory):
    cluster = kafkalite_cluster_factory(
        3, zookeeper_session_timeout_ms=SESSION_MS, leader_imbalance_check_interval_seconds=1,
        leader_imbalance_per_broker_percentage=0, replica_lag_time_max_ms=3000)
    zk = ZkClient(cluster.zk_connect).start()
    try:
        create_topic(cluster.bootstrap_servers, TOPIC, PARTITIONS, 3, min_insync_replicas=2)
        zombie = cluster.controller_id()
        wait_until(lambda: all(cluster.leader_of(TOPIC, p) > 0 for p in range(PARTITIONS)), 30,
                   "leaders")
        zombie_epoch = zk.get_controller_epoch().epoch
        producer = BackgroundProducer(cluster.bootstrap_servers, TOPIC).start()
        wait_until(lambda: producer.acked_count() > 300, 60, "acks before the pause")

        cluster.pause(zombie)
        wait_until(lambda: zk.get_controller_id() not in (None, zombie), 60,
                   "another broker to become controller")
        successor, epoch = zk.get_controller_id(), zk.get_controller_epoch().epoch
        assert epoch > zombie_epoch
        wait_until(lambda: all(cluster.leader_of(TOPIC, p) not in (-1, zombie)
                               for p in range(PARTITIONS)), 60, "leadership away from the zombie")
        acked_during_pause = producer.acked_count()
        at_takeover = {p: zk.get_partition_state(TOPIC, p) for p in range(PARTITIONS)}

        cluster.resume(zombie)
        # the zombie learns its session is gone, registers again and becomes a follower
        wait_until(lambda: "ZooKeeper session expired" in cluster.brokers[zombie].log_tail(2000),
                   30, "the zombie to notice its session expired")
        # the zombie did act on its stale view, and was refused: as the old leader of its
        # partitions, its overdue ISR check tried to drop the followers that left it, and the
        # conditional write failed (its session gone, or the successor's version newer)
        said = cluster.brokers[zombie].log_tail(5000)
        refused = re.findall(r"(\S+-\d+): ISR update to \[[\d, ]*\] not written \((\w+)", said)
        assert refused, "the zombie tried nothing, so this test proved nothing:\n" + said[-3000:]
        assert {error for _tp, error in refused} <= REFUSALS, refused
        print(f"\nthe zombie's refused writes: {refused}")
        wait_until(lambda: zombie in zk.get_broker_ids(), 60, "the zombie to register again")
        wait_until(lambda: producer.acked_count() > acked_during_pause + 300, 60,
                   "acks after the resume")
        producer.stop()

        # nothing the zombie did took: the successor still rules at its epoch, and every leader
        # elected since the takeover was elected by the successor (only a controller bumps a
        # leader epoch, and it writes its own controller epoch beside it)
        assert (zk.get_controller_id(), zk.get_controller_epoch().epoch) == (successor, epoch)
        for p in range(PARTITIONS):
            state = zk.get_partition_state(TOPIC, p)
            if state.leader_epoch > at_takeover[p].leader_epoch:
                assert state.controller_epoch == epoch, (p, at_takeover[p], state)
            assert state.leader in cluster.brokers and state.leader in state.isr, (p, state)
        leaders = {p: zk.get_partition_state(TOPIC, p).leader for p in range(PARTITIONS)}
        for broker in cluster.brokers.values():     # every broker heard it, the zombie included
            wait_until(lambda: {t.partition: t.leader for t in request(
                "127.0.0.1", broker.port, m.MetadataRequest(topics=[TOPIC])).topics[0].partitions}
                == leaders, 30, f"broker {broker.broker_id} to agree with ZooKeeper")

        assert not producer.failed or all("NOT_ENOUGH" in str(e) or "imed out" in str(e)
                                          or "NOT_LEADER" in str(e) for _s, e in producer.failed)
        _records, problems = jepsen_problems(cluster, TOPIC, PARTITIONS, producer.acknowledged)
        assert not problems, "\n".join(problems[:20])
    finally:
        zk.stop()
