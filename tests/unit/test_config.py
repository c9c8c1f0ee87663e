import pytest

from kafkalite.config import (BROKER_CONFIGS, TOPIC_CONFIGS, BrokerConfig, TopicConfig,
                              parse_overrides, read_properties)
from kafkalite.errors import ConfigError, InvalidConfigError, code_of


def _broker(**extra):
    values = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181/kl"}
    values.update(extra)
    return BrokerConfig.from_dict(values)


def test_defaults_follow_kafka():
    config = _broker()
    assert config.zookeeper_session_timeout_ms == 18000
    assert config.log_segment_bytes == 1024**3
    assert config.message_max_bytes == 1048588
    assert config.replica_lag_time_max_ms == 30000
    assert config.unclean_leader_election_enable is False
    assert config.retention_ms == 168 * 3600 * 1000


def test_properties_file_with_comments_and_continuations(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("# a comment\n! another\nbroker.id=3\nzookeeper.connect=h:1,\\\n  h:2/c\n"
                    "log.dirs = /a,/b\nlisteners: PLAINTEXT://127.0.0.1:9093\n")
    assert read_properties(path)["zookeeper.connect"] == "h:1,h:2/c"
    config = BrokerConfig.from_properties(path, overrides={"broker.id": "4"})
    assert config.broker_id == 4
    assert config.data_dirs == ("/a", "/b")
    assert config.listener_list[0].port == 9093


def test_topic_defaults_come_from_broker_log_settings():
    config = _broker(**{"log.segment.bytes": "2048", "log.retention.minutes": "5",
                        "message.max.bytes": "500", "log.cleanup.policy": "compact"})
    topic = config.topic_defaults()
    assert topic.segment_bytes == 2048
    assert topic.retention_ms == 5 * 60000
    assert topic.max_message_bytes == 500
    assert topic.compact and not topic.delete
    override = topic.with_overrides({"retention.ms": "-1", "min.insync.replicas": 2})
    assert override.retention_ms == -1 and override.min_insync_replicas == 2
    assert override.non_default(topic) == {"retention.ms": -1, "min.insync.replicas": 2}


@pytest.mark.parametrize("key,value,fragment", [
    ("log.segment.bytes", "tiny", "expected an integer"),
    ("log.segment.bytes", "3", "allowed is a number >= 14"),
    ("unclean.leader.election.enable", "maybe", "true or false"),
    ("log.cleanup.policy", "shred", "delete, compact"),
    ("listeners", "localhost:9092", "NAME://host:port"),
])
def test_bad_values_name_key_value_and_allowed(key, value, fragment):
    with pytest.raises(ConfigError) as info:
        _broker(**{key: value})
    message = str(info.value)
    assert key in message and repr(value) in message and fragment in message


def test_unknown_key_suggests_the_close_one():
    with pytest.raises(ConfigError, match="did you mean segment.bytes"):
        TopicConfig.from_dict({"segmnt.bytes": "100"})


def test_missing_required_settings_name_the_fix():
    with pytest.raises(ConfigError, match="broker.id"):
        BrokerConfig.from_dict({"zookeeper.connect": "h:1"})
    with pytest.raises(ConfigError, match="zookeeper.connect"):
        BrokerConfig.from_dict({"broker.id": "1"})


def test_config_error_is_an_invalid_config_on_the_wire():
    assert issubclass(ConfigError, InvalidConfigError)
    assert code_of(ConfigError("x")) == 40


def test_overrides_parse_and_reject():
    assert parse_overrides(["a=b=c", "x=1"]) == {"a": "b=c", "x": "1"}
    with pytest.raises(ConfigError):
        parse_overrides(["novalue"])


def test_every_definition_has_doc_and_valid_default():
    for definition in BROKER_CONFIGS + TOPIC_CONFIGS:
        assert definition.doc
        if definition.default is not None:
            assert definition.parse(definition.default) == definition.default
