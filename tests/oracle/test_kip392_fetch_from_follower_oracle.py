"""KIP-392 (fetch from the closest replica) on kafkalite and on Apache Kafka 2.8.2: 3 brokers
each, on racks a, b and c, with ``replica.selector.class`` = RackAwareReplicaSelector.

The shared oracle clusters have no racks, so this module starts a pair of its own (both at
once, one pair for the module). Judged by independent clients:

* raw Fetch v11 requests (kio): the leader names the follower on the client's rack as the
  preferred read replica and returns no records; a client on the leader's rack gets records
  from the leader; the follower itself serves a v11 fetch, and refuses a v10 one;
* a confluent-kafka (librdkafka) consumer with ``client.rack`` = a follower's rack reads every
  record (offsets and values checked) and its statistics show the partition fetched from that
  follower, not from the leader.

Both systems must answer the same, in terms of roles (leader, the follower on the client's
rack), since which broker leads may differ.
"""

from __future__ import annotations

import json
import signal
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.local.cluster import LocalCluster, wait_until
from kafkalite.local.zookeeper import create_chroots
from kafkalite.record import iter_records
from kafkalite.server.read_replica import RACK_AWARE_SELECTOR
from kafkalite.testing.apache_kafka import ApacheKafkaCluster, ApacheKafkaNotFoundError
from kafkalite.testing.conformance import raw
from kafkalite.testing.oracle_fixtures import SHARED_SETTINGS, side_by_side

pytestmark = [pytest.mark.integration]

RACKS = {1: "a", 2: "b", 3: "c"}
SETTINGS = {**SHARED_SETTINGS, "replica.selector.class": RACK_AWARE_SELECTOR,
            "offsets.topic.num.partitions": 1}
RECORDS = 20


class _RackedKafka(ApacheKafkaCluster):
    """Apache Kafka brokers each with its own broker.rack."""

    def settings(self, broker):
        return {**super().settings(broker), "broker.rack": RACKS[broker.broker_id]}


@pytest.fixture(scope="module")
def racked(zookeeper, tmp_path_factory):
    """{system: cluster}: kafkalite's and Kafka's 3 brokers on racks a/b/c."""
    kl_root, ak_root = create_chroots(zookeeper.connect_string, "kl-kip392", "ak-kip392")
    workdir = tmp_path_factory.mktemp("kip392")
    kafkalite = LocalCluster(f"{zookeeper.connect_string}{kl_root}", 3,
                             workdir=str(workdir / "kafkalite"), overrides=dict(SETTINGS),
                             die_with_parent=signal.SIGKILL)
    for broker in kafkalite.brokers.values():
        broker.overrides["broker.rack"] = RACKS[broker.broker_id]
    try:
        kafka = _RackedKafka(f"{zookeeper.connect_string}{ak_root}", 3,
                             workdir=str(workdir / "kafka"), overrides=dict(SETTINGS))
    except ApacheKafkaNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)
    with side_by_side(kafkalite, kafka):
        yield {"kafkalite": kafkalite, "kafka": kafka}


def _topic_with_records(bootstrap: str) -> tuple[str, int, dict[int, str]]:
    """A 1-partition topic on all 3 brokers holding RECORDS records (acks=all, so every
    follower has them): (topic, leader id, {broker id: address})."""
    topic = f"kip392-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)

    def in_sync():
        part = admin.list_topics(topic, timeout=5).topics[topic].partitions[0]
        return part.leader >= 0 and len(part.isrs) == 3

    wait_until(in_sync, 60, f"{topic}: a leader and an ISR of 3")
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                         "log_level": 0})
    for i in range(RECORDS):
        producer.produce(topic, value=b"v%d" % i, partition=0)
    assert producer.flush(30) == 0
    metadata = admin.list_topics(topic, timeout=5)
    addresses = {b.id: f"{b.host}:{b.port}" for b in metadata.brokers.values()}
    return topic, metadata.topics[topic].partitions[0].leader, addresses


def _fetch(address: str, topic: str, rack: str, version: int = 11) -> dict | str:
    """One Fetch of partition 0 from offset 0: error, high watermark, preferred read replica
    and the offsets of the records returned."""
    body = {"replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{
                "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                "last_fetched_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": []}
    if version >= 11:
        body["rack_id"] = rack
    answer = raw.call(address, 1, version, body, raw_records=True)
    if isinstance(answer, str):
        return answer
    [p] = answer["responses"][0]["partitions"]
    offsets = [r.offset for r in iter_records(p["records"] or b"")]
    return {"error": p["error_code"], "high_watermark": p["high_watermark"],
            "preferred": p.get("preferred_read_replica", -1), "offsets": offsets}


def _role(broker_id: int, leader: int, follower: int) -> str:
    return {-1: "none", leader: "leader", follower: "follower on the client's rack"}.get(
        broker_id, f"other broker {broker_id}")


def test_raw_fetches_name_and_serve_the_follower_on_the_clients_rack(racked):
    answers = {}
    for name, cluster in racked.items():
        topic, leader, addresses = _topic_with_records(cluster.bootstrap_servers)
        follower = min(b for b in RACKS if b != leader)
        # the follower serves up to its high watermark, which it learns on its next fetch
        wait_until(lambda: len(_fetch(addresses[follower], topic, "")["offsets"]) == RECORDS,
                   30, f"{name}: follower {follower} serving every record")
        out = {}
        for label, address, rack in (
                ("at the leader, client on the follower's rack", addresses[leader],
                 RACKS[follower]),
                ("at the leader, client on the leader's rack", addresses[leader], RACKS[leader]),
                ("at the leader, client with no rack", addresses[leader], ""),
                ("at the follower, client on its rack", addresses[follower], RACKS[follower])):
            got = _fetch(address, topic, rack)
            out[label] = {**got, "preferred": _role(got["preferred"], leader, follower),
                          "offsets": len(got["offsets"])}
        v10 = _fetch(addresses[follower], topic, "", version=10)
        out["at the follower, Fetch v10"] = {"error": v10["error"]}
        answers[name] = out
    print("\n" + json.dumps(answers, indent=1))
    expected = {
        "at the leader, client on the follower's rack": {
            "error": "NONE", "high_watermark": RECORDS,
            "preferred": "follower on the client's rack", "offsets": 0},
        "at the leader, client on the leader's rack": {
            "error": "NONE", "high_watermark": RECORDS, "preferred": "none", "offsets": RECORDS},
        "at the leader, client with no rack": {
            "error": "NONE", "high_watermark": RECORDS, "preferred": "none", "offsets": RECORDS},
        "at the follower, client on its rack": {
            "error": "NONE", "high_watermark": RECORDS, "preferred": "none", "offsets": RECORDS},
        "at the follower, Fetch v10": {"error": "NOT_LEADER_OR_FOLLOWER"}}
    assert answers["kafka"] == expected
    assert answers["kafkalite"] == answers["kafka"]


def _consume_on_rack(bootstrap: str, topic: str, rack: str) -> tuple[list, list[dict]]:
    """Every record of partition 0 read by a librdkafka consumer on ``rack``, and the
    statistics it emitted meanwhile (and until one shows a fetch from the partition)."""
    stats: list[dict] = []
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"kip392-{topic}",
                         "enable.auto.commit": False, "client.rack": rack,
                         "statistics.interval.ms": 200, "log_level": 0,
                         "stats_cb": lambda text: stats.append(json.loads(text))})
    records = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 60
        while len(records) < RECORDS and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                records.append((message.offset(), message.value()))
        # a statistics interval after the last record, so the counts include the fetches
        seen = len(stats)
        while len(stats) < seen + 2 and time.monotonic() < deadline:
            consumer.poll(0.2)
    finally:
        consumer.close()
    return records, stats


def _fetching(stats: dict, topic: str) -> tuple[int, int, dict[int, int]]:
    """(partition 0's leader, the broker it is fetched from, Fetch requests per broker id)."""
    part = stats["topics"][topic]["partitions"]["0"]
    fetches = {b["nodeid"]: b["req"].get("Fetch", 0) for b in stats["brokers"].values()
               if b["nodeid"] >= 0}
    return part["leader"], part["broker"], fetches


def test_a_consumer_on_a_followers_rack_reads_every_record_from_that_follower(racked):
    answers = {}
    for name, cluster in racked.items():
        topic, leader, _addresses = _topic_with_records(cluster.bootstrap_servers)
        follower = min(b for b in RACKS if b != leader)
        records, stats = _consume_on_rack(cluster.bootstrap_servers, topic, RACKS[follower])
        assert records == [(i, b"v%d" % i) for i in range(RECORDS)], name
        assert stats, f"{name}: no statistics from librdkafka"
        seen_leader, fetched_from, fetches = _fetching(stats[-1], topic)
        print(f"\n{name}: leader {leader}, follower on rack {RACKS[follower]}: {follower}; "
              f"librdkafka: leader {seen_leader}, fetching from {fetched_from}, "
              f"Fetch requests per broker {fetches}")
        answers[name] = {
            "records": len(records), "leader as librdkafka sees it": seen_leader == leader,
            "fetches from": _role(fetched_from, leader, follower),
            "fetches at the follower": fetches.get(follower, 0) > 0}
    assert answers["kafka"] == {"records": RECORDS, "leader as librdkafka sees it": True,
                                "fetches from": "follower on the client's rack",
                                "fetches at the follower": True}
    assert answers["kafkalite"] == answers["kafka"]
