"""Partition reassignment, as Kafka 2.8's controller does it (KIP-455).

Two ways in: an admin writes ``/admin/reassign_partitions`` (the ZooKeeper-era tools; the
controller's data watch queues ``on_request``), or a client sends AlterPartitionReassignments
(``alter``, on the controller's event queue). The latest request for a partition wins: an API
request takes the partition out of ``/admin/reassign_partitions``.

A partition's full assignment while it moves is Kafka's ``ReplicaAssignment``: ``replicas`` = the
target followed by the original replicas leaving, ``adding`` = target - original, ``removing`` =
original - target, all three in the topic znode (``adding_replicas`` / ``removing_replicas``),
so a new controller resumes the move (``resume``). For each reassignment, in Kafka's phases:

U. the new full assignment is written (fenced) and kept; replicas a replaced reassignment was
   adding and the new one does not want are stopped and deleted;
A. while the target is not all in the ISR: the leader epoch is bumped, every replica hears
   LeaderAndIsr, the added ones are NewReplica and start following;
B. once the whole target is in the ISR (checked on every ISR change): a leader from the target is
   elected if the current one is not in it, the ISR is cut to the target, the target replicas are
   Online, the removed ones go Offline -> ReplicaDeletionStarted (StopReplica with deletion) ->
   Successful -> NonExistent, the assignment becomes the target with nothing adding or removing,
   the partition leaves ``/admin/reassign_partitions`` (deleted when none remain) and every broker
   gets UpdateMetadata.

Cancelling (a null target) makes the target the original replicas: nothing is adding or removing,
so phase B runs at once and stops the replicas that were being added.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from twisted.internet import defer

import zk_schema

from kafkalite import errors
from kafkalite.controller.partition_state_machine import REASSIGN
from kafkalite.controller.state_machines import PartitionState as PS, ReplicaState as RS

log = logging.getLogger(__name__)

NO_SUCH_PARTITION = (errors.UnknownTopicOrPartitionError.code, "The partition does not exist.")
NO_REASSIGNMENT = (errors.NoReassignmentInProgressError.code,
                   "No partition reassignment is in progress.")
OK = (errors.NONE, None)


@dataclass(frozen=True)
class ReplicaAssignment:
    """Kafka's ReplicaAssignment: the replicas, and those being added and removed."""
    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(b for b in self.replicas if b not in self.removing)

    @property
    def origin(self) -> tuple[int, ...]:
        return tuple(b for b in self.replicas if b not in self.adding)

    def reassign_to(self, target) -> "ReplicaAssignment":
        origin = self.origin
        full = tuple(dict.fromkeys(tuple(target) + origin))
        return ReplicaAssignment(full, tuple(b for b in full if b not in origin),
                                 tuple(b for b in full if b not in target))


def replica_problem(replicas, assignment: ReplicaAssignment, live) -> str | None:
    """Kafka's validateReplicas for an API reassignment: why the target is refused, or None."""
    if not replicas:
        return "Empty replica list specified in partition reassignment."
    if len(set(replicas)) != len(replicas):
        return ("Duplicate replica ids in partition reassignment replica list: "
                f"{_scala_list(replicas)}")
    if any(b < 0 for b in replicas):
        return f"Invalid broker id in replica list: {_scala_list(replicas)}"
    adding = assignment.reassign_to(replicas).adding
    if not set(adding) <= set(live):
        return (f"Replica assignment has brokers that are not alive. Replica list: "
                f"{_scala_list(adding)}, live broker list: "
                f"Set({', '.join(map(str, sorted(live)))})")
    return None


def _scala_list(values) -> str:
    return f"ArrayBuffer({', '.join(map(str, values))})"


def load_reassignments(context, assignments) -> None:
    """At failover: the moves under way, from the topic znodes (``{topic: TopicAssignment}``)
    into the context's reassignments, adding and removing replicas."""
    for topic, a in assignments.items():
        for p in set(a.adding_replicas) | set(a.removing_replicas):
            adding, removing = tuple(a.adding_replicas.get(p, ())), tuple(
                a.removing_replicas.get(p, ()))
            if not (adding or removing):
                continue
            tp = (topic, p)
            if adding:
                context.adding[tp] = adding
            if removing:
                context.removing[tp] = removing
            context.reassignments[tp] = tuple(b for b in a.partitions.get(p, ())
                                              if b not in removing)


class ReassignmentManager:
    def __init__(self, controller):
        self.controller = controller

    def assignment(self, tp) -> ReplicaAssignment:
        context = self.controller.context
        return ReplicaAssignment(context.replicas(tp), tuple(context.adding.get(tp, ())),
                                 tuple(context.removing.get(tp, ())))

    # --- the watch on /admin/reassign_partitions --------------------------------------------------
    @defer.inlineCallbacks
    def on_request(self, data, zk_version):
        """Event: ``/admin/reassign_partitions`` was written (or deleted)."""
        c = self.controller
        context = c.context
        if data is None:
            return
        try:
            request = zk_schema.PartitionReassignment.decode(data)
        except zk_schema.SchemaError as exc:
            log.warning("controller: malformed reassignment request, deleting it: %s", exc)
            yield c.controller_zk.delete_partition_reassignment()
            return
        refused = set()
        for tp, target in request.partitions.items():
            target = tuple(target)
            if not context.replicas(tp) or tp[0] in context.topics_to_delete:
                log.warning("controller: cannot reassign %s-%d: no such partition", *tp)
                refused.add(tp)
                continue
            if context.reassignments.get(tp) == target:
                continue
            # kafkalite refuses a target it cannot complete (Kafka would wait for the broker)
            unknown = [b for b in target if b not in context.live_brokers]
            if unknown or not target or len(set(target)) != len(target):
                log.warning("controller: reassignment of %s-%d to %s refused: broker(s) %s are "
                            "not live or the list is invalid", tp[0], tp[1], list(target),
                            unknown)
                refused.add(tp)
                continue
            yield self._reassign(tp, self.assignment(tp).reassign_to(target))
        if refused:
            # as Kafka: the partitions that failed leave the request
            yield self._remove_from_zk_request(lambda tp, _replicas: tp in refused)

    # --- AlterPartitionReassignments ------------------------------------------------------------
    @defer.inlineCallbacks
    def alter(self, reassignments: dict):
        """``{tp: target replicas, or None to cancel}`` -> ``{tp: (error code, message)}``
        (Kafka's processApiPartitionReassignment)."""
        context = self.controller.context
        results = {}
        accepted = {}
        for tp, target in reassignments.items():
            current = self.assignment(tp)
            problem = None if target is None else replica_problem(
                list(target), current, context.live_brokers)
            if problem is not None:
                results[tp] = (errors.InvalidReplicaAssignmentError.code, problem)
            elif current.being_reassigned:
                accepted[tp] = current.reassign_to(current.origin if target is None else target)
            elif target is None:
                results[tp] = NO_REASSIGNMENT
            else:
                accepted[tp] = current.reassign_to(target)
        # the latest request wins: these partitions leave /admin/reassign_partitions
        yield self._remove_from_zk_request(lambda tp, _replicas: tp in accepted)
        for tp, assignment in accepted.items():
            if tp[0] in context.topics_to_delete or not context.replicas(tp):
                results[tp] = NO_SUCH_PARTITION
                continue
            yield self._reassign(tp, assignment)
            results[tp] = OK
        return results

    # --- ListPartitionReassignments ---------------------------------------------------------------
    def list(self, tps=None) -> dict:
        """``{tp: ReplicaAssignment}`` of the partitions being reassigned (among ``tps``)."""
        context = self.controller.context
        candidates = list(context.reassignments) if tps is None else tps
        out = {}
        for tp in candidates:
            assignment = self.assignment(tp)
            if assignment.being_reassigned:
                out[tp] = assignment
        return out

    # --- failover ---------------------------------------------------------------------------------
    @defer.inlineCallbacks
    def resume(self):
        """A new controller: the moves left in the topic znodes carry on."""
        context = self.controller.context
        for tp in list(context.reassignments):
            yield self._reassign(tp, self.assignment(tp))

    # --- the phases -------------------------------------------------------------------------------
    @defer.inlineCallbacks
    def _reassign(self, tp, new: ReplicaAssignment):
        """Kafka's onPartitionReassignment."""
        c = self.controller
        context = c.context
        current = self.assignment(tp)
        if current != new:
            log.info("controller: reassigning %s-%d: replicas %s, adding %s, removing %s", tp[0],
                     tp[1], list(new.replicas), list(new.adding), list(new.removing))
            yield self._write(tp, new)
            unneeded = [b for b in current.replicas if b not in new.replicas]
            if unneeded:
                yield self._stop_removed(tp, unneeded)
        context.reassignments[tp] = new.target
        if self._complete(tp, new):
            yield self._finish(tp, new)
            return
        # A1: a new leader epoch, and every replica hears of the new replica set
        state = context.states.get(tp)
        changed = []
        if state is not None:
            changed = yield c.write_partition_states({tp: replace(
                state, leader_epoch=state.leader_epoch + 1, controller_epoch=c.epoch)})
        live = sorted(context.live_brokers)
        c.requests.leader_and_isr([tp], live)
        c.requests.update_metadata(live, changed or [tp])
        # A2: the added replicas start
        rsm = c.replica_state_machine
        yield rsm.handle_state_changes(
            [(tp[0], tp[1], b) for b in new.adding
             if rsm.state((tp[0], tp[1], b)) == RS.NON_EXISTENT], RS.NEW)

    def _complete(self, tp, assignment: ReplicaAssignment) -> bool:
        if not assignment.being_reassigned:
            return True
        state = self.controller.context.states.get(tp)
        return state is not None and set(assignment.target) <= set(state.isr)

    @defer.inlineCallbacks
    def check(self):
        """An ISR changed: finish each reassignment whose target replicas are all in sync."""
        for tp in list(self.controller.context.reassignments):
            assignment = self.assignment(tp)
            if self._complete(tp, assignment):
                yield self._finish(tp, assignment)

    @defer.inlineCallbacks
    def _finish(self, tp, assignment: ReplicaAssignment):
        """Phase B: lead from the target, drop the removed replicas, write the target."""
        c = self.controller
        context = c.context
        rsm = c.replica_state_machine
        target = assignment.target
        live = sorted(context.live_brokers)
        state = context.states.get(tp)
        if state is not None and state.leader not in target:
            changed = yield c.partition_state_machine.handle_state_changes(
                [tp], PS.ONLINE, strategy=REASSIGN, reassign_targets={tp: target})
            if not changed:
                log.warning("controller: reassignment of %s-%d waits: no replica of %s can "
                            "lead", tp[0], tp[1], list(target))
                return
            state = context.states[tp]
        if state is not None:
            new_isr = tuple(b for b in state.isr if b in target)
            if new_isr != state.isr:
                yield c.write_partition_states({tp: replace(
                    state, isr=new_isr, leader_epoch=state.leader_epoch + 1,
                    controller_epoch=c.epoch)})
        yield rsm.handle_state_changes(
            [(tp[0], tp[1], b) for b in target if b in live], RS.ONLINE)
        # the ISR was cut to the target above: the removed replicas are in no ISR now
        yield self._stop_removed(tp, assignment.removing, shrink_isr=False)
        yield self._write(tp, ReplicaAssignment(target))
        context.reassignments.pop(tp, None)
        yield self._remove_from_zk_request(
            lambda p, replicas: p == tp and tuple(replicas) == tuple(target))
        c.requests.update_metadata(live, [tp])
        log.info("controller: reassignment of %s-%d to %s complete", tp[0], tp[1], list(target))

    @defer.inlineCallbacks
    def _stop_removed(self, tp, brokers, shrink_isr: bool = True):
        rsm = self.controller.replica_state_machine
        gone = [(tp[0], tp[1], b) for b in brokers]
        if not gone:
            return
        yield rsm.handle_state_changes(gone, RS.OFFLINE, shrink_isr=shrink_isr)
        for step in (RS.DELETION_STARTED, RS.DELETION_SUCCESSFUL, RS.NON_EXISTENT):
            yield rsm.handle_state_changes(gone, step)

    @defer.inlineCallbacks
    def _write(self, tp, assignment: ReplicaAssignment):
        """The full assignment into the topic znode (fenced), then into the context."""
        context = self.controller.context
        for table, value in ((context.adding, assignment.adding),
                             (context.removing, assignment.removing)):
            if value:
                table[tp] = value
            else:
                table.pop(tp, None)
        yield self.controller.write_assignments({tp[0]: {tp[1]: assignment.replicas}})

    @defer.inlineCallbacks
    def _remove_from_zk_request(self, should_remove):
        """Kafka's maybeRemoveFromZkReassignment: the partitions ``should_remove(tp, replicas)``
        picks leave ``/admin/reassign_partitions`` (deleted when none remain)."""
        c = self.controller
        try:
            pending = yield c.controller_zk.get_partition_reassignment()
        except zk_schema.SchemaError:
            pending = None
        if pending is None:
            return
        remaining = {tp: r for tp, r in pending.partitions.items()
                     if not should_remove(tp, r)}
        if remaining != pending.partitions:
            yield c.controller_zk.update_partition_reassignment(remaining)
