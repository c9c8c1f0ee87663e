"""DescribeConfigs' entries, built as Kafka 2.8's ConfigHelper builds them. Pure: no I/O.

Which names, types and defaults come from Kafka's own definitions (``kafkalite.config_kafka_table``,
generated from its jars); the values of what kafkalite applies come from its config table
(``kafkalite.config``) and the broker's config levels (``kafkalite.config_dynamic``).

* A broker (its own id) lists every public KafkaConfig config, then every name it was given
  (server.properties, ``--override``: Kafka's ``originals``) and every dynamic one. A name Kafka
  does not define (AclAuthorizer's ``super.users``, kafkalite's ``zookeeper.auth.digest``, a
  custom name) is listed only when given, as Kafka lists it: type UNKNOWN, hence sensitive.
* A topic lists every LogConfig config (those kafkalite accepts without effect with the value of
  their broker synonym), then overrides Kafka does not define (type UNKNOWN, sensitive).
* Synonyms follow Kafka's ``configSynonyms``: the broker names that set one value (Kafka's
  ``brokerConfigSynonyms``: ``log.retention.{ms,minutes,hours}``, ``log.roll.{ms,hours}``,
  ``log.roll.jitter.{ms,hours}``, ``log.flush.interval.ms`` over
  ``log.flush.scheduler.interval.ms``, a ``listener.name.*`` key over its base) level by level
  (dynamic per broker, dynamic cluster default, static, default), then ``dropWhile`` the name is
  not the one described: a topic's ``retention.ms`` has no broker synonym unless
  ``log.retention.ms`` itself is set, whatever ``log.retention.hours`` says.
* Read-only is Kafka's flag (not dynamic in Kafka 2.8), except that the dynamic configs kafkalite
  applies only at start-up (listeners, TLS, SASL) are read-only: kafkalite refuses to change them.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping, NamedTuple

from kafkalite.config import (
    BROKER_BY_NAME, BROKER_NO_EFFECT, TOPIC_BY_NAME, TOPIC_NO_EFFECT, BrokerConfig,
)
from kafkalite.config_dynamic import (
    APPLIED_DYNAMIC_CONFIGS, KAFKA_DYNAMIC_CONFIGS, DynamicBrokerConfig, render_value,
)
from kafkalite.config_kafka_table import (
    KAFKA_BROKER_DEFS, KAFKA_DYNAMIC_ONLY_DEFS, KAFKA_LISTED_BROKER_CONFIGS, KAFKA_TOPIC_DEFS,
)
from kafkalite.errors import ConfigError

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

_LISTENER_CONFIG = re.compile(r"^listener\.name\.[^.]*\.(.*)$")   # Kafka's ListenerConfigRegex
# Kafka's ListenerMechanismConfigs: set as listener.name.<l>.<mechanism>.<config>
_LISTENER_MECHANISM_CONFIGS = ("sasl.jaas.config", "sasl.login.callback.handler.class",
                               "sasl.login.class", "sasl.server.callback.handler.class",
                               "connections.max.reauth.ms")
_SYNONYM_GROUPS = (("log.roll.ms", "log.roll.hours"),
                   ("log.roll.jitter.ms", "log.roll.jitter.hours"),
                   ("log.retention.ms", "log.retention.minutes", "log.retention.hours"))
_H = 3600 * 1000


class DescribedConfig(NamedTuple):
    name: str
    value: str | None                       # None for a sensitive (password) or unset config
    read_only: bool
    config_source: int
    is_sensitive: bool
    synonyms: list                          # [(name, value, source)], most specific first
    config_type: int
    documentation: str | None


def kafka_broker_synonyms(name: str) -> list[str]:
    """Kafka 2.8's DynamicBrokerConfig.brokerConfigSynonyms (listener overrides matched)."""
    for group in _SYNONYM_GROUPS:
        if name in group:
            return list(group)
    if name == "log.flush.interval.ms":      # log.flush.scheduler.interval.ms is its default
        return [name, "log.flush.scheduler.interval.ms"]
    match = _LISTENER_CONFIG.match(name)
    if match:
        base = match.group(1)
        mechanism = next((c for c in _LISTENER_MECHANISM_CONFIGS if base.endswith(c)), None)
        return [name, mechanism or base]
    return [name]


def kafka_broker_type(name: str) -> str | None:
    """Kafka's KafkaConfig.configType: its own, a dynamic-only one's, or its synonyms' (a
    listener override has its base's); None for a name Kafka does not define."""
    definition = KAFKA_BROKER_DEFS.get(name) or KAFKA_DYNAMIC_ONLY_DEFS.get(name)
    if definition is not None:
        return definition.type
    for synonym in kafka_broker_synonyms(name):
        if synonym in KAFKA_BROKER_DEFS:
            return KAFKA_BROKER_DEFS[synonym].type
    return None


def _type_id(kafka_type: str | None) -> int:
    return CONFIG_TYPES.get(kafka_type, CONFIG_TYPE_UNKNOWN) if kafka_type else \
        CONFIG_TYPE_UNKNOWN


def _sensitive(kafka_type: str | None) -> bool:
    """Kafka's maybeSensitive: a password, or a config whose type it cannot tell."""
    return kafka_type is None or kafka_type == "password"


def read_only(name: str) -> bool:
    """Kafka's readOnly flag, except that the dynamic configs kafkalite applies only at
    start-up (listeners, TLS) are read-only here: kafkalite refuses to change them."""
    return not (name in APPLIED_DYNAMIC_CONFIGS
                or (name in KAFKA_DYNAMIC_CONFIGS and name in BROKER_NO_EFFECT))


def _layers(broker_config: BrokerConfig, dynamic: DynamicBrokerConfig | None
            ) -> DynamicBrokerConfig:
    """The broker's config levels; a static-only one for a bare BrokerConfig."""
    return dynamic if dynamic is not None else DynamicBrokerConfig(broker_config)


def _wanted(keys: Iterable[str] | None):
    if not keys:              # None or [] both mean every config (as Kafka 2.8+ and librdkafka)
        return None
    return set(keys)


# --- a broker name's value at each level -------------------------------------------------------

def _static_value(static: BrokerConfig, name: str) -> str | None:
    """The value given in server.properties / ``--override`` (Kafka's staticBrokerConfigs)."""
    if name in BROKER_BY_NAME:
        if static.is_static(name):
            return render_value(BROKER_BY_NAME[name], static.get(name))
        return None
    return static.given_values.get(name)


def _default_value(name: str) -> str | None:
    """The default (Kafka's staticDefaultConfigs): kafkalite's own for what it applies, Kafka's
    for the rest; none for a name Kafka does not define."""
    if name not in KAFKA_BROKER_DEFS:
        return None
    if name in BROKER_BY_NAME:
        return render_value(BROKER_BY_NAME[name], BROKER_BY_NAME[name].default)
    return KAFKA_BROKER_DEFS[name].default


def _chain(layers: DynamicBrokerConfig, names: list[str], sensitive: bool, first: str,
           per_broker: bool = True) -> list:
    """Kafka's configSynonyms: ``names`` level by level, then dropWhile the name is not
    ``first``; only the cluster-default level unless ``per_broker``."""
    chain = []
    for name in names:
        if name in layers.per_broker:
            chain.append((name, layers.per_broker[name], DYNAMIC_BROKER_CONFIG))
    for name in names:
        if name in layers.cluster_default:
            chain.append((name, layers.cluster_default[name], DYNAMIC_DEFAULT_BROKER_CONFIG))
    for name in names:
        value = _static_value(layers.static, name)
        if value is not None:
            chain.append((name, value, STATIC_BROKER_CONFIG))
    for name in names:
        value = _default_value(name)
        if value is not None:
            chain.append((name, value, DEFAULT_CONFIG))
    if not per_broker:
        chain = [c for c in chain if c[2] == DYNAMIC_DEFAULT_BROKER_CONFIG]
    while chain and chain[0][0] != first:
        chain.pop(0)
    return [(n, None if sensitive else v, s) for n, v, s in chain]


def _broker_value(layers: DynamicBrokerConfig, name: str) -> str | None:
    """The effective value of a broker config: applied ones as kafkalite holds it, the others
    as set at the most specific level, else Kafka's default."""
    if name in BROKER_BY_NAME:
        return render_value(BROKER_BY_NAME[name], layers.current.get(name))
    for level in (layers.per_broker, layers.cluster_default, layers.static.given_values):
        if name in level:
            return level[name]
    definition = KAFKA_BROKER_DEFS.get(name) or KAFKA_DYNAMIC_ONLY_DEFS.get(name)
    return definition.default if definition is not None else None


def _doc(name: str) -> str | None:
    if name in BROKER_BY_NAME:
        return BROKER_BY_NAME[name].doc
    if name in BROKER_NO_EFFECT:
        return f"accepted without effect in kafkalite: {BROKER_NO_EFFECT[name]}"
    if name in TOPIC_NO_EFFECT:
        return f"accepted without effect in kafkalite: {TOPIC_NO_EFFECT[name]}"
    return None


# --- brokers -----------------------------------------------------------------------------------

def _broker_entry(layers: DynamicBrokerConfig, name: str, per_broker: bool,
                  include_synonyms: bool, include_documentation: bool) -> DescribedConfig:
    kafka_type = kafka_broker_type(name)
    sensitive = _sensitive(kafka_type)
    chain = _chain(layers, kafka_broker_synonyms(name), sensitive, name, per_broker)
    if sensitive:
        value = None
    elif per_broker:
        value = _broker_value(layers, name)
    else:
        value = layers.cluster_default.get(name)
    return DescribedConfig(name, value, read_only(name),
                           chain[0][2] if chain else DEFAULT_CONFIG, sensitive,
                           chain if include_synonyms else [], _type_id(kafka_type),
                           _doc(name) if include_documentation else None)


def broker_names(layers: DynamicBrokerConfig) -> list[str]:
    """What Kafka lists for a broker: its public configs, the names given (originals) and the
    dynamic ones."""
    static = layers.static
    given = set(static.given_values) | {n for n in BROKER_BY_NAME if n not in KAFKA_BROKER_DEFS
                                        and static.is_static(n)}
    extra = given | set(layers.cluster_default) | set(layers.per_broker)
    return list(KAFKA_LISTED_BROKER_CONFIGS) + sorted(extra - set(KAFKA_LISTED_BROKER_CONFIGS))


def describe_broker_config(broker_config: BrokerConfig, keys: Iterable[str] | None = None,
                           include_synonyms: bool = False,
                           include_documentation: bool = False,
                           dynamic: DynamicBrokerConfig | None = None) -> list[DescribedConfig]:
    """Every broker config of this broker as Kafka 2.8 lists it (``broker_names``)."""
    wanted = _wanted(keys)
    layers = _layers(broker_config, dynamic)
    return [_broker_entry(layers, name, True, include_synonyms, include_documentation)
            for name in broker_names(layers) if wanted is None or name in wanted]


def describe_default_broker_config(layers: DynamicBrokerConfig, keys: Iterable[str] | None = None,
                                   include_synonyms: bool = False,
                                   include_documentation: bool = False) -> list[DescribedConfig]:
    """The cluster-wide dynamic defaults (resource name ``""``): only the configs set there,
    each with its DYNAMIC_DEFAULT_BROKER_CONFIG synonyms, as Kafka describes them."""
    wanted = _wanted(keys)
    return [_broker_entry(layers, name, False, include_synonyms, include_documentation)
            for name in layers.cluster_default if wanted is None or name in wanted]


# --- topics ------------------------------------------------------------------------------------

def _no_effect_topic_value(layers: DynamicBrokerConfig, name: str) -> str | None:
    """A topic config kafkalite does not apply, without an override: its broker synonym's
    value (Kafka's extractLogConfigMap), else its own default."""
    synonym = KAFKA_TOPIC_DEFS[name].synonym
    if synonym is None:
        return KAFKA_TOPIC_DEFS[name].default
    if synonym == "log.roll.jitter.ms":      # Kafka's logRollTimeJitterMillis: ms, else hours
        value = _broker_value(layers, synonym)
        if value is None:
            hours = _broker_value(layers, "log.roll.jitter.hours")
            value = None if hours is None else str(int(hours) * _H)
        return value
    return _broker_value(layers, synonym)


def describe_topic_config(broker_config: BrokerConfig, overrides: Mapping[str, str],
                          keys: Iterable[str] | None = None, include_synonyms: bool = False,
                          include_documentation: bool = False,
                          dynamic: DynamicBrokerConfig | None = None) -> list[DescribedConfig]:
    """Every topic config (Kafka's, by name), then overrides of names Kafka does not define,
    with its effective value for a topic whose overrides are ``overrides``. ``dynamic``: the
    broker's config levels (default: ``broker_config`` alone, no dynamic configs)."""
    wanted = _wanted(keys)
    layers = _layers(broker_config, dynamic)
    defaults = layers.current.topic_defaults()
    out = []
    for name, kafka_def in sorted(KAFKA_TOPIC_DEFS.items()):
        if wanted is not None and name not in wanted:
            continue
        sensitive = _sensitive(kafka_def.type)
        definition = TOPIC_BY_NAME.get(name)
        if name in overrides:
            shown = overrides[name]
            if definition is not None:
                try:
                    shown = render_value(definition, definition.parse(shown))
                except ConfigError:
                    pass                 # a bad override in ZooKeeper: show what is there
        elif definition is not None:
            shown = render_value(definition, defaults.get(name))
        else:
            shown = _no_effect_topic_value(layers, name)
        shown = None if sensitive else shown
        chain = [(name, shown, DYNAMIC_TOPIC_CONFIG)] if name in overrides else []
        if kafka_def.synonym is not None:
            chain += _chain(layers, kafka_broker_synonyms(kafka_def.synonym), sensitive,
                            kafka_def.synonym)
        out.append(DescribedConfig(
            name, shown, False, chain[0][2] if chain else DEFAULT_CONFIG, sensitive,
            chain if include_synonyms else [], _type_id(kafka_def.type),
            (definition.doc if definition else _doc(name)) if include_documentation else None))
    for name in sorted(set(overrides) - set(KAFKA_TOPIC_DEFS)):
        if wanted is not None and name not in wanted:
            continue
        # a name Kafka does not define: no type, so sensitive (Kafka's maybeSensitive)
        out.append(DescribedConfig(
            name, None, False, DYNAMIC_TOPIC_CONFIG, True,
            [(name, None, DYNAMIC_TOPIC_CONFIG)] if include_synonyms else [],
            CONFIG_TYPE_UNKNOWN, None))
    return out
