"""Dynamic broker configs (Kafka's KIP-226): which broker configs change at run time, their
validation, and their precedence. Pure: no I/O; the broker side is
``kafkalite.server.dynamic_config``.

Kafka 2.8 keeps them in ZooKeeper at two levels, ``/config/brokers/<id>`` (one broker) and
``/config/brokers/<default>`` (the cluster-wide default, resource name ``""`` in the admin APIs).
A broker's effective value of a config is, most important first: its own dynamic value
(DYNAMIC_BROKER_CONFIG), the cluster default (DYNAMIC_DEFAULT_BROKER_CONFIG), server.properties
and ``--override`` (STATIC_BROKER_CONFIG), the config's default (DEFAULT_CONFIG). A topic without
its own override of ``retention.ms`` follows the effective ``log.retention.ms``.

Which names may be set (Kafka's ``DynamicBrokerConfig.validateConfigs``, in its order):

* Kafka's static configs (``broker.id``, ``log.retention.hours``, ...) are refused: "Cannot update
  these configs dynamically: Set(...)";
* kafkalite APPLIES the broker defaults of its topic configs (``APPLIED_DYNAMIC_CONFIGS``:
  ``log.retention.ms``, ``log.segment.bytes``, ``message.max.bytes``, ...), values checked with
  the config table's validators;
* Kafka's other dynamic configs that kafkalite accepts without effect anyway
  (``num.io.threads``, ``log.cleaner.threads``, ...) are stored and described, as in Kafka;
* Kafka's dynamic configs kafkalite applies only at start-up (listeners, TLS and SASL settings)
  are refused, saying so, after Kafka's own checks: a difference from Kafka;
* names Kafka does not know are custom configs: stored and described, as Kafka does.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Iterable, Mapping

from kafkalite.config import (
    BROKER_BY_NAME, BROKER_NO_EFFECT, TOPIC_CONFIGS, BrokerConfig, broker_synonyms,
)
from kafkalite.errors import ConfigError

log = logging.getLogger(__name__)

# Kafka's DescribeConfigsResponse.ConfigSource (as in server.config_admin)
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

_SSL_RECONFIGURABLE = (  # Kafka's SslConfigs.RECONFIGURABLE_CONFIGS: per listener only
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates")
_LISTENER_RECONFIGURABLE = (  # Kafka's DynamicListenerConfig.ReconfigurableConfigs
    "advertised.listeners", "listeners", "listener.security.protocol.map",
    "principal.builder.class", "ssl.protocol", "ssl.provider", "ssl.cipher.suites",
    "ssl.enabled.protocols", "ssl.keystore.type", "ssl.keystore.location",
    "ssl.keystore.password", "ssl.key.password", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm",
    "ssl.secure.random.implementation", "ssl.client.auth", "ssl.engine.factory.class",
    "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "sasl.enabled.mechanisms",
    "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.min.time.before.relogin", "sasl.kerberos.principal.to.local.rules",
    "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter",
    "sasl.login.refresh.min.period.seconds", "sasl.login.refresh.buffer.seconds",
    "max.connections", "max.connection.creation.rate")
_CLUSTER_LEVEL_LISTENER = ("max.connections", "max.connection.creation.rate")
_LOG_CLEANER_RECONFIGURABLE = (  # Kafka's LogCleaner.ReconfigurableConfigs
    "log.cleaner.threads", "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.load.factor", "log.cleaner.io.buffer.size", "message.max.bytes",
    "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms")
_LOG_RECONFIGURABLE = (  # Kafka's DynamicLogConfig: LogConfig.TopicConfigSynonyms' values
    "log.segment.bytes", "log.roll.ms", "log.roll.jitter.ms", "log.index.size.max.bytes",
    "log.flush.interval.messages", "log.flush.interval.ms", "log.retention.bytes",
    "log.retention.ms", "message.max.bytes", "log.index.interval.bytes",
    "log.cleaner.delete.retention.ms", "log.cleaner.min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms", "log.segment.delete.delay.ms",
    "log.cleaner.min.cleanable.ratio", "log.cleanup.policy", "unclean.leader.election.enable",
    "min.insync.replicas", "compression.type", "log.preallocate",
    "log.message.timestamp.type", "log.message.timestamp.difference.max.ms",
    "log.message.downconversion.enable")   # without log.message.format.version, as Kafka
_THREAD_POOLS = ("num.io.threads", "num.network.threads", "num.replica.fetchers",
                 "num.recovery.threads.per.data.dir", "background.threads")
_SOCKET_SERVER = ("max.connections.per.ip", "max.connections.per.ip.overrides",
                  "max.connections", "max.connection.creation.rate")
# Kafka's DynamicConfig.Broker: configs that exist only dynamically (replication throttles)
_ONLY_DYNAMIC = ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
                 "replica.alter.log.dirs.io.max.bytes.per.second")

#: Kafka 2.8's DynamicBrokerConfig.AllDynamicConfigs
KAFKA_DYNAMIC_CONFIGS = frozenset(
    _SSL_RECONFIGURABLE + _LOG_CLEANER_RECONFIGURABLE + _LOG_RECONFIGURABLE + _THREAD_POOLS
    + ("metric.reporters",) + _LISTENER_RECONFIGURABLE + _SOCKET_SERVER)
#: Kafka's PerBrokerConfigs: never at the cluster-default level
PER_BROKER_CONFIGS = frozenset(_SSL_RECONFIGURABLE + _LISTENER_RECONFIGURABLE) \
    - frozenset(_CLUSTER_LEVEL_LISTENER)
#: what kafkalite changes at run time: the broker defaults of its topic configs, and
#: log.cleaner.backoff.ms (the log cleaner's wait, read again before each of its passes)
APPLIED_DYNAMIC_CONFIGS = (frozenset(
    d.topic_name for d in TOPIC_CONFIGS if d.topic_name in BROKER_BY_NAME
) | {"log.cleaner.backoff.ms"}) & KAFKA_DYNAMIC_CONFIGS
#: Kafka's dynamic configs kafkalite applies only at start-up: refused dynamically
STARTUP_ONLY_CONFIGS = frozenset(n for n in KAFKA_DYNAMIC_CONFIGS
                                 if n in BROKER_BY_NAME and n not in APPLIED_DYNAMIC_CONFIGS)
#: Kafka 2.8 broker configs that cannot be set dynamically (its DynamicConfig.Broker's
#: nonDynamicProps): kafkalite's table and the Kafka names it accepts without effect
STATIC_ONLY_CONFIGS = frozenset(
    (set(BROKER_BY_NAME) | set(BROKER_NO_EFFECT)) - KAFKA_DYNAMIC_CONFIGS - set(_ONLY_DYNAMIC))
#: names kafkalite's own table has that Kafka 2.8 lacks (super.users, ...): static
_NOT_KAFKA = frozenset(n for n in BROKER_BY_NAME if n not in BROKER_NO_EFFECT
                       and n not in KAFKA_DYNAMIC_CONFIGS)

_LISTENER_PREFIX = "listener.name."


def render_value(definition, value) -> str | None:
    """A parsed value as Kafka's ConfigDef.convertToString writes it (None stays None)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    if definition is not None and definition.type == "double":
        return repr(float(value))
    return str(value)


def _scala_set(names: Iterable[str]) -> str:
    return f"Set({', '.join(sorted(names))})"


def _per_listener(name: str) -> bool:
    """A ``listener.name.<l>.<config>`` name other than the cluster-level connection limits
    (Kafka's perBrokerListenerConfig)."""
    if not name.startswith(_LISTENER_PREFIX):
        return False
    base = name[len(_LISTENER_PREFIX):].partition(".")[2]
    return base not in _CLUSTER_LEVEL_LISTENER


def is_read_only(name: str) -> bool:
    """Kafka's readOnly flag of a broker config in DescribeConfigs: not dynamic in Kafka 2.8."""
    return name not in KAFKA_DYNAMIC_CONFIGS


_KAFKA_NUMBER_TYPES = {"int": "INT", "long": "LONG", "double": "DOUBLE"}


def _java_number(value) -> str:
    """A parsed number as Java's toString prints it (a DOUBLE 7 is 7.0)."""
    return repr(float(value)) if isinstance(value, float) else str(value)


def _kafka_parse_error(kafka_type: str, raw: str) -> str | None:
    """Kafka's ConfigDef.parseType refusal of ``raw``, or None when the type accepts it."""
    text = raw.strip()
    if kafka_type in _KAFKA_NUMBER_TYPES:
        try:
            float(text) if kafka_type == "double" else int(text)
        except ValueError:
            return f"Not a number of type {_KAFKA_NUMBER_TYPES[kafka_type]}"
    if kafka_type == "boolean" and text.lower() not in ("true", "false"):
        return "Expected value to be either true or false"
    return None


def _kafka_validator_error(definition, raw: str) -> tuple[str, str]:
    """(the value as Kafka prints it, why its validator refuses it), in Kafka's words: Range
    ("Value must be at least 14", "Value must be no more than 1"), ValidString ("String must
    be one of: ..." in the definition's order), ValidList (the same, for the first element
    that is not allowed; Kafka's one list, cleanup.policy, names them sorted)."""
    allowed = definition.validator.allowed if definition.validator else ""
    if allowed.startswith("a number"):
        value = _PARSE_NUMBER[definition.type](raw.strip())
        shown = _java_number(value)
        if allowed.startswith("a number >= "):
            return shown, "Value must be at least " + allowed[len("a number >= "):]
        low, high = allowed[len("a number in ["):-1].split(", ")
        if value < float(low):
            return shown, f"Value must be at least {low}"
        return shown, f"Value must be no more than {high}"
    if allowed.startswith("one of "):
        return raw.strip(), f"String must be one of: {allowed[len('one of '):]}"
    prefix = "a comma-separated list of "
    if allowed.startswith(prefix):
        choices = sorted(c.strip() for c in allowed[len(prefix):].split(","))
        items = [item.strip() for item in raw.split(",") if item.strip()]
        bad = next((item for item in items if item not in choices), raw.strip())
        return bad, f"String must be one of: {', '.join(choices)}"
    return raw, f"allowed is {allowed}" if allowed else "invalid value"


_PARSE_NUMBER = {"int": int, "long": int, "double": float}


def check_kafka_type(name: str, kafka_type: str, raw: str) -> None:
    """ConfigError worded as Kafka's unless ``raw`` parses as Kafka's ``kafka_type`` (for the
    configs kafkalite accepts without effect: their values are checked no further)."""
    reason = _kafka_parse_error(kafka_type, raw)
    if reason is not None:
        raise ConfigError(f"Invalid value {raw} for configuration {name}: {reason}")


def check_value(definition, raw: str) -> None:
    """ConfigError worded as Kafka's ConfigException ("Invalid value abc for configuration
    log.retention.ms: Not a number of type LONG") unless the table's definition accepts
    ``raw``."""
    try:
        definition.parse(raw)
    except ConfigError:
        if definition.validator and definition.validator.kafka_refusal:
            raise                      # already in Kafka's words
        reason = _kafka_parse_error(definition.type, raw)
        shown = raw
        if reason is None:
            shown, reason = _kafka_validator_error(definition, raw)
        raise ConfigError(f"Invalid value {shown} for configuration {definition.name}: "
                          f"{reason}") from None


def validate_dynamic(configs: Mapping[str, str], per_broker: bool) -> None:
    """ConfigError (answered INVALID_REQUEST, as Kafka) unless every ``{name: value}`` may be a
    dynamic broker config at this level; checks in Kafka's order, then the values."""
    names = set(configs)
    static = {n for n in names if n in STATIC_ONLY_CONFIGS}
    if static:
        raise ConfigError(f"Cannot update these configs dynamically: {_scala_set(static)}")
    unprefixed = names & set(_SSL_RECONFIGURABLE)
    if unprefixed:
        raise ConfigError("These security configs can be dynamically updated only "
                          f"per-listener using the listener prefix: {_scala_set(unprefixed)}")
    for name, value in configs.items():
        definition = BROKER_BY_NAME.get(name)
        if definition is not None:
            check_value(definition, value)
    if not per_broker:
        only = {n for n in names if n in PER_BROKER_CONFIGS or _per_listener(n)}
        if only:
            raise ConfigError("Cannot update these configs at default cluster level, broker id "
                              f"must be specified: {_scala_set(only)}")
    startup = {n for n in names if n in STARTUP_ONLY_CONFIGS or n.startswith(_LISTENER_PREFIX)}
    if startup:     # kafkalite's own refusal, after every one of Kafka's
        raise ConfigError(f"kafkalite cannot update these configs dynamically (it applies them "
                          f"at start-up: edit server.properties and restart): "
                          f"{_scala_set(startup)}")


def usable(configs: Mapping[str, str], per_broker: bool, what: str) -> dict[str, str]:
    """The entries of a dynamic config znode a broker applies: each one that ``validate_dynamic``
    accepts on its own; the others are logged and ignored (Kafka's fromPersistentProps)."""
    out = {}
    for name, value in configs.items():
        try:
            validate_dynamic({name: value}, per_broker)
        except ConfigError as exc:
            log.error("dynamic %s config %s=%s ignored: %s", what, name, value, exc)
            continue
        out[name] = value
    return out


def effective_config(static: BrokerConfig, cluster_default: Mapping[str, str],
                     per_broker: Mapping[str, str]) -> BrokerConfig:
    """``static`` with the applied dynamic configs on top: the cluster default, then the
    broker's own. A value set at a level replaces its synonyms below it (a dynamic
    ``log.retention.ms`` hides a static ``log.retention.hours``), as Kafka's overrideProps."""
    changes: dict[str, object] = {}
    for layer in (cluster_default, per_broker):
        for name, raw in layer.items():
            if name not in APPLIED_DYNAMIC_CONFIGS:
                continue
            for synonym in broker_synonyms(name):
                if synonym != name:
                    changes[BROKER_BY_NAME[synonym].attr] = BROKER_BY_NAME[synonym].default
            changes[BROKER_BY_NAME[name].attr] = BROKER_BY_NAME[name].parse(raw)
    return dataclasses.replace(static, **changes) if changes else static


class DynamicBrokerConfig:
    """One broker's config layers: ``static`` (server.properties), the cluster default and
    its own dynamic configs (as validated by ``usable``), and ``current``, the effective
    BrokerConfig."""

    def __init__(self, static: BrokerConfig):
        self.static = static
        self.cluster_default: dict[str, str] = {}
        self.per_broker: dict[str, str] = {}
        self.current = static

    def update(self, cluster_default: Mapping[str, str] | None = None,
               per_broker: Mapping[str, str] | None = None) -> BrokerConfig:
        """New raw contents of either level (None: unchanged); returns the new ``current``."""
        if cluster_default is not None:
            self.cluster_default = usable(cluster_default, False, "default cluster")
        if per_broker is not None:
            self.per_broker = usable(per_broker, True, "broker")
        self.current = effective_config(self.static, self.cluster_default, self.per_broker)
        return self.current

    def synonyms(self, names: Iterable[str], sensitive: bool) -> list:
        """``[(name, value, source)]`` for ``names`` (one config's synonyms, most specific
        first) at every level that sets them: Kafka's order, level by level."""
        names = list(names)
        chain = []
        for layer, source in ((self.per_broker, DYNAMIC_BROKER_CONFIG),
                              (self.cluster_default, DYNAMIC_DEFAULT_BROKER_CONFIG)):
            chain += [(n, None if sensitive else layer[n], source) for n in names if n in layer]
        for name in names:
            if name in BROKER_BY_NAME and self.static.is_static(name):
                value = render_value(BROKER_BY_NAME[name], self.static.get(name))
                chain.append((name, None if sensitive else value, STATIC_BROKER_CONFIG))
        for name in names:
            definition = BROKER_BY_NAME.get(name)
            if definition is not None and definition.default is not None:
                value = render_value(definition, definition.default)
                chain.append((name, None if sensitive else value, DEFAULT_CONFIG))
        return chain
