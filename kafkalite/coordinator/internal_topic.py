"""A coordinator's internal topic, read and written on this broker: what the group coordinator
does with ``__consumer_offsets`` and the transaction coordinator with ``__transaction_state``
(Kafka's GroupMetadataManager and TransactionStateManager share the same three moves).

* ``append`` writes one record batch to a partition this broker leads, through the
  ReplicaManager's produce path (acks, min.insync.replicas, the produce purgatory and follower
  wake-ups are exactly a producer's). It fires with 0 once the batch is replicated as the
  topic's ``required_acks`` asks, or with a Kafka error code (NOT_COORDINATOR when this broker
  does not, or no longer, lead the partition).
* ``read`` walks the partition's local log from the log start to the log end in chunks of
  ``load_buffer_size`` bytes, yielding to the reactor between slices, and hands each batch to
  the caller: the caller keeps the newest value per key, as Kafka's loaders do.
* ``ensure_topic`` creates the topic (compacted) the first time a coordinator is looked up, with
  min(the configured replication factor, live brokers) and a warning naming the setting.

Everything runs on the reactor thread (docs/architecture.md, 5. Threads and the reactor).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

from twisted.internet import defer, task
from twisted.python.failure import Failure

from kafkalite import errors
from kafkalite.controller.assignment import assign_replicas
from kafkalite.coordinator.partitioner import partition_for as _partition_for
from kafkalite.record import build_batch
from kafkalite.record.entries import read_entry
from kafkalite.record.header import iter_headers

log = logging.getLogger(__name__)

# errors of the produce path that mean "not the coordinator (any more)"
_NOT_COORDINATOR_CODES = frozenset({errors.NotLeaderForPartitionError.code,
                                    errors.UnknownTopicOrPartitionError.code})
#: records decoded between two yields to the reactor inside one chunk:
_RECORDS_PER_SLICE = 5000   # about 30 ms of decoding


class AppendCode(int):
    """An append's error code (0: written) that also tells where the batch went in the log
    (``base_offset``; -1 when refused): the group coordinator orders a partition's plain and
    transactional offset commits by it, as Kafka does."""

    base_offset: int

    def __new__(cls, code: int, base_offset: int = -1):
        value = super().__new__(cls, code)
        value.base_offset = base_offset
        return value


@dataclass(frozen=True)
class TopicSettings:
    """Where one internal topic's settings come from. Each field is the name of a BrokerConfig
    attribute, read at each use (dynamic broker configs may change them)."""
    topic: str
    num_partitions: str                # e.g. "offsets_topic_num_partitions"
    replication_factor: str
    segment_bytes: str
    load_buffer_size: str
    required_acks: str | None          # None: always -1
    timeout_ms: str
    replication_factor_name: str       # the Kafka config name, for the warning
    min_isr: str | None = None         # the topic's min.insync.replicas, if it sets one
    #: fixed topic configs beside (or instead of) the defaults below, e.g. Kafka's
    #: compression.type=uncompressed for __transaction_state
    topic_configs: tuple[tuple[str, str], ...] = ()


class InternalTopicLog:
    """One internal topic of this broker. ``broker`` needs ``config``, ``reactor``,
    ``clock_ms()``, ``replica_manager``, ``metadata_cache`` and ``deferred_zk``."""

    def __init__(self, broker, settings: TopicSettings):
        self.broker = broker
        self.settings = settings
        self._creating: list[defer.Deferred] | None = None   # callers of ensure_topic

    def _config(self, name: str):
        return getattr(self.broker.config, name)

    @property
    def topic(self) -> str:
        return self.settings.topic

    # --- placement ------------------------------------------------------------------------------
    def partition_for(self, key: str) -> int:
        """The partition of ``key``: abs(javaHash(key)) % partitions, as Kafka places groups
        and transactional ids."""
        return _partition_for(key, self._config(self.settings.num_partitions))

    # --- writing --------------------------------------------------------------------------------
    def append(self, partition: int, records: list[tuple[bytes, bytes | None]], *,
               producer_id: int = -1, producer_epoch: int = -1,
               transactional: bool = False, timeout_ms: int | None = None) -> defer.Deferred:
        """Append ``(key, value)`` records (value None: a tombstone) as one uncompressed batch;
        fires with 0 or a Kafka error code (see the module docstring), an ``AppendCode``
        that also carries the batch's base offset. A transactional batch
        (TxnOffsetCommit) carries the producer's id and epoch. ``timeout_ms`` replaces the
        topic's timeout setting (Kafka waits a transaction's timeout for its transitions). An
        empty ``records`` fires with 0 at once."""
        if not records:
            return defer.succeed(0)
        now = self.broker.clock_ms()
        try:
            batch = build_batch([(now, key, value, None) for key, value in records],
                                producer_id=producer_id, producer_epoch=producer_epoch,
                                transactional=transactional)
        except Exception as exc:  # noqa: BLE001 - a bad record is the caller's bug: errback
            return defer.fail(exc)
        acks = -1
        if self.settings.required_acks is not None:
            acks = self._config(self.settings.required_acks)
        # a coordinator's transactional batch carries no sequence (Kafka's AppendOrigin
        # Coordinator: epochs checked, sequences not)
        origin = {"origin": "coordinator"} if transactional else {}
        d = defer.maybeDeferred(self.broker.replica_manager.append_records,
                                (self._config(self.settings.timeout_ms) if timeout_ms is None
                                 else timeout_ms),
                                acks if acks in (0, 1) else -1, True,
                                {(self.topic, partition): batch}, **origin)
        return d.addCallback(self._append_result, partition)

    def _append_result(self, results, partition: int) -> AppendCode:
        result = results[(self.topic, partition)]
        code = result.error_code
        if code in _NOT_COORDINATOR_CODES:
            return AppendCode(errors.NotCoordinatorError.code)
        if code:
            log.info("append to %s-%d failed with error %d", self.topic, partition, code)
        return AppendCode(code, result.base_offset)

    # --- reading --------------------------------------------------------------------------------
    def read(self, partition: int, apply_batch: Callable) -> defer.Deferred:
        """Feed every batch of the partition's local log, from its log start to its log end, to
        ``apply_batch(header, records)``; fires with the offset reached. Fails with
        NotCoordinatorError when this broker does not lead the partition, or stops leading it
        (or the replica is removed) meanwhile."""
        return defer.ensureDeferred(self._read(partition, apply_batch))

    async def _read(self, partition: int, apply_batch: Callable) -> int:
        tp = (self.topic, partition)
        manager = self.broker.replica_manager
        hosted = manager.partitions.get(tp)
        if hosted is None or not hosted.is_leader:
            raise errors.NotCoordinatorError(
                f"broker {manager.broker_id} does not lead {self.topic}-{partition}")
        log_ = hosted.log
        chunk_bytes = max(1, self._config(self.settings.load_buffer_size))
        position = log_.log_start_offset
        decoded = 0
        while True:
            if (manager.partitions.get(tp) is not hosted or not hosted.is_leader
                    or log_.closed):
                raise errors.NotCoordinatorError(
                    f"{self.topic}-{partition}: leadership moved while loading")
            position = max(position, log_.log_start_offset)   # DeleteRecords or retention
            if position >= log_.log_end_offset:
                break
            data = log_.read(position, chunk_bytes).records
            if not data:
                break
            for pos, header in iter_headers(data, verify_crc=False):
                if header.next_offset <= position:
                    continue   # a batch before the start position (reads begin at its batch)
                # (magic 0/1 messages too: a broker's log.message.format.version below 0.11)
                batch_records = read_entry(data, pos)[1]
                apply_batch(header, batch_records)
                position = header.next_offset
                decoded += len(batch_records)
                if decoded >= _RECORDS_PER_SLICE:
                    decoded = 0
                    await _yield(self.broker.reactor)
            await _yield(self.broker.reactor)
        return position

    # --- the topic ------------------------------------------------------------------------------
    def ensure_topic(self) -> defer.Deferred:
        """Create the topic unless it exists: its configured partitions, replication factor
        min(configured, live brokers) -- a WARNING names the setting when fewer brokers are
        alive than it asks for --, cleanup.policy=compact, its segment.bytes,
        compression.type=producer (and min.insync.replicas where the topic sets one, and the
        settings' fixed ``topic_configs``). Fires
        with None once the topic is written to ZooKeeper (or already there); the controller
        then elects its leaders. Concurrent calls share one attempt."""
        if self.broker.metadata_cache.contains(self.topic):
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
        topic = self.topic
        if await deferred_zk.topic_exists(topic):
            return
        live = (sorted(self.broker.metadata_cache.brokers)
                or sorted(await deferred_zk.get_broker_ids()))
        if not live:
            raise errors.CoordinatorNotAvailableError(f"no live brokers to hold {topic}")
        wanted = self._config(self.settings.replication_factor)
        replication = min(wanted, len(live))
        if replication < wanted:
            log.warning("creating %s with replication factor %d: only %d broker(s) %s are "
                        "alive, fewer than %s=%d asks for (Kafka would refuse until enough "
                        "brokers are up); raise the replication factor later with a partition "
                        "reassignment", topic, replication, len(live), live,
                        self.settings.replication_factor_name, wanted)
        partitions = self._config(self.settings.num_partitions)
        assignment = assign_replicas(partitions, replication, live)
        topic_config = {"cleanup.policy": "compact",
                        "segment.bytes": str(self._config(self.settings.segment_bytes)),
                        "compression.type": "producer"}
        if self.settings.min_isr is not None:
            topic_config["min.insync.replicas"] = str(self._config(self.settings.min_isr))
        topic_config.update(self.settings.topic_configs)
        log.info("creating %s: %d partition(s), replication factor %d, %s", topic,
                 partitions, replication, topic_config)
        try:
            await deferred_zk.create_topic(topic, assignment, topic_config)
        except errors.TopicAlreadyExistsError:
            pass   # another broker created it first


def _yield(reactor) -> defer.Deferred:
    """Let the reactor run other work before the next slice (callLater(0))."""
    return task.deferLater(reactor, 0, lambda: None)
