"""A partition leader cut from its followers, but not from ZooKeeper (nor from clients).

The leader's session stays alive, so the controller keeps it as leader; the followers cannot
fetch, so after replica.lag.time.max.ms the leader shrinks the ISR to itself (a ZooKeeper write
that works). With min.insync.replicas=2 it then refuses acks=all writes with NOT_ENOUGH_REPLICAS
(acks=1 still works). After the heal the followers catch up and rejoin the ISR, and the
Jepsen-style checks hold: every acknowledged record read back at its offset, order per
partition, identical replica logs below the high watermark.

The followers include the controller here (3 brokers, replication factor 3), so the leader is
also cut from the controller: nothing but its own ZooKeeper writes tells the cluster about it.
"""

from __future__ import annotations

import pytest

from kafkalite import errors
from kafkalite.local.cluster import wait_until

from replication_tools import jepsen_problems, start_acks_all_traffic, step_printer, try_produce

pytestmark = [pytest.mark.system]

TOPIC, PARTITIONS = "cut-from-followers", 3


def test_leader_cut_from_followers_shrinks_isr_and_refuses_acks_all(fault_cluster_factory):
    cluster = fault_cluster_factory(3)
    kafka = cluster.kafka
    step = step_printer()

    producer = start_acks_all_traffic(kafka.bootstrap_servers, TOPIC, PARTITIONS)
    controller = cluster.controller_id()
    leaders = {p: kafka.wait_for_leader(TOPIC, p) for p in range(PARTITIONS)}
    partition, leader = next((p, leader) for p, leader in leaders.items() if leader != controller)
    followers = [b for b in kafka.brokers if b != leader]
    before = cluster.partition_state(TOPIC, partition)
    step(f"partition {partition}: leader {leader}, ISR {before.isr}; controller {controller}")

    cluster.cut(leader, followers)
    wait_until(lambda: list(cluster.partition_state(TOPIC, partition).isr) == [leader], 60,
               f"leader {leader} to shrink the ISR to itself")
    during = cluster.partition_state(TOPIC, partition)
    assert during.leader == leader and during.leader_epoch == before.leader_epoch, \
        f"leadership moved although the leader kept its ZooKeeper session: {during}"
    assert leader in cluster.registered_brokers()
    step(f"cut from followers {followers}: ISR shrank to [{leader}], leader unchanged")

    address = kafka.brokers[leader].address
    offset, error = try_produce(address, TOPIC, partition, b"acks-all-alone", timeout_s=10)
    assert offset is None and isinstance(error, errors.NotEnoughReplicasError), \
        f"acks=all with an ISR of one: offset {offset}, error {error!r}"
    offset, error = try_produce(address, TOPIC, partition, b"acks-1-alone", acks=1, timeout_s=10)
    assert error is None and offset is not None, f"acks=1 refused: {error!r}"
    step(f"acks=all refused with NOT_ENOUGH_REPLICAS; acks=1 accepted at offset {offset}")

    cluster.heal()
    wait_until(lambda: sorted(cluster.partition_state(TOPIC, partition).isr) ==
               sorted(kafka.brokers), 60, "the followers back in the ISR")
    step("healed: the followers caught up and rejoined the ISR")
    acked = producer.acked_count()
    wait_until(lambda: producer.acked_since(acked) > 200, 60, "acks=all writes again")
    producer.stop()
    records, problems = jepsen_problems(kafka, TOPIC, PARTITIONS, producer.acknowledged)
    step(f"sent {producer.sent}, acknowledged {len(producer.acknowledged)}, read "
         f"{len(records)}, failed sends {dict(producer.failure_kinds())}")
    # the producer retries until delivery.timeout (120 s): a failed send is a failure here
    assert not producer.failed, f"sends failed: {dict(producer.failure_kinds())}"
    assert not problems, "\n".join(problems[:20])
    values = {r.value for r in records}
    assert b"acks-1-alone" in values and b"acks-all-alone" not in values
