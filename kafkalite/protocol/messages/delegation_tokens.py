"""Delegation tokens (KIP-48): CreateDelegationToken (38), RenewDelegationToken (39),
ExpireDelegationToken (40) and DescribeDelegationToken (41).
"""

from __future__ import annotations

from dataclasses import field
from typing import NamedTuple

from kafkalite.errors import NONE
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.messages.base import Int16, Int64, Request, Response, _message


# ================================================================================================
# CreateDelegationToken (38), RenewDelegationToken (39), ExpireDelegationToken (40),
# DescribeDelegationToken (41): KIP-48 (server.delegation_token_apis)
# ================================================================================================


class TokenPrincipal(NamedTuple):
    """A principal as the token APIs carry it: type ("User") and name apart."""

    principal_type: str
    principal_name: str


class DescribedToken(NamedTuple):
    principal_type: str                   # the owner
    principal_name: str
    issue_timestamp_ms: Int64
    expiry_timestamp_ms: Int64
    max_timestamp_ms: Int64
    token_id: str
    hmac: bytes
    renewers: list[TokenPrincipal]


@_message(ApiKey.CREATE_DELEGATION_TOKEN)
class CreateDelegationTokenRequest(Request):
    renewers: list[TokenPrincipal] = field(default_factory=list)
    max_lifetime_ms: Int64 = -1           # <= 0: the broker's delegation.token.max.lifetime.ms

    def error_response(self, error_code, error_message=None):
        # Kafka's getErrorResponse names the anonymous principal
        return CreateDelegationTokenResponse(error_code=error_code)


@_message(ApiKey.CREATE_DELEGATION_TOKEN)
class CreateDelegationTokenResponse(Response):
    error_code: Int16 = NONE
    principal_type: str = "User"          # the owner: the requesting principal
    principal_name: str = "ANONYMOUS"
    issue_timestamp_ms: Int64 = -1
    expiry_timestamp_ms: Int64 = -1
    max_timestamp_ms: Int64 = -1
    token_id: str = ""
    hmac: bytes = b""


@_message(ApiKey.RENEW_DELEGATION_TOKEN)
class RenewDelegationTokenRequest(Request):
    hmac: bytes = b""
    renew_period_ms: Int64 = -1           # < 0: the broker's delegation.token.expiry.time.ms

    def error_response(self, error_code, error_message=None):
        return RenewDelegationTokenResponse(error_code=error_code)


@_message(ApiKey.RENEW_DELEGATION_TOKEN)
class RenewDelegationTokenResponse(Response):
    error_code: Int16 = NONE
    expiry_timestamp_ms: Int64 = -1


@_message(ApiKey.EXPIRE_DELEGATION_TOKEN)
class ExpireDelegationTokenRequest(Request):
    hmac: bytes = b""
    expiry_time_period_ms: Int64 = -1     # < 0: expire now

    def error_response(self, error_code, error_message=None):
        return ExpireDelegationTokenResponse(error_code=error_code)


@_message(ApiKey.EXPIRE_DELEGATION_TOKEN)
class ExpireDelegationTokenResponse(Response):
    error_code: Int16 = NONE
    expiry_timestamp_ms: Int64 = -1


@_message(ApiKey.DESCRIBE_DELEGATION_TOKEN)
class DescribeDelegationTokenRequest(Request):
    owners: list[TokenPrincipal] | None = None     # None: every owner; []: none

    def error_response(self, error_code, error_message=None):
        return DescribeDelegationTokenResponse(error_code=error_code)


@_message(ApiKey.DESCRIBE_DELEGATION_TOKEN)
class DescribeDelegationTokenResponse(Response):
    error_code: Int16 = NONE
    tokens: list[DescribedToken] = field(default_factory=list)
