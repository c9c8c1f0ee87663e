"""Kafka's wire, for the converter tests: the versions the API table advertises, a request entity
as the broker decodes it off the wire, and a response as a client decodes it (both through kio,
independently of kafkalite's converters)."""

from __future__ import annotations

from kafkalite.protocol.kafka import codec
from kafkalite.server.api_table import TABLE

__all__ = ["advertised_versions", "request_entity", "response_round_trip"]


def advertised_versions(api_key: int) -> list[int]:
    low, high = TABLE[api_key].kafka_versions
    return list(range(low, high + 1))


def request_entity(api_key: int, version: int, body: dict):
    """A kio request entity as the broker decodes it off the wire."""
    return codec.decode_request(codec.encode_request(api_key, version, 7, "test", body))[1]


def response_round_trip(api_key: int, version: int, values: dict):
    """The response entity a client decodes from what the broker would send for ``values``."""
    return codec.decode_response(api_key, version,
                                 codec.encode_response(api_key, version, 7, values))[1]
