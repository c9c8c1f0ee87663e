"""The ReplicaManager: every partition this broker hosts, and the produce/fetch paths over them.

It applies the controller's LeaderAndIsr and StopReplica, appends produced batches on leaders,
answers consumer and follower fetches (long poll through the fetch purgatory), holds acks=all
produces in the produce purgatory until the ISR has the records, and shrinks or expands ISRs.
All on the reactor thread.

A failed log dir (``handle_log_dir_failure``, Kafka's): its partitions stop -- no fetcher, no
leadership, waiting requests answered -- and stay *offline* until the broker restarts: Produce,
Fetch, ListOffsets, LeaderAndIsr and StopReplica for them answer KAFKA_STORAGE_ERROR, and no
new log is made for them in another dir. Partitions in the other dirs go on.
"""

from __future__ import annotations

import logging
from typing import Callable

from twisted.internet import task

from kafkalite import errors
from kafkalite.errors import (KafkaError, KafkaStorageError, NotLeaderForPartitionError,
                              StaleControllerEpochError, UnknownTopicOrPartitionError, code_of)
from kafkalite.log.dir_failure import normalize_dir
from kafkalite.protocol import messages as m
from kafkalite.server.delete_records import INTERNAL_TOPICS
from kafkalite.server.offset_values import EpochEndOffset, EpochQuery, OffsetQuery, OffsetResult
from kafkalite.server.data_values import FetchParams, FetchResult, PartitionData, ProduceResult
from kafkalite.server.delayed_data_ops import (NO_LOG_START_ERRORS, DelayedFetch,
                                               DelayedProduce, error_text, is_consumer_fetch)
from kafkalite.server.leader_and_isr_checks import ignored_state, unavailable_leader
from kafkalite.server.partition import Partition, PartitionState, epoch_starts_from_log
from kafkalite.server.producer_state import CLIENT
from kafkalite.server import producer_txns
from kafkalite.server.producer_txns import aborted_in_range
from kafkalite.topic_partition import TopicPartition
from kafkalite.server.purgatory import Purgatory
from kafkalite.server.read_replica import (Selector, fetch_only_from_leader, preferred_for,
                                           serve_refusal)
from kafkalite.server.replica_alter_log_dirs import ReplicaAlterLogDirs

log = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2
PRODUCER_EXPIRATION_CHECK_S = 600
LATEST_TIMESTAMP = -1


class ReplicaManager:
    def __init__(self, broker_id: int, log_manager, reactor, clock_ms: Callable[[], int],
                 topic_config, replica_lag_time_max_ms: int = 30000,
                 isr_change_callback=None, become_follower_callback=None,
                 stop_follower_callback=None, leadership_callback=None,
                 partition_known: Callable[[str, int], bool] | None = None,
                 producer_id_expiration_ms: int = 604800000,
                 replica_selector: Selector | None = None,
                 rack_of: Callable[[int], str | None] | None = None,
                 broker_alive: Callable[[int], bool] | None = None):
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.reactor = reactor
        self.clock_ms = clock_ms
        self.topic_config = topic_config          # topic -> TopicConfig
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.controller_epoch = -1
        self.produce_purgatory = Purgatory("produce", reactor)
        self.fetch_purgatory = Purgatory("fetch", reactor)
        # DeleteRecords waiting for every live replica's log start offset (server.delete_records)
        self.delete_records_purgatory = Purgatory("delete-records", reactor)
        # hooks for the replication layer: ISR writes to ZooKeeper, fetcher management
        self.isr_change_callback = isr_change_callback
        self.become_follower_callback = become_follower_callback
        self.stop_follower_callback = stop_follower_callback
        # leadership_callback(tp, is_leader, leader_epoch) after LeaderAndIsr/StopReplica, for
        # the group coordinator (Kafka's onLeadershipChange); is_leader False also for removal
        self.leadership_callback = leadership_callback
        # whether the metadata cache knows a partition (Kafka's metadataCache.contains): a
        # partition known there but not hosted here answers NOT_LEADER_OR_FOLLOWER
        self.partition_known = partition_known or (lambda topic, partition: False)
        self._isr_check = None
        # idle producers are forgotten (Kafka: transactional.id.expiration.ms, checked every
        # 10 minutes, LogManager.ProducerIdExpirationCheckIntervalMs)
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._producer_expiry = None
        # AlterReplicaLogDirs: replicas moving between this broker's data dirs
        self.alter_log_dirs = ReplicaAlterLogDirs(self, log_manager, reactor)
        # KIP-392: replica.selector.class's selector (None: the leader serves) and a live
        # broker's rack (None when it is gone or has none), from the metadata cache
        self.replica_selector = replica_selector
        self.rack_of = rack_of or (lambda broker_id: None)
        # whether the metadata cache knows a live broker (a follower's leader must be one)
        self.broker_alive = broker_alive or (lambda broker_id: False)

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        self._isr_check = task.LoopingCall(self.maybe_shrink_isr)
        self._isr_check.clock = self.reactor
        self._isr_check.start(max(self.replica_lag_time_max_ms / 2000.0, 0.1), now=False)
        self._producer_expiry = task.LoopingCall(self.remove_expired_producers)
        self._producer_expiry.clock = self.reactor
        self._producer_expiry.start(PRODUCER_EXPIRATION_CHECK_S, now=False)
        self.alter_log_dirs.start()

    def stop(self) -> None:
        for loop in (self._isr_check, self._producer_expiry):
            if loop is not None and loop.running:
                loop.stop()
        self.alter_log_dirs.stop()
        self.produce_purgatory.complete_all()
        self.fetch_purgatory.complete_all()
        self.delete_records_purgatory.complete_all()

    def _partition_or_raise(self, topic: str, partition: int) -> Partition:
        found = self.partitions.get((topic, partition))
        if found is None:
            raise self.not_hosted_error(topic, partition)
        return found

    def not_hosted_error(self, topic: str, partition: int) -> KafkaError:
        """The error for a partition this broker does not host (Kafka's getPartitionOrError):
        KAFKA_STORAGE_ERROR in a failed log dir; NOT_LEADER_OR_FOLLOWER when the metadata
        knows the partition (say, after a reassignment moved it: the client looks for the
        leader again); else UNKNOWN_TOPIC_OR_PARTITION."""
        offline = self.offline_error(topic, partition)
        if offline is not None:
            return offline
        if self.partition_known(topic, partition):
            return NotLeaderForPartitionError(
                f"broker {self.broker_id} holds no replica of {topic}-{partition}")
        return UnknownTopicOrPartitionError(
            f"broker {self.broker_id} does not host {topic}-{partition}")

    def offline_error(self, topic: str, partition: int) -> KafkaStorageError | None:
        """The error for a partition whose log is in a failed dir (None if it is not)."""
        if not self.log_manager.is_offline_log(topic, partition):
            return None
        return KafkaStorageError(f"{topic}-{partition} is in an offline log dir of broker "
                                 f"{self.broker_id}")

    @property
    def offline_partitions(self) -> set[tuple[str, int]]:
        return self.log_manager.offline_logs

    # --- log dir failure --------------------------------------------------------------------------
    def handle_log_dir_failure(self, data_dir) -> list[tuple[str, int]]:
        """Stop serving every partition in the failed ``data_dir`` (Kafka's
        ReplicaManager.handleLogDirFailure): their fetchers stop, they leave ``partitions`` (this
        broker leads none of them any more; the coordinator resigns their groups), requests
        waiting on them are answered, and the log manager closes their logs. Returns them."""
        offline = [tp for tp in self.partitions
                   if self.log_manager.log_dir_of(*tp) == normalize_dir(data_dir)]
        log.warning("stopping the replicas in the failed log dir %s: %s", data_dir,
                    ", ".join(f"{t}-{p}" for t, p in offline) or "none")
        if offline and self.stop_follower_callback:
            self.stop_follower_callback(offline)
        removed = []
        for tp in offline:
            partition = self.partitions.pop(tp)
            removed.append((tp, False, partition.leader_epoch))
        self.log_manager.handle_log_dir_failure(data_dir)
        for tp in offline:   # waiting requests see the partition gone: KAFKA_STORAGE_ERROR
            self.produce_purgatory.check(tp)
            self.fetch_purgatory.check(tp)
            self.delete_records_purgatory.check(tp)
        self._leadership_changed(removed)
        return offline

    def leader_partition(self, topic: str, partition: int) -> Partition:
        found = self._partition_or_raise(topic, partition)
        found.require_leader()
        return found

    # --- controller requests --------------------------------------------------------------------
    def check_controller_epoch(self, controller_epoch: int) -> None:
        if controller_epoch < self.controller_epoch:
            raise StaleControllerEpochError(
                f"controller epoch {controller_epoch} is older than {self.controller_epoch} "
                "seen before: the request comes from a deposed controller")
        self.controller_epoch = controller_epoch

    def become_leader_or_follower(self, request: m.LeaderAndIsrRequest) -> m.LeaderAndIsrResponse:
        try:
            self.check_controller_epoch(request.controller_epoch)
        except StaleControllerEpochError as exc:
            return request.error_response(code_of(exc), exc.message)
        partition_errors = []
        new_followers = []
        roles = []
        live_ids = {b.broker_id for b in request.live_leaders}
        alive = lambda b: b in live_ids or self.broker_alive(b)  # noqa: E731
        for state in request.partition_states:
            tp = (state.topic, state.partition)
            try:
                partition = self.partitions.get(tp)
                if partition is None and self.log_manager.is_offline_log(*tp):
                    # Kafka's HostedPartition.Offline: the controller learns the replica is
                    # offline from this answer
                    log.info("%s-%d: LeaderAndIsr ignored, the partition is in an offline log "
                             "dir", tp[0], tp[1])
                    partition_errors.append(m.PartitionError(tp[0], tp[1],
                                                             KafkaStorageError.code))
                    continue
                ignored = ignored_state(
                    state, partition.leader_epoch if partition is not None else -1,
                    self.broker_id, request.controller_id, request.controller_epoch)
                if ignored is not None:
                    log.log(ignored.level, ignored.message)
                    partition_errors.append(m.PartitionError(tp[0], tp[1], ignored.error_code))
                    continue
                if partition is None:
                    partition = self._create_partition(state.topic, state.partition)
                unavailable = unavailable_leader(state, self.broker_id, request.controller_id,
                                                 request.controller_epoch, alive)
                if unavailable is not None:
                    # Kafka logs it as an error; here, as all refused input, a warning
                    log.warning(unavailable)
                    partition_errors.append(m.PartitionError(tp[0], tp[1], 0))
                    continue
                before = (partition.is_leader, partition.leader_epoch)
                new_state = PartitionState(state.leader, state.leader_epoch, list(state.isr),
                                           list(state.replicas), state.zk_version,
                                           state.controller_epoch)
                if state.leader == self.broker_id:
                    partition.make_leader(new_state)
                    if self.stop_follower_callback:
                        self.stop_follower_callback([tp])
                    log.info("%s-%d: leader at epoch %d, ISR %s, LEO %d, HW %d", tp[0], tp[1],
                             state.leader_epoch, state.isr, partition.log_end_offset,
                             partition.high_watermark)
                else:
                    partition.make_follower(new_state)
                    new_followers.append(partition)
                    log.info("%s-%d: follower of %d at epoch %d", tp[0], tp[1], state.leader,
                             state.leader_epoch)
                # waiting requests must re-check: leadership may have moved
                self.produce_purgatory.check(tp)
                self.fetch_purgatory.check(tp)
                self.delete_records_purgatory.check(tp)
                partition_errors.append(m.PartitionError(tp[0], tp[1], 0))
                # Kafka's onLeadershipChange hears of a leader only when it is new
                # (Partition.makeLeader's isNewLeader): a leader whose epoch moved (an ISR
                # shrink, a reassignment) keeps its coordinators' state instead of reloading
                # every __consumer_offsets/__transaction_state partition it leads
                if partition.is_leader:
                    if not before[0]:
                        roles.append((tp, True, partition.leader_epoch))
                elif (False, partition.leader_epoch) != before:
                    roles.append((tp, False, partition.leader_epoch))
            except Exception as exc:  # noqa: BLE001 - reported per partition
                log.exception("LeaderAndIsr for %s-%d failed", tp[0], tp[1])
                partition_errors.append(m.PartitionError(tp[0], tp[1], code_of(exc)))
        if new_followers and self.become_follower_callback:
            live = {b.broker_id: (b.host, b.port) for b in request.live_leaders}
            self.become_follower_callback(new_followers, live)
        self._leadership_changed(roles)
        return m.LeaderAndIsrResponse(partition_errors=partition_errors)

    def _leadership_changed(self, roles) -> None:
        if self.leadership_callback is None:
            return
        for tp, is_leader, leader_epoch in roles:
            try:
                self.leadership_callback(tp, is_leader, leader_epoch)
            except Exception:  # noqa: BLE001 - never fail the controller's request for it
                log.exception("leadership callback for %s-%d failed", tp[0], tp[1])

    def _create_partition(self, topic: str, partition: int) -> Partition:
        log_ = self.log_manager.get_or_create_log(topic, partition, self.topic_config(topic))
        created = Partition(topic, partition, self.broker_id, log_, self.clock_ms,
                            self.replica_lag_time_max_ms)
        created.high_watermark = min(self.log_manager.high_watermark_checkpoint(topic, partition),
                                     log_.log_end_offset)
        created.epoch_starts = epoch_starts_from_log(log_)
        # from the newest producer snapshot on (Kafka's loadProducerState)
        producer_txns.rebuild(created.producer_states, log_)
        created.producer_states.remove_expired(self.clock_ms(), self.producer_id_expiration_ms)
        self.partitions[(topic, partition)] = created
        return created

    def stop_replicas(self, request: m.StopReplicaRequest) -> m.StopReplicaResponse:
        try:
            self.check_controller_epoch(request.controller_epoch)
        except StaleControllerEpochError as exc:
            return request.error_response(code_of(exc), exc.message)
        results = []
        removed = []
        tps = [(tp.topic, tp.partition) for tp in request.partitions]
        if self.stop_follower_callback:
            self.stop_follower_callback(tps)
        for tp in tps:
            if tp not in self.partitions and self.log_manager.is_offline_log(*tp):
                results.append(m.PartitionError(tp[0], tp[1], KafkaStorageError.code))
                continue
            try:
                partition = self.partitions.pop(tp, None)
                if partition is not None:
                    removed.append((tp, False, partition.leader_epoch))
                self.produce_purgatory.complete_all(tp)
                self.fetch_purgatory.complete_all(tp)
                self.delete_records_purgatory.complete_all(tp)
                if request.delete_partitions:
                    self.log_manager.delete_log(tp[0], tp[1])
                elif partition is not None:
                    partition.log.flush()
                results.append(m.PartitionError(tp[0], tp[1], 0))
            except Exception as exc:  # noqa: BLE001
                log.exception("StopReplica of %s-%d failed", tp[0], tp[1])
                results.append(m.PartitionError(tp[0], tp[1], code_of(exc)))
        self._leadership_changed(removed)
        return m.StopReplicaResponse(partition_errors=results)

    # --- produce --------------------------------------------------------------------------------
    def append_records(self, timeout_ms: int, required_acks: int, internal_topics_allowed: bool,
                       entries: dict[TopicPartition, bytes], origin: str = CLIENT):
        """Append each partition's batch bytes as its leader (Kafka's appendRecords). Returns
        ``{tp: ProduceResult}``, or for acks=all a Deferred firing with it once the ISR has
        the records or ``timeout_ms`` passed. Internal topics (``__consumer_offsets``) take
        only the broker's own writes (``internal_topics_allowed``), as in Kafka. ``origin``
        "coordinator" (the coordinators' own writes) is the only way a control batch (a
        transaction marker) is accepted; a client's is INVALID_RECORD, as Kafka's
        LogValidator."""
        if required_acks not in (0, 1, -1):
            message = f"acks={required_acks}: must be 0, 1 or -1 (all)"
            return {tp: ProduceResult(errors.InvalidRequiredAcksError.code, message)
                    for tp in entries}
        results: dict[TopicPartition, ProduceResult] = {}
        pending: dict[TopicPartition, int] = {}
        for tp, records in entries.items():
            topic, partition_id = tp
            try:
                if topic in INTERNAL_TOPICS and not internal_topics_allowed:
                    raise errors.InvalidTopicError(f"cannot append to internal topic {topic}")
                partition = self._partition_or_raise(topic, partition_id)
                config = self.topic_config(topic)
                info = partition.append_as_leader(records, required_acks,
                                                  config.min_insync_replicas, origin)
                results[tp] = ProduceResult(0, None, info.first_offset, info.log_append_time,
                                            partition.log_start_offset)
                if required_acks == -1:
                    pending[tp] = info.last_offset + 1
                    self.fetch_purgatory.check(tp)    # the answer waits on the followers
                else:       # consumers now, followers after this answer (purgatory's doc)
                    self.fetch_purgatory.check(tp, is_consumer_fetch)
                    self.fetch_purgatory.check_soon(tp)
            except Exception as exc:  # noqa: BLE001 - answered per partition
                if not isinstance(exc, KafkaError):
                    log.exception("append to %s-%d failed", topic, partition_id)
                results[tp] = self._refused_append(tp, exc)
        if not pending:
            return results
        operation = DelayedProduce(timeout_ms, self, pending, results)
        return self.produce_purgatory.try_complete_else_watch(operation, list(pending))

    def _refused_append(self, tp, exc: BaseException) -> ProduceResult:
        """A refused partition's answer, with the fields Kafka's appendToLocalLog sets: the log
        start offset is left unset (-1) for the refusals it expects (not hosted, not leader,
        too large, corrupt, storage, internal topic) and is the partition's otherwise; record
        errors (KIP-467) come with a record validation failure."""
        start = -1
        if not isinstance(exc, NO_LOG_START_ERRORS):
            hosted = self.partitions.get(tp)
            start = hosted.log_start_offset if hosted is not None else -1
        return ProduceResult(code_of(exc), error_text(exc), log_start_offset=start,
                             record_errors=tuple(getattr(exc, "record_errors", ())))

    # --- fetch ----------------------------------------------------------------------------------
    def fetch(self, params: FetchParams, fetch_infos: dict[TopicPartition, PartitionData]):
        """Read each partition (Kafka's fetchMessages). Returns ``{tp: FetchResult}`` in
        ``fetch_infos``' order, or a Deferred firing with it after a long poll (until
        ``min_bytes`` arrived or ``max_wait_ms`` passed)."""
        if params.replica_id >= 0:
            self._record_follower_positions(params.replica_id, fetch_infos)
        results, size = self.read_fetch(params, fetch_infos)
        if (params.max_wait_ms <= 0 or size >= params.min_bytes or not fetch_infos
                or any(r.error_code for r in results.values())):
            return results
        operation = DelayedFetch(params.max_wait_ms, self, params, fetch_infos, size)
        return self.fetch_purgatory.try_complete_else_watch(operation, list(fetch_infos))

    def read_fetch(self, params: FetchParams, fetch_infos: dict[TopicPartition, PartitionData]
                   ) -> tuple[dict[TopicPartition, FetchResult], int]:
        """Each partition's answer and the bytes read in all (Kafka's readFromLocalLog)."""
        is_follower = params.replica_id >= 0
        committed = not is_follower and params.isolation_level == 1
        only_leader = fetch_only_from_leader(params.replica_id, params.client_rack)
        remaining = params.max_bytes
        total = 0
        results: dict[TopicPartition, FetchResult] = {}
        for tp, p in fetch_infos.items():
            try:
                partition = self._partition_or_raise(*tp)
                refusal = serve_refusal(partition, p.current_leader_epoch, only_leader)
                if refusal is not None:
                    raise refusal
                lso = partition.last_stable_offset
                preferred = preferred_for(partition, self.replica_selector, self.rack_of,
                                          params, p.fetch_offset, self.clock_ms())
                if preferred >= 0:   # KIP-392: the consumer goes there; no records from here
                    results[tp] = FetchResult(0, partition.high_watermark, lso,
                                              partition.log_start_offset, b"", None, preferred)
                    continue
                limit = (partition.log_end_offset if is_follower
                         else lso if committed else partition.high_watermark)
                if p.fetch_offset > limit and not is_follower and \
                        p.fetch_offset <= partition.log_end_offset:
                    records = b""  # ahead of the HW but inside the log: nothing visible yet
                else:
                    # KIP-74, as Kafka's readFromLocalLog: each partition reads at most
                    # min(its limit, what the response has left); only until some partition
                    # returned data may one whole batch exceed that, so consumers progress
                    records = partition.log.read(
                        p.fetch_offset, min(p.max_bytes, remaining),
                        max_offset=limit, min_one_batch=total == 0).records
                total += len(records)
                remaining = max(remaining - len(records), 0)
                # read_committed: the aborted transactions in the range (Kafka's
                # addAbortedTransactions), an empty list when nothing was read
                aborted = (aborted_in_range(partition.log, p.fetch_offset, records)
                           if committed else None)
                results[tp] = FetchResult(0, partition.high_watermark, lso,
                                          partition.log_start_offset, records, aborted)
            except Exception as exc:  # noqa: BLE001 - answered per partition
                if not isinstance(exc, KafkaError):
                    log.exception("fetch from %s-%d failed", tp[0], tp[1])
                results[tp] = FetchResult(code_of(exc))
        return results, total

    def _record_follower_positions(self, replica_id: int,
                                   fetch_infos: dict[TopicPartition, PartitionData]) -> None:
        for tp, p in fetch_infos.items():
            partition = self.partitions.get(tp)
            if partition is None or not partition.is_leader:
                continue
            should_expand = partition.update_follower_fetch(replica_id, p.fetch_offset,
                                                            p.log_start_offset)
            self.delete_records_purgatory.check(partition.tp)
            if should_expand:      # at the end, as Kafka's maybeExpandIsr (isr + replica)
                self._change_isr(partition, [*partition.isr, replica_id])
            if partition.maybe_advance_high_watermark():
                self._high_watermark_moved(partition)

    def _high_watermark_moved(self, partition: Partition) -> None:
        self.produce_purgatory.check(partition.tp)
        self.fetch_purgatory.check(partition.tp)

    # --- ISR ------------------------------------------------------------------------------------
    def maybe_shrink_isr(self) -> None:
        for partition in list(self.partitions.values()):
            if not partition.is_leader:
                continue
            lagging = partition.out_of_sync_replicas()
            if lagging:
                log.info("%s-%d: shrinking ISR, %s out of sync for more than %d ms",
                         partition.topic, partition.partition, sorted(lagging),
                         self.replica_lag_time_max_ms)
                self._change_isr(partition, [b for b in partition.isr if b not in lagging])

    def _change_isr(self, partition: Partition, new_isr: list[int]) -> None:
        if self.isr_change_callback is None:
            return
        self.isr_change_callback(partition, new_isr)

    def isr_changed(self, partition: Partition, new_isr: list[int], zk_version: int) -> None:
        """The ISR write to ZooKeeper succeeded: apply it."""
        partition.isr = list(new_isr)
        partition.zk_version = zk_version
        if partition.maybe_advance_high_watermark():
            self._high_watermark_moved(partition)
        else:
            self.produce_purgatory.check(partition.tp)

    # --- offsets --------------------------------------------------------------------------------
    def _per_leader_partition(self, queries: dict, answer: Callable, failed: Callable) -> dict:
        """``{tp: answer(partition, query)}`` for each partition this broker leads at the
        query's current leader epoch; ``failed(code)`` for every other one (or any failure)."""
        results = {}
        for tp, query in queries.items():
            try:
                partition = self.leader_partition(*tp)
                partition.check_leader_epoch(query.current_leader_epoch)
                results[tp] = answer(partition, query)
            except Exception as exc:  # noqa: BLE001 - answered per partition
                results[tp] = failed(code_of(exc))
        return results

    def list_offsets(self, replica_id: int, isolation_level: int,
                     queries: dict[tuple[str, int], OffsetQuery]
                     ) -> dict[tuple[str, int], OffsetResult]:
        """Kafka's fetchOffsetForTimestamp for each ``(topic, partition): OffsetQuery``: a
        consumer (replica id < 0) sees up to the high watermark (read_uncommitted,
        ``isolation_level`` 0) or the last stable offset (read_committed, 1), a replica up to
        the log end."""
        def answer(partition: Partition, query: OffsetQuery) -> OffsetResult:
            if replica_id >= 0:
                visible = partition.log_end_offset
            elif isolation_level == 1:
                visible = partition.last_stable_offset
            else:
                visible = partition.high_watermark
            if query.timestamp == EARLIEST_TIMESTAMP:
                offset, ts = partition.log_start_offset, -1
            elif query.timestamp == LATEST_TIMESTAMP:
                offset, ts = visible, -1
            else:
                found = partition.log.find_offset_by_timestamp(query.timestamp)
                offset, ts = found if found is not None and found[0] < visible else (-1, -1)
            return OffsetResult(0, ts, offset, partition.leader_epoch)
        return self._per_leader_partition(queries, answer, OffsetResult)

    def offsets_for_leader_epoch(self, queries: dict[tuple[str, int], EpochQuery]
                                 ) -> dict[tuple[str, int], EpochEndOffset]:
        """Kafka's lastOffsetForLeaderEpoch for each ``(topic, partition): EpochQuery``."""
        def answer(partition: Partition, query: EpochQuery) -> EpochEndOffset:
            return EpochEndOffset(0, *partition.end_offset_for_epoch(query.leader_epoch))
        return self._per_leader_partition(queries, answer, EpochEndOffset)

    def remove_expired_producers(self) -> None:
        now = self.clock_ms()
        for partition in list(self.partitions.values()):
            partition.producer_states.remove_expired(now, self.producer_id_expiration_ms)

    def high_watermarks(self) -> dict[tuple[str, int], int]:
        return {tp: p.high_watermark for tp, p in self.partitions.items()}
