"""The group coordinator's storage: ``__consumer_offsets`` read and written on this broker
(Kafka's GroupMetadataManager: ``storeGroup``/``storeOffsets`` append, ``doLoadGroupsAndOffsets``
load, KafkaApis' ``createInternalTopic``).

* ``append`` writes one record batch (the ``records`` module's keys and values) to a partition
  this broker leads, through the ReplicaManager's produce path, so acks, min.insync.replicas, the
  produce purgatory and follower wake-ups are exactly a producer's; it fires with 0 once the high
  watermark covers the batch (``offsets.commit.required.acks=-1``), or with an error code.
* ``load`` reads the partition's local log from the log start to the log end in chunks of
  ``offsets.load.buffer.size`` bytes, yielding to the reactor between chunks, and returns the
  newest value of every key (None for a tombstone).
* ``ensure_topic`` creates ``__consumer_offsets`` (compacted) the first time a coordinator is
  looked up.

Everything runs on the reactor thread (docs/architecture.md, 5. Threads and the reactor): Log
objects are only touched there.
"""

from __future__ import annotations

import logging

from twisted.internet import defer, task
from twisted.python.failure import Failure

from kafkalite import errors
from kafkalite.controller.assignment import assign_replicas
from kafkalite.coordinator import records as codec
from kafkalite.coordinator.partitioner import partition_for as _partition_for
from kafkalite.coordinator.types import OFFSETS_TOPIC, GroupSnapshot, OffsetAndMetadata
from kafkalite.record import build_batch, iter_batches
from kafkalite.record.control import parse_control_record
from kafkalite.record.header import CONTROL_BIT, TRANSACTIONAL_BIT

log = logging.getLogger(__name__)

# errors of the produce path that mean "not the coordinator (any more)"
_NOT_COORDINATOR_CODES = frozenset({errors.NotLeaderForPartitionError.code,
                                    errors.UnknownTopicOrPartitionError.code})
#: records decoded between two yields to the reactor inside one chunk:
_RECORDS_PER_SLICE = 5000   # about 30 ms of decoding

GroupsLoaded = dict[str, GroupSnapshot | None]
OffsetsLoaded = dict[tuple[str, str, int], OffsetAndMetadata | None]


class OffsetsLogStore:
    """Reads and writes ``__consumer_offsets`` for the broker's GroupCoordinator.

    ``broker`` needs: ``config`` (BrokerConfig), ``reactor``, ``clock_ms()``,
    ``replica_manager``, ``metadata_cache`` and ``deferred_zk`` (for ``ensure_topic``).
    """

    def __init__(self, broker):
        self.broker = broker
        self._creating: list[defer.Deferred] | None = None   # callers of ensure_topic

    # --- placement ------------------------------------------------------------------------------
    def partition_for(self, group_id: str) -> int:
        """The ``__consumer_offsets`` partition of ``group_id``: abs(javaHash) % partitions."""
        return _partition_for(group_id, self.broker.config.offsets_topic_num_partitions)

    # --- writing --------------------------------------------------------------------------------
    def append(self, partition: int, records: list[tuple[bytes, bytes | None]]) -> defer.Deferred:
        """Append ``(key, value)`` records (value None: a tombstone) as one uncompressed batch
        to ``__consumer_offsets-<partition>`` as its leader.

        Fires with 0 once the in-sync replicas have the batch (the high watermark passed it;
        with ``offsets.commit.required.acks`` 0 or 1, once it is in the local log), or with a
        Kafka error code: NOT_COORDINATOR (this broker does not lead the partition, or stopped
        leading it while waiting), NOT_ENOUGH_REPLICAS (the ISR is smaller than the topic's
        min.insync.replicas: nothing was written), NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        REQUEST_TIMED_OUT (not replicated within ``offsets.commit.timeout.ms``),
        MESSAGE_TOO_LARGE, KAFKA_STORAGE_ERROR, ... The caller maps them to its answer as
        Kafka's GroupMetadataManager does. An empty ``records`` fires with 0 at once."""
        if not records:
            return defer.succeed(0)
        config = self.broker.config
        now = self.broker.clock_ms()
        try:
            batch = build_batch([(now, key, value, None) for key, value in records])
        except Exception as exc:  # noqa: BLE001 - a bad record is the caller's bug: errback
            return defer.fail(exc)
        acks = config.offsets_commit_required_acks
        d = defer.maybeDeferred(self.broker.replica_manager.append_records,
                                config.offsets_commit_timeout_ms,
                                acks if acks in (0, 1) else -1, True,
                                {(OFFSETS_TOPIC, partition): batch})
        return d.addCallback(_append_result, partition)

    # --- loading --------------------------------------------------------------------------------
    def load(self, partition: int) -> defer.Deferred:
        """Read ``__consumer_offsets-<partition>`` from its log start to its log end; fires
        with ``(groups, offsets)``: ``{group: GroupSnapshot | None}`` and
        ``{(group, topic, partition): OffsetAndMetadata | None}``, the newest value of each
        key, None where the newest is a tombstone.

        Reads ``offsets.load.buffer.size`` bytes at a time (at least one whole batch) and
        yields to the reactor between chunks, so a large partition does not stall the broker.
        Records Kafka wrote in transactions count once their COMMIT marker is read (ABORT
        drops them). A record that does not decode is logged and skipped. Fails with
        NotCoordinatorError when this broker does not lead the partition, or stops leading it
        (or the replica is removed) during the load."""
        return defer.ensureDeferred(self._load(partition))

    async def _load(self, partition: int) -> tuple[GroupsLoaded, OffsetsLoaded]:
        tp = (OFFSETS_TOPIC, partition)
        manager = self.broker.replica_manager
        hosted = manager.partitions.get(tp)
        if hosted is None or not hosted.is_leader:
            raise errors.NotCoordinatorError(
                f"broker {manager.broker_id} does not lead {OFFSETS_TOPIC}-{partition}")
        log_ = hosted.log
        chunk_bytes = max(1, self.broker.config.offsets_load_buffer_size)
        state = _LoadState()
        position = log_.log_start_offset
        decoded = 0
        while True:
            if (manager.partitions.get(tp) is not hosted or not hosted.is_leader
                    or log_.closed):
                raise errors.NotCoordinatorError(
                    f"{OFFSETS_TOPIC}-{partition}: leadership moved while loading")
            position = max(position, log_.log_start_offset)   # DeleteRecords or retention
            if position >= log_.log_end_offset:
                break
            data = log_.read(position, chunk_bytes).records
            if not data:
                break
            for header, batch_records in iter_batches(data, verify_crc=False):
                if header.next_offset <= position:
                    continue   # a batch before the start position (reads begin at its batch)
                state.apply_batch(header, batch_records, partition)
                position = header.next_offset
                decoded += len(batch_records)
                if decoded >= _RECORDS_PER_SLICE:
                    decoded = 0
                    await _yield(self.broker.reactor)
            await _yield(self.broker.reactor)
        log.info("loaded %d group(s) and %d offset(s) from %s-%d up to offset %d",
                 len(state.groups), len(state.offsets), OFFSETS_TOPIC, partition, position)
        return state.groups, state.offsets

    # --- the topic ------------------------------------------------------------------------------
    def ensure_topic(self) -> defer.Deferred:
        """Create ``__consumer_offsets`` unless it exists: ``offsets.topic.num.partitions``
        partitions, replication factor min(``offsets.topic.replication.factor``, live brokers)
        -- a WARNING names the setting when fewer brokers are alive than it asks for --, and
        cleanup.policy=compact, segment.bytes=``offsets.topic.segment.bytes``,
        compression.type=producer. Fires with None once the topic is written to ZooKeeper (or
        already there); the controller then elects its leaders. Concurrent calls share one
        attempt."""
        if self.broker.metadata_cache.contains(OFFSETS_TOPIC):
            return defer.succeed(None)
        waiter: defer.Deferred = defer.Deferred()
        if self._creating is not None:
            self._creating.append(waiter)
            return waiter
        self._creating = [waiter]
        defer.ensureDeferred(self._create_topic()).addBoth(self._topic_created)
        return waiter

    def _topic_created(self, result) -> None:
        waiters, self._creating = self._creating or [], None
        for waiter in waiters:
            if isinstance(result, Failure):
                waiter.errback(result)
            else:
                waiter.callback(None)

    async def _create_topic(self) -> None:
        deferred_zk = self.broker.deferred_zk
        if await deferred_zk.topic_exists(OFFSETS_TOPIC):
            return
        config = self.broker.config
        live = sorted(self.broker.metadata_cache.brokers) or sorted(await deferred_zk.get_broker_ids())
        if not live:
            raise errors.CoordinatorNotAvailableError(
                f"no live brokers to hold {OFFSETS_TOPIC}")
        wanted = config.offsets_topic_replication_factor
        replication = min(wanted, len(live))
        if replication < wanted:
            log.warning("creating %s with replication factor %d: only %d broker(s) %s are "
                        "alive, fewer than offsets.topic.replication.factor=%d asks for (Kafka "
                        "would refuse until enough brokers are up); raise the replication "
                        "factor later with a partition reassignment", OFFSETS_TOPIC,
                        replication, len(live), live, wanted)
        partitions = config.offsets_topic_num_partitions
        assignment = assign_replicas(partitions, replication, live)
        topic_config = {"cleanup.policy": "compact",
                        "segment.bytes": str(config.offsets_topic_segment_bytes),
                        "compression.type": "producer"}
        log.info("creating %s: %d partition(s), replication factor %d, %s", OFFSETS_TOPIC,
                 partitions, replication, topic_config)
        try:
            await deferred_zk.create_topic(OFFSETS_TOPIC, assignment, topic_config)
        except errors.TopicAlreadyExistsError:
            pass   # another broker created it first


# --- helpers ------------------------------------------------------------------------------------

def _append_result(results, partition: int) -> int:
    code = results[(OFFSETS_TOPIC, partition)].error_code
    if code in _NOT_COORDINATOR_CODES:
        return errors.NotCoordinatorError.code
    if code:
        log.info("append to %s-%d failed with error %d", OFFSETS_TOPIC, partition, code)
    return code


def _yield(reactor) -> defer.Deferred:
    """Let the reactor run other work before the next slice (callLater(0))."""
    return task.deferLater(reactor, 0, lambda: None)


class _LoadState:
    """The newest value per key while reading a partition, with Kafka's handling of
    transactional offset commits (pending per producer until its COMMIT/ABORT marker)."""

    def __init__(self):
        self.groups: GroupsLoaded = {}
        self.offsets: OffsetsLoaded = {}
        self._offset_positions: dict[tuple[str, str, int], int] = {}
        # producer id -> {offset key: (batch base offset, value)} until its COMMIT/ABORT
        self._pending: dict[int, dict] = {}
        self.skipped = 0

    def apply_batch(self, header, batch_records, partition: int) -> None:
        attributes = header.attributes
        if attributes & CONTROL_BIT:
            self._apply_marker(header, batch_records)
            return
        transactional = bool(attributes & TRANSACTIONAL_BIT)
        for record in batch_records:
            try:
                parsed = codec.parse(record.key, record.value)
            except errors.CorruptRecordError as exc:
                self.skipped += 1
                log.error("%s-%d: skipping the undecodable record at offset %d: %s",
                          OFFSETS_TOPIC, partition, record.offset, exc.message)
                continue
            if parsed is None:
                continue   # a record kind this broker does not know
            kind, key, value = parsed
            if kind == "group":
                self.groups[key] = value
            elif transactional:
                self._pending.setdefault(header.producer_id, {})[key] = (header.base_offset,
                                                                        value)
            else:
                self.offsets[key] = value
                self._offset_positions[key] = header.base_offset

    def _apply_marker(self, header, batch_records) -> None:
        pending = self._pending.pop(header.producer_id, None)
        if pending is None or not batch_records:
            return
        try:
            commit, _coordinator_epoch = parse_control_record(batch_records[0].key,
                                                              batch_records[0].value)
        except errors.InvalidRecordError:
            return   # not a transaction marker
        if not commit:
            return   # ABORT: the transaction's offsets never happened
        for offset_key, (position, value) in pending.items():
            if self._offset_positions.get(offset_key, -1) < position:
                self.offsets[offset_key] = value
                self._offset_positions[offset_key] = position
