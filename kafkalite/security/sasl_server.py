"""The broker's side of a SASL exchange: mechanisms PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, and
the per-connection state machine around them (Kafka's SaslServerAuthenticator). No I/O: the
connection feeds tokens in and writes what comes out.

On a SASL listener a connection goes::

    HANDSHAKE --SaslHandshake(mechanism)--> AUTHENTICATE --SaslAuthenticate(token)*--> COMPLETE
        \\ (unsupported mechanism)                 \\ (bad credentials)
         FAILED                                     FAILED

ApiVersions is answered in any state before COMPLETE; any other request before COMPLETE is a
protocol violation that closes the connection, as in Kafka. A failed exchange answers once (with
UNSUPPORTED_SASL_MECHANISM or SASL_AUTHENTICATION_FAILED) and then the connection closes.

SCRAM is scramp's (RFC 5802/7677); the credentials come from a lookup the broker keeps filled from
ZooKeeper (``/config/users``), so nothing here waits.
"""

from __future__ import annotations

import hmac
import logging
from typing import Callable, Mapping

from scramp import ScramMechanism

from kafkalite.errors import (
    IllegalSaslStateError, SaslAuthenticationFailedError, UnsupportedSaslMechanismError,
)
from kafkalite.security.scram import SCRAM_MECHANISMS, ScramCredential

log = logging.getLogger(__name__)

__all__ = ["PlainServer", "ScramServer", "SaslServerAuthenticator", "SUPPORTED_MECHANISMS",
           "HANDSHAKE", "AUTHENTICATE", "COMPLETE", "FAILED", "TokenLookup", "split_extensions"]

SUPPORTED_MECHANISMS = ("PLAIN",) + SCRAM_MECHANISMS
HANDSHAKE, AUTHENTICATE, COMPLETE, FAILED = "handshake", "authenticate", "complete", "failed"


class PlainServer:
    """RFC 4616: one token ``[authzid] NUL authcid NUL password``, checked against
    ``users`` (PlainLoginModule's ``user_<name>`` entries)."""

    mechanism = "PLAIN"

    def __init__(self, users: Mapping[str, str]):
        self.users = users
        self.complete = False
        self.authorization_id: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise IllegalSaslStateError("PLAIN authentication is already complete")
        try:
            authzid, authcid, password = bytes(token).decode("utf-8").split("\x00")
        except ValueError:
            raise SaslAuthenticationFailedError(
                "Invalid SASL/PLAIN response: expected 3 tokens") from None
        if not authcid:
            raise SaslAuthenticationFailedError("Authentication failed: username not specified")
        if authzid and authzid != authcid:
            raise SaslAuthenticationFailedError(
                "Authentication failed: Client requested an authorization id that is different "
                "from username")
        expected = self.users.get(authcid)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslAuthenticationFailedError("Authentication failed: Invalid username or "
                                                "password")
        self.complete = True
        self.authorization_id = authcid
        return b""


#: ``token_lookup(token id)``: (the token's credential, its owner ``User:<name>``) or None
TokenLookup = Callable[[str], "tuple[ScramCredential, str] | None"]


def split_extensions(client_first: str) -> tuple[str, dict[str, str]]:
    """Kafka's SCRAM extensions (RFC 5802 leaves room for them after the nonce):
    ``n,,n=user,r=nonce,tokenauth=true`` -> (``n,,n=user,r=nonce``, {"tokenauth": "true"}).
    scramp knows no extensions, so they are taken off before it reads the message."""
    parts = client_first.split(",")
    for index, part in enumerate(parts):
        if part.startswith("r=") and index >= 3:
            extensions = dict(p.partition("=")[::2] for p in parts[index + 1:])
            return ",".join(parts[:index + 1]), extensions
    return client_first, {}


class ScramServer:
    """SCRAM-SHA-256/512 through scramp: client-first -> server-first, client-final ->
    server-final. ``lookup(user)`` gives the stored credential or None.

    With the extension ``tokenauth=true`` (Kafka's delegation tokens, KIP-48) the user name is a
    token id: ``token_lookup`` gives the token's credential (derived from its HMAC) and its
    owner, who becomes the authorization id; the connection is then ``token_authenticated``.
    Other extensions are ignored, as Kafka does."""

    def __init__(self, mechanism: str, lookup: Callable[[str], ScramCredential | None],
                 token_lookup: TokenLookup | None = None):
        if mechanism not in SCRAM_MECHANISMS:
            raise ValueError(f"not a SCRAM mechanism: {mechanism}")
        self.mechanism = mechanism
        self._lookup = lookup
        self._token_lookup = token_lookup
        self._server = ScramMechanism(mechanism).make_server(self._auth_info)
        self._step = 0
        self._user: str | None = None
        self._token_owner: str | None = None
        self.token_authenticated = False
        self.complete = False
        self.authorization_id: str | None = None

    def _auth_info(self, username: str):
        if self.token_authenticated:
            found = self._token_lookup(username) if self._token_lookup else None
            if found is None:
                raise KeyError(f"Token Authentication failed: Invalid tokenId : {username}")
            credential, owner = found
            self._token_owner = owner.partition(":")[2]
        else:
            credential = self._lookup(username)
        if credential is None:
            raise KeyError(username)
        self._user = username
        return credential.auth_info()

    def _set_client_first(self, message: str) -> None:
        stripped, extensions = split_extensions(message)
        self.token_authenticated = extensions.get("tokenauth", "").lower() == "true"
        self._server.set_client_first(stripped)
        if stripped != message:
            # the client's proof covers its whole client-first-bare, extensions included
            self._server.client_first_bare = message[message.index(",", message.index(",") + 1)
                                                     + 1:]

    def _failed(self) -> SaslAuthenticationFailedError:
        return SaslAuthenticationFailedError(
            f"Authentication failed during authentication due to invalid credentials with SASL "
            f"mechanism {self.mechanism}")

    def evaluate(self, token: bytes) -> bytes:
        try:
            message = bytes(token).decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationFailedError(f"{self.mechanism}: the client's message is "
                                                "not UTF-8") from None
        if self._step == 0:
            self._step = 1
            try:
                self._set_client_first(message)
                return self._server.get_server_first().encode("utf-8")
            except Exception as exc:  # noqa: BLE001 - unknown user or malformed message
                log.info("%s: client-first refused (%s: %s)", self.mechanism,
                         type(exc).__name__, exc)
                raise self._failed() from None
        if self._step == 1:
            self._step = 2
            try:
                self._accept_librdkafka_nonce(message)
                self._server.set_client_final(message)
                final = self._server.get_server_final()
            except Exception as exc:  # noqa: BLE001 - wrong proof or malformed message
                log.info("%s: authentication of %s failed (%s)", self.mechanism, self._user,
                         exc)
                raise self._failed() from None
            self.complete = True
            self.authorization_id = (self._token_owner if self.token_authenticated
                                     else self._user)
            return final.encode("utf-8")
        raise IllegalSaslStateError(f"{self.mechanism} authentication is already complete")


    def _accept_librdkafka_nonce(self, client_final: str) -> None:
        """librdkafka puts its own nonce in front of the server's whole nonce (which already
        starts with it) in client-final. Kafka's server checks only the proof, so librdkafka
        works there; scramp compares the nonce too. A client nonce that ends with the server's
        whole nonce still carries it (no replay), so it is taken as the nonce to check -- the
        proof, over the client's own messages, is checked by scramp as ever."""
        expected = str(self._server.nonce)
        for attribute in client_final.split(","):
            if attribute.startswith("r="):
                got = attribute[2:]
                if got != expected and got.endswith(expected):
                    self._server.nonce = type(self._server.nonce)(got)
                return


class SaslServerAuthenticator:
    """One connection's SASL state. ``server_for(mechanism)`` makes the mechanism's server;
    ``enabled`` are the listener's sasl.enabled.mechanisms."""

    def __init__(self, enabled: tuple[str, ...], server_for: Callable[[str], object]):
        self.enabled = tuple(enabled)
        self._server_for = server_for
        self.state = HANDSHAKE
        self.mechanism: str | None = None
        self._server = None
        self.principal: str | None = None
        #: authenticated with a delegation token (which may not ask for tokens itself)
        self.token_authenticated = False

    @property
    def complete(self) -> bool:
        return self.state == COMPLETE

    def handshake(self, mechanism: str) -> None:
        """Choose the mechanism; UnsupportedSaslMechanismError (and FAILED) if not enabled."""
        if self.state != HANDSHAKE:
            previous, self.state = self.state, FAILED
            raise IllegalSaslStateError(f"unexpected SaslHandshake in state {previous}")
        if mechanism not in self.enabled:
            self.state = FAILED
            raise UnsupportedSaslMechanismError(
                f"Unsupported SASL mechanism {mechanism}; this listener enables "
                f"{', '.join(self.enabled) or 'none'}")
        self.mechanism = mechanism
        self._server = self._server_for(mechanism)
        self.state = AUTHENTICATE

    def authenticate(self, token: bytes) -> bytes:
        """The answer to one client token; raises (and goes FAILED) on bad credentials."""
        if self.state != AUTHENTICATE:
            previous, self.state = self.state, FAILED
            raise IllegalSaslStateError(f"unexpected SaslAuthenticate in state {previous}; "
                                        "send SaslHandshake first")
        try:
            answer = self._server.evaluate(token)
        except Exception:
            self.state = FAILED
            raise
        if self._server.complete:
            self.state = COMPLETE
            self.principal = f"User:{self._server.authorization_id}"
            self.token_authenticated = getattr(self._server, "token_authenticated", False)
        return answer
