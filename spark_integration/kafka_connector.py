"""Spark's own Kafka connector (``format("kafka")``) beside the kafkalite data source.

kafkalite speaks Kafka's wire protocol, so Spark's connector,
``org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0``, reads and writes its topics unchanged. 4.2.0
is the newest one on Maven Central (there is no 4.3.0, the version of the newest pyspark); it runs
on pyspark 4.3.0. ``scripts/fetch_spark_kafka.sh`` fetches it with Maven, with only the jars pyspark
lacks (kafka-clients 3.9.2, commons-pool2, spark-token-provider-kafka), into a cache outside git.

The jars are passed with ``spark.jars``, not ``spark.jars.packages``: the latter resolves through
Ivy, whose ``local-m2-cache`` resolver takes a pom from ``~/.m2`` and then fails when Maven left no
jar beside it ("download failed: ...lz4-java..."), and it needs the network on every new machine.
``spark.jars`` applies only when the session starts its JVM.
"""

from __future__ import annotations

import glob
import os

__all__ = ["CONNECTOR", "ConnectorNotFoundError", "connector_home", "connector_jars",
           "connector_available", "with_connector"]

CONNECTOR = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
_MAIN_JAR = "spark-sql-kafka-0-10_2.13-4.2.0.jar"


class ConnectorNotFoundError(RuntimeError):
    pass


def connector_home() -> str:
    """The cache the fetch script fills ($KAFKALITE_SPARK_KAFKA_HOME or the default)."""
    return os.environ.get("KAFKALITE_SPARK_KAFKA_HOME") or os.path.expanduser(
        "~/.cache/kafkalite/spark-kafka-4.2.0")


def connector_jars() -> list[str]:
    """The connector's jars (absolute paths), or ConnectorNotFoundError naming the fix."""
    jars = sorted(glob.glob(os.path.join(connector_home(), "jars", "*.jar")))
    if not any(os.path.basename(j) == _MAIN_JAR for j in jars):
        raise ConnectorNotFoundError(
            f"Spark's Kafka connector ({CONNECTOR}) is not in {connector_home()}/jars: run "
            f"scripts/fetch_spark_kafka.sh (scripts/setup.sh --apache-kafka does)")
    return jars


def connector_available() -> bool:
    try:
        connector_jars()
    except ConnectorNotFoundError:
        return False
    return True


def with_connector(conf: dict | None = None) -> dict:
    """``conf`` with the connector's jars added to ``spark.jars``."""
    conf = dict(conf or {})
    jars = [j for j in str(conf.get("spark.jars", "")).split(",") if j]
    conf["spark.jars"] = ",".join(jars + [j for j in connector_jars() if j not in jars])
    return conf
