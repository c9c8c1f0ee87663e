"""What a consumer consumes: its subscription or manual assignment, and each partition's state.

The consumer's bookkeeping, apart from any I/O (aiokafka's ``SubscriptionState``, Java's
``SubscriptionState``): the subscribed topics or pattern (or the manual assignment), the user's
rebalance listener, and per assigned partition a ``PartitionState``: the position (the offset of
the next record the application gets), the fetch position (ahead of it while fetched records are
buffered), a pending reset ("earliest"/"latest"), the paused flag, a retry backoff and what the
last fetch said about the log (high watermark, log start, last stable offset).

Every seek bumps the partition's ``epoch``: fetched data tagged with an older epoch is stale and
is dropped, which is how a seek made while a fetch is in flight wins.

``clock`` (seconds, monotonic) times the backoffs; tests pass a fake one.
"""

from __future__ import annotations

import re
import time
from typing import Callable

from kafkalite.client.structs import TopicPartition
from kafkalite.errors import IllegalStateError

__all__ = ["PartitionState", "SubscriptionState"]


class PartitionState:
    """One assigned partition: positions, pending reset, pause, backoff, log bounds."""

    __slots__ = ("tp", "position", "fetch_position", "reset", "epoch", "paused",
                 "backoff_until", "fetch_size", "high_watermark", "log_start_offset",
                 "last_stable_offset", "buffered")

    def __init__(self, tp: TopicPartition):
        self.tp = tp
        self.position: int | None = None       # next offset the application gets
        self.fetch_position: int | None = None  # next offset to fetch (ahead when buffered)
        self.reset: str | None = None          # pending seek_to_beginning/end
        self.epoch = 0                         # bumped by seeks: stale fetch data is dropped
        self.paused = False
        self.backoff_until = 0.0
        self.fetch_size = 0                    # 0 = max_partition_fetch_bytes
        self.high_watermark = -1
        self.log_start_offset = -1
        self.last_stable_offset = -1
        self.buffered = 0                      # completed fetches not yet fully handed out

    def __repr__(self) -> str:
        return (f"<PartitionState {self.tp[0]}-{self.tp[1]} position={self.position} "
                f"fetch={self.fetch_position} reset={self.reset} paused={self.paused}>")

    def seek(self, offset: int | None, reset: str | None = None) -> None:
        """Read from ``offset`` next (None: find a position, by ``reset`` or the committed
        offset); anything fetched before is void."""
        self.position = offset
        self.fetch_position = offset
        self.reset = reset
        self.epoch += 1
        self.buffered = 0
        self.backoff_until = 0.0

    def fetchable(self, now: float) -> bool:
        return self.position is not None and not self.paused and self.backoff_until <= now


class SubscriptionState:
    """Subscription, assignment and partition states of one consumer (not thread-safe)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.topics: set[str] | None = None    # subscribed topics (None: not subscribed)
        self.pattern: re.Pattern | None = None
        self.listener = None
        self.manual = False                    # partitions given by assign()
        self.assignment: dict[TopicPartition, PartitionState] = {}
        self.needs_reset = False               # some partition has no position
        # a partition's new state (or its drop from the assignment) is told to this hook, so
        # buffered data of partitions no longer assigned can go (the fetcher's)
        self.on_assignment_change: Callable[[set], None] | None = None

    # --- subscription -------------------------------------------------------------------------
    def subscribe(self, topics: set[str], pattern: str | None, listener,
                  validate: Callable[[str], object] = str) -> None:
        """Subscribe to ``topics`` or ``pattern``; ``validate`` checks each name first."""
        if self.manual:
            raise IllegalStateError("subscribe() after assign(): call unsubscribe() first")
        if (not topics) == (pattern is None):
            raise IllegalStateError("subscribe() needs either topics or a pattern")
        for topic in topics:
            validate(topic)
        self.listener = listener
        if pattern is not None:
            self.pattern = re.compile(pattern)
            self.topics = set()
        else:
            self.pattern = None
            self.topics = set(topics)

    @property
    def subscribed(self) -> bool:
        return self.topics is not None

    def match_pattern(self, cluster_topics) -> bool:
        """With a pattern subscription, subscribe to the matching topics; True if that set
        changed."""
        if self.pattern is None:
            return False
        matched = {t for t in cluster_topics if self.pattern.match(t)}
        if matched == self.topics:
            return False
        self.topics = matched
        return True

    def unsubscribe(self) -> None:
        self.topics = None
        self.pattern = None
        self.manual = False
        self.set_assignment(set())

    def assign(self, tps: list[TopicPartition]) -> None:
        if self.topics is not None:
            raise IllegalStateError("assign() while subscribed: call unsubscribe() first")
        self.manual = bool(tps)
        self.set_assignment(set(tps))

    # --- assignment ---------------------------------------------------------------------------
    def set_assignment(self, tps: set) -> None:
        """Own exactly ``tps``: kept partitions keep their state, new ones need a position."""
        old = self.assignment
        new: dict[TopicPartition, PartitionState] = {}
        for tp in sorted(tps):
            ps = old.get(tp)
            if ps is None:
                ps = PartitionState(tp)
                self.needs_reset = True
            new[tp] = ps
        self.assignment = new
        if self.on_assignment_change is not None:
            self.on_assignment_change(set(new))

    def state(self, tp) -> PartitionState:
        ps = self.assignment.get(TopicPartition(*tp))
        if ps is None:
            raise IllegalStateError(f"partition {tp[0]}-{tp[1]} is not assigned to this consumer")
        return ps

    def revoke(self, revoked: set) -> None:
        """Positions and fetched data of ``revoked`` are void: fetch nothing there until it is
        assigned again, then from the committed offset (another member may have moved it)."""
        for tp in revoked:
            ps = self.assignment.get(tp)
            if ps is not None:
                ps.seek(None)
                self.needs_reset = True

    # --- pause --------------------------------------------------------------------------------
    def pause(self, *partitions) -> None:
        for tp in partitions:
            self.state(tp).paused = True

    def resume(self, *partitions) -> None:
        for tp in partitions:
            self.state(tp).paused = False

    def paused(self) -> set[TopicPartition]:
        return {tp for tp, ps in self.assignment.items() if ps.paused}

    # --- positions ----------------------------------------------------------------------------
    def seek_reset(self, partitions, policy: str) -> list[PartitionState]:
        """Mark ``partitions`` (every assigned one when empty) to reset by ``policy``."""
        targets = partitions or tuple(self.assignment)
        states = [self.state(tp) for tp in targets]
        for ps in states:
            ps.seek(None, policy)
        if states:
            self.needs_reset = True
        return states

    def missing_positions(self) -> list[PartitionState]:
        return [ps for ps in self.assignment.values() if ps.position is None]

    def backoff(self, tps, delay: float) -> None:
        until = self.clock() + delay
        for tp in tps:
            ps = self.assignment.get(tp)
            if ps is not None:
                ps.backoff_until = until

    def positions(self) -> dict[TopicPartition, int]:
        """``{tp: position}`` of every partition that has one (what a commit stores)."""
        return {tp: ps.position for tp, ps in self.assignment.items()
                if ps.position is not None}
