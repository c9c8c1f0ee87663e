"""kafkalite's native protocol for the config and DeleteRecords admin APIs: each function turns a
native request (``protocol.messages``) into a call of the protocol-independent broker logic
(``config_admin``, ``delete_records``) and its answer into the native response. The Kafka
protocol's twin is ``kafka_admin_apis``.
"""

from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalite.errors import code_of
from kafkalite.protocol import messages as m
from kafkalite.server import config_admin
from kafkalite.server.delete_records import delete_records as _delete_records
from kafkalite.server.request_authz import (
    ALLOW_ALL, gate_config_resources, gate_delete_records,
)

log = logging.getLogger(__name__)


def _message(exc: BaseException) -> str:
    return getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"


def describe_configs(broker, request: m.DescribeConfigsRequest,
                     authz=ALLOW_ALL) -> defer.Deferred:
    resources = [(r.resource_type, r.resource_name, r.config_names)
                 for r in request.resources]
    d = gate_config_resources(
        authz, request.API_KEY, resources,
        lambda allowed: config_admin.describe_configs(broker, allowed, request.include_synonyms,
                                                      request.include_documentation),
        lambda t, n, code, message: config_admin.DescribedResource(code, message, t, n, []))

    def answer(described):
        return m.DescribeConfigsResponse(results=[m.DescribeConfigsResult(
            r.error_code, r.error_message, r.resource_type, r.resource_name,
            [m.DescribeConfigsEntry(
                c.name, c.value, c.read_only, c.config_source == config_admin.DEFAULT_CONFIG,
                c.is_sensitive, c.config_source,
                [m.DescribeConfigsSynonym(*s) for s in c.synonyms], c.config_type,
                c.documentation) for c in r.configs]) for r in described])

    def failed(failure):
        log.warning("DescribeConfigs failed: %s", failure.value)
        return request.error_response(code_of(failure.value), _message(failure.value))
    return d.addCallbacks(answer, failed)


def _alter_answer(request, response_cls, d: defer.Deferred) -> defer.Deferred:
    def answer(results):
        return response_cls(responses=[m.AlterConfigsResourceResponse(code, message, t, n)
                                       for t, n, code, message in results])

    def failed(failure):
        log.warning("altering configs failed: %s", failure.value)
        return request.error_response(code_of(failure.value), _message(failure.value))
    return d.addCallbacks(answer, failed)


def alter_configs(broker, request: m.AlterConfigsRequest, authz=ALLOW_ALL) -> defer.Deferred:
    resources = [(r.resource_type, r.resource_name, [(c.name, c.value) for c in r.configs])
                 for r in request.resources]
    return _alter_answer(request, m.AlterConfigsResponse, gate_config_resources(
        authz, request.API_KEY, resources,
        lambda allowed: config_admin.alter_configs(broker, allowed, request.validate_only),
        lambda t, n, code, message: (t, n, code, message)))


def incremental_alter_configs(broker, request: m.IncrementalAlterConfigsRequest,
                              authz=ALLOW_ALL) -> defer.Deferred:
    resources = [(r.resource_type, r.resource_name,
                  [(c.name, c.config_operation, c.value) for c in r.configs])
                 for r in request.resources]
    return _alter_answer(request, m.IncrementalAlterConfigsResponse, gate_config_resources(
        authz, request.API_KEY, resources,
        lambda allowed: config_admin.incremental_alter_configs(broker, allowed,
                                                               request.validate_only),
        lambda t, n, code, message: (t, n, code, message)))


def delete_records(broker, request: m.DeleteRecordsRequest, authz=ALLOW_ALL) -> defer.Deferred:
    offsets = {(t.topic, p.partition): p.offset for t in request.topics for p in t.partitions}
    d = gate_delete_records(authz, offsets,
                            lambda allowed: _delete_records(broker, allowed, request.timeout_ms))

    def answer(results):
        topics: dict[str, list] = {}
        for (topic, partition), (low, code) in results.items():
            topics.setdefault(topic, []).append(
                m.DeleteRecordsPartitionResult(partition, low, code))
        return m.DeleteRecordsResponse(topics=[m.DeleteRecordsTopicResult(t, parts)
                                               for t, parts in topics.items()])

    def failed(failure):
        log.warning("DeleteRecords failed: %s", failure.value)
        return request.error_response(code_of(failure.value))
    return d.addCallbacks(answer, failed)
