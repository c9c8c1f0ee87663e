"""pytest fixtures that put Apache Kafka 2.8.2 beside kafkalite (registered by the kafkalite plugin).

- ``apache_kafka`` (session): 3 Apache Kafka brokers (:class:`~kafkalite.testing.apache_kafka.
  ApacheKafkaCluster`) on a chroot of the session's ZooKeeper.
- ``shared_kafkalite`` (session): 3 kafkalite brokers on a chroot of their own, shared by the tests
  that do not need a cluster of their own (the tool tests, the conformance suite).
- ``kafka_systems`` (session): ``{"kafkalite": shared_kafkalite, "kafka": apache_kafka}``.
- ``system`` (parametrised by a test with ``@pytest.mark.parametrize("system", SYSTEMS,
  indirect=True)``): one of the two.

Both clusters get the same settings (:data:`SHARED_SETTINGS`), so a difference between them is a
difference of the systems, not of their configuration. When Apache Kafka is not fetched the fixture
fails, naming the fix: in CI a skipped oracle would hide every difference.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import pytest

SYSTEMS = ("kafkalite", "kafka")

# Given to both systems: every other setting is each system's own default.
SHARED_SETTINGS: dict[str, Any] = {
    "min.insync.replicas": 2,
    "default.replication.factor": 3,
    "num.partitions": 1,
    "auto.create.topics.enable": "true",
    "group.initial.rebalance.delay.ms": 0,
    "offsets.topic.num.partitions": 50,
    "delete.topic.enable": "true",
    # the clusters live the whole session and many scenarios write records with fixed
    # timestamps years old, which the default 7-day retention deletes at its next check (Kafka
    # 2.8, and kafkalite, delete even the active segment): no retention check during a run
    # (Kafka still runs one 30 s after start)
    "log.retention.check.interval.ms": 3_600_000,
}


def session_chroot(zookeeper: Any, name: str) -> str:
    """A fresh chroot on the session's ZooKeeper, created, for a cluster that outlives a test."""
    from kafkalite.local.zookeeper import create_chroots

    return create_chroots(zookeeper.connect_string, name)[0]


@contextmanager
def side_by_side(kafkalite: Any, kafka: Any) -> Iterator[None]:
    """Start a kafkalite cluster and a Kafka one at once (the JVMs are the slower to start), run
    the body, and stop both; the brokers' log tails are printed when anything failed."""
    try:
        kafkalite.spawn()
        kafka.start()
        kafkalite.wait_for_brokers(list(kafkalite.brokers))
        yield
    except BaseException:
        print(kafkalite.describe_logs())
        print(kafka.describe_logs())
        raise
    finally:
        kafkalite.stop()
        kafka.stop()


def serve_cluster(request: pytest.FixtureRequest, cluster: Any) -> Iterator[Any]:
    """Body of a fixture that owns ``cluster`` (kafkalite's or Kafka's): start it, yield it, stop
    it; the brokers' log tails are printed when it failed to start or a test failed meanwhile."""
    failed_before = request.session.testsfailed
    try:
        cluster.start()
    except BaseException:
        print(cluster.describe_logs())
        cluster.stop()
        raise
    try:
        yield cluster
    finally:
        if request.session.testsfailed > failed_before:
            print(cluster.describe_logs())
        cluster.stop()


@pytest.fixture(scope="session")
def apache_kafka(request: pytest.FixtureRequest, zookeeper: Any,
                 tmp_path_factory: Any) -> Iterator[Any]:
    from kafkalite.testing.apache_kafka import ApacheKafkaCluster, ApacheKafkaNotFoundError

    chroot = session_chroot(zookeeper, "apache-kafka")
    try:
        cluster = ApacheKafkaCluster(f"{zookeeper.connect_string}{chroot}", 3,
                                     workdir=str(tmp_path_factory.mktemp("apache-kafka")),
                                     overrides=dict(SHARED_SETTINGS))
    except ApacheKafkaNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)
    cluster.zk_chroot = chroot
    yield from serve_cluster(request, cluster)


@pytest.fixture(scope="session")
def shared_kafkalite(request: pytest.FixtureRequest, zookeeper: Any,
                     tmp_path_factory: Any) -> Iterator[Any]:
    from kafkalite.local.cluster import LocalCluster

    chroot = session_chroot(zookeeper, "kl-shared")
    cluster = LocalCluster(f"{zookeeper.connect_string}{chroot}", 3,
                           workdir=str(tmp_path_factory.mktemp("kafkalite-shared")),
                           overrides=dict(SHARED_SETTINGS))
    cluster.zk_chroot = chroot
    yield from serve_cluster(request, cluster)


@pytest.fixture(scope="session")
def kafka_systems(shared_kafkalite: Any, apache_kafka: Any) -> dict[str, Any]:
    return {"kafkalite": shared_kafkalite, "kafka": apache_kafka}


@pytest.fixture
def system(request: pytest.FixtureRequest) -> Any:
    """The cluster named by the test's ``system`` parameter ("kafkalite" or "kafka")."""
    name = getattr(request, "param", None)
    if name not in SYSTEMS:
        raise ValueError(f"parametrize 'system' with one of {SYSTEMS} (indirect=True), "
                         f"not {name!r}")
    fixture = "shared_kafkalite" if name == "kafkalite" else "apache_kafka"
    return request.getfixturevalue(fixture)
