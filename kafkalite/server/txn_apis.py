"""The transaction coordinator's APIs, for both protocols (Kafka 2.8's KafkaApis
handleInitProducerIdRequest with a transactional id, handleAddPartitionToTxnRequest,
handleAddOffsetsToTxnRequest, handleEndTxnRequest), over ``broker.txn_coordinator``.

ACLs as Kafka's: Write on the TransactionalId (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED) for
all four; AddPartitionsToTxn also Write on each topic (internal topics are never authorized
there: a client adds ``__consumer_offsets`` through AddOffsetsToTxn), AddOffsetsToTxn Read on
the group. An AddPartitionsToTxn with any refused or unknown partition adds none: those are
answered with their error, the others OPERATION_NOT_ATTEMPTED.

PRODUCER_FENCED goes to old clients as INVALID_PRODUCER_EPOCH in the Kafka converters.
"""

from __future__ import annotations

from twisted.internet import defer

from kafkalite import errors
from kafkalite.coordinator.types import OFFSETS_TOPIC
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ResourceType
from kafkalite.txn.state_store import TRANSACTION_STATE_TOPIC

__all__ = ["handle_init_producer_id_transactional", "handle_add_partitions_to_txn",
           "handle_add_offsets_to_txn", "handle_end_txn"]

TXN_ID_DENIED = errors.TransactionalIdAuthorizationFailedError.code
GROUP_DENIED = errors.GroupAuthorizationFailedError.code
TOPIC_DENIED = errors.TopicAuthorizationFailedError.code
UNKNOWN_PARTITION = errors.UnknownTopicOrPartitionError.code
NOT_ATTEMPTED = errors.OperationNotAttemptedError.code
NOT_AVAILABLE = errors.CoordinatorNotAvailableError.code
INVALID_REQUEST = errors.InvalidRequestError.code
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
_INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})


def _coordinator(broker):
    return getattr(broker, "txn_coordinator", None)


def _may_write_txn_id(ctx, api_key: int, transactional_id: str) -> bool:
    return ctx.authz.may(api_key, ResourceType.TRANSACTIONAL_ID, transactional_id)


def handle_init_producer_id_transactional(broker, ctx, request: m.InitProducerIdRequest):
    """InitProducerId with a transactional id (``producer_id_apis`` routes it here)."""
    if not _may_write_txn_id(ctx, ApiKey.INIT_PRODUCER_ID, request.transactional_id):
        return request.error_response(TXN_ID_DENIED)
    # KIP-360: the producer's old id and epoch come together or not at all
    no_id = request.producer_id == NO_PRODUCER_ID
    if no_id != (request.producer_epoch == NO_PRODUCER_EPOCH):
        return request.error_response(INVALID_REQUEST)
    expected = None if no_id else (request.producer_id, request.producer_epoch)
    coordinator = _coordinator(broker)
    if coordinator is None:
        return request.error_response(NOT_AVAILABLE)
    d = coordinator.init_producer_id(request.transactional_id, request.transaction_timeout_ms,
                                     expected)
    return d.addCallback(lambda r: m.InitProducerIdResponse(
        error_code=r.error_code, producer_id=r.producer_id, producer_epoch=r.producer_epoch))


def handle_add_partitions_to_txn(broker, ctx, request: m.AddPartitionsToTxnRequest):
    api = ApiKey.ADD_PARTITIONS_TO_TXN
    if not _may_write_txn_id(ctx, api, request.transactional_id):
        return request.error_response(TXN_ID_DENIED)
    # each distinct partition once, in the request's order (a topic may come twice)
    wanted: dict[tuple[str, int], None] = {}
    for topic in request.topics:
        for partition in topic.partitions:
            wanted[(topic.name, partition)] = None
    names = {name for name, _ in wanted if name not in _INTERNAL_TOPICS}
    allowed, _refused = ctx.authz.split(api, ResourceType.TOPIC, names)
    metadata = broker.metadata_cache
    failed: dict[tuple[str, int], int] = {}
    for name, partition in wanted:
        if name not in allowed:
            failed[(name, partition)] = TOPIC_DENIED
        elif not metadata.contains_partition(name, partition):
            failed[(name, partition)] = UNKNOWN_PARTITION
    if failed:
        return _add_partitions_response(
            {tp: failed.get(tp, NOT_ATTEMPTED) for tp in wanted})
    coordinator = _coordinator(broker)
    if coordinator is None:
        return request.error_response(NOT_AVAILABLE)
    d = defer.maybeDeferred(coordinator.add_partitions, request.transactional_id,
                            request.producer_id, request.producer_epoch, list(wanted))
    return d.addCallback(lambda code: _add_partitions_response(dict.fromkeys(wanted, code)))


def _add_partitions_response(codes: dict[tuple[str, int], int]) -> m.AddPartitionsToTxnResponse:
    by_topic: dict[str, list[m.AddPartitionsToTxnPartitionResult]] = {}
    for (name, partition), code in codes.items():
        by_topic.setdefault(name, []).append(m.AddPartitionsToTxnPartitionResult(partition, code))
    return m.AddPartitionsToTxnResponse(results=[
        m.AddPartitionsToTxnTopicResult(name, results) for name, results in by_topic.items()])


def handle_add_offsets_to_txn(broker, ctx, request: m.AddOffsetsToTxnRequest):
    api = ApiKey.ADD_OFFSETS_TO_TXN
    if not _may_write_txn_id(ctx, api, request.transactional_id):
        return m.AddOffsetsToTxnResponse(error_code=TXN_ID_DENIED)
    if not ctx.authz.may(api, ResourceType.GROUP, request.group_id):
        return m.AddOffsetsToTxnResponse(error_code=GROUP_DENIED)
    coordinator = _coordinator(broker)
    offsets_store = getattr(broker, "offsets_store", None)
    if coordinator is None or offsets_store is None:
        return m.AddOffsetsToTxnResponse(error_code=NOT_AVAILABLE)
    # the group's __consumer_offsets partition joins the transaction (its TxnOffsetCommit
    # then gets the markers)
    partition = (OFFSETS_TOPIC, offsets_store.partition_for(request.group_id))
    d = defer.maybeDeferred(coordinator.add_partitions, request.transactional_id,
                            request.producer_id, request.producer_epoch, [partition])
    return d.addCallback(lambda code: m.AddOffsetsToTxnResponse(error_code=code))


def handle_end_txn(broker, ctx, request: m.EndTxnRequest):
    if not _may_write_txn_id(ctx, ApiKey.END_TXN, request.transactional_id):
        return m.EndTxnResponse(error_code=TXN_ID_DENIED)
    coordinator = _coordinator(broker)
    if coordinator is None:
        return m.EndTxnResponse(error_code=NOT_AVAILABLE)
    d = defer.maybeDeferred(coordinator.end_txn, request.transactional_id, request.producer_id,
                            request.producer_epoch, request.committed)
    return d.addCallback(lambda code: m.EndTxnResponse(error_code=code))
