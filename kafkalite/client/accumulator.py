"""The producer's record accumulator: per-partition batches waiting to be sent.

``send()`` appends a record to the partition's open batch under one short lock; nothing is
encoded then. Batches keep their records as columns (timestamps, values, and keys and headers
once one appears), which is what the encoder takes. A plain ``send(topic, value)`` picks its
partition and appends in one call (``append_sticky``: the topic's sticky partition's open batch). A batch *closes* when it reaches ``batch_size``
(estimated bytes) and becomes *sendable* when closed, when ``linger_ms`` has passed since its
first record, or when a flush or close is in progress. With ``linger_ms=0`` (the producer's
default, as Kafka's) an open batch is sendable at once -- but only while no unit of its partition
is in flight: records appended meanwhile gather in the open batch and go together when the
answer comes back, which is what makes a busy ``send()`` loop batch without any linger.

The sender thread ``drain``s: per partition whose leader is known and can take a request, it
takes the sendable batches in order -- plus the open batch behind them, which would otherwise
only wait for its linger -- as ONE *unit*, and the sender encodes the unit as a single record
batch (``record.batch.build_batch_columns``, aiokafka's C codec) outside the lock. Coalescing several closed
``batch_size`` batches into one wire batch (up to ``coalesce_bytes``) is what lets one partition
keep up with a fast producer while only one unit per partition is in flight: each unit's batches
keep their own ``BatchResult``, resolved with ``base_offset + records before them``.

Ordering: at most one unit per partition is in flight, and a unit to retry goes back in front of
everything else of its partition, so a retry never lets a later record overtake an earlier one.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable

from kafkalite.client.future import BatchResult, FutureRecordMetadata
from kafkalite.errors import KafkaTimeoutError

__all__ = ["ProducerBatch", "ProduceUnit", "RecordAccumulator", "RECORD_OVERHEAD",
           "HEADER_OVERHEAD"]

# Upper estimates of a record's bytes besides key, value and headers in Kafka's v2 layout (varint
# length, attributes, timestamp/offset deltas, key/value lengths, header count), and of a header's
# besides its name and value (two varint lengths): what batch sizes are counted in
RECORD_OVERHEAD = 16
HEADER_OVERHEAD = 6


class ProducerBatch:
    """Records appended to one partition, not yet encoded, kept as columns (what the encoder
    takes): timestamps and values always, keys and headers only once a record has one (None
    until then: all None)."""

    __slots__ = ("tp", "stamps", "values", "keys", "headers", "size", "created", "result",
                 "plain")

    def __init__(self, tp, created: float):
        self.tp = tp
        self.stamps: list[int] = []
        self.values: list = []
        self.keys: list | None = None
        self.headers: list | None = None
        self.plain = True        # keys and headers both None (one test for append_sticky)
        self.size = 0
        self.created = created
        self.result = BatchResult(tp[0], tp[1])

    def add(self, timestamp: int, key, value, headers) -> int:
        """Append one record; returns its index in the batch."""
        stamps = self.stamps
        index = len(stamps)
        stamps.append(timestamp)
        self.values.append(value)
        keys = self.keys
        if keys is not None:
            keys.append(key)
        elif key is not None:
            self.keys = [None] * index + [key]
            self.plain = False
        column = self.headers
        if column is not None:
            column.append(headers)
        elif headers is not None:
            self.headers = [None] * index + [headers]
            self.plain = False
        return index

    def __len__(self) -> int:
        return len(self.stamps)

    @property
    def records(self) -> list[tuple]:
        """``(timestamp, key, value, headers)`` tuples (for tests and debugging)."""
        n = len(self.stamps)
        return list(zip(self.stamps, self.keys or [None] * n, self.values,
                        self.headers or [None] * n))

    def __repr__(self) -> str:
        return f"<ProducerBatch {self.tp[0]}-{self.tp[1]} {len(self.stamps)} records>"


class ProduceUnit:
    """Consecutive batches of one partition sent as one wire batch (``data``, built lazily)."""

    __slots__ = ("tp", "batches", "size", "record_count", "data", "attempts", "retry_at",
                 "created", "base_sequence", "no_coalesce")

    def __init__(self, tp, batches: list[ProducerBatch], size: int):
        self.tp = tp
        self.batches = batches
        self.size = size
        self.record_count = sum(len(b.stamps) for b in batches)
        self.data: bytes | None = None
        self.attempts = 0
        self.retry_at = 0.0
        self.created = batches[0].created
        self.base_sequence = -1
        self.no_coalesce = False

    def columns(self) -> tuple[list, list | None, list, list | None]:
        """``(timestamps, keys, values, headers)`` of every record, in order; keys or headers
        None when no record has one."""
        batches = self.batches
        if len(batches) == 1:
            b = batches[0]
            return b.stamps, b.keys, b.values, b.headers
        stamps: list = []
        values: list = []
        for b in batches:
            stamps += b.stamps
            values += b.values
        return stamps, _joined(batches, "keys"), values, _joined(batches, "headers")

    def resolve(self, base_offset: int, log_append_time: int, log_start_offset: int) -> None:
        offset = base_offset
        for b in self.batches:
            b.result.resolve(offset if base_offset >= 0 else -1, log_append_time,
                             log_start_offset)
            offset += len(b.stamps)

    def fail(self, error: BaseException) -> None:
        for b in self.batches:
            b.result.fail(error)


def _joined(batches: list[ProducerBatch], name: str) -> list | None:
    if all(getattr(b, name) is None for b in batches):
        return None
    out: list = []
    for b in batches:
        column = getattr(b, name)
        out += column if column is not None else [None] * len(b.stamps)
    return out


class _PartitionQueue:
    __slots__ = ("open", "closed", "retry")

    def __init__(self):
        self.open: ProducerBatch | None = None
        self.closed: deque[ProducerBatch] = deque()
        self.retry: deque[ProduceUnit] = deque()

    def empty(self) -> bool:
        return self.open is None and not self.closed and not self.retry


class RecordAccumulator:
    """Per-partition queues of batches; thread-safe (one lock, held briefly)."""

    def __init__(self, batch_size: int = 16384, linger_ms: float = 0,
                 buffer_memory: int = 33554432, coalesce_bytes: int = 1 << 20,
                 wakeup: Callable[[], None] | None = None, max_block: float = 60.0,
                 clock: Callable[[], float] = time.monotonic):
        self.batch_size = max(int(batch_size), 1)
        self._clock = clock          # times batches' age (linger, delivery timeout)
        self.linger = linger_ms / 1000
        self.buffer_memory = buffer_memory
        self.coalesce_bytes = max(coalesce_bytes, self.batch_size)
        self._wakeup = wakeup or (lambda: None)
        self.max_block = max_block
        self._lock = threading.Lock()
        self._space = threading.Condition(self._lock)
        self._queues: dict[tuple, _PartitionQueue] = {}
        self._sticky: dict[str, _PartitionQueue] = {}   # topic -> its sticky partition's queue
        self._incomplete: set[BatchResult] = set()
        self.buffered = 0
        self._flushing = 0
        self._closing = False

    # --- user side --------------------------------------------------------------------------
    def append(self, tp, record: tuple, size: int, abort_on_new_batch: bool = False):
        """Append ``record``; returns ``(BatchResult, index)``.

        With ``abort_on_new_batch`` returns None instead of opening a new batch (the sticky
        partitioner then moves on and the caller appends again). Blocks while the buffer is
        full, up to ``max_block`` seconds (KafkaTimeoutError).
        """
        with self._lock:
            if self.buffered + size > self.buffer_memory and self.buffered:
                self._wait_for_space(size, self.max_block)
            q = self._queues.get(tp)
            if q is None:
                q = self._queues[tp] = _PartitionQueue()
            batch = q.open
            if batch is None or batch.size + size > self.batch_size:
                if abort_on_new_batch:
                    return None
                wake = True
                if batch is not None:
                    q.closed.append(batch)
                batch = q.open = ProducerBatch(tp, self._clock())
                self._incomplete.add(batch.result)
            else:
                wake = False
            index = batch.add(*record)
            batch.size += size
            self.buffered += size
            if batch.size >= self.batch_size:
                q.closed.append(batch)
                q.open = None
                wake = True
        if wake:
            self._wakeup()
        return batch.result, index

    def append_keyed(self, tp, timestamp: int, key: bytes, value: bytes, size: int):
        """``append`` for a keyed record without headers whose partition the producer hashed,
        returning its FutureRecordMetadata; None (nothing appended) when the buffer is full:
        the producer then takes ``append``, which waits for space."""
        with self._lock:
            if self.buffered + size > self.buffer_memory and self.buffered:
                return None
            q = self._queues.get(tp)
            if q is None:
                q = self._queues[tp] = _PartitionQueue()
            batch = q.open
            wake = batch is None or batch.size + size > self.batch_size
            if wake:
                if batch is not None:
                    q.closed.append(batch)
                batch = q.open = ProducerBatch(tp, self._clock())
                self._incomplete.add(batch.result)
            index = batch.add(timestamp, key, value, None)
            batch.size += size
            self.buffered += size
            if batch.size >= self.batch_size:
                q.closed.append(batch)
                q.open = None
                wake = True
        if wake:
            self._wakeup()
        key_size = len(key)
        return FutureRecordMetadata(batch.result, index, timestamp, key_size,
                                    size - RECORD_OVERHEAD - key_size)

    def append_sticky(self, topic: str, timestamp: int, value: bytes, size: int):
        """Partitioning and the append in one step, for a record without key or headers (the
        common ``send(topic, value)``): the record goes into the open batch of ``topic``'s
        sticky partition (``set_sticky``) and its FutureRecordMetadata is returned. None when
        that partition has no open batch with room, or the buffer is full: the producer then
        picks the partition (the sticky partitioner moves on at a new batch) and calls
        ``append``."""
        # acquire/release rather than ``with``: about 50 ns less per record (this runs once per
        # send(); every name is read once)
        lock = self._lock
        lock.acquire()
        try:
            q = self._sticky.get(topic)
            if q is None:
                return None
            batch = q.open
            if batch is None:
                return None
            batch_size = batch.size + size
            buffered = self.buffered + size
            if batch_size > self.batch_size or buffered > self.buffer_memory:
                return None
            stamps = batch.stamps
            index = len(stamps)
            stamps.append(timestamp)
            batch.values.append(value)
            if not batch.plain:
                if batch.keys is not None:
                    batch.keys.append(None)
                if batch.headers is not None:
                    batch.headers.append(None)
            batch.size = batch_size
            self.buffered = buffered
            full = batch_size >= self.batch_size
            if full:
                q.closed.append(batch)
                q.open = None
        finally:
            lock.release()
        if full:
            self._wakeup()
        return FutureRecordMetadata(batch.result, index, timestamp, -1, size - RECORD_OVERHEAD)

    def set_sticky(self, topic: str, tp) -> None:
        """``tp`` is ``topic``'s sticky partition now (None: it has none, e.g. the topic's
        partitions changed)."""
        with self._lock:
            if tp is None:
                self._sticky.pop(topic, None)
                return
            q = self._queues.get(tp)
            if q is None:
                q = self._queues[tp] = _PartitionQueue()
            self._sticky[topic] = q

    def _wait_for_space(self, size: int, max_block: float) -> None:
        deadline = time.monotonic() + max_block
        while self.buffered + size > self.buffer_memory and self.buffered:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise KafkaTimeoutError(
                    f"failed to allocate {size} bytes within {max_block * 1000:.0f} ms: the "
                    f"producer's buffer ({self.buffer_memory} bytes) is full")
            self._space.wait(remaining)

    def begin_flush(self) -> list[BatchResult]:
        """Make every batch sendable now; returns the results to wait for."""
        with self._lock:
            self._flushing += 1
            pending = list(self._incomplete)
        self._wakeup()
        return pending

    def end_flush(self) -> None:
        with self._lock:
            self._flushing -= 1

    def begin_close(self) -> None:
        with self._lock:
            self._closing = True
        self._wakeup()

    # --- sender side ------------------------------------------------------------------------
    def has_unsent(self) -> bool:
        with self._lock:
            return any(not q.empty() for q in self._queues.values())

    def incomplete_count(self) -> int:
        return len(self._incomplete)

    def drain(self, now: float, leader_for: Callable, can_send: Callable[[int], bool],
              in_flight: set, max_request_size: int, allowed: set | None = None):
        """Take the sendable units, grouped by leader (with ``allowed``, only of those
        partitions: a transaction's batches wait until their partition is in the transaction).

        Returns ``(units_by_node, next_check, unknown_leaders)``: ``next_check`` is the delay in
        seconds until another batch becomes sendable (None: nothing waits on time), and
        ``unknown_leaders`` is True if some partition with data has no known leader.
        """
        by_node: dict[int, list[ProduceUnit]] = {}
        budget: dict[int, int] = {}
        next_check: float | None = None
        unknown = False
        linger = self.linger
        with self._lock:
            force = self._flushing > 0 or self._closing
            for tp, q in self._queues.items():
                if tp in in_flight or q.empty() or (allowed is not None and tp not in allowed):
                    continue
                if q.retry:
                    unit = q.retry[0]
                    if unit.retry_at > now:
                        delay = unit.retry_at - now
                        next_check = delay if next_check is None else min(next_check, delay)
                        continue
                else:
                    unit = None
                    if not q.closed:
                        batch = q.open
                        ready_at = batch.created + linger
                        if ready_at > now and not force:
                            delay = ready_at - now
                            next_check = delay if next_check is None else min(next_check, delay)
                            continue
                node = leader_for(tp)
                if node is None:
                    unknown = True
                    continue
                left = budget.get(node)
                if left is None:
                    if not can_send(node):
                        continue
                    left = max_request_size
                elif left <= 0:
                    continue
                if unit is not None:
                    q.retry.popleft()
                else:
                    unit = self._take(q, tp, now, force, min(left, self.coalesce_bytes))
                budget[node] = left - unit.size
                by_node.setdefault(node, []).append(unit)
                in_flight.add(tp)
        return by_node, next_check, unknown

    def _take(self, q: _PartitionQueue, tp, now: float, force: bool, limit: int) -> ProduceUnit:
        batches: list[ProducerBatch] = []
        size = 0
        closed = q.closed
        while closed and (not batches or size + closed[0].size <= limit):
            b = closed.popleft()
            batches.append(b)
            size += b.size
        if not closed and q.open is not None and (not batches or size + q.open.size <= limit):
            batches.append(q.open)
            size += q.open.size
            q.open = None
        return ProduceUnit(tp, batches, size)

    def reenqueue(self, unit: ProduceUnit) -> None:
        """Put a unit back in front of its partition (to retry after ``unit.retry_at``)."""
        with self._lock:
            q = self._queues.get(unit.tp)
            if q is None:
                q = self._queues[unit.tp] = _PartitionQueue()
            q.retry.appendleft(unit)

    def reenqueue_split(self, unit: ProduceUnit, retry_at: float) -> None:
        """Retry a too-large coalesced unit as one unit per original batch, in order."""
        with self._lock:
            q = self._queues.get(unit.tp)
            if q is None:
                q = self._queues[unit.tp] = _PartitionQueue()
            parts = []
            for b in unit.batches:
                part = ProduceUnit(unit.tp, [b], b.size)
                part.attempts = unit.attempts
                part.retry_at = retry_at
                part.no_coalesce = True
                parts.append(part)
            q.retry.extendleft(reversed(parts))

    def reset_built(self) -> None:
        """Forget the encoded bytes (and sequence numbers) of every unit waiting to be retried."""
        with self._lock:
            for q in self._queues.values():
                for unit in q.retry:
                    unit.data = None
                    unit.base_sequence = -1

    def completed(self, unit: ProduceUnit) -> None:
        """The unit is resolved or failed: release its memory."""
        with self._lock:
            self.buffered -= unit.size
            for b in unit.batches:
                self._incomplete.discard(b.result)
            self._space.notify_all()

    def expire(self, now: float, delivery_timeout: float, in_flight: set) -> list:
        """Remove units/batches older than ``delivery_timeout`` that are not in flight."""
        expired: list[tuple[ProduceUnit, str]] = []
        with self._lock:
            for tp, q in self._queues.items():
                if tp in in_flight or q.empty():
                    continue
                while q.retry and now - q.retry[0].created >= delivery_timeout:
                    expired.append((q.retry.popleft(), "waiting to be retried"))
                while q.closed and now - q.closed[0].created >= delivery_timeout:
                    b = q.closed.popleft()
                    expired.append((ProduceUnit(tp, [b], b.size), "waiting in the accumulator"))
                if (not q.closed and not q.retry and q.open is not None
                        and now - q.open.created >= delivery_timeout):
                    b, q.open = q.open, None
                    expired.append((ProduceUnit(tp, [b], b.size), "waiting in the accumulator"))
        return expired

    def abort_all(self) -> list[ProduceUnit]:
        """Take every unsent batch out (the producer is closing by force)."""
        out: list[ProduceUnit] = []
        with self._lock:
            for tp, q in self._queues.items():
                out.extend(q.retry)
                q.retry.clear()
                for b in q.closed:
                    out.append(ProduceUnit(tp, [b], b.size))
                q.closed.clear()
                if q.open is not None:
                    out.append(ProduceUnit(tp, [q.open], q.open.size))
                    q.open = None
        return out
