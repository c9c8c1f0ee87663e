"""The config admin APIs: DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, one handler
each for both protocols, served by any broker (as Kafka 2.8 in ZooKeeper mode, which does not
forward them to the controller).

Authorization is Kafka 2.8's, per resource: a topic needs the operation on the topic, a broker or
broker logger on the cluster; a refused resource answers TOPIC_AUTHORIZATION_FAILED or
CLUSTER_AUTHORIZATION_FAILED, the allowed ones are served by ``config_admin`` (which answers
each resource's own errors). A resource type Kafka does not know for the API fails the whole
request with INVALID_REQUEST, as Kafka's handler throws (the pipeline answers the request's
error response).
"""

from __future__ import annotations

from twisted.internet import defer

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import CLUSTER_NAME, ResourceType
from kafkalite.server import config_admin
from kafkalite.server.config_describe import DEFAULT_CONFIG

__all__ = ["handle_describe_configs", "handle_alter_configs",
           "handle_incremental_alter_configs"]

_TOPIC, _BROKER, _LOGGER = (m.CONFIG_RESOURCE_TOPIC, m.CONFIG_RESOURCE_BROKER,
                            m.CONFIG_RESOURCE_BROKER_LOGGER)
_TYPE_NAMES = config_admin.RESOURCE_TYPE_NAMES
# Kafka's Errors.message of the two refusals (DescribeConfigs sends it; the alters send null)
_REFUSAL_MESSAGES = {errors.TopicAuthorizationFailedError.code: "Topic authorization failed.",
                     errors.ClusterAuthorizationFailedError.code: "Cluster authorization failed."}


def _refusal(authz, api_key: int, resource_type: int, name: str, types) -> int | None:
    """None when the client may ``api_key`` the resource, else the error code to answer.
    Raises INVALID_REQUEST for a type outside ``types`` (Kafka's handlers throw)."""
    if resource_type not in types:
        raise errors.InvalidRequestError(
            f"Unexpected resource type {_TYPE_NAMES.get(resource_type, 'UNKNOWN')} for resource "
            f"{name}")
    if resource_type == _TOPIC:
        if authz.may(api_key, ResourceType.TOPIC, name):
            return None
        return errors.TopicAuthorizationFailedError.code
    if authz.may(api_key, ResourceType.CLUSTER, CLUSTER_NAME):
        return None
    return errors.ClusterAuthorizationFailedError.code


# --- DescribeConfigs -----------------------------------------------------------------------------

def handle_describe_configs(broker, ctx, request: m.DescribeConfigsRequest) -> defer.Deferred:
    """Topic, broker and broker-logger configs with Kafka's sources and synonyms
    (``config_admin``). As Kafka 2.8, the described resources come first, then the refused
    ones."""
    allowed, refused = [], []
    for r in request.resources:
        code = _refusal(ctx.authz, ApiKey.DESCRIBE_CONFIGS, r.resource_type, r.resource_name,
                        (_TOPIC, _BROKER, _LOGGER))
        if code is None:
            allowed.append((r.resource_type, r.resource_name, r.config_names))
        else:
            refused.append(m.DescribeConfigsResult(code, _REFUSAL_MESSAGES[code], r.resource_type,
                                                   r.resource_name, []))
    d = config_admin.describe_configs(broker, allowed, request.include_synonyms,
                                      request.include_documentation)
    return d.addCallback(lambda described: m.DescribeConfigsResponse(
        results=[_described(r) for r in described] + refused))


def _described(r: config_admin.DescribedResource) -> m.DescribeConfigsResult:
    return m.DescribeConfigsResult(
        r.error_code, r.error_message, r.resource_type, r.resource_name,
        [m.DescribeConfigsEntry(
            c.name, c.value, c.read_only, c.config_source == DEFAULT_CONFIG, c.is_sensitive,
            c.config_source, [m.DescribeConfigsSynonym(*s) for s in c.synonyms], c.config_type,
            c.documentation) for c in r.configs])


# --- AlterConfigs / IncrementalAlterConfigs ------------------------------------------------------

def handle_alter_configs(broker, ctx, request: m.AlterConfigsRequest) -> defer.Deferred:
    """Kafka's legacy AlterConfigs (the given set replaces a topic's overrides; brokers'
    dynamic configs): topics and brokers only, broker loggers fail the request as Kafka's."""
    for r in request.resources:
        if r.resource_type == _LOGGER:
            raise errors.InvalidRequestError(
                "AlterConfigs is deprecated and does not support the resource type BROKER_LOGGER")
    return _alter(ctx, ApiKey.ALTER_CONFIGS, request, m.AlterConfigsResponse, (_TOPIC, _BROKER),
                  lambda allowed: config_admin.alter_configs(
                      broker, [(t, n, [(c.name, c.value) for c in configs])
                               for t, n, configs in allowed], request.validate_only))


def handle_incremental_alter_configs(broker, ctx, request: m.IncrementalAlterConfigsRequest
                                     ) -> defer.Deferred:
    """SET / DELETE / APPEND / SUBTRACT per key, for topics, brokers and broker loggers."""
    return _alter(ctx, ApiKey.INCREMENTAL_ALTER_CONFIGS, request,
                  m.IncrementalAlterConfigsResponse, (_TOPIC, _BROKER, _LOGGER),
                  lambda allowed: config_admin.incremental_alter_configs(
                      broker, [(t, n, [(c.name, c.config_operation, c.value) for c in configs])
                               for t, n, configs in allowed], request.validate_only))


def _alter(ctx, api_key: int, request, response_cls, types, serve) -> defer.Deferred:
    """The allowed resources altered by ``serve``; one answer per resource in request order,
    a refused one with its code and no message (Kafka's ``configsAuthorizationApiError``)."""
    refused: dict[int, m.AlterConfigsResourceResponse] = {}
    allowed = []
    for index, r in enumerate(request.resources):
        code = _refusal(ctx.authz, api_key, r.resource_type, r.resource_name, types)
        if code is None:
            allowed.append((r.resource_type, r.resource_name, r.configs))
        else:
            refused[index] = m.AlterConfigsResourceResponse(code, None, r.resource_type,
                                                            r.resource_name)

    def answer(results):
        served = iter(results)
        out = []
        for index in range(len(request.resources)):
            if index in refused:
                out.append(refused[index])
            else:
                t, n, code, message = next(served)
                out.append(m.AlterConfigsResourceResponse(code, message, t, n))
        return response_cls(responses=out)
    return serve(allowed).addCallback(answer)
