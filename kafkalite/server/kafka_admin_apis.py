"""Kafka-protocol admin APIs that kafkalite's native protocol serves through other modules:
CreatePartitions, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs and DeleteRecords.

Each function translates a kio request into a call of the protocol-independent broker logic
(``partition_admin``, ``config_admin``, ``delete_records``) and its answer into a response dict
(see ``protocol.kafka.entities``). An unexpected failure of the logic is answered per resource
with its Kafka error code, never by dropping the connection.
"""

from __future__ import annotations

import logging
from collections import Counter

from twisted.internet import defer

from kafkalite.errors import code_of
from kafkalite.protocol.kafka.entities import millis
from kafkalite.server import config_admin
from kafkalite.server.delete_records import delete_records as delete
from kafkalite.server.partition_admin import create_partitions as grow
from kafkalite.server.request_authz import (
    ALLOW_ALL, gate_config_resources, gate_delete_records,
)
from kafkalite.errors import (
    InvalidRequestError, NotControllerError, TopicAuthorizationFailedError,
)
from kafkalite.server.topic_admin import is_active_controller
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ResourceType

log = logging.getLogger(__name__)


def _message(exc: BaseException) -> str:
    return getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"


def create_partitions(broker, request, version, authz=ALLOW_ALL):
    timeout_ms = millis(request.timeout)
    results = []
    names = Counter(t.name for t in request.topics)
    if not is_active_controller(broker):      # as Kafka 2.8: no forwarding, clients retry
        return {"throttle_time": 0, "results": [
            {"name": name, "error_code": NotControllerError.code, "error_message": None}
            for name in names]}
    for name in [n for n, count in names.items() if count > 1]:
        results.append({"name": name, "error_code": InvalidRequestError.code,
                        "error_message": "Duplicate topic in request."})

    def one(topic):
        if names[topic.name] > 1:
            return defer.succeed(None)
        if not authz.may(ApiKey.CREATE_PARTITIONS, ResourceType.TOPIC, topic.name):
            results.append({"name": topic.name, "error_code": TopicAuthorizationFailedError.code,
                            "error_message": "The topic authorization is failed."})
            return defer.succeed(None)
        assignments = ([list(a.broker_ids) for a in topic.assignments]
                       if topic.assignments is not None else None)
        d = defer.maybeDeferred(grow, broker, topic.name, topic.count, assignments,
                                request.validate_only, timeout_ms)
        d.addCallbacks(
            lambda r: results.append({"name": topic.name, "error_code": r[0],
                                      "error_message": r[1]}),
            lambda f: results.append({"name": topic.name, "error_code": code_of(f.value),
                                      "error_message": _message(f.value)}))
        return d
    d = defer.gatherResults([one(t) for t in request.topics], consumeErrors=True)
    return d.addCallback(lambda _: {"throttle_time": 0, "results": results})


def describe_configs(broker, request, version, authz=ALLOW_ALL):
    resources = [(r.resource_type, r.resource_name,
                  list(r.configuration_keys) if r.configuration_keys is not None else None)
                 for r in request.resources]
    d = gate_config_resources(
        authz, ApiKey.DESCRIBE_CONFIGS, resources,
        lambda allowed: config_admin.describe_configs(
            broker, allowed, getattr(request, "include_synonyms", False),
            getattr(request, "include_documentation", False)),
        lambda t, n, code, message: config_admin.DescribedResource(code, message, t, n, []))

    def answer(described):
        return {"throttle_time": 0, "results": [{
            "error_code": r.error_code, "error_message": r.error_message,
            "resource_type": r.resource_type, "resource_name": r.resource_name,
            "configs": [{
                "name": c.name, "value": c.value, "read_only": c.read_only,
                "config_source": c.config_source, "is_default": c.config_source == 5,
                "is_sensitive": c.is_sensitive,
                "synonyms": [{"name": n, "value": v, "source": s} for n, v, s in c.synonyms],
                "config_type": c.config_type, "documentation": c.documentation}
                for c in r.configs]} for r in described]}

    def failed(failure):
        log.warning("DescribeConfigs failed: %s", failure.value)
        return {"throttle_time": 0, "results": [{
            "error_code": code_of(failure.value), "error_message": _message(failure.value),
            "resource_type": t, "resource_name": n, "configs": []}
            for t, n, _ in resources]}
    return d.addCallbacks(answer, failed)


def _alter_answer(resources, d):
    def answer(results):
        return {"throttle_time": 0, "responses": [
            {"resource_type": t, "resource_name": n, "error_code": code,
             "error_message": message} for t, n, code, message in results]}

    def failed(failure):
        log.warning("altering configs failed: %s", failure.value)
        return {"throttle_time": 0, "responses": [
            {"resource_type": r[0], "resource_name": r[1], "error_code": code_of(failure.value),
             "error_message": _message(failure.value)} for r in resources]}
    return d.addCallbacks(answer, failed)


def alter_configs(broker, request, version, authz=ALLOW_ALL):
    resources = [(r.resource_type, r.resource_name, {c.name: c.value for c in r.configs})
                 for r in request.resources]
    return _alter_answer(resources, gate_config_resources(
        authz, ApiKey.ALTER_CONFIGS, resources,
        lambda allowed: config_admin.alter_configs(broker, allowed, request.validate_only),
        lambda t, n, code, message: (t, n, code, message)))


def incremental_alter_configs(broker, request, version, authz=ALLOW_ALL):
    resources = [(r.resource_type, r.resource_name,
                  [(c.name, c.config_operation, c.value) for c in r.configs])
                 for r in request.resources]
    return _alter_answer(resources, gate_config_resources(
        authz, ApiKey.INCREMENTAL_ALTER_CONFIGS, resources,
        lambda allowed: config_admin.incremental_alter_configs(broker, allowed,
                                                               request.validate_only),
        lambda t, n, code, message: (t, n, code, message)))


def delete_records(broker, request, version, authz=ALLOW_ALL):
    offsets = {(t.name, p.partition_index): p.offset
               for t in request.topics for p in t.partitions}
    d = gate_delete_records(authz, offsets,
                            lambda allowed: delete(broker, allowed,
                                                   max(0, millis(request.timeout))))

    def answer(results):
        topics: dict[str, list] = {}
        for (topic, partition), (low, code) in results.items():
            topics.setdefault(topic, []).append(
                {"partition_index": partition, "low_watermark": low, "error_code": code})
        return {"throttle_time": 0, "topics": [
            {"name": name, "partitions": parts} for name, parts in topics.items()]}

    def failed(failure):
        log.warning("DeleteRecords failed: %s", failure.value)
        return answer({tp: (-1, code_of(failure.value)) for tp in offsets})
    return d.addCallbacks(answer, failed)
