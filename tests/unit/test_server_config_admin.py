"""config_admin: DescribeConfigs / AlterConfigs / IncrementalAlterConfigs over a fake broker
(a BrokerConfig, a metadata cache that knows topic ``t``, and a ZooKeeper of topic overrides)."""

import logging

import pytest
from twisted.internet import defer

from kafkalite import errors
from kafkalite.config import BrokerConfig, ConfigDef
from kafkalite.server import config_admin as ca

TOPIC, BROKER, LOGGER = ca.RESOURCE_TOPIC, ca.RESOURCE_BROKER, ca.RESOURCE_BROKER_LOGGER


class FakeZk:
    def __init__(self, configs):
        self.configs = configs
        self.writes = []

    def get_topic_config(self, topic):
        return defer.succeed(dict(self.configs.get(topic, {})))

    def set_topic_config(self, topic, config):
        self.writes.append((topic, dict(config)))
        self.configs[topic] = dict(config)
        return defer.succeed(None)

    def get_broker_config(self, broker_id):
        return defer.succeed(dict(self.configs.get(("brokers", broker_id), {})))

    def set_broker_config(self, broker_id, config):
        self.writes.append((("brokers", broker_id), dict(config)))
        self.configs[("brokers", broker_id)] = dict(config)
        return defer.succeed(None)


class FakeMetadata:
    def __init__(self, topics):
        self.topics = set(topics)

    def contains(self, topic):
        return topic in self.topics


class FakeBroker:
    def __init__(self, overrides=None, **settings):
        values = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181/x"}
        values.update(settings)
        self.config = BrokerConfig.from_dict(values)
        self.broker_id = self.config.broker_id
        self.metadata_cache = FakeMetadata(["t", "u"])
        self.tzk = FakeZk({"t": dict(overrides or {})})


def result(d):
    box = []
    d.addBoth(box.append)
    assert box, "the Deferred did not fire"
    if isinstance(box[0], Exception) or hasattr(box[0], "raiseException"):
        box[0].raiseException()
    return box[0]


def by_name(configs):
    return {c.name: c for c in configs}


# --- DescribeConfigs: topics ---------------------------------------------------------------------

def test_topic_defaults_come_from_the_table_with_kafkas_sources():
    broker = FakeBroker()
    [res] = result(ca.describe_configs(broker, [(TOPIC, "u", None)], True, False))
    assert (res.error_code, res.error_message, res.resource_type, res.resource_name) == \
        (0, None, TOPIC, "u")
    configs = by_name(res.configs)
    # the topic configs users see in kafka-configs --describe --all, with Kafka's defaults
    expected = {
        "cleanup.policy": "delete", "compression.type": "producer",
        "retention.ms": "604800000", "segment.bytes": "1073741824",
        "min.insync.replicas": "1", "max.message.bytes": "1048588",
        "message.timestamp.type": "CreateTime", "unclean.leader.election.enable": "false",
        "delete.retention.ms": "86400000", "min.cleanable.dirty.ratio": "0.5",
        "flush.messages": "9223372036854775807", "flush.ms": "9223372036854775807",
        "segment.ms": "604800000", "retention.bytes": "-1",
    }
    assert {name: configs[name].value for name in expected} == expected
    for c in res.configs:
        assert c.config_source == ca.DEFAULT_CONFIG and not c.read_only and not c.is_sensitive
        assert c.documentation is None
    assert configs["cleanup.policy"].synonyms == [("log.cleanup.policy", "delete", 5)]
    assert configs["retention.ms"].synonyms == [("log.retention.hours", "168", 5)]
    assert configs["flush.ms"].synonyms == []             # log.flush.interval.ms has no default
    assert configs["max.message.bytes"].synonyms == [("message.max.bytes", "1048588", 5)]
    types = {name: configs[name].config_type for name in
             ("cleanup.policy", "retention.ms", "segment.bytes", "min.cleanable.dirty.ratio",
              "unclean.leader.election.enable", "compression.type")}
    assert types == {"cleanup.policy": 7, "retention.ms": 5, "segment.bytes": 3,
                     "min.cleanable.dirty.ratio": 6, "unclean.leader.election.enable": 1,
                     "compression.type": 2}


def test_topic_override_then_static_broker_then_default():
    broker = FakeBroker({"retention.ms": "1000", "cleanup.policy": "compact, delete"},
                        **{"log.retention.hours": "2", "log.segment.bytes": "1048576"})
    [res] = result(ca.describe_configs(broker, [(TOPIC, "t", None)], True, True))
    configs = by_name(res.configs)
    retention = configs["retention.ms"]
    assert (retention.value, retention.config_source) == ("1000", ca.DYNAMIC_TOPIC_CONFIG)
    assert retention.synonyms == [("retention.ms", "1000", 1),
                                  ("log.retention.hours", "2", 4),
                                  ("log.retention.hours", "168", 5)]
    assert configs["cleanup.policy"].value == "compact,delete"
    segment = configs["segment.bytes"]
    assert (segment.value, segment.config_source) == ("1048576", ca.STATIC_BROKER_CONFIG)
    assert segment.synonyms == [("log.segment.bytes", "1048576", 4),
                                ("log.segment.bytes", "1073741824", 5)]
    assert configs["segment.bytes"].documentation        # include_documentation
    # u has no overrides: the broker's log.retention.hours decides, shown as such
    [res_u] = result(ca.describe_configs(broker, [(TOPIC, "u", None)], False, False))
    retention_u = by_name(res_u.configs)["retention.ms"]
    assert (retention_u.value, retention_u.config_source, retention_u.synonyms) == \
        ("7200000", ca.STATIC_BROKER_CONFIG, [])


def test_topic_keys_filter_unknown_overrides_and_bad_values():
    broker = FakeBroker({"retention.ms": "soon", "some.future.config": "x"})
    [res] = result(ca.describe_configs(
        broker, [(TOPIC, "t", ["retention.ms", "some.future.config", "no.such"])], True, False))
    assert [(c.name, c.value, c.config_source, c.config_type) for c in res.configs] == [
        ("retention.ms", "soon", 1, 5), ("some.future.config", "x", 1, 0)]
    [everything] = result(ca.describe_configs(broker, [(TOPIC, "t", [])], False, False))
    assert len(everything.configs) > 15                   # [] means every config too


def test_topic_errors():
    broker = FakeBroker()
    res = result(ca.describe_configs(broker, [(TOPIC, "missing", None), (TOPIC, "bad/name", None),
                                              (TOPIC, "t", None)], False, False))
    assert [r.error_code for r in res] == [3, 17, 0]
    assert res[0].configs == [] and "missing" in res[0].error_message


# --- DescribeConfigs: brokers and loggers ----------------------------------------------------------

def test_broker_resource_is_this_brokers_config():
    broker = FakeBroker(**{"log.retention.hours": "5"})
    res = result(ca.describe_configs(
        broker, [(BROKER, "1", None), (BROKER, "", None), (BROKER, "2", None),
                 (BROKER, "one", None)], True, False))
    own = by_name(res[0].configs)
    assert res[0].error_code == 0
    # read-only unless dynamic (KIP-226): log.retention.ms is, log.retention.hours is not
    assert own["broker.id"].read_only and own["log.retention.hours"].read_only
    assert not own["log.retention.ms"].read_only and not own["message.max.bytes"].read_only
    assert own["listeners"].read_only       # dynamic in Kafka; kafkalite applies it at start-up
    assert own["broker.id"].value == "1" and own["broker.id"].config_source == 4
    assert own["log.retention.ms"].value is None and own["log.retention.ms"].synonyms == []
    assert own["log.retention.hours"].synonyms == [("log.retention.hours", "5", 4),
                                                   ("log.retention.hours", "168", 5)]
    assert own["num.partitions"].config_source == ca.DEFAULT_CONFIG
    assert (res[1].error_code, res[1].configs) == (0, [])      # cluster default: none
    assert res[2].error_code == errors.InvalidRequestError.code
    assert "expected 1 or empty string" in res[2].error_message
    assert res[3].error_code == errors.InvalidRequestError.code


def test_sensitive_values_are_hidden(monkeypatch):
    secret = ConfigDef("ssl.key.password", "password", None, "the key's password")

    class Config:
        def get(self, name):
            return "hunter2"

        def is_static(self, name):
            return True

    monkeypatch.setattr(ca, "BROKER_CONFIGS", (secret,))
    monkeypatch.setattr(ca, "BROKER_BY_NAME", {secret.name: secret})
    [entry] = ca.describe_broker_config(Config(), None, True)
    assert (entry.value, entry.is_sensitive, entry.config_type) == (None, True, 9)
    assert entry.synonyms == [("ssl.key.password", None, ca.STATIC_BROKER_CONFIG)]


def test_broker_logger_resource():
    logging.getLogger("kafkalite.test_config_admin").setLevel(logging.DEBUG)
    broker = FakeBroker()
    res = result(ca.describe_configs(broker, [(LOGGER, "1", None), (LOGGER, "", None),
                                              (99, "x", None)], False, False))
    loggers = by_name(res[0].configs)
    assert "root" in loggers and loggers["kafkalite.test_config_admin"].value == "DEBUG"
    assert loggers["root"].config_source == ca.DYNAMIC_BROKER_LOGGER_CONFIG
    assert res[1].error_code == res[2].error_code == errors.InvalidRequestError.code


# --- AlterConfigs (legacy: replaces every override) -----------------------------------------------

def test_alter_configs_replaces_the_overrides():
    broker = FakeBroker({"retention.ms": "1000"})
    out = result(ca.alter_configs(broker, [(TOPIC, "t", {"cleanup.policy": "compact"})], False))
    assert out == [(TOPIC, "t", 0, None)]
    assert broker.tzk.writes == [("t", {"cleanup.policy": "compact"})]


def test_alter_configs_validates_and_answers_per_resource():
    broker = FakeBroker({"retention.ms": "1000"})
    out = result(ca.alter_configs(broker, [
        (TOPIC, "t", {"retention.ms": "soon"}),
        (TOPIC, "t", [("no.such.config", "1")]),
        (TOPIC, "t", {"retention.ms": None}),
        (TOPIC, "missing", {"retention.ms": "1"}),
        (TOPIC, "u", {"min.insync.replicas": "0"}),
        (BROKER, "1", {"log.retention.hours": "1"}),
        (LOGGER, "1", {"root": "INFO"}),
        (TOPIC, "u", {"retention.ms": "5"}),
    ], validate_only=True))
    codes = [(code, message) for _t, _n, code, message in out]
    assert codes[0][0] == errors.InvalidConfigError.code and "retention.ms" in codes[0][1]
    assert "soon" in codes[0][1]
    assert codes[1][0] == errors.InvalidConfigError.code and "no.such.config" in codes[1][1]
    assert codes[2][0] == errors.InvalidRequestError.code
    assert codes[3][0] == errors.UnknownTopicOrPartitionError.code
    assert codes[4][0] == errors.InvalidConfigError.code and "min.insync.replicas" in codes[4][1]
    assert codes[5] == (errors.InvalidRequestError.code,
                        "Invalid config value for resource ConfigResource(type=BROKER, name='1'): "
                        "Cannot update these configs dynamically: Set(log.retention.hours)")
    assert codes[6][0] == errors.InvalidRequestError.code
    assert codes[7] == (0, None)
    assert broker.tzk.writes == []                        # validate_only writes nothing


# --- IncrementalAlterConfigs ---------------------------------------------------------------------

def test_incremental_set_delete_append_subtract():
    broker = FakeBroker({"retention.ms": "1000", "segment.bytes": "1048576"})
    out = result(ca.incremental_alter_configs(broker, [(TOPIC, "t", [
        ("retention.ms", ca.OP_SET, "2000"), ("segment.bytes", ca.OP_DELETE, None),
        ("cleanup.policy", ca.OP_APPEND, "compact")])], False))
    assert out == [(TOPIC, "t", 0, None)]
    assert broker.tzk.configs["t"] == {"retention.ms": "2000", "cleanup.policy": "delete,compact"}
    result(ca.incremental_alter_configs(broker, [(TOPIC, "t", [
        ("cleanup.policy", ca.OP_SUBTRACT, "delete")])], False))
    assert broker.tzk.configs["t"]["cleanup.policy"] == "compact"


def test_apply_incremental_rules():
    config = FakeBroker().config
    assert ca.apply_incremental({"a": "1"}, [("a", ca.OP_DELETE, None)], config) == {}
    assert ca.apply_incremental({"cleanup.policy": "compact"},
                                [("cleanup.policy", ca.OP_APPEND, "compact,delete")],
                                config) == {"cleanup.policy": "compact,delete"}
    with pytest.raises(errors.InvalidConfigError, match="not a list"):
        ca.apply_incremental({}, [("retention.ms", ca.OP_APPEND, "1")], config)
    with pytest.raises(errors.InvalidRequestError, match="duplicate"):
        ca.apply_incremental({}, [("retention.ms", ca.OP_SET, "1"),
                                  ("retention.ms", ca.OP_DELETE, None)], config)
    with pytest.raises(errors.InvalidRequestError, match="Null value"):
        ca.apply_incremental({}, [("retention.ms", ca.OP_SET, None)], config)
    with pytest.raises(errors.InvalidRequestError, match="operation"):
        ca.apply_incremental({}, [("retention.ms", 7, "1")], config)


def test_incremental_errors_and_brokers():
    broker = FakeBroker()
    out = result(ca.incremental_alter_configs(broker, [
        (TOPIC, "t", [("retention.ms", ca.OP_SET, "-5")]),
        (TOPIC, "t", [("retention.ms", ca.OP_APPEND, "5")]),
        (BROKER, "1", [("log.retention.hours", ca.OP_SET, "1")]),
        (BROKER, "x", [("log.retention.hours", ca.OP_SET, "1")]),
        (TOPIC, "missing", [("retention.ms", ca.OP_SET, "1")]),
    ], False))
    assert [code for *_rest, code, _message in out] == [40, 40, 42, 42, 3]
    assert out[2][3].endswith("Cannot update these configs dynamically: Set(log.retention.hours)")
    assert broker.tzk.writes == []


def test_incremental_broker_logger_levels():
    name = "kafkalite.test_config_admin.levels"
    logger = logging.getLogger(name)
    broker = FakeBroker()
    out = result(ca.incremental_alter_configs(broker, [
        (LOGGER, "1", [(name, ca.OP_SET, "WARN")])], False))
    assert out == [(LOGGER, "1", 0, None)] and logger.level == logging.WARNING
    out = result(ca.incremental_alter_configs(broker, [
        (LOGGER, "1", [(name, ca.OP_SET, "LOUD")]),
        (LOGGER, "1", [("no.such.logger.anywhere", ca.OP_SET, "INFO")]),
        (LOGGER, "1", [("root", ca.OP_DELETE, None)]),
        (LOGGER, "1", [(name, ca.OP_APPEND, "INFO")]),
        (LOGGER, "2", [(name, ca.OP_SET, "INFO")]),
        (LOGGER, "1", [(name, ca.OP_DELETE, None)]),
    ], False))
    assert [code for *_rest, code, _message in out] == [40, 40, 42, 42, 42, 0]
    assert logger.level == logging.NOTSET
