"""Broker and topic configuration: one declarative table with Kafka's names.

Every setting is declared once in ``BROKER_CONFIGS`` or ``TOPIC_CONFIGS`` with its Kafka name, type,
default, validator and doc. From the table come two frozen dataclasses whose attribute names are the
Kafka names with dots turned into underscores (``log.segment.bytes`` -> ``log_segment_bytes``), a
reader for Kafka-style ``server.properties`` files, and the mapping from broker-wide ``log.*``
defaults to per-topic settings (``log.segment.bytes`` is the default of the topic's ``segment.bytes``).

A bad value raises ConfigError naming the key, the value and what is allowed. Every Kafka 2.8 name
is accepted: Kafka's configs kafkalite does not apply are listed, each with why, in
``kafkalite.config_kafka_names`` (a broker names the ones it was given once at start-up:
``BrokerConfig.startup_notes``); an unknown broker key is warned about with the closest known name,
an unknown topic key refused as Kafka refuses it. ``docs/kafka-configs.md`` is generated from these
tables (``python -m kafkalite.config_docs``). The security rows and the listeners' parsing live in
``kafkalite.config_security``.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

# the table's machinery lives in config_defs; its names are re-exported here, where callers
# have always found them
from kafkalite.config_defs import (  # noqa: F401
    ConfigDef, Validator, as_given, at_least, between, each_one_of, listeners_valid, non_empty,
    one_of, parse_overrides, compression_type, read_properties, format_version,
)
from kafkalite.config_kafka_names import (  # noqa: F401
    BROKER_NO_EFFECT, NOT_KAFKA_BROKER_CONFIGS, TOPIC_NO_EFFECT, closest_name, no_effect_note,
    unknown_broker_config_note, unknown_topic_config_message,
)
# the security rows live in config_security (re-exported)
from kafkalite.config_security import (  # noqa: F401
    ACL_AUTHORIZER, DEFAULT_PROTOCOL_MAP, LISTENER_SETTINGS, SASL_MECHANISMS, SECURITY_CONFIGS,
    SECURITY_PROTOCOLS, Listener, authorizer_names, derive_listeners, pem_only,
    protocol_map_valid, split_listener_overrides,
)
from kafkalite.errors import ConfigError

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1

H = 3600 * 1000
D = 24 * H

# --- topic-level configs (Kafka's names; overridable per topic in /config/topics/<t>) ---------
TOPIC_CONFIGS: tuple[ConfigDef, ...] = (
    ConfigDef("cleanup.policy", "list", ("delete",), "delete old segments, or compact keeping "
              "the newest value per key", each_one_of("delete", "compact"), "log.cleanup.policy"),
    ConfigDef("retention.ms", "long", 7 * D, "delete a segment once its newest record is older "
              "than this; -1 keeps forever", at_least(-1), "log.retention.ms"),
    ConfigDef("retention.bytes", "long", -1, "delete oldest segments while the partition is "
              "larger than this; -1 means no size limit", at_least(-1), "log.retention.bytes"),
    ConfigDef("segment.bytes", "int", 1024**3, "roll a new segment at this size",
              at_least(14), "log.segment.bytes"),
    ConfigDef("segment.ms", "long", 7 * D, "roll a new segment after this long",
              at_least(1), "log.roll.ms"),
    ConfigDef("segment.index.bytes", "int", 10 * 1024 * 1024, "maximum size of an offset or "
              "time index file", at_least(8), "log.index.size.max.bytes"),
    ConfigDef("index.interval.bytes", "int", 4096, "add an index entry every this many bytes",
              at_least(0), "log.index.interval.bytes"),
    ConfigDef("flush.messages", "long", LONG_MAX, "fsync after this many records",
              at_least(1), "log.flush.interval.messages"),
    ConfigDef("flush.ms", "long", LONG_MAX, "fsync at least this often", at_least(0),
              "log.flush.interval.ms"),
    ConfigDef("max.message.bytes", "int", 1048588, "largest record batch accepted",
              at_least(0), "message.max.bytes"),
    ConfigDef("message.timestamp.type", "string", "CreateTime", "which timestamp the log keeps",
              one_of("CreateTime", "LogAppendTime"), "log.message.timestamp.type"),
    ConfigDef("message.timestamp.difference.max.ms", "long", LONG_MAX, "CreateTime topics "
              "refuse a batch holding a record timestamped further than this from the leader's "
              "clock (INVALID_TIMESTAMP)", at_least(0),
              "log.message.timestamp.difference.max.ms"),
    ConfigDef("compression.type", "string", "producer", "codec of the stored batches: "
              "'producer' keeps each batch as its producer compressed it",
              compression_type, "compression.type"),
    ConfigDef("message.format.version", "string", "2.8-IV1", "the message format the leader "
              "stores (a Kafka version: 0.8.x/0.9.0 magic 0, 0.10.x magic 1, 0.11.0 and later "
              "magic 2); below 0.11.0 producers' batches are converted on append",
              format_version, "log.message.format.version"),
    ConfigDef("message.downconversion.enable", "boolean", True, "whether Fetch v0-v3 clients "
              "(message formats v0/v1) get this topic's newer batches down-converted; false "
              "answers them UNSUPPORTED_VERSION", None, "log.message.downconversion.enable"),
    ConfigDef("min.insync.replicas", "int", 1, "acks=all needs at least this many in-sync "
              "replicas", at_least(1), "min.insync.replicas"),
    ConfigDef("unclean.leader.election.enable", "boolean", False, "allow an out-of-sync replica "
              "to become leader (may lose data)", None, "unclean.leader.election.enable"),
    ConfigDef("delete.retention.ms", "long", D, "how long compaction keeps tombstones",
              at_least(0), "log.cleaner.delete.retention.ms"),
    ConfigDef("min.cleanable.dirty.ratio", "double", 0.5, "compact once this share of the log "
              "is dirty", between(0, 1), "log.cleaner.min.cleanable.ratio"),
    ConfigDef("file.delete.delay.ms", "long", 60000, "wait before deleting a .deleted file",
              at_least(0), "log.segment.delete.delay.ms"),
)

# --- broker configs ---------------------------------------------------------------------------
#: replica.selector.class: Kafka 2.8 fails to start when it cannot load the class named; the one
#: ReplicaSelector it ships is the rack-aware one (server.read_replica implements it)
_REPLICA_SELECTOR = Validator(
    lambda v: v == "org.apache.kafka.common.replica.RackAwareReplicaSelector",
    "org.apache.kafka.common.replica.RackAwareReplicaSelector",
    lambda name, v: f"{name}: cannot load class {v!r}: kafkalite offers "
                    "org.apache.kafka.common.replica.RackAwareReplicaSelector only (unset: "
                    "consumers read from leaders)")
BROKER_CONFIGS: tuple[ConfigDef, ...] = (
    ConfigDef("broker.id", "int", -1, "this broker's unique id (required)", at_least(-1)),
    ConfigDef("broker.rack", "string", None, "rack of this broker, for rack-aware assignment "
              "and rack-aware fetching (KIP-392)"),
    ConfigDef("listeners", "list", ("PLAINTEXT://:9092",), "where the broker listens "
              "(default: PLAINTEXT://host.name:port)", listeners_valid),
    ConfigDef("advertised.listeners", "list", None, "what the broker tells clients to connect "
              "to (default: PLAINTEXT://advertised.host.name:advertised.port if either is set, "
              "else listeners)", listeners_valid),
    ConfigDef("port", "int", 9092, "deprecated (Kafka too): the port of the PLAINTEXT listener "
              "when listeners is not set", between(0, 65535)),
    ConfigDef("host.name", "string", "", "deprecated (Kafka too): the host of the PLAINTEXT "
              "listener when listeners is not set; empty binds every interface"),
    ConfigDef("advertised.host.name", "string", None, "deprecated (Kafka too): the advertised "
              "host when advertised.listeners is not set (default: host.name)"),
    ConfigDef("advertised.port", "int", None, "deprecated (Kafka too): the advertised port "
              "when advertised.listeners is not set (default: port)", between(0, 65535)),
    ConfigDef("inter.broker.listener.name", "string", None, "listener brokers use to reach "
              "each other (default: the first in listeners)"),
    ConfigDef("control.plane.listener.name", "string", None, "listener that carries only the "
              "controller's requests (KIP-291); brokers refuse controller requests on every "
              "other listener (default: none, they travel on inter.broker.listener.name)"),
    ConfigDef("listener.security.protocol.map", "list", DEFAULT_PROTOCOL_MAP, "listener name "
              "-> security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), e.g. "
              "INTERNAL:SASL_SSL,EXTERNAL:SSL; a listener named like a protocol needs no entry",
              protocol_map_valid),
    ConfigDef("log.dirs", "list", None, "directories holding the partition logs "
              "(default: log.dir)"),
    ConfigDef("log.dir", "string", "/tmp/kafka-logs", "log directory when log.dirs is unset"),
    ConfigDef("zookeeper.connect", "string", None, "ZooKeeper connect string, "
              "host:port[,host:port...][/chroot]", non_empty),
    ConfigDef("zookeeper.session.timeout.ms", "int", 18000, "ZooKeeper session timeout",
              at_least(1)),
    ConfigDef("zookeeper.connection.timeout.ms", "int", None, "how long to wait for the first "
              "ZooKeeper connection (default: the session timeout)", at_least(1)),
    ConfigDef("num.partitions", "int", 1, "partitions of an auto-created topic", at_least(1)),
    ConfigDef("default.replication.factor", "int", 1, "replication factor of an auto-created "
              "topic", at_least(1)),
    ConfigDef("auto.create.topics.enable", "boolean", True, "create a topic on first use"),
    ConfigDef("delete.topic.enable", "boolean", True, "allow topic deletion"),
    ConfigDef("log.segment.bytes", "int", 1024**3, "roll a new segment at this size",
              at_least(14)),
    ConfigDef("log.roll.ms", "long", None, "roll a new segment after this long "
              "(default: log.roll.hours)", at_least(1)),
    ConfigDef("log.roll.hours", "int", 168, "roll a new segment after this many hours",
              at_least(1)),
    ConfigDef("log.retention.ms", "long", None, "retention in ms (wins over minutes and hours); "
              "-1 keeps forever", at_least(-1)),
    ConfigDef("log.retention.minutes", "int", None, "retention in minutes", at_least(-1)),
    ConfigDef("log.retention.hours", "int", 168, "retention in hours", at_least(-1)),
    ConfigDef("log.retention.bytes", "long", -1, "size limit per partition; -1 none",
              at_least(-1)),
    ConfigDef("log.retention.check.interval.ms", "long", 300000, "how often retention runs",
              at_least(1)),
    ConfigDef("log.cleanup.policy", "list", ("delete",), "delete or compact",
              each_one_of("delete", "compact")),
    ConfigDef("log.index.interval.bytes", "int", 4096, "bytes between index entries",
              at_least(0)),
    ConfigDef("log.index.size.max.bytes", "int", 10 * 1024 * 1024, "max index file size",
              at_least(8)),
    ConfigDef("log.flush.interval.messages", "long", LONG_MAX, "fsync after this many records",
              at_least(1)),
    ConfigDef("log.flush.interval.ms", "long", None, "fsync at least this often "
              "(default: never, by time)", at_least(0)),
    ConfigDef("log.flush.scheduler.interval.ms", "long", LONG_MAX, "how often the flusher checks "
              "which logs' flush.ms has passed (Kafka's default: never); also flush.ms's "
              "default when log.flush.interval.ms is unset", at_least(1)),
    ConfigDef("log.flush.offset.checkpoint.interval.ms", "int", 60000, "how often recovery "
              "points (and log start offsets) are checkpointed, the first time 30 s after the "
              "start as Kafka's; a restart after a crash re-verifies the log from the segment "
              "holding the checkpointed point", at_least(0)),
    ConfigDef("log.message.timestamp.type", "string", "CreateTime", "CreateTime or "
              "LogAppendTime", one_of("CreateTime", "LogAppendTime")),
    ConfigDef("log.message.timestamp.difference.max.ms", "long", LONG_MAX, "largest difference "
              "between a CreateTime record's timestamp and the broker's clock", at_least(0)),
    ConfigDef("log.segment.delete.delay.ms", "long", 60000, "delay before deleting files",
              at_least(0)),
    ConfigDef("log.cleaner.delete.retention.ms", "long", D, "tombstone retention", at_least(0)),
    ConfigDef("log.cleaner.min.cleanable.ratio", "double", 0.5, "dirty ratio to compact",
              between(0, 1)),
    ConfigDef("log.cleaner.backoff.ms", "long", 15000, "how often the cleaner checks",
              at_least(0)),
    ConfigDef("message.max.bytes", "int", 1048588, "largest record batch accepted",
              at_least(0)),
    ConfigDef("compression.type", "string", "producer", "codec of stored batches: 'producer' "
              "keeps each batch as its producer compressed it", compression_type),
    ConfigDef("log.message.format.version", "string", "2.8-IV1", "default "
              "message.format.version of the topics", format_version),
    ConfigDef("log.message.downconversion.enable", "boolean", True, "default "
              "message.downconversion.enable of the topics"),
    ConfigDef("socket.request.max.bytes", "int", 104857600, "largest request frame accepted",
              at_least(1)),
    ConfigDef("min.insync.replicas", "int", 1, "acks=all needs this many in-sync replicas",
              at_least(1)),
    ConfigDef("unclean.leader.election.enable", "boolean", False, "allow out-of-sync leaders"),
    ConfigDef("replica.lag.time.max.ms", "long", 30000, "drop a follower from the ISR after "
              "this long behind", at_least(1)),
    ConfigDef("replica.fetch.wait.max.ms", "int", 500, "follower fetch long-poll time",
              at_least(0)),
    ConfigDef("replica.fetch.min.bytes", "int", 1, "follower fetch min bytes", at_least(1)),
    ConfigDef("replica.fetch.max.bytes", "int", 1048576, "follower fetch bytes per partition",
              at_least(0)),
    ConfigDef("replica.fetch.response.max.bytes", "int", 10485760, "follower fetch bytes in all",
              at_least(0)),
    ConfigDef("replica.fetch.backoff.ms", "int", 1000, "follower backoff after an error",
              at_least(0)),
    ConfigDef("replica.selector.class", "string", None, "KIP-392: what picks a consumer's "
              "preferred read replica (unset: the leader serves); the rack-aware one names a "
              "replica on the consumer's client.rack", _REPLICA_SELECTOR),
    ConfigDef("replica.socket.timeout.ms", "int", 30000, "follower request timeout",
              at_least(1)),
    ConfigDef("replica.high.watermark.checkpoint.interval.ms", "long", 5000, "how often the "
              "high watermarks are checkpointed", at_least(1)),
    ConfigDef("auto.leader.rebalance.enable", "boolean", True, "move leadership back to "
              "preferred replicas"),
    ConfigDef("leader.imbalance.check.interval.seconds", "long", 300, "how often to check "
              "leader imbalance", at_least(1)),
    ConfigDef("leader.imbalance.per.broker.percentage", "int", 10, "imbalance that triggers a "
              "rebalance", between(0, 100)),
    ConfigDef("controlled.shutdown.enable", "boolean", True, "move leadership away before "
              "stopping"),
    ConfigDef("controlled.shutdown.max.retries", "int", 3, "controlled shutdown attempts",
              at_least(0)),
    ConfigDef("controlled.shutdown.retry.backoff.ms", "long", 5000, "wait between attempts",
              at_least(0)),
    ConfigDef("controller.socket.timeout.ms", "int", 30000, "controller request timeout",
              at_least(1)),
    ConfigDef("request.timeout.ms", "int", 30000, "request timeout", at_least(1)),
    ConfigDef("group.initial.rebalance.delay.ms", "int", 3000, "debounce of the first "
              "rebalance", at_least(0)),
    # --- group coordinator and __consumer_offsets (Kafka's names and defaults) ----------------
    ConfigDef("group.min.session.timeout.ms", "int", 6000, "the shortest session timeout a "
              "group member may ask for", at_least(0)),
    ConfigDef("group.max.session.timeout.ms", "int", 1800000, "the longest session timeout a "
              "group member may ask for", at_least(0)),
    ConfigDef("group.max.size", "int", INT_MAX, "the most members one consumer group may "
              "have", at_least(1)),
    ConfigDef("offset.metadata.max.bytes", "int", 4096, "the largest metadata string an offset "
              "commit may carry", at_least(0)),
    ConfigDef("offsets.load.buffer.size", "int", 5242880, "bytes read at a time when loading "
              "__consumer_offsets into the coordinator (a soft limit: a larger batch is read "
              "whole)", at_least(1)),
    ConfigDef("offsets.topic.replication.factor", "int", 3, "replication factor of "
              "__consumer_offsets; kafkalite creates it with fewer replicas (and warns) when "
              "fewer brokers are alive", between(1, 32767)),
    ConfigDef("offsets.topic.num.partitions", "int", 50, "partitions of __consumer_offsets "
              "(do not change after deployment: it decides each group's coordinator)",
              at_least(1)),
    ConfigDef("offsets.topic.segment.bytes", "int", 104857600, "segment.bytes of "
              "__consumer_offsets, small for quick compaction and loading", at_least(1)),
    ConfigDef("offsets.retention.minutes", "int", 10080, "how long the offsets of an empty "
              "group (or a standalone consumer's, after its last commit) are kept", at_least(1)),
    ConfigDef("offsets.retention.check.interval.ms", "long", 600000, "how often expired "
              "offsets are removed", at_least(1)),
    ConfigDef("offsets.commit.timeout.ms", "int", 5000, "an offset commit waits this long for "
              "every in-sync replica of __consumer_offsets, then fails", at_least(1)),
    ConfigDef("offsets.commit.required.acks", "int", -1, "acks of the coordinator's writes to "
              "__consumer_offsets; leave it at -1 (all)", between(-1, 1)),
    # --- transaction coordinator and __transaction_state (Kafka's names and defaults) --------
    ConfigDef("transaction.state.log.num.partitions", "int", 50, "partitions of "
              "__transaction_state (do not change after deployment: it decides each "
              "transactional id's coordinator)", at_least(1)),
    ConfigDef("transaction.state.log.replication.factor", "int", 3, "replication factor of "
              "__transaction_state; kafkalite creates it with fewer replicas (and warns) when "
              "fewer brokers are alive", between(1, 32767)),
    ConfigDef("transaction.state.log.min.isr", "int", 2, "min.insync.replicas of "
              "__transaction_state", at_least(1)),
    ConfigDef("transaction.state.log.segment.bytes", "int", 104857600, "segment.bytes of "
              "__transaction_state, small for quick compaction and loading", at_least(1)),
    ConfigDef("transaction.state.log.load.buffer.size", "int", 5242880, "bytes read at a time "
              "when loading __transaction_state into the coordinator (a soft limit: a larger "
              "batch is read whole)", at_least(1)),
    ConfigDef("transaction.max.timeout.ms", "int", 900000, "the longest transaction.timeout.ms "
              "a producer may ask for (INVALID_TRANSACTION_TIMEOUT above it)", at_least(1)),
    ConfigDef("transactional.id.expiration.ms", "int", 604800000, "a transactional id with no "
              "transaction in flight and no update for this long is removed", at_least(1)),
    ConfigDef("transaction.abort.timed.out.transaction.cleanup.interval.ms", "int", 10000,
              "how often the coordinator aborts transactions older than their timeout",
              at_least(1)),
    ConfigDef("transaction.remove.expired.transaction.cleanup.interval.ms", "int", 3600000,
              "how often the coordinator removes expired transactional ids", at_least(1)),
    # --- client quotas (KIP-13, KIP-124): the sampled rate they are measured over ------------
    ConfigDef("quota.window.num", "int", 11, "windows a client quota's rate is measured over",
              at_least(1)),
    ConfigDef("quota.window.size.seconds", "int", 1, "length of each window of a client "
              "quota's rate", at_least(1)),
    ConfigDef("quota.producer.default", "long", 9223372036854775807, "producer_byte_rate of "
              "every client id without a quota in ZooKeeper (deprecated in Kafka 2.8; the "
              "default: none)", at_least(1)),
    ConfigDef("quota.consumer.default", "long", 9223372036854775807, "consumer_byte_rate of "
              "every client id without a quota in ZooKeeper (deprecated in Kafka 2.8; the "
              "default: none)", at_least(1)),
) + SECURITY_CONFIGS

BROKER_BY_NAME = {d.name: d for d in BROKER_CONFIGS}
TOPIC_BY_NAME = {d.name: d for d in TOPIC_CONFIGS}
#: every name a broker or a topic accepts: applied ones and Kafka's without effect in kafkalite
BROKER_CONFIG_NAMES = tuple(sorted(set(BROKER_BY_NAME) | set(BROKER_NO_EFFECT)))
TOPIC_CONFIG_NAMES = tuple(sorted(set(TOPIC_BY_NAME) | set(TOPIC_NO_EFFECT)))

# Broker keys that set one value together, most specific first (Kafka's brokerSynonyms):
# log.retention.ms wins over .minutes, which wins over .hours; log.roll.ms over log.roll.hours.
BROKER_SYNONYMS: dict[str, tuple[str, ...]] = {
    "log.retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "log.roll.ms": ("log.roll.ms", "log.roll.hours"),
}
for _names in list(BROKER_SYNONYMS.values()):
    for _name in _names:
        BROKER_SYNONYMS[_name] = _names
del _names, _name


def broker_synonyms(name: str) -> tuple[str, ...]:
    """The broker keys that together decide broker key ``name``, most specific first."""
    return BROKER_SYNONYMS.get(name, (name,))


def _dataclass_for(name: str, defs: tuple[ConfigDef, ...], doc: str) -> type:
    fields = [(d.attr, Any, field(default=d.default)) for d in defs]
    cls = dataclasses.make_dataclass(name, fields, frozen=True)
    cls.__doc__ = doc
    cls.__module__ = __name__
    return cls


_TopicConfigBase = _dataclass_for("_TopicConfigBase", TOPIC_CONFIGS, "")
_BrokerConfigBase = _dataclass_for("_BrokerConfigBase", BROKER_CONFIGS, "")


def _parse_all(defs_by_name: Mapping[str, ConfigDef], values: Mapping[str, Any],
               strict: bool) -> dict[str, Any]:
    """Parse the topic keys of ``values``: Kafka's topic configs kafkalite does not apply
    (TOPIC_NO_EFFECT) are accepted and skipped; an unknown key is refused as Kafka refuses it
    (strict) or skipped."""
    parsed: dict[str, Any] = {}
    for key, raw in values.items():
        definition = defs_by_name.get(key)
        if definition is None:
            if strict and key not in TOPIC_NO_EFFECT:
                raise ConfigError(unknown_topic_config_message(key, TOPIC_CONFIG_NAMES))
            continue
        parsed[definition.attr] = definition.parse(raw)
    return parsed


def _parse_broker(values: Mapping[str, Any]) -> tuple[dict[str, Any], list[str], list[str]]:
    """Parse the broker keys of ``values``: (parsed values, Kafka names given that kafkalite
    accepts without effect, unknown names given). Neither of the last two is refused."""
    parsed: dict[str, Any] = {}
    no_effect, unknown = [], []
    for key, raw in values.items():
        definition = BROKER_BY_NAME.get(key)
        if definition is not None:
            parsed[definition.attr] = definition.parse(raw)
        elif key in BROKER_NO_EFFECT:
            no_effect.append(key)
        else:
            unknown.append(key)
    return parsed, no_effect, unknown


def check_topic_config_name(name: str) -> None:
    """ConfigError (INVALID_CONFIG on the wire) unless ``name`` is a Kafka topic config
    (applied or accepted without effect), worded as Kafka's, naming the closest known name."""
    if name not in TOPIC_BY_NAME and name not in TOPIC_NO_EFFECT:
        raise ConfigError(unknown_topic_config_message(name, TOPIC_CONFIG_NAMES))


@dataclass(frozen=True)
class TopicConfig(_TopicConfigBase):
    """Per-topic settings: the broker's defaults overlaid with /config/topics/<t>."""

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], base: "TopicConfig | None" = None,
                  strict: bool = True) -> "TopicConfig":
        parsed = _parse_all(TOPIC_BY_NAME, values, strict)
        return dataclasses.replace(base or cls(), **parsed)

    def with_overrides(self, overrides: Mapping[str, Any]) -> "TopicConfig":
        return TopicConfig.from_dict(overrides, base=self)

    def get(self, name: str) -> Any:
        return getattr(self, TOPIC_BY_NAME[name].attr)

    def non_default(self, defaults: "TopicConfig") -> dict[str, Any]:
        return {d.name: self.get(d.name) for d in TOPIC_CONFIGS
                if self.get(d.name) != defaults.get(d.name)}

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy


@dataclass(frozen=True)
class BrokerConfig(_BrokerConfigBase):
    """The broker's settings, as read from server.properties and --override flags.

    ``static_keys`` names the settings that were given (Kafka's STATIC_BROKER_CONFIG source in
    DescribeConfigs); the others have their defaults."""

    static_keys: frozenset = field(default=frozenset(), compare=False, repr=False)
    #: listener.name.<listener>.[<mechanism>.]<setting> values: {(listener, mechanism or "",
    #: setting): parsed value}, listener upper-cased, mechanism as in sasl.enabled.mechanisms
    listener_overrides: dict = field(default_factory=dict, compare=False, repr=False)
    #: Kafka keys given that kafkalite accepts without effect (BROKER_NO_EFFECT), in given order
    no_effect_keys: tuple = field(default=(), compare=False, repr=False)
    #: keys given that neither Kafka 2.8 nor kafkalite knows (warned about, as Kafka does)
    unknown_keys: tuple = field(default=(), compare=False, repr=False)
    #: every key given, as given (Kafka's ``originals``: DescribeConfigs lists them all)
    given_values: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], strict: bool = True) -> "BrokerConfig":
        """The config of ``values`` (Kafka's names). A bad value of a known key raises
        ConfigError; Kafka's keys without effect in kafkalite and unknown keys are accepted and
        named by ``startup_notes`` (``strict`` is kept for callers; it changes nothing here)."""
        given = {str(k): as_given(v) for k, v in values.items()}
        overrides, values, listener_no_effect = split_listener_overrides(values, BROKER_BY_NAME)
        parsed, no_effect, unknown = _parse_broker(values)
        derive_listeners(parsed, values)
        config = cls(**parsed, static_keys=frozenset(k for k in values if k in BROKER_BY_NAME),
                     listener_overrides=overrides,
                     no_effect_keys=tuple(no_effect + listener_no_effect),
                     unknown_keys=tuple(unknown), given_values=given)
        config.validate()
        return config

    def startup_notes(self) -> list[tuple[int, str]]:
        """(logging level, message) lines a starting broker logs once: one INFO line naming the
        given Kafka keys kafkalite does not apply, one WARNING per unknown key (Kafka's
        wording, with the closest known name)."""
        notes = []
        if self.no_effect_keys:
            notes.append((logging.INFO, no_effect_note(self.no_effect_keys)))
        for key in self.unknown_keys:
            notes.append((logging.WARNING,
                          unknown_broker_config_note(key, BROKER_CONFIG_NAMES)))
        return notes

    def for_listener(self, listener: str, name: str, mechanism: str | None = None) -> Any:
        """Setting ``name`` as listener ``listener`` sees it: its listener.name.* override
        (for sasl.jaas.config, the mechanism's), else the broker-wide value."""
        key = (listener.upper(), (mechanism or "").upper() if name == "sasl.jaas.config"
               else "", name)
        if key in self.listener_overrides:
            return self.listener_overrides[key]
        return self.get(name)

    def is_static(self, name: str) -> bool:
        """True when ``name`` was set (server.properties, --override), or differs from its
        default in a config built without from_dict."""
        if name in self.static_keys:
            return True
        definition = BROKER_BY_NAME[name]
        return self.get(name) != definition.default

    @classmethod
    def from_properties(cls, path: str | Path, overrides: Mapping[str, str] | None = None,
                        strict: bool = True) -> "BrokerConfig":
        values = read_properties(path)
        values.update(overrides or {})
        return cls.from_dict(values, strict=strict)

    def validate(self) -> None:
        if self.broker_id < 0:
            raise ConfigError("broker.id must be set to a number >= 0 in server.properties "
                              "or with --override broker.id=N")
        names = [listener.name for listener in self.listener_list]
        if len(set(names)) != len(names):
            raise ConfigError(f"listeners {list(self.listeners)} use a name twice; each "
                              "listener needs its own name, e.g. INTERNAL://:9092,EXTERNAL://:29092")
        advertised = {listener.name for listener in self.advertised_listener_list}
        if not advertised <= set(names):
            raise ConfigError(f"advertised.listeners names {sorted(advertised - set(names))} "
                              f"are not in listeners {names}")
        if self.inter_broker_listener_name and self.inter_broker_listener_name not in names:
            raise ConfigError(f"inter.broker.listener.name={self.inter_broker_listener_name} is "
                              f"not one of the listeners {names}")
        control = self.control_plane_listener_name
        if control and control not in names:
            raise ConfigError(f"control.plane.listener.name={control} is not one of the "
                              f"listeners {names}: add a listener of that name")
        if control and control == self.inter_broker_listener:
            raise ConfigError(f"control.plane.listener.name={control} must differ from the "
                              f"inter-broker listener ({self.inter_broker_listener}): give the "
                              "controller a listener of its own")
        given_protocol = self.is_static("security.inter.broker.protocol")
        if self.inter_broker_listener_name and given_protocol:
            raise ConfigError("set inter.broker.listener.name or security.inter.broker.protocol, "
                              "not both (Kafka's rule)")
        if given_protocol and self.security_inter_broker_protocol not in names:
            raise ConfigError(f"security.inter.broker.protocol="
                              f"{self.security_inter_broker_protocol} needs a listener of that "
                              f"name in listeners {names}, or use inter.broker.listener.name")
        unmapped = [n for n in names if n not in self.protocol_map]
        if unmapped:
            raise ConfigError(f"listeners {unmapped} have no entry in "
                              f"listener.security.protocol.map; add e.g. "
                              f"{unmapped[0]}:SASL_SSL")
        if not self.zookeeper_connect:
            raise ConfigError("zookeeper.connect must be set, e.g. "
                              "zookeeper.connect=127.0.0.1:2181/kafkalite")

    def get(self, name: str) -> Any:
        return getattr(self, BROKER_BY_NAME[name].attr)

    @property
    def data_dirs(self) -> tuple[str, ...]:
        return tuple(self.log_dirs) if self.log_dirs else (self.log_dir,)

    @property
    def listener_list(self) -> tuple[Listener, ...]:
        return tuple(Listener.parse(item) for item in self.listeners)

    @property
    def advertised_listener_list(self) -> tuple[Listener, ...]:
        source = self.advertised_listeners or self.listeners
        return tuple(Listener.parse(item) for item in source)

    @property
    def inter_broker_listener(self) -> str:
        if self.inter_broker_listener_name:
            return self.inter_broker_listener_name
        names = [listener.name for listener in self.listener_list]
        if self.is_static("security.inter.broker.protocol") or \
                self.security_inter_broker_protocol in names:
            return self.security_inter_broker_protocol   # Kafka: the listener of that name
        # no listener named PLAINTEXT (the default): Kafka refuses to start; kafkalite keeps
        # such configs working with the first listener
        return names[0]

    @property
    def protocol_map(self) -> dict[str, str]:
        """listener name -> security protocol (listener.security.protocol.map). Without a map
        of their own, listeners not named like a protocol (INTERNAL, EXTERNAL) are PLAINTEXT,
        as every kafkalite listener was before security: old configs keep working."""
        mapped = dict(item.split(":", 1) for item in self.listener_security_protocol_map)
        if "listener.security.protocol.map" not in self.static_keys:
            for listener in self.listener_list:
                mapped.setdefault(listener.name, "PLAINTEXT")
        return mapped

    def security_protocol(self, listener: str) -> str:
        return self.protocol_map[listener]

    @property
    def controller_listener(self) -> str:
        """The listener controller requests travel on (and the only one accepting them when
        control.plane.listener.name is set)."""
        return self.control_plane_listener_name or self.inter_broker_listener

    @property
    def retention_ms(self) -> int:
        if self.log_retention_ms is not None:
            return self.log_retention_ms
        if self.log_retention_minutes is not None:
            return -1 if self.log_retention_minutes < 0 else self.log_retention_minutes * 60000
        return -1 if self.log_retention_hours < 0 else self.log_retention_hours * H

    @property
    def roll_ms(self) -> int:
        return self.log_roll_ms if self.log_roll_ms is not None else self.log_roll_hours * H

    @property
    def zk_connection_timeout_ms(self) -> int:
        return self.zookeeper_connection_timeout_ms or self.zookeeper_session_timeout_ms

    def topic_defaults(self) -> TopicConfig:
        """The TopicConfig a topic gets when /config/topics/<t> overrides nothing."""
        # Kafka's logFlushIntervalMs: log.flush.interval.ms, else the scheduler interval
        flush_ms = self.log_flush_interval_ms
        if flush_ms is None:
            flush_ms = self.log_flush_scheduler_interval_ms
        derived = {"log.retention.ms": self.retention_ms, "log.roll.ms": self.roll_ms,
                   "log.flush.interval.ms": flush_ms}
        values = {}
        for definition in TOPIC_CONFIGS:
            source = definition.topic_name
            if source in derived:
                value = derived[source]
            elif source in BROKER_BY_NAME:
                value = self.get(source)
            else:
                continue
            if value is not None:
                values[definition.attr] = value
        return TopicConfig(**values)


def describe(defs: tuple[ConfigDef, ...] = BROKER_CONFIGS) -> list[tuple[str, str, Any, str]]:
    """(name, type, default, doc) rows, for docs and ``kafkalite broker --help-config``."""
    return [(d.name, d.type, d.default, d.doc) for d in defs]
