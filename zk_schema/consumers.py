"""Kafka 0.8 consumer groups in ZooKeeper: ``/consumers/<g>/{ids,owners,offsets}``.

- ``/consumers/<g>/ids/<member>`` (ephemeral):
  ``{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":"ms"}``;
  the member id looks like ``<g>_<host>-<ms>-<uuid8>``.
- ``/consumers/<g>/owners/<t>/<p>`` (ephemeral): the owning consumer thread id, ``<member>-0``, as text.
- ``/consumers/<g>/offsets/<t>/<p>`` (persistent): the next offset to read, as text.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from zk_schema._codec import (
    SchemaError, as_int, dict_field, dump, int_field, load_int_text, load_object, load_text,
    segment, str_field,
)
from zk_schema.topics import validate_topic_name

CONSUMERS_PATH = "/consumers"
PATTERNS = ("static", "white_list", "black_list")

def consumers_path() -> str:
    return CONSUMERS_PATH

def group_path(group: str) -> str:
    return f"{CONSUMERS_PATH}/{segment(group, 'consumer group')}"

def group_ids_path(group: str) -> str:
    return f"{group_path(group)}/ids"

def member_path(group: str, member_id: str) -> str:
    return f"{group_ids_path(group)}/{segment(member_id, 'consumer id')}"

def group_owners_path(group: str) -> str:
    return f"{group_path(group)}/owners"

def topic_owners_path(group: str, topic: str) -> str:
    return f"{group_owners_path(group)}/{validate_topic_name(topic)}"

def owner_path(group: str, topic: str, partition: int) -> str:
    return f"{topic_owners_path(group, topic)}/{int(partition)}"

def group_offsets_path(group: str) -> str:
    return f"{group_path(group)}/offsets"

def topic_offsets_path(group: str, topic: str) -> str:
    return f"{group_offsets_path(group)}/{validate_topic_name(topic)}"

def offset_path(group: str, topic: str, partition: int) -> str:
    return f"{topic_offsets_path(group, topic)}/{int(partition)}"

def new_member_id(group: str, host: str, timestamp_ms: int, suffix: str | None = None) -> str:
    """``<g>_<host>-<ms>-<uuid8>``, as Kafka 0.8's ZookeeperConsumerConnector names members."""
    suffix = suffix if suffix is not None else uuid.uuid4().hex[:8]
    return segment(f"{group}_{host}-{int(timestamp_ms)}-{suffix}", "consumer id")

def owner_thread_id(member_id: str, thread: int = 0) -> str:
    return f"{member_id}-{int(thread)}"

def _assignment(value, path: str) -> tuple[tuple[str, int], ...]:
    if not isinstance(value, list):
        raise SchemaError(f"{path}: assignment must be a list of [topic, partition]")
    out = []
    for item in value:
        if (not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str)
                or not isinstance(item[1], int) or isinstance(item[1], bool)):
            raise SchemaError(f"{path}: assignment entries must be [topic, partition]")
        out.append((item[0], item[1]))
    return tuple(out)


@dataclass(frozen=True)
class ConsumerRegistration:
    """A group member: its subscription (topic -> thread count) and pattern kind."""

    subscription: dict[str, int]
    pattern: str = "static"
    timestamp_ms: int = 0
    zk_version: int | None = None
    # kafkalite's addition: the partitions this member owned after its last rebalance, so that
    # every member's sticky assignor starts from the same picture. Kafka's readers ignore it.
    assignment: tuple[tuple[str, int], ...] = ()

    def __post_init__(self):
        if self.pattern not in PATTERNS:
            raise SchemaError(f"consumer pattern must be one of {PATTERNS}, got {self.pattern!r}")

    def encode(self) -> bytes:
        obj = {
            "version": 1,
            "subscription": {t: int(n) for t, n in self.subscription.items()},
            "pattern": self.pattern,
            "timestamp": str(self.timestamp_ms),
        }
        if self.assignment:
            obj["assignment"] = [[t, int(p)] for t, p in self.assignment]
        return dump(obj)

    @classmethod
    def decode(cls, data: bytes, zk_version: int | None = None, *,
               path: str = "consumer registration") -> "ConsumerRegistration":
        obj = load_object(data, path)
        int_field(obj, "version", path)
        sub = dict_field(obj, "subscription", path)
        ts = obj.get("timestamp", 0)
        return cls(
            subscription={str(t): as_int(n, path, "subscription") for t, n in sub.items()},
            pattern=str_field(obj, "pattern", path),
            timestamp_ms=as_int(ts, path, "timestamp") if ts is not None else 0,
            zk_version=zk_version,
            assignment=_assignment(obj.get("assignment", []), path),
        )

@dataclass(frozen=True)
class PartitionOwner:
    """Content of an owner znode: the owning consumer thread id (``<member>-0``)."""

    owner: str
    zk_version: int | None = None

    @property
    def member_id(self) -> str:
        """The member id without the ``-<thread>`` suffix."""
        head, sep, tail = self.owner.rpartition("-")
        return head if sep and tail.isdigit() else self.owner

    def encode(self) -> bytes:
        return self.owner.encode("utf-8")

    @classmethod
    def decode(cls, data: bytes, zk_version: int | None = None) -> "PartitionOwner":
        text = load_text(data, "partition owner")
        if not text:
            raise SchemaError("partition owner: empty")
        return cls(owner=text, zk_version=zk_version)

@dataclass(frozen=True)
class ConsumerOffset:
    """A committed offset: the next offset the group will read."""

    offset: int
    zk_version: int | None = None

    def encode(self) -> bytes:
        return str(int(self.offset)).encode("ascii")

    @classmethod
    def decode(cls, data: bytes, zk_version: int | None = None) -> "ConsumerOffset":
        return cls(offset=load_int_text(data, "consumer offset"), zk_version=zk_version)
