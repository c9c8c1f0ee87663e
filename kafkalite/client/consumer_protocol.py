"""Kafka's consumer protocol: the bytes consumers put in JoinGroup and SyncGroup.

The group coordinator never looks inside a member's protocol metadata or assignment; the
consumers agree on their layout, so kafkalite's consumers and Java, librdkafka or kafka-python
ones can share a group only if they write the same bytes. Both are Kafka's
``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment`` schemas (read and written by
kio's generated codecs, never by hand) behind an int16 version:

* subscription (JoinGroup ``protocols[].metadata``): version int16, ``topics`` [string],
  ``user_data`` bytes (nullable), from v1 ``owned_partitions`` [topic string, partitions
  [int32]], from v2 ``generation_id`` int32, from v3 ``rack_id`` string (nullable);
* assignment (SyncGroup ``assignments[].assignment``): version int16, ``assigned_partitions``
  [topic string, partitions [int32]], ``user_data`` bytes (nullable).

kafkalite writes version 1 of both, as Kafka 2.4-2.8's Java consumer does. It reads every version:
one newer than it knows is read as the newest it knows (later versions only append fields, which
is Kafka's rule too), and an empty assignment (what the coordinator hands a member the leader
left out) is an empty one. Bytes that do not parse raise ``InvalidRequestError``.
"""

from __future__ import annotations

import io
import struct
from functools import lru_cache
from typing import Iterable, NamedTuple

from kio.schema.consumer_protocol_assignment.v0 import data as _a0
from kio.schema.consumer_protocol_assignment.v1 import data as _a1
from kio.schema.consumer_protocol_subscription.v0 import data as _s0
from kio.schema.consumer_protocol_subscription.v1 import data as _s1
from kio.schema.consumer_protocol_subscription.v2 import data as _s2
from kio.schema.consumer_protocol_subscription.v3 import data as _s3
from kio.serial import entity_reader, entity_writer

from kafkalite.client.structs import TopicPartition
from kafkalite.errors import InvalidRequestError
from kafkalite.protocol.kafka import codec as _codec

__all__ = ["PROTOCOL_TYPE", "Subscription", "Assignment", "encode_subscription",
           "decode_subscription", "encode_assignment", "decode_assignment"]

#: JoinGroup's protocol_type for consumers (Kafka's ConsumerProtocol.PROTOCOL_TYPE)
PROTOCOL_TYPE = "consumer"
#: the version kafkalite writes
VERSION = 1

_VERSION = struct.Struct(">h")
_SUBSCRIPTIONS = {0: _s0, 1: _s1, 2: _s2, 3: _s3}
_ASSIGNMENTS = {0: _a0, 1: _a1}


class Subscription(NamedTuple):
    """What a member asks for: its topics (sorted), what it owns now (v1+), opaque user data."""

    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = []
    version: int = VERSION
    generation_id: int = -1           # v2+ (Java's cooperative-sticky); -1 otherwise
    rack_id: str | None = None        # v3+


class Assignment(NamedTuple):
    """What the leader gave a member: its partitions (sorted) and opaque user data."""

    partitions: list[TopicPartition]
    user_data: bytes | None = None
    version: int = VERSION


@lru_cache(maxsize=None)
def _reader(cls):
    return entity_reader(cls)


@lru_cache(maxsize=None)
def _writer(cls):
    return entity_writer(cls)


def _by_topic(partitions: Iterable, module) -> tuple:
    grouped: dict[str, list[int]] = {}
    for tp in partitions:
        grouped.setdefault(tp[0], []).append(int(tp[1]))
    return tuple(module.TopicPartition(topic=t, partitions=tuple(sorted(set(ps))))
                 for t, ps in sorted(grouped.items()))


def _flatten(entries) -> list[TopicPartition]:
    return sorted(TopicPartition(e.topic, int(p)) for e in entries for p in e.partitions)


def _read(kind: str, schemas: dict, data) -> tuple[int, object]:
    view = memoryview(bytes(data))
    if len(view) < 2:
        raise InvalidRequestError(f"consumer protocol {kind} of {len(view)} bytes has no version")
    (version,) = _VERSION.unpack_from(view, 0)
    if version < 0:
        raise InvalidRequestError(f"consumer protocol {kind} has negative version {version}")
    cls = schemas[min(version, max(schemas))]
    try:
        # walk the structure first: kio's native reader trusts array counts, and a count of
        # ~2**31 would make it allocate until the process dies
        _codec._walk_entity(cls, view, 2)
        entity, _size = _reader(cls)(view, 2)
    except _codec._Truncated:
        raise InvalidRequestError(f"consumer protocol {kind} v{version} is truncated") from None
    except InvalidRequestError as exc:
        raise InvalidRequestError(f"malformed consumer protocol {kind} v{version}: "
                                  f"{exc.message}") from None
    except Exception as exc:  # noqa: BLE001 - kio raises several kinds for bad bytes
        raise InvalidRequestError(f"malformed consumer protocol {kind} v{version}: "
                                  f"{type(exc).__name__}: {exc}") from None
    return version, entity


def encode_subscription(topics: Iterable[str], user_data: bytes | None = None,
                        owned_partitions: Iterable = (), version: int = VERSION) -> bytes:
    """A ConsumerProtocolSubscription (``version`` 0 or 1): topics sorted, owned partitions
    grouped by topic (left out at v0)."""
    if version not in (0, 1):
        raise ValueError(f"kafkalite writes consumer protocol subscription v0 or v1, not "
                         f"v{version}")
    module = _s1 if version == 1 else _s0
    fields = {"topics": tuple(sorted(set(topics))), "user_data": user_data}
    if version >= 1:
        fields["owned_partitions"] = _by_topic(owned_partitions, module)
    buf = io.BytesIO()
    buf.write(_VERSION.pack(version))
    _writer(module.ConsumerProtocolSubscription)(buf, module.ConsumerProtocolSubscription(
        **fields))
    return buf.getvalue()


def decode_subscription(data) -> Subscription:
    version, entity = _read("subscription", {v: m.ConsumerProtocolSubscription
                                             for v, m in _SUBSCRIPTIONS.items()}, data)
    owned = getattr(entity, "owned_partitions", None) or ()
    user_data = entity.user_data
    return Subscription(
        topics=sorted(entity.topics), user_data=None if user_data is None else bytes(user_data),
        owned_partitions=_flatten(owned), version=version,
        generation_id=int(getattr(entity, "generation_id", -1)),
        rack_id=getattr(entity, "rack_id", None))


def encode_assignment(partitions: Iterable, user_data: bytes | None = None,
                      version: int = VERSION) -> bytes:
    """A ConsumerProtocolAssignment (``version`` 0 or 1; the layout is the same)."""
    if version not in (0, 1):
        raise ValueError(f"kafkalite writes consumer protocol assignment v0 or v1, not "
                         f"v{version}")
    module = _ASSIGNMENTS[version]
    buf = io.BytesIO()
    buf.write(_VERSION.pack(version))
    _writer(module.ConsumerProtocolAssignment)(buf, module.ConsumerProtocolAssignment(
        assigned_partitions=_by_topic(partitions, module), user_data=user_data))
    return buf.getvalue()


def decode_assignment(data) -> Assignment:
    if not data:
        return Assignment([], None, VERSION)
    version, entity = _read("assignment", {v: m.ConsumerProtocolAssignment
                                           for v, m in _ASSIGNMENTS.items()}, data)
    user_data = entity.user_data
    return Assignment(_flatten(entity.assigned_partitions),
                      None if user_data is None else bytes(user_data), version)
