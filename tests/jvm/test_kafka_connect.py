"""Kafka Connect 2.8.2, a distributed worker, on 3 brokers of each system (issue 25, item 3).

One ``ConnectDistributed`` worker per system (kafkalite/testing/kafka_connect.py) on 3 brokers
of the module's own (rf 3, min.insync.replicas 2; a broker is killed, so the shared session
clusters are not for this), the same tests on kafkalite and on Apache Kafka 2.8.2:

- the worker creates its config, offset and status topics itself, with its replication factor and
  partition settings and ``cleanup.policy=compact``: read back with confluent-kafka's AdminClient;
- a FileStreamSource and a FileStreamSink connector, created through the REST API, copy a file of
  lines through a topic into another file: the sink file equals the source file, and the topic's
  records read by confluent-kafka are the lines, in order;
- the same copy while the leader of the data topic is killed with SIGKILL (it stays down): the
  source file is written in chunks kept at most two chunks ahead of the sink file, the kill comes
  with a quarter of the lines copied and the next ones in flight, the rest is appended after it.
  The sink file ends with every source line, in order, and the connectors RUNNING.
  At-least-once allows duplicates (the sink rewinds to its last committed offset after a failure,
  a producer retry can append a batch twice): they must have that shape, and are counted and
  printed.
"""

from __future__ import annotations

import os
import uuid
from typing import Any, Iterator

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource
from jvm_apps import create_topic, unique

from kafkalite.local.cluster import wait_until
from kafkalite.testing.apache_kafka import ApacheKafkaNotFoundError
from kafkalite.testing.independent_read import read_to_end
from kafkalite.testing.kafka_connect import (CLUSTER_SETTINGS, INTERNAL, SINK, ConnectWorker,
                                             PacedWriter, append_lines, check_at_least_once,
                                             file_copy_configs, full_lines, worker_settings)
from kafkalite.testing.oracle_fixtures import SYSTEMS, session_chroot

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

LINES = 2000


@pytest.fixture(scope="module", params=SYSTEMS)
def cluster(request: pytest.FixtureRequest, zookeeper: Any,
            tmp_path_factory: Any) -> Iterator[Any]:
    chroot = session_chroot(zookeeper, f"connect-{request.param}")
    zk = f"{zookeeper.connect_string}{chroot}"
    workdir = str(tmp_path_factory.mktemp(f"connect-{request.param}"))
    if request.param == "kafka":
        from kafkalite.testing.apache_kafka import ApacheKafkaCluster
        try:
            made = ApacheKafkaCluster(zk, 3, workdir=workdir, overrides=dict(CLUSTER_SETTINGS))
        except ApacheKafkaNotFoundError as exc:
            pytest.fail(str(exc), pytrace=False)
    else:
        from kafkalite.local.cluster import LocalCluster
        made = LocalCluster(zk, 3, workdir=workdir, overrides=dict(CLUSTER_SETTINGS))
    failed_before = request.session.testsfailed
    started = False
    try:
        made.start()
        started = True
        yield made
    finally:
        if not started or request.session.testsfailed > failed_before:
            print(made.describe_logs())
        for broker_id in list(made.brokers):    # nothing of it is kept: no graceful shutdown
            made.kill(broker_id)
        made.stop()


@pytest.fixture(scope="module")
def worker(request: pytest.FixtureRequest, cluster: Any,
           tmp_path_factory: Any) -> Iterator[ConnectWorker]:
    group = unique("connect")
    made = ConnectWorker(cluster.bootstrap_servers, str(tmp_path_factory.mktemp("connect-worker")),
                         group, worker_settings(group))
    failed_before = request.session.testsfailed
    started = False
    try:
        made.start()
        started = True
        yield made
    except ApacheKafkaNotFoundError as exc:     # Connect's jars come with Kafka's
        pytest.fail(str(exc), pytrace=False)
    finally:
        if not started or request.session.testsfailed > failed_before:
            print(made.describe(200))
        made.kill()     # its brokers go next: no graceful shutdown to wait for


def _lines(count: int, start: int = 0) -> list[str]:
    """Unique lines (a duplicate is recognisable), of a few words and varied length."""
    tag = uuid.uuid4().hex[:6]
    return [f"{tag} line {i:05d} " + "ab" * (i % 17) for i in range(start, start + count)]


def _copy(worker: ConnectWorker, name: str, bootstrap: str, workdir: str
          ) -> tuple[str, str, str]:
    """A topic and a FileStreamSource -> topic -> FileStreamSink pair on two files (the source
    file exists, empty); their names."""
    topic = f"{name}-lines"
    create_topic(bootstrap, topic, 1)    # one partition: the lines keep their order
    source_file, sink_file = (os.path.join(workdir, f"{name}.{kind}.txt")
                              for kind in ("source", "sink"))
    append_lines(source_file, [])
    for connector, config in file_copy_configs(name, topic, source_file, sink_file).items():
        worker.create_connector(connector, config)
    for connector in (f"{name}-source", f"{name}-sink"):
        wait_until(lambda: worker.running(connector), 60, f"{connector} RUNNING",
                   interval_s=0.25, on_timeout=worker.describe)
    return topic, source_file, sink_file


def _records(bootstrap: str, topic: str, partitions: int = 1) -> list[tuple[bytes, bytes]]:
    """Every record of ``topic`` to its end, as (key, value), read by confluent-kafka."""
    return [(m.key(), m.value()) for m in read_to_end(bootstrap, topic, partitions)]


def _topic_values(bootstrap: str, topic: str) -> list[str]:
    """The lines in the data topic (one partition; FileStreamSource sends no key)."""
    records = _records(bootstrap, topic)
    assert {key for key, _ in records} <= {None}
    return [value.decode() for _, value in records]


def test_worker_creates_its_compacted_internal_topics(cluster, worker):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    names = {kind: worker.properties[f"{kind}.storage.topic"] for kind in INTERNAL}
    # the REST API answers before the herder has created them (Kafka's worker does so too), and
    # a broker lists a new topic only once the controller's metadata reached it

    def listed() -> dict:
        topics = admin.list_topics(timeout=10).topics
        return topics if set(names.values()) <= set(topics) else {}
    topics = wait_until(listed, 60, f"the worker's topics {sorted(names.values())}",
                        on_timeout=lambda: f"{sorted(admin.list_topics(timeout=10).topics)}\n"
                                           f"{worker.describe()}")
    for kind, name in names.items():
        partitions = topics[name].partitions
        assert len(partitions) == INTERNAL[kind], (name, len(partitions))
        assert all(len(p.replicas) == 3 and len(p.isrs) == 3 for p in partitions.values()), name
    resources = [ConfigResource(ConfigResource.Type.TOPIC, name) for name in names.values()]
    # asked again while it fails: a broker answers UNKNOWN_TOPIC_OR_PARTITION until the
    # controller's metadata reached it (seen on Kafka right after the topics were listed)
    described = wait_until(lambda: {r.name: {k: v.value for k, v in f.result(30).items()}
                                    for r, f in admin.describe_configs(resources).items()},
                           60, "the configs of the worker's topics", interval_s=0.25)
    for name, config in described.items():
        assert config["cleanup.policy"] == "compact", (name, config["cleanup.policy"])
        assert config["min.insync.replicas"] == "2", name    # the cluster's, not overridden
    # the worker keeps its connectors' configs and statuses there: a connector made now is in them
    worker.create_connector("probe", {"connector.class": SINK, "tasks.max": "1",
                                      "file": os.path.join(worker.workdir, "probe.txt"),
                                      "topics": unique("probe")})
    wait_until(lambda: worker.running("probe"), 60, "the probe connector RUNNING",
               interval_s=0.25, on_timeout=worker.describe)
    assert "probe" in worker.request("GET", "/connectors")
    bootstrap = cluster.bootstrap_servers
    config_keys = {key for key, _ in _records(bootstrap, names["config"], INTERNAL["config"])}
    assert {b"connector-probe", b"task-probe-0", b"commit-probe"} <= config_keys, config_keys
    status_keys = {key for key, _ in _records(bootstrap, names["status"], INTERNAL["status"])}
    assert {b"status-connector-probe", b"status-task-probe-0"} <= status_keys, status_keys
    worker.request("DELETE", "/connectors/probe")


def test_file_source_to_sink_through_a_topic(cluster, worker, tmp_path):
    bootstrap = cluster.bootstrap_servers
    name = unique("copy")
    topic, source_file, sink_file = _copy(worker, name, bootstrap, str(tmp_path))
    lines = _lines(LINES)
    append_lines(source_file, lines[:LINES // 2])
    wait_until(lambda: full_lines(sink_file) == lines[:LINES // 2], 60, "the first half copied",
               interval_s=0.2, on_timeout=lambda: f"{len(full_lines(sink_file))} lines in sink")
    append_lines(source_file, lines[LINES // 2:])   # the source tails its file
    wait_until(lambda: len(full_lines(sink_file)) >= LINES, 60, "every line in the sink file",
               interval_s=0.2, on_timeout=lambda: f"{len(full_lines(sink_file))} lines in sink")
    with open(sink_file, "rb") as sink, open(source_file, "rb") as source:
        assert sink.read() == source.read()
    assert _topic_values(bootstrap, topic) == lines


def test_copy_survives_a_kill_of_the_data_topic_leader(cluster, worker, tmp_path):
    bootstrap = cluster.bootstrap_servers
    name = unique("kill")
    topic, source_file, sink_file = _copy(worker, name, bootstrap, str(tmp_path))
    lines = _lines(LINES)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    leader = admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader
    writer = PacedWriter(source_file, sink_file, lines, chunk=100)
    writer.start()
    # mid-copy: a quarter of the lines copied, the next ones in flight, the rest not yet written
    wait_until(lambda: writer.error or len(full_lines(sink_file)) >= LINES // 4, 60,
               "a quarter of the lines in the sink file", interval_s=0.02,
               on_timeout=worker.describe)
    cluster.kill(leader)
    at_kill = (len(full_lines(sink_file)), writer.appended)
    writer.join(150)
    assert not writer.is_alive() and writer.error is None, (writer.error, worker.describe())

    def copied() -> bool:
        got = full_lines(sink_file)
        return len(got) >= LINES and set(got) == set(lines)
    wait_until(copied, 120, f"every line in the sink file after broker {leader} was killed",
               interval_s=0.25, on_timeout=lambda: f"{len(set(full_lines(sink_file)))} of "
               f"{LINES} lines in sink\n{worker.describe()}")
    assert full_lines(source_file) == lines
    sink_duplicates = check_at_least_once(full_lines(sink_file), lines)
    topic_duplicates = check_at_least_once(_topic_values(cluster.bootstrap_servers, topic), lines)
    for connector in (f"{name}-source", f"{name}-sink"):
        assert worker.running(connector), worker.status(connector)
    print(f"\nbroker {leader} (leader of {topic}) killed with {at_kill[0]} lines in the sink "
          f"file, {at_kill[1]} of {LINES} in the source file; duplicates: {sink_duplicates} in "
          f"the sink file, {topic_duplicates} in the topic")
