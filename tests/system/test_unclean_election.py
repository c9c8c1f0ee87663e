"""Unclean leader election with real brokers: ``unclean.leader.election.enable`` (broker default
false) and its per-topic override.

Three brokers; the partition's replicas are the two that are not the controller, A (leader) and B.
Records acknowledged by both; B stopped (its controlled shutdown takes it out of the ISR); more
records acknowledged by A alone (acks=1); A killed with kill -9; B started again. B is alive but
out of sync, the ISR is [A] and A is dead:

- unclean election not allowed (broker default false; a topic override false over a broker
  default true; an override true altered to false before the failure): the partition stays
  offline, leader -1, even after the controller handled later events; every live broker refuses
  a Produce to it. When A returns it is elected (clean) and nothing acknowledged is lost.
- allowed (the topic override true, given at creation or set while the partition is offline):
  B is elected. The records only A had are lost -- the documented price of unclean election --
  and B takes new records. When A returns it truncates its divergent records and holds what B
  holds.

Overrides altered after the topic's creation count too: the controller reads a topic's override
when it has to elect with no live in-sync replica, and elects at once when an operator switches
unclean election on for an offline partition (as Kafka 2.8 does).
"""

from __future__ import annotations

import pytest

from kafkalite import AdminClient, NewTopic
from kafkalite.errors import (LeaderNotAvailableError, NotLeaderForPartitionError,
                              UnknownTopicOrPartitionError)
from kafkalite.local.cluster import BrokerExitedError, ClusterError, wait_until

from raw_partition_tools import partition_as_seen_by, produce_raw, replica_records
from replication_tools import read_all

pytestmark = [pytest.mark.system]

TOPIC = "unclean"
UNCLEAN = "unclean.leader.election.enable"
FAST_FAILURE = {"zookeeper_session_timeout_ms": 3000, "zookeeper_connection_timeout_ms": 15000}
# (a broker that knows the partition but holds no replica of it answers NOT_LEADER_OR_FOLLOWER,
# as Kafka 2.8; one whose metadata lags, UNKNOWN_TOPIC_OR_PARTITION: refusals clients retry)
REFUSED = {NotLeaderForPartitionError.code, LeaderNotAvailableError.code,
           UnknownTopicOrPartitionError.code}

IN_SYNC = [b"in-sync-%d" % i for i in range(5)]
ONLY_ON_A = [b"only-on-a-%d" % i for i in range(5)]
AFTER = [b"after-election-%d" % i for i in range(5)]

CASES = {
    # id: (broker default, topic override: at creation, altered before the failure, altered
    #      while offline; B elected)
    "broker-default-false": ("false", None, None, None, False),
    "topic-true-over-broker-false": ("false", "true", None, None, True),
    "topic-false-over-broker-true": ("true", "false", None, None, False),
    "topic-altered-to-false-before-failure": ("false", "true", "false", None, False),
    "topic-altered-to-true-while-offline": ("false", None, None, "true", True),
}
class WrongElectionOutcome(AssertionError):
    """The partition did not end up as its unclean election settings say it must."""


def _wait_for_outcome(cluster, condition, what: str) -> None:
    # the controller decides as soon as it learns of the broker or config change; a short bound
    # keeps a wrong outcome from waiting long
    try:
        wait_until(condition, 20, what,
                   on_timeout=lambda: f"it is {cluster.partition_metadata(TOPIC, 0)}")
    except BrokerExitedError:
        raise
    except ClusterError as exc:
        raise WrongElectionOutcome(str(exc)) from None


def _values(records) -> list[bytes]:
    return [r.value for r in sorted(records, key=lambda r: r.offset)]


def _produce_ok(broker, values, acks) -> int:
    answer = produce_raw(broker, TOPIC, 0, values, acks=acks)
    assert answer.error_code == 0, f"broker {broker.broker_id} refused: {answer}"
    return answer.base_offset + len(values) - 1


@pytest.mark.parametrize("broker_default, created_with, altered_before, altered_offline, "
                         "b_elected", list(CASES.values()), ids=list(CASES))
def test_out_of_sync_replica_election(kafkalite_cluster_factory, broker_default, created_with,
                                      altered_before, altered_offline, b_elected):
    cluster = kafkalite_cluster_factory(3, **FAST_FAILURE,
                                        unclean_leader_election_enable=broker_default)
    controller = cluster.controller_id()
    a, b = sorted(set(cluster.brokers) - {controller})
    c = controller
    configs = {UNCLEAN: created_with} if created_with else None
    with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(TOPIC, replica_assignments={0: [a, b]},
                                      topic_configs=configs)])
    wait_until(lambda: (lambda p: p and p.leader == a and sorted(p.isr) == sorted([a, b]))(
        partition_as_seen_by(cluster.brokers[a], TOPIC, 0)), 30, f"leader {a} with {b} in sync")
    if altered_before is not None:
        with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
            assert admin.alter_topic_config(TOPIC, {UNCLEAN: altered_before})[UNCLEAN] == \
                altered_before
    acked = [(0, _produce_ok(cluster.brokers[a], IN_SYNC, acks=-1))]

    cluster.terminate(b)         # a controlled shutdown: the controller takes b out of the ISR
    wait_until(lambda: cluster.partition_metadata(TOPIC, 0).isr == [a], 30, f"ISR [{a}]")
    acked.append((0, _produce_ok(cluster.brokers[a], ONLY_ON_A, acks=1)))
    cluster.kill(a)
    cluster.restart(b)           # alive again, out of sync
    wait_until(lambda: a not in {x.node_id for x in cluster.metadata([]).brokers}, 30,
               f"the controller to see broker {a} gone")

    if altered_offline is not None:
        wait_until(lambda: cluster.leader_of(TOPIC, 0) == -1, 30, "the partition offline")
        with AdminClient(bootstrap_servers=cluster.brokers[c].address) as admin:
            assert admin.alter_topic_config(TOPIC, {UNCLEAN: altered_offline})[UNCLEAN] == \
                altered_offline

    if not b_elected:
        _wait_for_outcome(cluster, lambda: cluster.leader_of(TOPIC, 0) == -1,
                          "the partition offline")
        # a barrier: the controller handles its events in order, so once it has made a later
        # topic's leader it has long decided about this partition
        with AdminClient(bootstrap_servers=cluster.brokers[c].address) as admin:
            admin.create_topics([NewTopic("barrier", replica_assignments={0: [b]})])
        wait_until(lambda: cluster.leader_of("barrier", 0) == b, 30, "the barrier topic's leader")
        state = cluster.partition_metadata(TOPIC, 0)
        assert state.leader == -1 and state.isr == [a], \
            f"out-of-sync replica {b} elected although unclean election is off: {state}"
        for broker_id in (b, c):
            answer = produce_raw(cluster.brokers[broker_id], TOPIC, 0, [b"refused"], acks=1)
            assert answer.error_code in REFUSED, (broker_id, answer)
        # the in-sync replica comes back: a clean election, nothing acknowledged lost
        cluster.restart(a)
        wait_until(lambda: partition_as_seen_by(cluster.brokers[a], TOPIC, 0).leader == a, 30,
                   f"{a} leader again")
        records = read_all(cluster.bootstrap_servers, TOPIC, 1, acknowledged=acked)
        print(f"\noffline while {a} was away; {a} back as leader with {len(records)} records")
        assert _values(records) == IN_SYNC + ONLY_ON_A
        return

    _wait_for_outcome(cluster, lambda: partition_as_seen_by(cluster.brokers[b], TOPIC, 0).leader
                      == b, f"the out-of-sync replica {b} elected (unclean)")
    _produce_ok(cluster.brokers[b], AFTER, acks=1)
    records = read_all(cluster.bootstrap_servers, TOPIC, 1)
    print(f"\nunclean election of {b}: it serves {_values(records)}")
    assert _values(records) == IN_SYNC + AFTER, "B must serve what it had, then the new records"
    # the records only A had are gone (data loss, as documented); A returns and truncates them
    cluster.restart(a)
    wait_until(lambda: replica_records(cluster.brokers[a], TOPIC, 0) ==
               replica_records(cluster.brokers[b], TOPIC, 0), 30,
               f"{a}'s log to equal {b}'s",
               on_timeout=lambda: f"{a}: {replica_records(cluster.brokers[a], TOPIC, 0)}\n"
                                  f"{b}: {replica_records(cluster.brokers[b], TOPIC, 0)}")
    assert [v for _o, v in replica_records(cluster.brokers[a], TOPIC, 0)] == IN_SYNC + AFTER
