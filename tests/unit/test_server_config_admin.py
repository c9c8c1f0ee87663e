"""config_admin: DescribeConfigs / AlterConfigs / IncrementalAlterConfigs over a fake broker
(a BrokerConfig, a metadata cache that knows topic ``t``, and a ZooKeeper of topic overrides)."""

import logging

import pytest
from twisted.internet import defer

from kafkalite import errors
from kafkalite.config import BrokerConfig
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
        self.deferred_zk = FakeZk({"t": dict(overrides or {})})


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
        # Kafka's topic configs kafkalite accepts without effect, with Kafka's defaults
        "message.format.version": "2.8-IV1", "preallocate": "false", "segment.jitter.ms": "0",
        "message.downconversion.enable": "true", "min.compaction.lag.ms": "0",
        "max.compaction.lag.ms": "9223372036854775807",
        "message.timestamp.difference.max.ms": "9223372036854775807",
        "leader.replication.throttled.replicas": "",
        "follower.replication.throttled.replicas": "",
    }
    assert {name: configs[name].value for name in expected} == expected
    assert len(configs) == 26                                   # Kafka 2.8's LogConfig names
    assert configs["message.format.version"].synonyms == [
        ("log.message.format.version", "2.8-IV1", 5)]
    for c in res.configs:
        assert c.config_source == ca.DEFAULT_CONFIG and not c.read_only and not c.is_sensitive
        assert c.documentation is None
    assert configs["cleanup.policy"].synonyms == [("log.cleanup.policy", "delete", 5)]
    # Kafka's dropWhile: log.retention.ms (unset) is retention.ms's broker synonym, so the
    # default log.retention.hours=168 is no synonym of it (nor log.roll.hours of segment.ms)
    assert configs["retention.ms"].synonyms == [] and configs["segment.ms"].synonyms == []
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
    assert retention.synonyms == [("retention.ms", "1000", 1)]    # Kafka's dropWhile
    assert configs["cleanup.policy"].value == "compact,delete"
    segment = configs["segment.bytes"]
    assert (segment.value, segment.config_source) == ("1048576", ca.STATIC_BROKER_CONFIG)
    assert segment.synonyms == [("log.segment.bytes", "1048576", 4),
                                ("log.segment.bytes", "1073741824", 5)]
    assert configs["segment.bytes"].documentation        # include_documentation
    # u has no overrides: the broker's log.retention.hours decides the value, but Kafka 2.8
    # reports it as DEFAULT_CONFIG: only a set log.retention.ms is retention.ms's synonym
    [res_u] = result(ca.describe_configs(broker, [(TOPIC, "u", None)], True, False))
    retention_u = by_name(res_u.configs)["retention.ms"]
    assert (retention_u.value, retention_u.config_source, retention_u.synonyms) == \
        ("7200000", ca.DEFAULT_CONFIG, [])
    broker_ms = FakeBroker(**{"log.retention.ms": "5000"})
    [res_ms] = result(ca.describe_configs(broker_ms, [(TOPIC, "u", None)], True, False))
    assert by_name(res_ms.configs)["retention.ms"].synonyms == [
        ("log.retention.ms", "5000", 4), ("log.retention.hours", "168", 5)]


def test_topic_keys_filter_unknown_overrides_and_bad_values():
    broker = FakeBroker({"retention.ms": "soon", "some.future.config": "x"})
    [res] = result(ca.describe_configs(
        broker, [(TOPIC, "t", ["retention.ms", "some.future.config", "no.such"])], True, False))
    # a name Kafka does not define has no type: sensitive, its value hidden (maybeSensitive)
    assert [(c.name, c.value, c.config_source, c.config_type, c.is_sensitive)
            for c in res.configs] == [("retention.ms", "soon", 1, 5, False),
                                      ("some.future.config", None, 1, 0, True)]
    [everything] = result(ca.describe_configs(broker, [(TOPIC, "t", [])], False, False))
    assert len(everything.configs) > 15                   # [] means every config too


def test_topic_errors():
    broker = FakeBroker()
    res = result(ca.describe_configs(broker, [(TOPIC, "missing", None), (TOPIC, "bad/name", None),
                                              (TOPIC, "t", None)], False, False))
    assert [r.error_code for r in res] == [3, 17, 0]
    # Kafka answers an unknown topic with the code alone, a bad name with its exception's text
    assert (res[0].configs, res[0].error_message) == ([], None)
    assert "bad/name" in res[1].error_message


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
    # Kafka's configs kafkalite accepts without effect: listed with Kafka's type and default
    threads = own["num.io.threads"]
    assert (threads.value, threads.config_type, threads.read_only, threads.config_source) == \
        ("8", 3, False, ca.DEFAULT_CONFIG)
    assert own["offsets.commit.required.acks"].config_type == 4          # SHORT, as Kafka
    assert own["listener.security.protocol.map"].config_type == 2        # STRING, as Kafka
    assert (own["delegation.token.master.key"].value,
            own["delegation.token.master.key"].is_sensitive) == (None, True)
    # the authorizer's settings and kafkalite's own are not listed unless given
    assert not {"super.users", "allow.everyone.if.no.acl.found", "zookeeper.auth.digest",
                "process.roles"} & set(own)
    assert (res[1].error_code, res[1].configs) == (0, [])      # cluster default: none
    assert res[2].error_code == errors.InvalidRequestError.code
    assert "expected 1 or empty string" in res[2].error_message
    assert res[3].error_code == errors.InvalidRequestError.code


def test_sensitive_values_are_hidden():
    broker = FakeBroker(**{"ssl.key.password": "hunter2", "super.users": "User:admin",
                           "allow.everyone.if.no.acl.found": "true"})
    [res] = result(ca.describe_configs(broker, [(BROKER, "1", None)], True, False))
    own = by_name(res.configs)
    entry = own["ssl.key.password"]
    assert (entry.value, entry.is_sensitive, entry.config_type) == (None, True, 9)
    assert entry.synonyms == [("ssl.key.password", None, ca.STATIC_BROKER_CONFIG)]
    # AclAuthorizer's settings are no KafkaConfig's: listed because given (Kafka's originals),
    # with no type, so sensitive
    for name in ("super.users", "allow.everyone.if.no.acl.found"):
        assert (own[name].value, own[name].is_sensitive, own[name].config_type,
                own[name].config_source) == (None, True, 0, ca.STATIC_BROKER_CONFIG)
    assert "zookeeper.auth.digest" not in own


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
    assert broker.deferred_zk.writes == [("t", {"cleanup.policy": "compact"})]


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
    # a value a topic config cannot take: Kafka's ConfigException, as its AlterConfigs wraps it
    assert codes[0] == (errors.InvalidRequestError.code,
                        "Invalid config value for resource ConfigResource(type=TOPIC, name='t'): "
                        "Invalid value soon for configuration retention.ms: Not a number of "
                        "type LONG")
    assert codes[1] == (errors.InvalidConfigError.code, "Unknown topic config name: "
                                                        "no.such.config")
    assert codes[2][0] == errors.InvalidRequestError.code
    assert codes[3][0] == errors.UnknownTopicOrPartitionError.code
    assert codes[4] == (errors.InvalidRequestError.code,
                        "Invalid config value for resource ConfigResource(type=TOPIC, name='u'): "
                        "Invalid value 0 for configuration min.insync.replicas: Value must be "
                        "at least 1")
    assert codes[5] == (errors.InvalidRequestError.code,
                        "Invalid config value for resource ConfigResource(type=BROKER, name='1'): "
                        "Cannot update these configs dynamically: Set(log.retention.hours)")
    assert codes[6][0] == errors.InvalidRequestError.code
    assert codes[7] == (0, None)
    assert broker.deferred_zk.writes == []                        # validate_only writes nothing


# --- IncrementalAlterConfigs ---------------------------------------------------------------------

def test_incremental_set_delete_append_subtract():
    broker = FakeBroker({"retention.ms": "1000", "segment.bytes": "1048576"})
    out = result(ca.incremental_alter_configs(broker, [(TOPIC, "t", [
        ("retention.ms", ca.OP_SET, "2000"), ("segment.bytes", ca.OP_DELETE, None),
        ("cleanup.policy", ca.OP_APPEND, "compact")])], False))
    assert out == [(TOPIC, "t", 0, None)]
    assert broker.deferred_zk.configs["t"] == {"retention.ms": "2000", "cleanup.policy": "delete,compact"}
    result(ca.incremental_alter_configs(broker, [(TOPIC, "t", [
        ("cleanup.policy", ca.OP_SUBTRACT, "delete")])], False))
    assert broker.deferred_zk.configs["t"]["cleanup.policy"] == "compact"


def test_apply_incremental_rules():
    config = FakeBroker().config
    assert ca.apply_incremental({"a": "1"}, [("a", ca.OP_DELETE, None)], config) == {}
    assert ca.apply_incremental({"cleanup.policy": "compact"},
                                [("cleanup.policy", ca.OP_APPEND, "compact,delete")],
                                config) == {"cleanup.policy": "compact,delete"}
    with pytest.raises(errors.InvalidRequestError, match="Config value append is not allowed "
                                                          "for config key: retention.ms$"):
        ca.apply_incremental({}, [("retention.ms", ca.OP_APPEND, "1")], config)
    with pytest.raises(errors.InvalidConfigError, match="Unknown topic config name"):
        ca.apply_incremental({}, [("no.such", ca.OP_SUBTRACT, "1")], config)
    # a list config kafkalite accepts without effect is a list in Kafka: APPEND works on it,
    # starting from LogConfig's default
    assert ca.apply_incremental({}, [("leader.replication.throttled.replicas", ca.OP_APPEND,
                                      "0:1")], config) == {
        "leader.replication.throttled.replicas": "0:1"}
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
    assert [code for *_rest, code, _message in out] == [42, 42, 42, 42, 3]
    assert out[0][3].endswith(": Invalid value -5 for configuration retention.ms: Value must "
                              "be at least -1")
    assert out[2][3].endswith("Cannot update these configs dynamically: Set(log.retention.hours)")
    assert broker.deferred_zk.writes == []


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
