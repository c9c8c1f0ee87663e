"""The AdminClient's config and DeleteRecords calls: types (kafka-python's and Java's names) and
the request/response work behind ``AdminClient.describe_configs``, ``alter_configs``,
``incremental_alter_configs`` and ``delete_records``.

Routing follows Kafka's admin client: a broker's (or broker logger's) resource goes to that
broker, a topic's (or the cluster-wide broker default ``""``) to any broker, and DeleteRecords to
each partition's leader (retried on NOT_LEADER_OR_FOLLOWER and unknown partitions after a
metadata refresh, until the timeout).
"""

from __future__ import annotations

import time
from enum import IntEnum
from typing import Mapping, NamedTuple

from kafkalite import errors
from kafkalite.client.structs import TopicPartition
from kafkalite.errors import KafkaError
from kafkalite.protocol import messages as m

__all__ = ["AlterConfigOp", "ConfigEntry", "ConfigResource", "ConfigResourceType",
           "ConfigSynonym"]


class ConfigResourceType(IntEnum):
    """Kafka's ConfigResource.Type."""
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    BROKER = 4
    BROKER_LOGGER = 8


CONFIG_SOURCES = {-1: "UNKNOWN", 0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG",
                  2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
                  4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
                  6: "DYNAMIC_BROKER_LOGGER_CONFIG"}
CONFIG_TYPES = {0: "UNKNOWN", 1: "BOOLEAN", 2: "STRING", 3: "INT", 4: "SHORT", 5: "LONG",
                6: "DOUBLE", 7: "LIST", 8: "CLASS", 9: "PASSWORD"}


class ConfigResource(NamedTuple):
    """A config resource (kafka-python's ``ConfigResource``). ``resource_type``: a
    ConfigResourceType, its number or its name (``"TOPIC"``). ``configs``: for describe_configs
    the names wanted (None = all), for alter_configs ``{name: value}``."""
    resource_type: int | str
    name: str
    configs: object = None

    @property
    def type(self) -> ConfigResourceType:
        return resource_type_of(self.resource_type)

    @property
    def key(self) -> "ConfigResource":
        """This resource without ``configs``, with a ConfigResourceType: the results' keys."""
        return ConfigResource(self.type, str(self.name))


class ConfigSynonym(NamedTuple):
    name: str
    value: str | None
    source: str                         # e.g. "STATIC_BROKER_CONFIG"


class ConfigEntry(NamedTuple):
    """One config of a resource, as Java's ``ConfigEntry``."""
    name: str
    value: str | None                   # None when sensitive, or unset
    source: str                         # "DYNAMIC_TOPIC_CONFIG", ..., "DEFAULT_CONFIG"
    is_sensitive: bool = False
    read_only: bool = False
    synonyms: list = []                 # [ConfigSynonym], most specific first
    type: str = "UNKNOWN"               # "LONG", "LIST", ...
    documentation: str | None = None

    @property
    def is_default(self) -> bool:
        return self.source == "DEFAULT_CONFIG"


class AlterConfigOp(NamedTuple):
    """One change for incremental_alter_configs (Java's ``AlterConfigOp``)."""
    name: str
    op: int | str                       # SET / DELETE / APPEND / SUBTRACT, or 0..3
    value: str | None = None

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


_OPS = {"SET": 0, "DELETE": 1, "APPEND": 2, "SUBTRACT": 3}


def resource_type_of(value) -> ConfigResourceType:
    try:
        if isinstance(value, str):
            return ConfigResourceType[value.upper()]
        return ConfigResourceType(int(value))
    except (KeyError, ValueError, TypeError):
        raise errors.InvalidRequestError(
            f"unknown config resource type {value!r}; one of "
            f"{', '.join(t.name for t in ConfigResourceType)}") from None


def _op_of(value) -> int:
    if isinstance(value, str):
        if value.upper() not in _OPS:
            raise errors.InvalidRequestError(f"unknown config operation {value!r}; one of "
                                             f"{', '.join(_OPS)}")
        return _OPS[value.upper()]
    return int(value)


def _resource(value) -> ConfigResource:
    if isinstance(value, ConfigResource):
        return value
    return ConfigResource(*value)


def _node_for(resource: ConfigResource) -> int | None:
    """The broker a resource must go to (None: any broker)."""
    if resource.type in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER) \
            and resource.name:
        try:
            return int(resource.name)
        except ValueError:
            raise errors.InvalidRequestError(
                f"a {resource.type.name} resource is named by a broker id, got "
                f"{resource.name!r}") from None
    return None


def _send_grouped(admin, resources: list[ConfigResource], build) -> list:
    """Send ``build(resources)`` to each resource's broker; the concatenated result entries."""
    groups: dict[int | None, list[ConfigResource]] = {}
    for resource in resources:
        groups.setdefault(_node_for(resource), []).append(resource)
    entries = []
    for node, group in groups.items():
        request = build(group)
        response = admin._any_broker_request(request) if node is None else \
            _node_request(admin, node, request)
        entries.extend(getattr(response, "results", None) or
                       getattr(response, "responses", None) or [])
    return entries


def _node_request(admin, node: int, request):
    admin._check_open()
    deadline = time.monotonic() + admin.request_timeout_ms / 1000
    while True:
        snap = admin._cluster.maybe_refresh()
        if node not in snap.brokers:
            snap = admin._cluster.refresh(topics=[])
            if node not in snap.brokers:
                raise errors.BrokerNotAvailableError(f"broker {node} is not in the cluster "
                                                     f"(live brokers: {sorted(snap.brokers)})")
        try:
            return admin._pool.get(node).request(request)
        except KafkaError as exc:
            if not exc.retriable or time.monotonic() >= deadline:
                raise
            admin._pool.drop(node)
            admin._cluster.request_update()
            time.sleep(admin._retry_backoff)


def _finish(results: dict, raise_on_error: bool) -> dict:
    if raise_on_error:
        for value in results.values():
            if isinstance(value, KafkaError):
                value.results = results  # type: ignore[attr-defined]
                raise value
    return results


# --- describe / alter ------------------------------------------------------------------------------

def describe_configs(admin, config_resources, include_synonyms: bool = False,
                     include_documentation: bool = False, raise_on_error: bool = True) -> dict:
    resources = [_resource(r) for r in config_resources]
    if not resources:
        return {}

    def build(group):
        return m.DescribeConfigsRequest(
            resources=[m.DescribeConfigsResource(
                int(r.type), str(r.name), None if r.configs is None else list(r.configs))
                for r in group],
            include_synonyms=include_synonyms, include_documentation=include_documentation)

    found = {}
    for result in _send_grouped(admin, resources, build):
        key = ConfigResource(resource_type_of(result.resource_type), result.resource_name)
        if result.error_code:
            found[key] = errors.for_code(result.error_code, result.error_message or
                                         f"describing {key.type.name} {key.name!r}")
            continue
        found[key] = {e.name: ConfigEntry(
            e.name, e.value, CONFIG_SOURCES.get(e.config_source, "UNKNOWN"), e.is_sensitive,
            e.read_only, [ConfigSynonym(s.name, s.value, CONFIG_SOURCES.get(s.source, "UNKNOWN"))
                          for s in e.synonyms],
            CONFIG_TYPES.get(e.config_type, "UNKNOWN"), e.documentation)
            for e in result.configs}
    out = {}
    for resource in resources:
        out[resource.key] = found.get(resource.key, errors.UnknownServerError(
            f"no answer for {resource.type.name} {resource.name!r}"))
    return _finish(out, raise_on_error)


def _alter_results(resources: list[ConfigResource], entries, raise_on_error: bool) -> dict:
    found = {}
    for entry in entries:
        key = ConfigResource(resource_type_of(entry.resource_type), entry.resource_name)
        found[key] = None if entry.error_code == 0 else errors.for_code(
            entry.error_code, entry.error_message)
    out = {r.key: found.get(r.key, errors.UnknownServerError(
        f"no answer for {r.type.name} {r.name!r}")) for r in resources}
    return _finish(out, raise_on_error)


def alter_configs(admin, config_resources, validate_only: bool = False,
                  raise_on_error: bool = True) -> dict:
    resources = [_resource(r) for r in config_resources]
    if not resources:
        return {}

    def build(group):
        return m.AlterConfigsRequest(resources=[m.AlterConfigsResource(
            int(r.type), str(r.name),
            [m.AlterableConfig(str(k), None if v is None else _text(v))
             for k, v in dict(r.configs or {}).items()]) for r in group],
            validate_only=validate_only)
    return _alter_results(resources, _send_grouped(admin, resources, build), raise_on_error)


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def incremental_alter_configs(admin, configs: Mapping, validate_only: bool = False,
                              raise_on_error: bool = True) -> dict:
    resources = []
    ops: dict[ConfigResource, list[m.AlterableConfigOp]] = {}
    for resource, changes in configs.items():
        resource = _resource(resource)
        resources.append(resource)
        ops[resource.key] = [m.AlterableConfigOp(
            str(op.name), _op_of(op.op), None if op.value is None else _text(op.value))
            for op in (AlterConfigOp(*c) if not isinstance(c, AlterConfigOp) else c
                       for c in changes)]
    if not resources:
        return {}

    def build(group):
        return m.IncrementalAlterConfigsRequest(resources=[m.IncrementalAlterConfigsResource(
            int(r.type), str(r.name), ops[r.key]) for r in group], validate_only=validate_only)
    return _alter_results(resources, _send_grouped(admin, resources, build), raise_on_error)


# --- DeleteRecords ---------------------------------------------------------------------------------

_RETRIED = (errors.NotLeaderForPartitionError.code, errors.UnknownTopicOrPartitionError.code,
            errors.LeaderNotAvailableError.code)


def delete_records(admin, records_to_delete: Mapping, timeout_ms: int | None = None,
                   raise_on_error: bool = True) -> dict:
    """``{TopicPartition: low_watermark}`` (an error instead where one happened)."""
    admin._check_open()
    pending = {TopicPartition(*tp): int(offset) for tp, offset in records_to_delete.items()}
    if not pending:
        return {}
    timeout_ms = admin.request_timeout_ms if timeout_ms is None else int(timeout_ms)
    deadline = time.monotonic() + (timeout_ms + admin.request_timeout_ms) / 1000
    results: dict[TopicPartition, int | KafkaError] = {}
    last: KafkaError | None = None
    while pending:
        snap = admin._cluster.refresh(topics=sorted({tp.topic for tp in pending}))
        by_node: dict[int, list[TopicPartition]] = {}
        for tp in list(pending):
            parts = snap.topics.get(tp.topic)
            if parts is None or tp.partition not in parts:
                results[tp] = errors.UnknownTopicOrPartitionError(
                    f"{tp.topic}-{tp.partition} does not exist")
                del pending[tp]
                continue
            node = snap.leader_for(tp.topic, tp.partition)
            if node is not None:
                by_node.setdefault(node, []).append(tp)
        for node, tps in by_node.items():
            topics: dict[str, list] = {}
            for tp in tps:
                topics.setdefault(tp.topic, []).append(
                    m.DeleteRecordsPartition(tp.partition, pending[tp]))
            request = m.DeleteRecordsRequest(
                topics=[m.DeleteRecordsTopic(t, ps) for t, ps in topics.items()],
                timeout_ms=timeout_ms)
            try:
                conn = admin._pool.get(node)
                conn.request_timeout_ms = admin.request_timeout_ms + max(timeout_ms, 0)
                response = conn.request(request)
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                last = exc
                admin._pool.drop(node)
                continue
            for t in response.topics:
                for p in t.partitions:
                    tp = TopicPartition(t.topic, p.partition)
                    if tp not in pending:
                        continue
                    if p.error_code == 0:
                        results[tp] = p.low_watermark
                    elif p.error_code in _RETRIED:
                        last = errors.for_code(p.error_code, f"deleting records of {tp.topic}-"
                                                             f"{tp.partition}")
                        continue
                    else:
                        results[tp] = errors.for_code(
                            p.error_code, f"deleting records of {tp.topic}-{tp.partition} "
                                          f"before offset {pending[tp]}")
                    del pending[tp]
        if not pending:
            break
        if time.monotonic() >= deadline:
            for tp in pending:
                results[tp] = errors.KafkaTimeoutError(
                    f"{tp.topic}-{tp.partition}: no leader answered in time"
                    + (f" (last error: {last})" if last else ""))
            break
        admin._cluster.request_update()
        time.sleep(admin._retry_backoff)
    ordered = {TopicPartition(*tp): results[TopicPartition(*tp)] for tp in records_to_delete}
    return _finish(ordered, raise_on_error)
