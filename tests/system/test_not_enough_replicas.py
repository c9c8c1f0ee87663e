"""acks=all against min.insync.replicas, with real brokers: two replicas, min.insync.replicas 2.

- NOT_ENOUGH_REPLICAS_AFTER_APPEND (20): the follower is stopped (SIGSTOP) just before an acks=all
  Produce. The leader appends (the ISR still has both), then the follower falls out of the ISR
  (replica.lag.time.max.ms) while the request waits: the answer must be error 20 (or a request
  timeout), never success. The record stays in the leader's log, as in Kafka: the error tells
  the producer that it was written but not to enough replicas.
- NOT_ENOUGH_REPLICAS (19): with the ISR already down to the leader, an acks=all Produce is
  refused before anything is appended: the leader's log does not grow.
- once the follower is back in the ISR, acks=all succeeds again.

Each Produce is one request straight to the leader (no client retries in between).
"""

from __future__ import annotations

import pytest

from kafkalite import AdminClient, NewTopic
from kafkalite.errors import (NotEnoughReplicasAfterAppendError, NotEnoughReplicasError,
                              RequestTimedOutError)
from kafkalite.local.cluster import wait_until

from raw_partition_tools import partition_as_seen_by, produce_raw, replica_records

pytestmark = [pytest.mark.system]

TOPIC = "min-isr"
LAG_MS = 2000


def _isr_as_leader_sees_it(cluster, leader) -> list[int]:
    return sorted(partition_as_seen_by(cluster.brokers[leader], TOPIC, 0).isr)


def test_acks_all_below_min_insync_replicas(kafkalite_cluster_factory):
    # a long ZooKeeper session: the stopped follower stays registered (it is only slow)
    cluster = kafkalite_cluster_factory(2, replica_lag_time_max_ms=LAG_MS,
                                        zookeeper_session_timeout_ms=20000)
    leader, follower = sorted(cluster.brokers)
    with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(TOPIC, replica_assignments={0: [leader, follower]},
                                      topic_configs={"min.insync.replicas": "2"})])
    both = sorted([leader, follower])
    wait_until(lambda: partition_as_seen_by(cluster.brokers[leader], TOPIC, 0).leader == leader
               and _isr_as_leader_sees_it(cluster, leader) == both, 30, "both replicas in sync")
    first = produce_raw(cluster.brokers[leader], TOPIC, 0, [b"both-have-it"])
    assert first.error_code == 0, first

    # stop the follower right before the request: the leader appends while the ISR has both,
    # then shrinks it after LAG_MS while the request waits for the follower
    outcome = None
    for attempt in range(3):
        cluster.pause(follower)
        try:
            outcome = produce_raw(cluster.brokers[leader], TOPIC, 0, [b"after-append-%d" % attempt],
                                  timeout_ms=LAG_MS * 10)
        except BaseException:
            cluster.resume(follower)
            raise
        if outcome.error_code != NotEnoughReplicasError.code:
            break
        # the ISR shrank before the append (a very slow machine): let it grow back, again
        cluster.resume(follower)
        wait_until(lambda: _isr_as_leader_sees_it(cluster, leader) == both, 60, "ISR back")
    try:
        print(f"\nacks=all while the ISR shrank below min.insync.replicas: {outcome}")
        assert outcome.error_code != 0, "acks=all acknowledged with only the leader in sync"
        assert outcome.error_code in (NotEnoughReplicasAfterAppendError.code,
                                      RequestTimedOutError.code), outcome
        # (metadata shows the shrink once the controller has passed on the ISR change)
        wait_until(lambda: _isr_as_leader_sees_it(cluster, leader) == [leader], 30,
                   "the shrunk ISR published")
        leader_log = [v for _o, v in replica_records(cluster.brokers[leader], TOPIC, 0)]
        assert leader_log == [b"both-have-it", b"after-append-%d" % attempt], \
            "the leader appended the record before the ISR shrank: it stays in its log"

        refused = produce_raw(cluster.brokers[leader], TOPIC, 0, [b"never-appended"])
        print(f"acks=all with the ISR already too small: {refused}")
        assert refused.error_code == NotEnoughReplicasError.code, refused
        assert [v for _o, v in replica_records(cluster.brokers[leader], TOPIC, 0)] == leader_log
    finally:
        cluster.resume(follower)

    wait_until(lambda: _isr_as_leader_sees_it(cluster, leader) == both, 60,
               "the follower back in the ISR")
    again = produce_raw(cluster.brokers[leader], TOPIC, 0, [b"in-sync-again"])
    assert again.error_code == 0, again
    wait_until(lambda: replica_records(cluster.brokers[follower], TOPIC, 0) ==
               replica_records(cluster.brokers[leader], TOPIC, 0), 30,
               "the follower's log equal to the leader's")
