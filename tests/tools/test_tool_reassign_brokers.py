"""Kafka 2.8.2's kafka-reassign-partitions and kafka-leader-election with ``--bootstrap-server``
alone (KIP-455's AlterPartitionReassignments / ListPartitionReassignments, KIP-460's
ElectLeaders), against kafkalite and the Apache Kafka oracle alike, on topics of the test's own.

librdkafka reads the outcome (replicas, ISRs, leaders, records); each command's output is
compared with the same command's against Kafka. A reassignment cancelled while it runs needs a
move that cannot finish: one onto a broker killed just before it starts (still registered while
its ZooKeeper session lasts), which only a cluster of the test's own allows (kafkalite's), so
that one is asserted against what Kafka's tool prints (from its source).
"""

from __future__ import annotations

import json

from kafka_tool_checks import (KAFKA, KAFKALITE, consume, partitions_of, produce, tool, unique,
                               wait_for_leaders)

from kafkalite.local.cluster import wait_until

import pytest

pytestmark = [pytest.mark.integration]

BEFORE = {0: [1, 2], 1: [2, 3]}
AFTER = {0: [3, 1], 1: [1, 2]}        # a new replica for 0, a preferred leader that is not


def _plan(path, topic: str, assignment: dict[int, list[int]]) -> str:
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": r} for p, r in assignment.items()]}))
    return str(path)


def _reassign(bs: str, *args: str, ok: bool = True):
    return tool("kafka-reassign-partitions", "--bootstrap-server", bs, *args, ok=ok)


def test_reassign_execute_verify_list_through_the_brokers(kafka_systems, tmp_path):
    topic = unique("tb-move")
    outputs = {}
    for name, cluster in kafka_systems.items():
        bs = cluster.bootstrap_servers
        tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", topic,
             "--replica-assignment", "1:2,2:3")
        wait_for_leaders(bs, topic, 2)
        records = {p: [(b"k%d-%d" % (p, i), b"v%d-%d" % (p, i)) for i in range(5)]
                   for p in range(2)}
        for p, batch in records.items():
            produce(bs, topic, batch, partition=p)
        plan = _plan(tmp_path / f"{name}-plan.json", topic, AFTER)
        executed = _reassign(bs, "--reassignment-json-file", plan, "--execute").stdout

        def verified():
            out = _reassign(bs, "--reassignment-json-file", plan, "--verify").stdout
            return out if out.count("is complete.") == 2 else None
        done = wait_until(verified, 90, f"the reassignment of {topic} to complete",
                          interval_s=0.5)

        def moved():
            parts = partitions_of(bs, topic)
            return len(parts) == 2 and all(
                list(parts[p].replicas) == AFTER[p] and sorted(parts[p].isrs) == sorted(r)
                for p, r in AFTER.items())
        wait_until(moved, 60, f"{topic}'s replicas and ISRs to be {AFTER}", interval_s=0.2)
        listed = _reassign(bs, "--list").stdout
        # nothing runs any more: cancelling finds nothing to cancel
        cancelled = _reassign(bs, "--reassignment-json-file", plan, "--cancel").stdout
        got = consume(bs, topic, 10, partitions=2)
        assert sorted((p, k, v) for p, _, k, v in got) == sorted(
            (p, k, v) for p, batch in records.items() for k, v in batch)
        outputs[name] = [executed.replace(topic, "TOPIC"), done.replace(topic, "TOPIC"),
                         listed, cancelled]
    executed, done, listed, cancelled = outputs[KAFKA]
    assert "Successfully started partition reassignments for TOPIC-0,TOPIC-1" in executed
    assert done.startswith("Status of partition reassignment:\n"
                           "Reassignment of partition TOPIC-0 is complete.\n"
                           "Reassignment of partition TOPIC-1 is complete.\n"), done
    assert listed == "No partition reassignments found.\n"
    assert cancelled.startswith("None of the specified partition reassignments are active.\n")
    assert outputs[KAFKALITE] == outputs[KAFKA]


def test_leader_election_preferred_and_unclean(kafka_systems, tmp_path):
    """Preferred: a partition whose replicas were reordered (its leader no longer preferred)
    is elected, then needs no election; unclean: a partition with a live leader needs none."""
    topic = unique("tb-elect")
    outputs = {}
    for name, cluster in kafka_systems.items():
        bs = cluster.bootstrap_servers
        tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", topic,
             "--replica-assignment", "1:2")
        wait_for_leaders(bs, topic, 1)
        _reassign(bs, "--execute", "--reassignment-json-file",
                  _plan(tmp_path / f"{name}-reorder.json", topic, {0: [2, 1]}))
        wait_until(lambda: list(partitions_of(bs, topic)[0].replicas) == [2, 1], 60,
                   "replicas reordered to [2, 1]", interval_s=0.2)
        assert partitions_of(bs, topic)[0].leader == 1
        elect = ["kafka-leader-election", "--bootstrap-server", bs, "--topic", topic,
                 "--partition", "0", "--election-type"]
        elected = tool(*elect, "preferred").stdout
        wait_until(lambda: partitions_of(bs, topic)[0].leader == 2, 30, "broker 2 to lead",
                   interval_s=0.2)
        again = tool(*elect, "preferred").stdout
        unclean = tool(*elect, "unclean").stdout
        # every partition: the other tests' partitions may be elected; ours needs no election,
        # so it is not in the answer
        everything = tool("kafka-leader-election", "--bootstrap-server", bs,
                          "--election-type", "preferred", "--all-topic-partitions").stdout
        assert topic not in everything, (name, everything)
        outputs[name] = [elected.replace(topic, "TOPIC"), again.replace(topic, "TOPIC"),
                         unclean.replace(topic, "TOPIC")]
    assert outputs[KAFKA][0] == \
        "Successfully completed leader election (PREFERRED) for partitions TOPIC-0\n"
    assert outputs[KAFKALITE] == outputs[KAFKA]


def test_cancel_a_running_reassignment(kafkalite_cluster_factory, tmp_path):
    """Kafka's tool --list shows the move with its adding and removing replicas; --cancel puts
    the original replicas back and stops the added one (Kafka's output, from its source)."""
    cluster = kafkalite_cluster_factory(3, zookeeper_session_timeout_ms=60000)
    controller = cluster.controller_id()
    gone, (x, y) = _a_follower_and_two_others(controller)
    bs = ",".join(cluster.brokers[b].address for b in (x, y))
    topic = unique("tb-cancel")
    tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", topic,
         "--replica-assignment", f"{x}:{y}")
    wait_for_leaders(bs, topic, 1)
    produce(bs, topic, [(None, b"v%d" % i) for i in range(5)])
    plan = _plan(tmp_path / "plan.json", topic, {0: [gone, y]})
    cluster.kill(gone)           # still registered, so the move is accepted; it cannot finish
    _reassign(bs, "--reassignment-json-file", plan, "--execute")
    listed = _reassign(bs, "--list").stdout
    assert listed == (f"Current partition reassignments:\n{topic}-0: replicas: "
                      f"{gone},{y},{x}. adding: {gone}. removing: {x}.\n")
    running = _reassign(bs, "--reassignment-json-file", plan, "--verify").stdout
    assert f"Reassignment of partition {topic}-0 is still in progress." in running
    # --preserve-throttles: clearing them would ask every registered broker, the dead one too
    cancelled = _reassign(bs, "--reassignment-json-file", plan, "--cancel",
                          "--preserve-throttles").stdout
    assert cancelled == (f"Successfully cancelled partition reassignment for: {topic}-0\n"
                         "None of the specified partition moves are active.\n")
    assert _reassign(bs, "--list").stdout == "No partition reassignments found.\n"
    # the original replicas, in the order Kafka leaves them (the target's first)
    wait_until(lambda: list(partitions_of(bs, topic)[0].replicas) == [y, x], 30,
               "the original replicas back", interval_s=0.2)
    assert partitions_of(bs, topic)[0].leader == x
    assert sorted(v for _, _, _, v in consume(bs, topic, 5, partitions=1)) == [
        b"v%d" % i for i in range(5)]


def _a_follower_and_two_others(controller: int) -> tuple[int, tuple[int, int]]:
    """A broker that is not the controller (to kill), and the two others."""
    gone = next(b for b in (3, 2, 1) if b != controller)
    return gone, tuple(b for b in (1, 2, 3) if b != gone)
