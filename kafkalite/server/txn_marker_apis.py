"""WriteTxnMarkers: a transaction coordinator asks this broker to end a transaction in the
partitions it leads, as Kafka 2.8's ``KafkaApis.handleWriteTxnMarkersRequest``.

Needs ClusterAction on the cluster (only brokers send it; CLUSTER_AUTHORIZATION_FAILED for every
partition otherwise). For each marker, every partition this broker has no log of answers
UNKNOWN_TOPIC_OR_PARTITION; the others get one control batch each (COMMIT or ABORT, with the
marker's producer id/epoch and coordinator epoch), appended as the coordinator's write
(``origin="coordinator"``, acks=all, ``request.timeout.ms``), so each partition's answer is the
append's: NOT_LEADER_OR_FOLLOWER, INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED,
NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT, ... Once a marker is in a ``__consumer_offsets``
partition, the group coordinator applies (COMMIT) or drops (ABORT) the transaction's offsets
there. The answer comes when every marker's append is done.
"""

from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalite import errors
from kafkalite.coordinator.types import OFFSETS_TOPIC
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.record.control import build_control_batch
from kafkalite.server.producer_state import COORDINATOR

log = logging.getLogger(__name__)

__all__ = ["handle_write_txn_markers"]

_UNKNOWN = errors.UnknownTopicOrPartitionError.code


def handle_write_txn_markers(broker, ctx, request: m.WriteTxnMarkersRequest):
    ctx.authz.require_cluster(ApiKey.WRITE_TXN_MARKERS)
    # producer id -> {(topic, partition): error code}; markers of one producer id share an
    # entry, as Kafka's answer is keyed by producer id
    answers: dict[int, dict[tuple[str, int], int]] = {}
    pending = []
    for marker in request.markers:
        codes = answers.setdefault(marker.producer_id, {})
        entries = {}
        for topic in marker.topics:
            for partition in topic.partition_indexes:
                tp = (topic.name, partition)
                if tp in broker.replica_manager.partitions:
                    entries[tp] = build_control_batch(
                        marker.producer_id, marker.producer_epoch, marker.transaction_result,
                        marker.coordinator_epoch, broker.clock_ms())
                else:
                    codes[tp] = _UNKNOWN
        if entries:
            result = broker.replica_manager.append_records(
                broker.config.request_timeout_ms, -1, True, entries, origin=COORDINATOR)
            pending.append(defer.maybeDeferred(lambda r=result: r).addCallback(
                _appended, broker, marker, codes))
    if not pending:
        return _response(answers)
    return defer.gatherResults(pending, consumeErrors=True).addCallback(
        lambda _done: _response(answers))


def _appended(results: dict, broker, marker: m.WritableTxnMarker, codes: dict) -> None:
    for tp, result in results.items():
        codes[tp] = result.error_code
    offsets_partitions = {partition for (topic, partition), result in results.items()
                          if topic == OFFSETS_TOPIC and result.error_code == 0}
    if not offsets_partitions:
        return
    complete = getattr(broker.group_coordinator, "complete_txn_offsets", None)
    if complete is None:   # (until the group coordinator serves TxnOffsetCommit)
        return
    try:
        complete(marker.producer_id, offsets_partitions, marker.transaction_result)
    except Exception:  # noqa: BLE001 - as Kafka: those partitions answer UNKNOWN_SERVER_ERROR
        log.exception("applying the transactional offsets of producer %d failed",
                      marker.producer_id)
        for partition in offsets_partitions:
            codes[(OFFSETS_TOPIC, partition)] = errors.UnknownServerError.code


def _response(answers: dict) -> m.WriteTxnMarkersResponse:
    markers = []
    for producer_id, codes in answers.items():
        by_topic: dict[str, list] = {}
        for (topic, partition), code in codes.items():
            by_topic.setdefault(topic, []).append(
                m.WritableTxnMarkerPartitionResult(partition, code))
        markers.append(m.WritableTxnMarkerResult(producer_id, [
            m.WritableTxnMarkerTopicResult(topic, partitions)
            for topic, partitions in by_topic.items()]))
    return m.WriteTxnMarkersResponse(markers=markers)
