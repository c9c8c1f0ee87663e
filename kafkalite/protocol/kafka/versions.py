"""Which Kafka APIs and versions a kafkalite broker advertises to Kafka clients.

The maxima are Apache Kafka 2.8's client-facing set (REFERENCE.md, "Kafka 2.8 advertises"): clients
pick, per API, the highest version both sides know, so advertising one real release's maxima
keeps every client on a code path it was tested against. The group APIs are served by the
broker's group coordinator (``kafkalite.coordinator``); librdkafka also takes FindCoordinator as
the sign that a broker reads LZ4 batches (its LZ4 feature depends on that API, both having come
with Kafka 0.8.2), and sends ``compression.type=lz4`` batches uncompressed to a broker without
it. SASL and ACL APIs are left out until security exists; broker-only APIs (LeaderAndIsr,
UpdateMetadata, StopReplica, ControlledShutdown) are never shown to clients, since brokers and the
controller talk kafkalite's native protocol.

The minima are the lowest versions the schema library (kio) ships. kio follows Kafka 4.0, which
dropped the pre-0.11 versions (KIP-896: Produce below 3, Fetch below 4, ...); those versions carry
the v0/v1 message formats, which kafkalite does not store, so leaving them out is also honest.
"""

from __future__ import annotations

from functools import lru_cache

from kio.index import api_key_map, schema_name_map

from kafkalite.protocol.api_keys import ApiKey

__all__ = ["KAFKA_28_MAX_VERSIONS", "supported_versions", "version_range", "is_supported"]

#: api key -> the highest version Kafka 2.8 advertises, for the APIs kafkalite serves to clients
KAFKA_28_MAX_VERSIONS: dict[int, int] = {
    ApiKey.PRODUCE: 9,
    ApiKey.FETCH: 12,
    ApiKey.LIST_OFFSETS: 6,
    ApiKey.METADATA: 11,
    ApiKey.API_VERSIONS: 3,
    ApiKey.INIT_PRODUCER_ID: 4,
    ApiKey.CREATE_TOPICS: 7,
    ApiKey.DELETE_TOPICS: 6,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: 4,
    10: 3,   # FindCoordinator
    11: 7,   # JoinGroup
    12: 4,   # Heartbeat
    13: 4,   # LeaveGroup
    14: 5,   # SyncGroup
    15: 5,   # DescribeGroups
    16: 4,   # ListGroups
    8: 8,    # OffsetCommit
    9: 7,    # OffsetFetch
    42: 2,   # DeleteGroups
    47: 0,   # OffsetDelete
    37: 3,   # CreatePartitions
    32: 4,   # DescribeConfigs
    33: 2,   # AlterConfigs
    44: 1,   # IncrementalAlterConfigs
    60: 0,   # DescribeCluster
    21: 2,   # DeleteRecords
    17: 1,   # SaslHandshake (answered by the connection: server.connection_security)
    36: 2,   # SaslAuthenticate
    29: 2,   # DescribeAcls
    30: 2,   # CreateAcls
    31: 2,   # DeleteAcls
}


def _kio_versions(api_key: int) -> list[int]:
    name = api_key_map.get(api_key)
    if name is None:
        return []
    return sorted(schema_name_map.get(name, {}))


@lru_cache(maxsize=None)
def supported_versions() -> dict[int, tuple[int, int]]:
    """``{api_key: (min_version, max_version)}`` as advertised in ApiVersions."""
    table: dict[int, tuple[int, int]] = {}
    for api_key, high in KAFKA_28_MAX_VERSIONS.items():
        known = [v for v in _kio_versions(api_key) if v <= high]
        if known:
            table[int(api_key)] = (known[0], known[-1])
    return table


def version_range(api_key: int) -> tuple[int, int] | None:
    return supported_versions().get(api_key)


def is_supported(api_key: int, api_version: int) -> bool:
    bounds = supported_versions().get(api_key)
    return bounds is not None and bounds[0] <= api_version <= bounds[1]
