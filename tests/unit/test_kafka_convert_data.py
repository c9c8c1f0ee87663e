"""The Produce and Fetch converters (protocol/kafka/convert/data.py), alone: every version Kafka
2.8 advertises round-trips through kio, the record bytes pass through as they are, and the
Kafka-only request fields land on the model as the handlers read them."""

import pytest

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka import codec
from kafkalite.protocol.kafka.convert.data import FETCH, PRODUCE
from kafkalite.record import build_batch
from kafkalite.server.api_table import TABLE

BATCH = build_batch([(1_700_000_000_000, b"k", b"v", None)])
PRODUCE_VERSIONS = range(TABLE[ApiKey.PRODUCE].kafka_versions[0],
                         TABLE[ApiKey.PRODUCE].kafka_versions[1] + 1)
# from v4 (message format v2); v0-v3 and their down-conversion: test_fetch_down_conversion.py
FETCH_VERSIONS = range(4, TABLE[ApiKey.FETCH].kafka_versions[1] + 1)


def test_the_table_advertises_kafka_2_8s_versions():
    assert TABLE[ApiKey.PRODUCE].kafka_versions[1] == 9
    assert TABLE[ApiKey.FETCH].kafka_versions[1] == 12


def _decoded_request(api_key, version, values):
    payload = codec.encode_request(api_key, version, 5, "test", values)
    _header, entity = codec.decode_request(payload)
    return entity


# --- Produce --------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
def test_produce_request_keeps_the_batch_bytes(version):
    entity = _decoded_request(ApiKey.PRODUCE, version, {
        "transactional_id": None, "acks": -1, "timeout": 1500,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": BATCH},
                                                        {"index": 3, "records": None}]}]})
    request = PRODUCE.request(entity, version)
    assert (request.acks, request.timeout_ms, request.transactional_id) == (-1, 1500, None)
    assert request.topic_data == {"t": {0: BATCH, 3: b""}}
    assert type(request.topic_data["t"][0]) is bytes


def test_a_negative_produce_timeout_means_do_not_wait():
    entity = _decoded_request(ApiKey.PRODUCE, 9, {
        "transactional_id": "tx", "acks": 1, "timeout": -1,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": BATCH}]}]})
    request = PRODUCE.request(entity, 9)
    assert (request.timeout_ms, request.transactional_id) == (0, "tx")


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
def test_produce_response_round_trips(version):
    model = m.ProduceResponse(responses={
        "t": {0: m.ProducePartitionResponse(0, None, 42, -1, 7),
              1: m.ProducePartitionResponse(errors.InvalidTimestampError.code, "bad timestamps",
                                            log_start_offset=0,
                                            record_errors=[m.ProduceRecordError(2, "too old")])},
        "u": {0: m.ProducePartitionResponse(errors.NotEnoughReplicasError.code,
                                            "kafkalite's own words")}})
    payload = codec.encode_response(ApiKey.PRODUCE, version, 1, PRODUCE.response(model, version))
    correlation_id, entity = codec.decode_response(ApiKey.PRODUCE, version, payload)
    assert correlation_id == 1
    t, u = entity.responses
    assert (t.name, u.name) == ("t", "u")
    ok, refused = t.partition_responses
    assert (ok.index, ok.error_code, ok.base_offset) == (0, 0, 42)
    if version >= 5:
        assert ok.log_start_offset == 7
    assert (refused.index, refused.error_code) == (1, errors.InvalidTimestampError.code)
    (no_message,) = u.partition_responses
    if version >= 8:   # KIP-467: a message only with record errors
        assert refused.error_message == "bad timestamps"
        assert [(e.batch_index, e.batch_index_error_message) for e in refused.record_errors] \
            == [(2, "too old")]
        assert no_message.error_message is None


# --- Fetch --------------------------------------------------------------------------------------

def _fetch_values(**extra):
    values = {"replica_id": 3, "max_wait": 250, "min_bytes": 1, "max_bytes": 1 << 20,
              "isolation_level": 1, "session_id": 0, "session_epoch": -1,
              "topics": [{"topic": "t", "partitions": [
                  {"partition": 0, "current_leader_epoch": 4, "fetch_offset": 10,
                   "log_start_offset": -1, "partition_max_bytes": 4096}]}],
              "forgotten_topics_data": [], "rack_id": ""}
    values.update(extra)
    return values


@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_fetch_request_fields(version):
    request = FETCH.request(_decoded_request(ApiKey.FETCH, version, _fetch_values()), version)
    assert request.replica_id == 3
    assert (request.max_wait_ms, request.min_bytes, request.max_bytes) == (250, 1, 1 << 20)
    assert request.isolation_level == 1
    (topic,) = request.topics
    (p,) = topic.partitions
    assert (topic.topic, p.partition, p.fetch_offset, p.partition_max_bytes) == ("t", 0, 10, 4096)
    assert p.current_leader_epoch == (4 if version >= 9 else -1)
    assert request.session_epoch == -1


@pytest.mark.parametrize("replica_id", [m.CONSUMER_REPLICA_ID, 0, 2])
def test_fetch_request_keeps_the_replica_id(replica_id):
    """A follower's fetch stays one: Kafka authorizes it with ClusterAction on the cluster
    (KafkaApis.handleFetchRequest), so turning it into a consumer's would let anyone with Read
    on the topics fetch as a follower."""
    request = FETCH.request(_decoded_request(ApiKey.FETCH, 4, _fetch_values(
        replica_id=replica_id)), 4)
    assert request.replica_id == replica_id


def test_fetch_request_carries_the_session_epoch():
    request = FETCH.request(_decoded_request(ApiKey.FETCH, 12, _fetch_values(
        session_id=17, session_epoch=3, max_wait=-5)), 12)
    assert (request.session_id, request.session_epoch, request.max_wait_ms) == (17, 3, 0)


@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_fetch_response_round_trips_the_records_untouched(version):
    model = m.FetchResponse(responses=[
        m.FetchTopicResponse("t", [m.FetchPartitionResponse(0, 0, 12, 12, 3, BATCH),
                                   m.FetchPartitionResponse(1, 0, 5, -1, 0, b"")]),
        m.FetchTopicResponse("secret", [m.FetchPartitionResponse(
            0, errors.TopicAuthorizationFailedError.code)])])
    payload = codec.encode_response(ApiKey.FETCH, version, 2, FETCH.response(model, version))
    correlation_id, entity = codec.decode_response(ApiKey.FETCH, version, payload)
    assert correlation_id == 2
    t, secret = entity.responses
    full, empty = t.partitions
    assert (full.partition_index, full.high_watermark) == (0, 12)
    if version >= 5:
        assert full.log_start_offset == 3
    assert bytes(full.records) == BATCH
    assert empty.last_stable_offset == 5          # unknown: the high watermark
    assert not empty.records
    assert secret.partitions[0].error_code == errors.TopicAuthorizationFailedError.code
    if version >= 7:
        assert (entity.error_code, entity.session_id) == (0, 0)


def test_fetch_session_refusal_round_trips():
    model = m.FetchResponse(error_code=errors.FetchSessionIdNotFoundError.code)
    payload = codec.encode_response(ApiKey.FETCH, 12, 3, FETCH.response(model, 12))
    _cid, entity = codec.decode_response(ApiKey.FETCH, 12, payload)
    assert entity.error_code == errors.FetchSessionIdNotFoundError.code
    assert entity.responses == ()
