"""How a broker opens a connection to another broker (the controller's channels, replica
fetchers, controlled shutdown): plain TCP, TLS, and/or SASL, as ``security.inter.broker.protocol``
(or the control plane listener's protocol) and ``sasl.mechanism.inter.broker.protocol`` say.

``broker_connector(security)`` gives ``connect(reactor, host, port, protocol, timeout_s)``,
which ``protocol.channel.BrokerChannel`` calls instead of a bare TCP connect: its Deferred fires
with the native ``ClientConnection`` once TLS is up and the SASL exchange is done, so nothing
else is ever sent before the broker is authenticated. A refused handshake or bad credentials
fail that Deferred (and close the connection); the channel's callers retry as for any failed
connect, and the error names what to fix.
"""

from __future__ import annotations

from typing import Callable

from twisted.internet import defer
from twisted.internet.endpoints import SSL4ClientEndpoint, TCP4ClientEndpoint, connectProtocol

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.security.sasl_client import sasl_client
from kafkalite.security.settings import ClientSecurity

__all__ = ["broker_connector", "plain_connect", "Connector"]

Connector = Callable[..., defer.Deferred]


def plain_connect(reactor, host: str, port: int, protocol, timeout_s: float) -> defer.Deferred:
    return connectProtocol(TCP4ClientEndpoint(reactor, host, port, timeout=timeout_s), protocol)


@defer.inlineCallbacks
def _sasl(connection, security: ClientSecurity, host: str, port: int):
    try:
        handshake = yield connection.request(
            m.SaslHandshakeRequest(mechanism=security.sasl_mechanism))
        if handshake.error_code:
            raise errors.for_code(handshake.error_code,
                                  f"broker {host}:{port} does not offer "
                                  f"{security.sasl_mechanism} (it offers "
                                  f"{', '.join(handshake.mechanisms) or 'none'}): check "
                                  "sasl.mechanism.inter.broker.protocol")
        client = sasl_client(security.sasl_mechanism, security.sasl_username,
                             security.sasl_password)
        token = client.first()
        while token is not None:
            answer = yield connection.request(m.SaslAuthenticateRequest(auth_bytes=token))
            if answer.error_code:
                raise errors.for_code(
                    answer.error_code, f"broker {host}:{port} refused this broker's "
                    f"{security.sasl_mechanism} login as {security.sasl_username}: "
                    f"{answer.error_message}; check the username/password of the inter-broker "
                    "listener's sasl.jaas.config and the user's credentials in ZooKeeper")
            token = client.evaluate(answer.auth_bytes)
    except Exception:
        connection.close()
        raise
    return connection


def broker_connector(security: ClientSecurity | None) -> Connector:
    """The connect function for ``security`` (plain TCP for None or PLAINTEXT)."""
    if security is None or security.security_protocol == "PLAINTEXT":
        return plain_connect

    def connect(reactor, host: str, port: int, protocol, timeout_s: float) -> defer.Deferred:
        if security.uses_tls:
            from kafkalite.security.tls import client_context_factory

            endpoint = SSL4ClientEndpoint(reactor, host, port,
                                          client_context_factory(security.tls, host),
                                          timeout=timeout_s)
        else:
            endpoint = TCP4ClientEndpoint(reactor, host, port, timeout=timeout_s)
        d = connectProtocol(endpoint, protocol)
        if security.uses_sasl:
            d.addCallback(_sasl, security, host, port)
        return d
    return connect
