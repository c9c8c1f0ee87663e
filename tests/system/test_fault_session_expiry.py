"""ZooKeeper session expiry under load, for each role that holds a session.

- a plain broker (a partition leader, not the controller), frozen with SIGSTOP until ZooKeeper
  expires its session (a long GC pause): its partitions move; resumed, it finds its session gone,
  registers again, follows the new leaders and rejoins the ISR;
- the controller, cut from ZooKeeper until /controller names another broker: the other brokers
  follow the new controller; after the heal the old one has stepped down (it says so, and its
  own metadata names the new controller), and the new controller handles a broker failure;
- a member of a Kafka 0.8 ZooKeeper consumer group (kafkalite's Consumer with ``zookeeper=``),
  whose session is expired with the session-id trick: it stops consuming at once, the group
  rebalances, no partition is ever held by two members, and every acknowledged record is consumed.

Each runs under an acks=all producer (replication factor 3, min.insync.replicas=2) and ends with
the Jepsen-style checks (every acknowledged record read back at its offset, order per partition,
identical replica logs below the high watermark). Waits are on conditions only: a fault lasts
until the session is seen expired, never for a fixed time.
"""

from __future__ import annotations

import time

import pytest

from kafkalite.local.cluster import wait_until
from kafkalite.local.zookeeper import expire_session

from replication_tools import BackgroundProducer, create_topic, jepsen_problems

pytestmark = [pytest.mark.system]

PARTITIONS = 3


class Steps:
    def __init__(self):
        self.started = time.monotonic()

    def __call__(self, what):
        print(f"  {time.monotonic() - self.started:6.1f} s  {what}")


def _start(cluster, topic):
    create_topic(cluster.kafka.bootstrap_servers, topic, PARTITIONS, 3, min_insync_replicas=2)
    producer = BackgroundProducer(cluster.kafka.bootstrap_servers, topic, pace_every=2).start()
    wait_until(lambda: producer.acked_count() > 300, 60, "300 acknowledged records")
    return producer


def _finish(cluster, topic, producer, step):
    acked = producer.acked_count()
    wait_until(lambda: producer.acked_since(acked) > 200, 60, "writes after the recovery")
    producer.stop()
    records, problems = jepsen_problems(cluster.kafka, topic, PARTITIONS, producer.acknowledged)
    step(f"sent {producer.sent}, acknowledged {len(producer.acknowledged)}, read "
         f"{len(records)}, failed sends {dict(producer.failure_kinds())}")
    # the producer retries until delivery.timeout (120 s): a failed send is a failure here
    assert not producer.failed, f"sends failed: {dict(producer.failure_kinds())}"
    assert not problems, "\n".join(problems[:20])


def test_paused_broker_session_expires_then_it_rejoins(fault_cluster_factory):
    cluster = fault_cluster_factory(3)
    kafka, step, topic = cluster.kafka, Steps(), "expire-broker"
    producer = _start(cluster, topic)
    controller = cluster.controller_id()
    leaders = {p: kafka.wait_for_leader(topic, p) for p in range(PARTITIONS)}
    partition, victim = next((p, leader) for p, leader in leaders.items() if leader != controller)
    led = [p for p, leader in leaders.items() if leader == victim]

    cluster.pause(victim)
    wait_until(lambda: victim not in cluster.registered_brokers(), 60,
               f"broker {victim}'s session to expire while it is frozen")
    wait_until(lambda: all(cluster.partition_state(topic, p).leader not in (-1, victim)
                           for p in led), 60, f"new leaders for partitions {led}")
    step(f"broker {victim} (leader of {led}) frozen: session expired, partitions moved")

    cluster.resume(victim)
    wait_until(lambda: victim in cluster.registered_brokers(), 60,
               f"broker {victim} to register again")
    wait_until(lambda: all(victim in cluster.partition_state(topic, p).isr
                           for p in range(PARTITIONS)), 60, f"broker {victim} back in every ISR")
    step(f"resumed: broker {victim} registered again and rejoined every ISR")
    _finish(cluster, topic, producer, step)


def test_controller_session_expires_and_it_steps_down(fault_cluster_factory):
    cluster = fault_cluster_factory(3)
    kafka, step, topic = cluster.kafka, Steps(), "expire-controller"
    producer = _start(cluster, topic)
    old = cluster.controller_id()
    epoch_before = cluster.controller_epoch()

    cluster.cut(old, "zookeeper")
    new = wait_until(lambda: (lambda c: c if c not in (None, old) else None)(
        cluster.controller_id()), 60, f"another controller than broker {old}")
    others = [b for b in kafka.brokers if b != old]
    wait_until(lambda: all(cluster.broker_metadata(b).controller_id == new for b in others), 60,
               f"brokers {others} to follow controller {new}")
    assert cluster.controller_epoch() > epoch_before
    step(f"controller {old} cut from ZooKeeper: broker {new} took over")

    cluster.heal()
    wait_until(lambda: old in cluster.registered_brokers(), 60, f"broker {old} to register again")
    wait_until(lambda: cluster.broker_metadata(old).controller_id == new, 60,
               f"broker {old} to know controller {new}")
    with open(kafka.brokers[old].log_path) as fh:
        assert f"broker {old}: no longer controller" in fh.read(), \
            f"broker {old} never said it stepped down as controller"
    assert cluster.controller_id() == new
    step(f"healed: broker {old} stepped down and follows controller {new}")

    # the new controller handles a broker failure: leadership moves off a killed broker (the
    # third broker, which kept leading its partition through all this)
    wait_until(lambda: all(len(cluster.partition_state(topic, p).isr) == 3
                           for p in range(PARTITIONS)), 60, "every ISR full again")
    (victim,) = [b for b in kafka.brokers if b not in (old, new)]
    led = [p for p in range(PARTITIONS) if cluster.partition_state(topic, p).leader == victim]
    assert led, f"broker {victim} leads nothing: the failure would test nothing"
    kafka.kill(victim)
    wait_until(lambda: all(cluster.partition_state(topic, p).leader not in (-1, victim)
                           for p in led), 60, f"controller {new} to move {led} off {victim}")
    step(f"broker {victim} killed: controller {new} moved partitions {led}")
    kafka.restart(victim)
    _finish(cluster, topic, producer, step)


def test_consumer_group_member_session_expires_under_load(fault_cluster_factory):
    from kafkalite import Consumer

    cluster = fault_cluster_factory(3)
    kafka, step, topic, group = cluster.kafka, Steps(), "expire-member", "expire-member-g"
    producer = _start(cluster, topic)
    options = dict(group_id=group, zookeeper=cluster.zk_connect, auto_offset_reset="earliest",
                   session_timeout_ms=4000, rebalance_debounce_ms=300, rebalance_backoff_ms=200,
                   fetch_max_wait_ms=100, auto_commit_interval_ms=200)
    members = {"a": Consumer(topic, **options), "b": Consumer(topic, **options)}
    consumed = set()
    double_owned = []

    def poll_round():
        for name, member in members.items():
            for records in member.poll(50).values():
                consumed.update((r.partition, r.offset) for r in records)
        a, b = members["a"].assignment(), members["b"].assignment()
        if a & b:
            double_owned.append((time.monotonic(), sorted(a & b)))
        return a, b

    def settled():
        a, b = poll_round()
        return a and b and len(a | b) == PARTITIONS

    try:
        wait_until(settled, 60, "both members consuming, every partition owned")
        step(f"group settled: a {sorted(p.partition for p in members['a'].assignment())}, "
             f"b {sorted(p.partition for p in members['b'].assignment())}")
        expired = members["a"]
        assert expire_session(expired._coordinator.zk, cluster.zookeeper.connect_string), \
            "member a's client never noticed its session expired"
        expired.poll(0)
        assert expired.assignment() == set(), "member a still consumes after its session expired"
        step("member a's session expired: it dropped its partitions at its next poll")
        wait_until(settled, 60, "the group to rebalance with both members")
        step(f"rebalanced: a {sorted(p.partition for p in members['a'].assignment())}, "
             f"b {sorted(p.partition for p in members['b'].assignment())}")
        producer.stop()
        wanted = {(p, o) for _k, _s, p, o in producer.acknowledged}
        wait_until(lambda: poll_round() and wanted <= consumed, 90,
                   "every acknowledged record consumed by the group",
                   on_timeout=lambda: f"{len(wanted - consumed)} not consumed, e.g. "
                                      f"{sorted(wanted - consumed)[:5]}")
    finally:
        for member in members.values():
            member.close()
    assert not double_owned, f"partitions held by both members: {double_owned[:5]}"
    step(f"acknowledged {len(producer.acknowledged)}, consumed {len(consumed)} distinct "
         f"offsets, never a partition held twice")
    records, problems = jepsen_problems(kafka, topic, PARTITIONS, producer.acknowledged)
    assert not problems, "\n".join(problems[:20])
