"""The membership APIs of the GroupCoordinator: JoinGroup, SyncGroup, Heartbeat and LeaveGroup,
as Kafka 2.8's GroupCoordinator answers them (same checks, same order, same error codes). The
rebalance they drive is in rebalance.py.
"""

from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalite import errors
from kafkalite.coordinator.group import (
    COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE, GroupMetadata, MemberMetadata,
)
from kafkalite.coordinator.rebalance import (
    _FENCED, _ILLEGAL_GENERATION, _INCONSISTENT, _LOADING, _NOT_AVAILABLE, _REBALANCE,
    _UNKNOWN_MEMBER, NEW_MEMBER_JOIN_TIMEOUT_MS, NONE, Rebalancing, entry,
)
from kafkalite.coordinator.types import JoinResult, LeaveMemberResult, SyncResult

log = logging.getLogger(__name__)


class Membership(Rebalancing):
    """Mixed into GroupCoordinator."""

    # --- JoinGroup ---------------------------------------------------------------------------
    @entry
    def join_group(self, group_id, member_id, group_instance_id, client_id, client_host,
                   rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                   require_known_member_id):
        d = defer.Deferred()
        answer = d.callback
        member_id = member_id or ""
        error = self._validate(group_id)
        if error is not None:
            self._send(answer, JoinResult(error, member_id=member_id))
            return d
        if not self._min_session_ms <= session_timeout_ms <= self._max_session_ms:
            self._send(answer, JoinResult(errors.InvalidSessionTimeoutError.code,
                                          member_id=member_id))
            return d
        protocols = [(name, bytes(meta or b"")) for name, meta in protocols]
        # KIP-394 applies to dynamic members only (KafkaApis: version >= 4 && no instance id)
        require_known = require_known_member_id and group_instance_id is None
        is_unknown = member_id == ""
        group = self._get_or_create_group(group_id, create=is_unknown)
        args = (group_instance_id, client_id, client_host, rebalance_timeout_ms,
                session_timeout_ms, protocol_type or "", protocols, answer)
        if group is None:
            self._send(answer, JoinResult(_UNKNOWN_MEMBER, member_id=member_id))
        elif not self._accept_joining_member(group, member_id):
            removed = group.remove(member_id)
            if removed is not None:
                self._cancel(removed.heartbeat_timer)
            self._send(answer, JoinResult(errors.GroupMaxSizeReachedError.code))
        elif is_unknown:
            self._do_unknown_join(group, require_known, *args)
        else:
            self._do_join(group, member_id, *args)
        if group is not None and group.is_(PREPARING_REBALANCE):
            self._check_join(group)
        return d

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        if group.state in (EMPTY, DEAD):
            return True
        if group.is_(PREPARING_REBALANCE):
            # awaiting members, not the group size: the size may already exceed a lowered
            # limit, and counting joiners lets the last rejoining members be the ones refused
            return ((group.has(member_id) and group.get(member_id).is_awaiting_join)
                    or group.num_awaiting_join < self._max_size)
        return group.has(member_id) or group.size < self._max_size

    def _do_unknown_join(self, group, require_known, group_instance_id, client_id, client_host,
                         rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                         answer):
        if group.is_(DEAD):
            # removed meanwhile (moved away or being deleted): rediscover the coordinator
            self._send(answer, JoinResult(_NOT_AVAILABLE))
        elif not group.supports_protocols(protocol_type, [n for n, _ in protocols]):
            self._send(answer, JoinResult(_INCONSISTENT))
        else:
            new_id = group.generate_member_id(client_id, group_instance_id)
            if group.has_static_member(group_instance_id):
                self._update_static_member_and_rebalance(group, new_id, group_instance_id,
                                                         protocols, answer)
            elif require_known:
                group.pending_members.add(new_id)
                group.pending_timers[new_id] = self._call_later(
                    session_timeout_ms, self._pending_member_expired, group, new_id)
                self._send(answer, JoinResult(errors.MemberIdRequiredError.code,
                                              member_id=new_id))
            else:
                self._add_member_and_rebalance(group, new_id, group_instance_id, client_id,
                                               client_host, rebalance_timeout_ms,
                                               session_timeout_ms, protocol_type, protocols,
                                               answer)

    def _do_join(self, group, member_id, group_instance_id, client_id, client_host,
                 rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols, answer):
        if group.is_(DEAD):
            self._send(answer, JoinResult(_NOT_AVAILABLE, member_id=member_id))
        elif not group.supports_protocols(protocol_type, [n for n, _ in protocols]):
            self._send(answer, JoinResult(_INCONSISTENT, member_id=member_id))
        elif group.is_pending_member(member_id):
            if group_instance_id is not None:
                # pending ids are only handed to dynamic members (Kafka: IllegalStateException)
                self._send(answer, JoinResult(errors.UnknownServerError.code,
                                              member_id=member_id))
            else:
                self._add_member_and_rebalance(group, member_id, None, client_id, client_host,
                                               rebalance_timeout_ms, session_timeout_ms,
                                               protocol_type, protocols, answer)
        elif group.is_static_member_fenced(member_id, group_instance_id):
            self._send(answer, JoinResult(_FENCED, member_id=member_id))
        elif not group.has(member_id) or (group_instance_id is not None
                                          and not group.has_static_member(group_instance_id)):
            self._send(answer, JoinResult(_UNKNOWN_MEMBER, member_id=member_id))
        else:
            member = group.get(member_id)
            if group.is_(PREPARING_REBALANCE):
                self._update_member_and_rebalance(group, member, protocols, answer)
            elif group.is_(COMPLETING_REBALANCE):
                if member.matches(protocols):
                    # a lost JoinGroup response: answer this generation again
                    self._send(answer, self._join_result(group, member))
                else:
                    self._update_member_and_rebalance(group, member, protocols, answer)
            elif group.is_(STABLE):
                if group.is_leader(member_id) or not member.matches(protocols):
                    # a leader's rejoin forces a rebalance: that is how it reacts to changes
                    # outside member metadata (e.g. a topic's new partitions)
                    self._update_member_and_rebalance(group, member, protocols, answer)
                else:
                    self._send(answer, self._join_result(group, member, with_members=False))
            else:
                self._send(answer, JoinResult(_UNKNOWN_MEMBER, member_id=member_id))

    def _join_result(self, group, member, with_members: bool = True) -> JoinResult:
        members = (group.current_member_metadata()
                   if with_members and group.is_leader(member.member_id) else ())
        return JoinResult(NONE, generation_id=group.generation_id,
                          protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                          leader=group.leader_id or "", member_id=member.member_id,
                          members=members)

    def _add_member_and_rebalance(self, group, member_id, group_instance_id, client_id,
                                  client_host, rebalance_timeout_ms, session_timeout_ms,
                                  protocol_type, protocols, answer):
        member = MemberMetadata(member_id, group_instance_id, client_id, client_host,
                                rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                protocols)
        member.is_new = True
        if group.is_(PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True       # lets the initial delay extend once more
        group.add(member, answer)
        self._schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        if member.is_static:
            group.static_members[group_instance_id] = member_id
        else:
            group.pending_members.discard(member_id)
            self._cancel(group.pending_timers.pop(member_id, None))
        self._maybe_prepare_rebalance(group, f"adding member {member_id}")

    def _update_member_and_rebalance(self, group, member, protocols, answer):
        superseded = member.awaiting_join
        if superseded is not None:
            # Kafka silently drops a resent JoinGroup's first callback; answer it instead so
            # the abandoned request does not hang
            self._send(superseded, JoinResult(_REBALANCE, member_id=member.member_id))
        group.update_member(member, protocols, answer)
        self._maybe_prepare_rebalance(group, f"member {member.member_id} rejoining")

    def _update_static_member_and_rebalance(self, group, new_id, instance_id, protocols,
                                            answer):
        """KIP-345: a known group.instance.id back with no member id takes over the old
        member's place (and assignment); the old id is fenced. A Stable group keeps its
        generation when the selected protocol would not change."""
        old_id = group.static_member_id(instance_id)
        current_leader = group.leader_id or ""
        member, fenced = group.replace_group_instance(old_id, new_id, instance_id)
        for callback, result in fenced:
            self._send(callback, result)
        self._schedule_heartbeat(group, member)
        old_protocols = member.supported_protocols
        group.update_member(member, protocols, answer)
        if group.is_(STABLE):
            if group.select_protocol() != group.protocol_name:
                self._maybe_prepare_rebalance(group, f"static member {instance_id} changed "
                                                     "the selected protocol")
                return
            assignment = {m.member_id: m.assignment for m in group.members.values()}
            generation = group.generation_id

            def stored(error):
                if error:
                    log.warning("group %s: persisting static member %s failed (error %d)",
                                group.group_id, instance_id, error)
                    if member.awaiting_join is answer and group.members.get(new_id) is member:
                        group.update_member(member, old_protocols, None)
                        old, fenced_now = group.replace_group_instance(new_id, old_id,
                                                                       instance_id)
                        for cb, res in fenced_now:
                            self._send(cb, res)
                        self._schedule_heartbeat(group, old)
                        self._send(answer, JoinResult(
                            error, generation_id=generation, protocol_type=group.protocol_type,
                            protocol_name=group.protocol_name, leader=current_leader))
                elif member.awaiting_join is answer:
                    group.take_join_callback(member)
                    # the old leader id, so the current leader does not think itself a new
                    # leader and compute an assignment a Stable group would never hand out
                    self._send(answer, JoinResult(
                        NONE, generation_id=group.generation_id,
                        protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                        leader=current_leader, member_id=new_id))
            self._then(self._store_group(group, assignment), stored)
        elif group.is_(COMPLETING_REBALANCE):
            # the leader may be assigning to the old id: rebalance so the new id gets a share
            self._prepare_rebalance(group, f"static member {instance_id} replaced")
        elif group.state in (EMPTY, DEAD):
            raise errors.IllegalStateError(f"group {group.group_id} has static members while "
                                           f"{group.state.value}")

    # --- SyncGroup ---------------------------------------------------------------------------
    @entry
    def sync_group(self, group_id, generation_id, member_id, group_instance_id, protocol_type,
                   protocol_name, assignments):
        d = defer.Deferred()
        error = self._validate(group_id)
        if error == _LOADING:
            # the rebalance's state is lost with the load: rejoin without rediscovering (older
            # clients do not expect COORDINATOR_LOAD_IN_PROGRESS here)
            self._send(d.callback, SyncResult(_REBALANCE))
        elif error is not None:
            self._send(d.callback, SyncResult(error))
        else:
            group = self._groups.get(group_id)
            if group is None:
                self._send(d.callback, SyncResult(_UNKNOWN_MEMBER))
            else:
                self._do_sync(group, generation_id, member_id or "", group_instance_id,
                              protocol_type, protocol_name, dict(assignments or {}), d.callback)
        return d

    def _do_sync(self, group, generation_id, member_id, group_instance_id, protocol_type,
                 protocol_name, assignments, answer):
        if group.is_(DEAD):
            self._send(answer, SyncResult(_NOT_AVAILABLE))
        elif group.is_static_member_fenced(member_id, group_instance_id):
            self._send(answer, SyncResult(_FENCED))
        elif not group.has(member_id):
            self._send(answer, SyncResult(_UNKNOWN_MEMBER))
        elif generation_id != group.generation_id:
            self._send(answer, SyncResult(_ILLEGAL_GENERATION))
        elif ((protocol_type is not None and protocol_type != group.protocol_type)
              or (protocol_name is not None and protocol_name != group.protocol_name)):
            self._send(answer, SyncResult(_INCONSISTENT))
        elif group.is_(EMPTY):
            self._send(answer, SyncResult(_UNKNOWN_MEMBER))
        elif group.is_(PREPARING_REBALANCE):
            self._send(answer, SyncResult(_REBALANCE))
        elif group.is_(COMPLETING_REBALANCE):
            member = group.get(member_id)
            superseded = group.take_sync_callback(member)
            if superseded is not None:
                self._send(superseded, SyncResult(_REBALANCE))
            member.awaiting_sync = answer
            self._remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                self._store_leader_assignment(group, assignments)
        else:  # Stable: a follower late or repeating itself gets what it was given
            self._remove_pending_sync_member(group, member_id)
            member = group.get(member_id)
            self._send(answer, SyncResult(NONE, group.protocol_type, group.protocol_name,
                                          member.assignment))
            self._schedule_heartbeat(group, member)

    def _remove_pending_sync_member(self, group, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self._cancel(group.sync_timer)
            group.sync_timer = None

    def _store_leader_assignment(self, group, assignments: dict[str, bytes]) -> None:
        assignment = {m: assignments.get(m, b"") for m in group.members}   # missing: empty
        missing = [m for m in group.members if m not in assignments]
        if missing:
            log.warning("group %s generation %d: no assignment for %s", group.group_id,
                        group.generation_id, missing)
        generation = group.generation_id

        def stored(error):
            # a member may have joined (or the group moved away) while the write was in flight
            if not group.is_(COMPLETING_REBALANCE) or generation != group.generation_id:
                return
            if error:
                self._reset_and_propagate_assignment_error(group, error)
                self._maybe_prepare_rebalance(group, f"storing the assignment failed ({error})")
            else:
                for member in group.members.values():
                    member.assignment = assignment.get(member.member_id, b"")
                self._propagate_assignment(group, NONE)
                group.transition_to(STABLE)
        self._then(self._store_group(group, assignment), stored)

    # --- Heartbeat ---------------------------------------------------------------------------
    @entry
    def heartbeat(self, group_id, generation_id, member_id, group_instance_id):
        error = self._validate(group_id)
        if error == _LOADING:
            return defer.succeed(NONE)      # the group is loading: answer blindly
        if error is not None:
            return defer.succeed(error)
        group = self._groups.get(group_id)
        member_id = member_id or ""
        if group is None:
            return defer.succeed(_UNKNOWN_MEMBER)
        if group.is_(DEAD):
            return defer.succeed(_NOT_AVAILABLE)
        if group.is_static_member_fenced(member_id, group_instance_id):
            return defer.succeed(_FENCED)
        if not group.has(member_id):
            return defer.succeed(_UNKNOWN_MEMBER)
        if generation_id != group.generation_id:
            return defer.succeed(_ILLEGAL_GENERATION)
        if group.is_(EMPTY):
            return defer.succeed(_UNKNOWN_MEMBER)
        self._schedule_heartbeat(group, group.get(member_id))
        return defer.succeed(_REBALANCE if group.is_(PREPARING_REBALANCE) else NONE)

    # --- LeaveGroup --------------------------------------------------------------------------
    @entry
    def leave_group(self, group_id, members):
        error = self._validate(group_id)
        if error is not None:
            return defer.succeed((error, []))
        group = self._groups.get(group_id)
        if group is None:
            return defer.succeed((NONE, [LeaveMemberResult(m or "", i, _UNKNOWN_MEMBER)
                                         for m, i in members]))
        if group.is_(DEAD):
            return defer.succeed((_NOT_AVAILABLE, []))
        results = []
        for member_id, instance_id in members:
            member_id = member_id or ""
            results.append(LeaveMemberResult(member_id, instance_id,
                                             self._leave_one(group, member_id, instance_id)))
        return defer.succeed((NONE, results))

    def _leave_one(self, group, member_id: str, instance_id: str | None) -> int:
        if member_id and group.is_static_member_fenced(member_id, instance_id):
            return _FENCED
        if group.is_pending_member(member_id):
            if instance_id is not None:
                return errors.UnknownServerError.code
            self._remove_pending_member_and_update_group(group, member_id)
            return NONE
        if group.has_static_member(instance_id):
            member = group.get(group.static_member_id(instance_id))   # leave by instance id
        elif group.has(member_id):
            member = group.get(member_id)
        else:
            return _UNKNOWN_MEMBER
        log.info("group %s: member %s (instance %s) left", group.group_id, member.member_id,
                 member.group_instance_id)
        member.is_leaving = True
        self._remove_member_and_update_group(group, member)
        return NONE
