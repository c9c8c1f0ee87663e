"""The values the 0.9+ group coordinator passes between its parts: what a committed offset is,
what a group's stored state is, and what each group API answers.

Plain immutable tuples, no I/O: ``records`` turns the stored ones into Kafka's
``__consumer_offsets`` bytes and back, ``group`` and ``coordinator`` work with them in memory,
and the protocol adapters (Kafka's and the native one) turn the answers into responses.
"""

from __future__ import annotations

from typing import NamedTuple

#: the internal topic that holds committed offsets and group metadata (Kafka's name)
OFFSETS_TOPIC = "__consumer_offsets"


class OffsetAndMetadata(NamedTuple):
    """A committed offset (Kafka's OffsetCommitValue): the next offset to read."""

    offset: int
    leader_epoch: int = -1          # -1: unknown
    metadata: str = ""
    commit_timestamp: int = -1      # ms
    expire_timestamp: int = -1      # ms; -1: expires by offsets.retention.minutes


class MemberSnapshot(NamedTuple):
    """One member as stored in GroupMetadataValue."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes             # the selected protocol's metadata from JoinGroup
    assignment: bytes               # what SyncGroup handed this member


class GroupSnapshot(NamedTuple):
    """A group as stored in GroupMetadataValue (written after each rebalance completes, and
    when a group becomes empty)."""

    protocol_type: str              # "consumer" for Kafka consumers; "" for an empty group
    generation: int
    protocol: str | None            # the chosen assignor, e.g. "range"; None when empty
    leader: str | None
    state_timestamp: int            # ms
    members: tuple[MemberSnapshot, ...] = ()


# --- answers of the coordinator's API --------------------------------------------------------

class JoinMember(NamedTuple):
    member_id: str
    group_instance_id: str | None
    metadata: bytes


class JoinResult(NamedTuple):
    error_code: int
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[JoinMember, ...] = ()   # only the leader gets the members


class SyncResult(NamedTuple):
    error_code: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


class LeaveMemberResult(NamedTuple):
    member_id: str
    group_instance_id: str | None
    error_code: int


class FetchedOffset(NamedTuple):
    offset: int                     # -1 when nothing is committed
    leader_epoch: int
    metadata: str | None
    error_code: int


class DescribedMember(NamedTuple):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes                 # the subscription (selected protocol's metadata)
    assignment: bytes


class DescribedGroup(NamedTuple):
    error_code: int
    group_id: str
    state: str                      # "Empty", "PreparingRebalance", ..., "Dead"
    protocol_type: str
    protocol: str
    members: tuple[DescribedMember, ...] = ()


class ListedGroup(NamedTuple):
    group_id: str
    protocol_type: str
    state: str
