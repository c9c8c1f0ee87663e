"""Delegation tokens' pure parts and SCRAM token authentication: the HMAC as Kafka computes
it, the token cache, who may renew and describe, and a SCRAM exchange with Kafka's extension
``tokenauth=true`` (user name = token id, password = the base64 HMAC) authenticating as the
token's owner, driven by an RFC 5802 client written here (scramp's client sends no
extensions)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

import pytest

from kafkalite.errors import SaslAuthenticationFailedError
from kafkalite.security.delegation_tokens import (
    DelegationToken, TokenCache, TokenInfo, create_hmac, is_expired, may_describe, may_renew,
)
from kafkalite.security.sasl_server import (
    COMPLETE, SaslServerAuthenticator, ScramServer, split_extensions,
)
from kafkalite.security.scram import make_credential

KEY = "master-secret"
INFO = TokenInfo("tok-1", "User:alice", ("User:bob",), 1_000, 10_000, 5_000)


def _token(info=INFO) -> DelegationToken:
    return DelegationToken(info, create_hmac(info.token_id, KEY))


def test_hmac_is_hmac_sha512_of_the_token_id_keyed_by_the_secret():
    expected = hmac.new(KEY.encode(), b"tok-1", hashlib.sha512).digest()
    assert create_hmac("tok-1", KEY) == expected and len(expected) == 64
    assert _token().hmac_base64 == base64.b64encode(expected).decode()


def test_token_znode_payload_is_kafkas():
    data = INFO.encode()
    assert data == (b'{"version":1,"owner":"User%3Aalice","renewers":["User%3Abob"],'
                    b'"issueTimestamp":1000,"maxTimestamp":10000,"expiryTimestamp":5000,'
                    b'"tokenId":"tok-1"}')
    assert TokenInfo.decode(data) == INFO


def test_expired_past_expiry_or_max_time():
    assert not is_expired(INFO, 5_000)
    assert is_expired(INFO, 5_001)
    assert is_expired(TokenInfo("t", "User:a", (), 0, 100, 1_000), 101)


def test_owner_and_renewers_may_renew():
    assert may_renew("User:alice", INFO) and may_renew("User:bob", INFO)
    assert not may_renew("User:carol", INFO)


def test_describe_filter_is_kafkas():
    never = lambda token_id: False                                      # noqa: E731
    assert may_describe("User:alice", None, INFO, never)
    assert may_describe("User:bob", None, INFO, never)                  # a renewer
    assert not may_describe("User:carol", None, INFO, never)
    assert may_describe("User:carol", None, INFO, lambda token_id: token_id == "tok-1")
    # an owner filter matches owners and renewers
    assert may_describe("User:alice", ["User:bob"], INFO, never)
    assert not may_describe("User:alice", ["User:carol"], INFO, never)


def test_cache_finds_tokens_by_id_and_hmac_and_forgets_them():
    cache = TokenCache()
    token = _token()
    cache.update(token)
    assert cache.token("tok-1") == INFO
    assert cache.token_for_hmac(token.hmac) == INFO
    assert cache.token_for_hmac(b"x" * 64) is None
    assert cache.credential("SCRAM-SHA-256", "tok-1").iterations == 4096
    cache.remove("tok-1")
    assert cache.tokens() == [] and cache.token_for_hmac(token.hmac) is None
    assert cache.credential("SCRAM-SHA-512", "tok-1") is None


def test_split_extensions():
    assert split_extensions("n,,n=tok,r=abc,tokenauth=true") == (
        "n,,n=tok,r=abc", {"tokenauth": "true"})
    assert split_extensions("n,,n=user,r=abc") == ("n,,n=user,r=abc", {})


# --- a SCRAM exchange with extensions ------------------------------------------------------------

def _h(name):
    return {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}[name]


def _scram_client(mechanism, authenticate, user, password, extensions=""):
    """RFC 5802's client: returns the server-final message (raises what the server raises)."""
    digest = _h(mechanism)
    nonce = base64.b64encode(os.urandom(18)).decode()
    bare = f"n={user},r={nonce}{extensions}"
    server_first = authenticate(f"n,,{bare}".encode()).decode()
    attrs = dict(a.split("=", 1) for a in server_first.split(","))
    salt, iterations = base64.b64decode(attrs["s"]), int(attrs["i"])
    salted = hashlib.pbkdf2_hmac(digest().name, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    stored_key = digest(client_key).digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth_message = f"{bare},{server_first},{without_proof}".encode()
    signature = hmac.new(stored_key, auth_message, digest).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    return authenticate(f"{without_proof},p={base64.b64encode(proof).decode()}".encode())


def _authenticator(mechanism, cache):
    def lookup(user):
        return {"alice": make_credential(mechanism, "alice-secret")}.get(user)

    def token_lookup(token_id):
        info = cache.token(token_id)
        return None if info is None else (cache.credential(mechanism, token_id), info.owner)
    auth = SaslServerAuthenticator((mechanism,), lambda mech: ScramServer(mech, lookup,
                                                                          token_lookup))
    auth.handshake(mechanism)
    return auth


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_token_authenticates_as_its_owner(mechanism):
    cache = TokenCache()
    token = _token(TokenInfo("tok-1", "User:carol", (), 0, 10, 10))
    cache.update(token)
    auth = _authenticator(mechanism, cache)
    _scram_client(mechanism, auth.authenticate, "tok-1", token.hmac_base64, ",tokenauth=true")
    assert auth.state == COMPLETE
    assert (auth.principal, auth.token_authenticated) == ("User:carol", True)


def test_a_user_still_authenticates_as_itself():
    auth = _authenticator("SCRAM-SHA-256", TokenCache())
    _scram_client("SCRAM-SHA-256", auth.authenticate, "alice", "alice-secret")
    assert (auth.principal, auth.token_authenticated) == ("User:alice", False)


def test_unknown_extensions_are_ignored_as_kafka_does():
    auth = _authenticator("SCRAM-SHA-256", TokenCache())
    _scram_client("SCRAM-SHA-256", auth.authenticate, "alice", "alice-secret", ",other=1")
    assert (auth.principal, auth.token_authenticated) == ("User:alice", False)


def test_an_unknown_token_or_a_wrong_hmac_fails():
    cache = TokenCache()
    token = _token()
    cache.update(token)
    auth = _authenticator("SCRAM-SHA-256", cache)
    with pytest.raises(SaslAuthenticationFailedError):
        _scram_client("SCRAM-SHA-256", auth.authenticate, "nope", token.hmac_base64,
                      ",tokenauth=true")
    auth = _authenticator("SCRAM-SHA-256", cache)
    with pytest.raises(SaslAuthenticationFailedError):
        _scram_client("SCRAM-SHA-256", auth.authenticate, "tok-1", "wrong", ",tokenauth=true")
    # without the extension the token id is just an unknown user
    auth = _authenticator("SCRAM-SHA-256", cache)
    with pytest.raises(SaslAuthenticationFailedError):
        _scram_client("SCRAM-SHA-256", auth.authenticate, "tok-1", token.hmac_base64)
