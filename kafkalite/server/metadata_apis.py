"""Metadata: the brokers, the controller and the topics' partitions as this broker's metadata
cache knows them, with auto topic creation and KIP-430's authorized operations (Kafka 2.8's
handleTopicMetadataRequest).

The brokers' addresses are those of the listener the client connected to (``ctx.listener``), so a
client inside a private network and one outside both get addresses they can reach.

Authorization, decided here per topic without changing the request:

* every topic (``topics`` None): those the client may not Describe are left out, asked without
  logging;
* named topics: one the client may not Describe answers TOPIC_AUTHORIZATION_FAILED without a word
  on whether it exists; a missing one it may Describe but not Create (on the cluster or the
  topic) when it would be auto-created also answers TOPIC_AUTHORIZATION_FAILED, and is not made.
"""

from __future__ import annotations

import logging

from kafkalite import errors
from kafkalite.controller.assignment import assign_replicas
from kafkalite.errors import KafkaError, code_of
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import AclOperation, ResourceType
from kafkalite.security.operations import NOT_REQUESTED
from kafkalite.server.delete_records import INTERNAL_TOPICS
from kafkalite.topics import validate_topic_name

log = logging.getLogger(__name__)

__all__ = ["handle_metadata", "auto_create_topic"]

_TOPIC_DENIED = errors.TopicAuthorizationFailedError.code
STARTUP_METADATA_WAIT_MS = 10000


def handle_metadata(broker, ctx, request: m.MetadataRequest):
    """The answer, or (before the controller's first UpdateMetadata) a Deferred of it."""
    metadata = broker.metadata_cache
    if metadata.generation > 0 or getattr(broker, "metadata_waits", None) is None:
        return _metadata(broker, ctx, request)

    def answer(timed_out: bool) -> m.MetadataResponse:
        if timed_out and metadata.generation == 0:
            log.warning("Metadata from client %s answered without brokers or controller: no "
                        "UpdateMetadata from the controller in %d ms since this broker started",
                        ctx.client_id, STARTUP_METADATA_WAIT_MS)
        return _metadata(broker, ctx, request)
    return broker.metadata_waits.wait(STARTUP_METADATA_WAIT_MS,
                                      lambda: metadata.generation > 0, answer)


def _metadata(broker, ctx, request: m.MetadataRequest) -> m.MetadataResponse:
    metadata = broker.metadata_cache
    authz = ctx.authz
    auto_create = (request.allow_auto_topic_creation
                   and broker.config.auto_create_topics_enable)
    not_describable: list[str] = []
    not_creatable: list[str] = []
    if request.topics is None:
        allowed = [name for name in metadata.topics()
                   if authz.may(ApiKey.METADATA, ResourceType.TOPIC, name, log_denied=False)]
    else:
        asked = list(dict.fromkeys(request.topics))          # Kafka asks about a set
        may_describe, _ = authz.split(ApiKey.METADATA, ResourceType.TOPIC, asked)
        allowed = [name for name in asked if name in may_describe]
        not_describable = [name for name in asked if name not in may_describe]
        missing = [name for name in allowed if not metadata.contains(name)]
        if auto_create and missing and not authz.may(ApiKey.METADATA, ResourceType.CLUSTER,
                                                     log_denied=False):
            not_creatable = [name for name in missing
                             if not authz.allowed(AclOperation.CREATE, ResourceType.TOPIC, name)]
            allowed = [name for name in allowed if name not in not_creatable]

    topics = _topics_metadata(broker, allowed, auto_create)
    if request.include_topic_authorized_operations:
        topics = [t._replace(topic_authorized_operations=authz.authorized_operations(
            ResourceType.TOPIC, t.name)) for t in topics]
    topics += [m.MetadataTopic(_TOPIC_DENIED, name, [], is_internal=name in INTERNAL_TOPICS)
               for name in not_creatable]
    topics += [m.MetadataTopic(_TOPIC_DENIED, name, []) for name in not_describable]
    cluster_operations = NOT_REQUESTED
    if request.include_cluster_authorized_operations:
        cluster_operations = authz.cluster_authorized_operations()
    return m.MetadataResponse(brokers=metadata.broker_list(ctx.listener),
                              cluster_id=broker.cluster_id,
                              controller_id=metadata.controller_id, topics=topics,
                              cluster_authorized_operations=cluster_operations)


def _topics_metadata(broker, names: list[str], auto_create: bool) -> list[m.MetadataTopic]:
    """Each topic as the cache knows it; a missing one is auto-created when allowed (answering
    LEADER_NOT_AVAILABLE until the controller has made it), else UNKNOWN_TOPIC_OR_PARTITION."""
    metadata = broker.metadata_cache
    topics, to_create = [], []
    for name in names:
        internal = name in INTERNAL_TOPICS
        try:
            validate_topic_name(name)
        except KafkaError as exc:
            topics.append(m.MetadataTopic(code_of(exc), name, [], is_internal=internal))
            continue
        if metadata.contains(name):
            topics.append(metadata.topic_metadata(name)._replace(is_internal=internal))
        elif auto_create:
            to_create.append(name)
            topics.append(m.MetadataTopic(errors.LeaderNotAvailableError.code, name, [],
                                          is_internal=internal))
        else:
            topics.append(m.MetadataTopic(errors.UnknownTopicOrPartitionError.code, name, [],
                                          is_internal=internal))
    for name in to_create:
        auto_create_topic(broker, name)
    return topics


def auto_create_topic(broker, name: str) -> None:
    """Write the topic's assignment to ZooKeeper (num.partitions, default.replication.factor
    capped at the live brokers); the controller does the rest. Fire and forget: the client asks
    again on LEADER_NOT_AVAILABLE."""
    config = broker.config
    live = sorted(broker.metadata_cache.brokers)
    if not live:
        return
    rf = min(config.default_replication_factor, len(live))
    try:
        assignment = assign_replicas(config.num_partitions, rf, live)
    except KafkaError as exc:
        log.warning("cannot auto-create topic %s: %s", name, exc)
        return
    log.info("auto-creating topic %s with %d partition(s), replication factor %d", name,
             config.num_partitions, rf)
    d = broker.deferred_zk.create_topic(name, assignment, {})
    d.addErrback(lambda f: f.trap(errors.TopicAlreadyExistsError) and None)
    d.addErrback(lambda f: log.warning("auto-create of %s failed: %s", name, f.value))
