"""ListOffsets to the partitions' leaders: the one implementation the Consumer and AdminClient
share (``beginning_offsets``/``end_offsets``/``offsets_for_times``, the consumer's position resets,
the admin client's lag and offset-reset plans).

``list_once`` is one round: partitions grouped by leader from the current metadata, one request
per leader. A partition without a known leader, a retriable partition error or a retriable
connection failure leaves the partition *failed* (retry it after a metadata refresh, which is
requested); a partition whose topic or partition the metadata does not list at all is also
*unknown*. Non-retriable errors are raised, naming the partition.

``list_offsets`` retries rounds until every partition is found or the timeout passes, refreshing
stale metadata between rounds (``fresh=True``: asking the brokers before every round, as the
admin client does, which knows no topics of its own). It returns what it found and what it did
not; the callers word their own errors (the consumer raises, the admin client may not).

``clock`` and ``sleep`` time the retries; tests pass fake ones.
"""

from __future__ import annotations

import time
from typing import Callable, NamedTuple

from kafkalite import errors
from kafkalite.client.structs import TopicPartition
from kafkalite.errors import KafkaError
from kafkalite.protocol.messages import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)

__all__ = ["OffsetsLookup", "LookupResult"]


class LookupResult(NamedTuple):
    found: dict          # {TopicPartition: (offset, timestamp)}
    missing: list        # partitions still without an answer when the time ran out
    unknown: list        # partitions the metadata does not list (with drop_unknown)
    last_error: KafkaError | None


class OffsetsLookup:
    """ListOffsets over ``pool`` (a ConnectionPool of the caller's thread) to the leaders that
    ``cluster`` (ClusterMetadata) names."""

    def __init__(self, cluster, pool, retry_backoff: float,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, isolation_level: int = 0):
        self.cluster = cluster
        # 1 (read_committed): the latest offset is the last stable offset, as a read_committed
        # consumer's end_offsets and "latest" resets need
        self.isolation_level = isolation_level
        self.pool = pool
        self.retry_backoff = retry_backoff
        self.clock = clock
        self.sleep = sleep
        self.last_error: KafkaError | None = None

    def list_once(self, timestamps: dict) -> tuple[dict, set, set]:
        """One round: ``({tp: (offset, ts)}, failed, unknown)`` (unknown is part of failed)."""
        snap = self.cluster.snapshot
        by_node: dict[int, dict[str, list[ListOffsetsPartition]]] = {}
        failed: set = set()
        unknown: set = set()
        for tp, ts in timestamps.items():
            parts = snap.topics.get(tp[0])
            if parts is None or tp[1] not in parts:
                unknown.add(tp)
                failed.add(tp)
                continue
            node = snap.leader_for(tp[0], tp[1])
            if node is None:
                failed.add(tp)
                continue
            by_node.setdefault(node, {}).setdefault(tp[0], []).append(
                ListOffsetsPartition(tp[1], ts, -1))
        found: dict = {}
        for node, topics in by_node.items():
            request = ListOffsetsRequest(isolation_level=self.isolation_level,
                                         topics=[ListOffsetsTopic(t, ps)
                                                 for t, ps in topics.items()])
            try:
                response = self.pool.get(node).request(request)
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                self.last_error = exc
                self.pool.drop(node)
                failed.update(TopicPartition(t, p.partition) for t, ps in topics.items()
                              for p in ps)
                continue
            for t in response.topics:
                for p in t.partitions:
                    tp = TopicPartition(t.topic, p.partition)
                    if p.error_code == 0:
                        found[tp] = (p.offset, p.timestamp)
                        continue
                    exc = errors.for_code(p.error_code)
                    if not exc.retriable:
                        raise errors.for_code(p.error_code,
                                              f"listing offsets of {tp}: {exc.description}")
                    self.last_error = exc
                    failed.add(tp)
        for tp in timestamps:
            if tp not in found:
                failed.add(tp)
        if failed:
            self.cluster.request_update()
        return found, failed, unknown

    def list_offsets(self, timestamps: dict, timeout: float, *, fresh: bool = False,
                     drop_unknown: bool = False) -> LookupResult:
        """Rounds of ``list_once`` until all are found or ``timeout`` seconds passed.

        ``drop_unknown``: a partition the metadata does not list is left out at once (reported
        in ``unknown``) instead of retried.
        """
        pending = {TopicPartition(*tp): ts for tp, ts in timestamps.items()}
        found: dict = {}
        dropped: list = []
        self.last_error = None
        if not pending:
            return LookupResult(found, [], dropped, None)
        if not fresh:       # the admin client's metadata tracks no topics: it names them
            self.cluster.add_topics(*{tp.topic for tp in pending})
        deadline = self.clock() + timeout
        while True:
            self._refresh(pending, fresh, deadline)
            got, _failed, unknown = self.list_once(pending)
            found.update(got)
            if drop_unknown and unknown:
                dropped += sorted(unknown)
            pending = {tp: ts for tp, ts in pending.items()
                       if tp not in got and not (drop_unknown and tp in unknown)}
            if not pending or self.clock() >= deadline:
                return LookupResult(found, sorted(pending), dropped, self.last_error)
            self.sleep(self.retry_backoff)

    def _refresh(self, pending: dict, fresh: bool, deadline: float) -> None:
        if not fresh and not self.cluster.stale():
            return
        try:
            if fresh:
                self.cluster.refresh(topics=sorted({tp.topic for tp in pending}))
            else:
                self.cluster.refresh()
        except KafkaError as exc:
            if not exc.retriable or self.clock() >= deadline:
                raise
            self.last_error = exc
