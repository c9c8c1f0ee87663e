"""Reassignments and leader elections through the brokers (KIP-455, KIP-460) with real clients
against kafkalite clusters: kafka-python's AlterPartitionReassignments,
ListPartitionReassignments and ElectLeaders, confluent-kafka's elect_leaders, and kafkalite's
own ``reassign`` and ``leader-election`` with ``--bootstrap-server`` alone (no ZooKeeper).

A move that must stay in progress (to list it, to cancel it) targets a broker killed just before
the move starts: its ZooKeeper session (60 s here) keeps it registered, so the controller accepts
the move, which cannot finish; clients connecting to it are refused at once.
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka import ElectionType, TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient as ConfluentAdmin
from kafka import TopicPartition as KTopicPartition
from kafka.admin import KafkaAdminClient

from cli_tools import run, wait_for
from kafkalite.local.cluster import wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]


@pytest.fixture
def cluster(kafkalite_cluster_factory):
    # a long ZooKeeper session: a killed broker stays registered while the test looks
    return kafkalite_cluster_factory(3, zookeeper_session_timeout_ms=60000,
                                     auto_leader_rebalance_enable="false")


def _create(capsys, bs: str, topic: str, assignment: str) -> None:
    code, _, err = run(capsys, "topics", "--create", "--topic", topic, "--replica-assignment",
                       assignment, "--bootstrap-server", bs)
    assert code == 0, err


def _replicas(cluster, topic: str, partition: int = 0) -> list[int]:
    return list(cluster.partition_metadata(topic, partition).replicas)


def _a_follower(cluster) -> tuple[int, tuple[int, int]]:
    """A broker that is not the controller (to kill), and the two others."""
    controller = cluster.controller_id()
    gone = next(b for b in (3, 2, 1) if b != controller)
    return gone, tuple(b for b in (1, 2, 3) if b != gone)


def test_kafka_python_alter_list_cancel_and_elect(cluster, capsys):
    gone, (x, y) = _a_follower(cluster)
    bs = ",".join(cluster.brokers[b].address for b in (x, y))
    _create(capsys, bs, "kp-move", f"{x}:{y},{y}:{x}")
    wait_until(lambda: cluster.leader_of("kp-move", 1) == y, 30, "leaders elected")
    admin = KafkaAdminClient(bootstrap_servers=bs, request_timeout_ms=30000)
    try:
        assert admin.list_partition_reassignments() == {}
        # partition 1 swaps its replicas' order (done at once), partition 0 adds the killed
        # broker (stays in progress)
        cluster.kill(gone)
        accepted = admin.alter_partition_reassignments({
            KTopicPartition("kp-move", 0): [gone, y],
            KTopicPartition("kp-move", 1): [x, y]})
        assert accepted == {KTopicPartition("kp-move", 0): None,
                            KTopicPartition("kp-move", 1): None}
        wait_until(lambda: _replicas(cluster, "kp-move", 1) == [x, y], 30,
                   "partition 1 reordered")
        ongoing = admin.list_partition_reassignments()
        assert ongoing == {KTopicPartition("kp-move", 0): {
            "replicas": [gone, y, x], "adding_replicas": [gone],
            "removing_replicas": [x]}}
        refused = admin.alter_partition_reassignments({
            KTopicPartition("kp-move", 1): None, KTopicPartition("kp-move", 0): [y, y]})
        assert {tp.partition: err.errno for tp, err in refused.items()} == {
            1: 85, 0: 39}      # NO_REASSIGNMENT_IN_PROGRESS, INVALID_REPLICA_ASSIGNMENT
        cancelled = admin.alter_partition_reassignments({KTopicPartition("kp-move", 0):
                                                         None})
        assert cancelled == {KTopicPartition("kp-move", 0): None}
        assert admin.list_partition_reassignments() == {}
        wait_until(lambda: sorted(_replicas(cluster, "kp-move", 0)) == sorted([x, y]), 30,
                   "partition 0's original replicas")
        # partition 1's preferred replica is now x, while y leads: a preferred election
        assert cluster.leader_of("kp-move", 1) == y
        admin.elect_leaders(0, {"kp-move": [1]})
        wait_until(lambda: cluster.leader_of("kp-move", 1) == x, 30, "the preferred leader")
    finally:
        admin.close()


def test_confluent_kafka_elect_leaders(cluster, capsys):
    bs = cluster.bootstrap_servers
    _create(capsys, bs, "ck-elect", "1:2")
    wait_until(lambda: cluster.leader_of("ck-elect", 0) == 1, 30, "leader 1")
    admin = ConfluentAdmin({"bootstrap.servers": bs, "log_level": 0})

    def elect(election_type, partition):
        result = admin.elect_leaders(election_type, [CTopicPartition("ck-elect", partition)])
        # each partition's error: the broker's message (the key's is librdkafka's wording)
        return [(k.topic, k.partition, error.code(), error.str())
                for k, error in result.result(30).items()]
    not_needed = (84, "Leader election not needed for topic partition.")
    assert elect(ElectionType.PREFERRED, 0) == [("ck-elect", 0, *not_needed)]
    assert elect(ElectionType.UNCLEAN, 0) == [("ck-elect", 0, *not_needed)]    # a live leader
    assert elect(ElectionType.PREFERRED, 9) == [("ck-elect", 9, 3,
                                                 "The partition does not exist.")]


def test_cli_reassign_list_cancel_with_bootstrap_only(cluster, capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("KAFKALITE_ZOOKEEPER", raising=False)
    gone, (x, y) = _a_follower(cluster)
    bs = ("--bootstrap-server", ",".join(cluster.brokers[b].address for b in (x, y)))
    _create(capsys, bs[1], "cli-move", f"{x}:{y}")
    wait_until(lambda: cluster.leader_of("cli-move", 0) == x, 30, "leader elected")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "cli-move", "partition": 0, "replicas": [gone, y]}]}))
    cluster.kill(gone)
    code, out, err = run(capsys, "reassign", "--execute", "--reassignment-json-file",
                         str(plan), *bs)
    assert code == 0, err
    assert "Successfully started partition reassignments for cli-move-0" in out
    code, out, _ = run(capsys, "reassign", "--list", *bs)
    assert (code, out) == (0, f"Current partition reassignments:\ncli-move-0: replicas: "
                              f"{gone},{y},{x}. adding: {gone}. removing: {x}.\n")
    code, out, _ = run(capsys, "reassign", "--verify", "--reassignment-json-file", str(plan),
                       *bs)
    assert out.splitlines()[1] == "Reassignment of partition cli-move-0 is still in progress."
    code, out, err = run(capsys, "reassign", "--cancel", "--reassignment-json-file", str(plan),
                         *bs)
    assert (code, out) == (0, "Successfully cancelled partition reassignment for: "
                              "cli-move-0\n"), err
    code, out, _ = run(capsys, "reassign", "--cancel", "--reassignment-json-file", str(plan),
                       *bs)
    assert out == "None of the specified partition reassignments are active.\n"
    code, out, _ = run(capsys, "reassign", "--list", *bs)
    assert out == "No partition reassignments found.\n"


def test_cli_unclean_election_with_bootstrap_only(kafkalite_cluster_factory, capsys,
                                                  monkeypatch):
    """The only in-sync replica dies; the other one comes back out of sync: a preferred
    election cannot help, an unclean one makes it the leader."""
    monkeypatch.delenv("KAFKALITE_ZOOKEEPER", raising=False)
    cluster = kafkalite_cluster_factory(2, zookeeper_session_timeout_ms=6000,
                                        auto_leader_rebalance_enable="false")
    _create(capsys, cluster.bootstrap_servers, "cli-unclean", "1:2")
    wait_until(lambda: sorted(cluster.partition_metadata("cli-unclean", 0).isr) == [1, 2], 30,
               "both replicas in sync")
    assert cluster.terminate(2) == 0             # a follower leaves the ISR at once
    wait_until(lambda: list(cluster.partition_metadata("cli-unclean", 0).isr) == [1], 30,
               "the ISR to shrink to the leader")
    cluster.kill(1)
    cluster.restart(2)
    wait_until(lambda: cluster.leader_of("cli-unclean", 0) == -1, 60,
               "broker 1's session to end: no leader")
    alive = ("--bootstrap-server", cluster.brokers[2].address)
    code, out, err = run(capsys, "leader-election", "--election-type", "preferred", "--topic",
                         "cli-unclean", "--partition", "0", *alive)
    assert code == 1, err
    assert out == ("Error completing leader election (PREFERRED) for partition: cli-unclean-0: "
                   "Failed to elect leader for partition cli-unclean-0 under strategy "
                   "PreferredReplicaPartitionLeaderElectionStrategy\n"), out
    code, out, err = run(capsys, "leader-election", "--election-type", "unclean", "--topic",
                         "cli-unclean", "--partition", "0", *alive)
    assert (code, out) == (0, "Successfully completed leader election (UNCLEAN) for "
                              "partitions cli-unclean-0\n"), err
    wait_for(lambda: cluster.leader_of("cli-unclean", 0) == 2, 30, "the unclean leader")
