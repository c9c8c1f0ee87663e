"""SASL exchanges without sockets: kafkalite's client mechanisms against the broker's state
machine (PLAIN, SCRAM-SHA-256/512), wrong passwords, unknown users, wrong order, garbage."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite import errors
from kafkalite.security.sasl_client import sasl_client
from kafkalite.security.sasl_server import (
    AUTHENTICATE, COMPLETE, FAILED, PlainServer, SaslServerAuthenticator, ScramServer,
)
from kafkalite.security.scram import make_credential

CREDENTIALS = {m: {"alice": make_credential(m, "alice-secret")}
               for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")}
PLAIN_USERS = {"alice": "alice-secret"}
ENABLED = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def authenticator(enabled=ENABLED):
    def server_for(mechanism):
        if mechanism == "PLAIN":
            return PlainServer(PLAIN_USERS)
        return ScramServer(mechanism, CREDENTIALS[mechanism].get)
    return SaslServerAuthenticator(enabled, server_for)


def exchange(auth, mechanism, user, password):
    client = sasl_client(mechanism, user, password)
    auth.handshake(mechanism)
    token = client.first()
    while True:
        challenge = auth.authenticate(token)
        token = client.evaluate(challenge)
        if token is None:
            return auth


@pytest.mark.parametrize("mechanism", ENABLED)
def test_a_good_password_authenticates(mechanism):
    auth = exchange(authenticator(), mechanism, "alice", "alice-secret")
    assert auth.state == COMPLETE and auth.principal == "User:alice"


@pytest.mark.parametrize("mechanism", ENABLED)
@pytest.mark.parametrize("user, password", [("alice", "wrong"), ("mallory", "alice-secret")])
def test_a_bad_password_or_unknown_user_fails_once(mechanism, user, password):
    auth = authenticator()
    with pytest.raises(errors.SaslAuthenticationFailedError, match="Authentication failed"):
        exchange(auth, mechanism, user, password)
    assert auth.state == FAILED and auth.principal is None
    with pytest.raises(errors.IllegalSaslStateError):
        auth.authenticate(b"again")


def test_mechanism_not_enabled_and_wrong_order():
    auth = authenticator(enabled=("SCRAM-SHA-512",))
    with pytest.raises(errors.UnsupportedSaslMechanismError, match="enables SCRAM-SHA-512"):
        auth.handshake("PLAIN")
    fresh = authenticator()
    with pytest.raises(errors.IllegalSaslStateError, match="send SaslHandshake first"):
        fresh.authenticate(b"\x00alice\x00alice-secret")
    started = authenticator()
    started.handshake("PLAIN")
    assert started.state == AUTHENTICATE
    with pytest.raises(errors.IllegalSaslStateError):
        started.handshake("PLAIN")


def test_plain_refuses_a_different_authorization_id():
    auth = authenticator()
    auth.handshake("PLAIN")
    with pytest.raises(errors.SaslAuthenticationFailedError, match="authorization id"):
        auth.authenticate(b"admin\x00alice\x00alice-secret")


def test_a_credential_made_from_another_password_refuses_the_proof():
    stored = {"alice": make_credential("SCRAM-SHA-256", "other")}
    client = sasl_client("SCRAM-SHA-256", "alice", "alice-secret")
    server = ScramServer("SCRAM-SHA-256", stored.get)
    final = client.evaluate(server.evaluate(client.first()))
    with pytest.raises(errors.SaslAuthenticationFailedError):
        server.evaluate(final)
    assert not server.complete and server.authorization_id is None


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(ENABLED), st.lists(st.binary(max_size=64), min_size=1, max_size=3))
def test_garbage_tokens_only_ever_fail_authentication(mechanism, tokens):
    auth = authenticator()
    auth.handshake(mechanism)
    for token in tokens:
        try:
            auth.authenticate(token)
        except (errors.SaslAuthenticationFailedError, errors.IllegalSaslStateError):
            break
    assert auth.state in (AUTHENTICATE, FAILED)
    assert auth.principal is None
