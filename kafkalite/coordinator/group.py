"""One consumer group in the coordinator's memory: Kafka's GroupMetadata and MemberMetadata.

Pure: no reactor, no store. The coordinator drives it (coordinator.py, membership.py) and owns
the timer slots kept here (``heartbeat_timer``, ``join_op``, ``sync_timer``, ``pending_timers``)
only so that unloading a group can cancel everything it has scheduled.

States and their valid previous states are Kafka's (GroupMetadata.scala); any other transition
is a coordinator bug and raises IllegalStateError.
"""

from __future__ import annotations

import enum
import struct
import uuid
from collections import Counter
from typing import Callable, Iterable

from kafkalite.errors import FencedInstanceIdError, IllegalStateError
from kafkalite.coordinator.types import (
    DescribedGroup, DescribedMember, GroupSnapshot, JoinMember, JoinResult, ListedGroup,
    MemberSnapshot, OffsetAndMetadata, SyncResult,
)
from kafkalite.topic_partition import TopicPartition

CONSUMER_PROTOCOL_TYPE = "consumer"

JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


EMPTY = GroupState.EMPTY
PREPARING_REBALANCE = GroupState.PREPARING_REBALANCE
COMPLETING_REBALANCE = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

#: Kafka's validPreviousStates: the only states each state may be entered from
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    PREPARING_REBALANCE: frozenset({STABLE, COMPLETING_REBALANCE, EMPTY}),
    COMPLETING_REBALANCE: frozenset({PREPARING_REBALANCE}),
    STABLE: frozenset({COMPLETING_REBALANCE}),
    DEAD: frozenset({STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD}),
    EMPTY: frozenset({PREPARING_REBALANCE}),
}


def parse_subscription_topics(data: bytes) -> set[str] | None:
    """The topics of a ConsumerProtocolSubscription (version i16, topics [i16-length string]
    with an i32 count; the rest is ignored). Every version starts with V0's prefix, which is
    why Kafka parses it as V0 too. None when the bytes do not parse."""
    try:
        version, count = struct.unpack_from(">hi", data, 0)
        if version < 0 or count < 0 or count > len(data):
            return None
        pos, topics = 6, set()
        for _ in range(count):
            (length,) = struct.unpack_from(">h", data, pos)
            pos += 2
            if length < 0 or pos + length > len(data):
                return None
            topics.add(data[pos:pos + length].decode("utf-8"))
            pos += length
        return topics
    except (struct.error, UnicodeDecodeError):
        return None


class MemberMetadata:
    """One member (Kafka's MemberMetadata)."""

    def __init__(self, member_id: str, group_instance_id: str | None, client_id: str,
                 client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                 protocol_type: str, supported_protocols: list[tuple[str, bytes]],
                 assignment: bytes = b""):
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.supported_protocols = list(supported_protocols)
        self.assignment = assignment
        self.awaiting_join: JoinCallback | None = None
        self.awaiting_sync: SyncCallback | None = None
        self.is_leaving = False
        # a member added by a JoinGroup that has not been answered yet: its JoinGroup times out
        # (Kafka's NewMemberJoinTimeoutMs) even though it is awaiting the join
        self.is_new = False
        self.heartbeat_timer = None          # the coordinator's session timer

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    def protocol_names(self) -> set[str]:
        return {name for name, _ in self.supported_protocols}

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.supported_protocols:
            if name == protocol:
                return data
        raise IllegalStateError(f"member {self.member_id} does not support protocol {protocol}")

    def survives_session_expiry(self) -> bool:
        """Kafka's hasSatisfiedHeartbeat when the session timer fires without a heartbeat in
        between: a member parked in a JoinGroup or SyncGroup is alive (its socket is muted, it
        cannot heartbeat), unless it is new (it may have given up on its JoinGroup)."""
        if self.is_new:
            return False
        return self.is_awaiting_join or self.is_awaiting_sync

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return [(n, bytes(d)) for n, d in protocols] == \
            [(n, bytes(d)) for n, d in self.supported_protocols]

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among the candidates (its list is ordered)."""
        for name, _ in self.supported_protocols:
            if name in candidates:
                return name
        raise IllegalStateError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def __repr__(self) -> str:
        return (f"MemberMetadata({self.member_id!r}, instance={self.group_instance_id!r}, "
                f"protocols={[n for n, _ in self.supported_protocols]})")


class GroupMetadata:
    """A group's members, generation, protocol and committed offsets (Kafka's GroupMetadata)."""

    def __init__(self, group_id: str, state: GroupState, clock_ms: Callable[[], int]):
        self.group_id = group_id
        self._clock_ms = clock_ms
        self.state = state
        self.state_timestamp: int | None = clock_ms()
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}   # insertion order: the leader fallback
        self.static_members: dict[str, str] = {}        # group.instance.id -> member id
        self.pending_members: set[str] = set()          # KIP-394: handed an id, not yet joined
        self.pending_sync_members: set[str] = set()     # joined this generation, no SyncGroup yet
        self._num_awaiting_join = 0
        self._protocol_counts: Counter[str] = Counter()
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        # commits written to the store but not yet acknowledged: token sets per partition, so a
        # completed write only lands if the partition was not deleted meanwhile
        self.pending_offset_commits: dict[TopicPartition, set[object]] = {}
        # TxnOffsetCommit: producer id -> {partition: [log position or None, offset]}, visible
        # only at its transaction's COMMIT marker (coordinator/txn_offsets.py)
        self.pending_txn_offsets: dict[int, dict[TopicPartition, list]] = {}
        # each visible offset's batch position in __consumer_offsets: how a transactional and a
        # plain commit of one partition are ordered (Kafka's CommitRecordMetadataAndOffset)
        self.offset_positions: dict[TopicPartition, int] = {}
        self.subscribed_topics: set[str] | None = None
        self.new_member_added = False
        # timer slots, owned by the coordinator
        self.join_op = None
        self.sync_timer = None
        self.pending_timers: dict[str, object] = {}

    # --- basics ----------------------------------------------------------------------------
    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    @property
    def size(self) -> int:
        return len(self.members)

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    @property
    def is_consumer_group(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    @property
    def num_awaiting_join(self) -> int:
        return self._num_awaiting_join

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[PREPARING_REBALANCE]

    def transition_to(self, state: GroupState) -> None:
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalStateError(
                f"group {self.group_id} should be in one of "
                f"{sorted(s.value for s in VALID_PREVIOUS_STATES[state])} before moving to "
                f"{state.value}; it is {self.state.value}")
        self.state = state
        self.state_timestamp = self._clock_ms()

    # --- members ---------------------------------------------------------------------------
    def add(self, member: MemberMetadata, callback: JoinCallback | None = None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._protocol_counts.update(member.protocol_names())
        member.awaiting_join = callback
        if member.is_awaiting_join:
            self._num_awaiting_join += 1

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._protocol_counts.subtract(member.protocol_names())
            if member.is_awaiting_join:
                self._num_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_sync_members.discard(member_id)
        return member

    def update_member(self, member: MemberMetadata, protocols: list[tuple[str, bytes]],
                      callback: JoinCallback | None) -> None:
        self._protocol_counts.subtract(member.protocol_names())
        member.supported_protocols = list(protocols)
        self._protocol_counts.update(member.protocol_names())
        if callback is not None and not member.is_awaiting_join:
            self._num_awaiting_join += 1
        elif callback is None and member.is_awaiting_join:
            self._num_awaiting_join -= 1
        member.awaiting_join = callback

    def take_join_callback(self, member: MemberMetadata) -> JoinCallback | None:
        """Detach the member's parked JoinGroup answer (the caller sends it)."""
        callback = member.awaiting_join
        if callback is not None:
            member.awaiting_join = None
            self._num_awaiting_join -= 1
        return callback

    def take_sync_callback(self, member: MemberMetadata) -> SyncCallback | None:
        callback = member.awaiting_sync
        member.awaiting_sync = None
        return callback

    def maybe_elect_new_joined_leader(self) -> bool:
        """If the leader did not rejoin, make any rejoined member the leader. False when no
        member rejoined (or there is no leader at all)."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].is_awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.is_awaiting_join:
                self.leader_id = member_id
                return True
        return False

    def replace_group_instance(self, old_member_id: str, new_member_id: str,
                               group_instance_id: str) -> tuple[MemberMetadata, list]:
        """A static member came back under a new member id: the same member object continues
        with the new id. Returns it and the fenced answers (callback, result) the caller must
        send to whoever was parked under the old id."""
        if group_instance_id is None:
            raise IllegalStateError("replace_group_instance needs a group.instance.id")
        member = self.members.pop(old_member_id, None)
        if member is None:
            raise IllegalStateError(f"cannot replace unknown member {old_member_id}")
        fenced = []
        join_cb = member.awaiting_join
        if join_cb is not None:
            member.awaiting_join = None
            self._num_awaiting_join -= 1
            fenced.append((join_cb, JoinResult(FencedInstanceIdError.code,
                                               member_id=old_member_id)))
        sync_cb = self.take_sync_callback(member)
        if sync_cb is not None:
            fenced.append((sync_cb, SyncResult(FencedInstanceIdError.code)))
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        if old_member_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_member_id)
            self.pending_sync_members.add(new_member_id)
        self.static_members[group_instance_id] = new_member_id
        return member, fenced

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members and member_id not in self.members

    def has_static_member(self, group_instance_id: str | None) -> bool:
        return group_instance_id is not None and group_instance_id in self.static_members

    def static_member_id(self, group_instance_id: str) -> str:
        return self.static_members[group_instance_id]

    def is_static_member_fenced(self, member_id: str, group_instance_id: str | None) -> bool:
        """A known group.instance.id under another member id: an older (or duplicate) instance."""
        return (self.has_static_member(group_instance_id)
                and self.static_members[group_instance_id] != member_id)

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self._num_awaiting_join and not self.pending_members

    @staticmethod
    def generate_member_id(client_id: str, group_instance_id: str | None) -> str:
        prefix = group_instance_id if group_instance_id is not None else client_id
        return f"{prefix}-{uuid.uuid4()}"

    # --- protocols -------------------------------------------------------------------------
    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {p for p, count in self._protocol_counts.items() if count == n and n > 0}

    def select_protocol(self) -> str:
        """Kafka's selectProtocol: among the protocols every member supports, each member votes
        for its most preferred one; most votes wins (ties: the one voted first, in join order,
        so the choice is deterministic)."""
        if not self.members:
            raise IllegalStateError("cannot select a protocol for an empty group")
        candidates = self.candidate_protocols()
        votes = Counter(m.vote(candidates) for m in self.members.values())
        best = max(votes.values())
        return next(p for p, n in votes.items() if n == best)

    def supports_protocols(self, protocol_type: str, protocols: Iterable[str]) -> bool:
        protocols = set(protocols)
        if self.is_(EMPTY):
            return bool(protocol_type) and bool(protocols)
        n = len(self.members)
        return (self.protocol_type == protocol_type
                and any(self._protocol_counts.get(p, 0) == n for p in protocols))

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return True if self.subscribed_topics is None else topic in self.subscribed_topics

    def compute_subscribed_topics(self) -> set[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = parse_subscription_topics(member.metadata(self.protocol_name))
            if parsed is None:
                return None      # unknown: treat the group as subscribed to everything
            topics |= parsed
        return topics

    def init_next_generation(self) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(EMPTY)
        self.pending_sync_members.clear()

    def current_member_metadata(self) -> tuple[JoinMember, ...]:
        if self.state in (DEAD, PREPARING_REBALANCE) or self.protocol_name is None:
            raise IllegalStateError(f"no member metadata for group in state {self.state.value}")
        return tuple(JoinMember(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
                     for m in self.members.values())

    # --- views -----------------------------------------------------------------------------
    def describe(self, error_code: int = 0) -> DescribedGroup:
        """Kafka's summary: metadata and assignments only when Stable."""
        if self.is_(STABLE):
            protocol = self.protocol_name or ""
            members = tuple(DescribedMember(m.member_id, m.group_instance_id, m.client_id,
                                            m.client_host, m.metadata(protocol), m.assignment)
                            for m in self.members.values())
        else:
            protocol = ""
            members = tuple(DescribedMember(m.member_id, m.group_instance_id, m.client_id,
                                            m.client_host, b"", b"")
                            for m in self.members.values())
        return DescribedGroup(error_code, self.group_id, self.state.value,
                              self.protocol_type or "", protocol, members)

    def overview(self) -> ListedGroup:
        return ListedGroup(self.group_id, self.protocol_type or "", self.state.value)

    def snapshot(self, assignment: dict[str, bytes]) -> GroupSnapshot:
        """What GroupMetadataValue stores (Kafka's groupMetadataValue)."""
        members = []
        for m in self.members.values():
            if self.protocol_name is None:
                raise IllegalStateError("a non-empty group with no protocol cannot be stored")
            members.append(MemberSnapshot(m.member_id, m.group_instance_id, m.client_id,
                                          m.client_host, m.rebalance_timeout_ms,
                                          m.session_timeout_ms, m.metadata(self.protocol_name),
                                          assignment.get(m.member_id, b"")))
        return GroupSnapshot(self.protocol_type or "", self.generation_id, self.protocol_name,
                             self.leader_id, -1 if self.state_timestamp is None
                             else self.state_timestamp, tuple(members))

    @classmethod
    def from_snapshot(cls, group_id: str, snap: GroupSnapshot,
                      clock_ms: Callable[[], int]) -> "GroupMetadata":
        """Kafka's loadGroup: Empty without members, else Stable with the stored members."""
        group = cls(group_id, STABLE if snap.members else EMPTY, clock_ms)
        group.generation_id = snap.generation
        group.protocol_name = snap.protocol
        group.state_timestamp = None if snap.state_timestamp < 0 else snap.state_timestamp
        protocol_type = snap.protocol_type or None
        for ms in snap.members:
            member = MemberMetadata(ms.member_id, ms.group_instance_id, ms.client_id,
                                    ms.client_host, ms.rebalance_timeout_ms,
                                    ms.session_timeout_ms, snap.protocol_type,
                                    [(snap.protocol or "", ms.subscription)], ms.assignment)
            group.add(member)
            if member.is_static:
                group.static_members[member.group_instance_id] = member.member_id
        group.protocol_type = protocol_type
        group.leader_id = snap.leader if snap.leader in group.members else \
            next(iter(group.members), None)
        group.subscribed_topics = group.compute_subscribed_topics()
        return group

    # --- offsets ---------------------------------------------------------------------------
    def has_offsets(self) -> bool:
        return (bool(self.offsets) or any(self.pending_offset_commits.values())
                or bool(self.pending_txn_offsets))

    def prepare_offset_commit(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> object:
        token = object()
        for tp in offsets:
            self.pending_offset_commits.setdefault(tp, set()).add(token)
        return token

    def complete_offset_commit(self, token: object,
                               offsets: dict[TopicPartition, OffsetAndMetadata],
                               success: bool, position: int | None = None) -> None:
        """A commit's write finished: on success it becomes visible, unless its partition was
        deleted while the write was in flight or a later-written (transactional) offset is."""
        for tp, oam in offsets.items():
            tokens = self.pending_offset_commits.get(tp)
            if not tokens or token not in tokens:
                continue
            tokens.discard(token)
            if not tokens:
                del self.pending_offset_commits[tp]
            if success and (position is None or self.offset_positions.get(tp, -1) < position):
                self.offsets[tp] = oam
                self.offset_positions.pop(tp, None)
                if position is not None:
                    self.offset_positions[tp] = position

    def remove_offsets(self, partitions: Iterable[TopicPartition]
                       ) -> dict[TopicPartition, OffsetAndMetadata]:
        removed = {}
        for tp in partitions:
            self.pending_offset_commits.pop(tp, None)
            self.offset_positions.pop(tp, None)
            for pending in self.pending_txn_offsets.values():
                pending.pop(tp, None)
            if tp in self.offsets:
                removed[tp] = self.offsets.pop(tp)
        return removed

    def remove_all_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        return self.remove_offsets(list(self.offsets) + list(self.pending_offset_commits))

    def remove_expired_offsets(self, now_ms: int, retention_ms: int
                               ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Kafka's removeExpiredOffsets (KIP-211): an Empty group's offsets expire retention
        after it became Empty; a simple (no protocol) group's by each commit's time; a Stable
        consumer group's only for topics it no longer subscribes to. An explicit
        expire_timestamp (OffsetCommit v2-v4 retention time) wins."""
        def expired(base, skip_topics=frozenset()):
            out = {}
            for tp, oam in self.offsets.items():
                if tp[0] in skip_topics or self.pending_offset_commits.get(tp):
                    continue
                if oam.expire_timestamp >= 0:
                    if now_ms >= oam.expire_timestamp:
                        out[tp] = oam
                elif now_ms - base(oam) >= retention_ms:
                    out[tp] = oam
            return out

        if self.protocol_type is not None and self.is_(EMPTY):
            state_ts = self.state_timestamp
            found = expired(lambda oam: oam.commit_timestamp if state_ts is None else state_ts)
        elif (self.protocol_type == CONSUMER_PROTOCOL_TYPE and self.subscribed_topics is not None
              and self.is_(STABLE)):
            found = expired(lambda oam: oam.commit_timestamp, self.subscribed_topics)
        elif self.protocol_type is None:
            found = expired(lambda oam: oam.commit_timestamp)
        else:
            found = {}
        for tp in found:
            del self.offsets[tp]
            self.offset_positions.pop(tp, None)
        return found

    def __repr__(self) -> str:
        return (f"GroupMetadata({self.group_id!r}, {self.state.value}, gen={self.generation_id}, "
                f"members={list(self.members)})")
