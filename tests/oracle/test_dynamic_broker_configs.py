"""Dynamic broker configs (KIP-226) on both systems, through confluent-kafka's AdminClient and
Kafka 2.8.2's ``kafka-configs --bootstrap-server``: the same refusals in Kafka's words, and the
same DescribeConfigs answers (value, source, read-only flag, synonyms in Kafka's order) for a
per-broker ``log.retention.ms`` / ``log.retention.bytes`` and a cluster-default ``log.roll.ms``,
on the broker and on a topic.

The clusters are shared by the session: the values set are harmless (a week and a millisecond,
a TiB) and every one is removed at the end, leaving ``{"config":{}}`` znodes as Kafka does.
(confluent-kafka cannot name the cluster default, resource name ``""``: Kafka's tool does that.)
"""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewTopic,
)

from zk_schema import config as s_config
from kafkalite.testing.apache_kafka import run_tool
from kafkalite.local.cluster import wait_until
from kafkalite.testing.oracle_fixtures import SYSTEMS
from kafkalite.zk import ZkClient

pytestmark = [pytest.mark.integration]

SET, DELETE, APPEND = AlterConfigOpType.SET, AlterConfigOpType.DELETE, AlterConfigOpType.APPEND
RETENTION_MS = "604800001"             # a week and a millisecond: deletes nothing
RETENTION_BYTES = "1099511627776"
ROLL_MS = "604800001"
REFUSED = "Invalid config value for resource ConfigResource(type=BROKER, name='{}'): {}"


def _incremental(admin: AdminClient, broker: str, *ops) -> KafkaError | None:
    resource = ConfigResource(ConfigResource.Type.BROKER, broker, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=op) for name, value, op in ops])
    try:
        admin.incremental_alter_configs([resource])[resource].result(30)
    except KafkaException as exc:
        return exc.args[0]
    return None


def _describe(admin: AdminClient, kind, name: str) -> dict:
    resource = ConfigResource(kind, name)
    return admin.describe_configs([resource])[resource].result(30)


def _tool(system, *args: str) -> str:
    done = run_tool("kafka-configs", "--bootstrap-server", system.bootstrap_servers, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _tool_refusal(system, *args: str) -> str:
    done = run_tool("kafka-configs", "--bootstrap-server", system.bootstrap_servers, *args)
    assert done.returncode != 0, done.stdout
    return [line for line in done.stderr.splitlines() if "Exception: " in line][-1]


def _lines(text: str, names) -> dict[str, str]:
    """``{name: line}`` of kafka-configs' ``  name=value sensitive=... synonyms={...}``."""
    out = {}
    for line in text.splitlines():
        name = line.strip().split("=", 1)[0]
        if name in names:
            out[name] = line.strip()
    return out


def _check_refusals(admin: AdminClient, system) -> None:
    answers = {
        "static": _incremental(admin, "1", ("log.retention.hours", "1", SET)),
        "not a number": _incremental(admin, "1", ("log.retention.ms", "abc", SET)),
        "too small": _incremental(admin, "1", ("log.segment.bytes", "5", SET)),
        "append": _incremental(admin, "1", ("log.retention.ms", "5", APPEND)),
    }
    assert {k: (e.code(), e.str()) for k, e in answers.items()} == {
        "static": (KafkaError.INVALID_REQUEST, REFUSED.format(
            "1", "Cannot update these configs dynamically: Set(log.retention.hours)")),
        "not a number": (KafkaError.INVALID_REQUEST, REFUSED.format(
            "1", "Invalid value abc for configuration log.retention.ms: Not a number of "
            "type LONG")),
        "too small": (KafkaError.INVALID_REQUEST, REFUSED.format(
            "1", "Invalid value 5 for configuration log.segment.bytes: Value must be at "
            "least 14")),
        "append": (KafkaError.INVALID_REQUEST,
                   "Config value append is not allowed for config key: log.retention.ms"),
    }
    refusal = _tool_refusal(system, "--entity-type", "brokers", "--entity-default", "--alter",
                            "--add-config", "listeners=PLAINTEXT://:1")
    assert refusal.endswith(REFUSED.format("", "Cannot update these configs at default "
                                               "cluster level, broker id must be specified: "
                                               "Set(listeners)")), refusal


def _check_per_broker(admin: AdminClient, system) -> None:
    assert _incremental(admin, "1", ("log.retention.ms", RETENTION_MS, SET),
                        ("log.retention.bytes", RETENTION_BYTES, SET)) is None
    wait_until(lambda: _describe(admin, ConfigResource.Type.BROKER, "1")[
        "log.retention.bytes"].value == RETENTION_BYTES, 30, "broker 1 to apply its configs")
    configs = _describe(admin, ConfigResource.Type.BROKER, "1")
    seen = {n: (configs[n].value, configs[n].source, configs[n].is_read_only)
            for n in ("log.retention.ms", "log.retention.bytes", "log.retention.hours")}
    assert seen == {
        "log.retention.ms": (RETENTION_MS, ConfigSource.DYNAMIC_BROKER_CONFIG.value, False),
        "log.retention.bytes": (RETENTION_BYTES, ConfigSource.DYNAMIC_BROKER_CONFIG.value,
                                False),
        "log.retention.hours": ("168", ConfigSource.DEFAULT_CONFIG.value, True)}
    every = _tool(system, "--entity-type", "brokers", "--entity-name", "1", "--describe",
                  "--all")
    assert _lines(every, {"log.retention.ms", "log.retention.bytes", "log.retention.minutes"}) \
        == {"log.retention.ms": f"log.retention.ms={RETENTION_MS} sensitive=false synonyms="
                                f"{{DYNAMIC_BROKER_CONFIG:log.retention.ms={RETENTION_MS}, "
                                f"DEFAULT_CONFIG:log.retention.hours=168}}",
            "log.retention.bytes": f"log.retention.bytes={RETENTION_BYTES} sensitive=false "
                                   f"synonyms={{DYNAMIC_BROKER_CONFIG:log.retention.bytes="
                                   f"{RETENTION_BYTES}, DEFAULT_CONFIG:log.retention.bytes=-1}}",
            "log.retention.minutes": "log.retention.minutes=null sensitive=false synonyms={}"}
    dynamic = _tool(system, "--entity-type", "brokers", "--entity-name", "1", "--describe")
    assert dynamic.splitlines()[0] == "Dynamic configs for broker 1 are:"
    assert sorted(dynamic.splitlines()[1:]) == sorted(
        f"  {line}" for line in _lines(every, {"log.retention.ms",
                                               "log.retention.bytes"}).values())


def _check_cluster_default(admin: AdminClient, system, topic: str) -> None:
    assert _tool(system, "--entity-type", "brokers", "--entity-default", "--alter",
                 "--add-config", f"log.roll.ms={ROLL_MS}") == \
        "Completed updating default config for brokers in the cluster.\n"
    expected = ("Default configs for brokers in the cluster are:\n"
                f"  log.roll.ms={ROLL_MS} sensitive=false synonyms="
                f"{{DYNAMIC_DEFAULT_BROKER_CONFIG:log.roll.ms={ROLL_MS}}}\n")
    wait_until(lambda: _tool(system, "--entity-type", "brokers", "--entity-default",
                             "--describe") == expected, 60, "the cluster default to apply")
    for broker in ("1", "2", "3"):
        wait_until(lambda: _describe(admin, ConfigResource.Type.BROKER, broker)[
            "log.roll.ms"].value == ROLL_MS, 30, f"broker {broker} to apply the default")
    roll = _describe(admin, ConfigResource.Type.BROKER, "2")["log.roll.ms"]
    assert (roll.source, roll.is_read_only) == \
        (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value, False)
    segment = _describe(admin, ConfigResource.Type.TOPIC, topic)["segment.ms"]
    assert (segment.value, segment.source) == \
        (ROLL_MS, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    every = _tool(system, "--entity-type", "topics", "--entity-name", topic, "--describe",
                  "--all")
    assert _lines(every, {"segment.ms"}) == {
        "segment.ms": f"segment.ms={ROLL_MS} sensitive=false synonyms={{DYNAMIC_DEFAULT_BROKER_"
                      f"CONFIG:log.roll.ms={ROLL_MS}, DEFAULT_CONFIG:log.roll.hours=168}}"}


def _check_znodes(system) -> None:
    """Kafka's znodes: ``{"version":1,"config":{...}}`` per level, and a ``brokers/<id>`` /
    ``brokers/<default>`` change notification for each."""
    zk = ZkClient(system.zk_connect).start()
    try:
        stored = {level: json.loads(zk.get_data(s_config.broker_config_path(level))[0])
                  for level in (1, None)}
        paths = {n.entity_path for n in zk.get_config_change_notifications().values()}
    finally:
        zk.stop()
    assert stored == {
        1: {"version": 1, "config": {"log.retention.ms": RETENTION_MS,
                                     "log.retention.bytes": RETENTION_BYTES}},
        None: {"version": 1, "config": {"log.roll.ms": ROLL_MS}}}
    assert {"brokers/1", "brokers/<default>"} <= paths


def _restore(admin: AdminClient, system) -> None:
    _incremental(admin, "1", ("log.retention.ms", None, DELETE),
                 ("log.retention.bytes", None, DELETE))
    run_tool("kafka-configs", "--bootstrap-server", system.bootstrap_servers, "--entity-type",
             "brokers", "--entity-default", "--alter", "--delete-config", "log.roll.ms")
    for broker in ("1", "2", "3"):
        wait_until(lambda: not any(
            e.source in (ConfigSource.DYNAMIC_BROKER_CONFIG.value,
                         ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
            for e in _describe(admin, ConfigResource.Type.BROKER, broker).values()),
            60, f"broker {broker}'s dynamic configs to go")


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_dynamic_broker_configs(system):
    admin = AdminClient({"bootstrap.servers": system.bootstrap_servers})
    topic = f"dynamic-broker-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
    try:
        _check_refusals(admin, system)
        _check_per_broker(admin, system)
        _check_cluster_default(admin, system, topic)
        _check_znodes(system)
    finally:
        _restore(admin, system)
        admin.delete_topics([topic])[topic].result(30)
