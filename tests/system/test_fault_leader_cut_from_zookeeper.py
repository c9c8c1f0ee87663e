"""A partition leader cut from ZooKeeper, still reachable by clients and by its followers.

Its ZooKeeper session expires (ZooKeeper's side of the cut), the controller moves leadership to
another in-sync replica, and the followers leave the old leader for the new one. The old leader
still believes it leads, but it cannot shrink its ISR (that is a ZooKeeper write), so it must not
acknowledge an acks=all write it cannot replicate: such a send gets NOT_ENOUGH_REPLICAS, a
timeout or NOT_LEADER. After the heal it finds its session gone, registers again, truncates to
the new leader's epoch and rejoins the ISR. Then, Jepsen-style: every acknowledged record is read
back at its offset, order holds per partition, and the replicas' logs are identical below the
high watermark (after the second fault below, which the producer runs through too).

Then, before that read-back, the broker that is both the controller and a partition leader is cut
from ZooKeeper (issue 24, bug 6): its session expires, another broker becomes controller and
moves the partitions away from it, and confluent-kafka (an independent client, bootstrapped from
the other brokers) has an acks=all record acknowledged by each new leader and reads it back there.
No time is asserted: each step waits for its condition (bench/zk_cut_failover.py and the chaos
bench's leader-controller-cut-zk row time it).

3 brokers in network namespaces, a 3-node ZooKeeper ensemble, topic with 3 partitions,
replication factor 3, min.insync.replicas=2, a background producer with acks=all throughout.
"""

from __future__ import annotations

import pytest

from kafkalite import errors
from kafkalite.local.cluster import wait_until

from replication_tools import jepsen_problems, start_acks_all_traffic, step_printer, try_produce

pytestmark = [pytest.mark.system]

TOPIC, PARTITIONS = "cut-from-zk", 3
REFUSALS = (errors.NotEnoughReplicasError, errors.NotEnoughReplicasAfterAppendError,
            errors.RequestTimedOutError, errors.KafkaTimeoutError,
            errors.NotLeaderForPartitionError)


def _leader_seen_by(cluster, broker_id, partition):
    for topic in cluster.broker_metadata(broker_id, [TOPIC]).topics:
        for p in topic.partitions:
            if p.partition == partition:
                return p.leader
    return None


def test_leader_cut_from_zookeeper_acknowledges_nothing_it_cannot_replicate(
        fault_cluster_factory):
    cluster = fault_cluster_factory(3)
    kafka = cluster.kafka
    step = step_printer()

    producer = start_acks_all_traffic(kafka.bootstrap_servers, TOPIC, PARTITIONS)
    controller = cluster.controller_id()
    # a partition led by a broker that is not the controller (that case is the session expiry
    # of the controller, test_fault_session_expiry.py)
    leaders = {p: kafka.wait_for_leader(TOPIC, p) for p in range(PARTITIONS)}
    partition, old_leader = next((p, leader) for p, leader in leaders.items()
                                 if leader != controller)
    before = cluster.partition_state(TOPIC, partition)
    step(f"partition {partition} led by broker {old_leader} (epoch {before.leader_epoch}, "
         f"ISR {before.isr}); controller {controller}")

    cluster.cut(old_leader, "zookeeper")
    wait_until(lambda: old_leader not in cluster.registered_brokers(), 60,
               f"broker {old_leader}'s ZooKeeper session to expire")
    step(f"broker {old_leader} cut from ZooKeeper: session expired")
    after = wait_until(lambda: (lambda s: s if s.leader not in (-1, old_leader) else None)(
        cluster.partition_state(TOPIC, partition)), 60, "the controller to elect another leader")
    assert after.leader_epoch > before.leader_epoch and old_leader not in after.isr
    step(f"controller elected broker {after.leader} (epoch {after.leader_epoch}, ISR {after.isr})")

    # once the followers follow the new leader (their metadata says so: UpdateMetadata comes
    # after LeaderAndIsr), nobody replicates from the old leader; it is still reachable and
    # still thinks it leads, and it must refuse acks=all (before that moment it may
    # legitimately acknowledge: the followers still fetched from it)
    followers = [b for b in kafka.brokers if b != old_leader]
    wait_until(lambda: all(_leader_seen_by(cluster, b, partition) == after.leader
                           for b in followers), 60, "the followers to follow the new leader")
    offset, error = try_produce(kafka.brokers[old_leader].address, TOPIC, partition,
                                b"sent-to-the-old-leader", timeout_s=10)
    assert offset is None, (f"broker {old_leader}, cut from ZooKeeper and from its followers' "
                            f"fetches, acknowledged an acks=all write at offset {offset}")
    assert isinstance(error, REFUSALS), f"unexpected answer: {error!r}"
    step(f"the old leader refused acks=all: {type(error).__name__}")
    acked = producer.acked_count()
    wait_until(lambda: producer.acked_since(acked) > 200, 60, "writes through the new leader")
    step("the producer goes on through the new leader")

    cluster.heal()
    wait_until(lambda: old_leader in cluster.registered_brokers(), 60,
               f"broker {old_leader} to register again")
    wait_until(lambda: old_leader in cluster.partition_state(TOPIC, partition).isr, 60,
               f"broker {old_leader} back in the ISR of partition {partition}")
    step(f"healed: broker {old_leader} registered again and rejoined the ISR")
    _cut_the_leading_controller(cluster, step)     # the producer still going: judged below too
    producer.stop()
    records, problems = jepsen_problems(kafka, TOPIC, PARTITIONS, producer.acknowledged)
    step(f"sent {producer.sent}, acknowledged {len(producer.acknowledged)}, read "
         f"{len(records)}, failed sends {dict(producer.failure_kinds())}")
    assert not problems, "\n".join(problems[:20])
    assert b"sent-to-the-old-leader" not in {r.value for r in records}


def _controller_leads(cluster):
    """The controller and the partitions it leads (ZooKeeper's view), after a preferred-leader
    election through confluent-kafka when it leads none (an earlier step moved its leadership)."""
    from confluent_kafka import ElectionType, TopicPartition as CkTopicPartition
    from confluent_kafka.admin import AdminClient

    controller = wait_until(cluster.controller_id, 60, "a controller")

    def led():
        return [p for p in range(PARTITIONS)
                if cluster.partition_state(TOPIC, p).leader == controller]
    if not led():
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.elect_leaders(ElectionType.PREFERRED, [CkTopicPartition(TOPIC, p)
                                                     for p in range(PARTITIONS)]).result(60)
        wait_until(led, 60, f"controller {controller} to lead a partition after the election")
    return controller, led()


def _acknowledged_by_new_leader(bootstrap, partition, value):
    """One acks=all record to ``partition`` through confluent-kafka: ``(offset,)``, or None."""
    from confluent_kafka import Producer

    outcome = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "message.timeout.ms": 5000, "log_level": 0})
    producer.produce(TOPIC, value, partition=partition,
                     on_delivery=lambda err, msg: outcome.append(None if err else (msg.offset(),)))
    producer.flush(10)
    return outcome[0] if outcome else None


def _read_at(bootstrap, partition, offset):
    from confluent_kafka import Consumer, TopicPartition as CkTopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cut-from-zk-check",
                         "enable.auto.commit": False, "log_level": 0})
    try:
        consumer.assign([CkTopicPartition(TOPIC, partition, offset)])
        msg = wait_until(lambda: (lambda m: m if m is not None and m.error() is None else None)(
            consumer.poll(1.0)), 60, f"the record at {partition}:{offset}")
        return msg.value()
    finally:
        consumer.close()


def _cut_the_leading_controller(cluster, step):
    """The controller, leading partitions, cut from ZooKeeper: the others elect a controller
    and new leaders, which serve confluent-kafka; after the heal it rejoins."""
    kafka = cluster.kafka
    controller, led = _controller_leads(cluster)
    step(f"broker {controller} is the controller and leads partitions {led}")
    cluster.cut(controller, "zookeeper")
    new_controller = wait_until(lambda: (lambda c: c if c not in (None, controller) else None)(
        cluster.controller_id()), 60, f"another controller than broker {controller}")
    moved = wait_until(lambda: (lambda s: s if all(s[p] not in (-1, controller) for p in led)
                                else None)({p: cluster.partition_state(TOPIC, p).leader
                                            for p in led}), 60,
                       f"new leaders for partitions {led}")
    step(f"cut from ZooKeeper: broker {new_controller} is the controller, new leaders {moved}")
    # bootstrapped from the others: the cut broker's own metadata still names itself (and it
    # holds acks=all writes until they time out, as Kafka 2.8's deposed leader does)
    survivors = ",".join(kafka.brokers[b].address for b in kafka.brokers if b != controller)
    for p in led:
        value = b"after-the-controller-cut-%d" % p
        (offset,) = wait_until(lambda p=p, value=value: _acknowledged_by_new_leader(
            survivors, p, value), 60, f"confluent-kafka acks=all on partition {p}'s new leader")
        assert cluster.partition_state(TOPIC, p).leader == moved[p]
        assert _read_at(survivors, p, offset) == value
    step(f"confluent-kafka wrote to and read back from the new leaders of {led}")
    cluster.heal()
    wait_until(lambda: all(controller in cluster.partition_state(TOPIC, p).isr
                           for p in range(PARTITIONS)), 60,
               f"broker {controller} back in every ISR after the heal")
    step(f"healed: broker {controller} rejoined every ISR")
