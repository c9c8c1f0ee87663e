"""The Kafka-protocol versions kafkalite can speak for an API: those kio ships, up to a maximum.

The maxima are in the broker's API table (``server.api_table``): Apache Kafka 2.8's client-facing
set, so every client stays on a code path it was tested against. The broker-only APIs
(LeaderAndIsr, UpdateMetadata, StopReplica, ControlledShutdown) have none there: brokers and the
controller talk kafkalite's native protocol.

The minima are the lowest versions the schema library (kio) ships. kio follows Kafka 4.0, which
dropped the pre-0.11 versions (KIP-896: Produce below 3, Fetch below 4, ...), which carry the
v0/v1 message formats. Fetch v0-v3 are the exception: kafkalite has their schemas
(``fetch_v0_v3``) and down-converts what such a fetch reads, as Kafka 2.8 does.
"""

from __future__ import annotations

from functools import lru_cache

from kio.index import api_key_map, schema_name_map

from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka import fetch_v0_v3


__all__ = ["kio_range"]


def _kio_versions(api_key: int) -> list[int]:
    name = api_key_map.get(api_key)
    if name is None:
        return []
    versions = set(schema_name_map.get(name, {}))
    if api_key == ApiKey.FETCH:
        versions |= set(fetch_v0_v3.VERSIONS)   # kafkalite's schemas of Fetch v0-v3
    return sorted(versions)


@lru_cache(maxsize=None)
def kio_range(api_key: int, high: int) -> tuple[int, int] | None:
    """``(lowest, highest)`` version of ``api_key`` up to ``high`` that kio can read and write;
    None when it has none."""
    known = [v for v in _kio_versions(api_key) if v <= high]
    return (known[0], known[-1]) if known else None
