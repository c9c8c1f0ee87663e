"""Dynamic broker configs (KIP-226) take effect on a real kafkalite broker: a per-broker
``log.retention.ms`` set with IncrementalAlterConfigs deletes the old segments of topics without
their own ``retention.ms`` at the next retention check; the znodes written are Kafka's; configs
written with Kafka 2.8.2's ``kafka-configs --zookeeper`` (while the broker is down, as that tool
requires) are read at start-up, and znodes changed while it runs are picked up through
``/config/changes``."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic,
)

from zk_schema import config as s_config
from kafkalite.cli.main import main
from kafkalite.testing.apache_kafka import run_tool
from kafkalite.local.cluster import wait_until
from kafkalite.zk import ZkClient

pytestmark = [pytest.mark.integration]

DYNAMIC_BROKER = 2            # Kafka's ConfigSource ids (confluent-kafka's ConfigSource values)
DYNAMIC_DEFAULT = 3


def _low_watermark(servers: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": servers, "group.id": f"wm-{uuid.uuid4().hex[:6]}"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[0]
    finally:
        consumer.close()


def _broker_config(admin: AdminClient, broker: str) -> dict:
    resource = ConfigResource(ConfigResource.Type.BROKER, broker)
    return admin.describe_configs([resource])[resource].result(30)


def _set(admin: AdminClient, broker: str, name: str, value: str | None) -> None:
    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    resource = ConfigResource(ConfigResource.Type.BROKER, broker, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=op)])
    admin.incremental_alter_configs([resource])[resource].result(30)


def test_per_broker_retention_deletes_old_segments(kafkalite_cluster_factory):
    cluster = kafkalite_cluster_factory(1, **{"log.retention.check.interval.ms": 300})
    servers = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": servers})
    short, kept = f"dyn-short-{uuid.uuid4().hex[:6]}", f"dyn-kept-{uuid.uuid4().hex[:6]}"
    for topic, extra in ((short, {}), (kept, {"retention.ms": "604800000"})):
        admin.create_topics([NewTopic(topic, 1, 1, config={"segment.bytes": "1024",
                                                            **extra})])[topic].result(30)
    producer = Producer({"bootstrap.servers": servers, "linger.ms": 0})
    for _batch in range(12):            # one batch per flush: several 1 KiB segments each
        for topic in (short, kept):
            for _ in range(5):
                producer.produce(topic, value=b"x" * 100, partition=0)
        assert producer.flush(30) == 0
    assert _low_watermark(servers, short) == 0          # a week's retention keeps everything

    _set(admin, "1", "log.retention.ms", "1000")
    wait_until(lambda: _low_watermark(servers, short) > 0, 60,
               "the old segments of a topic without retention.ms to go")
    assert _low_watermark(servers, kept) == 0           # its own override still wins
    entry = _broker_config(admin, "1")["log.retention.ms"]
    assert (entry.value, entry.source) == ("1000", DYNAMIC_BROKER)

    zk = ZkClient(cluster.zk_connect).start()
    try:
        data, _ = zk.get_data(s_config.broker_config_path(1))
        assert json.loads(data) == {"version": 1, "config": {"log.retention.ms": "1000"}}
        notes = zk.get_config_change_notifications()
        assert "brokers/1" in {note.entity_path for note in notes.values()}
        # a znode changed behind the broker's back, while it runs, is picked up
        zk.set_broker_config(None, {"message.max.bytes": "2000000"})
        wait_until(lambda: _broker_config(admin, "1")["message.max.bytes"].value == "2000000",
                   30, "the cluster default written to ZooKeeper to apply")
        assert _broker_config(admin, "1")["message.max.bytes"].source == DYNAMIC_DEFAULT
    finally:
        zk.stop()
    _set(admin, "1", "log.retention.ms", None)
    wait_until(lambda: _broker_config(admin, "1")["log.retention.ms"].value is None, 30,
               "the deleted per-broker value to go")


def test_kafka_configs_zookeeper_configs_are_read_at_start_up(kafkalite_cluster_factory, capsys):
    cluster = kafkalite_cluster_factory(1)
    zk_connect = cluster.zk_connect
    assert cluster.terminate(1) == 0         # Kafka's tool refuses while the broker runs
    for entity in (("--entity-name", "1", "log.retention.bytes=123456789"),
                   ("--entity-default", "log.roll.ms=604800001")):
        done = run_tool("kafka-configs", "--zookeeper", zk_connect, "--entity-type", "brokers",
                        "--alter", *entity[:-1], "--add-config", entity[-1])
        assert done.returncode == 0, done.stderr
    cluster.restart(1)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    configs = _broker_config(admin, "1")
    assert (configs["log.retention.bytes"].value, configs["log.retention.bytes"].source) == \
        ("123456789", DYNAMIC_BROKER)
    assert (configs["log.roll.ms"].value, configs["log.roll.ms"].source) == \
        ("604800001", DYNAMIC_DEFAULT)
    described = run_tool("kafka-configs", "--bootstrap-server", cluster.bootstrap_servers,
                         "--entity-type", "brokers", "--entity-default", "--describe")
    assert described.stdout == (
        "Default configs for brokers in the cluster are:\n  log.roll.ms=604800001 "
        "sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.roll.ms=604800001}\n")
    # kafkalite's own command, on the same levels
    conn = ("--bootstrap-server", cluster.bootstrap_servers)
    assert main(["configs", "--alter", "--broker", "1", "--add-config", "log.retention.ms=5000",
                 *conn]) == 0
    wait_until(lambda: _broker_config(admin, "1")["log.retention.ms"].value == "5000", 30,
               "kafkalite configs --alter --broker 1 to apply")
    capsys.readouterr()
    assert main(["configs", "--describe", "--broker-defaults", *conn]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Default configs for brokers in the cluster are:\n  log.roll.ms="
                          "604800001"), out
