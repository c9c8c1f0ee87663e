"""The delegation token converters (protocol/kafka/convert/delegation_tokens.py), alone: every
version the API table advertises reads requests into the model and writes the model's answers
that kio encodes and a client decodes."""

from __future__ import annotations

import struct

import pytest

from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka import codec
from kafkalite.protocol.kafka.convert import delegation_tokens as convert
from kafkalite.protocol.kafka.entities import millis
from kafkalite.server.api_table import TABLE

HMAC = bytes(range(64))


def _versions(api_key):
    low, high = TABLE[api_key].kafka_versions
    return list(range(low, high + 1))


def _request(api_key: int, version: int, body: dict):
    return codec.decode_request(codec.encode_request(api_key, version, 7, "test", body))[1]


def _round_trip(api_key: int, version: int, values: dict):
    return codec.decode_response(api_key, version,
                                 codec.encode_response(api_key, version, 7, values))[1]


def _encoded(api_key: int, version: int, values: dict) -> bytes:
    """The response's bytes (kio cannot read back the -1 timestamps Kafka sends on errors,
    so those are checked on the wire)."""
    return codec.encode_response(api_key, version, 7, values)


def _ms(value) -> int:
    """A kio timestamp (datetime or None) in milliseconds, -1 for None."""
    return -1 if value is None else round(value.timestamp() * 1000)


def test_the_four_apis_are_advertised_from_version_1_to_kafka_28s_2():
    for key in (38, 39, 40, 41):
        assert TABLE[key].kafka_versions == (1, 2)


@pytest.mark.parametrize("version", _versions(ApiKey.CREATE_DELEGATION_TOKEN))
def test_create(version):
    entity = _request(38, version, {"renewers": [{"principal_type": "User",
                                                  "principal_name": "bob"}],
                                    "max_lifetime": -1})
    assert convert.CREATE_DELEGATION_TOKEN.request(entity, version) == \
        m.CreateDelegationTokenRequest(renewers=[m.TokenPrincipal("User", "bob")],
                                       max_lifetime_ms=-1)
    answer = m.CreateDelegationTokenResponse(
        principal_type="User", principal_name="alice", issue_timestamp_ms=1_700_000_000_000,
        expiry_timestamp_ms=1_700_086_400_000, max_timestamp_ms=1_700_604_800_000,
        token_id="tok", hmac=HMAC)
    got = _round_trip(38, version, convert.CREATE_DELEGATION_TOKEN.response(answer, version))
    assert (int(got.error_code), got.principal_type, got.principal_name, got.token_id,
            bytes(got.hmac)) == (0, "User", "alice", "tok", HMAC)
    assert [_ms(got.issue_timestamp), _ms(got.expiry_timestamp), _ms(got.max_timestamp)] == [
        1_700_000_000_000, 1_700_086_400_000, 1_700_604_800_000]


@pytest.mark.parametrize("version", _versions(ApiKey.CREATE_DELEGATION_TOKEN))
def test_create_refused_keeps_kafkas_minus_one(version):
    answer = m.CreateDelegationTokenResponse(error_code=64, principal_name="ANONYMOUS")
    wire = _encoded(38, version, convert.CREATE_DELEGATION_TOKEN.response(answer, version))
    assert struct.pack(">h", 64) in wire
    assert b"ANONYMOUS" + struct.pack(">qqq", -1, -1, -1) in wire


@pytest.mark.parametrize("version", _versions(ApiKey.RENEW_DELEGATION_TOKEN))
def test_renew(version):
    entity = _request(39, version, {"hmac": HMAC, "renew_period": 3_600_000})
    assert convert.RENEW_DELEGATION_TOKEN.request(entity, version) == \
        m.RenewDelegationTokenRequest(hmac=HMAC, renew_period_ms=3_600_000)
    got = _round_trip(39, version, convert.RENEW_DELEGATION_TOKEN.response(
        m.RenewDelegationTokenResponse(expiry_timestamp_ms=1_700_003_600_000), version))
    assert (int(got.error_code), _ms(got.expiry_timestamp)) == (0, 1_700_003_600_000)


@pytest.mark.parametrize("version", _versions(ApiKey.EXPIRE_DELEGATION_TOKEN))
def test_expire(version):
    entity = _request(40, version, {"hmac": HMAC, "expiry_time_period": -1})
    assert convert.EXPIRE_DELEGATION_TOKEN.request(entity, version) == \
        m.ExpireDelegationTokenRequest(hmac=HMAC, expiry_time_period_ms=-1)
    wire = _encoded(40, version, convert.EXPIRE_DELEGATION_TOKEN.response(
        m.ExpireDelegationTokenResponse(error_code=62), version))
    assert struct.pack(">hq", 62, -1) in wire
    got = _round_trip(40, version, convert.EXPIRE_DELEGATION_TOKEN.response(
        m.ExpireDelegationTokenResponse(expiry_timestamp_ms=5_000), version))
    assert (int(got.error_code), _ms(got.expiry_timestamp)) == (0, 5_000)


@pytest.mark.parametrize("version", _versions(ApiKey.DESCRIBE_DELEGATION_TOKEN))
@pytest.mark.parametrize("owners", [None, [], [("User", "alice")]])
def test_describe(version, owners):
    body = {"owners": None if owners is None else [
        {"principal_type": t, "principal_name": n} for t, n in owners]}
    entity = _request(41, version, body)
    assert convert.DESCRIBE_DELEGATION_TOKEN.request(entity, version) == \
        m.DescribeDelegationTokenRequest(
            owners=None if owners is None else [m.TokenPrincipal(*o) for o in owners])
    token = m.DescribedToken("User", "alice", 1_000, 2_000, 3_000, "tok", HMAC,
                             [m.TokenPrincipal("User", "bob")])
    got = _round_trip(41, version, convert.DESCRIBE_DELEGATION_TOKEN.response(
        m.DescribeDelegationTokenResponse(tokens=[token]), version))
    [t] = got.tokens
    assert (t.principal_type, t.principal_name, t.issue_timestamp, t.expiry_timestamp,
            t.max_timestamp, t.token_id, bytes(t.hmac)) == ("User", "alice", 1_000, 2_000,
                                                            3_000, "tok", HMAC)
    assert [(r.principal_type, r.principal_name) for r in t.renewers] == [("User", "bob")]


def test_millis_reads_kios_negative_durations():
    entity = _request(39, 2, {"hmac": b"", "renew_period": -1})
    assert millis(entity.renew_period) == -1
