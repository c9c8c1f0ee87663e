"""Kafka's protocol to and from the protocol-neutral model (``protocol.messages``), one module per
family of APIs.

Each API has a converter: an object with ``request(entity, version) -> model request`` and
``response(model response, version) -> dict``. The dict holds the newest version's fields;
``protocol.kafka.entities.build`` keeps those that ``version`` has. Converters are pure: no
broker, no I/O, so each is tested alone (``tests/unit/test_kafka_convert_*.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["Converter"]


@dataclass(frozen=True)
class Converter:
    request: Callable[[Any, int], Any]      # (kio entity, version) -> model request
    response: Callable[[Any, int], dict]    # (model response, version) -> values to build
