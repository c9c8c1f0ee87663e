"""The consumer's fetcher: pipelined Fetch requests, the buffer of fetched data, decoding, and
finding positions (committed offsets, ListOffsets) -- aiokafka's ``Fetcher``, Java's ``Fetcher``.

Fetching is pipelined: each broker has at most one Fetch in flight, and a new one is sent as soon
as a response has been read (before the records are handed to the user), so the broker reads and
ships the next chunk while the application processes the previous one. The next fetch offset of a
partition comes from the batch headers of the response (``decoder.scan_batches``), without
decoding records; records are decoded only when they are handed out (``decoder.decode_rows``:
Kafka v2 records parsed in C per batch, into plain tuples that become ConsumerRecords only as
they are handed out, ``decoder.as_records``: see the decoder's doc for why). At most two
responses' worth of data per partition is buffered.

``isolation_level="read_committed"`` asks for isolation level 1: the leader answers only up to
the last stable offset, with the aborted transactions of the range, whose records the decoder
drops (``decoder.decode_records``); control batches are never handed out either way.

A fetch answered OFFSET_OUT_OF_RANGE resets the partition by ``auto_offset_reset`` ("none":
OffsetOutOfRangeError naming the partition and the log's range). Retriable errors back the
partition off for ``retry_backoff_ms`` and ask for fresh metadata.

Runs on the consumer's thread; ``clock`` times backoffs (tests pass a fake one). The select loop is
``io_loop.IoLoop``, the same code the producer's sender runs.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Callable

from kafkalite import errors
from kafkalite.client.decoder import as_records, decode_rows, scan_batches
from kafkalite.client.io_loop import IoLoop
from kafkalite.client.offsets_lookup import OffsetsLookup
from kafkalite.client.structs import TopicPartition
from kafkalite.client.subscription_state import PartitionState, SubscriptionState
from kafkalite.errors import KafkaError
from kafkalite.protocol.messages import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    READ_UNCOMMITTED,
    FetchPartition,
    FetchRequest,
    FetchTopic,
)

log = logging.getLogger(__name__)

__all__ = ["Fetcher", "FetchSettings"]

MAX_BUFFERED_FETCHES = 2


class FetchSettings:
    """The consumer options the fetcher obeys (kafka-python's names, in ms and bytes)."""

    __slots__ = ("min_bytes", "max_wait_ms", "max_bytes", "max_partition_bytes", "check_crcs",
                 "key_deserializer", "value_deserializer", "retry_backoff", "auto_offset_reset",
                 "isolation_level")

    def __init__(self, fetch_min_bytes: int = 1, fetch_max_wait_ms: int = 500,
                 fetch_max_bytes: int = 52428800, max_partition_fetch_bytes: int = 1048576,
                 check_crcs: bool = True, key_deserializer=None, value_deserializer=None,
                 retry_backoff_ms: int = 100, auto_offset_reset: str = "latest",
                 isolation_level: int = READ_UNCOMMITTED):
        self.min_bytes = fetch_min_bytes
        self.max_wait_ms = fetch_max_wait_ms
        self.max_bytes = fetch_max_bytes
        self.max_partition_bytes = max_partition_fetch_bytes
        self.check_crcs = check_crcs
        self.key_deserializer = key_deserializer
        self.value_deserializer = value_deserializer
        self.retry_backoff = retry_backoff_ms / 1000
        self.auto_offset_reset = auto_offset_reset
        self.isolation_level = isolation_level


class CompletedFetch:
    """One partition's data from one fetch response, handed out record by record."""

    __slots__ = ("tp", "data", "fetch_offset", "next_offset", "epoch", "records", "index",
                 "aborted")

    def __init__(self, tp, data, fetch_offset, next_offset, epoch, aborted=None):
        self.tp = tp
        self.aborted = aborted          # read_committed: the response's aborted transactions
        self.data = data
        self.fetch_offset = fetch_offset
        self.next_offset = next_offset
        self.epoch = epoch
        self.records: list | None = None
        self.index = 0


class _FetchInFlight:
    __slots__ = ("correlation_id", "offsets", "conn")

    def __init__(self, correlation_id, offsets, conn):
        self.correlation_id = correlation_id
        self.offsets = offsets          # {tp: (fetch offset, partition epoch)}
        self.conn = conn


class Fetcher:
    """Fetches for the partitions of ``subscriptions`` with a position; see the module doc."""

    def __init__(self, cluster, subscriptions: SubscriptionState, offsets: OffsetsLookup,
                 settings: FetchSettings, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.cluster = cluster
        self.subscriptions = subscriptions
        self.offsets = offsets
        self.settings = settings
        self.clock = clock
        self.sleep = sleep
        self.pool = cluster.pool()           # fetches (long polls) only
        self.loop = IoLoop()
        self.in_flight: dict[int, _FetchInFlight] = {}
        self.completed: deque[CompletedFetch] = deque()
        self.pushback: list = []             # records an abandoned iteration gave back
        self._rotation = 0

    # --- sending ------------------------------------------------------------------------------
    def send_fetches(self) -> None:
        """A Fetch to every leader without one in flight, for its fetchable partitions."""
        now = self.clock()
        snap = self.cluster.snapshot
        settings = self.settings
        default_size = settings.max_partition_bytes
        per_node: dict[int, dict[str, list]] = {}
        offsets: dict[int, dict] = {}
        states = list(self.subscriptions.assignment.values())
        if len(states) > 1:      # rotate, so no partition always comes last in a full response
            self._rotation = (self._rotation + 1) % len(states)
            states = states[self._rotation:] + states[:self._rotation]
        in_flight = self.in_flight
        max_bytes = settings.max_bytes
        for ps in states:
            if (ps.position is None or ps.paused or ps.buffered >= MAX_BUFFERED_FETCHES
                    or ps.backoff_until > now):
                continue
            tp = ps.tp
            node = snap.leader_for(tp[0], tp[1])
            if node is None:
                self.cluster.request_update()
                continue
            if node in in_flight:
                continue
            offset = ps.fetch_position if ps.fetch_position is not None else ps.position
            size = ps.fetch_size or default_size
            if size > max_bytes:
                max_bytes = size
            per_node.setdefault(node, {}).setdefault(tp[0], []).append(
                FetchPartition(tp[1], offset, size, -1))
            offsets.setdefault(node, {})[tp] = (offset, ps.epoch)
        for node, topics in per_node.items():
            request = FetchRequest(max_wait_ms=settings.max_wait_ms,
                                   min_bytes=settings.min_bytes, max_bytes=max_bytes,
                                   isolation_level=settings.isolation_level,
                                   topics=[FetchTopic(t, ps) for t, ps in topics.items()])
            try:
                conn = self.pool.get(node)
                self.loop.register(node, conn)
                cid = conn.send(request)
            except KafkaError as exc:
                log.warning("fetch from broker %d failed: %s", node, exc)
                self._drop(node)
                self.subscriptions.backoff(offsets[node], settings.retry_backoff)
                self.cluster.request_update()
                continue
            in_flight[node] = _FetchInFlight(cid, offsets[node], conn)

    def _drop(self, node: int) -> None:
        self.loop.unregister(node)
        self.in_flight.pop(node, None)
        self.pool.drop(node)

    # --- receiving ----------------------------------------------------------------------------
    def wait(self, timeout: float) -> None:
        """Wait up to ``timeout`` s for fetch responses and handle those that arrive."""
        if not self.in_flight:
            self.sleep(max(min(timeout, self.settings.retry_backoff), 0))
            return
        self.loop.poll(max(timeout, 0), self._read)

    def _read(self, node: int) -> None:
        entry = self.in_flight.get(node)
        if entry is None:
            conn = self.loop.registered.get(node)
            if conn is not None:    # readable with nothing pending: EOF or garbage
                try:
                    conn.receive_available()
                except KafkaError:
                    self._drop(node)
            return
        try:
            results = entry.conn.receive_available()
        except KafkaError as exc:
            log.warning("fetch from broker %d failed: %s", node, exc)
            self._drop(node)
            self.subscriptions.backoff(entry.offsets, self.settings.retry_backoff)
            self.cluster.request_update()
            return
        for _cid, result in results:
            self.in_flight.pop(node, None)
            self.handle_response(entry.offsets, result)

    def handle_response(self, sent: dict, result) -> None:
        """Take a Fetch response (or the KafkaError that replaced it) for the partitions and
        offsets ``sent`` (``{tp: (fetch offset, epoch)}``) into the buffer."""
        assignment = self.subscriptions.assignment
        if isinstance(result, KafkaError) or result.error_code:
            code = result.code if isinstance(result, KafkaError) else result.error_code
            for tp, (offset, epoch) in sent.items():
                ps = assignment.get(tp)
                if ps is not None and ps.epoch == epoch:
                    self._partition_error(ps, code if code is not None else -1, offset)
            return
        completed = self.completed
        read_committed = self.settings.isolation_level != READ_UNCOMMITTED
        for topic_response in result.responses:
            topic = topic_response.topic
            for pr in topic_response.partitions:
                tp = TopicPartition(topic, pr.partition)
                info = sent.get(tp)
                ps = assignment.get(tp)
                if info is None or ps is None or ps.epoch != info[1]:
                    continue     # seeked, unassigned or never asked: stale data
                fetch_offset = info[0]
                if pr.error_code:
                    self._partition_error(ps, pr.error_code, fetch_offset)
                    continue
                ps.high_watermark = pr.high_watermark
                ps.log_start_offset = pr.log_start_offset
                ps.last_stable_offset = pr.last_stable_offset
                data = pr.records
                if not data:
                    continue
                next_offset, complete, partial = scan_batches(data, fetch_offset)
                if complete:
                    ps.fetch_position = next_offset
                    ps.buffered += 1
                    completed.append(CompletedFetch(
                        tp, data, fetch_offset, next_offset, ps.epoch,
                        pr.aborted_transactions if read_committed else None))
                elif partial:
                    size = ps.fetch_size or self.settings.max_partition_bytes
                    if partial > size:
                        log.info("%s: a batch of %d bytes at offset %d exceeds the fetch size "
                                 "%d; fetching it whole", tp, partial, fetch_offset, size)
                        ps.fetch_size = partial
                    else:
                        ps.backoff_until = self.clock() + self.settings.retry_backoff
                else:   # damaged bytes: decoding reports the error to the application
                    ps.fetch_position = fetch_offset
                    ps.buffered += 1
                    completed.append(CompletedFetch(tp, data, fetch_offset, fetch_offset,
                                                    ps.epoch))

    def _partition_error(self, ps: PartitionState, code: int, fetch_offset: int) -> None:
        exc = errors.for_code(code)
        tp = ps.tp
        if isinstance(exc, errors.OffsetOutOfRangeError):
            policy = self.settings.auto_offset_reset
            if policy == "none":
                raise self._out_of_range(tp, fetch_offset)
            log.info("%s: fetch offset %d is out of range; resetting to %s", tp, fetch_offset,
                     policy)
            self.drop_buffered(tp)
            ps.seek(None, policy)
            self.subscriptions.needs_reset = True
            return
        if exc.retriable or code == errors.UnknownServerError.code:
            log.debug("%s: fetch error %s; refreshing metadata", tp, exc.name)
            ps.backoff_until = self.clock() + self.settings.retry_backoff
            self.cluster.request_update()
            return
        raise errors.for_code(code, f"fetching {tp} at offset {fetch_offset}: "
                                    f"{exc.description}")

    def _out_of_range(self, tp: TopicPartition, offset: int) -> KafkaError:
        try:
            lo, _, _ = self.offsets.list_once({tp: EARLIEST_TIMESTAMP})
            hi, _, _ = self.offsets.list_once({tp: LATEST_TIMESTAMP})
            span = f"the log holds offsets [{lo[tp][0]}, {hi[tp][0]})"
        except (KafkaError, KeyError):
            span = "the log's range is unknown"
        err = errors.OffsetOutOfRangeError(
            f"fetch offset {offset} is out of range for partition {tp}: {span}; "
            f"auto_offset_reset='none', so seek() to a valid offset")
        err.partition_offsets = {tp: offset}  # type: ignore[attr-defined]
        return err

    # --- positions ----------------------------------------------------------------------------
    def reset_positions(self, committed: Callable[[list], dict]) -> None:
        """Give every partition without a position its committed offset (``committed(tps)``,
        the coordinator's) or, failing that, the offset its reset policy names."""
        subs = self.subscriptions
        need = subs.missing_positions()
        if not need:
            subs.needs_reset = False
            return
        now = self.clock()
        plain = [ps.tp for ps in need if ps.reset is None]
        if plain:
            found = committed(plain)
            for tp in plain:
                om = found.get(tp)
                if om is not None and om.offset >= 0:
                    ps = subs.assignment[tp]
                    ps.position = ps.fetch_position = om.offset
        timestamps: dict[TopicPartition, int] = {}
        for ps in need:
            if ps.position is not None or ps.backoff_until > now:
                continue
            policy = ps.reset or self.settings.auto_offset_reset
            if policy == "none":
                raise errors.NoOffsetForPartitionError(
                    f"no committed offset for partition {ps.tp} and auto_offset_reset='none'; "
                    f"seek() to a position first")
            timestamps[ps.tp] = EARLIEST_TIMESTAMP if policy == "earliest" else LATEST_TIMESTAMP
        if timestamps:
            found, failed, _unknown = self.offsets.list_once(timestamps)
            for tp, (offset, _ts) in found.items():
                ps = subs.assignment.get(tp)
                if ps is not None and ps.position is None:
                    ps.position = ps.fetch_position = offset
                    ps.reset = None
            subs.backoff(failed, self.settings.retry_backoff)
        subs.needs_reset = any(ps.position is None for ps in subs.assignment.values())

    # --- handing records out ------------------------------------------------------------------
    def drain(self, max_records: int | None) -> tuple[list, int]:
        """Take up to ``max_records`` decoded records as ``[(tp, [records])]``, moving positions."""
        chunks: list = []
        n = 0
        assignment = self.subscriptions.assignment
        if self.pushback:
            n = self._drain_pushback(max_records, chunks)
        completed = self.completed
        settings = self.settings
        while completed and (max_records is None or n < max_records):
            cf = completed[0]
            ps = assignment.get(cf.tp)
            if ps is None or ps.epoch != cf.epoch:
                completed.popleft()
                continue
            if ps.paused:   # hand nothing out; refetch from the position once resumed
                completed.popleft()
                ps.seek(ps.position)
                continue
            records = cf.records
            if records is None:
                try:
                    decoded = decode_rows(cf.data, cf.tp[0], cf.tp[1], ps.position,
                                          settings.check_crcs, settings.key_deserializer,
                                          settings.value_deserializer, cf.aborted)
                except Exception:
                    completed.popleft()
                    ps.seek(ps.position)      # refetch (and fail again) unless the app seeks
                    raise
                records = cf.records = decoded.records
                cf.data = None
            i = cf.index
            if max_records is None:
                take = as_records(records if i == 0 else records[i:])
            else:
                take = as_records(records[i:i + max_records - n])
            if take:
                cf.index = i + len(take)
                chunks.append((cf.tp, take))
                n += len(take)
                ps.position = take[-1][2] + 1
            if cf.index >= len(records):
                completed.popleft()
                ps.buffered -= 1
                if cf.next_offset > ps.position:
                    ps.position = cf.next_offset
        return chunks, n

    def _drain_pushback(self, max_records: int | None, chunks: list) -> int:
        assignment = self.subscriptions.assignment
        take = self.pushback if max_records is None else self.pushback[:max_records]
        self.pushback = [] if max_records is None else self.pushback[max_records:]
        by_tp: dict = {}
        for r in take:
            by_tp.setdefault(TopicPartition(r[0], r[1]), []).append(r)
        n = 0
        for tp, recs in by_tp.items():
            ps = assignment.get(tp)
            if ps is not None:
                ps.position = recs[-1][2] + 1
                chunks.append((tp, recs))
                n += len(recs)
        return n

    def push_back(self, records: list) -> None:
        """Records handed out but never seen by the application: first out next time, and the
        positions go back to the first of them."""
        first: dict = {}
        for r in records:
            key = (r[0], r[1])
            if key not in first:
                first[key] = r[2]
        assignment = self.subscriptions.assignment
        for key, offset in first.items():
            ps = assignment.get(TopicPartition(*key))
            if ps is not None and (ps.position is None or offset < ps.position):
                ps.position = offset
        self.pushback = records + self.pushback

    def drop_buffered(self, tp) -> None:
        """Forget records given back for ``tp`` (a seek or reset moved it)."""
        if self.pushback:
            key = (tp[0], tp[1])
            self.pushback = [r for r in self.pushback if (r[0], r[1]) != key]

    def retain(self, tps: set) -> None:
        """The assignment is now ``tps``: records given back for other partitions go."""
        if self.pushback:
            self.pushback = [r for r in self.pushback if (r[0], r[1]) in tps]

    def close(self) -> None:
        self.pool.close()
        self.loop.close()

    def metrics(self) -> dict:
        return {"buffered_fetches": len(self.completed), "in_flight_fetches": len(self.in_flight)}
