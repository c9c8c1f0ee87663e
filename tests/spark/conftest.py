"""Fixtures for the Spark tests: one SparkSession and one kafkalite cluster per test module.

The Spark tests skip (saying why) only when pyspark, pyarrow or Java is missing. A SparkSession
is expensive (the first read through a Python data source takes 12-16 s on 2 cores), so each
module gets one, on local[2], and stops it at the end.
"""

from __future__ import annotations

import pytest

from spark_integration.session import spark_unavailable_reason

SPARK_MISSING = spark_unavailable_reason()


def pytest_collection_modifyitems(config, items):
    """Skip the tests that need Spark before any fixture (ZooKeeper, brokers) starts."""
    if not SPARK_MISSING:
        return
    skip = pytest.mark.skip(reason=f"Spark tests need pyspark, pyarrow and Java: "
                                   f"{SPARK_MISSING}")
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(skip)


def _cluster(request, zookeeper, tmp_path_factory, num_brokers: int, overrides: dict):
    from kafkalite.local.cluster import LocalCluster
    from kafkalite.local.zookeeper import unique_chroot

    chroot = unique_chroot(f"kl-spark-{request.module.__name__.rsplit('.', 1)[-1]}")
    cluster = LocalCluster(f"{zookeeper.connect_string}{chroot}", num_brokers,
                           workdir=str(tmp_path_factory.mktemp("spark-cluster")),
                           overrides=overrides)
    try:
        cluster.start()
    except BaseException:
        print(cluster.describe_logs())
        cluster.stop()
        raise
    return cluster


# A follower whose first fetch of a new topic reaches the leader before the leader's own
# LeaderAndIsr stops fetching that partition (replica_fetcher: UNKNOWN_TOPIC_OR_PARTITION ->
# "waiting for the controller"), so acks=all waits until the ISR shrinks after
# replica.lag.time.max.ms (30 s by default). A short lag time bounds that stall.
# the modules' records carry fixed timestamps years old, which the default 7-day retention would
# delete at a retention check mid-module (Kafka 2.8, and kafkalite since, delete even the active
# segment): no retention check while a module runs
DEFAULT_OVERRIDES = {"replica.lag.time.max.ms": 5000, "log.retention.check.interval.ms": 3_600_000}


@pytest.fixture(scope="module")
def spark_cluster(request, zookeeper, tmp_path_factory):
    """Three real brokers for this module (``CLUSTER_OVERRIDES`` in the module adds settings)."""
    overrides = {**DEFAULT_OVERRIDES, **getattr(request.module, "CLUSTER_OVERRIDES", {})}
    brokers = getattr(request.module, "CLUSTER_BROKERS", 3)
    cluster = _cluster(request, zookeeper, tmp_path_factory, brokers, overrides)
    yield cluster
    failed = request.session.testsfailed
    if failed:
        print(cluster.describe_logs())
    cluster.stop()


@pytest.fixture(scope="module")
def bootstrap(spark_cluster) -> str:
    return spark_cluster.bootstrap_servers


@pytest.fixture(scope="module")
def spark():
    """A local[2] SparkSession for this module (UI off, 2 shuffle partitions)."""
    if SPARK_MISSING:
        pytest.skip(f"Spark tests need pyspark, pyarrow and Java: {SPARK_MISSING}")
    from spark_integration.kafka_connector import connector_available
    from spark_integration.session import spark_session

    # register_source=False: the format must be found by PySpark's auto-discovery.
    # Spark's own Kafka connector joins whenever it is fetched: spark.jars acts only when the
    # JVM starts, and the first module's session starts the one JVM every later module reuses
    # (tests/spark/test_spark_kafka_connector.py fails, naming the fetch script, without it).
    session = spark_session("kafkalite-tests", "local[2]", driver_memory="1g",
                            register_source=False, log_level="ERROR",
                            kafka_connector=connector_available())
    yield session
    session.stop()
