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
  new overrides are written with ``tzk.set_topic_config``, whose ``/config/changes``
  notification makes every broker reload the topic's config (``BrokerService._on_config_change``).

Topic config values and synonyms follow Kafka: the topic override (DYNAMIC_TOPIC_CONFIG) if set,
then the broker keys it defaults from as set dynamically for this broker (DYNAMIC_BROKER_CONFIG)
and for the cluster (DYNAMIC_DEFAULT_BROKER_CONFIG), in server.properties / ``--override``
(STATIC_BROKER_CONFIG), then those keys' defaults (DEFAULT_CONFIG). One deliberate difference:
Kafka drops every broker synonym of ``retention.ms`` / ``segment.ms`` unless ``log.retention.ms``
/ ``log.roll.ms`` itself is set (its ``dropWhile`` in ``configSynonyms``), reporting e.g. a
``log.retention.hours=1`` broker as DEFAULT_CONFIG with no synonyms; kafkalite lists the whole
chain (``STATIC_BROKER_CONFIG:log.retention.hours=1, DEFAULT_CONFIG:log.retention.hours=168``).

Dynamic broker configs (KIP-226): altering a BROKER resource (this broker's id, or ``""`` for the
cluster default) is ``kafkalite.server.dynamic_config``'s; describing one lists the levels of
``kafkalite.config_dynamic``. Broker loggers (BROKER_LOGGER) are Python loggers: described with
their effective level, and set or reset with IncrementalAlterConfigs.

Error codes, as Kafka 2.8 answers them unless noted:
* unknown topic -> UNKNOWN_TOPIC_OR_PARTITION; bad topic name -> INVALID_TOPIC_EXCEPTION;
* broker resource naming another broker, or not an integer -> INVALID_REQUEST (a client sends
  a broker's resource to that broker); ``""`` is the cluster-wide default;
* a broker config that is not dynamic, or a bad value for one -> INVALID_REQUEST "Invalid config
  value for resource ConfigResource(type=BROKER, name='1'): ..." (Kafka's wording);
* unknown config key, or a value the table's validator refuses -> INVALID_CONFIG with the
  validator's message (Kafka's legacy AlterConfigs answers INVALID_REQUEST for a value that
  does not parse; kafkalite answers INVALID_CONFIG in both APIs);
* APPEND / SUBTRACT on a config that is not a list -> INVALID_CONFIG (Kafka: INVALID_REQUEST);
* a null value (other than for DELETE), a key twice in one incremental request, an unsupported
  resource type -> INVALID_REQUEST.
"""

from __future__ import annotations

import logging
from typing import Iterable, Mapping, NamedTuple

from twisted.internet import defer

from kafkalite import errors
from kafkalite.config import (
    BROKER_BY_NAME,
    BROKER_NO_EFFECT,
    BROKER_CONFIGS,
    TOPIC_BY_NAME,
    TOPIC_CONFIGS,
    TOPIC_NO_EFFECT,
    BrokerConfig,
    ConfigDef,
    TopicConfig,
    broker_synonyms,
    check_topic_config_name,
)
from kafkalite.config_dynamic import (
    APPLIED_DYNAMIC_CONFIGS, KAFKA_DYNAMIC_CONFIGS, DynamicBrokerConfig, render_value,
)
from kafkalite.errors import KafkaError, code_of
from kafkalite.server import dynamic_config
from kafkalite.server.broker_loggers import (  # noqa: F401 - re-exported
    LOG_LEVELS, ROOT_LOGGER, apply_logger_ops, current_loggers, validate_logger_ops,
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

# Kafka's DescribeConfigsResponse.ConfigSource
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5
DYNAMIC_BROKER_LOGGER_CONFIG = 6
CONFIG_SOURCE_NAMES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                       3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG",
                       5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG"}

# Kafka's DescribeConfigsResponse.ConfigType
CONFIG_TYPE_UNKNOWN = 0
CONFIG_TYPES = {"boolean": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6,
                "list": 7, "class": 8, "password": 9}

# Kafka's AlterConfigOp.OpType (defined with the broker-side handlers)
OP_NAMES = {0: "SET", 1: "DELETE", 2: "APPEND", 3: "SUBTRACT"}


NONE = errors.NONE


class DescribedConfig(NamedTuple):
    name: str
    value: str | None                       # None for a sensitive (password) or unset config
    read_only: bool
    config_source: int
    is_sensitive: bool
    synonyms: list                          # [(name, value, source)], most specific first
    config_type: int
    documentation: str | None


class DescribedResource(NamedTuple):
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    configs: list[DescribedConfig]


# --- rendering values as Kafka prints them -----------------------------------------------------

#: a parsed value as Kafka's ConfigDef.convertToString writes it (None stays None)
render = render_value


def _sensitive(definition: ConfigDef | None) -> bool:
    return definition is not None and definition.type == "password"


def _config_type(definition: ConfigDef | None) -> int:
    return CONFIG_TYPES.get(definition.type, CONFIG_TYPE_UNKNOWN) if definition else \
        CONFIG_TYPE_UNKNOWN


def _layers(broker_config: BrokerConfig, dynamic: DynamicBrokerConfig | None
            ) -> DynamicBrokerConfig:
    """The broker's config levels; a static-only one for a bare BrokerConfig."""
    return dynamic if dynamic is not None else DynamicBrokerConfig(broker_config)


def _broker_layers(broker) -> DynamicBrokerConfig:
    """A broker's config levels (a broker without dynamic configs: its config alone)."""
    manager = getattr(broker, "dynamic_config", None)
    return manager.layers if manager is not None else DynamicBrokerConfig(broker.config)


def _dynamic_read_only(name: str) -> bool:
    """Kafka's readOnly flag, except that the dynamic configs kafkalite applies only at
    start-up (listeners, TLS) are read-only here: kafkalite refuses to change them."""
    return not (name in APPLIED_DYNAMIC_CONFIGS
                or (name in KAFKA_DYNAMIC_CONFIGS and name in BROKER_NO_EFFECT))


# --- describing (pure) -------------------------------------------------------------------------

def _wanted(keys: Iterable[str] | None):
    if not keys:              # None or [] both mean every config (as Kafka 2.8+ and librdkafka)
        return None
    return set(keys)


def describe_topic_config(broker_config: BrokerConfig, overrides: Mapping[str, str],
                          keys: Iterable[str] | None = None, include_synonyms: bool = False,
                          include_documentation: bool = False,
                          dynamic: DynamicBrokerConfig | None = None) -> list[DescribedConfig]:
    """Every topic config (table order, then overrides of keys the table does not know) with
    its effective value for a topic whose overrides are ``overrides``. ``dynamic``: the
    broker's config levels (default: ``broker_config`` alone, no dynamic configs)."""
    wanted = _wanted(keys)
    layers = _layers(broker_config, dynamic)
    defaults = layers.current.topic_defaults()
    out = []
    for definition in TOPIC_CONFIGS:
        name = definition.name
        if wanted is not None and name not in wanted:
            continue
        sensitive = _sensitive(definition)
        chain = []
        value = defaults.get(name)
        if name in overrides:
            raw = overrides[name]
            try:
                value = definition.parse(raw)
                shown = render(definition, value)
            except errors.ConfigError:
                shown = raw              # a bad override in ZooKeeper: show what is there
            chain.append((name, None if sensitive else shown, DYNAMIC_TOPIC_CONFIG))
        else:
            shown = render(definition, value)
        if definition.topic_name in BROKER_BY_NAME:
            chain += layers.synonyms(broker_synonyms(definition.topic_name), sensitive)
        out.append(DescribedConfig(
            name, None if sensitive else shown, False,
            chain[0][2] if chain else DEFAULT_CONFIG, sensitive,
            chain if include_synonyms else [], _config_type(definition),
            definition.doc if include_documentation else None))
    for name in sorted(set(overrides) - set(TOPIC_BY_NAME)):
        if wanted is not None and name not in wanted:
            continue
        value = overrides[name]
        out.append(DescribedConfig(
            name, value, False, DYNAMIC_TOPIC_CONFIG, False,
            [(name, value, DYNAMIC_TOPIC_CONFIG)] if include_synonyms else [],
            CONFIG_TYPE_UNKNOWN, None))
    return out


def describe_broker_config(broker_config: BrokerConfig, keys: Iterable[str] | None = None,
                           include_synonyms: bool = False,
                           include_documentation: bool = False,
                           dynamic: DynamicBrokerConfig | None = None) -> list[DescribedConfig]:
    """Every broker config of this broker with its effective value (table order), then the
    dynamic ones the table does not list (Kafka names without effect, custom names)."""
    wanted = _wanted(keys)
    layers = _layers(broker_config, dynamic)
    out = []
    for definition in BROKER_CONFIGS:
        name = definition.name
        if wanted is not None and name not in wanted:
            continue
        sensitive = _sensitive(definition)
        chain = layers.synonyms(broker_synonyms(name), sensitive)
        # Kafka's dropWhile: only this key and the less specific ones below it count
        while chain and chain[0][0] != name:
            chain.pop(0)
        value = None if sensitive else render(definition, layers.current.get(name))
        out.append(DescribedConfig(
            name, value, _dynamic_read_only(name), chain[0][2] if chain else DEFAULT_CONFIG,
            sensitive, chain if include_synonyms else [], _config_type(definition),
            definition.doc if include_documentation else None))
    extra = {**layers.cluster_default, **layers.per_broker}
    for name in sorted(set(extra) - set(BROKER_BY_NAME)):
        if wanted is not None and name not in wanted:
            continue
        out.append(_untyped_dynamic(layers, name, per_broker=True, include_synonyms=
                                    include_synonyms))
    return out


def _untyped_dynamic(layers: DynamicBrokerConfig, name: str, per_broker: bool,
                     include_synonyms: bool) -> DescribedConfig:
    """A dynamic broker config kafkalite's table lacks: a Kafka config without effect here,
    or a custom one (Kafka knows no type for it, so it treats it as sensitive)."""
    sensitive = name not in BROKER_NO_EFFECT
    chain = [c for c in layers.synonyms([name], sensitive)
             if per_broker or c[2] == DYNAMIC_DEFAULT_BROKER_CONFIG]
    value = None if sensitive or not chain else chain[0][1]
    return DescribedConfig(name, value, _dynamic_read_only(name),
                           chain[0][2] if chain else DEFAULT_CONFIG, sensitive,
                           chain if include_synonyms else [], CONFIG_TYPE_UNKNOWN, None)


def describe_default_broker_config(layers: DynamicBrokerConfig, keys: Iterable[str] | None = None,
                                   include_synonyms: bool = False,
                                   include_documentation: bool = False) -> list[DescribedConfig]:
    """The cluster-wide dynamic defaults (resource name ``""``): only the configs set there,
    each with its DYNAMIC_DEFAULT_BROKER_CONFIG synonyms, as Kafka describes them."""
    wanted = _wanted(keys)
    out = []
    for name, raw in layers.cluster_default.items():
        if wanted is not None and name not in wanted:
            continue
        definition = BROKER_BY_NAME.get(name)
        if definition is None:
            out.append(_untyped_dynamic(layers, name, per_broker=False,
                                        include_synonyms=include_synonyms))
            continue
        sensitive = _sensitive(definition)
        chain = [c for c in layers.synonyms(broker_synonyms(name), sensitive)
                 if c[2] == DYNAMIC_DEFAULT_BROKER_CONFIG]
        while chain and chain[0][0] != name:
            chain.pop(0)
        out.append(DescribedConfig(
            name, None if sensitive else raw, _dynamic_read_only(name),
            chain[0][2] if chain else DEFAULT_CONFIG, sensitive,
            chain if include_synonyms else [], _config_type(definition),
            definition.doc if include_documentation else None))
    return out


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
                    raise errors.UnknownTopicOrPartitionError(
                        f"The topic '{name}' does not exist.")
                overrides = yield broker.tzk.get_topic_config(name)
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

def validate_topic_overrides(broker_config: BrokerConfig, overrides: Mapping[str, str]
                             ) -> TopicConfig:
    """The topic's config with ``overrides``; ConfigError (INVALID_CONFIG) naming a bad or
    unknown key."""
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
    InvalidRequestError for duplicate keys, null values or an unknown op; ConfigError for
    APPEND/SUBTRACT on a key that is not a list (or is unknown)."""
    ops = list(ops)
    check_ops(ops)
    result = dict(current)
    defaults = None
    for name, op, value in ops:
        if op == OP_SET:
            result[name] = str(value)
        elif op == OP_DELETE:
            result.pop(name, None)
        elif op in (OP_APPEND, OP_SUBTRACT):
            definition = TOPIC_BY_NAME.get(name)
            if definition is None:
                check_topic_config_name(name)   # Kafka's "Unknown topic config name: x"
                raise errors.ConfigError(f"{name} has no effect in kafkalite "
                                         f"({TOPIC_NO_EFFECT[name]}); {OP_NAMES[op]} is not "
                                         "offered for it, SET is")
            if definition.type != "list":
                raise errors.ConfigError(
                    f"Config value {OP_NAMES[op].lower()} is not allowed for config key: "
                    f"{name} (it is {definition.type}, not a list)")
            if name in result:
                items = _list_items(result[name])
            else:
                defaults = defaults or broker_config.topic_defaults()
                items = list(defaults.get(name) or ())
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
    validate_topic_overrides(broker.config, overrides)
    if not validate_only:
        log.info("topic %s: config overrides now %s", topic, overrides)
        yield broker.tzk.set_topic_config(topic, overrides)


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
                current = yield broker.tzk.get_topic_config(name)
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
