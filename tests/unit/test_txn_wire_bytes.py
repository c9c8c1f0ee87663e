"""The transaction APIs on Kafka's wire, byte for byte: each expected frame here is built by hand
from Kafka 2.8.2's JSON message schemas (``clients/src/main/resources/common/message/``), not by
kio, and kafkalite's whole Kafka path (model -> converter -> kio's encoder, or kio's decoder ->
converter -> model) must produce or read exactly those bytes.

Layout reminders (Kafka's generated serializers): non-flexible versions write strings with an
int16 length and arrays with an int32 count (-1: null); flexible versions (AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn, TxnOffsetCommit v3+, WriteTxnMarkers v1+) write compact strings and
arrays (unsigned varint length + 1, 0: null) and end every struct with its tagged fields (here
none: one 0 byte). Request header v1 is key, version, correlation id and an int16-length client
id; v2 adds tagged fields. Response header v0 is the correlation id; v1 adds tagged fields."""

import struct

import pytest

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka import codec
from kafkalite.protocol.kafka.convert import transactions as convert
from kafkalite.protocol.kafka.convert.data import FETCH
from kafkalite.server.data_values import FetchResult

CORRELATION = 0x01020304
CLIENT = "producer-1"
NO_TAGS = b"\x00"


# --- the hand encoder: one function per Kafka primitive ---------------------------------------

def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def boolean(v):
    return b"\x01" if v else b"\x00"


def uvarint(v):
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def string(s):
    return b"\xff\xff" if s is None else i16(len(s.encode())) + s.encode()


def compact_string(s):
    return b"\x00" if s is None else uvarint(len(s.encode()) + 1) + s.encode()


def array(items):
    return b"\xff\xff\xff\xff" if items is None else i32(len(items)) + b"".join(items)


def compact_array(items):
    return b"\x00" if items is None else uvarint(len(items) + 1) + b"".join(items)


def request_header(api_key, version, flexible):
    head = i16(api_key) + i16(version) + i32(CORRELATION) + string(CLIENT)
    return head + NO_TAGS if flexible else head


def response_header(flexible):
    return i32(CORRELATION) + (NO_TAGS if flexible else b"")


def _encoded(api_key, version, converter, model):
    return codec.encode_response(api_key, version, CORRELATION,
                                 converter.response(model, version))


def _decoded(api_key, version, converter, frame):
    header, entity = codec.decode_request(frame)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        api_key, version, CORRELATION, CLIENT)
    return converter.request(entity, version)


# --- AddPartitionsToTxn (24) ----------------------------------------------------------------------

ADD_PARTITIONS = m.AddPartitionsToTxnRequest(
    transactional_id="tx-1", producer_id=0x0102030405, producer_epoch=7,
    topics=[m.AddPartitionsToTxnTopic("orders", [0, 3])])
ADD_PARTITIONS_ANSWER = m.AddPartitionsToTxnResponse(throttle_time_ms=0, results=[
    m.AddPartitionsToTxnTopicResult("orders", [
        m.AddPartitionsToTxnPartitionResult(0, 0),
        m.AddPartitionsToTxnPartitionResult(3, errors.ProducerFencedError.code)])])


def test_add_partitions_to_txn_v0():
    frame = (request_header(24, 0, False) + string("tx-1") + i64(0x0102030405) + i16(7)
             + array([string("orders") + array([i32(0), i32(3)])]))
    assert _decoded(24, 0, convert.ADD_PARTITIONS_TO_TXN, frame) == ADD_PARTITIONS
    # v0 knows no PRODUCER_FENCED: INVALID_PRODUCER_EPOCH (47) instead
    assert _encoded(24, 0, convert.ADD_PARTITIONS_TO_TXN, ADD_PARTITIONS_ANSWER) == (
        response_header(False) + i32(0)
        + array([string("orders") + array([i32(0) + i16(0), i32(3) + i16(47)])]))


def test_add_partitions_to_txn_v3():
    frame = (request_header(24, 3, True) + compact_string("tx-1") + i64(0x0102030405) + i16(7)
             + compact_array([compact_string("orders") + compact_array([i32(0), i32(3)])
                              + NO_TAGS]) + NO_TAGS)
    assert _decoded(24, 3, convert.ADD_PARTITIONS_TO_TXN, frame) == ADD_PARTITIONS
    assert _encoded(24, 3, convert.ADD_PARTITIONS_TO_TXN, ADD_PARTITIONS_ANSWER) == (
        response_header(True) + i32(0)
        + compact_array([compact_string("orders")
                         + compact_array([i32(0) + i16(0) + NO_TAGS, i32(3) + i16(90) + NO_TAGS])
                         + NO_TAGS]) + NO_TAGS)


# --- AddOffsetsToTxn (25), EndTxn (26) ------------------------------------------------------------

def test_add_offsets_to_txn_v3():
    frame = (request_header(25, 3, True) + compact_string("tx-1") + i64(42) + i16(1)
             + compact_string("group-a") + NO_TAGS)
    assert _decoded(25, 3, convert.ADD_OFFSETS_TO_TXN, frame) == m.AddOffsetsToTxnRequest(
        transactional_id="tx-1", producer_id=42, producer_epoch=1, group_id="group-a")
    answer = m.AddOffsetsToTxnResponse(throttle_time_ms=5,
                                       error_code=errors.ConcurrentTransactionsError.code)
    assert _encoded(25, 3, convert.ADD_OFFSETS_TO_TXN, answer) == (
        response_header(True) + i32(5) + i16(51) + NO_TAGS)


@pytest.mark.parametrize("committed", [True, False])


def test_end_txn_v3(committed):
    frame = (request_header(26, 3, True) + compact_string("tx-1") + i64(42) + i16(1)
             + boolean(committed) + NO_TAGS)
    assert _decoded(26, 3, convert.END_TXN, frame) == m.EndTxnRequest(
        transactional_id="tx-1", producer_id=42, producer_epoch=1, committed=committed)
    answer = m.EndTxnResponse(error_code=errors.ProducerFencedError.code)
    assert _encoded(26, 3, convert.END_TXN, answer) == (
        response_header(True) + i32(0) + i16(90) + NO_TAGS)


def test_end_txn_v1_answers_invalid_producer_epoch_for_fenced():
    frame = request_header(26, 1, False) + string("tx-1") + i64(42) + i16(1) + boolean(True)
    assert _decoded(26, 1, convert.END_TXN, frame).committed is True
    answer = m.EndTxnResponse(error_code=errors.ProducerFencedError.code)
    assert _encoded(26, 1, convert.END_TXN, answer) == response_header(False) + i32(0) + i16(47)


# --- WriteTxnMarkers (27) -------------------------------------------------------------------------

def test_write_txn_markers_v1():
    marker = (i64(42) + i16(1) + boolean(True)
              + compact_array([compact_string("orders") + compact_array([i32(0), i32(3)])
                               + NO_TAGS,
                               compact_string("__consumer_offsets") + compact_array([i32(17)])
                               + NO_TAGS])
              + i32(9) + NO_TAGS)
    frame = request_header(27, 1, True) + compact_array([marker]) + NO_TAGS
    request = _decoded(27, 1, convert.WRITE_TXN_MARKERS, frame)
    assert request == m.WriteTxnMarkersRequest(markers=[m.WritableTxnMarker(
        42, 1, True, [m.WritableTxnMarkerTopic("orders", [0, 3]),
                      m.WritableTxnMarkerTopic("__consumer_offsets", [17])], 9)])
    answer = m.WriteTxnMarkersResponse(markers=[m.WritableTxnMarkerResult(42, [
        m.WritableTxnMarkerTopicResult("orders", [m.WritableTxnMarkerPartitionResult(0, 0),
                                                  m.WritableTxnMarkerPartitionResult(3, 6)])])])
    assert _encoded(27, 1, convert.WRITE_TXN_MARKERS, answer) == (
        response_header(True)
        + compact_array([i64(42) + compact_array([
            compact_string("orders") + compact_array([i32(0) + i16(0) + NO_TAGS,
                                                      i32(3) + i16(6) + NO_TAGS]) + NO_TAGS])
            + NO_TAGS]) + NO_TAGS)


# --- TxnOffsetCommit (28) -------------------------------------------------------------------------

COMMIT_ANSWER = m.TxnOffsetCommitResponse(throttle_time_ms=0, topics=[
    m.TxnOffsetCommitResponseTopic("orders", [
        m.TxnOffsetCommitResponsePartition(0, 0),
        m.TxnOffsetCommitResponsePartition(3, errors.CoordinatorLoadInProgressError.code)])])


def test_txn_offset_commit_v0():
    frame = (request_header(28, 0, False) + string("tx-1") + string("group-a") + i64(42) + i16(1)
             + array([string("orders") + array([i32(0) + i64(100) + string(None),
                                                i32(3) + i64(7) + string("md")])]))
    assert _decoded(28, 0, convert.TXN_OFFSET_COMMIT, frame) == m.TxnOffsetCommitRequest(
        transactional_id="tx-1", group_id="group-a", producer_id=42, producer_epoch=1,
        topics=[m.TxnOffsetCommitRequestTopic("orders", [
            m.TxnOffsetCommitRequestPartition(0, 100, -1, None),
            m.TxnOffsetCommitRequestPartition(3, 7, -1, "md")])])
    # v0-1: COORDINATOR_LOAD_IN_PROGRESS (14) goes out as COORDINATOR_NOT_AVAILABLE (15)
    assert _encoded(28, 0, convert.TXN_OFFSET_COMMIT, COMMIT_ANSWER) == (
        response_header(False) + i32(0)
        + array([string("orders") + array([i32(0) + i16(0), i32(3) + i16(15)])]))


def test_txn_offset_commit_v3():
    frame = (request_header(28, 3, True) + compact_string("tx-1") + compact_string("group-a")
             + i64(42) + i16(1) + i32(5) + compact_string("member-1") + compact_string(None)
             + compact_array([compact_string("orders") + compact_array([
                 i32(0) + i64(100) + i32(4) + compact_string("") + NO_TAGS]) + NO_TAGS])
             + NO_TAGS)
    assert _decoded(28, 3, convert.TXN_OFFSET_COMMIT, frame) == m.TxnOffsetCommitRequest(
        transactional_id="tx-1", group_id="group-a", producer_id=42, producer_epoch=1,
        generation_id=5, member_id="member-1", group_instance_id=None,
        topics=[m.TxnOffsetCommitRequestTopic("orders", [
            m.TxnOffsetCommitRequestPartition(0, 100, 4, "")])])
    assert _encoded(28, 3, convert.TXN_OFFSET_COMMIT, COMMIT_ANSWER) == (
        response_header(True) + i32(0)
        + compact_array([compact_string("orders")
                         + compact_array([i32(0) + i16(0) + NO_TAGS, i32(3) + i16(14) + NO_TAGS])
                         + NO_TAGS]) + NO_TAGS)


# --- Fetch (1): aborted transactions --------------------------------------------------------------

RECORDS = b"\x00\x01\x02"


def _fetch_answer(aborted):
    return m.FetchResponse(responses=[m.FetchTopicResponse("orders", [
        m.FetchPartitionResponse(0, *FetchResult(0, 10, 8, 0, RECORDS, aborted))])])


@pytest.mark.parametrize("aborted", [None, [], [(42, 3)]], ids=["null", "empty", "one"])


def test_fetch_v4_aborted_transactions(aborted):
    wire = None if aborted is None else [i64(p) + i64(first) for p, first in aborted]
    assert _encoded(ApiKey.FETCH, 4, FETCH, _fetch_answer(aborted)) == (
        response_header(False) + i32(0)
        + array([string("orders") + array([
            i32(0) + i16(0) + i64(10) + i64(8) + array(wire) + i32(len(RECORDS)) + RECORDS])]))


def test_fetch_v11_aborted_transactions():
    partition = (i32(0) + i16(0) + i64(10) + i64(8) + i64(0)
                 + array([i64(42) + i64(3), i64(7) + i64(9)]) + i32(-1)
                 + i32(len(RECORDS)) + RECORDS)
    answer = _fetch_answer([m.FetchAbortedTransaction(42, 3), m.FetchAbortedTransaction(7, 9)])
    assert _encoded(ApiKey.FETCH, 11, FETCH, answer) == (
        response_header(False) + i32(0) + i16(0) + i32(0)
        + array([string("orders") + array([partition])]))
