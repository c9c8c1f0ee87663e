"""One connection's security: who the client is (its principal) and, on a SASL listener, how
far its SASL exchange has come. ``network.BrokerProtocol`` keeps one per connection.

* PLAINTEXT and SASL-less TLS without a client certificate: ``User:ANONYMOUS``.
* SSL with a client certificate: ``User:<name>``, the name from the certificate's subject through
  ``ssl.principal.mapping.rules``.
* SASL_PLAINTEXT / SASL_SSL: ``User:<authorization id>`` once the SASL exchange completes; until
  then only ApiVersions, SaslHandshake and SaslAuthenticate are served, and anything else closes
  the connection (Kafka's rule).

The SASL handlers (``handshake``, ``authenticate``) work on the protocol-neutral model, for both
protocols. After a failed handshake or authentication ``close_after_answer`` is set: the answer is
sent and then the connection closes.
"""

from __future__ import annotations

import logging
from typing import Callable

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.security.acl import ANONYMOUS
from kafkalite.security.operations import SASL_APIS_BEFORE_AUTHENTICATION
from kafkalite.security.principal_mapping import NoMatchingRule
from kafkalite.security.sasl_server import (
    COMPLETE, PlainServer, SaslServerAuthenticator, ScramServer,
)
from kafkalite.security.scram import ScramCredential
from kafkalite.security.settings import ListenerSecurity
from kafkalite.security.tls import peer_distinguished_name

log = logging.getLogger(__name__)

__all__ = ["ConnectionSecurity", "ScramLookup", "PRE_AUTHENTICATION_MAX_FRAME_BYTES"]

ScramLookup = Callable[[str, str], ScramCredential | None]     # (mechanism, user) -> credential
#: (mechanism, token id) -> (the token's credential, its owner) or None: delegation tokens
TokenCredentialLookup = Callable[[str, str], "tuple[ScramCredential, str] | None"]

#: the largest frame a SASL listener reads before authentication (Kafka's
#: sasl.server.max.receive.size default): an unauthenticated client cannot make it buffer more
PRE_AUTHENTICATION_MAX_FRAME_BYTES = 524288


class ConnectionSecurity:
    def __init__(self, listener: ListenerSecurity | None, scram_lookup: ScramLookup | None = None,
                 token_lookup: TokenCredentialLookup | None = None):
        self.listener = listener
        self.principal = ANONYMOUS
        self._scram_lookup = scram_lookup
        self._token_lookup = token_lookup
        self.sasl: SaslServerAuthenticator | None = None
        #: set by a failed handshake or authentication: the answer goes out, then the
        #: connection closes (Kafka's rule)
        self.close_after_answer = False
        if listener is not None and listener.uses_sasl:
            self.sasl = SaslServerAuthenticator(listener.sasl_mechanisms, self._server_for)

    @classmethod
    def plaintext(cls) -> "ConnectionSecurity":
        return cls(None)

    @property
    def token_authenticated(self) -> bool:
        """Authenticated with a delegation token (SCRAM with ``tokenauth=true``)."""
        return self.sasl is not None and self.sasl.token_authenticated

    @property
    def authenticated(self) -> bool:
        return self.sasl is None or self.sasl.state == COMPLETE

    def allowed_before_authentication(self, api_key: int) -> bool:
        return self.authenticated or api_key in SASL_APIS_BEFORE_AUTHENTICATION

    def _server_for(self, mechanism: str):
        if mechanism == "PLAIN":
            return PlainServer(self.listener.plain_users)
        lookup = self._scram_lookup or (lambda mech, user: None)
        tokens = self._token_lookup
        return ScramServer(mechanism, lambda user: lookup(mechanism, user),
                           None if tokens is None else (lambda token_id: tokens(mechanism,
                                                                                token_id)))

    # --- TLS -----------------------------------------------------------------------------------
    def tls_handshake_completed(self, peer_certificate) -> None:
        """On an SSL listener a client certificate names the principal (on SASL_SSL, SASL
        does). Raises NoMatchingRule when no mapping rule applies: the connection closes."""
        if self.listener is None or self.listener.protocol != "SSL":
            return
        dn = peer_distinguished_name(peer_certificate)
        if dn is None:
            return
        mapper = self.listener.principal_mapper
        self.principal = f"User:{mapper.name(dn) if mapper is not None else dn}"

    # --- SASL, shared ----------------------------------------------------------------------------
    def _handshake(self, mechanism: str) -> tuple[int, list[str], bool]:
        enabled = list(self.sasl.enabled) if self.sasl is not None else []
        if self.sasl is None or self.sasl.state == COMPLETE:
            # Kafka's KafkaApis answers it ILLEGAL_SASL_STATE and keeps the connection: on a
            # listener without SASL, or after the exchange completed (found by the fuzz)
            return errors.IllegalSaslStateError.code, enabled, False
        try:
            self.sasl.handshake(mechanism)
        except errors.KafkaError as exc:
            log.info("SASL handshake refused: %s", exc.message)
            return errors.code_of(exc), enabled, True
        return 0, enabled, False

    def _authenticate(self, token: bytes) -> tuple[int, str | None, bytes, bool]:
        if self.sasl is None or self.sasl.state == COMPLETE:     # as _handshake
            return (errors.IllegalSaslStateError.code,
                    "SaslAuthenticate request received after successful authentication", b"",
                    False)
        try:
            answer = self.sasl.authenticate(token)
        except errors.KafkaError as exc:
            return errors.code_of(exc), exc.message, b"", True
        except Exception as exc:  # noqa: BLE001 - a mechanism must never take the broker down
            log.warning("SASL %s failed unexpectedly: %s", self.sasl.mechanism, exc)
            return (errors.SaslAuthenticationFailedError.code, "Authentication failed", b"",
                    True)
        if self.sasl.state == COMPLETE:
            self.principal = self.sasl.principal
            log.debug("SASL %s authenticated %s", self.sasl.mechanism, self.principal)
        return 0, None, answer, False

    # --- the SASL APIs' handlers (one for both protocols, on the model) ------------------------
    def handshake(self, request: m.SaslHandshakeRequest) -> m.SaslHandshakeResponse:
        code, enabled, close = self._handshake(request.mechanism)
        self.close_after_answer = self.close_after_answer or close
        return m.SaslHandshakeResponse(error_code=code, mechanisms=enabled)

    def authenticate(self, request: m.SaslAuthenticateRequest) -> m.SaslAuthenticateResponse:
        code, message, answer, close = self._authenticate(bytes(request.auth_bytes))
        self.close_after_answer = self.close_after_answer or close
        return m.SaslAuthenticateResponse(error_code=code, error_message=message,
                                          auth_bytes=answer)


def describe_refusal(exc: Exception) -> str:
    if isinstance(exc, NoMatchingRule):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
