"""The transaction APIs between Kafka's protocol and the model: AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn, WriteTxnMarkers and TxnOffsetCommit (KIP-98, KIP-447).

Kafka's per-version quirks live here, not in the handlers (``server.txn_apis``,
``server.txn_marker_apis``, ``server.txn_offset_apis``), as Kafka 2.8's ``KafkaApis`` applies
them to the answers:

* PRODUCER_FENCED (KIP-588) is new in AddPartitionsToTxn, AddOffsetsToTxn and EndTxn v2: older
  clients are answered INVALID_PRODUCER_EPOCH, which they handle the same way;
* TxnOffsetCommit v0-1 clients (0.11 to 2.0) may crash on COORDINATOR_LOAD_IN_PROGRESS
  (KAFKA-7296): they are answered COORDINATOR_NOT_AVAILABLE;
* TxnOffsetCommit carries a committed leader epoch from v2 and the group's generation, member
  id and group instance id from v3 (older versions take the model's defaults: -1, "", null).

kio follows the newest Kafka, whose AddPartitionsToTxn schema renamed the v0-3 fields
(``v3_and_below_*``, ``results_by_topic_v3_and_below``, ``partition_error_code``): the bytes of
v0-3 are Kafka 2.8's. kio ships WriteTxnMarkers from v1 only (Kafka 4.0 dropped v0, KIP-896), so
the table's range for it starts at v1.
"""

from __future__ import annotations

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka.convert import Converter

__all__ = ["ADD_PARTITIONS_TO_TXN", "ADD_OFFSETS_TO_TXN", "END_TXN", "WRITE_TXN_MARKERS",
           "TXN_OFFSET_COMMIT", "fenced_code"]

_PRODUCER_FENCED = errors.ProducerFencedError.code
_INVALID_PRODUCER_EPOCH = errors.InvalidProducerEpochError.code
_LOAD_IN_PROGRESS = errors.CoordinatorLoadInProgressError.code
_NOT_AVAILABLE = errors.CoordinatorNotAvailableError.code


def fenced_code(code: int, version: int, first_version: int) -> int:
    """``code`` as a client speaking ``version`` understands it: PRODUCER_FENCED becomes
    INVALID_PRODUCER_EPOCH below ``first_version``, the API's first version that has it."""
    if code == _PRODUCER_FENCED and version < first_version:
        return _INVALID_PRODUCER_EPOCH
    return code


# --- AddPartitionsToTxn ---------------------------------------------------------------------------

def _add_partitions_request(entity, version: int) -> m.AddPartitionsToTxnRequest:
    return m.AddPartitionsToTxnRequest(
        transactional_id=entity.v3_and_below_transactional_id,
        producer_id=entity.v3_and_below_producer_id,
        producer_epoch=entity.v3_and_below_producer_epoch,
        topics=[m.AddPartitionsToTxnTopic(t.name, list(t.partitions))
                for t in entity.v3_and_below_topics])


def _add_partitions_response(r: m.AddPartitionsToTxnResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "results_by_topic_v3_and_below": [
        {"name": t.name, "results_by_partition": [
            {"partition_index": p.partition_index,
             "partition_error_code": fenced_code(p.error_code, version, 2)}
            for p in t.results]}
        for t in r.results]}


ADD_PARTITIONS_TO_TXN = Converter(_add_partitions_request, _add_partitions_response)


# --- AddOffsetsToTxn, EndTxn ----------------------------------------------------------------------

ADD_OFFSETS_TO_TXN = Converter(
    lambda entity, version: m.AddOffsetsToTxnRequest(
        transactional_id=entity.transactional_id, producer_id=entity.producer_id,
        producer_epoch=entity.producer_epoch, group_id=entity.group_id),
    lambda r, version: {"throttle_time": r.throttle_time_ms,
                        "error_code": fenced_code(r.error_code, version, 2)})

END_TXN = Converter(
    lambda entity, version: m.EndTxnRequest(
        transactional_id=entity.transactional_id, producer_id=entity.producer_id,
        producer_epoch=entity.producer_epoch, committed=bool(entity.committed)),
    lambda r, version: {"throttle_time": r.throttle_time_ms,
                        "error_code": fenced_code(r.error_code, version, 2)})


# --- WriteTxnMarkers ------------------------------------------------------------------------------

def _write_markers_request(entity, version: int) -> m.WriteTxnMarkersRequest:
    return m.WriteTxnMarkersRequest(markers=[
        m.WritableTxnMarker(
            x.producer_id, x.producer_epoch, bool(x.transaction_result),
            [m.WritableTxnMarkerTopic(t.name, list(t.partition_indexes)) for t in x.topics],
            x.coordinator_epoch)
        for x in entity.markers])


def _write_markers_response(r: m.WriteTxnMarkersResponse, version: int) -> dict:
    return {"markers": [
        {"producer_id": x.producer_id, "topics": [
            {"name": t.name, "partitions": [
                {"partition_index": p.partition_index, "error_code": p.error_code}
                for p in t.partitions]}
            for t in x.topics]}
        for x in r.markers]}


WRITE_TXN_MARKERS = Converter(_write_markers_request, _write_markers_response)


# --- TxnOffsetCommit ------------------------------------------------------------------------------

def _txn_offset_commit_request(entity, version: int) -> m.TxnOffsetCommitRequest:
    return m.TxnOffsetCommitRequest(
        transactional_id=entity.transactional_id, group_id=entity.group_id,
        producer_id=entity.producer_id, producer_epoch=entity.producer_epoch,
        generation_id=getattr(entity, "generation_id", -1),
        member_id=getattr(entity, "member_id", ""),
        group_instance_id=getattr(entity, "group_instance_id", None),
        topics=[m.TxnOffsetCommitRequestTopic(t.name, [
            m.TxnOffsetCommitRequestPartition(
                p.partition_index, p.committed_offset,
                getattr(p, "committed_leader_epoch", -1), p.committed_metadata)
            for p in t.partitions]) for t in entity.topics])


def _txn_offset_commit_code(code: int, version: int) -> int:
    if code == _LOAD_IN_PROGRESS and version < 2:
        return _NOT_AVAILABLE
    return code


def _txn_offset_commit_response(r: m.TxnOffsetCommitResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "topics": [
        {"name": t.name, "partitions": [
            {"partition_index": p.partition_index,
             "error_code": _txn_offset_commit_code(p.error_code, version)}
            for p in t.partitions]}
        for t in r.topics]}


TXN_OFFSET_COMMIT = Converter(_txn_offset_commit_request, _txn_offset_commit_response)
