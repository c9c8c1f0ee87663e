"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs, for topics and brokers.

DescribeConfigs is asked raw (v4 with synonyms) so that every field of an entry is seen: name,
value, source, read-only, sensitive, type and the synonym chain. The set of names and the
entries are separate scenarios, so that a missing config does not hide a wrong default. Broker
settings that the two launchers give differently (addresses, directories, the ZooKeeper chroot,
settings only Kafka's launcher writes) are left out of the broker comparisons: they are
harness, not system.
"""

from __future__ import annotations

from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

from kafkalite.testing.conformance import clients, raw
from kafkalite.testing.conformance.scenario import Context, Family

family = Family("configs")
scenario = family.scenario

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
STATIC, DEFAULT = 4, 5
#: broker settings whose values are chance (addresses, paths) in either system
_PER_CLUSTER = {"listeners", "advertised.listeners", "log.dirs", "log.dir", "zookeeper.connect",
                "broker.id"}


def describe(ctx: Context, resource_type: int, name: str, keys: list[str] | None = None,
             address: str | None = None) -> dict:
    """DescribeConfigs v4 (synonyms included): {"error", "message", "configs": {name: entry}}."""
    answer = raw.call(address or ctx.addresses[0], 32, 4, {
        "resources": [{"resource_type": resource_type, "resource_name": name,
                       "configuration_keys": keys}],
        "include_synonyms": True, "include_documentation": False})
    result = answer["results"][0]
    return {"error": result["error_code"], "message": result["error_message"],
            "configs": {c["name"]: {"value": c["value"], "source": c["config_source"],
                                    "read_only": c["read_only"], "sensitive": c["is_sensitive"],
                                    "type": c["config_type"],
                                    "synonyms": [[s["name"], s["value"], s["source"]]
                                                 for s in c["synonyms"]]}
                        for c in result["configs"]}}


#: AclAuthorizer's settings: kafkalite lists them with the broker's, Kafka does not (the names
#: scenario shows that); the value scenarios leave them out so that the values are compared
_AUTHORIZER = {"allow.everyone.if.no.acl.found", "super.users", "zookeeper.auth.digest"}


def _broker_address(ctx: Context, broker_id: int) -> str:
    md = clients.admin(ctx).list_topics(timeout=ctx.timeout_s)
    broker = md.brokers[broker_id]
    return f"{broker.host}:{broker.port}"


def _broker_configs(ctx: Context) -> dict:
    return describe(ctx, BROKER, "1", address=_broker_address(ctx, 1))["configs"]


def _harness_given(kafka_static: dict) -> set[str]:
    """Settings that either launcher writes: STATIC in the answer, or per cluster."""
    return {n for n, e in kafka_static.items() if e["source"] == STATIC} | _PER_CLUSTER


@scenario("topic-config-names", "DescribeConfigs")
def topic_config_names(ctx: Context) -> object:
    """The names DescribeConfigs lists for a topic without overrides."""
    topic = clients.create_topic(ctx, "t")
    return {name: "listed" for name in sorted(describe(ctx, TOPIC, topic)["configs"])}


@scenario("topic-config-entries", "DescribeConfigs")
def topic_config_entries(ctx: Context) -> object:
    """Each listed entry of a topic without overrides, except the synonyms: value, source,
    read-only, sensitive, type (names only one system lists are left to topic-config-names)."""
    from kafkalite.config import TOPIC_CONFIGS

    topic = clients.create_topic(ctx, "t")
    known = {c.name for c in TOPIC_CONFIGS}
    answer = describe(ctx, TOPIC, topic)
    return {"error": answer["error"], "message": answer["message"] or None,
            "entries": {n: {k: v for k, v in e.items() if k != "synonyms"}
                        for n, e in answer["configs"].items() if n in known}}


@scenario("topic-config-default-synonyms", "DescribeConfigs")
def topic_config_default_synonyms(ctx: Context) -> object:
    """The synonyms of a topic's entries when nothing overrides them."""
    topic = clients.create_topic(ctx, "t")
    return {n: e["synonyms"] for n, e in describe(ctx, TOPIC, topic)["configs"].items()
            if e["synonyms"]}


@scenario("topic-config-overrides", "CreateTopics", "DescribeConfigs")
def topic_config_overrides(ctx: Context) -> object:
    """A topic created with retention.ms, cleanup.policy and min.insync.replicas: those
    entries with their sources and synonym chains (the broker's static min.insync.replicas
    under the topic's)."""
    topic = clients.create_topic(ctx, "t", config={"retention.ms": "3600000",
                                                   "cleanup.policy": "compact",
                                                   "min.insync.replicas": "1"})
    configs = describe(ctx, TOPIC, topic)["configs"]
    return {n: configs.get(n) for n in ("retention.ms", "cleanup.policy", "min.insync.replicas")}


@scenario("describe-configs-keys", "DescribeConfigs")
def describe_configs_keys(ctx: Context) -> object:
    """DescribeConfigs naming keys: a known one, an unknown one (left out, not an error)."""
    topic = clients.create_topic(ctx, "t")
    answer = describe(ctx, TOPIC, topic, keys=["retention.ms", "no.such.config"])
    return {"error": answer["error"], "names": sorted(answer["configs"])}


@scenario("describe-configs-errors", "DescribeConfigs")
def describe_configs_errors(ctx: Context) -> object:
    """An unknown topic, an illegal topic name, a broker id that is not a number, and
    AdminClient.describe_configs of an unknown topic."""
    out = {}
    for label, rtype, name in (("unknown topic", TOPIC, ctx.name("none")),
                               ("illegal topic", TOPIC, "bad name!"),
                               ("broker 'abc'", BROKER, "abc")):
        answer = describe(ctx, rtype, name)
        out[label] = [answer["error"], bool(answer["message"]), len(answer["configs"])]
    client = clients.admin(ctx)
    resource = ConfigResource("TOPIC", ctx.name("none"))
    result = clients.outcome(client.describe_configs([resource])[resource], ctx.timeout_s)
    out["admin"] = result if isinstance(result, dict) else sorted(result)[:3]
    return out


@scenario("describe-configs-admin", "DescribeConfigs")
def describe_configs_admin(ctx: Context) -> object:
    """AdminClient.describe_configs of a topic with an override: a few entries as the client
    shows them (value, source, default, read-only, sensitive)."""
    topic = clients.create_topic(ctx, "t", config={"retention.ms": "3600000"})
    client = clients.admin(ctx)
    resource = ConfigResource("TOPIC", topic)
    result = client.describe_configs([resource])[resource].result(ctx.timeout_s)
    return {n: [e.value, str(e.source).rsplit(".", 1)[-1], e.is_default, e.is_read_only,
                e.is_sensitive]
            for n, e in result.items() if n in ("retention.ms", "segment.bytes",
                                                "cleanup.policy", "min.insync.replicas")}


@scenario("broker-config-names", "DescribeConfigs")
def broker_config_names(ctx: Context) -> object:
    """The names DescribeConfigs lists for a broker, Kafka's internal (KRaft early-access) ones
    set aside: a Kafka 2.8 broker whose dynamic config ever changed lists those too
    (KafkaConfig.nonInternalValues then answers every value), and other tests of the session
    change dynamic configs of the shared broker 1."""
    from kafkalite.config_kafka_table import KAFKA_BROKER_DEFS

    internal = {name for name, d in KAFKA_BROKER_DEFS.items() if d.internal}
    return {name: "listed" for name in sorted(_broker_configs(ctx)) if name not in internal}


@scenario("broker-config-defaults", "DescribeConfigs")
def broker_config_defaults(ctx: Context) -> object:
    """Broker entries both systems list and neither launcher sets: value, source, sensitive,
    type, synonyms, for the names of kafkalite's broker config table (an entry one system does
    not list is left to broker-config-names)."""
    from kafkalite.config import BROKER_CONFIGS

    configs = _broker_configs(ctx)
    launcher = {"offsets.topic.replication.factor", "log.retention.check.interval.ms",
                "transaction.state.log.replication.factor", "transaction.state.log.min.isr",
                "zookeeper.session.timeout.ms", "controlled.shutdown.retry.backoff.ms",
                "replica.fetch.backoff.ms", "default.replication.factor"}
    skip = _PER_CLUSTER | launcher | _AUTHORIZER | set(_shared_settings())
    return {c.name: {k: v for k, v in configs[c.name].items() if k != "read_only"}
            for c in BROKER_CONFIGS if c.name not in skip and c.name in configs}


def _shared_settings() -> dict:
    from kafkalite.testing.oracle_fixtures import SHARED_SETTINGS

    return SHARED_SETTINGS


@scenario("broker-config-shared-settings", "DescribeConfigs")
def broker_config_shared_settings(ctx: Context) -> object:
    """The settings both clusters are given (SHARED_SETTINGS): static broker configs with
    their defaults as synonyms (read-only flags are broker-config-read-only's question)."""
    configs = _broker_configs(ctx)
    return {n: {k: v for k, v in configs[n].items() if k != "read_only"} if n in configs
            else None for n in sorted(_shared_settings())}


@scenario("broker-config-read-only", "DescribeConfigs")
def broker_config_read_only(ctx: Context) -> object:
    """Which broker configs are read-only (those a broker cannot change at run time), for the
    names of kafkalite's broker config table that Kafka 2.8 has too (the names one system
    lists alone are broker-config-names' question)."""
    from kafkalite.config import BROKER_CONFIGS

    configs = _broker_configs(ctx)
    return {c.name: configs[c.name]["read_only"] for c in BROKER_CONFIGS
            if c.name in configs and c.name not in _AUTHORIZER}


@scenario("broker-config-sensitive", "DescribeConfigs")
def broker_config_sensitive(ctx: Context) -> object:
    """Sensitive broker configs are listed with no value."""
    return {n: e["value"] for n, e in _broker_configs(ctx).items() if e["sensitive"]}


@scenario("broker-logger-configs", "DescribeConfigs")
def broker_logger_configs(ctx: Context) -> object:
    """DescribeConfigs of a BROKER_LOGGER resource (KIP-412): the root logger's level."""
    answer = describe(ctx, BROKER_LOGGER, "1", address=_broker_address(ctx, 1))
    return {"error": answer["error"], "root": answer["configs"].get("root")}


def _alter(ctx: Context, resource_type: int, name: str, configs: dict[str, str | None],
           validate_only: bool = False, address: str | None = None) -> list:
    answer = raw.call(address or ctx.addresses[0], 33, 1, {
        "resources": [{"resource_type": resource_type, "resource_name": name,
                       "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
        "validate_only": validate_only})
    return [[r["error_code"], r["error_message"]] for r in answer["responses"]]


def _incremental(ctx: Context, resource_type: int, name: str, ops: list[tuple[str, int, str]],
                 validate_only: bool = False, address: str | None = None) -> list:
    answer = raw.call(address or ctx.addresses[0], 44, 1, {
        "resources": [{"resource_type": resource_type, "resource_name": name, "configs": [
            {"name": k, "config_operation": op, "value": v} for k, op, v in ops]}],
        "validate_only": validate_only})
    return [[r["error_code"], r["error_message"]] for r in answer["responses"]]


def _overrides(ctx: Context, topic: str) -> dict:
    return {n: e["value"] for n, e in describe(ctx, TOPIC, topic)["configs"].items()
            if e["source"] == 1}


@scenario("alter-configs-topic", "AlterConfigs", "DescribeConfigs")
def alter_configs_topic(ctx: Context) -> object:
    """Legacy AlterConfigs replaces a topic's whole set of overrides; validate_only changes
    nothing."""
    topic = clients.create_topic(ctx, "t", config={"retention.ms": "3600000"})
    first = _alter(ctx, TOPIC, topic, {"segment.ms": "600000"})
    after_first = clients.wait_for(lambda: (lambda o: o if "segment.ms" in o else None)(
        _overrides(ctx, topic)), "the override to show", ctx.timeout_s)
    validate = _alter(ctx, TOPIC, topic, {"flush.ms": "1000"}, validate_only=True)
    return {"alter": first, "overrides": after_first, "validate": validate,
            "after validate": _overrides(ctx, topic)}


@scenario("alter-configs-admin", "AlterConfigs", "IncrementalAlterConfigs")
def alter_configs_admin(ctx: Context) -> object:
    """AdminClient.incremental_alter_configs on a topic (SET then DELETE), as the client sees
    it."""
    topic = clients.create_topic(ctx, "t")
    client = clients.admin(ctx)

    def run(entry):
        resource = ConfigResource("TOPIC", topic, incremental_configs=[entry])
        return clients.outcome(client.incremental_alter_configs([resource])[resource],
                               ctx.timeout_s)

    set_ = run(ConfigEntry("retention.ms", "7200000",
                           incremental_operation=AlterConfigOpType.SET))
    shown = clients.wait_for(lambda: _overrides(ctx, topic), "the override", ctx.timeout_s)
    deleted = run(ConfigEntry("retention.ms", None,
                              incremental_operation=AlterConfigOpType.DELETE))
    gone = clients.wait_for(lambda: not _overrides(ctx, topic) and "gone",
                            "the override to go", ctx.timeout_s)
    return {"set": set_, "shown": shown, "delete": deleted, "after delete": gone}


@scenario("incremental-alter-list-ops", "IncrementalAlterConfigs", "DescribeConfigs")
def incremental_alter_list_ops(ctx: Context) -> object:
    """APPEND and SUBTRACT on the list config cleanup.policy."""
    topic = clients.create_topic(ctx, "t")
    append = _incremental(ctx, TOPIC, topic, [("cleanup.policy", 2, "compact")])
    appended = clients.wait_for(lambda: _overrides(ctx, topic).get("cleanup.policy"),
                                "the appended policy", ctx.timeout_s)
    subtract = _incremental(ctx, TOPIC, topic, [("cleanup.policy", 3, "delete")])
    subtracted = clients.wait_for(
        lambda: (lambda v: v if v == "compact" else None)(
            _overrides(ctx, topic).get("cleanup.policy")), "the subtracted policy",
        ctx.timeout_s)
    return {"append": append, "appended": appended, "subtract": subtract,
            "subtracted": subtracted}


@scenario("alter-configs-errors", "AlterConfigs", "IncrementalAlterConfigs")
def alter_configs_errors(ctx: Context) -> object:
    """Unknown name, unknown topic: the error codes."""
    topic = clients.create_topic(ctx, "t")
    return {
        "legacy unknown name": [e[0] for e in _alter(ctx, TOPIC, topic, {"no.such": "1"})],
        "legacy unknown topic": [e[0] for e in _alter(ctx, TOPIC, ctx.name("none"),
                                                      {"retention.ms": "1000"})],
        "incremental unknown name": [e[0] for e in _incremental(
            ctx, TOPIC, topic, [("no.such", 0, "1")])],
        "incremental unknown topic": [e[0] for e in _incremental(
            ctx, TOPIC, ctx.name("none"), [("retention.ms", 0, "1000")])],
    }


@scenario("alter-configs-bad-values", "AlterConfigs", "IncrementalAlterConfigs")
def alter_configs_bad_values(ctx: Context) -> object:
    """Values a config cannot take: not a number, out of range, APPEND to a non-list config."""
    topic = clients.create_topic(ctx, "t")
    return {
        "legacy not a number": [e[0] for e in _alter(ctx, TOPIC, topic, {"retention.ms": "x"})],
        "incremental out of range": [e[0] for e in _incremental(
            ctx, TOPIC, topic, [("min.cleanable.dirty.ratio", 0, "7")])],
        "append to non-list": [e[0] for e in _incremental(
            ctx, TOPIC, topic, [("retention.ms", 2, "5")])],
    }


@scenario("incremental-alter-unknown-operation", "IncrementalAlterConfigs")
def incremental_alter_unknown_operation(ctx: Context) -> object:
    """IncrementalAlterConfigs with operation 9 (0-3 exist)."""
    topic = clients.create_topic(ctx, "t")
    return [e[0] for e in _incremental(ctx, TOPIC, topic, [("retention.ms", 9, "1000")])]


@scenario("alter-configs-error-messages", "AlterConfigs", "IncrementalAlterConfigs")
def alter_configs_error_messages(ctx: Context) -> object:
    """The broker's wording of refused config changes (shown to users by kafka-configs)."""
    topic = clients.create_topic(ctx, "t")
    return {"bad value": _alter(ctx, TOPIC, topic, {"retention.ms": "x"}),
            "unknown name": _incremental(ctx, TOPIC, topic, [("no.such", 0, "1")])}


@scenario("broker-dynamic-log-retention", "IncrementalAlterConfigs", "DescribeConfigs")
def broker_dynamic_log_retention(ctx: Context) -> object:
    """IncrementalAlterConfigs of a broker's log.retention.ms (a dynamic broker config in
    Kafka), validate_only so that the shared cluster is left as it is."""
    address = _broker_address(ctx, 1)
    return _incremental(ctx, BROKER, "1", [("log.retention.ms", 0, "86400000")],
                        validate_only=True, address=address)


@scenario("broker-static-config-refused", "IncrementalAlterConfigs", "AlterConfigs")
def broker_static_config_refused(ctx: Context) -> object:
    """Changing a broker's broker.id or zookeeper.connect at run time (never dynamic)."""
    address = _broker_address(ctx, 1)
    return {"incremental broker.id": [e[0] for e in _incremental(
                ctx, BROKER, "1", [("broker.id", 0, "7")], validate_only=True,
                address=address)],
            "legacy zookeeper.connect": [e[0] for e in _alter(
                ctx, BROKER, "1", {"zookeeper.connect": "x:1"}, validate_only=True,
                address=address)]}
