"""A group's committed offsets, for both protocols: OffsetCommit, OffsetFetch and OffsetDelete
(the membership APIs are in ``group_apis``).

Authorization is Kafka 2.8's (``KafkaApis.handleOffset*Request``), per partition: without the
group's operation (Read to commit, Describe to fetch, Delete to delete) the request is refused
(GROUP_AUTHORIZATION_FAILED: every partition's error for a commit, the top-level error for a
fetch or a delete); then each topic the client may not Read (commit, delete) or Describe (fetch)
answers TOPIC_AUTHORIZATION_FAILED for its partitions, a partition the metadata cache does not
know UNKNOWN_TOPIC_OR_PARTITION (commit, delete: nothing is stored for topics that never were),
and the rest is served. Fetching every partition (no topics named) leaves out the topics the
client may not Describe.
"""

from __future__ import annotations

from kafkalite import errors
from kafkalite.coordinator.types import OffsetAndMetadata
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ResourceType
from kafkalite.server.group_apis import GROUP_DENIED, NOT_AVAILABLE, coordinator_of, then

__all__ = ["handle_offset_commit", "handle_offset_fetch", "handle_offset_delete"]

_TOPIC_DENIED = errors.TopicAuthorizationFailedError.code
_UNKNOWN_PARTITION = errors.UnknownTopicOrPartitionError.code
_PENDING = None      # a partition the coordinator answers for


def _by_topic(codes: dict, entry) -> list[tuple[str, list]]:
    """``[(topic, [entry(partition, code), ...])]`` of ``{(topic, partition): code}``, in the
    dict's order."""
    topics: dict[str, list] = {}
    for (topic, partition), code in codes.items():
        topics.setdefault(topic, []).append(entry(partition, code))
    return list(topics.items())


def _screen(broker, ctx, api_key: int, partitions) -> dict:
    """``{(topic, partition): error code or _PENDING}`` in the request's order: the refused
    topics' and unknown partitions' errors, _PENDING for the partitions to serve."""
    allowed, _ = ctx.authz.split(api_key, ResourceType.TOPIC, {t for t, _ in partitions})
    cache = broker.metadata_cache
    codes = {}
    for tp in partitions:
        if tp[0] not in allowed:
            codes[tp] = _TOPIC_DENIED
        elif not cache.contains_partition(*tp):
            codes[tp] = _UNKNOWN_PARTITION
        else:
            codes[tp] = _PENDING
    return codes


def handle_offset_commit(broker, ctx, request: m.OffsetCommitRequest):
    if not ctx.authz.may(ApiKey.OFFSET_COMMIT, ResourceType.GROUP, request.group_id):
        return request.error_response(GROUP_DENIED)
    codes = _screen(broker, ctx, ApiKey.OFFSET_COMMIT,
                    [(t.topic, p.partition) for t in request.topics for p in t.partitions])
    offsets = {}     # the coordinator stamps the commit time
    for t in request.topics:
        for p in t.partitions:
            if codes[(t.topic, p.partition)] is _PENDING:
                offsets[(t.topic, p.partition)] = OffsetAndMetadata(
                    p.committed_offset, p.committed_leader_epoch, p.committed_metadata or "")

    def answer(results):
        merged = {tp: results.get(tp, errors.UnknownServerError.code) if code is _PENDING
                  else code for tp, code in codes.items()}
        return m.OffsetCommitResponse(topics=[
            m.OffsetCommitTopicResponse(topic, partitions)
            for topic, partitions in _by_topic(merged, m.OffsetCommitPartitionResponse)])
    coordinator = coordinator_of(broker)
    if coordinator is None or not offsets:
        return answer(dict.fromkeys(offsets, NOT_AVAILABLE))
    return then(coordinator.commit_offsets, request.group_id, request.generation_id,
                request.member_id, request.group_instance_id, request.retention_time_ms,
                offsets, convert=answer)


def _fetched(partition: int, found) -> m.OffsetFetchPartitionResponse:
    if found is None:
        return m.OffsetFetchPartitionResponse(partition, -1, -1, "", errors.NONE)
    return m.OffsetFetchPartitionResponse(partition, found.offset, found.leader_epoch,
                                          found.metadata, found.error_code)


def handle_offset_fetch(broker, ctx, request: m.OffsetFetchRequest):
    """A coordinator error answers as the request's error response (Kafka's getErrorResponse:
    the Kafka converter keeps per-partition errors only for v1, as Kafka does). v7's
    ``require_stable`` goes to the coordinator: UNSTABLE_OFFSET_COMMIT per partition."""
    authz = ctx.authz
    if not authz.may(ApiKey.OFFSET_FETCH, ResourceType.GROUP, request.group_id):
        return request.error_response(GROUP_DENIED)
    coordinator = coordinator_of(broker)
    if coordinator is None:
        return request.error_response(NOT_AVAILABLE)
    if request.topics is None:
        def answer_all(result):
            code, found = result
            if code:
                return request.error_response(code)
            visible, _ = authz.split(ApiKey.OFFSET_FETCH, ResourceType.TOPIC,
                                     {t for t, _ in found})
            shown = {tp: found[tp] for tp in sorted(found) if tp[0] in visible}
            return m.OffsetFetchResponse(topics=[
                m.OffsetFetchTopicResponse(topic, partitions)
                for topic, partitions in _by_topic(shown, _fetched)])
        return then(coordinator.fetch_offsets, request.group_id, None, request.require_stable,
                    convert=answer_all)

    partitions = [(t.topic, p) for t in request.topics for p in t.partitions]
    visible, _ = authz.split(ApiKey.OFFSET_FETCH, ResourceType.TOPIC, {t for t, _ in partitions})
    wanted = [tp for tp in dict.fromkeys(partitions) if tp[0] in visible]

    def answer(result):
        code, found = result
        if code:
            return request.error_response(code)
        entries = {tp: (_fetched(tp[1], found.get(tp)) if tp[0] in visible else
                        m.OffsetFetchPartitionResponse(tp[1], -1, -1, "", _TOPIC_DENIED))
                   for tp in partitions}
        return m.OffsetFetchResponse(topics=[
            m.OffsetFetchTopicResponse(topic, partitions)
            for topic, partitions in _by_topic(entries, lambda _partition, entry: entry)])
    return then(coordinator.fetch_offsets, request.group_id, wanted, request.require_stable,
                convert=answer)


def handle_offset_delete(broker, ctx, request: m.OffsetDeleteRequest):
    """A group error (refused, unknown, not empty, ...) answers as the request's error
    response, with no partitions (Kafka's)."""
    if not ctx.authz.may(ApiKey.OFFSET_DELETE, ResourceType.GROUP, request.group_id):
        return request.error_response(GROUP_DENIED)
    coordinator = coordinator_of(broker)
    if coordinator is None:
        return request.error_response(NOT_AVAILABLE)
    codes = _screen(broker, ctx, ApiKey.OFFSET_DELETE,
                    [(t.topic, p) for t in request.topics for p in t.partitions])
    deletable = [tp for tp, code in codes.items() if code is _PENDING]

    def answer(result):
        code, results = result
        if code:
            return request.error_response(code)
        merged = {tp: results.get(tp, errors.NONE) if c is _PENDING else c
                  for tp, c in codes.items()}
        return m.OffsetDeleteResponse(topics=[
            m.OffsetDeleteTopicResponse(topic, partitions)
            for topic, partitions in _by_topic(merged, m.OffsetDeletePartitionResponse)])
    # asked even with nothing to delete: the group's own errors still answer (Kafka's)
    return then(coordinator.delete_offsets, request.group_id, deletable, convert=answer)
