"""The rebalance machinery under the GroupCoordinator (Kafka 2.8's GroupCoordinator, whose
structure and names this follows): preparing a rebalance, completing the join, handing out the
assignment, and the timers that drive them.

Kafka parks requests and timers in purgatories under a group lock; here everything runs on the
reactor thread, so a timer is a plain ``callLater`` kept on the group or member it belongs to:
- a member's session timer (Kafka's DelayedHeartbeat), rescheduled on every sign of life;
- a pending member's timer (KIP-394: handed a member id, must rejoin within its session timeout);
- the group's join timer (DelayedJoin / InitialDelayedJoin) while PreparingRebalance;
- the group's sync timer (DelayedSync): members that never send SyncGroup are removed.

Parked JoinGroup/SyncGroup answers are not sent in the middle of a state change: ``_send``
queues them and every entry point (API call, timer, store completion) flushes the queue when the
group is consistent again, so a caller reacting synchronously to an answer sees settled state.
"""

from __future__ import annotations

import functools
import logging

from twisted.internet import defer

from kafkalite import errors
from kafkalite.coordinator.group import (
    COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE, GroupMetadata,
)
from kafkalite.coordinator.types import JoinResult, SyncResult

log = logging.getLogger(__name__)

#: Kafka's NewMemberJoinTimeoutMs: a new member's JoinGroup is dropped after this long, so
#: clients that disconnected during a long rebalance do not stay members forever
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000

NONE = 0
_REBALANCE = errors.RebalanceInProgressError.code
_UNKNOWN_MEMBER = errors.UnknownMemberIdError.code
_NOT_AVAILABLE = errors.CoordinatorNotAvailableError.code
_LOADING = errors.CoordinatorLoadInProgressError.code
_FENCED = errors.FencedInstanceIdError.code
_INCONSISTENT = errors.InconsistentGroupProtocolError.code
_ILLEGAL_GENERATION = errors.IllegalGenerationError.code


def entry(method):
    """Mark an API entry point: queued answers are flushed when it returns, and a bug inside
    the call becomes a failed Deferred (the adapters answer UNKNOWN_SERVER_ERROR) instead of an
    exception in the protocol layer."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception:  # noqa: BLE001 - see docstring
            log.exception("group coordinator: %s failed", method.__name__)
            return defer.fail()
        finally:
            self._flush()
    return wrapper


def event(method):
    """Mark a lifecycle entry point (election, resignation, stop): flushes queued answers;
    exceptions reach the caller."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        finally:
            self._flush()
    return wrapper


class _JoinOp:
    """The group's pending join completion. ``initial``: Kafka's InitialDelayedJoin (an Empty
    group waits ``delay_ms`` for more members, extended per new member up to the rebalance
    timeout; never completes early)."""

    __slots__ = ("timer", "initial", "delay_ms", "remaining_ms")

    def __init__(self, initial: bool, delay_ms: int, remaining_ms: int = 0):
        self.timer = None
        self.initial, self.delay_ms, self.remaining_ms = initial, delay_ms, remaining_ms


class Rebalancing:
    """Mixed into GroupCoordinator (through Membership), which provides ``_reactor``,
    ``_groups``, ``_outbox``, the config values, ``_validate``, ``_store_group`` and ``_then``."""

    # --- plumbing ----------------------------------------------------------------------------
    def _send(self, callback, result) -> None:
        self._outbox.append((callback, result))

    def _flush(self) -> None:
        # pop one at a time: an answer's callbacks may re-enter and flush too
        while self._outbox:
            callback, result = self._outbox.pop(0)
            try:
                callback(result)
            except Exception:  # noqa: BLE001 - one caller's failure must not stop the others
                log.exception("group coordinator: answering %r failed", result)

    def _call_later(self, delay_ms: int, fn, *args):
        def fire():
            try:
                fn(*args)
            except Exception:  # noqa: BLE001 - a timer has nobody to report to
                log.exception("group coordinator: timer %s failed", fn.__name__)
            finally:
                self._flush()
        return self._reactor.callLater(max(0, delay_ms) / 1000.0, fire)

    @staticmethod
    def _cancel(timer) -> None:
        if timer is not None and timer.active():
            timer.cancel()

    def _cancel_group_timers(self, group: GroupMetadata) -> None:
        for member in group.members.values():
            self._cancel(member.heartbeat_timer)
            member.heartbeat_timer = None
        if group.join_op is not None:
            self._cancel(group.join_op.timer)
            group.join_op = None
        self._cancel(group.sync_timer)
        group.sync_timer = None
        for timer in group.pending_timers.values():
            self._cancel(timer)
        group.pending_timers.clear()

    # --- rebalance machinery -----------------------------------------------------------------
    def _maybe_prepare_rebalance(self, group, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group, reason: str) -> None:
        if group.is_(COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, _REBALANCE)
        self._remove_sync_expiration(group)
        if group.is_(EMPTY):
            delay = self._initial_delay_ms
            op = _JoinOp(True, delay, max(group.rebalance_timeout_ms - delay, 0))
        else:
            op = _JoinOp(False, group.rebalance_timeout_ms)
        group.transition_to(PREPARING_REBALANCE)
        log.info("group %s preparing to rebalance (generation %d): %s", group.group_id,
                 group.generation_id, reason)
        self._watch_join(group, op)

    def _watch_join(self, group, op: _JoinOp) -> None:
        if group.join_op is not None:
            self._cancel(group.join_op.timer)
            group.join_op = None
        if not op.initial and group.has_all_members_joined():
            self._on_complete_join(group)
            return
        op.timer = self._call_later(op.delay_ms, self._join_expired, group, op)
        group.join_op = op

    def _check_join(self, group) -> None:
        """Kafka's checkAndComplete(GroupJoinKey): finish the join once everyone is in."""
        op = group.join_op
        if op is not None and not op.initial and group.has_all_members_joined():
            self._cancel(op.timer)
            group.join_op = None
            self._on_complete_join(group)

    def _join_expired(self, group, op: _JoinOp) -> None:
        if group.join_op is not op:
            return
        group.join_op = None
        if op.initial and group.new_member_added and op.remaining_ms != 0:
            group.new_member_added = False
            delay = min(self._initial_delay_ms, op.remaining_ms)
            remaining = max(op.remaining_ms - op.delay_ms, 0)
            self._watch_join(group, _JoinOp(True, delay, remaining))
        else:
            self._on_complete_join(group)

    def _on_complete_join(self, group) -> None:
        for member in group.not_yet_rejoined_members():
            if not member.is_static:       # static members keep their place until expiry
                self._drop_member(group, member)
        if group.is_(DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # nobody rejoined: wait again until session expiry removes the silent members
            log.error("group %s could not complete rebalance: no member rejoined",
                      group.group_id)
            self._watch_join(group, _JoinOp(False, group.rebalance_timeout_ms))
            return
        group.init_next_generation()
        if group.is_(EMPTY):
            def stored(error):
                if error:   # the previous generation comes back after a failover, and expires
                    log.warning("group %s: writing empty metadata failed (error %d)",
                                group.group_id, error)
            self._then(self._store_group(group, {}), stored)
            return
        log.info("group %s stabilized generation %d with %d members", group.group_id,
                 group.generation_id, group.size)
        for member in group.members.values():
            result = self._join_result(group, member)
            callback = group.take_join_callback(member)
            if callback is not None:
                self._send(callback, result)
            self._schedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        gen = group.generation_id
        group.sync_timer = self._call_later(group.rebalance_timeout_ms, self._sync_expired,
                                            group, gen)

    def _drop_member(self, group, member) -> None:
        member.is_leaving = True
        self._cancel(member.heartbeat_timer)
        member.heartbeat_timer = None
        group.remove(member.member_id)

    def _remove_sync_expiration(self, group) -> None:
        group.pending_sync_members.clear()
        self._cancel(group.sync_timer)
        group.sync_timer = None

    def _sync_expired(self, group, generation: int) -> None:
        group.sync_timer = None
        if generation != group.generation_id or group.state not in (COMPLETING_REBALANCE,
                                                                     STABLE):
            return
        missing = list(group.pending_sync_members)
        if missing:
            for member_id in missing:
                self._drop_member(group, group.get(member_id))
            self._prepare_rebalance(group, f"members {missing} sent no SyncGroup")

    def _reset_and_propagate_assignment_error(self, group, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group, error: int) -> None:
        ptype, pname = (group.protocol_type, group.protocol_name) if not error else (None, None)
        for member in group.members.values():
            callback = group.take_sync_callback(member)
            if callback is not None:
                self._send(callback, SyncResult(error, ptype, pname, member.assignment))
                # a session may have run out while the member waited for the leader or the
                # store (expiry spares waiting members and schedules nothing): start afresh
                self._schedule_heartbeat(group, member)

    # --- sessions ----------------------------------------------------------------------------
    def _schedule_heartbeat(self, group, member, timeout_ms: int | None = None) -> None:
        self._cancel(member.heartbeat_timer)
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        member.heartbeat_timer = self._call_later(timeout, self._heartbeat_expired, group, member)

    def _heartbeat_expired(self, group, member) -> None:
        member.heartbeat_timer = None
        if group.is_(DEAD) or group.members.get(member.member_id) is not member:
            return
        if member.survives_session_expiry():
            return
        log.info("group %s: member %s session expired", group.group_id, member.member_id)
        self._remove_member_and_update_group(group, member)

    def _pending_member_expired(self, group, member_id: str) -> None:
        group.pending_timers.pop(member_id, None)
        if not group.is_(DEAD):
            self._remove_pending_member_and_update_group(group, member_id)

    def _remove_pending_member_and_update_group(self, group, member_id: str) -> None:
        group.pending_members.discard(member_id)
        self._cancel(group.pending_timers.pop(member_id, None))
        if group.is_(PREPARING_REBALANCE):
            self._check_join(group)

    def _remove_member_and_update_group(self, group, member) -> None:
        callback = group.take_join_callback(member)
        if callback is not None:   # a new member timing out while the group still rebalances
            self._send(callback, JoinResult(_UNKNOWN_MEMBER))
        callback = group.take_sync_callback(member)
        if callback is not None:
            self._send(callback, SyncResult(_UNKNOWN_MEMBER))
        self._drop_member(group, member)
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, f"member {member.member_id} removed")
        elif group.is_(PREPARING_REBALANCE):
            self._check_join(group)
