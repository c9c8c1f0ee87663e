"""``/brokers/topics/<t>`` (replica assignment) and ``.../partitions/<p>/state`` (leader and ISR).

Assignment payload (Kafka's TopicZNode)::

    {"version":3,"partitions":{"0":[1,2]},"adding_replicas":{},"removing_replicas":{},"topic_id":"…"}

Kafka 2.8 writes version 3 (the version with ``topic_id``, KIP-516); versions 1 and 2 are read.

Partition state payload (Kafka's TopicPartitionStateZNode)::

    {"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1,2]}

The state znode is written only at its expected zkVersion (conditional update).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from zk_schema._codec import (
    SchemaError, dict_field, dump, field as get_field, int_field, int_list, load_object,
    random_uuid_base64, str_field,
)

TOPICS_PATH = "/brokers/topics"
ASSIGNMENT_VERSION = 3
PARTITION_STATE_VERSION = 1
NO_LEADER = -1
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")


def topic_name_problem(name: str) -> str | None:
    """Why ``name`` is not a legal topic name (Kafka's rules), or None when it is."""
    if not isinstance(name, str) or not name:
        return "topic name is empty"
    if name in (".", ".."):
        return f"topic name cannot be {name!r}"
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"topic name is longer than {MAX_TOPIC_NAME_LENGTH} characters"
    if not _LEGAL_TOPIC.match(name):
        return f"topic name {name!r} has characters other than ASCII letters, digits, '.', '_', '-'"
    return None


def validate_topic_name(name: str) -> str:
    problem = topic_name_problem(name)
    if problem:
        raise SchemaError(problem)
    return name


def topics_path() -> str:
    return TOPICS_PATH


def topic_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{validate_topic_name(topic)}"


def partitions_path(topic: str) -> str:
    return f"{topic_path(topic)}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{partitions_path(topic)}/{int(partition)}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{partition_path(topic, partition)}/state"


def new_topic_id() -> str:
    return random_uuid_base64()


def _replica_map(value: Any, what: str, key: str) -> dict[int, tuple[int, ...]]:
    if not isinstance(value, dict):
        raise SchemaError(f"{what}: field {key!r} must be an object")
    out: dict[int, tuple[int, ...]] = {}
    for p, replicas in value.items():
        try:
            pid = int(p)
        except (TypeError, ValueError):
            raise SchemaError(f"{what}: partition {p!r} in {key!r} is not a number") from None
        out[pid] = int_list(replicas, what, key)
    return dict(sorted(out.items()))


def _encode_replica_map(m: Mapping[int, tuple[int, ...]]) -> dict[str, list[int]]:
    return {str(p): list(replicas) for p, replicas in sorted(m.items())}


@dataclass(frozen=True)
class TopicAssignment:
    """A topic's replica assignment: partition -> replicas (the first replica is the preferred leader)."""

    partitions: dict[int, tuple[int, ...]]
    topic_id: str | None = None
    adding_replicas: dict[int, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: dict[int, tuple[int, ...]] = field(default_factory=dict)
    zk_version: int | None = None

    @property
    def partition_count(self) -> int:
        return len(self.partitions)

    @property
    def replication_factor(self) -> int:
        return len(next(iter(self.partitions.values()), ()))

    def encode(self) -> bytes:
        obj: dict[str, Any] = {
            "version": ASSIGNMENT_VERSION,
            "partitions": _encode_replica_map(self.partitions),
            "adding_replicas": _encode_replica_map(self.adding_replicas),
            "removing_replicas": _encode_replica_map(self.removing_replicas),
        }
        if self.topic_id is not None:
            obj["topic_id"] = self.topic_id
        return dump(obj)

    @classmethod
    def decode(cls, data: bytes, zk_version: int | None = None, *,
               topic: str = "<topic>") -> "TopicAssignment":
        what = f"{TOPICS_PATH}/{topic}"
        obj = load_object(data, what)
        int_field(obj, "version", what)
        return cls(
            partitions=_replica_map(get_field(obj, "partitions", what), what, "partitions"),
            topic_id=str_field(obj, "topic_id", what, default=None, nullable=True),
            adding_replicas=_replica_map(dict_field(obj, "adding_replicas", what, default={}),
                                         what, "adding_replicas"),
            removing_replicas=_replica_map(dict_field(obj, "removing_replicas", what, default={}),
                                           what, "removing_replicas"),
            zk_version=zk_version,
        )


@dataclass(frozen=True)
class PartitionState:
    """Leader and ISR of one partition, as the controller (or the leader, for ISR changes) wrote it."""

    leader: int
    leader_epoch: int
    controller_epoch: int
    isr: tuple[int, ...]
    zk_version: int | None = None

    def encode(self) -> bytes:
        return dump({
            "version": PARTITION_STATE_VERSION,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "controller_epoch": self.controller_epoch,
            "isr": list(self.isr),
        })

    @classmethod
    def decode(cls, data: bytes, zk_version: int | None = None, *,
               path: str = "partition state") -> "PartitionState":
        obj = load_object(data, path)
        int_field(obj, "version", path)
        return cls(
            leader=int_field(obj, "leader", path),
            leader_epoch=int_field(obj, "leader_epoch", path),
            controller_epoch=int_field(obj, "controller_epoch", path),
            isr=int_list(get_field(obj, "isr", path), path, "isr"),
            zk_version=zk_version,
        )
