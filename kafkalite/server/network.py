"""The broker's side of a client connection: tell the protocol, decode each frame, serve it through
the API table, answer in order.

Every listener serves two protocols on one port. The first frame decides, once per connection:
a Kafka request starts with an int16 api_key below 256, so its first byte is 0x00; a native
request is a msgpack array, whose first byte is 0x90-0x9f, 0xdc or 0xdd. Anything else closes the
connection.

After that one decision there is one path (docs/architecture.md, "The request pipeline"):

1. the protocol's codec (``KafkaCodec``, ``NativeCodec``) reads the header and checks the API and
   version against the table (``server.api_table``);
2. on a SASL listener, nothing but ApiVersions, SaslHandshake and SaslAuthenticate is served
   before the client has authenticated (Kafka's rule): anything else closes the connection;
3. the codec decodes the body into the protocol-neutral model (``protocol.messages``);
4. the dispatcher builds the ``RequestContext`` and calls the API's one handler;
5. the codec encodes the answer; a Produce with acks=0 gets none.

One error policy for both protocols, Kafka's: a frame that cannot be read as a request closes the
connection (for native clients, a readable header with a bad body, an unknown API or version gets
an error answer naming the problem, since there is no ApiVersions dance to fall back on); a handler
that fails answers with the request's error response (Kafka's ``getErrorResponse``). An answer
that cannot be encoded is a bug and is logged: a Kafka connection closes, a native one gets an
error answer (its client raises it).

A listener's security (``listener.security.protocol.map``) wraps this: TLS listeners are served
through Twisted's TLS (the principal of an SSL client comes from its certificate once the
handshake completes); ``connection_security.ConnectionSecurity`` keeps the SASL state and the
principal.

One request at a time per connection, as Kafka's processor does (it mutes a channel from the
moment a request is read until its answer is sent). A client may pipeline many requests; the
frames wait here, in order, and the next is served only when the previous one has been answered
(or, for a Produce with acks=0, served). Clients rely on it: librdkafka sends AddPartitionsToTxn
and, right behind it, EndTxn on one connection, and the second must see the first's effect; a
controller's LeaderAndIsr must be applied before the UpdateMetadata that follows it. Past
``QUEUED_FRAMES_BEFORE_PAUSE`` waiting frames the socket stops being read, so a client that
pipelines without bound is held back by TCP as Kafka's muted channel holds it.

A client over its quota (``server.quota_throttle``) gets its answer at once, carrying
``throttle_time_ms``, and the connection is then muted for that long (KIP-219): ``throttle(ms)``
sets a "throttled until" and the next request waits for it (a reactor ``callLater``, the clock
injectable), as Kafka's processor keeps a throttled channel muted until the throttle ends.
"""

from __future__ import annotations

import logging
import time
from collections import deque

from twisted.internet import defer
from twisted.internet.interfaces import IHandshakeListener
from twisted.internet.protocol import Factory
from zope.interface import implementer

from kafkalite.errors import KafkaError, NotControllerError, code_of
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.connection import KafkaWireProtocol
from kafkalite.server.connection_security import (
    PRE_AUTHENTICATION_MAX_FRAME_BYTES, ConnectionSecurity, describe_refusal,
)
from kafkalite.server.request_codecs import CODECS, Refused, sniff_protocol
from kafkalite.server.request_watch import InBroker, bound_of

log = logging.getLogger(__name__)

__all__ = ["BrokerProtocol", "BrokerFactory", "sniff_protocol"]

# frames read ahead of the one being served before the transport is paused (Kafka reads none
# ahead; a few keep a pipelining client's next requests off the critical path)
QUEUED_FRAMES_BEFORE_PAUSE = 8
# a throttle this close to its end is over (float rounding must not re-arm the timer)
_THROTTLE_SLACK_S = 0.0005


@implementer(IHandshakeListener)
class BrokerProtocol(KafkaWireProtocol):
    def __init__(self, dispatcher, max_frame_bytes: int,
                 security: ConnectionSecurity | None = None, clock=None):
        super().__init__(max_frame_bytes)
        if clock is None:
            from twisted.internet import reactor as clock  # only when none is injected
        self.clock = clock
        self._throttled_until = 0.0             # clock seconds: no request served before
        self._throttle_end = None               # the callLater that ends the mute
        self.dispatcher = dispatcher
        self.codec = None                       # chosen by the first frame
        self.client_id: str | None = None
        self._waiting: deque[bytes] = deque()   # frames read while a request is being served
        self._serving = False                   # a request is in the broker, unanswered
        self._draining = False
        self._paused = False
        self.in_broker: InBroker | None = None    # the request being served (request_watch)
        self.reported_overdue: InBroker | None = None
        self.security = security or ConnectionSecurity.plaintext()
        # the client's address, read once in connectionMade: getPeer builds an attrs address and
        # runs its validators on every call (~6% of serving a produce request in a py-spy
        # profile when it was asked per request); "" when the peer is not an IP one
        self.peer_host = ""
        if not self.security.authenticated:
            self._decoder.max_frame_bytes = min(self.max_frame_bytes,
                                                PRE_AUTHENTICATION_MAX_FRAME_BYTES)

    @property
    def protocol_name(self) -> str | None:
        return None if self.codec is None else self.codec.name

    @property
    def principal(self) -> str:
        """Who the client is (``User:ANONYMOUS`` until TLS or SASL says otherwise)."""
        return self.security.principal

    def peer_description(self) -> str:
        return self._peer()

    def handshakeCompleted(self) -> None:
        """TLS is up: an SSL client's certificate names its principal."""
        try:
            self.security.tls_handshake_completed(self.transport.getPeerCertificate())
        except Exception as exc:  # noqa: BLE001 - no principal, no service: close
            log.warning("closing TLS connection from %s: %s", self._peer(),
                        describe_refusal(exc))
            self.close_connection()

    def connectionMade(self) -> None:
        try:
            self.peer_host = self.transport.getPeer().host
        except AttributeError:      # not an IP peer (a UNIX socket) or a test transport
            self.peer_host = ""
        self.dispatcher.connection_opened(self)

    def connectionLost(self, reason=None) -> None:
        super().connectionLost(reason)
        self._waiting.clear()
        if self._throttle_end is not None and self._throttle_end.active():
            self._throttle_end.cancel()
        self._throttle_end = None
        self.dispatcher.connection_closed(self)

    # --- one request at a time -----------------------------------------------------------------
    def frameReceived(self, payload: bytes) -> None:
        self._waiting.append(payload)
        if self._serving:
            if len(self._waiting) >= QUEUED_FRAMES_BEFORE_PAUSE and not self._paused:
                self._paused = True
                self.transport.pauseProducing()
            return
        self._drain()

    def _drain(self) -> None:
        """Serve waiting frames in order while none is in the broker. A loop, not recursion: a
        request answered synchronously hands over to the next one here."""
        if self._draining:
            return
        self._draining = True
        try:
            while self._waiting and not self._serving and not self._closing:
                self._serving = True
                try:
                    self._serve(self._waiting.popleft())
                except Exception:  # noqa: BLE001 - as an exception escaping frameReceived
                    log.exception("unhandled error serving a request from %s; closing",
                                  self._peer())
                    self.close_connection()
        finally:
            self._draining = False
        if self._paused and not self._waiting and not self._closing:
            self._paused = False
            self.transport.resumeProducing()

    def throttle(self, throttle_ms: int) -> None:
        """Mute the connection for ``throttle_ms`` from now (KIP-219): the answer being sent
        goes out, the next request waits."""
        if throttle_ms > 0:
            self._throttled_until = max(self._throttled_until,
                                        self.clock.seconds() + throttle_ms / 1000.0)

    def _request_done(self) -> None:
        """The request in the broker was answered (or served without an answer): the next,
        unless the connection is throttled (then when the throttle ends)."""
        self.in_broker = None
        remaining = self._throttled_until - self.clock.seconds()
        if remaining > _THROTTLE_SLACK_S and not self._closing:
            if self._throttle_end is None or not self._throttle_end.active():
                self._throttle_end = self.clock.callLater(remaining, self._request_done)
            return                              # still "serving": later frames wait
        self._throttle_end = None
        self._serving = False
        if self._waiting:
            self._drain()
        elif self._paused and not self._closing:
            self._paused = False
            self.transport.resumeProducing()

    # --- one request ---------------------------------------------------------------------------
    def _serve(self, payload: bytes) -> None:
        if self.codec is None:
            name = sniff_protocol(payload[0]) if payload else None
            if name is None:
                log.warning("closing connection from %s: its first frame starts with %r, "
                            "which is neither a Kafka request nor a kafkalite one",
                            self._peer(), bytes(payload[:1]))
                self.close_connection()
                return
            self.codec = CODECS[name]
        codec = self.codec
        try:
            head = codec.read_header(payload, self.dispatcher)
        except Refused as refused:
            self._refused(refused)
            return
        if not self.security.allowed_before_authentication(head.api_key):
            log.warning("closing connection from %s: %s before SASL authentication completed",
                        self._peer(), ApiKey.name_of(head.api_key))
            self.close_connection()
            return
        try:
            request = codec.read_body(payload, head)
        except Refused as refused:
            self._refused(refused)
            return
        if head.client_id is not None:
            self.client_id = head.client_id
        ctx = self.dispatcher.context(self, codec.name, head.api_key, head.api_version,
                                      head.correlation_id, head.client_id)
        if not self.dispatcher.listener_may_carry(head.spec, ctx.listener):
            exc = _wrong_listener(head.spec, ctx.listener)
            log.warning("refused %s from %s: %s", head.spec.name, self._peer(), exc.message)
            self._answer_error(head, request, exc)
            return
        if not codec.expects_response(head, request):
            self._serve_without_answer(head, ctx, request)
            return
        self.in_broker = InBroker(head.spec.name, head.api_version, head.correlation_id,
                                  time.monotonic(), bound_of(request))
        try:
            result = codec.call(self.dispatcher, head, ctx, request)
        except Exception as exc:  # noqa: BLE001 - a failed handler answers with an error
            self._failed(head, request, exc)
            return
        if isinstance(result, defer.Deferred):
            result.addCallbacks(lambda response: self._finish(head, request, response),
                                lambda failure: self._failed(head, request, failure.value))
        else:
            self._finish(head, request, result)

    def _serve_without_answer(self, head, ctx, request) -> None:
        try:
            result = self.codec.call(self.dispatcher, head, ctx, request)
        except Exception as exc:  # noqa: BLE001
            log.warning("acks=0 request from %s failed: %s", self._peer(), exc)
            self._request_done()
            return
        if isinstance(result, defer.Deferred):
            result.addErrback(lambda f: log.warning("acks=0 request failed: %s", f.value))
            result.addBoth(lambda _: self._request_done())
        else:
            self._request_done()

    def _refused(self, refused: Refused) -> None:
        """A request that cannot be served as sent: answer (when the codec has an answer for
        it) or close."""
        if refused.answer is None:
            log.warning("closing %s connection from %s: %s", self.codec.name, self._peer(),
                        refused.reason)
            self.close_connection()
            return
        log.info("bad request from %s (client %s): %s", self._peer(), self.client_id,
                 refused.reason)
        self._answer(refused.answer)

    def _answer_error(self, head, request, exc: KafkaError) -> None:
        self._failed(head, request, exc)

    def _failed(self, head, request, exc: BaseException) -> None:
        if isinstance(exc, KafkaError):
            log.info("%s v%d from %s (client %s) failed: %s", head.spec.name, head.api_version,
                     self._peer(), self.client_id, exc.message)
        else:
            log.error("%s v%d from %s (client %s) failed", head.spec.name, head.api_version,
                      self._peer(), self.client_id, exc_info=exc)
        message = exc.message if isinstance(exc, KafkaError) else f"{type(exc).__name__}: {exc}"
        try:
            response = self.codec.error_response(head, request, code_of(exc), message)
            # client quotas (quota_throttle): taken off, the exception may be raised again
            throttle = getattr(exc, "__dict__", {}).pop("throttle_time_ms", 0)
            if throttle and hasattr(response, "throttle_time_ms"):
                response.throttle_time_ms = throttle
        except Exception as error:  # noqa: BLE001 - no error response: close, as Kafka does
            log.warning("closing %s connection from %s: %s", self.codec.name, self._peer(),
                        error)
            self.close_connection()
            return
        self._finish(head, request, response)

    def _finish(self, head, request, response) -> None:
        try:
            payload = self.codec.encode(head, request, response)
        except Exception as exc:  # noqa: BLE001 - a handler built a bad response
            log.error("cannot encode %s v%d response", head.spec.name, head.api_version,
                      exc_info=exc)
            self.close_connection()
            return
        if self.security.close_after_answer:
            self.send_frame(payload)
            self.close_connection()
            return
        if self.security.authenticated:
            self._decoder.max_frame_bytes = self.max_frame_bytes
        self._answer(payload)

    def _answer(self, payload: bytes) -> None:
        self.send_frame(payload)
        self._request_done()


def _wrong_listener(spec, listener) -> KafkaError:
    return NotControllerError(f"{spec.name} is accepted only on the controller's listener, "
                              f"not on {listener}")


class BrokerFactory(Factory):
    """Connections of one listener. ``listener_security`` (None: PLAINTEXT) says what the
    listener demands; ``scram_lookup(mechanism, user)`` gives SCRAM credentials."""

    def __init__(self, dispatcher, max_frame_bytes: int, listener_name: str = "PLAINTEXT",
                 listener_security=None, scram_lookup=None, token_lookup=None, clock=None):
        self.dispatcher = dispatcher
        self.clock = clock                    # the reactor (None: the global one)
        self.max_frame_bytes = max_frame_bytes
        self.listener_name = listener_name
        self.listener_security = listener_security
        self.scram_lookup = scram_lookup
        self.token_lookup = token_lookup      # delegation tokens' SCRAM credentials

    def buildProtocol(self, addr):
        security = ConnectionSecurity(self.listener_security, self.scram_lookup,
                                      self.token_lookup)
        protocol = BrokerProtocol(self.dispatcher, self.max_frame_bytes, security, self.clock)
        protocol.factory = self
        return protocol
