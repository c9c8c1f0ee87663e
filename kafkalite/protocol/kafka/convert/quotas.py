"""DescribeClientQuotas (48) and AlterClientQuotas (49), KIP-546, between Kafka's protocol and the
model. Kafka 2.8 has versions 0 and 1 of both (1 is the flexible one)."""

from __future__ import annotations

from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka.convert import Converter

__all__ = ["DESCRIBE_CLIENT_QUOTAS", "ALTER_CLIENT_QUOTAS"]


def _parts_values(parts) -> list[dict]:
    return [{"entity_type": p.entity_type, "entity_name": p.entity_name} for p in parts]


def _describe_request(entity, version: int) -> m.DescribeClientQuotasRequest:
    return m.DescribeClientQuotasRequest(
        components=[m.QuotaFilterComponent(c.entity_type, int(c.match_type), c.match)
                    for c in entity.components],
        strict=bool(entity.strict))


def _describe_response(r: m.DescribeClientQuotasResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "error_code": r.error_code,
            "error_message": r.error_message,
            "entries": None if r.entries is None else [
                {"entity": _parts_values(e.entity),
                 "values": [{"key": v.key, "value": float(v.value)} for v in e.values]}
                for e in r.entries]}


DESCRIBE_CLIENT_QUOTAS = Converter(_describe_request, _describe_response)


def _alter_request(entity, version: int) -> m.AlterClientQuotasRequest:
    return m.AlterClientQuotasRequest(
        entries=[m.QuotaAlteration(
            [m.QuotaEntityPart(p.entity_type, p.entity_name) for p in e.entity],
            [m.QuotaOp(o.key, float(o.value), bool(o.remove)) for o in e.ops])
            for e in entity.entries],
        validate_only=bool(entity.validate_only))


ALTER_CLIENT_QUOTAS = Converter(
    _alter_request,
    lambda r, version: {"throttle_time": r.throttle_time_ms, "entries": [
        {"error_code": e.error_code, "error_message": e.error_message,
         "entity": _parts_values(e.entity)} for e in r.entries]})
