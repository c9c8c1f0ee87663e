"""Delegation tokens (KIP-48), the pure parts: a token's HMAC, the broker's token cache and who
may see or change a token (Kafka 2.8's DelegationTokenManager and DelegationTokenCache).

A token is its information (``zk_schema.delegation_tokens.TokenInfo``: id, owner, renewers,
timestamps) plus its HMAC: HmacSHA512 of the token id keyed by the cluster's secret key
(``delegation.token.secret.key``, alias ``delegation.token.master.key``), never stored. A client
holding the HMAC renews or expires the token, and authenticates with SCRAM as the token's owner:
user name = token id, password = the base64 HMAC, with the extension ``tokenauth=true``. The
SCRAM credentials of a token are derived from that password, one per mechanism, with the least
iterations Kafka allows (4096), as Kafka's DelegationTokenManager does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac as hmac_lib
from dataclasses import dataclass
from typing import Callable

from zk_schema.delegation_tokens import TokenInfo

from kafkalite.security.scram import (
    MIN_ITERATIONS, SCRAM_MECHANISMS, ScramCredential, make_credential,
)

__all__ = ["TokenInfo", "DelegationToken", "TokenCache", "create_hmac", "is_expired",
           "may_renew", "may_describe"]


def create_hmac(token_id: str, secret_key: str) -> bytes:
    """Kafka's DelegationTokenManager.createHmac: HmacSHA512(key = the secret's UTF-8 bytes)."""
    return hmac_lib.new(secret_key.encode("utf-8"), token_id.encode("utf-8"),
                        hashlib.sha512).digest()


@dataclass(frozen=True)
class DelegationToken:
    info: TokenInfo
    hmac: bytes

    @property
    def hmac_base64(self) -> str:
        return base64.b64encode(self.hmac).decode("ascii")


def is_expired(info: TokenInfo, now_ms: int) -> bool:
    return info.max_timestamp < now_ms or info.expiry_timestamp < now_ms


def may_renew(principal: str, info: TokenInfo) -> bool:
    """Renew and expire: the owner or a renewer (Kafka's allowedToRenew)."""
    return principal == info.owner or principal in info.renewers


def may_describe(principal: str, owners: list[str] | None, info: TokenInfo,
                 authorized: Callable[[str], bool]) -> bool:
    """Kafka's filterToken: a token of one of ``owners`` (None: any owner; an owner filter
    matches owners and renewers), which the principal owns or renews, or may Describe
    (``authorized(token id)``)."""
    def owner_or_renewer(who: str) -> bool:
        return who == info.owner or who in info.renewers
    if owners is not None and not any(owner_or_renewer(o) for o in owners):
        return False
    return owner_or_renewer(principal) or authorized(info.token_id)


class TokenCache:
    """Every live token this broker knows, by id and by HMAC, with its SCRAM credentials
    (Kafka's DelegationTokenCache). Changed only on the reactor."""

    def __init__(self):
        self._tokens: dict[str, TokenInfo] = {}
        self._by_hmac: dict[str, str] = {}
        self._credentials: dict[tuple[str, str], ScramCredential] = {}

    def update(self, token: DelegationToken) -> None:
        token_id = token.info.token_id
        known = self._tokens.get(token_id)
        self._tokens[token_id] = token.info
        self._by_hmac[token.hmac_base64] = token_id
        if known is None or (SCRAM_MECHANISMS[0], token_id) not in self._credentials:
            for mechanism in SCRAM_MECHANISMS:
                self._credentials[(mechanism, token_id)] = make_credential(
                    mechanism, token.hmac_base64, MIN_ITERATIONS)

    def remove(self, token_id: str) -> None:
        self._tokens.pop(token_id, None)
        for mechanism in SCRAM_MECHANISMS:
            self._credentials.pop((mechanism, token_id), None)
        self._by_hmac = {h: t for h, t in self._by_hmac.items() if t != token_id}

    def token(self, token_id: str) -> TokenInfo | None:
        return self._tokens.get(token_id)

    def token_for_hmac(self, hmac: bytes) -> TokenInfo | None:
        token_id = self._by_hmac.get(base64.b64encode(bytes(hmac)).decode("ascii"))
        return None if token_id is None else self._tokens.get(token_id)

    def tokens(self) -> list[TokenInfo]:
        return list(self._tokens.values())

    def credential(self, mechanism: str, token_id: str) -> ScramCredential | None:
        return self._credentials.get((mechanism, token_id))
