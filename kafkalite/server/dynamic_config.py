"""Dynamic broker configs on the broker (Kafka's KIP-226): loading, applying, altering, describing.

The pure parts (which names are dynamic, validation, precedence) are in
``kafkalite.config_dynamic``. Here:

* ``BrokerDynamicConfig`` reads ``/config/brokers/<default>`` and ``/config/brokers/<id>`` at
  start-up, before the logs load (so recovered logs already get the dynamic defaults), and again
  whenever ``/config/changes`` changes (``BrokerService._on_config_change``). A new effective
  config becomes ``broker.config``; the topic defaults it derives go to the LogManager, and every
  hosted topic's config is recomputed by the caller (topics with their own override keep it).
  Retention, segment rolls, flushes, size limits and ``min.insync.replicas`` read the topic
  config each time, so the change takes effect at the next check, as in Kafka. When the default
  ``unclean.leader.election.enable`` turns on, the controller (if this broker is it) elects
  leaders for leaderless partitions, as Kafka's ``enableDefaultUncleanLeaderElection``.
* ``alter_broker`` / ``incremental_alter_broker``: AlterConfigs and IncrementalAlterConfigs of a
  BROKER resource (``"<id>"`` of this broker, or ``""`` for the cluster default), answered as
  Kafka's ZkAdminManager answers them: a refused name or value is INVALID_REQUEST "Invalid config
  value for resource ConfigResource(type=BROKER, name='1'): ..."; the new set replaces the
  level's znode and a ``brokers/<id>`` notification tells every broker.
"""

from __future__ import annotations

import logging
from typing import Mapping

from twisted.internet import defer

from kafkalite import errors
from kafkalite.config import BROKER_BY_NAME, BrokerConfig
from kafkalite.config_dynamic import DynamicBrokerConfig, validate_dynamic

log = logging.getLogger(__name__)

# Kafka's AlterConfigOp.OpType (as in server.config_admin)
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
_OP_WORDS = {OP_APPEND: "append", OP_SUBTRACT: "subtract"}


class BrokerDynamicConfig:
    """The dynamic config levels of one broker, kept in step with ZooKeeper."""

    def __init__(self, broker, static: BrokerConfig):
        self.broker = broker
        self.layers = DynamicBrokerConfig(static)
        self._raw: tuple | None = None       # (default, own) as last read
        self._lock = defer.DeferredLock()    # one reload at a time, applied in order

    @property
    def static(self) -> BrokerConfig:
        return self.layers.static

    def reload(self) -> defer.Deferred:
        """Read both levels; apply them when they changed. Fires True when the effective
        config changed."""
        return self._lock.run(self._reload)

    @defer.inlineCallbacks
    def _reload(self):
        deferred_zk = self.broker.deferred_zk
        default = yield deferred_zk.get_broker_config(None)
        own = yield deferred_zk.get_broker_config(self.broker.broker_id)
        raw = (dict(default), dict(own))
        if raw == self._raw:
            return False
        self._raw = raw
        old = self.layers.current
        new = self.layers.update(cluster_default=default, per_broker=own)
        log.info("broker %d: dynamic configs: cluster default %s, broker %s",
                 self.broker.broker_id, self.layers.cluster_default, self.layers.per_broker)
        if new == old:
            return False
        self._apply(old, new)
        return True

    def _apply(self, old: BrokerConfig, new: BrokerConfig) -> None:
        broker = self.broker
        broker.config = new
        broker.topic_defaults = new.topic_defaults()
        broker.log_manager.default_config = broker.topic_defaults
        broker.log_manager.cleaner_backoff_ms = new.log_cleaner_backoff_ms   # from its next wait
        controller = getattr(broker, "controller", None)
        if controller is not None:
            controller.config = new
            if new.unclean_leader_election_enable and not old.unclean_leader_election_enable:
                controller.enable_default_unclean_election()


# --- AlterConfigs / IncrementalAlterConfigs of a BROKER resource --------------------------------

def _broker_id(broker, name: str) -> int | None:
    """None for the cluster default (``""``); this broker's id; else INVALID_REQUEST."""
    if not name:
        return None
    try:
        broker_id = int(name)
    except (TypeError, ValueError):
        raise errors.InvalidRequestError(
            f"Broker id must be an integer, but it is: {name}") from None
    if broker_id != broker.broker_id:
        raise errors.InvalidRequestError(
            f"Unexpected broker id, expected {broker.broker_id}, but received {name}")
    return broker_id


def _invalid(name: str, exc: Exception) -> errors.KafkaError:
    message = exc.message if isinstance(exc, errors.KafkaError) else str(exc)
    return errors.InvalidRequestError(
        f"Invalid config value for resource ConfigResource(type=BROKER, name='{name}'): "
        f"{message}")


@defer.inlineCallbacks
def _write(broker, name: str, broker_id: int | None, configs: dict[str, str],
           validate_only: bool):
    try:
        validate_dynamic(configs, per_broker=broker_id is not None)
    except errors.ConfigError as exc:
        raise _invalid(name, exc) from None
    if validate_only:
        return
    level = f"broker {broker_id}" if broker_id is not None else "brokers (cluster default)"
    log.info("updating %s with new configuration: %s", level, configs)
    yield broker.deferred_zk.set_broker_config(broker_id, configs)


def alter_broker(broker, name: str, configs: Mapping[str, str], validate_only: bool):
    """Kafka's legacy AlterConfigs of a broker resource: ``configs`` replaces the level's
    dynamic configs. Deferred; fails with a KafkaError to answer."""
    try:
        broker_id = _broker_id(broker, name)
    except errors.KafkaError as exc:
        return defer.fail(exc)
    return _write(broker, name, broker_id, dict(configs), validate_only)


def apply_broker_ops(current: Mapping[str, str], ops) -> dict[str, str]:
    """The level's configs after ``ops`` ``[(name, op, value)]`` (Kafka's
    prepareIncrementalConfigs): APPEND and SUBTRACT only for list configs, starting from the
    stored value or the config's default; APPEND keeps duplicates, as Kafka's."""
    result = dict(current)
    for name, op, value in ops:
        if op == OP_SET:
            result[name] = value
        elif op == OP_DELETE:
            result.pop(name, None)
        elif op in (OP_APPEND, OP_SUBTRACT):
            definition = BROKER_BY_NAME.get(name)
            if definition is None or definition.type != "list":
                raise errors.InvalidRequestError(
                    f"Config value {_OP_WORDS[op]} is not allowed for config key: {name}")
            if name in result:
                old = result[name].split(",")
            else:
                old = list(definition.default or ())
            given = value.split(",")
            items = old + given if op == OP_APPEND else [i for i in old if i not in given]
            result[name] = ",".join(items)
        else:
            raise errors.InvalidRequestError(f"unknown config operation {op} for {name} "
                                             f"(0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT)")
    return result


@defer.inlineCallbacks
def incremental_alter_broker(broker, name: str, ops, validate_only: bool):
    """Kafka's IncrementalAlterConfigs of a broker resource (duplicate keys and null values
    already refused by the caller). Deferred; fails with a KafkaError to answer."""
    broker_id = _broker_id(broker, name)
    stored = yield broker.deferred_zk.get_broker_config(broker_id)
    per_broker = broker_id is not None
    current = {}
    for key, value in stored.items():     # Kafka's fromPersistentProps: drop invalid entries
        try:
            validate_dynamic({key: value}, per_broker)
        except errors.ConfigError:
            continue
        current[key] = value
    configs = apply_broker_ops(current, ops)
    yield _write(broker, name, broker_id, configs, validate_only)
