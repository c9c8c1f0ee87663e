"""InitProducerId for idempotent producers: a new producer id from the broker's block (claimed in
ZooKeeper, ``KafkaBroker.allocate_producer_id``), epoch 0 (Kafka 2.8's handleInitProducerIdRequest
with no transactional id).

A request with a transactional id goes to the transaction coordinator
(``txn_apis.handle_init_producer_id_transactional``).
"""

from __future__ import annotations

from kafkalite.errors import ClusterAuthorizationFailedError, InvalidRequestError
from kafkalite.protocol import messages as m
from kafkalite.server.txn_apis import handle_init_producer_id_transactional

__all__ = ["handle_init_producer_id"]

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


def handle_init_producer_id(broker, ctx, request: m.InitProducerIdRequest):
    if request.transactional_id is not None:
        return handle_init_producer_id_transactional(broker, ctx, request)
    # KIP-360: the producer's old id and epoch come together or not at all
    if (request.producer_id == NO_PRODUCER_ID) != (request.producer_epoch == NO_PRODUCER_EPOCH):
        return request.error_response(
            InvalidRequestError.code,
            f"producer id {request.producer_id} and epoch {request.producer_epoch}: both or "
            f"neither must be given")
    if not ctx.authz.may_write_idempotently():
        return request.error_response(
            ClusterAuthorizationFailedError.code,
            f"{ctx.principal} may not write idempotently: needs IdempotentWrite on the cluster "
            "or Write on a topic")
    # without a transactional id, Kafka hands out a new id whatever the producer had
    return broker.allocate_producer_id().addCallback(
        lambda producer_id: m.InitProducerIdResponse(producer_id=producer_id, producer_epoch=0))
