"""Kafka 2.8.2's Java consumer in groups and on its own, against both systems.

RangeAssignor between two static members (deterministic: Kafka orders static members by
group.instance.id), CooperativeStickyAssignor when a second member joins (only the moved
partitions are revoked, the new member starts at the committed offsets), static membership (a
static member that leaves and comes back within the session timeout is not a rebalance: the same
generation, its committed offsets), and a manual assign with seek, pause/resume, offsetsForTimes,
beginning and end offsets. Records are checked against what was produced.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from jvm_apps import create_topic, jvm_classes, run_java, unique  # noqa: F401

from kafkalite.testing.oracle_fixtures import SYSTEMS

pytestmark = [pytest.mark.integration]


def _keys(records: list[dict]) -> list[tuple[int, int, str]]:
    return sorted((r["partition"], r["offset"], bytes.fromhex(r["key"]).decode())
                  for r in records)


def _produced(partitions, per: int, round_: str, first_offset: int = 0):
    """What Groups.produce sends: PER records to each partition, keys "pN-round-i"."""
    return sorted((p, first_offset + i, f"p{p}-{round_}-{i}")
                  for p in partitions for i in range(per))


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_java_range_assignor_with_static_members(system, jvm_classes):
    topic, group = unique("jvm-range"), unique("jvm-range-g")
    create_topic(system.bootstrap_servers, topic, 4)
    (a, b) = run_java(jvm_classes, "Groups", "range", system.bootstrap_servers, topic, group)
    assert (a["name"], a["assignment"]) == ("a", [0, 1])    # member-a sorts first
    assert (b["name"], b["assignment"]) == ("b", [2, 3])
    assert a["generation"] == b["generation"] >= 1
    assert _keys(a["consumed"]) == _produced([0, 1], 5, "r1")
    assert _keys(b["consumed"]) == _produced([2, 3], 5, "r1")


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_java_cooperative_sticky_assignor(system, jvm_classes):
    topic, group = unique("jvm-coop"), unique("jvm-coop-g")
    create_topic(system.bootstrap_servers, topic, 4)
    (result,) = run_java(jvm_classes, "Groups", "cooperative", system.bootstrap_servers, topic,
                         group)
    assert result["alone"] == [0, 1, 2, 3]
    assert len(result["a"]) == len(result["b"]) == 2
    assert sorted(result["a"] + result["b"]) == [0, 1, 2, 3]
    events = result["events"]
    a_events = [e for e in events if e["member"] == "a"]
    b_events = [e for e in events if e["member"] == "b"]
    # incremental: a gave up exactly what b took, once, and never lost a partition
    assert [e["partitions"] for e in a_events if e["callback"] == "revoked"] == [result["b"]]
    assert not [e for e in events if e["callback"] == "lost"]
    assert a_events[0] == {"member": "a", "callback": "assigned", "partitions": [0, 1, 2, 3]}
    assert all(e["partitions"] == [] for e in a_events[1:] if e["callback"] == "assigned")
    assert sorted(p for e in b_events if e["callback"] == "assigned"
                  for p in e["partitions"]) == result["b"]
    assert _keys(result["round1"]) == _produced(range(4), 5, "r1")
    # the second round: each member reads its own partitions, b from a's committed offsets
    assert _keys(result["round2_a"]) == _produced(result["a"], 5, "r2", 5)
    assert _keys(result["round2_b"]) == _produced(result["b"], 5, "r2", 5)


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_java_static_member_rejoins_without_rebalance(system, jvm_classes):
    topic, group = unique("jvm-static"), unique("jvm-static-g")
    create_topic(system.bootstrap_servers, topic, 2)
    (result,) = run_java(jvm_classes, "Groups", "static", system.bootstrap_servers, topic, group)
    assert result["generation2"] == result["generation1"] >= 1
    assert result["member2"] != result["member1"]
    assert result["state"] == "Stable"
    assert result["members"] == [{"member_id": result["member2"], "instance_id": "static-1",
                                  "client_id": "static-1", "assignment": [0, 1]}]
    assert _keys(result["first"]) == _produced([0, 1], 3, "r1")
    assert _keys(result["second"]) == _produced([0, 1], 2, "r2", 3)


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_java_assign_seek_pause_resume_offsets_for_times(system, jvm_classes):
    bootstrap = system.bootstrap_servers
    topic = unique("jvm-assign")
    create_topic(bootstrap, topic, 2)
    base_ts = int(time.time() * 1000) - 600_000
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    delivered = []
    for p in (0, 1):
        for i in range(10):
            producer.produce(topic, key=f"p{p}-{i}".encode(), value=f"v{i}".encode(),
                             partition=p, timestamp=base_ts + i * 1000,
                             on_delivery=lambda err, msg: delivered.append((err, msg)))
    assert producer.flush(30) == 0
    assert [err for err, _ in delivered] == [None] * 20
    offsets = {(m.partition(), m.key().decode()): m.offset() for _, m in delivered}
    assert offsets == {(p, f"p{p}-{i}"): i for p in (0, 1) for i in range(10)}

    (result,) = run_java(jvm_classes, "Groups", "assign", bootstrap, topic, str(base_ts))
    assert result["paused"] == [1]
    # while partition 1 was paused only partition 0 came, from the seek to offset 3
    assert [(r["partition"], r["offset"], r["timestamp"]) for r in result["while_paused"]] == [
        (0, i, base_ts + i * 1000) for i in range(3, 10)]
    assert result["p1_position_while_paused"] == 0
    assert [(r["partition"], r["offset"], bytes.fromhex(r["key"]).decode())
            for r in result["after_resume"]] == [(1, i, f"p1-{i}") for i in range(10)]
    assert (result["begin"], result["end"]) == (0, 10)
    assert result["beginning_offsets"] == [0, 0] and result["end_offsets"] == [10, 10]
    assert result["for_time_p0"] == [3, base_ts + 3000]     # the first at or after the time
    assert result["for_time_p1"] == [0, base_ts]
    assert result["for_time_beyond"] is None
