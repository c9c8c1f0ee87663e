"""The broker's side of a client connection: tell the protocol, decode each frame, dispatch,
answer in order.

Every listener serves two protocols on one port. The first frame decides, once per connection:
a Kafka request starts with an int16 api_key below 256, so its first byte is 0x00; a native
request is a msgpack array, whose first byte is 0x90-0x9f, 0xdc or 0xdd. Anything else closes the
connection.

A listener's security (``listener.security.protocol.map``) wraps this: TLS listeners are served
through Twisted's TLS (the principal of an SSL client comes from its certificate once the
handshake completes), and on a SASL listener the SASL exchange (SaslHandshake, SaslAuthenticate,
on either protocol) must complete before any request but ApiVersions is served; everything else
closes the connection, as Kafka does. ``connection_security.ConnectionSecurity`` keeps that
state and the principal the handlers authorize.

Requests on one connection are pipelined: the client may send many before reading. Each request
takes a slot in an ordered queue, and a response leaves only when every earlier one has left, so a
long-polling fetch holds back later answers exactly as Kafka's one-in-flight-per-connection rule
would. Malformed input never reaches the handlers: an unreadable frame closes the connection; a
readable header with a bad body, unknown API or version gets an error response naming the problem.
"""

from __future__ import annotations

import logging
from collections import deque

from twisted.internet import defer
from twisted.internet.interfaces import IHandshakeListener
from twisted.internet.protocol import Factory
from zope.interface import implementer

from kafkalite.errors import InvalidRequestError, KafkaError, UnsupportedVersionError, code_of
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.connection import KafkaWireProtocol
from kafkalite.protocol.kafka import codec as kafka_codec
from kafkalite.protocol.kafka.versions import is_supported
from kafkalite.protocol.envelope import (decode_request_envelope, encode_response_payload,
                                         parse_request_body)
from kafkalite.protocol.messages import RequestErrorResponse
from kafkalite.server.connection_security import (
    PRE_AUTHENTICATION_MAX_FRAME_BYTES, ConnectionSecurity, describe_refusal,
)

log = logging.getLogger(__name__)

_NATIVE, _KAFKA = "native", "kafka"


def sniff_protocol(first_byte: int) -> str | None:
    """Which protocol a connection speaks, from the first byte of its first frame."""
    if first_byte == 0x00:
        return _KAFKA
    if 0x90 <= first_byte <= 0x9F or first_byte in (0xDC, 0xDD):
        return _NATIVE
    return None


class _Slot:
    __slots__ = ("correlation_id", "payload", "done")

    def __init__(self, correlation_id: int):
        self.correlation_id = correlation_id
        self.payload = None
        self.done = False


_SASL_HANDSHAKE, _SASL_AUTHENTICATE = 17, 36


@implementer(IHandshakeListener)
class BrokerProtocol(KafkaWireProtocol):
    def __init__(self, handler, max_frame_bytes: int, kafka_handler=None,
                 security: ConnectionSecurity | None = None):
        super().__init__(max_frame_bytes)
        self.handler = handler
        self.kafka_handler = kafka_handler
        self.protocol_name: str | None = None
        self.client_id: str | None = None
        self._slots: deque[_Slot] = deque()
        self.security = security or ConnectionSecurity.plaintext()
        if not self.security.authenticated:
            self._decoder.max_frame_bytes = min(self.max_frame_bytes,
                                                PRE_AUTHENTICATION_MAX_FRAME_BYTES)

    @property
    def principal(self) -> str:
        """Who the client is (``User:ANONYMOUS`` until TLS or SASL says otherwise)."""
        return self.security.principal

    def handshakeCompleted(self) -> None:
        """TLS is up: an SSL client's certificate names its principal."""
        try:
            self.security.tls_handshake_completed(self.transport.getPeerCertificate())
        except Exception as exc:  # noqa: BLE001 - no principal, no service: close
            log.warning("closing TLS connection from %s: %s", self._peer(),
                        describe_refusal(exc))
            self.close_connection()

    def _refuse_before_authentication(self, api_key: int) -> bool:
        """True (and the connection closing) for a request a SASL listener does not serve
        before the client has authenticated."""
        if self.security.allowed_before_authentication(api_key):
            return False
        log.warning("closing connection from %s: %s before SASL authentication completed",
                    self._peer(), ApiKey.name_of(api_key))
        self.close_connection()
        return True

    def _sasl_done(self, close: bool) -> None:
        if close:
            self.close_connection()
        elif self.security.authenticated:
            self._decoder.max_frame_bytes = self.max_frame_bytes

    def connectionMade(self) -> None:
        self.handler.connection_opened(self)

    def connectionLost(self, reason=None) -> None:
        super().connectionLost(reason)
        self.handler.connection_closed(self)

    def frameReceived(self, payload: bytes) -> None:
        if self.protocol_name is None:
            self.protocol_name = sniff_protocol(payload[0]) if payload else None
            if self.protocol_name is None or (self.protocol_name == _KAFKA
                                              and self.kafka_handler is None):
                log.warning("closing connection from %s: its first frame starts with %r, "
                            "which is neither a Kafka request nor a kafkalite one",
                            self._peer(), bytes(payload[:1]))
                self.close_connection()
                return
        if self.protocol_name == _KAFKA:
            self._kafka_frame(payload)
        else:
            self._native_frame(payload)

    # --- Kafka's protocol --------------------------------------------------------------------
    def _kafka_frame(self, payload: bytes) -> None:
        try:
            api_key, api_version, correlation_id = kafka_codec.peek_header(payload)
        except InvalidRequestError as exc:
            log.warning("closing Kafka connection from %s: %s", self._peer(), exc)
            self.close_connection()
            return
        if self._refuse_before_authentication(api_key):
            return
        if not is_supported(api_key, api_version):
            if api_key == ApiKey.API_VERSIONS:
                # Kafka's answer to a version it does not know: v0 with UNSUPPORTED_VERSION and
                # the ranges it does support, so the client can retry with one of them.
                slot = _Slot(correlation_id)
                self._slots.append(slot)
                self._finish_kafka(slot, api_key, 0, self.kafka_handler.api_versions_dict(
                    UnsupportedVersionError.code))
                return
            log.warning("closing Kafka connection from %s: %s v%d is not supported",
                        self._peer(), ApiKey.name_of(api_key), api_version)
            self.close_connection()
            return
        try:
            header, request = kafka_codec.decode_request(payload)
        except InvalidRequestError as exc:
            log.warning("closing Kafka connection from %s: %s", self._peer(), exc)
            self.close_connection()
            return
        if api_key == ApiKey.PRODUCE and request.acks == 0:
            self._kafka_without_response(header, request)
            return
        self.client_id = header.client_id   # JoinGroup records it for DescribeGroups
        slot = _Slot(correlation_id)
        self._slots.append(slot)
        if api_key in (_SASL_HANDSHAKE, _SASL_AUTHENTICATE):
            answer, close = (self.security.kafka_handshake(request)
                             if api_key == _SASL_HANDSHAKE
                             else self.security.kafka_authenticate(request))
            self._finish_kafka(slot, api_key, api_version, answer)
            self._sasl_done(close)
            return
        try:
            result = self.kafka_handler.handle(api_key, api_version, request, self)
        except Exception as exc:  # noqa: BLE001 - a failed handler closes only this connection
            self._kafka_failed(header, exc)
            return
        if isinstance(result, defer.Deferred):
            result.addCallbacks(
                lambda values: self._finish_kafka(slot, api_key, api_version, values),
                lambda failure: self._kafka_failed(header, failure.value))
        else:
            self._finish_kafka(slot, api_key, api_version, result)

    def _kafka_without_response(self, header, request) -> None:
        try:
            result = self.kafka_handler.handle(header.api_key, header.api_version, request, self)
            if isinstance(result, defer.Deferred):
                result.addErrback(lambda f: log.warning("acks=0 produce failed: %s", f.value))
        except Exception as exc:  # noqa: BLE001
            log.warning("acks=0 produce from %s failed: %s", self._peer(), exc)

    def _kafka_failed(self, header, exc: BaseException) -> None:
        if isinstance(exc, KafkaError):
            log.warning("closing Kafka connection from %s (client %s): %s v%d failed: %s",
                        self._peer(), header.client_id, ApiKey.name_of(header.api_key),
                        header.api_version, exc.message)
        else:
            log.error("closing Kafka connection from %s (client %s): %s v%d failed",
                      self._peer(), header.client_id, ApiKey.name_of(header.api_key),
                      header.api_version, exc_info=exc)
        self.close_connection()

    def _finish_kafka(self, slot: _Slot, api_key: int, api_version: int, values) -> None:
        try:
            slot.payload = kafka_codec.encode_response(api_key, api_version,
                                                       slot.correlation_id, values)
        except Exception as exc:  # noqa: BLE001 - a handler built a bad response
            log.error("cannot encode %s v%d response", ApiKey.name_of(api_key), api_version,
                      exc_info=exc)
            self.close_connection()
            return
        self._release(slot)

    # --- kafkalite's native protocol ---------------------------------------------------------
    def _native_frame(self, payload: bytes) -> None:
        try:
            header, body = decode_request_envelope(payload)
        except InvalidRequestError as exc:
            log.warning("closing connection from %s: %s", self._peer(), exc)
            self.close_connection()
            return
        if self._refuse_before_authentication(header.api_key):
            return
        slot = _Slot(header.correlation_id)
        try:
            request = parse_request_body(header, body)
        except (InvalidRequestError, UnsupportedVersionError) as exc:
            log.info("bad request from %s (client %s, api %s v%s): %s", self._peer(),
                     header.client_id, header.api_key, header.api_version, exc)
            self._slots.append(slot)
            self._finish(slot, RequestErrorResponse(error_code=code_of(exc),
                                                    error_message=exc.message), 0)
            return
        if not request.expects_response():
            self._handle_without_response(header, request)
            return
        self._slots.append(slot)
        if header.api_key in (_SASL_HANDSHAKE, _SASL_AUTHENTICATE):
            response, close = (self.security.native_handshake(request)
                               if header.api_key == _SASL_HANDSHAKE
                               else self.security.native_authenticate(request))
            self._finish(slot, response, header.api_version)
            self._sasl_done(close)
            return
        try:
            result = self.handler.handle(header, request, self)
        except Exception as exc:  # noqa: BLE001 - every failure becomes an error response
            self._finish(slot, self._error_for(request, exc), header.api_version)
            return
        if isinstance(result, defer.Deferred):
            result.addCallbacks(
                lambda response: self._finish(slot, response, header.api_version),
                lambda failure: self._finish(slot, self._error_for(request, failure.value),
                                             header.api_version))
        else:
            self._finish(slot, result, header.api_version)

    def _handle_without_response(self, header, request) -> None:
        try:
            result = self.handler.handle(header, request, self)
            if isinstance(result, defer.Deferred):
                result.addErrback(lambda f: log.warning("acks=0 request failed: %s", f.value))
        except Exception as exc:  # noqa: BLE001
            log.warning("acks=0 request from %s failed: %s", self._peer(), exc)

    @staticmethod
    def _error_for(request, exc: BaseException):
        if not isinstance(exc, KafkaError):
            log.error("unexpected error handling %s", type(request).__name__, exc_info=exc)
        message = exc.message if isinstance(exc, KafkaError) else f"{type(exc).__name__}: {exc}"
        try:
            return request.error_response(code_of(exc), message)
        except Exception:  # noqa: BLE001
            return RequestErrorResponse(error_code=code_of(exc), error_message=message)

    def _finish(self, slot: _Slot, response, api_version: int) -> None:
        try:
            slot.payload = encode_response_payload(slot.correlation_id,
                                                   response.to_body(api_version))
        except Exception as exc:  # noqa: BLE001 - a handler built a bad response
            log.error("cannot encode response %s", type(response).__name__, exc_info=exc)
            slot.payload = encode_response_payload(
                slot.correlation_id,
                RequestErrorResponse(error_code=-1, error_message=str(exc)).to_body(0))
        self._release(slot)

    def _release(self, slot: _Slot) -> None:
        slot.done = True
        while self._slots and self._slots[0].done:
            ready = self._slots.popleft()
            self.send_frame(ready.payload)


class BrokerFactory(Factory):
    """Connections of one listener. ``listener_security`` (None: PLAINTEXT) says what the
    listener demands; ``scram_lookup(mechanism, user)`` gives SCRAM credentials."""

    def __init__(self, handler, max_frame_bytes: int, listener_name: str = "PLAINTEXT",
                 kafka_handler=None, listener_security=None, scram_lookup=None):
        self.handler = handler
        self.kafka_handler = kafka_handler
        self.max_frame_bytes = max_frame_bytes
        self.listener_name = listener_name
        self.listener_security = listener_security
        self.scram_lookup = scram_lookup

    def buildProtocol(self, addr):
        security = ConnectionSecurity(self.listener_security, self.scram_lookup)
        protocol = BrokerProtocol(self.handler, self.max_frame_bytes, self.kafka_handler,
                                  security)
        protocol.factory = self
        return protocol
