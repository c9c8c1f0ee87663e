"""The pipeline's topic source and sink, through either connector.

``kafkalite`` is this project's PySpark data source (``format("kafkalite")``); ``kafka`` is Spark's
own Kafka connector (``format("kafka")``, spark-sql-kafka-0-10, whose jars the session must have:
:mod:`spark_integration.kafka_connector`). Both read a topic as rows of key, value (binary),
topic, partition, offset, timestamp, and write rows of key and value, so the pipeline above them is
the same and must give the same window totals on the same input.
"""

from __future__ import annotations

__all__ = ["CONNECTORS", "topic_stream", "topic_sink"]

CONNECTORS = ("kafkalite", "kafka")


def _check(connector: str) -> None:
    if connector not in CONNECTORS:
        raise ValueError(f"connector must be one of {CONNECTORS}, not {connector!r}")


def topic_stream(spark, connector: str, bootstrap_servers: str, topic: str, *,
                 starting_offsets: str = "earliest", max_offsets_per_trigger: int | None = None):
    """A streaming DataFrame of ``topic``'s records."""
    _check(connector)
    reader = (spark.readStream.format(connector)
              .option(f"{connector}.bootstrap.servers", bootstrap_servers)
              .option("subscribe", topic)
              .option("startingOffsets", starting_offsets))
    if connector == "kafka":
        # as the kafkalite source does: a record gone before it was read fails the query
        reader = reader.option("failOnDataLoss", "true")
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    return reader.load()


def topic_sink(frame, connector: str, bootstrap_servers: str, topic: str):
    """A DataStreamWriter of ``frame`` (key, value columns) to ``topic``."""
    _check(connector)
    return (frame.writeStream.format(connector)
            .option(f"{connector}.bootstrap.servers", bootstrap_servers)
            .option("topic", topic))
