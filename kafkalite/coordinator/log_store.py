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

from twisted.internet import defer

from kafkalite import errors
from kafkalite.coordinator import records as codec
from kafkalite.coordinator.internal_topic import InternalTopicLog, TopicSettings
from kafkalite.coordinator.types import OFFSETS_TOPIC, GroupSnapshot, OffsetAndMetadata
from kafkalite.record.control import parse_control_record
from kafkalite.record.header import CONTROL_BIT, TRANSACTIONAL_BIT

log = logging.getLogger(__name__)


GroupsLoaded = dict[str, GroupSnapshot | None]
OffsetsLoaded = dict[tuple[str, str, int], OffsetAndMetadata | None]


OFFSETS_SETTINGS = TopicSettings(
    topic=OFFSETS_TOPIC, num_partitions="offsets_topic_num_partitions",
    replication_factor="offsets_topic_replication_factor",
    segment_bytes="offsets_topic_segment_bytes", load_buffer_size="offsets_load_buffer_size",
    required_acks="offsets_commit_required_acks", timeout_ms="offsets_commit_timeout_ms",
    replication_factor_name="offsets.topic.replication.factor")


class OffsetsLogStore:
    """Reads and writes ``__consumer_offsets`` for the broker's GroupCoordinator, over the
    shared internal-topic moves (``coordinator.internal_topic``).

    ``broker`` needs: ``config`` (BrokerConfig), ``reactor``, ``clock_ms()``,
    ``replica_manager``, ``metadata_cache`` and ``deferred_zk`` (for ``ensure_topic``).
    """

    def __init__(self, broker):
        self.broker = broker
        self.topic_log = InternalTopicLog(broker, OFFSETS_SETTINGS)

    # --- placement ------------------------------------------------------------------------------
    def partition_for(self, group_id: str) -> int:
        """The ``__consumer_offsets`` partition of ``group_id``: abs(javaHash) % partitions."""
        return self.topic_log.partition_for(group_id)

    # --- writing --------------------------------------------------------------------------------
    def append(self, partition: int, records: list[tuple[bytes, bytes | None]], *,
               producer_id: int = -1, producer_epoch: int = -1,
               transactional: bool = False) -> defer.Deferred:
        """Append ``(key, value)`` records (value None: a tombstone) as one uncompressed batch
        to ``__consumer_offsets-<partition>`` as its leader; a TxnOffsetCommit's batch is
        transactional, with the producer's id and epoch.

        Fires with 0 once the in-sync replicas have the batch (the high watermark passed it;
        with ``offsets.commit.required.acks`` 0 or 1, once it is in the local log), or with a
        Kafka error code: NOT_COORDINATOR (this broker does not lead the partition, or stopped
        leading it while waiting), NOT_ENOUGH_REPLICAS (the ISR is smaller than the topic's
        min.insync.replicas: nothing was written), NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        REQUEST_TIMED_OUT (not replicated within ``offsets.commit.timeout.ms``),
        MESSAGE_TOO_LARGE, KAFKA_STORAGE_ERROR, ... The caller maps them to its answer as
        Kafka's GroupMetadataManager does. An empty ``records`` fires with 0 at once."""
        return self.topic_log.append(partition, records, producer_id=producer_id,
                                     producer_epoch=producer_epoch, transactional=transactional)

    # --- loading --------------------------------------------------------------------------------
    def load(self, partition: int) -> defer.Deferred:
        """Read ``__consumer_offsets-<partition>`` from its log start to its log end; fires
        with ``(groups, offsets, positions, pending)``: ``{group: GroupSnapshot | None}`` and
        ``{(group, topic, partition): OffsetAndMetadata | None}``, the newest value of each
        key, None where the newest is a tombstone; each offset's batch position; and the
        transactional offsets whose COMMIT/ABORT marker is not in the log yet,
        ``{producer id: {(group, topic, partition): (position, OffsetAndMetadata)}}``.

        Reads ``offsets.load.buffer.size`` bytes at a time (at least one whole batch) and
        yields to the reactor between chunks, so a large partition does not stall the broker.
        Records written in transactions count once their COMMIT marker is read (ABORT drops
        them). A record that does not decode is logged and skipped. Fails with
        NotCoordinatorError when this broker does not lead the partition, or stops leading it
        (or the replica is removed) during the load."""
        state = _LoadState()
        d = self.topic_log.read(
            partition, lambda header, records: state.apply_batch(header, records, partition))

        def loaded(position):
            log.info("loaded %d group(s) and %d offset(s) from %s-%d up to offset %d",
                     len(state.groups), len(state.offsets), OFFSETS_TOPIC, partition, position)
            return state.groups, state.offsets, state.offset_positions, state.pending
        return d.addCallback(loaded)

    # --- the topic ------------------------------------------------------------------------------
    def ensure_topic(self) -> defer.Deferred:
        """Create ``__consumer_offsets`` unless it exists: ``offsets.topic.num.partitions``
        partitions, replication factor min(``offsets.topic.replication.factor``, live brokers)
        -- a WARNING names the setting when fewer brokers are alive than it asks for --, and
        cleanup.policy=compact, segment.bytes=``offsets.topic.segment.bytes``,
        compression.type=producer. Fires with None once the topic is written to ZooKeeper (or
        already there); the controller then elects its leaders. Concurrent calls share one
        attempt."""
        return self.topic_log.ensure_topic()


class _LoadState:
    """The newest value per key while reading a partition, with Kafka's handling of
    transactional offset commits (pending per producer until its COMMIT/ABORT marker)."""

    def __init__(self):
        self.groups: GroupsLoaded = {}
        self.offsets: OffsetsLoaded = {}
        self.offset_positions: dict[tuple[str, str, int], int] = {}
        # producer id -> {offset key: (batch base offset, value)} until its COMMIT/ABORT
        self.pending: dict[int, dict] = {}
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
                self.pending.setdefault(header.producer_id, {})[key] = (header.base_offset,
                                                                        value)
            else:
                self.offsets[key] = value
                self.offset_positions[key] = header.base_offset

    def _apply_marker(self, header, batch_records) -> None:
        pending = self.pending.pop(header.producer_id, None)
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
            if self.offset_positions.get(offset_key, -1) < position:
                self.offsets[offset_key] = value
                self.offset_positions[offset_key] = position
