"""The transaction converters (protocol/kafka/convert/transactions.py) and Fetch's aborted
transactions (convert/data.py), alone: every version Kafka 2.8 has and kio ships round-trips
through kio's real encoder and decoder, Kafka's per-version answer quirks (PRODUCER_FENCED below
v2, TxnOffsetCommit v0-1's COORDINATOR_NOT_AVAILABLE) land on the wire, and no converter answers
with a key that no version of its response has (``entities.build`` would drop it silently).

The versions come from ``kio_range`` with Kafka 2.8's maxima, not from the API table, so these
tests hold before the handler owners add the table's rows."""

import pytest

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka import codec
from kafkalite.protocol.kafka.convert import transactions as convert
from kafkalite.protocol.kafka.convert.data import FETCH
from kafkalite.protocol.kafka.convert.metadata import INIT_PRODUCER_ID
from kafkalite.protocol.kafka.entities import unknown_keys
from kafkalite.protocol.kafka.versions import kio_range
from kafkalite.server.data_values import FetchResult
from test_protocol_messages import RESPONSE_SAMPLES

#: Kafka 2.8's highest version of each API (its ApiVersions answer)
KAFKA_28_MAX = {ApiKey.ADD_PARTITIONS_TO_TXN: 3, ApiKey.ADD_OFFSETS_TO_TXN: 3,
                ApiKey.END_TXN: 3, ApiKey.WRITE_TXN_MARKERS: 1, ApiKey.TXN_OFFSET_COMMIT: 3}
CONVERTERS = {ApiKey.ADD_PARTITIONS_TO_TXN: convert.ADD_PARTITIONS_TO_TXN,
              ApiKey.ADD_OFFSETS_TO_TXN: convert.ADD_OFFSETS_TO_TXN,
              ApiKey.END_TXN: convert.END_TXN,
              ApiKey.WRITE_TXN_MARKERS: convert.WRITE_TXN_MARKERS,
              ApiKey.TXN_OFFSET_COMMIT: convert.TXN_OFFSET_COMMIT}
FENCED = errors.ProducerFencedError.code
BAD_EPOCH = errors.InvalidProducerEpochError.code


def _versions(api_key):
    low, high = kio_range(api_key, KAFKA_28_MAX[api_key])
    return range(low, high + 1)


def _request(api_key, version, values):
    """The model request the converter makes of ``values`` as the broker decodes them."""
    payload = codec.encode_request(api_key, version, 5, "test", values)
    header, entity = codec.decode_request(payload)
    assert (header.api_key, header.api_version) == (api_key, version)
    return CONVERTERS[api_key].request(entity, version)


def _response(api_key, model, version, converter=None):
    """The kio entity a client decodes from the converter's answer."""
    converter = converter or CONVERTERS[api_key]
    payload = codec.encode_response(api_key, version, 1, converter.response(model, version))
    correlation_id, entity = codec.decode_response(api_key, version, payload)
    assert correlation_id == 1
    return entity


def test_kio_ships_kafka_2_8s_versions():
    assert {int(k): (kio_range(k, v)) for k, v in KAFKA_28_MAX.items()} == {
        24: (0, 3), 25: (0, 3), 26: (0, 3), 27: (1, 1), 28: (0, 3)}


def test_fenced_code():
    assert [convert.fenced_code(FENCED, v, 2) for v in range(4)] == [BAD_EPOCH, BAD_EPOCH,
                                                                      FENCED, FENCED]
    assert convert.fenced_code(FENCED, 3, 4) == BAD_EPOCH
    assert convert.fenced_code(errors.ConcurrentTransactionsError.code, 0, 2) == 51


@pytest.mark.parametrize("version", range(*kio_range(ApiKey.INIT_PRODUCER_ID, 4)))
def test_init_producer_id_answers_old_clients_invalid_producer_epoch(version):
    fenced = _response(ApiKey.INIT_PRODUCER_ID, m.InitProducerIdResponse(error_code=FENCED),
                       version, converter=INIT_PRODUCER_ID)
    assert fenced.error_code == BAD_EPOCH          # v4 (the range's end) knows PRODUCER_FENCED
    assert _response(ApiKey.INIT_PRODUCER_ID, m.InitProducerIdResponse(error_code=FENCED), 4,
                     converter=INIT_PRODUCER_ID).error_code == FENCED


# --- AddPartitionsToTxn ---------------------------------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.ADD_PARTITIONS_TO_TXN))
def test_add_partitions_to_txn(version):
    request = _request(24, version, {
        "v3_and_below_transactional_id": "tx", "v3_and_below_producer_id": 2**40,
        "v3_and_below_producer_epoch": 3,
        "v3_and_below_topics": [{"name": "t", "partitions": [0, 2]},
                                {"name": "u", "partitions": []}]})
    assert request == m.AddPartitionsToTxnRequest(
        transactional_id="tx", producer_id=2**40, producer_epoch=3,
        topics=[m.AddPartitionsToTxnTopic("t", [0, 2]), m.AddPartitionsToTxnTopic("u", [])])
    answer = _response(24, m.AddPartitionsToTxnResponse(throttle_time_ms=4, results=[
        m.AddPartitionsToTxnTopicResult("t", [m.AddPartitionsToTxnPartitionResult(0, 0),
                                              m.AddPartitionsToTxnPartitionResult(2, FENCED)]),
        m.AddPartitionsToTxnTopicResult("u", [])]), version)
    assert answer.throttle_time.total_seconds() == 0.004
    assert [(t.name, [(p.partition_index, p.partition_error_code) for p in t.results_by_partition])
            for t in answer.results_by_topic_v3_and_below] == [
        ("t", [(0, 0), (2, FENCED if version >= 2 else BAD_EPOCH)]), ("u", [])]


def test_add_partitions_error_response_answers_each_partition_once():
    request = m.AddPartitionsToTxnRequest(
        transactional_id="tx", producer_id=1, producer_epoch=0,
        topics=[m.AddPartitionsToTxnTopic("t", [0, 1]), m.AddPartitionsToTxnTopic("t", [1, 2])])
    answer = request.error_response(errors.TransactionalIdAuthorizationFailedError.code)
    assert answer.results == [m.AddPartitionsToTxnTopicResult(
        "t", [m.AddPartitionsToTxnPartitionResult(p, 53) for p in (0, 1, 2)])]


# --- AddOffsetsToTxn, EndTxn ----------------------------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.ADD_OFFSETS_TO_TXN))
def test_add_offsets_to_txn(version):
    request = _request(25, version, {"transactional_id": "tx", "producer_id": 7,
                                     "producer_epoch": 1, "group_id": "g"})
    assert request == m.AddOffsetsToTxnRequest(transactional_id="tx", producer_id=7,
                                               producer_epoch=1, group_id="g")
    ok = _response(25, m.AddOffsetsToTxnResponse(throttle_time_ms=2), version)
    assert (ok.throttle_time.total_seconds(), ok.error_code) == (0.002, 0)
    fenced = _response(25, m.AddOffsetsToTxnResponse(error_code=FENCED), version)
    assert fenced.error_code == (FENCED if version >= 2 else BAD_EPOCH)
    busy = _response(25, request.error_response(errors.ConcurrentTransactionsError.code),
                     version)
    assert busy.error_code == 51


@pytest.mark.parametrize("version", _versions(ApiKey.END_TXN))
@pytest.mark.parametrize("committed", [True, False])
def test_end_txn(version, committed):
    request = _request(26, version, {"transactional_id": "tx", "producer_id": 2**40,
                                     "producer_epoch": 9, "committed": committed})
    assert request == m.EndTxnRequest(transactional_id="tx", producer_id=2**40,
                                      producer_epoch=9, committed=committed)
    assert type(request.committed) is bool
    fenced = _response(26, m.EndTxnResponse(throttle_time_ms=1, error_code=FENCED), version)
    assert fenced.error_code == (FENCED if version >= 2 else BAD_EPOCH)
    state = _response(26, m.EndTxnResponse(error_code=errors.InvalidTxnStateError.code), version)
    assert state.error_code == 48


# --- WriteTxnMarkers ------------------------------------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.WRITE_TXN_MARKERS))
def test_write_txn_markers(version):
    request = _request(27, version, {"markers": [
        {"producer_id": 2**40, "producer_epoch": 3, "transaction_result": True,
         "topics": [{"name": "t", "partition_indexes": [0, 1]},
                    {"name": "__consumer_offsets", "partition_indexes": [12]}],
         "coordinator_epoch": 5},
        {"producer_id": 8, "producer_epoch": 0, "transaction_result": False, "topics": [],
         "coordinator_epoch": 0}]})
    assert request == m.WriteTxnMarkersRequest(markers=[
        m.WritableTxnMarker(2**40, 3, True, [m.WritableTxnMarkerTopic("t", [0, 1]),
                                             m.WritableTxnMarkerTopic("__consumer_offsets",
                                                                      [12])], 5),
        m.WritableTxnMarker(8, 0, False, [], 0)])
    answer = _response(27, request.error_response(errors.NotLeaderForPartitionError.code), version)
    assert [(x.producer_id, [(t.name, [(p.partition_index, p.error_code) for p in t.partitions])
                             for t in x.topics]) for x in answer.markers] == [
        (2**40, [("t", [(0, 6), (1, 6)]), ("__consumer_offsets", [(12, 6)])]), (8, [])]


# --- TxnOffsetCommit ------------------------------------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.TXN_OFFSET_COMMIT))
def test_txn_offset_commit_request(version):
    request = _request(28, version, {
        "transactional_id": "tx", "group_id": "g", "producer_id": 7, "producer_epoch": 2,
        "generation_id": 4, "member_id": "m-1", "group_instance_id": "i-1",
        "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": 42, "committed_leader_epoch": 3,
             "committed_metadata": "md"},
            {"partition_index": 1, "committed_offset": 0, "committed_leader_epoch": -1,
             "committed_metadata": None}]}]})
    kip_447 = version >= 3          # the generation, member and instance ids
    assert request == m.TxnOffsetCommitRequest(
        transactional_id="tx", group_id="g", producer_id=7, producer_epoch=2,
        generation_id=4 if kip_447 else -1, member_id="m-1" if kip_447 else "",
        group_instance_id="i-1" if kip_447 else None,
        topics=[m.TxnOffsetCommitRequestTopic("t", [
            m.TxnOffsetCommitRequestPartition(0, 42, 3 if version >= 2 else -1, "md"),
            m.TxnOffsetCommitRequestPartition(1, 0, -1, None)])])


@pytest.mark.parametrize("version", _versions(ApiKey.TXN_OFFSET_COMMIT))
def test_txn_offset_commit_response(version):
    loading = errors.CoordinatorLoadInProgressError.code
    answer = _response(28, m.TxnOffsetCommitResponse(throttle_time_ms=3, topics=[
        m.TxnOffsetCommitResponseTopic("t", [
            m.TxnOffsetCommitResponsePartition(0, 0),
            m.TxnOffsetCommitResponsePartition(1, loading),
            m.TxnOffsetCommitResponsePartition(2, errors.IllegalGenerationError.code)])]),
        version)
    assert answer.throttle_time.total_seconds() == 0.003
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions])
            for t in answer.topics] == [
        ("t", [(0, 0), (1, loading if version >= 2 else 15), (2, 22)])]


# --- Fetch's aborted transactions -----------------------------------------------------------------

def _fetched(aborted, version):
    model = m.FetchResponse(responses=[m.FetchTopicResponse("t", [
        m.FetchPartitionResponse(0, *FetchResult(0, 10, 8, 0, b"", aborted))])])
    answer = _response(ApiKey.FETCH, model, version, converter=FETCH)
    (partition,) = answer.responses[0].partitions
    assert (partition.high_watermark, partition.last_stable_offset) == (10, 8)
    return partition.aborted_transactions


@pytest.mark.parametrize("version", [4, 11])
def test_fetch_aborted_transactions(version):
    assert _fetched(None, version) is None                    # read_uncommitted: null
    assert _fetched([], version) == ()                        # read_committed, none aborted
    aborted = _fetched([m.FetchAbortedTransaction(7, 2), (2**40, 5)], version)
    assert [(a.producer_id, a.first_offset) for a in aborted] == [(7, 2), (2**40, 5)]


# --- every answer's keys are fields of some version (as test_kafka_convert_keys) ------------------

@pytest.mark.parametrize("api_key", sorted(CONVERTERS), ids=lambda k: ApiKey(k).name)
def test_response_keys_are_fields_of_some_version(api_key):
    samples = [r for r in RESPONSE_SAMPLES if r.API_KEY == api_key]
    assert samples
    for sample in samples:
        unknown_everywhere = None
        for version in _versions(api_key):
            values = CONVERTERS[api_key].response(sample, version)
            unknown = unknown_keys(codec.response_class(api_key, version), values)
            unknown_everywhere = unknown if unknown_everywhere is None else (
                unknown_everywhere & unknown)
        assert not unknown_everywhere


def test_fetch_aborted_transactions_key_is_a_field():
    sample = next(r for r in RESPONSE_SAMPLES if r.API_KEY == ApiKey.FETCH
                  and r.responses[0].partitions[0].aborted_transactions)
    for version in (4, 11, 12):
        values = FETCH.response(sample, version)
        unknown = unknown_keys(codec.response_class(ApiKey.FETCH, version), values)
        assert "responses[].partitions[].aborted_transactions" not in unknown
        assert values["responses"][0]["partitions"][0]["aborted_transactions"] == [
            {"producer_id": 7, "first_offset": 2}, {"producer_id": 2**40, "first_offset": 5}]
