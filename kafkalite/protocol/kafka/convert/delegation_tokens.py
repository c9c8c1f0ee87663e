"""CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken and
DescribeDelegationToken between Kafka's protocol and the model (KIP-48). Durations and
timestamps are milliseconds in the model (kio's timedelta and datetime are made in
``entities``); Kafka's -1 ("no time", in error answers) stays -1."""

from __future__ import annotations

from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka.convert import Converter
from kafkalite.protocol.kafka.entities import millis, no_time

__all__ = ["CREATE_DELEGATION_TOKEN", "RENEW_DELEGATION_TOKEN", "EXPIRE_DELEGATION_TOKEN",
           "DESCRIBE_DELEGATION_TOKEN"]


def _principal(p) -> m.TokenPrincipal:
    return m.TokenPrincipal(p.principal_type, p.principal_name)


def _principal_values(p: m.TokenPrincipal) -> dict:
    return {"principal_type": p.principal_type, "principal_name": p.principal_name}


def _timestamp(ms: int):
    """The answers' timestamps are not nullable, yet Kafka sends -1 in its error answers."""
    return no_time(ms) if ms < 0 else ms


def _expiry_response(r, version: int) -> dict:
    return {"throttle_time": 0, "error_code": r.error_code,
            "expiry_timestamp": _timestamp(r.expiry_timestamp_ms)}


CREATE_DELEGATION_TOKEN = Converter(
    lambda entity, version: m.CreateDelegationTokenRequest(
        renewers=[_principal(p) for p in entity.renewers],
        max_lifetime_ms=millis(entity.max_lifetime)),
    lambda r, version: {
        "throttle_time": 0, "error_code": r.error_code, "principal_type": r.principal_type,
        "principal_name": r.principal_name, "issue_timestamp": _timestamp(r.issue_timestamp_ms),
        "expiry_timestamp": _timestamp(r.expiry_timestamp_ms),
        "max_timestamp": _timestamp(r.max_timestamp_ms),
        "token_id": r.token_id, "hmac": bytes(r.hmac)})

RENEW_DELEGATION_TOKEN = Converter(
    lambda entity, version: m.RenewDelegationTokenRequest(
        hmac=bytes(entity.hmac), renew_period_ms=millis(entity.renew_period)),
    _expiry_response)

EXPIRE_DELEGATION_TOKEN = Converter(
    lambda entity, version: m.ExpireDelegationTokenRequest(
        hmac=bytes(entity.hmac), expiry_time_period_ms=millis(entity.expiry_time_period)),
    _expiry_response)

DESCRIBE_DELEGATION_TOKEN = Converter(
    lambda entity, version: m.DescribeDelegationTokenRequest(
        owners=None if entity.owners is None else [_principal(p) for p in entity.owners]),
    lambda r, version: {"throttle_time": 0, "error_code": r.error_code, "tokens": [{
        "principal_type": t.principal_type, "principal_name": t.principal_name,
        "issue_timestamp": t.issue_timestamp_ms, "expiry_timestamp": t.expiry_timestamp_ms,
        "max_timestamp": t.max_timestamp_ms, "token_id": t.token_id, "hmac": bytes(t.hmac),
        "renewers": [_principal_values(p) for p in t.renewers]} for t in r.tokens]})
