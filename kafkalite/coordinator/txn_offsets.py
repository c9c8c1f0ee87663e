"""Transactional offset commits in the group coordinator (KIP-98's TxnOffsetCommit, KIP-447's
group fencing), as Kafka 2.8's GroupCoordinator.handleTxnCommitOffsets, GroupMetadataManager's
transactional storeOffsets and handleTxnCompletion, and GroupMetadata's
pendingTransactionalOffsetCommits.

A transactional producer's offsets are written to the group's ``__consumer_offsets`` partition
as one transactional batch (its producer id and epoch), then wait on the group, per producer id,
until the transaction coordinator's marker is written to that partition: COMMIT makes them the
group's offsets, ABORT drops them (``complete_txn_offsets``, called by the WriteTxnMarkers
handler once the marker is replicated). Until then OffsetFetch with ``require_stable`` answers
UNSTABLE_OFFSET_COMMIT for their partitions, so a read_committed consumer does not start from an
offset that may still change.

A plain commit and a transactional one of the same partition are ordered as Kafka orders them:
by where their batches are in the log (the later batch wins), not by when the marker comes. The
group keeps that position per visible offset (``GroupMetadata.offset_positions``).

Kept apart from coordinator.py (which mixes this in) because it is one feature with its own state
on the group; everything runs on the reactor thread, as the rest of the coordinator.
"""

from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalite import errors as E
from kafkalite.coordinator.group import DEAD, EMPTY, GroupMetadata
from kafkalite.coordinator.rebalance import NONE, entry

log = logging.getLogger(__name__)


class TxnOffsetCommits:
    """The transactional half of GroupCoordinator (a mixin: it uses the coordinator's
    ``_validate``, ``_groups``, ``_append``, ``_then``, ``_store``, ``_records_codec``,
    ``_offsets_append_error`` and settings)."""

    @entry
    def commit_txn_offsets(self, transactional_id, group_id, producer_id, producer_epoch,
                           generation_id, member_id, group_instance_id, offsets):
        """Kafka's handleTxnCommitOffsets: fires with ``{(topic, partition): error code}``
        once the batch is written (or refused). Unlike OffsetCommit, a group that does not
        exist is created Empty whatever the generation; the member id and the generation are
        checked only when given (KIP-447: -1 and "" from a producer that does not send the
        consumer's group metadata)."""
        error = self._validate(group_id)
        if error is not None:
            return defer.succeed({tp: error for tp in offsets})
        group = self._get_or_create_group(group_id, create=True)
        member_id = member_id or ""
        if group.is_(DEAD):
            # the group just moved away: the producer looks the coordinator up again
            code = E.CoordinatorNotAvailableError.code
        elif group.is_static_member_fenced(member_id, group_instance_id):
            code = E.FencedInstanceIdError.code
        elif member_id and not group.has(member_id):
            code = E.UnknownMemberIdError.code
        elif generation_id >= 0 and generation_id != group.generation_id:
            code = E.IllegalGenerationError.code
        else:
            log.debug("TxnOffsetCommit of %s (producer %d, epoch %d) for group %s: %s",
                      transactional_id, producer_id, producer_epoch, group_id, offsets)
            return self._store_txn_offsets(group, producer_id, producer_epoch, offsets)
        return defer.succeed({tp: code for tp in offsets})

    def _store_txn_offsets(self, group: GroupMetadata, producer_id: int, producer_epoch: int,
                           offsets: dict) -> defer.Deferred:
        """Kafka's storeOffsets with a producer id: one transactional batch; the offsets wait
        on the group as pending until their transaction's marker."""
        now = self._clock_ms()
        too_large = E.OffsetMetadataTooLargeError.code
        # KafkaApis.convertTxnOffsets: the commit time is now, no explicit expiry
        valid = {tp: oam._replace(metadata=oam.metadata or "", commit_timestamp=now,
                                  expire_timestamp=-1)
                 for tp, oam in offsets.items() if len(oam.metadata or "") <= self._metadata_max}
        if not valid:
            return defer.succeed({tp: too_large for tp in offsets})
        codec = self._records_codec()
        records = [(codec.offset_key(group.group_id, t, p), codec.offset_value(oam))
                   for (t, p), oam in valid.items()]
        pending = group.pending_txn_offsets.setdefault(producer_id, {})
        for tp, oam in valid.items():
            pending[tp] = [None, oam]     # the position is known once the batch is written

        def written(code):
            if not group.is_(DEAD):
                if code == NONE:
                    _on_append(group, producer_id, valid, getattr(code, "base_offset", None))
                else:
                    _fail(group, producer_id, valid)
            mapped = self._offsets_append_error(code)
            return {tp: (mapped if tp in valid else too_large) for tp in offsets}
        d = self._append(self._store.partition_for(group.group_id), records,
                         producer_id=producer_id, producer_epoch=producer_epoch,
                         transactional=True)
        return self._then(d, written)

    @entry
    def complete_txn_offsets(self, producer_id: int, offsets_partitions, commit: bool) -> None:
        """The transaction of ``producer_id`` ended with a marker written to these
        ``__consumer_offsets`` partitions (Kafka's handleTxnCompletion): its pending offsets in
        the groups of those partitions become visible (COMMIT) or vanish (ABORT). A group that
        moved away meanwhile is the new coordinator's business: it reads the marker."""
        partitions = set(offsets_partitions)
        for group in list(self._groups.values()):
            if (producer_id in group.pending_txn_offsets and not group.is_(DEAD)
                    and self._store.partition_for(group.group_id) in partitions):
                _complete(group, producer_id, commit)


def _on_append(group: GroupMetadata, producer_id: int, offsets: dict,
               position: int | None) -> None:
    """Kafka's onTxnOffsetCommitAppend: the written entries learn their log position (unless
    a later TxnOffsetCommit of the same transaction replaced them meanwhile)."""
    pending = group.pending_txn_offsets.get(producer_id)
    if pending is None:
        return      # the partitions were deleted, or the transaction ended, meanwhile
    for tp, oam in offsets.items():
        entry_ = pending.get(tp)
        if entry_ is not None and entry_[1] == oam:
            entry_[0] = position


def _fail(group: GroupMetadata, producer_id: int, offsets: dict) -> None:
    """Kafka's failPendingTxnOffsetCommit: the batch was not written; the producer retries."""
    pending = group.pending_txn_offsets.get(producer_id)
    if pending is None:
        return
    for tp in offsets:
        pending.pop(tp, None)
    if not pending:
        del group.pending_txn_offsets[producer_id]


def _complete(group: GroupMetadata, producer_id: int, commit: bool) -> None:
    """Kafka's completePendingTxnOffsetCommit: on COMMIT each offset lands unless the group's
    current offset of its partition was written later in the log."""
    pending = group.pending_txn_offsets.pop(producer_id, None)
    if not commit or not pending:
        log.debug("group %s: the offsets of producer %d aborted", group.group_id, producer_id)
        return
    for tp, (position, oam) in pending.items():
        if position is None:
            # Kafka raises here: a marker cannot precede the batch it ends
            log.error("group %s: producer %d committed before its offset of %s was written",
                      group.group_id, producer_id, tp)
            continue
        if group.offset_positions.get(tp, -1) < position:
            group.offsets[tp] = oam
            group.offset_positions[tp] = position


def has_pending_commit(group: GroupMetadata, tp) -> bool:
    """Kafka's hasPendingOffsetCommitsForTopicPartition: a plain commit being written or a
    transactional one awaiting its marker (OffsetFetch's UNSTABLE_OFFSET_COMMIT)."""
    return (bool(group.pending_offset_commits.get(tp))
            or any(tp in pending for pending in group.pending_txn_offsets.values()))


def attach_loaded(groups: list[GroupMetadata], loaded: tuple, clock_ms) -> None:
    """Give the groups read from a partition their offsets' log positions and the
    transactional offsets whose marker is not in the log yet (its COMMIT or ABORT comes later
    through ``complete_txn_offsets``); a group with nothing else is created Empty, as Kafka's
    loader does. ``loaded``: the extra items of the store's load result, ``(positions,
    pending)``: ``{(group, topic, partition): position}`` and ``{producer id: {(group, topic,
    partition): (position, OffsetAndMetadata)}}`` (absent from stores that keep neither)."""
    positions_in = loaded[0] if len(loaded) > 0 else {}
    pending_in = loaded[1] if len(loaded) > 1 else {}
    positions: dict[str, dict] = {}
    for (group_id, topic, partition), position in positions_in.items():
        positions.setdefault(group_id, {})[(topic, partition)] = position
    pending: dict[str, dict] = {}
    for producer_id, entries in pending_in.items():
        for (group_id, topic, partition), (position, oam) in entries.items():
            if oam is not None:
                pending.setdefault(group_id, {}).setdefault(producer_id, {})[
                    (topic, partition)] = [position, oam]
    known = {group.group_id for group in groups}
    groups.extend(GroupMetadata(group_id, EMPTY, clock_ms) for group_id in pending
                  if group_id not in known)
    for group in groups:
        group.offset_positions = {tp: p for tp, p in positions.get(group.group_id, {}).items()
                                  if tp in group.offsets}
        group.pending_txn_offsets = pending.get(group.group_id, {})
