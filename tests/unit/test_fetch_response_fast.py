"""protocol.kafka.fetch_response: the struct-written Fetch response is byte for byte what kio
writes through the converter, for every version it takes, on generated answers (aborted
transactions null, empty and listed; records empty, null and real batches; preferred read
replicas; errors); and it steps aside (None) where the generic path must write."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka import codec as kio_codec
from kafkalite.protocol.kafka.fetch_response import (MAX_VERSION, MIN_VERSION,
                                                       encode_fetch_response)
from kafkalite.server.api_table import TABLE

CODES = [0, errors.NotLeaderForPartitionError.code, errors.OffsetOutOfRangeError.code,
         errors.UnknownTopicOrPartitionError.code, errors.TopicAuthorizationFailedError.code,
         errors.FencedLeaderEpochError.code]


def _generic(version: int, correlation_id: int, response: m.FetchResponse) -> bytes:
    values = TABLE[ApiKey.FETCH].kafka.response(response, version)
    return kio_codec.encode_response(ApiKey.FETCH, version, correlation_id, values)


def _partition(rng: random.Random) -> m.FetchPartitionResponse:
    aborted = rng.choice([None, [], [m.FetchAbortedTransaction(rng.randrange(2**40),
                                                               rng.randrange(2**33))
                                     for _ in range(rng.randrange(1, 4))]])
    hw = rng.choice([-1, 0, rng.randrange(2**40)])
    return m.FetchPartitionResponse(
        rng.randrange(2**20), rng.choice(CODES), hw,
        rng.choice([-1, hw, max(hw - 3, 0)]), rng.choice([-1, 0, rng.randrange(2**33)]),
        rng.choice([b"", b"\x00" * 61, bytes(rng.randrange(256) for _ in range(300))]),
        aborted, rng.choice([-1, -1, 2, 7]))


def _answer(rng: random.Random) -> m.FetchResponse:
    topics = [m.FetchTopicResponse(rng.choice(["t", "lat-0a1b", "ü-topic", "x" * 200]) + str(n),
                                   [_partition(rng) for _ in range(rng.randrange(0, 4))])
              for n in range(rng.randrange(0, 4))]
    return m.FetchResponse(throttle_time_ms=rng.choice([0, 5, 2**31 - 1]),
                           error_code=rng.choice([0, 0, errors.FetchSessionIdNotFoundError.code]),
                           responses=topics)


@pytest.mark.parametrize("version", range(MIN_VERSION, MAX_VERSION + 1))
def test_the_same_bytes_as_kio_for_every_version(version):
    rng = random.Random(version)
    for case in range(150):
        response = _answer(rng)
        correlation_id = rng.choice([0, 7, 2**31 - 1])
        assert encode_fetch_response(version, correlation_id, response) == \
            _generic(version, correlation_id, response), (version, case, response)


@settings(max_examples=60, deadline=None)
@given(version=st.integers(MIN_VERSION, MAX_VERSION), records=st.binary(max_size=400),
       hw=st.integers(-1, 2**62), lso=st.integers(-1, 2**62), start=st.integers(-1, 2**62))
def test_any_offsets_and_records(version, records, hw, lso, start):
    response = m.FetchResponse(responses=[m.FetchTopicResponse("t", [
        m.FetchPartitionResponse(0, 0, hw, lso, start, records)])])
    assert encode_fetch_response(version, 1, response) == _generic(version, 1, response)


def test_records_given_as_a_memoryview_are_written_the_same():
    batch = bytes(range(200))

    def answer(records) -> m.FetchResponse:
        return m.FetchResponse(responses=[m.FetchTopicResponse("t", [
            m.FetchPartitionResponse(0, 0, 10, 10, 0, records)])])
    for version in range(MIN_VERSION, MAX_VERSION + 1):
        expected = _generic(version, 9, answer(batch))
        assert encode_fetch_response(version, 9, answer(batch)) == expected
        assert encode_fetch_response(version, 9, answer(memoryview(batch))) == expected


def test_steps_aside_for_the_generic_path():
    response = m.FetchResponse(responses=[m.FetchTopicResponse(
        "t", [m.FetchPartitionResponse(0, 0)])])
    assert encode_fetch_response(MAX_VERSION + 1, 1, response) is None
    assert encode_fetch_response(MIN_VERSION - 1, 1, response) is None
    assert encode_fetch_response(5, 1, m.ProduceResponse()) is None
    too_big = m.FetchResponse(responses=[m.FetchTopicResponse(
        "t", [m.FetchPartitionResponse(2**31, 0)])])
    assert encode_fetch_response(5, 1, too_big) is None
