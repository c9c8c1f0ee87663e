"""The broker's side of a client connection: decode each frame, dispatch, answer in order.

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
from twisted.internet.protocol import Factory

from kafkalite.errors import InvalidRequestError, KafkaError, UnsupportedVersionError, code_of
from kafkalite.protocol.connection import KafkaWireProtocol
from kafkalite.protocol.envelope import (decode_request_envelope, encode_response_payload,
                                         parse_request_body)
from kafkalite.protocol.messages import RequestErrorResponse

log = logging.getLogger(__name__)

_NO_RESPONSE = object()


class _Slot:
    __slots__ = ("correlation_id", "payload", "done")

    def __init__(self, correlation_id: int):
        self.correlation_id = correlation_id
        self.payload = None
        self.done = False


class BrokerProtocol(KafkaWireProtocol):
    def __init__(self, handler, max_frame_bytes: int):
        super().__init__(max_frame_bytes)
        self.handler = handler
        self._slots: deque[_Slot] = deque()

    def connectionMade(self) -> None:
        self.handler.connection_opened(self)

    def connectionLost(self, reason=None) -> None:
        super().connectionLost(reason)
        self.handler.connection_closed(self)

    def frameReceived(self, payload: bytes) -> None:
        try:
            header, body = decode_request_envelope(payload)
        except InvalidRequestError as exc:
            log.warning("closing connection from %s: %s", self._peer(), exc)
            self.close_connection()
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
        slot.done = True
        while self._slots and self._slots[0].done:
            ready = self._slots.popleft()
            self.send_frame(ready.payload)


class BrokerFactory(Factory):
    def __init__(self, handler, max_frame_bytes: int, listener_name: str = "PLAINTEXT"):
        self.handler = handler
        self.max_frame_bytes = max_frame_bytes
        self.listener_name = listener_name

    def buildProtocol(self, addr):
        protocol = BrokerProtocol(self.handler, self.max_frame_bytes)
        protocol.factory = self
        return protocol
