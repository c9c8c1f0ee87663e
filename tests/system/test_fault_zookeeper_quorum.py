"""ZooKeeper quorum loss and return on a 3-node ensemble, under an acks=all producer.

Two of the three ZooKeeper nodes are killed: the third has no quorum and stops serving, so every
broker loses its ZooKeeper connection. As in Kafka, the brokers keep serving what does not need
ZooKeeper: reads, acks=1 writes, and acks=all writes while the ISR stays as it is. What needs
ZooKeeper (creating a topic) fails with an error. When the two nodes come back the brokers
recover by themselves: all registered, a topic can be created, and a new leader is elected when
a leader is killed. Then the Jepsen-style checks: every acknowledged record read back at its
offset, order per partition, identical replica logs below the high watermark.
"""

from __future__ import annotations

import pytest

from kafkalite import AdminClient, NewTopic
from kafkalite.local.cluster import wait_until

from replication_tools import (create_topic, jepsen_problems, read_all, start_acks_all_traffic,
                               step_printer, try_produce)

pytestmark = [pytest.mark.system]

TOPIC, PARTITIONS = "quorum-loss", 3


def test_brokers_serve_through_quorum_loss_and_recover_after(fault_cluster_factory):
    cluster = fault_cluster_factory(3)
    kafka, ensemble = cluster.kafka, cluster.zookeeper
    step = step_printer()

    producer = start_acks_all_traffic(kafka.bootstrap_servers, TOPIC, PARTITIONS)

    cluster.kill("zk2")
    cluster.kill("zk3")
    wait_until(lambda: ensemble.serving() == [], 60, "zk1 to stop serving without a quorum")
    step("zk2 and zk3 killed: no quorum, no ZooKeeper node serves")

    acked = producer.acked_count()
    wait_until(lambda: producer.acked_since(acked) > 200, 60, "acks=all writes without ZooKeeper")
    for partition in range(PARTITIONS):
        leader = kafka.brokers[kafka.leader_of(TOPIC, partition)]
        offset, error = try_produce(leader.address, TOPIC, partition, b"acks-1-without-zk",
                                    acks=1, timeout_s=10)
        assert error is None, f"acks=1 to partition {partition} refused: {error!r}"
    assert len(read_all(kafka.bootstrap_servers, TOPIC, PARTITIONS, timeout_s=30)) >= acked
    step("acks=all and acks=1 writes and reads go on")

    with AdminClient(bootstrap_servers=kafka.bootstrap_servers, request_timeout_ms=15000) as admin:
        result = admin.create_topics([NewTopic("created-without-quorum", 1, 3)],
                                     timeout_ms=5000, raise_on_error=False)
    error = result["created-without-quorum"]
    assert error is not None, "a topic was created while ZooKeeper had no quorum"
    assert "ZooKeeper" in str(error), f"the error does not say ZooKeeper is the cause: {error}"
    step(f"topic creation refused: {type(error).__name__}: {error}")

    cluster.restart("zk2", wait=False)
    cluster.restart("zk3", wait=False)
    wait_until(lambda: len(ensemble.serving()) == 3, 90, "the quorum back")
    wait_until(lambda: sorted(cluster.registered_brokers()) == sorted(kafka.brokers), 60,
               "every broker registered")
    step("quorum back; every broker registered")
    create_topic(kafka.bootstrap_servers, "created-after-quorum", 1, 3)
    victim = kafka.wait_for_leader(TOPIC, 0)
    kafka.kill(victim)
    wait_until(lambda: kafka.leader_of(TOPIC, 0) not in (-1, victim), 60,
               "a new leader for partition 0")
    step(f"topic created; broker {victim} killed, partition 0 now led by "
         f"{kafka.leader_of(TOPIC, 0)}")
    kafka.restart(victim)
    acked = producer.acked_count()
    wait_until(lambda: producer.acked_since(acked) > 200, 60, "writes after the recovery")
    producer.stop()
    records, problems = jepsen_problems(kafka, TOPIC, PARTITIONS, producer.acknowledged)
    step(f"sent {producer.sent}, acknowledged {len(producer.acknowledged)}, read "
         f"{len(records)}, failed sends {dict(producer.failure_kinds())}")
    # the producer retries until delivery.timeout (120 s): a failed send is a failure here
    assert not producer.failed, f"sends failed: {dict(producer.failure_kinds())}"
    assert not problems, "\n".join(problems[:20])
