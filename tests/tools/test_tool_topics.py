"""Kafka 2.8.2's kafka-topics against kafkalite, judged by librdkafka and by Apache Kafka.

Each test runs the tool the way an operator would, reads the effect back through confluent-kafka
(never kafkalite's own client) and, where the output does not depend on choices a cluster makes at
random, runs the same command against the Apache Kafka oracle and compares the two outputs.
"""

from __future__ import annotations

import pytest
from kafka_tool_checks import (KAFKA, KAFKALITE, consume, describe_rows, describe_shape,
                               normalise, on_every_broker, partitions_of, produce, tool,
                               topic_names, unique, wait_for_leaders, zk_address)

from kafkalite.local.cluster import wait_until

pytestmark = [pytest.mark.integration]


def test_create_and_describe_through_bootstrap_server_as_kafka_does(kafka_systems):
    """--create with partitions, replication factor and a config; --describe shows them."""
    topic = unique("tt-create")
    outputs = {}
    for name, cluster in kafka_systems.items():
        bs = cluster.bootstrap_servers
        created = tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", topic,
                       "--partitions", "3", "--replication-factor", "2",
                       "--config", "retention.ms=3600000", "--config", "cleanup.policy=compact")
        assert created.stdout.strip() == f"Created topic {topic}."
        parts = wait_for_leaders(bs, topic, 3)
        assert all(len(p.replicas) == 2 and sorted(p.isrs) == sorted(p.replicas)
                   for p in parts.values()), parts
        described = tool("kafka-topics", "--bootstrap-server", bs, "--describe", "--topic", topic)
        rows = describe_rows(described.stdout)
        assert {p: (r["leader"], r["replicas"]) for p, r in rows.items()} == {
            p.id: (p.leader, list(p.replicas)) for p in parts.values()}, described.stdout
        outputs[name] = describe_shape(described.stdout)
    assert "TopicId: TOPIC-ID\tPartitionCount: 3\tReplicationFactor: 2" in outputs[KAFKALITE]
    assert "cleanup.policy=compact" in outputs[KAFKALITE]
    assert outputs[KAFKALITE] == outputs[KAFKA]


def test_topic_created_through_zookeeper_is_described_and_served(zookeeper, kafka_systems):
    """--zookeeper --create writes only the znodes; the controller must pick the topic up (and
    give it a topic id, as Kafka 2.8's controller does), and the brokers serve it."""
    topic = unique("tt-zk")
    outputs = {}
    for name, cluster in kafka_systems.items():
        zk = zk_address(zookeeper, cluster)
        created = tool("kafka-topics", "--zookeeper", zk, "--create", "--topic", topic,
                       "--replica-assignment", "1:2,2:3,3:1", "--config", "segment.ms=600000")
        assert f"Created topic {topic}." in created.stdout
        wait_for_leaders(cluster.bootstrap_servers, topic, 3)
        described = tool("kafka-topics", "--zookeeper", zk, "--describe", "--topic", topic)
        outputs[name] = normalise(described.stdout)
        if name == KAFKALITE:
            records = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(9)]
            produce(cluster.bootstrap_servers, topic, records)
            got = consume(cluster.bootstrap_servers, topic, 9)
            assert sorted((k, v) for _, _, k, v in got) == sorted(records)
    assert describe_rows(outputs[KAFKALITE]) == describe_rows(outputs[KAFKA])
    assert outputs[KAFKALITE] == outputs[KAFKA]


def test_topic_created_through_zookeeper_has_a_topic_id_in_metadata(zookeeper, kafka_systems):
    """The same, through --bootstrap-server: Metadata v10+ carries the id the controller gave."""
    topic = unique("tt-zkid")
    outputs = {}
    for name, cluster in kafka_systems.items():
        tool("kafka-topics", "--zookeeper", zk_address(zookeeper, cluster), "--create",
             "--topic", topic, "--replica-assignment", "1:2")
        wait_for_leaders(cluster.bootstrap_servers, topic, 1)
        described = tool("kafka-topics", "--bootstrap-server", cluster.bootstrap_servers,
                         "--describe", "--topic", topic)
        outputs[name] = normalise(described.stdout)
    assert "TopicId: TOPIC-ID" in outputs[KAFKA]
    assert outputs[KAFKALITE] == outputs[KAFKA]


def test_alter_adds_partitions_through_both_paths(zookeeper, kafka_systems):
    """--alter --partitions through the brokers (CreatePartitions) and through ZooKeeper; a
    decrease is refused with Kafka's message. The new partitions take records."""
    topic = unique("tt-alter")
    outputs = {}
    for name, cluster in kafka_systems.items():
        bs = cluster.bootstrap_servers
        tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", topic,
             "--partitions", "1", "--replication-factor", "2")
        grown = tool("kafka-topics", "--bootstrap-server", bs, "--alter", "--topic", topic,
                     "--partitions", "3")
        wait_for_leaders(bs, topic, 3)
        zk_grown = tool("kafka-topics", "--zookeeper", zk_address(zookeeper, cluster), "--alter",
                        "--topic", topic, "--partitions", "4")
        parts = wait_for_leaders(bs, topic, 4)
        shrink = tool("kafka-topics", "--bootstrap-server", bs, "--alter", "--topic", topic,
                      "--partitions", "2", ok=False)
        outputs[name] = (grown.stdout, zk_grown.stdout, shrink.returncode, shrink.stdout)
        if name == KAFKALITE:
            assert sorted(parts) == [0, 1, 2, 3]
            assert all(len(p.replicas) == 2 for p in parts.values())
            placed = produce(bs, topic, [(None, b"in-3")], partition=3)
            assert placed == [(3, 0)]
            assert consume(bs, topic, 1, partitions=4)[0][1:] == (0, None, b"in-3")
    assert outputs[KAFKALITE][2] == 1
    assert "Topic currently has 4 partitions, which is higher than the requested 2." in \
        outputs[KAFKALITE][3]
    assert outputs[KAFKALITE] == outputs[KAFKA]


def test_delete_and_list(kafka_systems):
    """--list names every topic librdkafka sees; --delete removes one (it leaves the metadata
    and the list); deleting or creating it wrongly fails with Kafka's messages."""
    keep, gone = unique("tt-keep"), unique("tt-gone")
    outputs = {}
    for name, cluster in kafka_systems.items():
        bs = cluster.bootstrap_servers
        for topic in (keep, gone):
            tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", topic,
                 "--partitions", "1", "--replication-factor", "1")
        wait_for_leaders(bs, gone, 1)
        again = tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", gone,
                     ok=False)
        listed = tool("kafka-topics", "--bootstrap-server", bs, "--list").stdout.split()
        if name == KAFKALITE:
            assert {keep, gone} <= set(listed)
            assert set(listed) == topic_names(bs)
        deleted = tool("kafka-topics", "--bootstrap-server", bs, "--delete", "--topic", gone)
        wait_until(lambda: on_every_broker(cluster, lambda md: gone not in md), 60,
                   f"{gone} gone from every broker's metadata", interval_s=0.2)
        after = tool("kafka-topics", "--bootstrap-server", bs, "--list").stdout.split()
        assert keep in after and gone not in after
        missing = tool("kafka-topics", "--bootstrap-server", bs, "--delete", "--topic", gone,
                       ok=False)
        outputs[name] = (again.returncode, again.stdout, deleted.stdout, missing.returncode,
                         missing.stdout)
    assert outputs[KAFKALITE][3] == 1
    assert f"Topic '{gone}' already exists." in outputs[KAFKA][1]
    assert outputs[KAFKALITE] == outputs[KAFKA]


def test_under_replicated_and_unavailable_partitions(kafkalite_cluster_factory):
    """A cluster of its own with broker 3 killed: a partition with a replica on it is listed
    under-replicated, one whose only replica was on it unavailable, through the brokers and
    through ZooKeeper alike.

    The expected lines are the ones Apache Kafka 2.8.2's brokers gave kafka-topics for the same
    placement with their broker 3 killed (checked by hand; the shared oracle's brokers are not
    killed, and a cluster of Kafka brokers of its own would double this test's time)."""
    cluster = kafkalite_cluster_factory(3, min_insync_replicas=1)
    bs = cluster.bootstrap_servers
    shared, alone = unique("tt-ur"), unique("tt-un")
    tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", shared,
         "--replica-assignment", "1:3,2:3")
    tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", alone,
         "--replica-assignment", "3")
    wait_for_leaders(bs, shared, 2)
    wait_for_leaders(bs, alone, 1)
    healthy = tool("kafka-topics", "--bootstrap-server", bs, "--describe",
                   "--under-replicated-partitions")
    assert healthy.stdout.strip() == ""
    cluster.kill(3)
    live = ",".join(b.address for b in cluster.live_brokers())

    def degraded():
        parts, lone = partitions_of(live, shared), partitions_of(live, alone)
        return (len(parts) == 2 and all(list(p.isrs) == [p.id + 1] for p in parts.values())
                and len(lone) == 1 and lone[0].leader == -1)
    wait_until(degraded, 60, "broker 3 out of every ISR, its lone partition offline",
               interval_s=0.2)
    under = (f"\tTopic: {shared}\tPartition: 0\tLeader: 1\tReplicas: 1,3\tIsr: 1\n"
             f"\tTopic: {shared}\tPartition: 1\tLeader: 2\tReplicas: 2,3\tIsr: 2\n")
    unavailable = f"\tTopic: {alone}\tPartition: 0\tLeader: none\tReplicas: 3\tIsr: 3\n"
    for path in (["--bootstrap-server", live], ["--zookeeper", cluster.zk_connect]):
        got = tool("kafka-topics", *path, "--describe", "--under-replicated-partitions")
        assert got.stdout == under, (path, got.stdout)
        got = tool("kafka-topics", *path, "--describe", "--unavailable-partitions")
        assert got.stdout == unavailable, (path, got.stdout)

