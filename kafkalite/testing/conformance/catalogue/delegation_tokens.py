"""The delegation token APIs (KIP-48) on the shared clusters, whose listeners are PLAINTEXT:
Kafka 2.8 refuses every token request there (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) before it
looks at anything else. The answers are compared byte for byte (after the correlation id): their
-1 timestamps are more than kio will read back. The tokens themselves need SASL listeners and a
master key: tests/tools/test_tool_delegation_tokens.py runs Kafka's tool on both systems."""

from __future__ import annotations

from kafkalite.protocol.kafka import codec
from kafkalite.testing.conformance import raw
from kafkalite.testing.conformance.scenario import Context, Family

family = Family("security")      # reported with the other security APIs
scenario = family.scenario

_HMAC = b"\x01" * 64


def _answer_bytes(ctx: Context, api_key: int, version: int, body: dict) -> str:
    payload = codec.encode_request(api_key, version, 7, "conformance", body)
    answer = raw.send_frame(ctx.addresses[0], payload)
    return "connection closed" if answer is None else answer[4:].hex()


@scenario("delegation-tokens-on-plaintext", "CreateDelegationToken", "RenewDelegationToken",
          "ExpireDelegationToken", "DescribeDelegationToken")
def delegation_tokens_on_plaintext(ctx: Context) -> object:
    """Each token API at v1 and v2 on a PLAINTEXT listener: the whole answer."""
    bodies = {
        38: {"renewers": [{"principal_type": "User", "principal_name": "bob"}],
             "max_lifetime": -1},
        39: {"hmac": _HMAC, "renew_period": -1},
        40: {"hmac": _HMAC, "expiry_time_period": -1},
        41: {"owners": None},
    }
    return {f"{raw.api_name(key)} v{version}": _answer_bytes(ctx, key, version, body)
            for key, body in bodies.items() for version in (1, 2)}
