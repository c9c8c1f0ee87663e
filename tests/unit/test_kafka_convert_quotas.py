"""The DescribeClientQuotas and AlterClientQuotas converters, alone: every version the API table
advertises reads requests into the model and writes the model's answers that kio encodes and a
client decodes."""

from __future__ import annotations

import pytest
from kafka_wire import advertised_versions as _versions
from kafka_wire import request_entity as _request
from kafka_wire import response_round_trip as _round_trip

from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka.convert import quotas
from kafkalite.server.api_table import TABLE


def test_kafka_28_versions_are_advertised():
    assert [TABLE[k].kafka_versions for k in (48, 49)] == [(0, 1)] * 2


@pytest.mark.parametrize("version", _versions(ApiKey.DESCRIBE_CLIENT_QUOTAS))
def test_describe_request(version):
    entity = _request(48, version, {"components": [
        {"entity_type": "user", "match_type": 0, "match": "alice"},
        {"entity_type": "client-id", "match_type": 1, "match": None},
        {"entity_type": "ip", "match_type": 2, "match": None}], "strict": True})
    assert quotas.DESCRIBE_CLIENT_QUOTAS.request(entity, version) == \
        m.DescribeClientQuotasRequest(components=[
            m.QuotaFilterComponent("user", 0, "alice"),
            m.QuotaFilterComponent("client-id", 1, None),
            m.QuotaFilterComponent("ip", 2, None)], strict=True)


@pytest.mark.parametrize("version", _versions(ApiKey.DESCRIBE_CLIENT_QUOTAS))
def test_describe_response(version):
    model = m.DescribeClientQuotasResponse(entries=[
        m.QuotaEntry([m.QuotaEntityPart("user", "alice"), m.QuotaEntityPart("client-id", None)],
                     [m.QuotaValue("producer_byte_rate", 1024.0),
                      m.QuotaValue("request_percentage", 12.5)])])
    answer = _round_trip(48, version, quotas.DESCRIBE_CLIENT_QUOTAS.response(model, version))
    assert (int(answer.error_code), answer.error_message) == (0, None)
    assert [([(e.entity_type, e.entity_name) for e in x.entity],
             [(v.key, v.value) for v in x.values]) for x in answer.entries] == [
        ([("user", "alice"), ("client-id", None)],
         [("producer_byte_rate", 1024.0), ("request_percentage", 12.5)])]
    refused = m.DescribeClientQuotasRequest().error_response(42, "Duplicate user filter "
                                                                 "component entity type")
    answer = _round_trip(48, version, quotas.DESCRIBE_CLIENT_QUOTAS.response(refused, version))
    assert (int(answer.error_code), answer.error_message, answer.entries) == (
        42, "Duplicate user filter component entity type", None)


@pytest.mark.parametrize("version", _versions(ApiKey.ALTER_CLIENT_QUOTAS))
def test_alter_request(version):
    entity = _request(49, version, {"entries": [{
        "entity": [{"entity_type": "user", "entity_name": None},
                   {"entity_type": "client-id", "entity_name": "c1"}],
        "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False},
                {"key": "consumer_byte_rate", "value": 0.0, "remove": True}]}],
        "validate_only": True})
    assert quotas.ALTER_CLIENT_QUOTAS.request(entity, version) == m.AlterClientQuotasRequest(
        entries=[m.QuotaAlteration(
            [m.QuotaEntityPart("user", None), m.QuotaEntityPart("client-id", "c1")],
            [m.QuotaOp("producer_byte_rate", 1024.0, False),
             m.QuotaOp("consumer_byte_rate", 0.0, True)])],
        validate_only=True)


@pytest.mark.parametrize("version", _versions(ApiKey.ALTER_CLIENT_QUOTAS))
def test_alter_response(version):
    request = m.AlterClientQuotasRequest(entries=[m.QuotaAlteration(
        [m.QuotaEntityPart("client-id", "c1")], [])])
    model = m.AlterClientQuotasResponse(entries=[
        m.QuotaAlterationResult(0, None, [m.QuotaEntityPart("client-id", "c1")]),
        m.QuotaAlterationResult(42, "Invalid configuration key x",
                                [m.QuotaEntityPart("user", None)])])
    answer = _round_trip(49, version, quotas.ALTER_CLIENT_QUOTAS.response(model, version))
    assert [(int(e.error_code), e.error_message,
             [(p.entity_type, p.entity_name) for p in e.entity]) for e in answer.entries] == [
        (0, None, [("client-id", "c1")]), (42, "Invalid configuration key x", [("user", None)])]
    refused = _round_trip(49, version, quotas.ALTER_CLIENT_QUOTAS.response(
        request.error_response(31), version))
    assert [(int(e.error_code), e.error_message) for e in refused.entries] == [
        (31, "Cluster authorization failed.")]
