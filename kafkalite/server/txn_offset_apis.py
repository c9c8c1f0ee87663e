"""TxnOffsetCommit (KIP-98, KIP-447): a transactional producer's consumed offsets, handed to the
group coordinator, which keeps them pending until the transaction's marker
(coordinator/txn_offsets.py).

Authorization is Kafka 2.8's (``KafkaApis.handleTxnOffsetCommitRequest``): Write on the
transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition), then Read on
the group (else GROUP_AUTHORIZATION_FAILED for every partition), then per topic Read (else
TOPIC_AUTHORIZATION_FAILED for its partitions); a partition the metadata cache does not know
answers UNKNOWN_TOPIC_OR_PARTITION, and the rest go to the coordinator, whose COORDINATOR_* and
fencing errors come back per partition as for OffsetCommit. The producer id itself is not
checked here (Kafka: implied by the transactional id); the converter maps
COORDINATOR_LOAD_IN_PROGRESS to COORDINATOR_NOT_AVAILABLE below v2 as Kafka does.
"""

from __future__ import annotations

from kafkalite import errors
from kafkalite.coordinator.types import OffsetAndMetadata
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ResourceType
from kafkalite.server.group_apis import GROUP_DENIED, NOT_AVAILABLE, coordinator_of, then

__all__ = ["handle_txn_offset_commit"]

_TXN_ID_DENIED = errors.TransactionalIdAuthorizationFailedError.code
_TOPIC_DENIED = errors.TopicAuthorizationFailedError.code
_UNKNOWN_PARTITION = errors.UnknownTopicOrPartitionError.code


def handle_txn_offset_commit(broker, ctx, request: m.TxnOffsetCommitRequest):
    authz = ctx.authz
    if not authz.may(ApiKey.TXN_OFFSET_COMMIT, ResourceType.TRANSACTIONAL_ID,
                     request.transactional_id):
        return request.error_response(_TXN_ID_DENIED)
    if not authz.may(ApiKey.TXN_OFFSET_COMMIT, ResourceType.GROUP, request.group_id):
        return request.error_response(GROUP_DENIED)
    allowed, _ = authz.split(ApiKey.TXN_OFFSET_COMMIT, ResourceType.TOPIC,
                             {t.name for t in request.topics})
    cache = broker.metadata_cache
    codes: dict[tuple[str, int], int | None] = {}      # None: the coordinator answers
    offsets = {}
    for t in request.topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if t.name not in allowed:
                codes[tp] = _TOPIC_DENIED
            elif not cache.contains_partition(*tp):
                codes[tp] = _UNKNOWN_PARTITION
            else:
                codes[tp] = None
                # the coordinator stamps the commit time (KafkaApis.convertTxnOffsets)
                offsets[tp] = OffsetAndMetadata(p.committed_offset, p.committed_leader_epoch,
                                                p.committed_metadata or "")

    def answer(results):
        topics: dict[str, list] = {}
        for (topic, partition), code in codes.items():
            if code is None:
                code = results.get((topic, partition), errors.UnknownServerError.code)
            topics.setdefault(topic, []).append(m.TxnOffsetCommitResponsePartition(partition,
                                                                                   code))
        return m.TxnOffsetCommitResponse(topics=[
            m.TxnOffsetCommitResponseTopic(topic, partitions)
            for topic, partitions in topics.items()])
    coordinator = coordinator_of(broker)
    if not offsets:
        return answer({})
    if coordinator is None:
        return answer(dict.fromkeys(offsets, NOT_AVAILABLE))
    return then(coordinator.commit_txn_offsets, request.transactional_id, request.group_id,
                request.producer_id, request.producer_epoch, request.generation_id,
                request.member_id, request.group_instance_id, offsets, convert=answer)
