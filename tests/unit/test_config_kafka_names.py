"""Kafka 2.8's config names in kafkalite: every one accepted (applied, or without effect and
named once at start-up), unknown names warned about (broker) or refused as Kafka refuses them
(topic), and ``docs/kafka-configs.md`` equal to what the table generates.

``tests/data/kafka-2.8.2-config-names.txt`` is Kafka 2.8.2's own list (its jars print it;
``tests/oracle/test_kafka_config_names.py`` checks the file against them).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kafkalite import config_docs
from kafkalite.config import (BROKER_BY_NAME, BROKER_NO_EFFECT, NOT_KAFKA_BROKER_CONFIGS,
                              TOPIC_BY_NAME, TOPIC_NO_EFFECT, BrokerConfig, TopicConfig,
                              check_topic_config_name)
from kafkalite.errors import ConfigError

DATA = Path(__file__).resolve().parents[1] / "data"
ROOT = Path(__file__).resolve().parents[2]
BASE = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181/kl"}


def kafka_names(kind: str) -> list[str]:
    lines = (DATA / "kafka-2.8.2-config-names.txt").read_text().splitlines()
    return [line.split()[1] for line in lines if line.startswith(kind + " ")]


def test_the_list_is_kafkas_2_8_2_size():
    broker, topic = kafka_names("broker"), kafka_names("topic")
    assert (len(broker), len(set(broker)), len(topic), len(set(topic))) == (233, 233, 26, 26)


def test_every_kafka_name_is_applied_or_accepted_without_effect():
    broker, topic = set(kafka_names("broker")), set(kafka_names("topic"))
    assert broker - set(BROKER_BY_NAME) - set(BROKER_NO_EFFECT) == set()
    assert topic - set(TOPIC_BY_NAME) - set(TOPIC_NO_EFFECT) == set()
    # the tables claim no more than Kafka has, and say where a key is not Kafka's
    assert set(BROKER_NO_EFFECT) <= broker and set(TOPIC_NO_EFFECT) <= topic
    assert set(BROKER_BY_NAME) - broker == set(NOT_KAFKA_BROKER_CONFIGS)
    assert set(TOPIC_BY_NAME) <= topic
    assert config_docs.kafka_broker_names() == sorted(broker)
    assert config_docs.kafka_topic_names() == sorted(topic)


def test_applied_and_no_effect_are_apart_and_every_reason_is_short():
    assert not set(BROKER_BY_NAME) & set(BROKER_NO_EFFECT)
    assert not set(TOPIC_BY_NAME) & set(TOPIC_NO_EFFECT)
    for reason in [*BROKER_NO_EFFECT.values(), *TOPIC_NO_EFFECT.values()]:
        assert 10 < len(reason) < 220, reason


def test_every_kafka_broker_name_is_accepted_at_once():
    values = {name: "x" for name in BROKER_NO_EFFECT}   # values of no-effect keys: not checked
    config = BrokerConfig.from_dict({**BASE, **values})
    assert set(config.no_effect_keys) == set(BROKER_NO_EFFECT) and config.unknown_keys == ()
    [(level, note)] = config.startup_notes()
    assert level == logging.INFO and f"{len(BROKER_NO_EFFECT)} Kafka config(s)" in note


def test_kafkas_default_server_properties_is_accepted():
    config = BrokerConfig.from_properties(DATA / "kafka-2.8.2-server.properties")
    assert config.broker_id == 0 and config.data_dirs == ("/tmp/kafka-logs",)
    assert config.zookeeper_connect == "localhost:2181"
    assert config.offsets_topic_replication_factor == 1
    assert config.group_initial_rebalance_delay_ms == 0
    assert config.listener_list[0].port == 9092          # no listeners line: port's default
    assert config.no_effect_keys == (
        "num.network.threads", "num.io.threads", "socket.send.buffer.bytes",
        "socket.receive.buffer.bytes", "num.recovery.threads.per.data.dir")
    assert config.transaction_state_log_replication_factor == 1
    assert config.transaction_state_log_min_isr == 1
    assert config.unknown_keys == ()
    notes = config.startup_notes()
    assert len(notes) == 1 and notes[0][0] == logging.INFO
    assert "num.network.threads, num.io.threads" in notes[0][1]


def test_unknown_broker_key_is_warned_about_naming_the_closest_and_accepted():
    config = BrokerConfig.from_dict({**BASE, "num.netwrok.threads": "3", "zzz.qqq": "1"})
    assert config.unknown_keys == ("num.netwrok.threads", "zzz.qqq")
    assert config.startup_notes() == [
        (logging.WARNING, "The configuration 'num.netwrok.threads' was supplied but isn't a "
                          "known config. Did you mean num.network.threads?"),
        (logging.WARNING, "The configuration 'zzz.qqq' was supplied but isn't a known config.")]


def test_bad_values_of_known_keys_are_still_refused():
    with pytest.raises(ConfigError) as info:
        BrokerConfig.from_dict({**BASE, "port": "http"})
    assert "port" in str(info.value) and "'http'" in str(info.value)
    with pytest.raises(ConfigError, match="allowed is a number in"):
        BrokerConfig.from_dict({**BASE, "port": "70000"})


def test_port_and_host_name_are_kafkas_listener_fallbacks():
    config = BrokerConfig.from_dict({**BASE, "port": "9093", "host.name": "h1"})
    assert config.listeners == ("PLAINTEXT://h1:9093",)
    assert config.advertised_listener_list == config.listener_list
    config = BrokerConfig.from_dict({**BASE, "port": "9093", "advertised.port": "19093"})
    assert config.advertised_listeners == ("PLAINTEXT://:19093",)
    config = BrokerConfig.from_dict({**BASE, "advertised.host.name": "public"})
    assert config.advertised_listeners == ("PLAINTEXT://public:9092",)
    # listeners and advertised.listeners win, as in Kafka
    config = BrokerConfig.from_dict({**BASE, "port": "1", "listeners": "PLAINTEXT://:2",
                                     "advertised.port": "3",
                                     "advertised.listeners": "PLAINTEXT://a:4"})
    assert (config.listeners, config.advertised_listeners) == (("PLAINTEXT://:2",),
                                                               ("PLAINTEXT://a:4",))


def test_per_listener_no_effect_settings_are_accepted():
    config = BrokerConfig.from_dict({**BASE, "listener.name.plaintext.max.connections": "5"})
    assert config.no_effect_keys == ("listener.name.plaintext.max.connections",)


def test_topic_configs_follow_kafka():
    with pytest.raises(ConfigError) as info:
        TopicConfig.from_dict({"retention.msec": "1"})
    assert str(info.value) == "Unknown topic config name: retention.msec; did you mean " \
                              "retention.ms?"
    with pytest.raises(ConfigError, match=r"^Unknown topic config name: qqq$"):
        check_topic_config_name("qqq")
    for name in [*TOPIC_BY_NAME, *TOPIC_NO_EFFECT]:
        check_topic_config_name(name)
    config = TopicConfig.from_dict({"preallocate": "true", "segment.jitter.ms": "5"})
    assert config == TopicConfig()                  # accepted, without effect
    with pytest.raises(ConfigError, match="retention.ms"):
        TopicConfig.from_dict({"retention.ms": "soon", "preallocate": "true"})


def test_the_committed_doc_is_the_generated_one():
    committed = (ROOT / "docs" / "kafka-configs.md").read_text()
    assert committed == config_docs.render(), (
        "docs/kafka-configs.md is stale: run `python -m kafkalite.config_docs > "
        "docs/kafka-configs.md`")
    for name in [*kafka_names("broker"), *kafka_names("topic")]:
        assert f"| `{name}` |" in committed
