"""The SASL exchange a blocking connection runs right after it connects (and after TLS on
SASL_SSL): SaslHandshake with the mechanism, then SaslAuthenticate until the mechanism is done,
over kafkalite's native protocol (``security.sasl_client`` makes the tokens).

A refused mechanism or bad credentials raise SaslAuthenticationFailedError (or
UnsupportedSaslMechanismError) naming what to fix; the broker closes the connection after
either, so the caller drops it.
"""

from __future__ import annotations

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.security.sasl_client import sasl_client
from kafkalite.security.settings import ClientSecurity

__all__ = ["authenticate"]


def authenticate(conn, security: ClientSecurity) -> None:
    """Run the exchange on ``conn`` (a connected BrokerConnection with nothing pending)."""
    handshake = conn.request(m.SaslHandshakeRequest(mechanism=security.sasl_mechanism))
    if handshake.error_code:
        raise errors.for_code(handshake.error_code,
                              f"broker {conn.address} does not take SASL mechanism "
                              f"{security.sasl_mechanism} (it offers "
                              f"{', '.join(handshake.mechanisms) or 'none'}): set "
                              "sasl_mechanism to one of those")
    client = sasl_client(security.sasl_mechanism, security.sasl_username,
                         security.sasl_password)
    token = client.first()
    while token is not None:
        answer = conn.request(m.SaslAuthenticateRequest(auth_bytes=token))
        if answer.error_code:
            raise errors.for_code(answer.error_code,
                                  f"broker {conn.address}: {answer.error_message or 'refused'}"
                                  f" (user {security.sasl_username}, {security.sasl_mechanism})")
        token = client.evaluate(answer.auth_bytes)
