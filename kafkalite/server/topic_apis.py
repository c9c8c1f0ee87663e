"""The topic admin APIs: CreateTopics, DeleteTopics, CreatePartitions (at the active controller
only, as Kafka 2.8: any other broker answers NOT_CONTROLLER and clients retry at the controller
Metadata names) and DeleteRecords (at the partitions' leaders), one handler each for both
protocols.

Authorization is Kafka 2.8's, per topic, here or in the logic each handler calls
(``topic_admin`` for CreateTopics, whose checks are interleaved with its validation): the
allowed topics are served, each refused one answers TOPIC_AUTHORIZATION_FAILED. Creations and
deletions write ZooKeeper; the answer waits (``broker.metadata_waits``) until this broker's
metadata shows the controller's work, or the request's timeout passes.
"""

from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalite import errors
from kafkalite.errors import code_of
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import AclOperation, ResourceType
from kafkalite.server import topic_admin
from kafkalite.server.delete_records import INVALID_LOW_WATERMARK, delete_records
from kafkalite.server.partition_admin import create_partitions
from kafkalite.server.request_context import KAFKA

__all__ = ["handle_create_topics", "handle_delete_topics", "handle_create_partitions",
           "handle_delete_records"]

log = logging.getLogger(__name__)

_TOPIC_DENIED = errors.TopicAuthorizationFailedError.code
UNKNOWN_TOPIC_ID = 100     # Kafka's Errors.UNKNOWN_TOPIC_ID (KIP-516), DeleteTopics v6 by id


# --- CreateTopics --------------------------------------------------------------------------------

def handle_create_topics(broker, ctx, request: m.CreateTopicsRequest) -> defer.Deferred:
    """Kafka 2.8's checks, creation and wait for leaders: ``topic_admin``."""
    d = topic_admin.create_topics(broker, request.topics, request.timeout_ms,
                                  request.validate_only, ctx.authz)
    return d.addCallback(lambda outcomes: m.CreateTopicsResponse(
        topics=[_created(o) for o in outcomes]))


def _created(o: topic_admin.TopicOutcome) -> m.CreatableTopicResult:
    return m.CreatableTopicResult(
        o.name, o.error_code, o.error_message, o.num_partitions, o.replication_factor,
        [m.CreatableTopicConfig(c.name, c.value, c.read_only, c.config_source, c.is_sensitive)
         for c in o.configs],
        o.topic_config_error_code)


# --- DeleteTopics --------------------------------------------------------------------------------

def handle_delete_topics(broker, ctx, request: m.DeleteTopicsRequest) -> defer.Deferred:
    return defer.ensureDeferred(_delete_topics(broker, ctx, request))


async def _delete_topics(broker, ctx, request: m.DeleteTopicsRequest) -> m.DeleteTopicsResponse:
    """Kafka 2.8's KafkaApis.handleDeleteTopicsRequest, in its order: NOT_CONTROLLER; deletion
    disabled (INVALID_REQUEST before v3); then per topic: an id nobody knows, an id the client
    may not Describe (answered without its name), Delete refused, a topic that does not
    exist."""
    if not topic_admin.is_active_controller(broker):
        return request.error_response(errors.NotControllerError.code, None)
    config = broker.config
    if not config.delete_topic_enable:
        code = (errors.InvalidRequestError.code if ctx.protocol == KAFKA and ctx.api_version < 3
                else errors.TopicDeletionDisabledError.code)
        return request.error_response(
            code, "topic deletion is disabled: set delete.topic.enable=true on the brokers")
    metadata = broker.metadata_cache
    authz = ctx.authz
    # (name, topic id as asked) -> [code, message]; one entry per distinct topic
    results: dict[tuple, list] = {}
    for name in request.topic_names:
        results[(name, None)] = _deletable(authz, metadata, name)
    if request.topic_ids:
        names_by_id = {metadata.topic_id(t): t for t in metadata.topics()}
        for topic_id in request.topic_ids:
            name = names_by_id.get(topic_id)
            if name is None:
                results[(None, topic_id)] = [UNKNOWN_TOPIC_ID, None]
            elif not authz.allowed(AclOperation.DESCRIBE, ResourceType.TOPIC, name):
                results[(None, topic_id)] = [_TOPIC_DENIED, None]
            else:
                results[(name, topic_id)] = _deletable(authz, metadata, name)
    marked = []
    for (name, _), outcome in results.items():
        if outcome[0] != errors.NONE or name in marked:
            continue
        try:
            await broker.deferred_zk.mark_topic_for_deletion(name)
        except Exception as exc:  # noqa: BLE001 - answered per topic
            if not isinstance(exc, errors.KafkaError):
                log.error("marking topic %s for deletion failed", name, exc_info=exc)
            outcome[:] = [code_of(exc), getattr(exc, "message", None) or str(exc)]
            continue
        marked.append(name)
    if marked and request.timeout_ms > 0:
        def gone():
            return not any(metadata.contains(name) for name in marked)

        await broker.metadata_waits.wait(request.timeout_ms, gone, lambda timed_out: None)
        for (name, _), outcome in results.items():
            if name in marked and metadata.contains(name):
                outcome[:] = [errors.RequestTimedOutError.code,
                              f"topic {name} is marked for deletion; the controller did not "
                              f"finish within {request.timeout_ms} ms"]
    return m.DeleteTopicsResponse(responses=[
        m.DeletableTopicResult(name, code, message, topic_id)
        for (name, topic_id), (code, message) in results.items()])


def _deletable(authz, metadata, name: str) -> list:
    if not authz.may(ApiKey.DELETE_TOPICS, ResourceType.TOPIC, name):
        return [_TOPIC_DENIED, f"{authz.principal} may not delete topic {name}"]
    if not metadata.contains(name):
        return [errors.UnknownTopicOrPartitionError.code, f"topic '{name}' does not exist"]
    return [errors.NONE, None]


# --- CreatePartitions ----------------------------------------------------------------------------

def handle_create_partitions(broker, ctx, request: m.CreatePartitionsRequest
                             ) -> defer.Deferred | m.CreatePartitionsResponse:
    """Kafka 2.8's handleCreatePartitionsRequest: a topic named twice answers INVALID_REQUEST,
    one the client may not Alter TOPIC_AUTHORIZATION_FAILED, the others are grown
    (``partition_admin``), all at once. One answer per distinct topic, in request order."""
    names = list(dict.fromkeys(t.name for t in request.topics))
    if not topic_admin.is_active_controller(broker):
        return m.CreatePartitionsResponse(results=[
            m.CreatePartitionsTopicResult(name, errors.NotControllerError.code, None)
            for name in names])
    counts: dict[str, int] = {}
    for t in request.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    calls = {}
    for t in request.topics:
        if counts[t.name] > 1:
            calls[t.name] = defer.succeed((errors.InvalidRequestError.code,
                                           "Duplicate topic in request."))
        elif not ctx.authz.may(ApiKey.CREATE_PARTITIONS, ResourceType.TOPIC, t.name):
            calls[t.name] = defer.succeed((_TOPIC_DENIED, "The topic authorization is failed."))
        else:
            calls[t.name] = create_partitions(broker, t.name, t.count, t.assignments,
                                              request.validate_only, request.timeout_ms)
    d = defer.gatherResults([calls[name] for name in names], consumeErrors=True)
    return d.addCallback(lambda outcomes: m.CreatePartitionsResponse(results=[
        m.CreatePartitionsTopicResult(name, code, message)
        for name, (code, message) in zip(names, outcomes)]))


# --- DeleteRecords -------------------------------------------------------------------------------

def handle_delete_records(broker, ctx, request: m.DeleteRecordsRequest) -> defer.Deferred:
    """Kafka 2.8's handleDeleteRecordsRequest: partitions of topics the client may not Delete
    answer TOPIC_AUTHORIZATION_FAILED; the others go to their leaders (``delete_records``).
    Answers in request order."""
    offsets = {(t.topic, p.partition): p.offset for t in request.topics for p in t.partitions}
    allowed, _ = ctx.authz.split(ApiKey.DELETE_RECORDS, ResourceType.TOPIC,
                                 {topic for topic, _ in offsets})
    asked = {tp: offset for tp, offset in offsets.items() if tp[0] in allowed}
    d = (delete_records(broker, asked, request.timeout_ms) if asked else defer.succeed({}))

    def answer(results):
        topics: dict[str, list] = {}
        for tp in offsets:
            low, code = results.get(tp, (INVALID_LOW_WATERMARK, _TOPIC_DENIED))
            topics.setdefault(tp[0], []).append(m.DeleteRecordsPartitionResult(tp[1], low, code))
        return m.DeleteRecordsResponse(topics=[m.DeleteRecordsTopicResult(topic, parts)
                                               for topic, parts in topics.items()])
    return d.addCallback(answer)
