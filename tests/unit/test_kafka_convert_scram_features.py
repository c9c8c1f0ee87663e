"""The DescribeUserScramCredentials, AlterUserScramCredentials, UpdateFeatures and ApiVersions
(KIP-584 fields) converters, alone: every version the API table advertises reads requests into
the model and writes the model's answers that kio encodes and a client decodes."""

from __future__ import annotations

import pytest
from kafka_wire import advertised_versions as _versions
from kafka_wire import request_entity as _request
from kafka_wire import response_round_trip as _round_trip

from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka import codec
from kafkalite.protocol.kafka.convert import cluster, features, scram
from kafkalite.server.api_table import TABLE


def test_kafka_28_versions_are_advertised():
    assert [TABLE[k].kafka_versions for k in (50, 51, 57)] == [(0, 0)] * 3


# --- DescribeUserScramCredentials ----------------------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS))
@pytest.mark.parametrize("users,expected", [
    ([{"name": "alice"}, {"name": ""}], ["alice", ""]), (None, None), ([], [])])
def test_describe_request(version, users, expected):
    entity = _request(50, version, {"users": users})
    request = scram.DESCRIBE_USER_SCRAM_CREDENTIALS.request(entity, version)
    assert request == m.DescribeUserScramCredentialsRequest(users=expected)


@pytest.mark.parametrize("version", _versions(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS))
def test_describe_response(version):
    model = m.DescribeUserScramCredentialsResponse(results=[
        m.DescribeUserScramCredentialsResult("alice", 0, None, [
            m.ScramCredentialInfo(1, 8192), m.ScramCredentialInfo(2, 4096)]),
        m.DescribeUserScramCredentialsResult("bob", 91, "Attempt to describe a user credential "
                                                        "that does not exist: bob", [])])
    answer = _round_trip(50, version, scram.DESCRIBE_USER_SCRAM_CREDENTIALS.response(model,
                                                                                     version))
    assert (int(answer.error_code), answer.error_message) == (0, None)
    assert [(r.user, int(r.error_code), r.error_message,
             [(c.mechanism, c.iterations) for c in r.credential_infos])
            for r in answer.results] == [
        ("alice", 0, None, [(1, 8192), (2, 4096)]),
        ("bob", 91, "Attempt to describe a user credential that does not exist: bob", [])]
    refused = m.DescribeUserScramCredentialsRequest(users=["a"]).error_response(31)
    answer = _round_trip(50, version, scram.DESCRIBE_USER_SCRAM_CREDENTIALS.response(refused,
                                                                                     version))
    assert (int(answer.error_code), answer.error_message, answer.results) == (31, None, ())


# --- AlterUserScramCredentials -------------------------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.ALTER_USER_SCRAM_CREDENTIALS))
def test_alter_request(version):
    entity = _request(51, version, {
        "deletions": [{"name": "bob", "mechanism": 2}],
        "upsertions": [{"name": "alice", "mechanism": 1, "iterations": 8192,
                        "salt": b"0123456789abcdef", "salted_password": b"\x01" * 32}]})
    assert scram.ALTER_USER_SCRAM_CREDENTIALS.request(entity, version) == \
        m.AlterUserScramCredentialsRequest(
            deletions=[m.ScramCredentialDeletion("bob", 2)],
            upsertions=[m.ScramCredentialUpsertion("alice", 1, 8192, b"0123456789abcdef",
                                                   b"\x01" * 32)])


@pytest.mark.parametrize("version", _versions(ApiKey.ALTER_USER_SCRAM_CREDENTIALS))
def test_alter_response(version):
    model = m.AlterUserScramCredentialsResponse(results=[
        m.AlterUserScramCredentialsResult("alice", 0, None),
        m.AlterUserScramCredentialsResult("bob", 93, "Too few iterations")])
    answer = _round_trip(51, version, scram.ALTER_USER_SCRAM_CREDENTIALS.response(model,
                                                                                  version))
    assert [(r.user, int(r.error_code), r.error_message) for r in answer.results] == [
        ("alice", 0, None), ("bob", 93, "Too few iterations")]


def test_alter_error_response_names_each_user_once_sorted():
    request = m.AlterUserScramCredentialsRequest(
        deletions=[m.ScramCredentialDeletion("carol", 1), m.ScramCredentialDeletion("alice", 2)],
        upsertions=[m.ScramCredentialUpsertion("alice", 1, 4096, b"s", b"p")])
    assert request.error_response(41).results == [
        m.AlterUserScramCredentialsResult("alice", 41, None),
        m.AlterUserScramCredentialsResult("carol", 41, None)]


# --- UpdateFeatures ------------------------------------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.UPDATE_FEATURES))
def test_update_features_request(version):
    entity = _request(57, version, {"timeout": 5000, "feature_updates": [
        {"feature": "f", "max_version_level": 0, "allow_downgrade": True},
        {"feature": "g", "max_version_level": 2, "allow_downgrade": False}]})
    assert features.UPDATE_FEATURES.request(entity, version) == m.UpdateFeaturesRequest(
        timeout_ms=5000, feature_updates=[m.FeatureUpdate("f", 0, True),
                                          m.FeatureUpdate("g", 2, False)])


@pytest.mark.parametrize("version", _versions(ApiKey.UPDATE_FEATURES))
def test_update_features_response(version):
    model = m.UpdateFeaturesResponse(results=[
        m.UpdatableFeatureResult("f", 42, "Can not delete non-existing finalized feature.")])
    answer = _round_trip(57, version, features.UPDATE_FEATURES.response(model, version))
    assert (int(answer.error_code), answer.error_message) == (0, None)
    assert [(r.feature, int(r.error_code), r.error_message) for r in answer.results] == [
        ("f", 42, "Can not delete non-existing finalized feature.")]
    refused = m.UpdateFeaturesRequest().error_response(41, "not the controller")
    answer = _round_trip(57, version, features.UPDATE_FEATURES.response(refused, version))
    assert (int(answer.error_code), answer.error_message, answer.results) == (
        41, "not the controller", ())


# --- ApiVersions' features (v3) ------------------------------------------------------------------

def test_api_versions_v3_features():
    model = m.ApiVersionsResponse(api_versions=[m.ApiVersionRange(18, 0, 3)],
                                  supported_features=[m.SupportedFeature("f", 1, 2)],
                                  finalized_features_epoch=4,
                                  finalized_features=[m.FinalizedFeature("f", 1, 2)])
    answer = _round_trip(18, 3, cluster.API_VERSIONS.response(model, 3))
    assert [(f.name, f.min_version, f.max_version) for f in answer.supported_features] == [
        ("f", 1, 2)]
    assert answer.finalized_features_epoch == 4
    assert [(f.name, f.min_version_level, f.max_version_level)
            for f in answer.finalized_features] == [("f", 1, 2)]


def test_api_versions_without_features_sends_no_tagged_fields():
    """Kafka 2.8 before ``/feature`` is read: no features, epoch -1, none of the tags sent."""
    plain = m.ApiVersionsResponse(api_versions=[m.ApiVersionRange(18, 0, 3)])
    values = cluster.API_VERSIONS.response(plain, 3)
    without = dict(values)
    for key in ("supported_features", "finalized_features_epoch", "finalized_features"):
        without.pop(key)
    assert codec.encode_response(18, 3, 7, values) == codec.encode_response(18, 3, 7, without)
    answer = _round_trip(18, 3, values)
    assert (answer.finalized_features_epoch, answer.finalized_features) == (-1, ())


@pytest.mark.parametrize("version", [0, 1, 2])
def test_api_versions_before_v3_has_no_features(version):
    model = m.ApiVersionsResponse(api_versions=[m.ApiVersionRange(18, 0, 3)],
                                  finalized_features_epoch=0)
    answer = _round_trip(18, version, cluster.API_VERSIONS.response(model, version))
    assert [(k.api_key, k.min_version, k.max_version) for k in answer.api_keys] == [(18, 0, 3)]
