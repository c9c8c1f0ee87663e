"""config_describe against Kafka 2.8.2's own config definitions (``config_kafka_table``, checked
against the jars by tests/oracle/test_kafka_config_table.py): the names, types and synonyms a
DescribeConfigs answer carries."""

from kafkalite.config import BROKER_BY_NAME, BROKER_NO_EFFECT, BrokerConfig, TOPIC_BY_NAME
from kafkalite.config_dynamic import KAFKA_DYNAMIC_CONFIGS, DynamicBrokerConfig
from kafkalite.config_kafka_table import (
    KAFKA_BROKER_DEFS, KAFKA_LISTED_BROKER_CONFIGS, KAFKA_TOPIC_DEFS,
)
from kafkalite.server import config_describe as cd


def _config(**settings) -> BrokerConfig:
    return BrokerConfig.from_dict({"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181/x",
                                   **settings})


def test_kafkalite_knows_kafkas_dynamic_configs_and_names():
    assert set(KAFKA_DYNAMIC_CONFIGS) == {n for n, d in KAFKA_BROKER_DEFS.items() if d.dynamic}
    assert set(KAFKA_BROKER_DEFS) <= set(BROKER_BY_NAME) | set(BROKER_NO_EFFECT)
    # every topic config kafkalite applies has Kafka's broker synonym
    for name, definition in TOPIC_BY_NAME.items():
        assert KAFKA_TOPIC_DEFS[name].synonym == definition.topic_name, name


def test_kafkas_broker_synonyms():
    assert cd.kafka_broker_synonyms("log.retention.hours") == [
        "log.retention.ms", "log.retention.minutes", "log.retention.hours"]
    assert cd.kafka_broker_synonyms("log.roll.jitter.ms") == ["log.roll.jitter.ms",
                                                              "log.roll.jitter.hours"]
    assert cd.kafka_broker_synonyms("log.flush.interval.ms") == [
        "log.flush.interval.ms", "log.flush.scheduler.interval.ms"]
    assert cd.kafka_broker_synonyms("listener.name.sasl_ssl.plain.sasl.jaas.config") == [
        "listener.name.sasl_ssl.plain.sasl.jaas.config", "sasl.jaas.config"]
    assert cd.kafka_broker_synonyms("listener.name.ssl.ssl.client.auth") == [
        "listener.name.ssl.ssl.client.auth", "ssl.client.auth"]
    assert cd.kafka_broker_type("listener.name.ssl.ssl.key.password") == "password"
    assert cd.kafka_broker_type("super.users") is None


def test_a_broker_lists_kafkas_names_and_what_it_was_given():
    static = _config(**{"num.io.threads": "4", "super.users": "User:admin",
                        "listener.name.plaintext.max.connections": "10", "foo.bar": "x"})
    own = {c.name: c for c in cd.describe_broker_config(static, None, True)}
    extra = set(own) - set(KAFKA_LISTED_BROKER_CONFIGS)
    assert extra == {"super.users", "listener.name.plaintext.max.connections", "foo.bar"}
    assert (own["num.io.threads"].value, own["num.io.threads"].config_source,
            own["num.io.threads"].synonyms) == (
        "4", cd.STATIC_BROKER_CONFIG, [("num.io.threads", "4", cd.STATIC_BROKER_CONFIG),
                                       ("num.io.threads", "8", cd.DEFAULT_CONFIG)])
    # a listener override has its base's type (Kafka's configType) and the base as synonym
    listener = own["listener.name.plaintext.max.connections"]
    assert (listener.value, listener.is_sensitive, listener.config_type, listener.synonyms) == (
        "10", False, 3, [("listener.name.plaintext.max.connections", "10",
                          cd.STATIC_BROKER_CONFIG),
                         ("max.connections", "2147483647", cd.DEFAULT_CONFIG)])
    for name in ("super.users", "foo.bar"):       # no Kafka type: sensitive, value hidden
        assert (own[name].value, own[name].is_sensitive, own[name].config_type) == \
            (None, True, cd.CONFIG_TYPE_UNKNOWN)


def test_no_effect_topic_configs_follow_their_broker_synonyms():
    layers = DynamicBrokerConfig(_config(**{"log.roll.jitter.hours": "2",
                                            "log.message.downconversion.enable": "false"}))
    layers.update(per_broker={"log.cleaner.min.compaction.lag.ms": "500"})
    topic = {c.name: c for c in cd.describe_topic_config(layers.static, {"preallocate": "true"},
                                                         None, True, False, layers)}
    assert (topic["segment.jitter.ms"].value, topic["segment.jitter.ms"].synonyms) == (
        str(2 * 3600 * 1000), [])     # log.roll.jitter.ms unset: Kafka's dropWhile, no synonym
    assert topic["message.downconversion.enable"].synonyms == [
        ("log.message.downconversion.enable", "false", cd.STATIC_BROKER_CONFIG),
        ("log.message.downconversion.enable", "true", cd.DEFAULT_CONFIG)]
    assert (topic["min.compaction.lag.ms"].value, topic["min.compaction.lag.ms"].config_source) \
        == ("500", cd.DYNAMIC_BROKER_CONFIG)
    assert topic["preallocate"].synonyms[0] == ("preallocate", "true", cd.DYNAMIC_TOPIC_CONFIG)
