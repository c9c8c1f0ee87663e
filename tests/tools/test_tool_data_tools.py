"""Kafka 2.8.2's data tools against kafkalite: the perf tests, kafka-dump-log on kafkalite's own
segment files, kafka-broker-api-versions, kafka-delete-records, kafka-get-offsets
(GetOffsetShell) and the verifiable producer and consumer.

Effects are read through confluent-kafka; outputs are compared with the same commands' against
the Apache Kafka oracle wherever they do not depend on timing.
"""

from __future__ import annotations

import difflib
import json
import re
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic
from kafka_tool_checks import (KAFKA, KAFKALITE, admin, committed, consume, json_lines, produce,
                               tool, unique, wait_for_leaders, watermarks)

from kafkalite.local.cluster import wait_until

pytestmark = [pytest.mark.integration]

NO_OFFSET = -1001     # librdkafka's "no committed offset"


def _create(bootstrap: str, topic: str, partitions: int, replication: int = 2) -> dict:
    client = admin(bootstrap)
    client.create_topics([NewTopic(topic, partitions, replication)])[topic].result(30)
    return wait_for_leaders(bootstrap, topic, partitions)


def test_producer_and_consumer_perf_tests(kafka_systems):
    """kafka-producer-perf-test writes --num-records records of --record-size bytes (acks=all);
    kafka-consumer-perf-test reads them all back; the counts and sizes they print are Kafka's."""
    topic = unique("td-perf")
    outputs = {}
    for name, cluster in kafka_systems.items():
        bs = cluster.bootstrap_servers
        _create(bs, topic, 2)
        sent = tool("kafka-producer-perf-test", "--topic", topic, "--num-records", "3000",
                    "--record-size", "100", "--throughput", "-1", "--producer-props",
                    f"bootstrap.servers={bs}", "acks=all")
        summary = sent.stdout.strip().splitlines()[-1]
        assert re.match(r"3000 records sent, [\d.]+ records/sec", summary), sent.stdout
        assert sum(watermarks(bs, topic, p)[1] for p in range(2)) == 3000
        read = tool("kafka-consumer-perf-test", "--bootstrap-server", bs, "--topic", topic,
                    "--messages", "3000", "--timeout", "60000", "--group", unique("td-perf-g"))
        header, row = read.stdout.strip().splitlines()[-2:]
        values = dict(zip([h.strip() for h in header.split(",")],
                          [v.strip() for v in row.split(",")]))
        outputs[name] = (header, values["data.consumed.in.nMsg"], values["data.consumed.in.MB"])
    assert outputs[KAFKALITE][1:] == ("3000", "0.2861")
    assert outputs[KAFKALITE] == outputs[KAFKA]


_BATCH = re.compile(r"baseOffset: (\d+) lastOffset: (\d+) count: (\d+) .* position: (\d+) "
                    r"CreateTime: \d+ size: (\d+) magic: 2 compresscodec: (\w+) crc: \d+ "
                    r"isvalid: (\w+)")
_RECORD = re.compile(r"\| offset: (\d+) .*headerKeys: \[(.*?)\] key: (\S*) payload: (\S*)")


def _produce_batches(bootstrap: str, topic: str) -> None:
    """Two batches of keyed records (one with a header, one gzip-compressed: values long enough
    that librdkafka does not send them uncompressed), each flushed on its own, so both systems
    store the same batches. Every record carries the same timestamp: records stamped in
    different milliseconds (a loaded machine) would have longer timestamp deltas, and so batches
    of other sizes on one system than on the other.

    The producer learns the partition's leader before the first record: a record queued while
    metadata is still on its way can be sent alone once the linger has run out, and a loaded CI
    machine once split the gzip pair so (two batches on the system it hit). The linger is long
    enough that a stalled main thread between two produce() calls does not split a batch."""
    timestamp = int(time.time() * 1000)
    for codec, records in (("none", [(b"k0", b"v0"), (b"k1", b"v1"), (b"k2", b"v2")]),
                           ("gzip", [(b"k3", b"v3" * 100), (b"k4", b"v4" * 100)])):
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 0,
                             "linger.ms": 2000, "compression.type": codec})
        assert topic in producer.list_topics(topic, timeout=30).topics
        for key, value in records:
            producer.produce(topic, value=value, key=key, partition=0, timestamp=timestamp,
                             headers=[("h", b"1")] if key == b"k1" else None)
        assert producer.flush(30) == 0


def _dump(log_dir: str, topic: str) -> tuple[list, list, str]:
    """kafka-dump-log --print-data-log of the partition's first segment: batches, records and
    the text with the path, timestamps and CRCs (which follow the timestamps) taken out."""
    path = f"{log_dir}/{topic}-0/00000000000000000000.log"
    out = tool("kafka-dump-log", "--files", path, "--print-data-log").stdout
    batches = [m.groups() for m in map(_BATCH.search, out.splitlines()) if m]
    records = [m.groups() for m in map(_RECORD.search, out.splitlines()) if m]
    text = re.sub(r"(CreateTime|crc): -?\d+", r"\1: X", out.replace(path, "SEGMENT"))
    return batches, records, text


def test_dump_log_reads_kafkalites_segments(kafka_systems):
    """kafka-dump-log parses kafkalite's segment files as Kafka's own: every batch valid, the
    offsets, keys, headers and values produced, the same batch layout as Kafka writes, and the
    follower's copy identical to the leader's."""
    topic = unique("td-dump")
    outputs = {}
    for name, cluster in kafka_systems.items():
        bs = cluster.bootstrap_servers
        replicas = _create(bs, topic, 1)[0].replicas
        _produce_batches(bs, topic)
        wait_until(lambda: watermarks(bs, topic)[1] == 5, 30, "5 records acknowledged")
        dumps = [_dump(cluster.brokers[r].log_dir, topic) for r in
                 (replicas if name == KAFKALITE else replicas[:1])]
        batches, records, text = dumps[0]
        assert batches == [("0", "2", "3", "0", batches[0][4], "NONE", "true"),
                           ("3", "4", "2", batches[0][4], batches[1][4], "GZIP", "true")], text
        assert records == [("0", "", "k0", "v0"), ("1", "h", "k1", "v1"),
                           ("2", "", "k2", "v2"), ("3", "", "k3", "v3" * 100),
                           ("4", "", "k4", "v4" * 100)], text
        assert all(dump[2] == text for dump in dumps), "a follower's segment differs"
        outputs[name] = text
    assert outputs[KAFKALITE] == outputs[KAFKA], "\n".join(difflib.unified_diff(
        outputs[KAFKA].splitlines(), outputs[KAFKALITE].splitlines(), "kafka", "kafkalite",
        lineterm=""))


def _api_versions(text: str) -> dict[int, dict[str, str]]:
    """``{broker id: {api: "min to max" | "UNSUPPORTED"}}`` from kafka-broker-api-versions."""
    brokers, current = {}, None
    for line in text.splitlines():
        head = re.match(r"\S+ \(id: (\d+) rack: null\) -> \(", line)
        if head:
            current = brokers.setdefault(int(head[1]), {})
            continue
        api = re.match(r"\s+(\w+\(\d+\)): (.*?)(?: \[usable: \d+\])?,?$", line)
        if api and current is not None:
            current[api[1]] = api[2]
    return brokers


@pytest.fixture(scope="module")
def api_versions(kafka_systems):
    return {name: _api_versions(tool("kafka-broker-api-versions", "--bootstrap-server",
                                     cluster.bootstrap_servers).stdout)
            for name, cluster in kafka_systems.items()}


def test_broker_api_versions_served_as_kafka_does(api_versions):
    """Every broker answers ApiVersions; every API kafkalite serves it serves up to Kafka 2.8's
    newest version (the one the tool marks usable)."""
    kafkalite, kafka = api_versions[KAFKALITE], api_versions[KAFKA]
    assert sorted(kafkalite) == sorted(kafka) == [1, 2, 3]
    assert kafkalite[1] == kafkalite[2] == kafkalite[3]
    assert list(kafkalite[1]) == list(kafka[1])          # the tool lists every API it knows
    served = {api: v for api, v in kafkalite[1].items() if v != "UNSUPPORTED"}
    assert {"Produce(0)", "Fetch(1)", "Metadata(3)", "ApiVersions(18)", "CreateTopics(19)",
            "DescribeConfigs(32)", "OffsetDelete(47)"} <= set(served)
    assert {api: v.split()[-1] for api, v in served.items()} == {
        api: kafka[1][api].split()[-1] for api in served}


@pytest.mark.xfail(strict=True, reason=(
    "two differences remain after issue 23 (every client API of Kafka 2.8 is served): "
    "(1) the lowest versions: kio, the schema library, follows Kafka 4.0, which dropped the "
    "pre-0.11 versions (KIP-896), so Produce 0-2, ListOffsets 0, OffsetCommit 0-1, "
    "OffsetFetch 0, CreateTopics 0-1, DeleteTopics 0, OffsetForLeaderEpoch 0-1, "
    "WriteTxnMarkers 0 and v0 of the ACL, DescribeConfigs, log-dir and delegation-token APIs "
    "are not advertised (Fetch 0-3 are: kafkalite has their schemas); "
    "(2) LeaderAndIsr, StopReplica, UpdateMetadata and ControlledShutdown are not advertised "
    "on the Kafka protocol: kafkalite's brokers and controller speak them natively"))
def test_broker_api_versions_match_kafka(api_versions):
    assert api_versions[KAFKALITE][1] == api_versions[KAFKA][1]


def test_delete_records_and_get_offsets(kafka_systems, tmp_path):
    """kafka-delete-records moves the log start offset (librdkafka reads the new low
    watermark and cannot read below it); kafka-get-offsets prints the earliest, the latest and
    the offset for a timestamp, as Kafka does."""
    topic = unique("td-del")
    base_ts = 1_700_000_000_000
    outputs = {}
    for name, cluster in kafka_systems.items():
        bs = cluster.bootstrap_servers
        _create(bs, topic, 2)
        producer = Producer({"bootstrap.servers": bs, "acks": "all", "log_level": 0})
        for i in range(6):
            producer.produce(topic, value=b"r%d" % i, partition=0, timestamp=base_ts + i * 1000)
        assert producer.flush(30) == 0
        produce(bs, topic, [(None, b"p1-%d" % i) for i in range(3)], partition=1)
        plan = tmp_path / f"{name}-delete.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": topic, "partition": 0, "offset": 4}]}))
        deleted = tool("kafka-delete-records", "--bootstrap-server", bs,
                       "--offset-json-file", str(plan))
        assert watermarks(bs, topic, 0) == (4, 6)
        # asked for offset 0, the consumer is told it is gone and starts at the new start
        assert [r[1:] for r in consume(bs, topic, 2, partitions=1)] == [
            (4, None, b"r4"), (5, None, b"r5")]
        shell = ["kafka-get-offsets", "--broker-list", bs, "--topic", topic]
        offsets = [tool(*shell, "--time", when).stdout for when in ("-2", "-1")]
        offsets.append(tool(*shell, "--partitions", "0", "--time", str(base_ts + 4500)).stdout)
        outputs[name] = [deleted.stdout, *offsets]
    assert outputs[KAFKALITE][1:] == [f"{topic}:0:4\n{topic}:1:0\n",
                                      f"{topic}:0:6\n{topic}:1:3\n", f"{topic}:0:5\n"]
    assert f"partition: {topic}-0\tlow_watermark: 4" in outputs[KAFKALITE][0]
    assert outputs[KAFKALITE] == outputs[KAFKA]


def _events(lines: list[dict]) -> list[str]:
    """The verifiable clients' event names, in order, runs of the same name folded into one,
    and so are repeated consume-and-commit rounds: how many polls 20 records take depends on
    when they reach the consumer (on a loaded machine they may come in two fetches), on either
    system."""
    names: list[str] = []
    for line in lines:
        name = line["name"]
        if names and names[-1] == name:
            continue
        if (name == "records_consumed" and names[-2:] == ["records_consumed",
                                                          "offsets_committed"]):
            continue
        names.append(name)
    return names


def test_verifiable_producer_and_consumer(kafka_systems):
    """kafka-verifiable-producer reports every send acknowledged, at the offsets librdkafka
    reads; kafka-verifiable-consumer reports consuming and committing all of them, and the
    group's offsets are committed at the end of each partition."""
    topic, group = unique("td-verify"), unique("td-vg")
    outputs = {}
    for name, cluster in kafka_systems.items():
        bs = cluster.bootstrap_servers
        _create(bs, topic, 2)
        sent = json_lines(tool("kafka-verifiable-producer", "--bootstrap-server", bs,
                               "--topic", topic, "--max-messages", "20", "--acks", "-1").stdout)
        acked = [e for e in sent if e["name"] == "producer_send_success"]
        assert sorted(int(e["value"]) for e in acked) == list(range(20))
        assert sent[-1]["name"] == "tool_data" and (sent[-1]["sent"], sent[-1]["acked"]) == (
            20, 20)
        read = consume(bs, topic, 20)
        assert {(p, o, v.decode()) for p, o, _, v in read} == {
            (e["partition"], e["offset"], e["value"]) for e in acked}
        ends = {p: watermarks(bs, topic, p)[1] for p in range(2)}
        got = json_lines(tool("kafka-verifiable-consumer", "--bootstrap-server", bs,
                              "--topic", topic, "--group-id", group, "--max-messages", "20",
                              "--reset-policy", "earliest").stdout)
        consumed = sum(e["count"] for e in got if e["name"] == "records_consumed")
        assert consumed == 20, got
        commits = [e for e in got if e["name"] == "offsets_committed"]
        assert commits and all(e["success"] for e in commits), commits
        last = {o["partition"]: o["offset"] for e in commits for o in e["offsets"]}
        # the sticky partitioner may have put every record in one partition
        assert last == {p: end for p, end in ends.items() if end}
        assert committed(bs, group, topic, 2) == {p: end or NO_OFFSET for p, end in ends.items()}
        outputs[name] = (_events(sent), _events(got))
    assert outputs[KAFKALITE][1][:2] == ["startup_complete", "partitions_assigned"]
    assert outputs[KAFKALITE] == outputs[KAFKA]
