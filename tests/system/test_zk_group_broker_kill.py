"""kill -9 of a broker while a Kafka 0.8 (ZooKeeper-coordinated) consumer group rebalances.

Three brokers, a topic of 6 partitions with replication factor 3 (min.insync.replicas 2), an
acks=all producer running throughout, and group members that are processes of their own
(``group_member.py``: kafkalite's Consumer with ``zookeeper=``, committing after every poll,
logging what they receive).

The rebalance is held open, so that the kill lands inside it for sure: member m1 is stopped
(SIGSTOP, its ZooKeeper session outlives the pause), then m2 joins. m0 and m2 rebalance, but a
partition that moves from m1 to another member cannot be claimed while m1 (stopped) still owns
it. With the rebalance provably unfinished (that partition's owner znode still names m1), the
leader of partition 0 is killed with kill -9; then m1 resumes and the rebalance completes.

- the group settles: every partition owned, by the member the range assignor names, and the
  owner znodes agree with what each member believes;
- no partition is owned by two members at once (a watcher samples the owner znodes throughout,
  and the members' own assigned/revoked intervals never overlap);
- the members keep consuming: every record the producer had acknowledged is delivered to some
  member at least once; a record goes to two members only when a rebalance came between its
  delivery and its commit.

The helpers for members and ownership come from test_consumer_groups (the ZooKeeper group tests).
"""

from __future__ import annotations

import pytest

import os
import signal

from kafkalite.local.cluster import wait_until
from kafkalite.zk import ZkClient

from replication_tools import BackgroundProducer, create_topic
from test_consumer_groups import (
    SETTLE_S,
    Member,
    OwnerWatcher,
    duplicates,
    expected_range,
    overlapping_beliefs,
    owner_map,
    settled,
    wait_started,
)

pytestmark = [pytest.mark.system]

TOPIC, GROUP, PARTITIONS = "zk-group-kill", "zk-group-kill-g", 6


@pytest.fixture
def spawn(zk_connect, tmp_path):
    """``spawn(name) -> Member`` of GROUP on TOPIC; every member is ended afterwards."""
    started: list[Member] = []

    def start(name: str) -> Member:
        # a ZooKeeper session that outlives the member's pause below
        member = Member(zk_connect, GROUP, TOPIC, tmp_path / name, "--process-ms", "1",
                        "--session-timeout-ms", "20000")
        started.append(member)
        return member

    yield start
    for member in started:
        if member.alive:
            os.kill(member.proc.pid, signal.SIGCONT)
            member.proc.kill()
            member.proc.wait()


def revocations(member: Member) -> int:
    return sum(1 for ev in member.events() if ev["ev"] == "revoked")


def delivered(members) -> set:
    return {(tp[1], offset) for m in members for _t, tp, offset in m.delivered()}


def test_broker_killed_during_a_zookeeper_group_rebalance(kafkalite_cluster_factory, zk_connect,
                                                          spawn):
    cluster = kafkalite_cluster_factory(3, zookeeper_session_timeout_ms=3000,
                                        zookeeper_connection_timeout_ms=15000,
                                        replica_lag_time_max_ms=5000)
    create_topic(cluster.bootstrap_servers, TOPIC, PARTITIONS, 3, min_insync_replicas=2)
    wait_until(lambda: all(len(cluster.partition_metadata(TOPIC, p).isr) == 3
                           for p in range(PARTITIONS)), 30, "every partition fully in sync")
    zk = ZkClient(zk_connect, session_timeout_ms=10000).start()
    watcher = OwnerWatcher(zk_connect, GROUP)
    # a modest rate (a pause every 2 sends): enough to keep every partition busy
    producer = BackgroundProducer(cluster.bootstrap_servers, TOPIC, keys=60, pace_every=2).start()
    members = [spawn("m0"), spawn("m1")]
    try:
        wait_started(members)
        wait_until(lambda: settled(zk, GROUP, members, expected_range(members, TOPIC, PARTITIONS),
                                   PARTITIONS), SETTLE_S, "two members owning 3 partitions each")
        wait_until(lambda: len(delivered(members)) > 300, 60, "the members consuming")

        m0, m1 = members
        held = {tp for tp, owner in owner_map(zk, GROUP).items() if owner == m1.member_id}
        before = revocations(m0)
        os.kill(m1.proc.pid, signal.SIGSTOP)
        try:
            m2 = spawn("m2")
            members.append(m2)
            wait_started([m2])
            wait_until(lambda: revocations(m0) > before, SETTLE_S,
                       "the join's rebalance under way (m0 gave up its partitions)")
            expected = expected_range(members, TOPIC, PARTITIONS)
            handover = held - set(expected[m1.member_id])
            assert handover, f"m1 keeps all of {sorted(held)}: nothing to hand over"
            owners = owner_map(zk, GROUP)
            assert all(owners.get(tp) == m1.member_id for tp in handover), \
                f"partitions {sorted(handover)} left the stopped m1: {owners}"
            victim = cluster.wait_for_leader(TOPIC, 0)
            cluster.kill(victim)             # the rebalance is unfinished: m1 holds `handover`
            acked_at_kill = producer.acked_count()
            wait_until(lambda: all(cluster.leader_of(TOPIC, p) not in (-1, victim)
                                   for p in range(PARTITIONS)), 30, "new leaders")
        finally:
            os.kill(m1.proc.pid, signal.SIGCONT)

        wait_started(members)
        wait_until(lambda: settled(zk, GROUP, members, expected_range(members, TOPIC, PARTITIONS),
                                   PARTITIONS), SETTLE_S, "three members owning 2 partitions each")
        wait_until(lambda: producer.acked_count() > acked_at_kill + 500, 60,
                   "records acknowledged after the kill")
    finally:
        producer.stop()
        watcher.stop()
    acked = {(p, o) for _k, _s, p, o in producer.acknowledged}
    try:
        wait_until(lambda: acked <= delivered(members), 60,
                   "every acknowledged record delivered to a member",
                   on_timeout=lambda: f"missing {sorted(acked - delivered(members))[:10]}")
        final_owners = settled(zk, GROUP, members, expected_range(members, TOPIC, PARTITIONS),
                               PARTITIONS)
    finally:
        zk.stop()
    excused, unexcused, examples = duplicates(members)
    overlaps = overlapping_beliefs(members)
    contradictions = watcher.contradictions(members)
    print(f"\nkilled broker {victim} during the join's rebalance (partitions "
          f"{sorted(p for _t, p in handover)} still held by the stopped m1); {len(acked)} records "
          f"acknowledged, all delivered; {excused} delivered twice after a rebalance; rebalances "
          f"per member {[len(m.rebalances()) for m in members]}; owner samples "
          f"{len(watcher.samples)}")
    assert final_owners, "the group did not stay settled"
    assert len(watcher.samples) > 20, "the watcher should have sampled the owners throughout"
    assert not watcher.orphans, f"owner znodes of unregistered members: {watcher.orphans[:5]}"
    assert not contradictions, f"members believed they owned another's partition: " \
                               f"{contradictions[:5]}"
    assert not overlaps, f"two members believed they owned a partition at once: {overlaps[:5]}"
    assert not unexcused, f"records delivered twice without a rebalance between: {examples}"
    assert not producer.failed, f"{len(producer.failed)} sends failed: {producer.failed[:3]}"
