"""protocol.kafka.produce_response: the struct-written Produce response is byte for byte what
kio writes through the converter, for every version, on generated answers; and it steps aside
(None) where the generic path must write."""

import random

import pytest

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka import codec as kio_codec
from kafkalite.protocol.kafka.produce_response import (MAX_VERSION, MIN_VERSION,
                                                         encode_produce_response)
from kafkalite.server.api_table import TABLE

CODES = [0, errors.NotLeaderForPartitionError.code, errors.InvalidRecordError.code,
         errors.MessageTooLargeError.code, errors.UnknownTopicOrPartitionError.code,
         errors.TopicAuthorizationFailedError.code, errors.NotEnoughReplicasError.code]


def _generic(version: int, correlation_id: int, response: m.ProduceResponse) -> bytes:
    values = TABLE[ApiKey.PRODUCE].kafka.response(response, version)
    return kio_codec.encode_response(ApiKey.PRODUCE, version, correlation_id, values)


def _answer(rng: random.Random) -> m.ProduceResponse:
    def partition() -> m.ProducePartitionResponse:
        record_errors = [m.ProduceRecordError(rng.randrange(1000),
                                              rng.choice([None, "", "bad record", "é✓"]))
                         for _ in range(rng.choice([0, 0, 1, 3]))]
        return m.ProducePartitionResponse(
            rng.choice(CODES), rng.choice([None, "refused", "ünïcode"]),
            rng.choice([-1, 0, rng.randrange(2**40)]),
            rng.choice([-1, 0, 1_700_000_000_000 + rng.randrange(10**6)]),
            rng.choice([-1, 0, rng.randrange(2**33)]), record_errors)
    topics = {rng.choice(["t", "lat-0a1b", "ü-topic", "x" * 200]) + str(n):
              {rng.randrange(2**20): partition() for _ in range(rng.randrange(0, 4))}
              for n in range(rng.randrange(0, 4))}
    return m.ProduceResponse(responses=topics, throttle_time_ms=rng.choice([0, 5, 2**31 - 1]))


@pytest.mark.parametrize("version", range(MIN_VERSION, MAX_VERSION + 1))
def test_the_same_bytes_as_kio_for_every_version(version):
    rng = random.Random(version)
    for case in range(150):
        response = _answer(rng)
        correlation_id = rng.choice([0, 7, 2**31 - 1])
        assert encode_produce_response(version, correlation_id, response) == \
            _generic(version, correlation_id, response), (version, case, response)


def test_the_broker_s_common_answer():
    response = m.ProduceResponse(responses={"lat": {0: m.ProducePartitionResponse(0, None, 42)}})
    for version in range(MIN_VERSION, MAX_VERSION + 1):
        assert encode_produce_response(version, 3, response) == _generic(version, 3, response)


def test_steps_aside_for_the_generic_path():
    response = m.ProduceResponse(responses={"t": {0: m.ProducePartitionResponse(0)}})
    assert encode_produce_response(MAX_VERSION + 1, 1, response) is None
    assert encode_produce_response(MIN_VERSION - 1, 1, response) is None
    assert encode_produce_response(3, 1, m.FetchResponse()) is None
    too_big = m.ProduceResponse(responses={"t": {2**31: m.ProducePartitionResponse(0)}})
    assert encode_produce_response(3, 1, too_big) is None
