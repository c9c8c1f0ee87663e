"""Kafka 2.8.2's console producer and consumer and kafka-consumer-groups against kafkalite.

What the tools wrote is read back through confluent-kafka; what they print is compared with the
same command's output against the Apache Kafka oracle (member ids, ports and the coordinator's
broker id normalised: a group's coordinator depends on which broker leads its
``__consumer_offsets`` partition, chosen at random in both systems).
"""

from __future__ import annotations

import re

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewTopic
from kafka_tool_checks import (KAFKA, KAFKALITE, admin, committed, consume, normalise, produce,
                               tool, unique, wait_for_leaders)

from kafkalite.local.cluster import wait_until

pytestmark = [pytest.mark.integration]

NO_OFFSET = -1001     # librdkafka's "no committed offset"


def _create(bootstrap: str, topic: str, partitions: int) -> None:
    client = admin(bootstrap)     # kept alive until the answer: a dropped handle cancels it
    client.create_topics([NewTopic(topic, partitions, 2)])[topic].result(30)
    wait_for_leaders(bootstrap, topic, partitions)


def _groups_text(text: str, cluster) -> str:
    """kafka-consumer-groups output with per-cluster values made neutral: broker addresses,
    the coordinator's id, librdkafka's random member ids."""
    text = normalise(text, cluster)
    text = re.sub(r"BROKER \(\d\)", "BROKER (C)", text)
    return re.sub(r"tool-member-[0-9a-f-]{36}", "MEMBER-ID", text)


def test_console_producer_and_consumer(kafka_systems):
    """Keyed lines through kafka-console-producer land where librdkafka reads them; the console
    consumer (--from-beginning --max-messages --timeout-ms) prints them all and stops."""
    topic = unique("tc-console")
    lines = [f"key{i}:value-{i}" for i in range(10)]
    outputs = {}
    for name, cluster in kafka_systems.items():
        bs = cluster.bootstrap_servers
        _create(bs, topic, 2)
        produced = tool("kafka-console-producer", "--bootstrap-server", bs, "--topic", topic,
                        "--property", "parse.key=true", "--property", "key.separator=:",
                        "--producer-property", "acks=all", input="\n".join(lines) + "\n")
        read = consume(bs, topic, 10)
        assert sorted(f"{k.decode()}:{v.decode()}" for _, _, k, v in read) == sorted(lines)
        # the default partitioner hashes the key: both systems place each key alike
        placed = {k: p for p, _, k, _ in read}
        consumed = tool("kafka-console-consumer", "--bootstrap-server", bs, "--topic", topic,
                        "--from-beginning", "--max-messages", "10", "--timeout-ms", "30000",
                        "--property", "print.key=true", "--property", "print.partition=true")
        printed = consumed.stdout.splitlines()
        assert sorted(printed) == sorted(
            f"Partition:{placed[f'key{i}'.encode()]}\tkey{i}\tvalue-{i}" for i in range(10)), \
            consumed.stdout
        outputs[name] = (produced.stdout, sorted(printed), consumed.stderr.strip(), placed)
    assert outputs[KAFKALITE][2] == "Processed a total of 10 messages"
    assert outputs[KAFKALITE] == outputs[KAFKA]


def test_console_consumer_stops_at_its_timeout(kafka_systems):
    """--timeout-ms with fewer records than --max-messages: it prints what there is and exits
    with Kafka's message, not hanging."""
    topic = unique("tc-short")
    outputs = {}
    for name, cluster in kafka_systems.items():
        bs = cluster.bootstrap_servers
        _create(bs, topic, 1)
        produce(bs, topic, [(None, b"only-one")])
        got = tool("kafka-console-consumer", "--bootstrap-server", bs, "--topic", topic,
                   "--from-beginning", "--max-messages", "5", "--timeout-ms", "4000")
        errors = [line for line in got.stderr.splitlines() if " WARN " not in line]
        outputs[name] = (got.stdout, [re.sub(r"\[.*?\] ", "", line) for line in errors])
    assert outputs[KAFKALITE][0] == "only-one\n"
    assert outputs[KAFKALITE] == outputs[KAFKA]


def _member(bootstrap: str, group: str, topic: str, partitions: int) -> Consumer:
    """A live group member (librdkafka heartbeats from its own thread) holding every
    partition, having committed offsets 2 and 3."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0,
                         "client.id": "tool-member", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest",
                         "partition.assignment.strategy": "range"})
    consumer.subscribe([topic])

    def owns_all():
        consumer.poll(0.2)             # the group is joined and assigned inside poll
        return len(consumer.assignment()) == partitions
    wait_until(owns_all, 60, f"{group} to own {topic}", interval_s=0)
    consumer.commit(offsets=[TopicPartition(topic, 0, 2), TopicPartition(topic, 1, 3)],
                    asynchronous=False)
    return consumer


def test_consumer_groups_list_describe_state_members(kafka_systems):
    """A live member: --list, --describe (offsets, lag, the owner), --state and
    --members --verbose print what Kafka prints."""
    topic, group = unique("tc-groups"), unique("tc-g")
    outputs = {}
    for name, cluster in kafka_systems.items():
        bs = cluster.bootstrap_servers
        _create(bs, topic, 2)
        produce(bs, topic, [(None, b"a%d" % i) for i in range(4)], partition=0)
        produce(bs, topic, [(None, b"b%d" % i) for i in range(5)], partition=1)
        member = _member(bs, group, topic, 2)
        try:
            run = [tool("kafka-consumer-groups", "--bootstrap-server", bs, *args).stdout
                   for args in (["--list"],
                                ["--describe", "--group", group],
                                ["--describe", "--group", group, "--state"],
                                ["--describe", "--group", group, "--members", "--verbose"])]
        finally:
            member.close()
        assert group in run[0].split()
        if name == KAFKALITE:
            rows = [line.split() for line in run[1].splitlines() if line.startswith(group)]
            assert sorted(r[2:6] for r in rows) == [["0", "2", "4", "2"], ["1", "3", "5", "2"]]
            assert all(r[7] == "/127.0.0.1" and r[8] == "tool-member" for r in rows), rows
            assert re.search(r"\brange\s+Stable\s+1\b", run[2]), run[2]
            assert re.search(rf"\btool-member\s+2\s+{topic}\(0,1\)", run[3]), run[3]
        outputs[name] = [_groups_text(text, cluster) for text in run[1:]]
    assert outputs[KAFKALITE] == outputs[KAFKA]


def test_consumer_groups_reset_delete_offsets_and_delete(kafka_systems):
    """With the group empty: --reset-offsets --to-earliest --execute moves the committed
    offsets, --delete-offsets removes one partition's, --delete removes the group; librdkafka
    sees each. A second group whose every offset --delete-offsets removed is gone at once (Kafka
    drops an Empty group with no offsets), so --delete then fails, in both systems."""
    topic, group, emptied = unique("tc-reset"), unique("tc-r"), unique("tc-e")
    outputs = {}
    for name, cluster in kafka_systems.items():
        bs = cluster.bootstrap_servers
        _create(bs, topic, 2)
        produce(bs, topic, [(None, b"x%d" % i) for i in range(4)], partition=0)
        produce(bs, topic, [(None, b"y%d" % i) for i in range(4)], partition=1)
        _member(bs, group, topic, 2).close()
        _member(bs, emptied, topic, 2).close()
        assert committed(bs, group, topic, 2) == {0: 2, 1: 3}
        base = ["kafka-consumer-groups", "--bootstrap-server", bs, "--group", group]
        state = tool(*base, "--describe", "--state").stdout
        assert re.search(r"\s+Empty\s+0\s*$", state.strip()), state
        reset = tool(*base, "--reset-offsets", "--to-earliest", "--execute", "--topic", topic)
        assert committed(bs, group, topic, 2) == {0: 0, 1: 0}
        dropped = tool(*base, "--delete-offsets", "--topic", f"{topic}:1")
        assert committed(bs, group, topic, 2) == {0: 0, 1: NO_OFFSET}
        deleted = tool(*base, "--delete")
        client = admin(bs)
        listed = client.list_consumer_groups().result(30)
        assert group not in {g.group_id for g in listed.valid}
        assert committed(bs, group, topic, 2) == {0: NO_OFFSET, 1: NO_OFFSET}
        gone = tool(*base, "--describe")
        other = ["kafka-consumer-groups", "--bootstrap-server", bs, "--group", emptied]
        dropped_all = tool(*other, "--delete-offsets", "--topic", topic)
        assert committed(bs, emptied, topic, 2) == {0: NO_OFFSET, 1: NO_OFFSET}
        late = tool(*other, "--delete")
        outputs[name] = [_groups_text(t, cluster) for t in
                         (state, reset.stdout, dropped.stdout, deleted.stdout, gone.stdout,
                          dropped_all.stdout, late.stdout)]
    assert f"Deletion of requested consumer groups ('{group}') was successful." in \
        outputs[KAFKALITE][3]
    assert "GroupIdNotFoundException" in outputs[KAFKA][6]
    assert outputs[KAFKALITE] == outputs[KAFKA]
