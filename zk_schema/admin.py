"""``/admin/*``: requests to the controller.

- ``/admin/delete_topics/<t>``: empty; its presence marks the topic for deletion.
- ``/admin/reassign_partitions``: ``{"version":1,"partitions":[{"topic","partition","replicas":[…]}]}``.
- ``/admin/preferred_replica_election``: ``{"version":1,"partitions":[{"topic","partition"}]}``.
"""

from __future__ import annotations

from dataclasses import dataclass

from zk_schema._codec import (
    SchemaError, dump, field as get_field, int_field, int_list, load_object, str_field,
    topic_partition_list,
)
from zk_schema.topics import validate_topic_name

ADMIN_PATH = "/admin"
DELETE_TOPICS_PATH = "/admin/delete_topics"
REASSIGN_PARTITIONS_PATH = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION_PATH = "/admin/preferred_replica_election"
DELETE_TOPIC_MARKER = b""


def delete_topics_path() -> str:
    return DELETE_TOPICS_PATH


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS_PATH}/{validate_topic_name(topic)}"


def reassign_partitions_path() -> str:
    return REASSIGN_PARTITIONS_PATH


def preferred_replica_election_path() -> str:
    return PREFERRED_REPLICA_ELECTION_PATH


@dataclass(frozen=True)
class PartitionReassignment:
    """Target replica lists per (topic, partition)."""

    partitions: dict[tuple[str, int], tuple[int, ...]]
    zk_version: int | None = None

    def encode(self) -> bytes:
        return dump({"version": 1, "partitions": [
            {"topic": t, "partition": p, "replicas": list(r)}
            for (t, p), r in sorted(self.partitions.items())
        ]})

    @classmethod
    def decode(cls, data: bytes, zk_version: int | None = None) -> "PartitionReassignment":
        what = REASSIGN_PARTITIONS_PATH
        obj = load_object(data, what)
        items = get_field(obj, "partitions", what)
        if not isinstance(items, list):
            raise SchemaError(f"{what}: field 'partitions' must be a list")
        out: dict[tuple[str, int], tuple[int, ...]] = {}
        for item in items:
            if not isinstance(item, dict):
                raise SchemaError(f"{what}: each partition must be an object, got {item!r}")
            tp = (str_field(item, "topic", what), int_field(item, "partition", what))
            out[tp] = int_list(get_field(item, "replicas", what), what, "replicas")
        return cls(partitions=out, zk_version=zk_version)


@dataclass(frozen=True)
class PreferredReplicaElection:
    """Partitions whose preferred (first assigned) replica should become leader."""

    partitions: tuple[tuple[str, int], ...]
    zk_version: int | None = None

    def encode(self) -> bytes:
        return dump({"version": 1, "partitions": [
            {"topic": t, "partition": p} for t, p in self.partitions
        ]})

    @classmethod
    def decode(cls, data: bytes, zk_version: int | None = None) -> "PreferredReplicaElection":
        obj = load_object(data, PREFERRED_REPLICA_ELECTION_PATH)
        return cls(partitions=topic_partition_list(obj, PREFERRED_REPLICA_ELECTION_PATH),
                   zk_version=zk_version)
