"""The broker side of dynamic broker configs: AlterConfigs / IncrementalAlterConfigs of a BROKER
resource over a fake ZooKeeper, and a broker applying what ZooKeeper holds (LogManager defaults,
hosted topics' configs, the controller's unclean-election default)."""

from twisted.internet import defer

from kafkalite import errors
from kafkalite.config import BrokerConfig
from kafkalite.server import config_admin as ca
from kafkalite.server.dynamic_config import BrokerDynamicConfig, apply_broker_ops

BROKER = ca.RESOURCE_BROKER
PREFIX = "Invalid config value for resource ConfigResource(type=BROKER, name='1'): "


class FakeZk:
    def __init__(self):
        self.brokers = {}                 # None (the cluster default) or an id -> {name: value}
        self.writes = []

    def get_broker_config(self, broker_id):
        return defer.succeed(dict(self.brokers.get(broker_id, {})))

    def set_broker_config(self, broker_id, config):
        self.writes.append((broker_id, dict(config)))
        self.brokers[broker_id] = dict(config)
        return defer.succeed(None)


class FakeLogManager:
    default_config = None


class FakeController:
    def __init__(self):
        self.config = None
        self.unclean_elections = 0

    def enable_default_unclean_election(self):
        self.unclean_elections += 1


class FakeBroker:
    def __init__(self):
        self.config = BrokerConfig.from_dict({"broker.id": "1",
                                              "zookeeper.connect": "127.0.0.1:2181/x",
                                              "log.retention.hours": "5"})
        self.broker_id = 1
        self.deferred_zk = FakeZk()
        self.topic_defaults = self.config.topic_defaults()
        self.log_manager = FakeLogManager()
        self.controller = FakeController()
        self.dynamic_config = BrokerDynamicConfig(self, self.config)


def result(d):
    box = []
    d.addBoth(box.append)
    assert box, "the Deferred did not fire"
    if hasattr(box[0], "raiseException"):
        box[0].raiseException()
    return box[0]


def test_incremental_alter_writes_the_level_and_refuses_as_kafka():
    broker = FakeBroker()
    out = result(ca.incremental_alter_configs(broker, [
        (BROKER, "1", [("log.retention.ms", ca.OP_SET, "1000"),
                       ("log.cleanup.policy", ca.OP_APPEND, "compact")]),
        (BROKER, "", [("message.max.bytes", ca.OP_SET, "2000000")]),
        (BROKER, "1", [("log.retention.ms", ca.OP_SET, "abc")]),
        (BROKER, "1", [("log.retention.ms", ca.OP_APPEND, "5")]),
        (BROKER, "2", [("log.retention.ms", ca.OP_SET, "5")]),
        (BROKER, "", [("listeners", ca.OP_SET, "PLAINTEXT://:1")]),
        (BROKER, "1", [("log.retention.ms", ca.OP_SET, None)]),
    ], False))
    assert out[:2] == [(BROKER, "1", 0, None), (BROKER, "", 0, None)]
    assert broker.deferred_zk.brokers == {
        1: {"log.retention.ms": "1000", "log.cleanup.policy": "delete,compact"},
        None: {"message.max.bytes": "2000000"}}
    invalid = errors.InvalidRequestError.code
    assert out[2][2:] == (invalid, PREFIX + "Invalid value abc for configuration "
                          "log.retention.ms: Not a number of type LONG")
    assert out[3][2:] == (invalid, "Config value append is not allowed for config key: "
                          "log.retention.ms")
    assert out[4][2:] == (invalid, "Unexpected broker id, expected 1, but received 2")
    assert out[5][2:] == (invalid, "Invalid config value for resource ConfigResource("
                          "type=BROKER, name=''): Cannot update these configs at default "
                          "cluster level, broker id must be specified: Set(listeners)")
    assert out[6][2] == invalid and "Null value" in out[6][3]
    assert len(broker.deferred_zk.writes) == 2
    # DELETE removes the key; validate_only writes nothing
    result(ca.incremental_alter_configs(broker, [
        (BROKER, "1", [("log.retention.ms", ca.OP_DELETE, None)])], False))
    assert broker.deferred_zk.brokers[1] == {"log.cleanup.policy": "delete,compact"}
    result(ca.incremental_alter_configs(broker, [
        (BROKER, "1", [("log.retention.ms", ca.OP_SET, "7")])], True))
    assert len(broker.deferred_zk.writes) == 3


def test_legacy_alter_replaces_the_level():
    broker = FakeBroker()
    broker.deferred_zk.brokers[1] = {"log.retention.ms": "1000", "log.roll.ms": "5000"}
    out = result(ca.alter_configs(broker, [(BROKER, "1", {"log.segment.bytes": "2048"}),
                                           (BROKER, "x", {"log.segment.bytes": "2048"})]))
    assert out[0] == (BROKER, "1", 0, None)
    assert broker.deferred_zk.brokers[1] == {"log.segment.bytes": "2048"}
    assert out[1][2:] == (errors.InvalidRequestError.code,
                          "Broker id must be an integer, but it is: x")


def test_apply_broker_ops_lists_as_kafka():
    assert apply_broker_ops({}, [("log.cleanup.policy", ca.OP_APPEND, "delete")]) == \
        {"log.cleanup.policy": "delete,delete"}            # Kafka's APPEND keeps duplicates
    assert apply_broker_ops({"log.cleanup.policy": "delete,compact"},
                            [("log.cleanup.policy", ca.OP_SUBTRACT, "delete")]) == \
        {"log.cleanup.policy": "compact"}


def test_reload_applies_levels_to_the_broker():
    broker = FakeBroker()
    manager = broker.dynamic_config
    assert result(manager.reload()) is False                        # nothing stored
    broker.deferred_zk.brokers[None] = {"log.retention.ms": "3000", "unclean.leader.election.enable":
                                "true"}
    broker.deferred_zk.brokers[1] = {"log.retention.ms": "1000", "log.segment.bytes": "x"}
    assert result(manager.reload()) is True
    assert broker.config.retention_ms == 1000 and broker.config.unclean_leader_election_enable
    assert broker.topic_defaults.retention_ms == 1000
    assert broker.log_manager.default_config.retention_ms == 1000
    assert broker.controller.config is broker.config
    assert broker.controller.unclean_elections == 1
    assert manager.layers.per_broker == {"log.retention.ms": "1000"}    # the bad one ignored
    assert result(manager.reload()) is False                         # unchanged: nothing to do
    del broker.deferred_zk.brokers[1]
    assert result(manager.reload()) is True
    assert broker.log_manager.default_config.retention_ms == 3000
    assert broker.controller.unclean_elections == 1                  # already on
    broker.deferred_zk.brokers[None] = {}
    result(manager.reload())
    assert broker.config == manager.static and broker.topic_defaults.retention_ms == 5 * 3600000


def test_controller_elects_leaderless_partitions_when_the_default_allows_unclean():
    """Kafka's enableDefaultUncleanLeaderElection: topics whose override says false keep
    waiting; the others' leaderless partitions go through the offline election."""
    from types import SimpleNamespace

    from kafkalite.controller.context import ControllerContext
    from kafkalite.controller.topic_configs import TopicConfigs

    context = ControllerContext(listener_name="PLAINTEXT")
    context.assignments = {"a": {0: [1], 1: [1]}, "b": {0: [1]}, "c": {0: [1]}}
    context.states = {("a", 0): SimpleNamespace(leader=-1), ("a", 1): SimpleNamespace(leader=1),
                      ("b", 0): SimpleNamespace(leader=-1), ("c", 0): SimpleNamespace(leader=-1)}
    context.live_brokers = {1}
    elected, sent = [], []

    def handle_state_changes(tps, state):
        elected.extend(tps)
        return defer.succeed(list(tps))

    controller = SimpleNamespace(
        context=context,
        controller_zk=SimpleNamespace(get_topic_config=lambda t: defer.succeed(
            {"unclean.leader.election.enable": "false"} if t == "b" else {})),
        partition_state_machine=SimpleNamespace(handle_state_changes=handle_state_changes),
        requests=SimpleNamespace(leader_and_isr=lambda *a: sent.append(("lai", a)),
                                 update_metadata=lambda *a: sent.append(("um", a))))
    result(TopicConfigs(controller).on_default_unclean_enabled())
    assert elected == [("a", 0), ("c", 0)]
    assert [kind for kind, _ in sent] == ["lai", "um"]
