"""The broker-side group coordinator (Kafka 0.9-2.x; docs/architecture.md, 9. Consumer groups),
modelled on Kafka 2.8's GroupCoordinator and GroupMetadataManager.

This broker coordinates the groups whose ``__consumer_offsets`` partition it leads. The
coordinator is pure of I/O: time and timers come from the injected reactor, and the partition's
records go through the injected store (``partition_for``, ``append``, ``load``; log_store.py is
the real one). Membership (join/sync/heartbeat/leave) lives in membership.py; this module holds
the lifecycle, partition ownership and loading, offsets, and the admin APIs.

Everything runs on the reactor thread (docs/architecture.md, 5. Threads and the reactor), so
there are no locks: Kafka's group lock becomes "one callback at a time".
"""

from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalite import errors
from kafkalite.coordinator.group import (
    COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE, GroupMetadata,
)
from kafkalite.coordinator.membership import Membership
from kafkalite.coordinator.rebalance import NONE, entry, event
from kafkalite.coordinator.txn_offsets import TxnOffsetCommits, attach_loaded, has_pending_commit
from kafkalite.coordinator.types import (
    DescribedGroup, FetchedOffset, JoinResult, OffsetAndMetadata, SyncResult,
)

log = logging.getLogger(__name__)

#: a failed load of a partition is retried after this long (the partition keeps answering
#: COORDINATOR_LOAD_IN_PROGRESS meanwhile, which clients retry)
LOAD_RETRY_MS = 1000

_DEFAULTS = {
    "offsets_topic_num_partitions": 50,
    "group_initial_rebalance_delay_ms": 3000,
    "group_min_session_timeout_ms": 6000,
    "group_max_session_timeout_ms": 1800000,
    "group_max_size": 2147483647,
    "offsets_retention_minutes": 10080,
    "offsets_retention_check_interval_ms": 600000,
    "offsets_commit_timeout_ms": 5000,
    "offset_metadata_max_bytes": 4096,
}

E = errors
# how a failed __consumer_offsets append is reported (Kafka's storeGroup/storeOffsets mappings)
_COMMON_APPEND_ERRORS = {
    E.UnknownTopicOrPartitionError.code: E.CoordinatorNotAvailableError.code,
    E.NotEnoughReplicasError.code: E.CoordinatorNotAvailableError.code,
    E.NotEnoughReplicasAfterAppendError.code: E.CoordinatorNotAvailableError.code,
    E.NotLeaderForPartitionError.code: E.NotCoordinatorError.code,
    E.KafkaStorageError.code: E.NotCoordinatorError.code,
}
_TOO_LARGE = (E.MessageTooLargeError.code, E.RecordListTooLargeError.code,
              E.InvalidFetchSizeError.code)


def _map_append_error(code: int, kind: str) -> int:
    if not code:
        return NONE
    if code in _COMMON_APPEND_ERRORS:
        return _COMMON_APPEND_ERRORS[code]
    if code == E.RequestTimedOutError.code and kind == "group":
        return E.RebalanceInProgressError.code      # the members rejoin
    if code in _TOO_LARGE:
        return E.InvalidCommitOffsetSizeError.code if kind == "offsets" \
            else E.UnknownServerError.code
    return code


def _codec():
    """The ``__consumer_offsets`` key/value encoders (imported late: records.py is written
    alongside this module; tests replace this hook)."""
    from kafkalite.coordinator import records
    return records


class GroupCoordinator(Membership, TxnOffsetCommits):
    def __init__(self, broker_id: int, reactor, store, config, clock_ms=None):
        self.broker_id = broker_id
        self._reactor = reactor
        self._store = store
        self._clock_ms = clock_ms or (lambda: int(reactor.seconds() * 1000))

        def cfg(name):
            value = getattr(config, name, None) if config is not None else None
            return _DEFAULTS[name] if value is None else value
        self._initial_delay_ms = int(cfg("group_initial_rebalance_delay_ms"))
        self._min_session_ms = int(cfg("group_min_session_timeout_ms"))
        self._max_session_ms = int(cfg("group_max_session_timeout_ms"))
        self._max_size = int(cfg("group_max_size"))
        self._retention_ms = int(cfg("offsets_retention_minutes")) * 60 * 1000
        self._retention_check_ms = int(cfg("offsets_retention_check_interval_ms"))
        self._commit_timeout_ms = int(cfg("offsets_commit_timeout_ms"))
        self._metadata_max = int(cfg("offset_metadata_max_bytes"))

        self._groups: dict[str, GroupMetadata] = {}
        self._owned: set[int] = set()
        self._loading: dict[int, object] = {}     # partition -> token of the current load
        self._epochs: dict[int, int] = {}
        self._load_retries: dict[int, object] = {}   # partition -> retry timer
        self._outbox: list = []
        self._active = True
        self._expiry_timer = None

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._active = True
        if self._expiry_timer is None or not self._expiry_timer.active():
            self._expiry_timer = self._call_later(self._retention_check_ms, self._expiry_loop)

    @event
    def stop(self) -> None:
        self._active = False
        self._cancel(self._expiry_timer)
        self._expiry_timer = None
        for group in list(self._groups.values()):
            self._unload_group(group)
        self._groups.clear()
        self._owned.clear()
        self._loading.clear()
        for timer in self._load_retries.values():
            self._cancel(timer)
        self._load_retries.clear()

    def owned_partitions(self) -> set[int]:
        return set(self._owned)

    def loading_partitions(self) -> set[int]:
        return set(self._loading)

    def _update_epoch(self, partition: int, epoch: int | None) -> bool:
        """Kafka's maybeUpdateCoordinatorEpoch: act only on news at least as new as known."""
        if epoch is None:
            return True
        current = self._epochs.get(partition)
        if current is None or epoch > current:
            self._epochs[partition] = epoch
            return True
        return epoch == current

    @event
    def on_elected(self, partition: int, leader_epoch: int) -> None:
        if not self._active or not self._update_epoch(partition, leader_epoch):
            return
        if partition in self._owned or partition in self._loading:
            return
        token = object()
        self._loading[partition] = token
        self._load(partition, token)

    def _load(self, partition: int, token: object) -> None:
        try:
            d = self._store.load(partition)
        except Exception:  # noqa: BLE001 - handled like a failed Deferred
            d = defer.fail()
        self._then(d, self._loaded, partition, token, on_failure=self._load_failed)

    def _load_failed(self, failure, partition: int, token: object) -> None:
        if self._loading.get(partition) is not token or not self._active:
            return
        log.error("loading __consumer_offsets-%d failed, retrying: %s", partition,
                  failure.getErrorMessage())
        self._load_retries[partition] = self._call_later(LOAD_RETRY_MS, self._retry_load,
                                                         partition, token)

    def _retry_load(self, partition: int, token: object) -> None:
        self._load_retries.pop(partition, None)
        if self._loading.get(partition) is token and self._active:
            self._load(partition, token)

    def _loaded(self, result, partition: int, token: object) -> None:
        if self._loading.get(partition) is not token or not self._active:
            return      # resigned (or re-elected) while loading: this result is stale
        snapshots, offsets, *txn_state = result   # txn_state: see txn_offsets.attach_loaded
        by_group: dict[str, dict] = {}
        for (group_id, topic, p), oam in offsets.items():
            if oam is not None:
                by_group.setdefault(group_id, {})[(topic, p)] = oam
        loaded = []
        for group_id, snap in snapshots.items():
            if snap is not None:
                group = GroupMetadata.from_snapshot(group_id, snap, self._clock_ms)
                group.offsets = by_group.pop(group_id, {})
                loaded.append(group)
        for group_id, group_offsets in by_group.items():
            # groups that only store offsets (no metadata written): Empty, generation 0
            group = GroupMetadata(group_id, EMPTY, self._clock_ms)
            group.offsets = group_offsets
            loaded.append(group)
        attach_loaded(loaded, txn_state, self._clock_ms)
        del self._loading[partition]
        self._owned.add(partition)
        for group in loaded:
            if self._store.partition_for(group.group_id) != partition:
                log.warning("group %s found in __consumer_offsets-%d but belongs to %d",
                            group.group_id, partition, self._store.partition_for(group.group_id))
                continue
            if group.group_id in self._groups:
                continue
            self._groups[group.group_id] = group
            if group.size > self._max_size:
                # a lowered group.max.size: rebalance so the excess members are refused
                self._prepare_rebalance(group, "loaded group is over group.max.size")
            for member in group.members.values():
                self._schedule_heartbeat(group, member)
        log.info("loaded __consumer_offsets-%d: %d groups", partition, len(loaded))

    @event
    def on_resigned(self, partition: int, leader_epoch: int) -> None:
        if not self._update_epoch(partition, leader_epoch):
            return
        self._owned.discard(partition)
        self._loading.pop(partition, None)
        self._cancel(self._load_retries.pop(partition, None))
        for group_id, group in list(self._groups.items()):
            if self._store.partition_for(group_id) == partition:
                self._unload_group(group)
                del self._groups[group_id]

    def _unload_group(self, group: GroupMetadata) -> None:
        """Kafka's onGroupUnloaded: parked answers become NOT_COORDINATOR (the members find the
        new coordinator), and every timer of the group stops."""
        not_coordinator = E.NotCoordinatorError.code
        group.transition_to(DEAD)
        for member in group.members.values():
            callback = group.take_join_callback(member)
            if callback is not None:
                self._send(callback, JoinResult(not_coordinator, member_id=member.member_id))
            callback = group.take_sync_callback(member)
            if callback is not None:
                self._send(callback, SyncResult(not_coordinator))
        self._cancel_group_timers(group)

    # --- plumbing ----------------------------------------------------------------------------
    def _validate(self, group_id, allow_empty: bool = False) -> int | None:
        """Kafka's validateGroupStatus. OffsetCommit/Fetch, DescribeGroups and DeleteGroups
        accept the empty group id for backwards compatibility; the rest need a real one."""
        if group_id is None or (group_id == "" and not allow_empty):
            return E.InvalidGroupIdError.code
        if not self._active:
            return E.CoordinatorNotAvailableError.code
        partition = self._store.partition_for(group_id)
        if partition in self._loading:
            return E.CoordinatorLoadInProgressError.code
        if partition not in self._owned:
            return E.NotCoordinatorError.code
        return None

    def _get_or_create_group(self, group_id: str, create: bool) -> GroupMetadata | None:
        group = self._groups.get(group_id)
        if group is None and create:
            group = self._groups[group_id] = GroupMetadata(group_id, EMPTY, self._clock_ms)
        return group

    # for the mixed-in txn_offsets, which cannot import this module
    @staticmethod
    def _records_codec():
        return _codec()

    @staticmethod
    def _offsets_append_error(code: int) -> int:
        return _map_append_error(code, "offsets")

    def _then(self, d: defer.Deferred, fn, *args, on_failure=None) -> defer.Deferred:
        """Continue ``d`` with ``fn(result, *args)`` as an entry point (queued answers are
        flushed after it)."""
        def run(result, handler):
            try:
                return handler(result, *args)
            finally:
                self._flush()
        if on_failure is None:
            return d.addCallback(run, fn)
        return d.addCallbacks(run, run, callbackArgs=(fn,), errbackArgs=(on_failure,))

    def _append(self, partition: int, records: list, **txn) -> defer.Deferred:
        """store.append as a Deferred that always fires with an error code, at the latest after
        offsets.commit.timeout.ms (REQUEST_TIMED_OUT), so a wedged write cannot hold a
        rebalance or a commit forever. The store's code may carry the batch's ``base_offset``
        (kept: it orders commits); ``txn``: a transactional batch's producer id and epoch."""
        out = defer.Deferred()

        def finish(code):
            if not out.called:
                self._cancel(timer)
                out.callback(code)

        def failed(failure):
            log.error("__consumer_offsets-%d append failed: %s", partition,
                      failure.getErrorMessage())
            finish(E.UnknownServerError.code)
        timer = self._reactor.callLater(self._commit_timeout_ms / 1000.0, finish,
                                        E.RequestTimedOutError.code)
        try:
            d = self._store.append(partition, records, **txn)
        except Exception:  # noqa: BLE001 - reported as a failed write
            d = defer.fail()
        d.addCallbacks(lambda code: finish(0 if code is None else code), failed)
        return out

    def _store_group(self, group: GroupMetadata, assignment: dict[str, bytes]) -> defer.Deferred:
        """Write the group's metadata; fires with the (mapped) error code."""
        codec = _codec()
        record = (codec.group_key(group.group_id), codec.group_value(group.snapshot(assignment)))
        d = self._append(self._store.partition_for(group.group_id), [record])
        return d.addCallback(_map_append_error, "group")

    def _forget(self, group: GroupMetadata) -> None:
        self._cancel_group_timers(group)
        if self._groups.get(group.group_id) is group:
            del self._groups[group.group_id]

    def _cleanup_group(self, group: GroupMetadata, selector) -> defer.Deferred:
        """Kafka's cleanupGroupMetadata for one group: drop the offsets ``selector`` picks; an
        Empty group left without offsets becomes Dead. Tombstones go to the log; a Dead group
        leaves the cache once its tombstone is written. Fires with the write's error code."""
        removed = selector(group)
        if group.is_(EMPTY) and not group.has_offsets():
            log.info("group %s is dead (generation %d)", group.group_id, group.generation_id)
            group.transition_to(DEAD)
        dead = group.is_(DEAD)
        codec = _codec()
        tombstones = [(codec.offset_key(group.group_id, t, p), None) for t, p in removed]
        if dead and group.generation_id > 0:   # generation 0 never wrote metadata
            tombstones.append((codec.group_key(group.group_id), None))
        if not tombstones:
            if dead:
                self._forget(group)
            return defer.succeed(NONE)

        def written(code):
            if dead:
                self._forget(group)
            if code:
                log.warning("group %s: writing %d tombstones failed (error %d)",
                            group.group_id, len(tombstones), code)
            return _map_append_error(code, "delete")
        d = self._append(self._store.partition_for(group.group_id), tombstones)
        return self._then(d, written)

    # --- offsets -----------------------------------------------------------------------------
    @entry
    def commit_offsets(self, group_id, generation_id, member_id, group_instance_id,
                       retention_time_ms, offsets):
        error = self._validate(group_id, allow_empty=True)
        if error is not None:
            return defer.succeed({tp: error for tp in offsets})
        member_id = member_id or ""
        now = self._clock_ms()
        prepared = {}
        for tp, oam in offsets.items():
            # KafkaApis: the commit time is now unless the (v1) request said; a retention time
            # (v2-v4) becomes an explicit expire timestamp
            expire = oam.expire_timestamp
            if retention_time_ms is not None and retention_time_ms != -1:
                expire = now + retention_time_ms
            prepared[tp] = oam._replace(
                metadata=oam.metadata or "",
                commit_timestamp=now if oam.commit_timestamp < 0 else oam.commit_timestamp,
                expire_timestamp=expire)
        group = self._groups.get(group_id)
        if group is None:
            if generation_id >= 0:    # a group from an older generation, now gone
                return defer.succeed({tp: E.IllegalGenerationError.code for tp in offsets})
            # a group that only stores offsets (no group management)
            group = self._get_or_create_group(group_id, create=True)

        def refuse(code):
            return defer.succeed({tp: code for tp in offsets})
        if group.is_(DEAD):
            return refuse(E.CoordinatorNotAvailableError.code)
        if group.is_static_member_fenced(member_id, group_instance_id):
            return refuse(E.FencedInstanceIdError.code)
        if generation_id < 0 and group.is_(EMPTY):
            return self._store_offsets(group, prepared)
        if not group.has(member_id):
            return refuse(E.UnknownMemberIdError.code)
        if generation_id != group.generation_id:
            return refuse(E.IllegalGenerationError.code)
        if group.is_(COMPLETING_REBALANCE):
            # the member has the new generation but not its assignment yet
            return refuse(E.RebalanceInProgressError.code)
        # Stable, or PreparingRebalance: still allowed, the heartbeat tells of the rebalance
        self._schedule_heartbeat(group, group.get(member_id))
        return self._store_offsets(group, prepared)

    def _store_offsets(self, group: GroupMetadata, offsets: dict) -> defer.Deferred:
        too_large = E.OffsetMetadataTooLargeError.code
        valid = {tp: oam for tp, oam in offsets.items()
                 if len(oam.metadata or "") <= self._metadata_max}
        if not valid:
            return defer.succeed({tp: too_large for tp in offsets})
        codec = _codec()
        records = [(codec.offset_key(group.group_id, t, p), codec.offset_value(oam))
                   for (t, p), oam in valid.items()]
        token = group.prepare_offset_commit(valid)

        def written(code):
            if not group.is_(DEAD):
                # visible to OffsetFetch only now that the write is replicated
                group.complete_offset_commit(token, valid, code == NONE,
                                             getattr(code, "base_offset", None))
            mapped = _map_append_error(code, "offsets")
            return {tp: (mapped if tp in valid else too_large) for tp in offsets}
        d = self._append(self._store.partition_for(group.group_id), records)
        return self._then(d, written)

    @entry
    def fetch_offsets(self, group_id, partitions, require_stable=False):
        """``require_stable`` (OffsetFetch v7, KIP-447): a partition with a commit not yet
        final answers UNSTABLE_OFFSET_COMMIT instead of its offset."""
        error = self._validate(group_id, allow_empty=True)
        if error is not None:
            return defer.succeed((error, {}))
        nothing = FetchedOffset(-1, -1, "", NONE)
        group = self._groups.get(group_id)
        if group is None or group.is_(DEAD):
            return defer.succeed((NONE, {tp: nothing for tp in partitions or ()}))
        wanted = list(group.offsets) if partitions is None else partitions
        result = {}
        for tp in wanted:
            tp = (tp[0], tp[1])
            if require_stable and has_pending_commit(group, tp):
                result[tp] = FetchedOffset(-1, -1, "", E.UnstableOffsetCommitError.code)
                continue
            oam: OffsetAndMetadata | None = group.offsets.get(tp)
            result[tp] = nothing if oam is None else FetchedOffset(
                oam.offset, oam.leader_epoch, oam.metadata, NONE)
        return defer.succeed((NONE, result))

    # --- admin -------------------------------------------------------------------------------
    @entry
    def describe_groups(self, group_ids):
        out = []
        for group_id in group_ids:
            error = self._validate(group_id, allow_empty=True)
            group = self._groups.get(group_id) if error is None else None
            if error is not None:
                out.append(DescribedGroup(error, group_id, "", "", ""))
            elif group is None:
                out.append(DescribedGroup(NONE, group_id, DEAD.value, "", ""))
            else:
                out.append(group.describe())
        return defer.succeed(out)

    @entry
    def list_groups(self, states=None):
        if not self._active:
            return defer.succeed((E.CoordinatorNotAvailableError.code, []))
        code = E.CoordinatorLoadInProgressError.code if self._loading else NONE
        wanted = {s.lower() for s in states} if states else None
        groups = [g.overview() for g in self._groups.values()
                  if wanted is None or g.state.value.lower() in wanted]
        return defer.succeed((code, groups))

    @entry
    def delete_groups(self, group_ids):
        results: dict[str, int] = {}
        pending = []
        for group_id in dict.fromkeys(group_ids):
            error = self._validate(group_id, allow_empty=True)
            group = self._groups.get(group_id) if error is None else None
            if error is not None:
                results[group_id] = error
            elif group is None or group.is_(DEAD):
                results[group_id] = E.GroupIdNotFoundError.code
            elif group.is_(EMPTY):
                group.transition_to(DEAD)
                results[group_id] = NONE     # placeholder, keeps the request's order
                pending.append((group_id, self._cleanup_group(
                    group, lambda g: g.remove_all_offsets())))
            else:
                results[group_id] = E.NonEmptyGroupError.code

        def done(codes):
            for (group_id, _), code in zip(pending, codes):
                results[group_id] = code
            return results
        return defer.gatherResults([d for _, d in pending]).addCallback(done)

    @entry
    def delete_offsets(self, group_id, partitions):
        error = self._validate(group_id)
        if error is not None:
            return defer.succeed((error, {}))
        group = self._groups.get(group_id)
        if group is None or group.is_(DEAD):
            return defer.succeed((E.GroupIdNotFoundError.code, {}))
        partitions = [(t, p) for t, p in partitions]
        codes: dict[tuple[str, int], int] = {}
        if group.is_(EMPTY):
            eligible = partitions
        elif group.is_consumer_group and group.state in (PREPARING_REBALANCE,
                                                         COMPLETING_REBALANCE, STABLE):
            eligible = [tp for tp in partitions if not group.is_subscribed_to_topic(tp[0])]
            for tp in partitions:
                if group.is_subscribed_to_topic(tp[0]):
                    codes[tp] = E.GroupSubscribedToTopicError.code
        else:
            return defer.succeed((E.NonEmptyGroupError.code, {}))
        if not eligible:
            return defer.succeed((NONE, codes))

        def written(code):
            codes.update({tp: code for tp in eligible})
            return (NONE, codes)
        d = self._cleanup_group(group, lambda g: g.remove_offsets(eligible))
        return d.addCallback(written)

    # --- offsets expiry ----------------------------------------------------------------------
    def _expiry_loop(self) -> None:
        self._expiry_timer = None
        if not self._active:
            return
        try:
            self.expire_offsets()
        finally:
            self._expiry_timer = self._call_later(self._retention_check_ms, self._expiry_loop)

    def expire_offsets(self) -> int:
        """One pass of Kafka's offsets cleanup (also run every
        offsets.retention.check.interval.ms): drop expired offsets of every loaded group,
        writing tombstones; groups left Empty without offsets die. Returns how many offsets
        were dropped."""
        now = self._clock_ms()
        count = 0
        for group in list(self._groups.values()):
            if group.is_(DEAD):
                continue

            def select(g):
                removed = g.remove_expired_offsets(now, self._retention_ms)
                nonlocal count
                count += len(removed)
                return removed
            self._cleanup_group(group, select)
        if count:
            log.info("expired %d offsets", count)
        return count
