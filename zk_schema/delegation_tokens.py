"""Delegation tokens in ZooKeeper, as Kafka 2.8's ZkData keeps them (KIP-48)::

    /delegation_token/tokens/<tokenId>                 {"version":1,"owner":"User%3Aalice",
                                                        "renewers":["User%3Abob"],
                                                        "issueTimestamp":..,"maxTimestamp":..,
                                                        "expiryTimestamp":..,"tokenId":".."}
    /delegation_token/token_changes/token_change_<seq> the token id (UTF-8)

Principals are stored sanitized (URL-encoded, Kafka's Sanitizer). The token's HMAC is never
stored: every broker computes it from the token id and the shared secret key.
"""

from __future__ import annotations

from dataclasses import dataclass

from zk_schema._codec import (
    SchemaError, dump, field, int_field, load_object, load_text, random_uuid_base64, segment,
    str_field,
)
from zk_schema.config import desanitize_entity_name, sanitize_entity_name

DELEGATION_TOKEN_PATH = "/delegation_token"
TOKENS_PATH = f"{DELEGATION_TOKEN_PATH}/tokens"
TOKEN_CHANGES_PATH = f"{DELEGATION_TOKEN_PATH}/token_changes"
TOKEN_CHANGE_PREFIX = "token_change_"
#: what a broker with delegation tokens enabled creates (Kafka's createDelegationTokenPaths)
DELEGATION_TOKEN_PATHS = (TOKEN_CHANGES_PATH, TOKENS_PATH)


def new_token_id() -> str:
    """A random UUID as URL-safe base64 (Kafka's CoreUtils.generateUuidAsBase64)."""
    return random_uuid_base64()


def token_path(token_id: str) -> str:
    return f"{TOKENS_PATH}/{segment(token_id, 'delegation token id')}"


def change_prefix_path() -> str:
    """The prefix to create a sequential change notification with."""
    return f"{TOKEN_CHANGES_PATH}/{TOKEN_CHANGE_PREFIX}"


def change_child_path(child: str) -> str:
    return f"{TOKEN_CHANGES_PATH}/{segment(child, 'token change notification')}"


def change_sequence(child: str) -> int:
    """``token_change_0000000012`` -> 12."""
    return int(child[len(TOKEN_CHANGE_PREFIX):])


@dataclass(frozen=True)
class TokenInfo:
    """One token's znode (Kafka's TokenInformation); principals as ``User:alice``."""

    token_id: str
    owner: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiry_timestamp: int

    def encode(self) -> bytes:
        return dump({"version": 1, "owner": sanitize_entity_name(self.owner),
                     "renewers": [sanitize_entity_name(r) for r in self.renewers],
                     "issueTimestamp": self.issue_timestamp, "maxTimestamp": self.max_timestamp,
                     "expiryTimestamp": self.expiry_timestamp, "tokenId": self.token_id})

    @classmethod
    def decode(cls, data: bytes | None, path: str = "delegation token znode") -> "TokenInfo":
        obj = load_object(data, path)
        version = int_field(obj, "version", path)
        if version != 1:
            raise SchemaError(f"{path}: unsupported delegation token version {version}")
        renewers = field(obj, "renewers", path)
        if not isinstance(renewers, list) or not all(isinstance(r, str) for r in renewers):
            raise SchemaError(f"{path}: 'renewers' must be a list of principals")
        return cls(str_field(obj, "tokenId", path),
                   desanitize_entity_name(str_field(obj, "owner", path)),
                   tuple(desanitize_entity_name(r) for r in renewers),
                   int_field(obj, "issueTimestamp", path), int_field(obj, "maxTimestamp", path),
                   int_field(obj, "expiryTimestamp", path))


def encode_change(token_id: str) -> bytes:
    return token_id.encode("utf-8")


def decode_change(data: bytes | None) -> str:
    return load_text(data, TOKEN_CHANGES_PATH)
