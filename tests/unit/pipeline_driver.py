"""Driving the broker's real request pipeline in unit tests: a ``BrokerProtocol`` on a Twisted
``StringTransport`` (no sockets, no reactor), frames of either protocol in, decoded answers out.

Typical use, for a handler family::

    dispatcher = ApiDispatcher(fake_broker)               # the real TABLE, or table={...}
    protocol, transport = connect(dispatcher)
    protocol.dataReceived(kafka_frame(ApiKey.METADATA, 11, 7, {...}))
    [(correlation_id, entity)] = read_kafka_responses(transport, [(ApiKey.METADATA, 11)])

    protocol, transport = connect(dispatcher)
    protocol.dataReceived(native_frame(m.MetadataRequest(), 8))
    [(correlation_id, response)] = read_native_responses(transport, [ApiKey.METADATA])

To drive the pipeline itself (codecs, ordering, error policy) without real handlers, give the
dispatcher a table of ``ApiSpec`` rows whose handlers are a ``Script``'s::

    script = Script()
    rows = [ApiSpec(ApiKey.METADATA, 11, script.handler(answer_metadata), converter)]
    dispatcher = ApiDispatcher(None, table=table_of(rows))
    script.behaviour[ApiKey.METADATA] = "defer"       # or an exception to raise
"""

from __future__ import annotations

import struct
from types import SimpleNamespace
from typing import Any, Callable, NamedTuple

from twisted.internet import defer
from twisted.internet.testing import StringTransport

from kafkalite.protocol.envelope import decode_response as decode_native_response
from kafkalite.protocol.envelope import encode_request as encode_native_request
from kafkalite.protocol.framing import encode_frame
from kafkalite.protocol.kafka import codec as kafka_codec
from kafkalite.server.network import BrokerProtocol

__all__ = ["Call", "Script", "connect", "feed_bytewise", "kafka_frame", "listener_factory",
           "native_frame", "read_frames", "read_kafka_responses", "read_native_responses",
           "table_of"]


class Call(NamedTuple):
    ctx: Any           # the RequestContext the dispatcher built
    request: Any       # the model request (a Kafka request converted by the row's converter)


class Script:
    """Handlers for a test table that record each call and do what the test says, per API key:
    ``behaviour[api_key]`` is ``"defer"`` (answer later: ``deferreds[api_key]`` holds the
    Deferreds handed out), an exception (raised), or a function ``(ctx, request) -> answer``;
    without one, the handler's own ``answer`` is used."""

    def __init__(self):
        self.calls: list[Call] = []
        self.deferreds: dict[int, list[defer.Deferred]] = {}
        self.behaviour: dict[int, Any] = {}

    def handler(self, answer: Callable[[Any, Any], Any]):
        """A row's ``handler``, answering with ``answer(ctx, request)`` unless told
        otherwise."""
        def handle(broker, ctx, request):
            self.calls.append(Call(ctx, request))
            what = self.behaviour.get(ctx.api_key, answer)
            if what == "defer":
                d = defer.Deferred()
                self.deferreds.setdefault(ctx.api_key, []).append(d)
                return d
            if isinstance(what, BaseException):
                raise what
            return what(ctx, request)
        return handle

    def keys_called(self) -> list[int]:
        return [call.ctx.api_key for call in self.calls]


def table_of(rows) -> dict:
    """An API table (``{api key: ApiSpec}``) of ``rows``."""
    return {spec.key: spec for spec in rows}


def listener_factory(listener_name: str = "PLAINTEXT", listener_security=None):
    """What a connection reads of its ``BrokerFactory``: the listener's name and security."""
    return SimpleNamespace(listener_name=listener_name, listener_security=listener_security)


def connect(dispatcher, security=None, max_frame_bytes: int = 1 << 20, listener=None):
    """``(protocol, transport)``: a connection of ``dispatcher``'s broker, already made.
    ``security``: a ``ConnectionSecurity`` (None: PLAINTEXT); ``listener``: a listener name
    (the connection's ``factory.listener_name``; None: no factory, as for a bare protocol)."""
    protocol = BrokerProtocol(dispatcher, max_frame_bytes, security)
    if listener is not None:
        protocol.factory = listener_factory(listener)
    transport = StringTransport()
    protocol.makeConnection(transport)
    return protocol, transport


def feed_bytewise(protocol, data: bytes) -> None:
    """Deliver ``data`` one byte per ``dataReceived``: the framing must reassemble it."""
    for i in range(len(data)):
        protocol.dataReceived(data[i:i + 1])


def kafka_frame(api_key: int, version: int, correlation_id: int, values: dict,
                client_id: str | None = "test") -> bytes:
    """A whole Kafka request frame (length prefix included); ``values`` as for
    ``protocol.kafka.entities.build`` (the request's fields, by name)."""
    return encode_frame(kafka_codec.encode_request(api_key, version, correlation_id, client_id,
                                                   values))


def native_frame(request, correlation_id: int, api_version: int = 0,
                 client_id: str | None = "test") -> bytes:
    """A whole native request frame for a ``protocol.messages`` request."""
    return encode_native_request(request, api_version, correlation_id, client_id)


def read_frames(transport, clear: bool = True) -> list[bytes]:
    """The payloads of every whole frame written so far (``clear``: and forget them)."""
    data = transport.value()
    if clear:
        transport.clear()
    out, pos = [], 0
    while pos < len(data):
        assert len(data) >= pos + 4, "a partial length prefix was written"
        (length,) = struct.unpack_from(">i", data, pos)
        assert len(data) >= pos + 4 + length, "a partial frame was written"
        out.append(data[pos + 4:pos + 4 + length])
        pos += 4 + length
    return out


def read_kafka_responses(transport, expected, clear: bool = True) -> list[tuple[int, object]]:
    """``[(correlation_id, kio response entity)]`` of exactly the answers ``expected``
    (``[(api_key, version), ...]``) in order; fails on a missing or extra answer."""
    payloads = read_frames(transport, clear)
    assert len(payloads) == len(expected), \
        f"{len(payloads)} answers written, expected {len(expected)}"
    return [kafka_codec.decode_response(api_key, version, payload)
            for (api_key, version), payload in zip(expected, payloads)]


def read_native_responses(transport, api_keys, api_version: int = 0,
                          clear: bool = True) -> list[tuple[int, object]]:
    """``[(correlation_id, response)]`` of exactly the native answers to ``api_keys``, in order
    (a ``RequestErrorResponse`` where the broker refused the request as a whole)."""
    payloads = read_frames(transport, clear)
    assert len(payloads) == len(api_keys), \
        f"{len(payloads)} answers written, expected {len(api_keys)}"
    return [decode_native_response(payload, api_key, api_version)
            for api_key, payload in zip(api_keys, payloads)]
