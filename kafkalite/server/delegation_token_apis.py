"""CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken and
DescribeDelegationToken, for both protocols (Kafka 2.8's KafkaApis handlers; the tokens
themselves are the broker's ``DelegationTokenManager``).

As in Kafka 2.8, token requests are refused with DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a
PLAINTEXT listener, from an SSL client without a certificate, and on a connection that itself
authenticated with a token: a token cannot beget tokens. Creating needs no ACL (2.8 has none for
it); the owner is the requesting principal. Renew and expire are for the owner and the renewers;
Describe shows the tokens the principal owns or renews, and the others it may Describe (the
DELEGATION_TOKEN resource, by token id).
"""

from __future__ import annotations

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ANONYMOUS, ResourceType
from kafkalite.security.delegation_tokens import DelegationToken, may_describe
from kafkalite.server.delegation_token_manager import ERROR_TIMESTAMP

__all__ = ["handle_create_delegation_token", "handle_renew_delegation_token",
           "handle_expire_delegation_token", "handle_describe_delegation_token",
           "token_requests_allowed"]

_NOT_ALLOWED = errors.DelegationTokenRequestNotAllowedError.code
_USER = "User"


def _manager(broker):
    return getattr(getattr(broker, "security", None), "tokens", None)


def _enabled(broker) -> bool:
    manager = _manager(broker)
    return manager is not None and manager.enabled


def token_requests_allowed(ctx) -> bool:
    """Kafka's allowTokenRequests: not on PLAINTEXT, not from an SSL client without a
    certificate, not on a token-authenticated connection."""
    if getattr(ctx.connection_security, "token_authenticated", False):
        return False
    if ctx.security_protocol == "PLAINTEXT":
        return False
    return not (ctx.security_protocol == "SSL" and ctx.principal == ANONYMOUS)


def _split(principal: str) -> tuple[str, str]:
    """``User:alice`` -> ("User", "alice")."""
    principal_type, _, name = principal.partition(":")
    return principal_type, name


def _create_answer(ctx, code: int, token: DelegationToken | None = None
                   ) -> m.CreateDelegationTokenResponse:
    principal_type, principal_name = _split(ctx.principal)
    if token is None:
        return m.CreateDelegationTokenResponse(error_code=code, principal_type=principal_type,
                                               principal_name=principal_name)
    info = token.info
    return m.CreateDelegationTokenResponse(
        error_code=code, principal_type=principal_type, principal_name=principal_name,
        issue_timestamp_ms=info.issue_timestamp, expiry_timestamp_ms=info.expiry_timestamp,
        max_timestamp_ms=info.max_timestamp, token_id=info.token_id, hmac=token.hmac)


def handle_create_delegation_token(broker, ctx, request: m.CreateDelegationTokenRequest):
    if not token_requests_allowed(ctx):
        return _create_answer(ctx, _NOT_ALLOWED)
    if any(p.principal_type != _USER for p in request.renewers):
        return _create_answer(ctx, errors.InvalidPrincipalTypeError.code)
    manager = _manager(broker)
    if manager is None or not manager.enabled:
        return _create_answer(ctx, errors.DelegationTokenAuthDisabledError.code)
    renewers = [f"{p.principal_type}:{p.principal_name}" for p in request.renewers]
    d = manager.create(ctx.principal, renewers, request.max_lifetime_ms)
    return d.addCallback(lambda result: _create_answer(ctx, *result))


def handle_renew_delegation_token(broker, ctx, request: m.RenewDelegationTokenRequest):
    return _change(broker, ctx, request.hmac, request.renew_period_ms,
                   m.RenewDelegationTokenResponse, renew=True)


def handle_expire_delegation_token(broker, ctx, request: m.ExpireDelegationTokenRequest):
    return _change(broker, ctx, request.hmac, request.expiry_time_period_ms,
                   m.ExpireDelegationTokenResponse, renew=False)


def _change(broker, ctx, hmac: bytes, period_ms: int, response, renew: bool):
    if not token_requests_allowed(ctx):
        return response(error_code=_NOT_ALLOWED, expiry_timestamp_ms=ERROR_TIMESTAMP)
    manager = _manager(broker)
    if manager is None or not manager.enabled:
        return response(error_code=errors.DelegationTokenAuthDisabledError.code,
                        expiry_timestamp_ms=ERROR_TIMESTAMP)
    change = manager.renew if renew else manager.expire
    d = change(ctx.principal, bytes(hmac), period_ms)
    return d.addCallback(lambda result: response(error_code=result[0],
                                                 expiry_timestamp_ms=result[1]))


def _described(token: DelegationToken) -> m.DescribedToken:
    info = token.info
    owner_type, owner_name = _split(info.owner)
    return m.DescribedToken(owner_type, owner_name, info.issue_timestamp,
                            info.expiry_timestamp, info.max_timestamp, info.token_id,
                            token.hmac, [m.TokenPrincipal(*_split(r)) for r in info.renewers])


def handle_describe_delegation_token(broker, ctx, request: m.DescribeDelegationTokenRequest):
    if not token_requests_allowed(ctx):
        return m.DescribeDelegationTokenResponse(error_code=_NOT_ALLOWED)
    if not _enabled(broker):
        return m.DescribeDelegationTokenResponse(
            error_code=errors.DelegationTokenAuthDisabledError.code)
    if request.owners is not None and not request.owners:
        return m.DescribeDelegationTokenResponse()
    owners = (None if request.owners is None
              else [f"{p.principal_type}:{p.principal_name}" for p in request.owners])

    def authorized(token_id: str) -> bool:
        return ctx.authz.may(ApiKey.DESCRIBE_DELEGATION_TOKEN, ResourceType.DELEGATION_TOKEN,
                             token_id)
    tokens = _manager(broker).tokens(
        lambda info: may_describe(ctx.principal, owners, info, authorized))
    return m.DescribeDelegationTokenResponse(tokens=[_described(t) for t in tokens])
