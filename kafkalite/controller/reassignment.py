"""Partition reassignment through ``/admin/reassign_partitions`` (KafkaController's reassignment,
in Kafka's phases).

An admin writes the target replica lists; the controller's data watch queues ``on_request``.
For each partition whose target is valid (all live, no repeats) and new:

1. the assignment becomes target + old replicas (fenced write of ``/brokers/topics/<t>``), the
   added replicas are NewReplica, the leader epoch is bumped (fenced conditional write) and every
   replica hears LeaderAndIsr, so the added ones start following;
2. once the whole target is in the ISR (checked on every ISR change and on every request), a
   leader from the target is elected if the current one is not in it, the ISR is cut to the target,
   the assignment becomes the target, the target replicas are Online (LeaderAndIsr) and the removed
   ones go Offline -> ReplicaDeletionStarted (StopReplica with deletion) -> Successful ->
   NonExistent; every broker gets UpdateMetadata;
3. the partitions done leave ``/admin/reassign_partitions``, which is deleted when none remain
   (fenced, like every controller write).
"""

from __future__ import annotations

import logging
from dataclasses import replace

from twisted.internet import defer

import zk_schema

from kafkalite.controller.partition_state_machine import REASSIGN
from kafkalite.controller.state_machines import PartitionState as PS, ReplicaState as RS

log = logging.getLogger(__name__)


class ReassignmentManager:
    def __init__(self, controller):
        self.controller = controller

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
        started = []
        for tp, target in request.partitions.items():
            target = tuple(target)
            current = context.replicas(tp)
            if not current:
                log.warning("controller: cannot reassign %s-%d: no such partition", *tp)
                continue
            if tp in context.reassignments and context.reassignments[tp] == target:
                continue
            unknown = [b for b in target if b not in context.live_brokers]
            if unknown or not target or len(set(target)) != len(target):
                log.warning("controller: reassignment of %s-%d to %s refused: broker(s) %s are "
                            "not live or the list is invalid", tp[0], tp[1], list(target),
                            unknown)
                continue
            context.reassignments[tp] = target
            started.append(tp)
        if started:
            yield self._start(started)
        yield self.check()

    # --- phase 1 ----------------------------------------------------------------------------------
    @defer.inlineCallbacks
    def _start(self, tps):
        """Replicas = target + old; the new replicas start following."""
        c = self.controller
        context = c.context
        topics = {}
        added = []
        for tp in tps:
            target = context.reassignments[tp]
            current = context.replicas(tp)
            union = tuple(target) + tuple(b for b in current if b not in target)
            topics.setdefault(tp[0], {})[tp[1]] = union
            added += [(tp[0], tp[1], b) for b in target if b not in current]
            log.info("controller: reassigning %s-%d from %s to %s", tp[0], tp[1], list(current),
                     list(target))
        yield c.write_assignments(topics)
        rsm = c.replica_state_machine
        yield rsm.handle_state_changes(
            [r for r in added if rsm.state(r) == RS.NON_EXISTENT], RS.NEW)
        bumped = {}
        for tp in tps:
            state = context.states.get(tp)
            if state is not None:
                bumped[tp] = replace(state, leader_epoch=state.leader_epoch + 1,
                                     controller_epoch=c.epoch)
        changed = yield c.write_partition_states(bumped)
        live = sorted(context.live_brokers)
        c.requests.leader_and_isr(changed or tps, live)
        c.requests.update_metadata(live, changed or tps)

    # --- phase 2 ----------------------------------------------------------------------------------
    @defer.inlineCallbacks
    def check(self):
        """Finish each reassignment whose target replicas are all in the ISR: lead from the
        target, drop the old replicas, and write the final assignment."""
        c = self.controller
        context = c.context
        rsm = c.replica_state_machine
        done = []
        live = sorted(context.live_brokers)
        for tp, target in list(context.reassignments.items()):
            state = context.states.get(tp)
            if state is None or not set(target) <= set(state.isr):
                continue
            removed = [b for b in context.replicas(tp) if b not in target]
            if state.leader not in target:
                changed = yield c.partition_state_machine.handle_state_changes(
                    [tp], PS.ONLINE, strategy=REASSIGN, reassign_targets=context.reassignments)
                if not changed:
                    continue
                state = context.states[tp]
            new_isr = tuple(b for b in state.isr if b in target)
            if new_isr != state.isr:
                yield c.write_partition_states({tp: replace(state, isr=new_isr,
                                                            leader_epoch=state.leader_epoch + 1,
                                                            controller_epoch=c.epoch)})
            yield c.write_assignments({tp[0]: {tp[1]: tuple(target)}})
            yield rsm.handle_state_changes(
                [(tp[0], tp[1], b) for b in target if b in live], RS.ONLINE)
            gone = [(tp[0], tp[1], b) for b in removed]
            # the ISR was cut to the target above: the removed replicas are in no ISR now
            yield rsm.handle_state_changes(gone, RS.OFFLINE, shrink_isr=False)
            for step in (RS.DELETION_STARTED, RS.DELETION_SUCCESSFUL, RS.NON_EXISTENT):
                yield rsm.handle_state_changes(gone, step)
            c.requests.update_metadata(live, [tp])
            del context.reassignments[tp]
            done.append(tp)
            log.info("controller: reassignment of %s-%d to %s complete", tp[0], tp[1],
                     list(target))
        if done:
            yield self._rewrite_request()

    @defer.inlineCallbacks
    def _rewrite_request(self):
        c = self.controller
        try:
            pending = yield c.controller_zk.get_partition_reassignment()
        except zk_schema.SchemaError:
            pending = zk_schema.PartitionReassignment({})
        if pending is None:
            return
        remaining = {tp: r for tp, r in pending.partitions.items()
                     if tp in c.context.reassignments}
        yield c.controller_zk.update_partition_reassignment(remaining)
