"""``kafkalite log-dirs``: Kafka's kafka-log-dirs tool.

    kafkalite log-dirs --describe --bootstrap-server h:9092 [--broker-list 1,2] [--topic-list t1,t2]

asks each broker (all of them unless ``--broker-list``) for its data directories (DescribeLogDirs)
and prints what Kafka's tool prints: two lines, then one line of JSON::

    Querying brokers for log directories information
    Received log directory information from brokers 1,2
    {"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/data/k1","error":null,
     "partitions":[{"partition":"t-0","size":210,"offsetLag":0,"isFuture":false}]}]}, ...]}

``error`` is the Java class name of a directory's error (an offline one:
``org.apache.kafka.common.errors.KafkaStorageException``), as Kafka's tool names it.
"""

from __future__ import annotations

import json

import click

from kafkalite.jvm_hashing import (java_hash_map_order, java_string_hash,
                                     scala_hash_map_order, topic_partition_hash)
from kafkalite.cli.options import CliError, admin_client, bootstrap_option, quiet_client_logs

#: Kafka's exception class names for the errors a log dir can carry (the rest are derived)
_JAVA_NAMES = {"KAFKA_STORAGE_ERROR": "KafkaStorageException",
               "UNKNOWN_SERVER_ERROR": "UnknownServerException"}


def java_error_name(error) -> str | None:
    """``org.apache.kafka.common.errors.KafkaStorageException`` for KAFKA_STORAGE_ERROR."""
    if error is None:
        return None
    name = getattr(error, "name", None) or type(error).__name__
    simple = _JAVA_NAMES.get(name) or "".join(
        part.capitalize() for part in name.removesuffix("_ERROR").split("_")) + "Exception"
    return f"org.apache.kafka.common.errors.{simple}"


def report(described: dict, topics: set[str]) -> dict:
    """Kafka's JSON of ``AdminClient.describe_log_dirs``' answer; only the partitions of
    ``topics`` when some are given. In Kafka's order: its tool iterates a Java map of log dirs
    and Scala maps of brokers and of partitions (``kafkalite.jvm_hashing``)."""
    return {"version": 1, "brokers": [
        {"broker": broker_id, "logDirs": [
            _log_dir(log_dir, described[broker_id][log_dir], topics)
            for log_dir in java_hash_map_order(described[broker_id], java_string_hash)]}
        for broker_id in scala_hash_map_order(described, int)]}


def _log_dir(log_dir: str, info, topics: set[str]) -> dict:
    def tp_hash(tp):
        return topic_partition_hash(tp.topic, tp.partition)

    kept = [tp for tp in java_hash_map_order(info.replicas, tp_hash)
            if not topics or tp.topic in topics]
    return {"logDir": log_dir, "error": java_error_name(info.error), "partitions": [
        {"partition": f"{tp.topic}-{tp.partition}", "size": info.replicas[tp].size,
         "offsetLag": info.replicas[tp].offset_lag, "isFuture": info.replicas[tp].is_future}
        for tp in scala_hash_map_order(kept, tp_hash)]}


def _int_list(text: str, option: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part]
    except ValueError:
        raise CliError(f"{option} takes broker ids like 1,2,3, not {text!r}") from None


@click.command("log-dirs", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--describe", is_flag=True,
              help="describe the log directories of the brokers (required)")
@click.option("--broker-list", help="the brokers to ask, e.g. 0,1,2 (default: all of them)")
@click.option("--topic-list", default="",
              help="only these topics' partitions, e.g. t1,t2 (default: every topic)")
@bootstrap_option
def command(describe, broker_list, topic_list, bootstrap_server):
    """Describe the brokers' log directories (Kafka's kafka-log-dirs)."""
    if not describe:
        raise CliError('Missing required argument "[describe]"')
    topics = {t for t in topic_list.split(",") if t}
    quiet_client_logs()
    with admin_client(bootstrap_server) as admin:
        broker_ids = (_int_list(broker_list, "--broker-list") if broker_list is not None
                      else sorted(b.node_id for b in admin.describe_cluster().brokers))
        click.echo("Querying brokers for log directories information")
        described = admin.describe_log_dirs(broker_ids)
    click.echo(f"Received log directory information from brokers "
               f"{','.join(map(str, broker_ids))}")
    click.echo(json.dumps(report(described, topics), separators=(",", ":")))
