"""Kafka 2.8.2's kafka-reassign-partitions and kafka-preferred-replica-election through
``--zookeeper`` against kafkalite's controller, on topics of the test's own.

The tools only write ``/admin/reassign_partitions`` and ``/admin/preferred_replica_election``;
the controller does the rest. librdkafka's metadata shows the new replicas and leaders, the
records are read back from the new leaders, and each tool's output is compared with the same
commands' against the Apache Kafka oracle.
"""

from __future__ import annotations

import json
import re

import pytest
from kafka_tool_checks import (KAFKA, KAFKALITE, consume, describe_rows, normalise, partitions_of,
                               produce, tool, unique, wait_for_leaders, zk_address)

from kafkalite.local.cluster import wait_until

pytestmark = [pytest.mark.integration]

# partition 0 moves from [1, 2] to [3, 1]: a new replica, and a preferred leader (3) that is not
# the current leader (1); partition 1 from [2, 3] to [1, 2]
BEFORE = {0: [1, 2], 1: [2, 3]}
AFTER = {0: [3, 1], 1: [1, 2]}


def _json_after(text: str, heading: str) -> dict:
    """The JSON document printed on the first non-empty line after ``heading``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    return json.loads(next(line for line in lines[start + 1:] if line.strip()))


def _assignment(document: dict) -> dict[int, list[int]]:
    return {p["partition"]: p["replicas"] for p in document["partitions"]}


def test_reassign_partitions_and_preferred_election_through_zookeeper(zookeeper, kafka_systems,
                                                                       tmp_path):
    topic = unique("tr-move")
    outputs = {}
    for name, cluster in kafka_systems.items():
        bs, zk = cluster.bootstrap_servers, zk_address(zookeeper, cluster)
        tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", topic,
             "--replica-assignment", "1:2,2:3")
        wait_for_leaders(bs, topic, 2)
        records = {p: [(b"p%d-%d" % (p, i), b"v%d-%d" % (p, i)) for i in range(3)]
                   for p in range(2)}
        for p, batch in records.items():
            produce(bs, topic, batch, partition=p)

        move = tmp_path / f"{name}-move.json"
        move.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
        generated = tool("kafka-reassign-partitions", "--zookeeper", zk,
                         "--topics-to-move-json-file", str(move), "--broker-list", "1,2,3",
                         "--generate").stdout
        assert _assignment(_json_after(generated, "Current partition replica assignment")) \
            == BEFORE
        proposed = _assignment(_json_after(generated, "Proposed partition reassignment"))
        assert sorted(proposed) == [0, 1] and all(
            len(set(r)) == 2 and set(r) <= {1, 2, 3} for r in proposed.values()), proposed

        plan = tmp_path / f"{name}-plan.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": topic, "partition": p, "replicas": r} for p, r in AFTER.items()]}))
        executed = tool("kafka-reassign-partitions", "--zookeeper", zk,
                        "--reassignment-json-file", str(plan), "--execute").stdout
        verify = ["kafka-reassign-partitions", "--zookeeper", zk, "--reassignment-json-file",
                  str(plan), "--verify"]
        verified = wait_until(
            lambda: (lambda out: out if out.count("is complete.") == 2 else None)(
                tool(*verify).stdout), 90, f"the reassignment of {topic} to complete",
            interval_s=0.5)

        def moved():
            parts = partitions_of(bs, topic)
            return len(parts) == 2 and all(
                list(parts[p].replicas) == AFTER[p] and sorted(parts[p].isrs) == sorted(AFTER[p])
                for p in AFTER)
        wait_until(moved, 60, f"{topic}'s replicas and ISRs to be {AFTER}", interval_s=0.2)
        assert partitions_of(bs, topic)[0].leader == 1     # not moved yet: 1 is still in sync

        election = tmp_path / f"{name}-elect.json"
        election.write_text(json.dumps({"partitions": [{"topic": topic, "partition": p}
                                                       for p in AFTER]}))
        elected = tool("kafka-preferred-replica-election", "--zookeeper", zk,
                       "--path-to-json-file", str(election)).stdout
        wait_until(lambda: {p: m.leader for p, m in partitions_of(bs, topic).items()} ==
                   {p: r[0] for p, r in AFTER.items()}, 60,
                   "the preferred replicas to lead", interval_s=0.2)
        got = consume(bs, topic, 6, partitions=2)
        assert sorted((p, k, v) for p, _, k, v in got) == sorted(
            (p, k, v) for p, batch in records.items() for k, v in batch)
        described = tool("kafka-topics", "--zookeeper", zk, "--describe", "--topic", topic)
        rows = describe_rows(described.stdout)
        assert {p: (r["leader"], r["replicas"], sorted(r["isr"])) for p, r in rows.items()} == {
            p: (reps[0], reps, sorted(reps)) for p, reps in AFTER.items()}, described.stdout
        # the ISRs' order too: the new replica joins at the end, the removed one leaves
        outputs[name] = [re.sub(r"Proposed partition reassignment configuration\n.*",
                                "PROPOSED", generated, flags=re.S), executed, verified, elected,
                         normalise(described.stdout)]
    assert "Successfully started partition reassignments for " \
        f"{topic}-0,{topic}-1" in outputs[KAFKALITE][1]
    assert outputs[KAFKALITE] == outputs[KAFKA]
