"""The DescribeConfigs, AlterConfigs and IncrementalAlterConfigs converters
(protocol/kafka/convert/configs.py), alone: every version the API table advertises reads
requests into the model and writes the model's answers that kio encodes and a client decodes."""

from __future__ import annotations

import pytest

from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka import codec
from kafkalite.protocol.kafka.convert import configs as convert

from kafka_wire import advertised_versions as _versions, response_round_trip as _round_trip

TOPIC, BROKER, LOGGER = 2, 4, 8


def _request(api_key: int, version: int, body: dict):
    return codec.decode_request(codec.encode_request(api_key, version, 7, "test", body))[1]


# --- DescribeConfigs -------------------------------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.DESCRIBE_CONFIGS))
def test_describe_configs_request(version):
    entity = _request(32, version, {"resources": [
        {"resource_type": TOPIC, "resource_name": "t", "configuration_keys": ["retention.ms"]},
        {"resource_type": BROKER, "resource_name": "1", "configuration_keys": None}],
        "include_synonyms": True, "include_documentation": True})
    request = convert.DESCRIBE_CONFIGS.request(entity, version)
    assert request.resources == [m.DescribeConfigsResource(TOPIC, "t", ["retention.ms"]),
                                 m.DescribeConfigsResource(BROKER, "1", None)]
    assert request.include_synonyms is True
    assert request.include_documentation is (version >= 3)     # asked for from v3


DESCRIBED = m.DescribeConfigsResponse(results=[
    m.DescribeConfigsResult(0, None, TOPIC, "t", [
        m.DescribeConfigsEntry("retention.ms", "1000", False, False, False, 1,
                               [m.DescribeConfigsSynonym("retention.ms", "1000", 1),
                                m.DescribeConfigsSynonym("log.retention.hours", "168", 5)],
                               5, "How long to keep records."),
        m.DescribeConfigsEntry("cleanup.policy", "delete", False, True, False, 5, [], 7, None)]),
    m.DescribeConfigsResult(29, "Topic authorization failed.", TOPIC, "secret", [])])


@pytest.mark.parametrize("version", _versions(ApiKey.DESCRIBE_CONFIGS))
def test_describe_configs_response(version):
    answer = _round_trip(32, version, convert.DESCRIBE_CONFIGS.response(DESCRIBED, version))
    ok, refused = answer.results
    assert (refused.error_code, refused.error_message, refused.resource_name,
            list(refused.configs)) == (29, "Topic authorization failed.", "secret", [])
    retention, policy = ok.configs
    assert (retention.name, retention.value, retention.config_source) == ("retention.ms",
                                                                          "1000", 1)
    assert [(s.name, s.value, s.source) for s in retention.synonyms] == [
        ("retention.ms", "1000", 1), ("log.retention.hours", "168", 5)]
    assert policy.config_source == 5
    if version >= 3:
        assert (retention.config_type, retention.documentation) == (5, "How long to keep "
                                                                    "records.")
        assert (policy.config_type, policy.documentation) == (7, None)


# --- AlterConfigs / IncrementalAlterConfigs --------------------------------------------------

@pytest.mark.parametrize("version", _versions(ApiKey.ALTER_CONFIGS))
def test_alter_configs_request(version):
    entity = _request(33, version, {"resources": [
        {"resource_type": TOPIC, "resource_name": "t",
         "configs": [{"name": "retention.ms", "value": "1000"},
                     {"name": "segment.ms", "value": None}]}], "validate_only": True})
    assert convert.ALTER_CONFIGS.request(entity, version) == m.AlterConfigsRequest(
        resources=[m.AlterConfigsResource(TOPIC, "t", [
            m.AlterableConfig("retention.ms", "1000"), m.AlterableConfig("segment.ms", None)])],
        validate_only=True)


@pytest.mark.parametrize("version", _versions(ApiKey.INCREMENTAL_ALTER_CONFIGS))
def test_incremental_alter_configs_request(version):
    entity = _request(44, version, {"resources": [
        {"resource_type": LOGGER, "resource_name": "1",
         "configs": [{"name": "kafkalite", "config_operation": 0, "value": "DEBUG"},
                     {"name": "kafkalite.x", "config_operation": 1, "value": None}]}],
        "validate_only": False})
    assert convert.INCREMENTAL_ALTER_CONFIGS.request(entity, version) == \
        m.IncrementalAlterConfigsRequest(resources=[m.IncrementalAlterConfigsResource(
            LOGGER, "1", [m.AlterableConfigOp("kafkalite", 0, "DEBUG"),
                          m.AlterableConfigOp("kafkalite.x", 1, None)])])


ALTERED = [m.AlterConfigsResourceResponse(0, None, TOPIC, "t"),
           m.AlterConfigsResourceResponse(31, None, BROKER, "1"),
           m.AlterConfigsResourceResponse(40, "Unknown topic config name: x", TOPIC, "u")]


@pytest.mark.parametrize("api_key,converter,response_cls", [
    (33, convert.ALTER_CONFIGS, m.AlterConfigsResponse),
    (44, convert.INCREMENTAL_ALTER_CONFIGS, m.IncrementalAlterConfigsResponse)])
def test_alter_configs_responses(api_key, converter, response_cls):
    for version in _versions(api_key):
        answer = _round_trip(api_key, version,
                             converter.response(response_cls(responses=ALTERED), version))
        assert [(r.error_code, r.error_message, r.resource_type, r.resource_name)
                for r in answer.responses] == [tuple(r) for r in ALTERED]
