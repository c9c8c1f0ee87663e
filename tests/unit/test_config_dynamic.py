"""Dynamic broker configs (KIP-226), the pure parts: which names may change at run time (Kafka
2.8's checks and words), the precedence of the levels, and the synonym chains DescribeConfigs
shows (checked against Apache Kafka 2.8.2's answers)."""

import pytest

from kafkalite import config_dynamic as cd
from kafkalite.config import BrokerConfig
from kafkalite.errors import ConfigError
from kafkalite.server import config_admin as ca

H = 3600 * 1000


def static(**settings) -> BrokerConfig:
    values = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181/x"}
    values.update(settings)
    return BrokerConfig.from_dict(values)


@pytest.mark.parametrize("configs, per_broker, message", [
    ({"log.retention.hours": "1"}, True,
     "Cannot update these configs dynamically: Set(log.retention.hours)"),
    ({"broker.id": "5", "zookeeper.connect": "x"}, True,
     "Cannot update these configs dynamically: Set(broker.id, zookeeper.connect)"),
    ({"ssl.keystore.location": "/k"}, True, "These security configs can be dynamically "
     "updated only per-listener using the listener prefix: Set(ssl.keystore.location)"),
    ({"log.retention.ms": "abc"}, True,
     "Invalid value abc for configuration log.retention.ms: Not a number of type LONG"),
    ({"log.segment.bytes": "5"}, True,
     "Invalid value 5 for configuration log.segment.bytes: Value must be at least 14"),
    ({"log.cleanup.policy": "x"}, False,
     "Invalid value x for configuration log.cleanup.policy: String must be one of: compact, "
     "delete"),
    ({"unclean.leader.election.enable": "maybe"}, False, "Invalid value maybe for "
     "configuration unclean.leader.election.enable: Expected value to be either true or false"),
    ({"listeners": "PLAINTEXT://:1"}, True, "kafkalite cannot update these configs "
     "dynamically (it applies them at start-up: edit server.properties and restart): "
     "Set(listeners)"),
    ({"listener.name.external.ssl.keystore.location": "/k"}, True,
     "kafkalite cannot update these configs dynamically"),
])
def test_refused_names_and_values_have_kafkas_words(configs, per_broker, message):
    with pytest.raises(ConfigError) as refused:
        cd.validate_dynamic(configs, per_broker)
    assert refused.value.message.startswith(message)


def test_accepted_names():
    applied = {"log.retention.ms": "1000", "log.retention.bytes": "-1", "log.roll.ms": "60000",
               "log.segment.bytes": "1048576", "message.max.bytes": "2000000",
               "min.insync.replicas": "2", "compression.type": "gzip",
               "log.cleanup.policy": "compact,delete", "log.flush.interval.messages": "10",
               "log.flush.interval.ms": "1000", "unclean.leader.election.enable": "true",
               "log.message.timestamp.type": "LogAppendTime"}
    cd.validate_dynamic(applied, per_broker=False)
    assert set(applied) <= cd.APPLIED_DYNAMIC_CONFIGS
    # Kafka's dynamic configs without effect in kafkalite, and custom names: stored, as Kafka
    cd.validate_dynamic({"num.io.threads": "4", "log.preallocate": "true", "foo.bar": "1"},
                        per_broker=True)
    assert "log.retention.hours" not in cd.KAFKA_DYNAMIC_CONFIGS    # as Kafka 2.8: static


def test_listener_configs_only_per_broker():
    with pytest.raises(ConfigError, match="broker id must be specified"):
        cd.validate_dynamic({"principal.builder.class": "x.Y"}, per_broker=False)
    cd.validate_dynamic({"principal.builder.class": "x.Y"}, per_broker=True)
    with pytest.raises(ConfigError, match=r"broker id must be specified: Set\(listeners\)"):
        cd.validate_dynamic({"listeners": "PLAINTEXT://:1"}, per_broker=False)   # Kafka's words
    with pytest.raises(ConfigError, match="broker id must be specified"):
        cd.validate_dynamic({"listener.name.a.ssl.keystore.location": "/k"}, per_broker=False)


def test_precedence_broker_then_default_then_static_then_default():
    config = static(**{"log.retention.hours": "5", "message.max.bytes": "1000"})
    assert config.retention_ms == 5 * H
    layers = cd.DynamicBrokerConfig(config)
    assert layers.current is config
    current = layers.update(cluster_default={"log.retention.ms": "3000",
                                             "log.segment.bytes": "2048"})
    assert (current.retention_ms, current.log_segment_bytes) == (3000, 2048)
    assert current.message_max_bytes == 1000                       # static, untouched
    assert current.log_retention_hours == 168    # the hidden synonym, as Kafka's overrideProps
    current = layers.update(per_broker={"log.retention.ms": "1000", "message.max.bytes": "7"})
    assert (current.retention_ms, current.message_max_bytes) == (1000, 7)
    defaults = current.topic_defaults()
    assert (defaults.retention_ms, defaults.segment_bytes, defaults.max_message_bytes) == \
        (1000, 2048, 7)
    assert defaults.with_overrides({"retention.ms": "9"}).retention_ms == 9   # topic wins
    current = layers.update(per_broker={})
    assert (current.retention_ms, current.message_max_bytes) == (3000, 1000)
    assert layers.update(cluster_default={}) == config
    assert layers.static is config and config.retention_ms == 5 * H     # static unchanged


def test_invalid_stored_entries_are_ignored_one_by_one():
    layers = cd.DynamicBrokerConfig(static())
    current = layers.update(cluster_default={"log.retention.ms": "x", "log.roll.ms": "5000",
                                             "broker.id": "9", "listeners": "PLAINTEXT://:1"})
    assert layers.cluster_default == {"log.roll.ms": "5000"}
    assert (current.broker_id, current.roll_ms, current.retention_ms) == (1, 5000, 168 * H)


def test_synonym_chains_in_kafkas_order():
    """As Kafka 2.8.2 described broker 1 (static log.retention.hours=100, cluster default
    log.retention.ms=3000 and log.roll.ms=70000, broker 1's log.retention.ms=1000)."""
    layers = cd.DynamicBrokerConfig(static(**{"log.retention.hours": "100"}))
    layers.update(cluster_default={"log.retention.ms": "3000", "log.roll.ms": "70000",
                                   "message.max.bytes": "2000000"},
                  per_broker={"log.retention.ms": "1000"})
    own = {c.name: c for c in ca.describe_broker_config(layers.static, None, True, False,
                                                         layers)}
    assert own["log.retention.ms"].value == "1000"
    assert own["log.retention.ms"].synonyms == [
        ("log.retention.ms", "1000", cd.DYNAMIC_BROKER_CONFIG),
        ("log.retention.ms", "3000", cd.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.retention.hours", "100", cd.STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", cd.DEFAULT_CONFIG)]
    hours = own["log.retention.hours"]     # Kafka's quirk: the effective value, static source
    assert (hours.value, hours.config_source) == ("168", cd.STATIC_BROKER_CONFIG)
    assert own["log.roll.ms"].synonyms == [
        ("log.roll.ms", "70000", cd.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.roll.hours", "168", cd.DEFAULT_CONFIG)]
    assert (own["message.max.bytes"].value, own["message.max.bytes"].config_source) == \
        ("2000000", cd.DYNAMIC_DEFAULT_BROKER_CONFIG)
    default = ca.describe_default_broker_config(layers, None, True)
    assert [(c.name, c.value, c.config_source, c.synonyms) for c in default] == [
        ("log.retention.ms", "3000", 3, [("log.retention.ms", "3000", 3)]),
        ("log.roll.ms", "70000", 3, [("log.roll.ms", "70000", 3)]),
        ("message.max.bytes", "2000000", 3, [("message.max.bytes", "2000000", 3)])]
    topic = {c.name: c for c in ca.describe_topic_config(layers.static, {"retention.ms": "7777"},
                                                         None, True, False, layers)}
    assert topic["retention.ms"].synonyms[:3] == [
        ("retention.ms", "7777", ca.DYNAMIC_TOPIC_CONFIG),
        ("log.retention.ms", "1000", cd.DYNAMIC_BROKER_CONFIG),
        ("log.retention.ms", "3000", cd.DYNAMIC_DEFAULT_BROKER_CONFIG)]
    assert (topic["segment.ms"].value, topic["segment.ms"].config_source) == \
        ("70000", cd.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert (topic["max.message.bytes"].value, topic["max.message.bytes"].synonyms) == \
        ("2000000", [("message.max.bytes", "2000000", cd.DYNAMIC_DEFAULT_BROKER_CONFIG),
                     ("message.max.bytes", "1048588", cd.DEFAULT_CONFIG)])


def test_custom_dynamic_configs_are_described_as_kafka_does():
    layers = cd.DynamicBrokerConfig(static())
    layers.update(per_broker={"foo.bar": "5", "num.io.threads": "4"})
    own = {c.name: c for c in ca.describe_broker_config(layers.static, None, True, False,
                                                         layers)}
    custom = own["foo.bar"]        # Kafka knows no type: sensitive, value hidden, read-only
    assert (custom.value, custom.is_sensitive, custom.read_only, custom.config_source) == \
        (None, True, True, cd.DYNAMIC_BROKER_CONFIG)
    threads = own["num.io.threads"]
    assert (threads.value, threads.read_only, threads.config_source) == \
        ("4", False, cd.DYNAMIC_BROKER_CONFIG)
