"""Kafka's config admin APIs on the broker: DescribeConfigs, AlterConfigs, IncrementalAlterConfigs.

Protocol-independent: the callers (the native protocol's handlers, the Kafka-protocol adapter)
pass plain values in and get plain values back. Everything about a config (type, default,
validator, documentation, which broker ``log.*`` key it defaults from) comes from the one table
in ``kafkalite.config``.

* ``describe_configs(broker, resources, include_synonyms, include_documentation)`` returns a
  **Deferred** firing with ``[DescribedResource]``: topic overrides are read from ZooKeeper
  (``/config/topics/<t>``), as Kafka 2.8's brokers do, so any broker can describe any topic.
* ``alter_configs(broker, resources, validate_only)`` (Kafka's legacy AlterConfigs: the given set
  REPLACES the topic's overrides) and ``incremental_alter_configs(broker, resources,
  validate_only)`` (SET / DELETE / APPEND / SUBTRACT per key) return a Deferred firing with
  ``[(resource_type, resource_name, error_code, error_message)]`` in request order. A topic's
  new overrides are written with ``deferred_zk.set_topic_config``, whose ``/config/changes``
  notification makes every broker reload the topic's config (``BrokerService._on_config_change``).

What DescribeConfigs lists, with which types, values and synonyms, is
``kafkalite.server.config_describe``'s (Kafka 2.8's names from its jars, kafkalite's values).

Dynamic broker configs (KIP-226): altering a BROKER resource (this broker's id, or ``""`` for the
cluster default) is ``kafkalite.server.dynamic_config``'s; describing one lists the levels of
``kafkalite.config_dynamic``. Broker loggers (BROKER_LOGGER) are Python loggers: described with
their effective level, and set or reset with IncrementalAlterConfigs.

Error codes, as Kafka 2.8 answers them unless noted:
* unknown topic -> UNKNOWN_TOPIC_OR_PARTITION (DescribeConfigs: no message, as Kafka's);
  bad topic name -> INVALID_TOPIC_EXCEPTION;
* broker resource naming another broker, or not an integer -> INVALID_REQUEST (a client sends
  a broker's resource to that broker); ``""`` is the cluster-wide default;
* a broker config that is not dynamic, or a bad value for one -> INVALID_REQUEST "Invalid config
  value for resource ConfigResource(type=BROKER, name='1'): ..." (Kafka's wording);
* unknown topic config name -> INVALID_CONFIG "Unknown topic config name: x";
* a value a topic config cannot take -> INVALID_REQUEST "Invalid config value for resource
  ConfigResource(type=TOPIC, name='t'): Invalid value x for configuration retention.ms: Not a
  number of type LONG" (Kafka's ConfigException, wrapped as its AlterConfigs wraps it);
* APPEND / SUBTRACT on a config that is not a list -> INVALID_REQUEST "Config value append is
  not allowed for config key: retention.ms"; on an unknown name -> INVALID_CONFIG (Kafka 2.8:
  UNKNOWN_SERVER_ERROR, its own unhandled exception);
* an operation other than 0-3 -> INVALID_REQUEST (Kafka 2.8: UNKNOWN_SERVER_ERROR, again its
  own unhandled exception: kafkalite does not copy that);
* a null value (other than for DELETE), a key twice in one incremental request, an unsupported
  resource type -> INVALID_REQUEST.
"""

from __future__ import annotations

import logging
from typing import Iterable, Mapping, NamedTuple

from twisted.internet import defer

from kafkalite import errors
from kafkalite.config import (
    TOPIC_BY_NAME, BrokerConfig, TopicConfig, check_topic_config_name,
)
from kafkalite.config_dynamic import (
    DynamicBrokerConfig, check_kafka_type, check_value, render_value,
)
from kafkalite.config_kafka_table import KAFKA_TOPIC_DEFS
from kafkalite.errors import KafkaError, code_of
from kafkalite.server import dynamic_config
from kafkalite.server.broker_loggers import (  # noqa: F401 - re-exported
    LOG_LEVELS, ROOT_LOGGER, apply_logger_ops, current_loggers, validate_logger_ops,
)
from kafkalite.server.config_describe import (  # noqa: F401 - re-exported
    CONFIG_SOURCE_NAMES, CONFIG_TYPE_UNKNOWN, CONFIG_TYPES, DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG, DYNAMIC_BROKER_LOGGER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DescribedConfig, _wanted,
    describe_broker_config, describe_default_broker_config, describe_topic_config,
)
from kafkalite.server.dynamic_config import OP_APPEND, OP_DELETE, OP_SET, OP_SUBTRACT
from kafkalite.topics import validate_topic_name

log = logging.getLogger(__name__)

# Kafka's ConfigResource.Type
RESOURCE_UNKNOWN = 0
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_BROKER_LOGGER = 8
RESOURCE_TYPE_NAMES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "BROKER",
                       8: "BROKER_LOGGER"}

# Kafka's AlterConfigOp.OpType (defined with the broker-side handlers)
OP_NAMES = {0: "SET", 1: "DELETE", 2: "APPEND", 3: "SUBTRACT"}


NONE = errors.NONE

#: a parsed value as Kafka's ConfigDef.convertToString writes it (None stays None)
render = render_value


class DescribedResource(NamedTuple):
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    configs: list[DescribedConfig]


def _broker_layers(broker) -> DynamicBrokerConfig:
    """A broker's config levels (a broker without dynamic configs: its config alone)."""
    manager = getattr(broker, "dynamic_config", None)
    return manager.layers if manager is not None else DynamicBrokerConfig(broker.config)


def describe_loggers(keys: Iterable[str] | None = None) -> list[DescribedConfig]:
    wanted = _wanted(keys)
    return [DescribedConfig(name, level, False, DYNAMIC_BROKER_LOGGER_CONFIG, False, [],
                            CONFIG_TYPE_UNKNOWN, None)
            for name, level in current_loggers().items() if wanted is None or name in wanted]


def _broker_id_of(name: str) -> int:
    try:
        return int(name)
    except (TypeError, ValueError):
        raise errors.InvalidRequestError(
            f"Broker id must be an integer, but it is: {name}") from None


def _check_own_broker(broker, name: str, allow_default: bool) -> None:
    if _broker_id_of(name) != broker.broker_id:
        expected = f"{broker.broker_id} or empty string" if allow_default else \
            str(broker.broker_id)
        raise errors.InvalidRequestError(
            f"Unexpected broker id, expected {expected}, but received {name}")


def _unsupported(resource_type: int) -> KafkaError:
    return errors.InvalidRequestError(
        f"Unsupported resource type: {RESOURCE_TYPE_NAMES.get(resource_type, resource_type)}")


def _error_result(resource_type: int, name: str, exc: BaseException) -> DescribedResource:
    if isinstance(exc, KafkaError):
        message = exc.message
    else:
        log.exception("describing config resource %s %r failed", resource_type, name,
                      exc_info=exc)
        message = f"{type(exc).__name__}: {exc}"
    return DescribedResource(code_of(exc), message, resource_type, name, [])


# --- DescribeConfigs -----------------------------------------------------------------------------

@defer.inlineCallbacks
def describe_configs(broker, resources, include_synonyms: bool = False,
                     include_documentation: bool = False):
    """Deferred firing with one DescribedResource per ``(resource_type, resource_name,
    configuration_keys)`` in ``resources``, in order (``configuration_keys`` None or empty =
    every config)."""
    out = []
    for resource_type, name, keys in resources:
        try:
            if resource_type == RESOURCE_TOPIC:
                validate_topic_name(name)
                if not broker.metadata_cache.contains(name):
                    # Kafka answers the code alone here (no exception, so no message)
                    out.append(DescribedResource(errors.UnknownTopicOrPartitionError.code, None,
                                                 resource_type, name, []))
                    continue
                overrides = yield broker.deferred_zk.get_topic_config(name)
                layers = _broker_layers(broker)
                configs = describe_topic_config(layers.static, overrides, keys,
                                                include_synonyms, include_documentation, layers)
            elif resource_type == RESOURCE_BROKER:
                layers = _broker_layers(broker)
                if not name:
                    configs = describe_default_broker_config(layers, keys, include_synonyms,
                                                             include_documentation)
                else:
                    _check_own_broker(broker, name, allow_default=True)
                    configs = describe_broker_config(layers.static, keys, include_synonyms,
                                                     include_documentation, layers)
            elif resource_type == RESOURCE_BROKER_LOGGER:
                if not name:
                    raise errors.InvalidRequestError("Broker id must not be empty")
                _check_own_broker(broker, name, allow_default=False)
                configs = describe_loggers(keys)
            else:
                raise _unsupported(resource_type)
        except Exception as exc:  # noqa: BLE001 - answered per resource
            out.append(_error_result(resource_type, name, exc))
            continue
        out.append(DescribedResource(NONE, None, resource_type, name, configs))
    return out


# --- validating changes (pure) -----------------------------------------------------------------

def validate_topic_overrides(broker_config: BrokerConfig, overrides: Mapping[str, str],
                             topic: str | None = None) -> TopicConfig:
    """The topic's config with ``overrides``, checked as Kafka's LogConfig.validate: names
    first (ConfigError, INVALID_CONFIG: "Unknown topic config name: x"), then values (Kafka's
    ConfigException, which its AlterConfigs answers INVALID_REQUEST "Invalid config value for
    resource ConfigResource(type=TOPIC, name='t'): Invalid value x for configuration ...").
    Without ``topic`` a bad value is a ConfigError in Kafka's words."""
    for name in overrides:
        check_topic_config_name(name)
    try:
        for name, raw in overrides.items():
            definition = TOPIC_BY_NAME.get(name)
            if definition is not None:
                check_value(definition, str(raw))
            else:                        # accepted without effect: Kafka's type still checks
                check_kafka_type(name, KAFKA_TOPIC_DEFS[name].type, str(raw))
    except errors.ConfigError as exc:
        if topic is None:
            raise
        raise errors.InvalidRequestError(
            f"Invalid config value for resource ConfigResource(type=TOPIC, name='{topic}'): "
            f"{exc.message}") from None
    return broker_config.topic_defaults().with_overrides(overrides)


def _null_values(names: Iterable[str]) -> KafkaError:
    return errors.InvalidRequestError(f"Null value not supported for : {','.join(names)}")


def _as_pairs(configs) -> list[tuple[str, str | None]]:
    if isinstance(configs, Mapping):
        return list(configs.items())
    return [(name, value) for name, value in configs]


def replaced_overrides(configs) -> dict[str, str]:
    """Legacy AlterConfigs: the given ``{name: value}`` (or pairs) as the new overrides."""
    pairs = _as_pairs(configs)
    nulls = [name for name, value in pairs if value is None]
    if nulls:
        raise _null_values(nulls)
    return {str(name): str(value) for name, value in pairs}


def _list_items(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def check_ops(ops) -> None:
    """InvalidRequestError for duplicate keys or null values (other than DELETE's), checked
    first for every resource type, as Kafka does."""
    seen: dict[str, int] = {}
    for name, _op, _value in ops:
        seen[name] = seen.get(name, 0) + 1
    duplicates = sorted(name for name, count in seen.items() if count > 1)
    if duplicates:
        raise errors.InvalidRequestError(
            f"Error due to duplicate config keys : {','.join(duplicates)}")
    nulls = [f"{OP_NAMES.get(op, op)}:{name}" for name, op, value in ops
             if value is None and op != OP_DELETE]
    if nulls:
        raise _null_values(nulls)


def apply_incremental(current: Mapping[str, str], ops, broker_config: BrokerConfig
                      ) -> dict[str, str]:
    """The overrides after applying ``ops`` ``[(name, op, value)]`` to ``current``.
    InvalidRequestError for duplicate keys, null values, an unknown op, and APPEND/SUBTRACT on
    a config that is not a list (Kafka's words); ConfigError for APPEND/SUBTRACT on an unknown
    name. ``broker_config`` is kept for callers: a list starts from Kafka's LogConfig default,
    not the broker's."""
    ops = list(ops)
    check_ops(ops)
    result = dict(current)
    for name, op, value in ops:
        if op == OP_SET:
            result[name] = str(value)
        elif op == OP_DELETE:
            result.pop(name, None)
        elif op in (OP_APPEND, OP_SUBTRACT):
            # Kafka 2.8 fails here with an unhandled exception (UNKNOWN_SERVER_ERROR) for a
            # name it does not know; kafkalite keeps the answer its SET gives (INVALID_CONFIG)
            check_topic_config_name(name)
            if KAFKA_TOPIC_DEFS[name].type != "list":
                raise errors.InvalidRequestError(
                    f"Config value {OP_NAMES[op].lower()} is not allowed for config key: "
                    f"{name}")
            if name in result:
                items = _list_items(result[name])
            else:                        # Kafka starts from LogConfig's default of the list
                items = _list_items(KAFKA_TOPIC_DEFS[name].default or "")
            given = _list_items(str(value))
            if op == OP_APPEND:
                items += [item for item in given if item not in items]
            else:
                items = [item for item in items if item not in given]
            result[name] = ",".join(items)
        else:
            raise errors.InvalidRequestError(f"unknown config operation {op} for {name} "
                                             f"(0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT)")
    return result


# --- AlterConfigs / IncrementalAlterConfigs ----------------------------------------------------

def _check_topic(broker, name: str) -> None:
    validate_topic_name(name)
    if not broker.metadata_cache.contains(name):
        raise errors.UnknownTopicOrPartitionError(f"The topic '{name}' does not exist.")


@defer.inlineCallbacks
def _write_topic(broker, topic: str, overrides: dict[str, str], validate_only: bool):
    validate_topic_overrides(broker.config, overrides, topic)
    if not validate_only:
        log.info("topic %s: config overrides now %s", topic, overrides)
        yield broker.deferred_zk.set_topic_config(topic, overrides)


def _answer(resource_type, name, exc: BaseException | None):
    if exc is None:
        return (resource_type, name, NONE, None)
    if isinstance(exc, KafkaError):
        return (resource_type, name, code_of(exc), exc.message)
    log.exception("altering config resource %s %r failed", resource_type, name, exc_info=exc)
    return (resource_type, name, errors.UnknownServerError.code, f"{type(exc).__name__}: {exc}")


@defer.inlineCallbacks
def alter_configs(broker, resources, validate_only: bool = False):
    """Kafka's legacy AlterConfigs. ``resources``: ``[(resource_type, resource_name, configs)]``
    with ``configs`` a ``{name: value}`` dict or ``[(name, value)]``. For a topic the given
    set replaces every override (keys left out are reset to their defaults). Deferred firing
    with ``[(resource_type, resource_name, error_code, error_message)]``."""
    out = []
    for resource_type, name, configs in resources:
        try:
            if resource_type == RESOURCE_TOPIC:
                overrides = replaced_overrides(configs)
                _check_topic(broker, name)
                yield _write_topic(broker, name, overrides, validate_only)
            elif resource_type == RESOURCE_BROKER:
                yield dynamic_config.alter_broker(broker, name, replaced_overrides(configs),
                                                  validate_only)
            else:
                raise errors.InvalidRequestError(
                    f"AlterConfigs is only supported for topics and brokers, but resource type "
                    f"is {RESOURCE_TYPE_NAMES.get(resource_type, resource_type)}")
        except Exception as exc:  # noqa: BLE001 - answered per resource
            out.append(_answer(resource_type, name, exc))
            continue
        out.append(_answer(resource_type, name, None))
    return out


@defer.inlineCallbacks
def incremental_alter_configs(broker, resources, validate_only: bool = False):
    """Kafka's IncrementalAlterConfigs. ``resources``: ``[(resource_type, resource_name,
    [(name, op, value)])]`` with op 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT (APPEND/SUBTRACT only
    for list configs). Deferred firing with ``[(resource_type, resource_name, error_code,
    error_message)]``."""
    out = []
    for resource_type, name, ops in resources:
        ops = [(str(n), int(op), None if v is None else str(v)) for n, op, v in ops]
        try:
            if resource_type == RESOURCE_TOPIC:
                _check_topic(broker, name)
                current = yield broker.deferred_zk.get_topic_config(name)
                overrides = apply_incremental(current, ops, broker.config)
                yield _write_topic(broker, name, overrides, validate_only)
            elif resource_type == RESOURCE_BROKER:
                check_ops(ops)
                yield dynamic_config.incremental_alter_broker(broker, name, ops, validate_only)
            elif resource_type == RESOURCE_BROKER_LOGGER:
                _check_own_broker(broker, name, allow_default=False)
                validate_logger_ops(ops)
                if not validate_only:
                    apply_logger_ops(ops)
            else:
                raise errors.InvalidRequestError(
                    f"IncrementalAlterConfigs is only supported for topics, brokers and broker "
                    f"loggers, but resource type is "
                    f"{RESOURCE_TYPE_NAMES.get(resource_type, resource_type)}")
        except Exception as exc:  # noqa: BLE001 - answered per resource
            out.append(_answer(resource_type, name, exc))
            continue
        out.append(_answer(resource_type, name, None))
    return out
