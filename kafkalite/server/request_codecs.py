"""The two wire protocols a listener speaks, as codecs the connection pipeline drives alike.

``KafkaCodec`` reads Kafka's request frames with kio (``protocol.kafka.codec``) and converts each
body into the protocol-neutral model with the API's converter (``protocol.kafka.convert``);
``NativeCodec`` reads kafkalite's msgpack envelope, whose bodies are the model already
(``protocol.envelope``). Both check the API and version against the API table, so what is
advertised and what is served cannot drift apart.

A request that cannot be served as sent raises ``Refused``: with an ``answer`` (bytes to send) the
connection answers it and goes on, without one it closes. Kafka's clients get an answer only for
an ApiVersions of a version the broker does not know (v0, UNSUPPORTED_VERSION and the ranges it
does know, so the client can retry); native clients get an error answer for any readable header.
"""

from __future__ import annotations

import logging

from kafkalite.errors import InvalidRequestError, KafkaError, UnsupportedVersionError, code_of
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.envelope import (decode_request_envelope, encode_response_payload,
                                         parse_request_body)
from kafkalite.protocol.kafka import codec as kio_codec
from kafkalite.protocol.kafka.fetch_response import encode_fetch_response
from kafkalite.protocol.kafka.produce_response import encode_produce_response
from kafkalite.protocol.messages import RequestErrorResponse
from kafkalite.server.request_context import KAFKA, NATIVE

log = logging.getLogger(__name__)

__all__ = ["CODECS", "Refused", "RequestHead", "sniff_protocol"]


def sniff_protocol(first_byte: int) -> str | None:
    """Which protocol a connection speaks, from the first byte of its first frame."""
    if first_byte == 0x00:
        return KAFKA
    if 0x90 <= first_byte <= 0x9F or first_byte in (0xDC, 0xDD):
        return NATIVE
    return None


class Refused(Exception):
    def __init__(self, reason: str, answer: bytes | None = None, correlation_id: int = 0):
        super().__init__(reason)
        self.reason = reason
        self.answer = answer
        self.correlation_id = correlation_id


class RequestHead:
    """What the codec read before the body: the header's fields and the table's row."""

    __slots__ = ("api_key", "api_version", "correlation_id", "client_id", "spec", "raw")

    def __init__(self, api_key, api_version, correlation_id, client_id, spec, raw=None):
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.spec = spec
        self.raw = raw


class KafkaCodec:
    name = KAFKA

    @staticmethod
    def read_header(payload, dispatcher) -> RequestHead:
        try:
            api_key, api_version, correlation_id = kio_codec.peek_header(payload)
        except InvalidRequestError as exc:
            raise Refused(exc.message) from None
        spec = dispatcher.spec_for(api_key)
        versions = spec.kafka_versions if spec is not None and spec.serves_kafka else None
        if versions is None or not versions[0] <= api_version <= versions[1]:
            reason = f"{ApiKey.name_of(api_key)} v{api_version} is not supported"
            if api_key != ApiKey.API_VERSIONS:
                raise Refused(reason)
            answer = kio_codec.encode_response(ApiKey.API_VERSIONS, 0, correlation_id, {
                "error_code": UnsupportedVersionError.code, "throttle_time": 0,
                "api_keys": [{"api_key": key, "min_version": low, "max_version": high}
                             for key, (low, high) in dispatcher.kafka_ranges().items()]})
            raise Refused(reason, answer, correlation_id)
        return RequestHead(api_key, api_version, correlation_id, None, spec)

    @staticmethod
    def read_body(payload, head: RequestHead):
        try:
            header, entity = kio_codec.decode_request(payload)
        except InvalidRequestError as exc:
            raise Refused(exc.message) from None
        head.client_id = header.client_id
        spec = head.spec
        try:
            return spec.kafka.request(entity, head.api_version)
        except KafkaError as exc:
            raise Refused(f"{spec.name} v{head.api_version}: {exc.message}") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise Refused(f"{spec.name} v{head.api_version} cannot be read: "
                          f"{type(exc).__name__}: {exc}") from None

    @staticmethod
    def expects_response(head: RequestHead, request) -> bool:
        return request.expects_response()     # False only for Produce with acks=0

    @staticmethod
    def call(dispatcher, head: RequestHead, ctx, request):
        return dispatcher.call(head.spec, ctx, request)

    @staticmethod
    def error_response(head: RequestHead, request, error_code: int, message: str):
        return request.error_response(error_code, message)

    @staticmethod
    def encode(head: RequestHead, request, response) -> bytes:
        # the two hottest answers, written straight (the same bytes as the generic path)
        if head.api_key == ApiKey.PRODUCE:
            payload = encode_produce_response(head.api_version, head.correlation_id, response)
            if payload is not None:
                return payload
        elif head.api_key == ApiKey.FETCH:
            payload = encode_fetch_response(head.api_version, head.correlation_id, response)
            if payload is not None:
                return payload
        values = head.spec.kafka.response(response, head.api_version)
        return kio_codec.encode_response(head.api_key, head.api_version, head.correlation_id,
                                         values)


class NativeCodec:
    name = NATIVE

    @staticmethod
    def read_header(payload, dispatcher) -> RequestHead:
        try:
            header, body = decode_request_envelope(payload)
        except InvalidRequestError as exc:
            raise Refused(exc.message) from None
        return RequestHead(header.api_key, header.api_version, header.correlation_id,
                           header.client_id, dispatcher.spec_for(header.api_key),
                           (header, body))

    @staticmethod
    def read_body(payload, head: RequestHead):
        header, body = head.raw
        head.raw = None
        spec = head.spec
        try:
            if spec is None or not spec.serves_native:
                raise UnsupportedVersionError(f"api key {head.api_key} is not served")
            request = parse_request_body(header, body)
        except (InvalidRequestError, UnsupportedVersionError) as exc:
            raise Refused(
                f"api {head.api_key} v{head.api_version}: {exc.message}",
                encode_response_payload(head.correlation_id, RequestErrorResponse(
                    error_code=code_of(exc), error_message=exc.message).to_body(0)),
                head.correlation_id) from None
        return request

    expects_response = staticmethod(KafkaCodec.expects_response)
    call = staticmethod(KafkaCodec.call)

    @staticmethod
    def error_response(head: RequestHead, request, error_code: int, message: str):
        try:
            return request.error_response(error_code, message)
        except Exception:  # noqa: BLE001 - a request without a per-API error answer
            return RequestErrorResponse(error_code=error_code, error_message=message)

    @staticmethod
    def encode(head: RequestHead, request, response) -> bytes:
        try:
            body = response.to_body(head.api_version)
        except Exception as exc:  # noqa: BLE001 - a handler built a bad response: say so
            log.error("cannot encode response %s", type(response).__name__, exc_info=exc)
            body = RequestErrorResponse(error_code=-1, error_message=str(exc)).to_body(0)
        return encode_response_payload(head.correlation_id, body)


CODECS = {KAFKA: KafkaCodec, NATIVE: NativeCodec}
