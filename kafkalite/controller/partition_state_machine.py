"""The partition state machine (Kafka's ZkPartitionStateMachine).

Each partition is NonExistent, New, Online or Offline (``state_machines.PARTITION_PREVIOUS`` says
from which states each may be entered). ``handle_state_changes`` moves partitions to a target state
and does what that takes:

- New, Offline, NonExistent: the state only;
- Online: a New partition without a state znode gets its first leader and ISR (its live replicas,
  created with a fenced write); any other partition gets a leader elected by the given strategy
  (``election``'s pure algorithms: offline, preferred, reassign, controlled shutdown, and an
  admin's unclean election) and written with a fenced conditional write. A partition that ends
  up with no leader (-1) is Offline.

A partition whose current state is not a valid previous state of the target is refused and logged
as a controller bug; its state and znodes stay as they are. Which brokers hear of the result is the
caller's business (it sends LeaderAndIsr / UpdateMetadata for the partitions returned).
"""

from __future__ import annotations

import logging
from dataclasses import replace

from twisted.internet import defer

from zk_schema.topics import PartitionState as ZkPartitionState

from kafkalite import errors
from kafkalite.controller import election
from kafkalite.controller.state_machines import PartitionState as PS, StateTable, check_transition
from kafkalite.zk.errors import ControllerMovedError

log = logging.getLogger(__name__)

NO_LEADER = -1

OFFLINE = "offline"                          # leader election strategies (Kafka's names)
PREFERRED = "preferred"
REASSIGN = "reassign"
CONTROLLED_SHUTDOWN = "controlled_shutdown"
UNCLEAN = "unclean"     # an admin's unclean election (KIP-460): offline, unclean allowed


class PartitionStateMachine:
    def __init__(self, controller):
        self.controller = controller
        self.states = StateTable("partition", PS.NON_EXISTENT)

    def state(self, tp) -> PS:
        return self.states.get(tp)

    def initialize(self) -> list:
        """At failover, each partition's state from its znode: New without one, Online with a
        live leader, else Offline. Returns the partitions that need a leader (New and Offline)."""
        context = self.controller.context
        self.states = StateTable("partition", PS.NON_EXISTENT)
        needs_leader = []
        for tp in context.partitions():
            state = context.states.get(tp)
            if state is None:
                self.states.force(tp, PS.NEW)
                needs_leader.append(tp)
            elif state.leader in context.live_brokers:
                self.states.force(tp, PS.ONLINE)
            else:
                self.states.force(tp, PS.OFFLINE)
                needs_leader.append(tp)
        return needs_leader

    def remove(self, tp) -> None:
        """Forget a partition whose topic is gone."""
        self.states.remove(tp)

    def valid(self, tps, target) -> list:
        """The partitions that may move to ``target``; the others are logged as controller bugs."""
        out = []
        for tp in tps:
            try:
                check_transition("partition", f"{tp[0]}-{tp[1]}", self.state(tp), target)
            except errors.IllegalStateError as exc:
                log.error("controller bug, transition refused: %s", exc)
                continue
            out.append(tp)
        return out

    def handle_state_changes(self, tps, target: PS, strategy: str = OFFLINE,
                             reassign_targets=None) -> defer.Deferred:
        """Move ``tps`` to ``target``; fires with the partitions whose state znode was written."""
        tps = self.valid(tps, target)
        if target != PS.ONLINE:
            for tp in tps:
                self.states.transition(tp, target)
            return defer.succeed([])
        return self._to_online(tps, strategy, reassign_targets)

    # --- Online: elect and write ----------------------------------------------------------------
    @defer.inlineCallbacks
    def _to_online(self, tps, strategy, reassign_targets):
        c = self.controller
        context = c.context
        if strategy == OFFLINE:
            # Kafka reads the topic's config where no in-sync replica is alive: whether an
            # unclean election may happen is the operator's current choice, not a cached one
            live = context.live_ids()
            undecided = {tp[0] for tp in tps if (state := context.states.get(tp)) is not None
                         and not set(state.isr) & live}
            if undecided:
                yield c.topic_configs.refresh(undecided)
        updates = {}
        creates = {}
        live = context.live_ids()
        for tp in tps:
            if tp[0] in context.topics_to_delete:
                continue
            replicas = context.replicas(tp)
            state = context.states.get(tp)
            if state is None:
                result = election.new_partition_election(replicas, live)
                if result is None:
                    log.warning("controller: new partition %s-%d has no live replica %s",
                                tp[0], tp[1], list(replicas))
                    continue
                creates[tp] = ZkPartitionState(result.leader, 0, c.epoch, result.isr)
                continue
            result = self._choose(strategy, tp, replicas, state, live, reassign_targets)
            if result is None:
                if (strategy == OFFLINE and state.leader != NO_LEADER
                        and state.leader not in live):
                    # nobody eligible: the partition goes offline (leader -1), the ISR keeps
                    # its last member so a clean election can happen when it returns
                    isr = tuple(b for b in state.isr if b in live) or state.isr
                    updates[tp] = replace(state, leader=NO_LEADER,
                                          leader_epoch=state.leader_epoch + 1,
                                          controller_epoch=c.epoch, isr=isr)
                    log.warning("controller: %s-%d has no eligible leader (replicas %s, ISR %s, "
                                "live %s); it is offline", tp[0], tp[1], list(replicas),
                                list(state.isr), sorted(live))
                continue
            if result.unclean:
                log.warning("controller: UNCLEAN election of %d for %s-%d: records not on it "
                            "are lost", result.leader, tp[0], tp[1])
            updates[tp] = replace(state, leader=result.leader,
                                  leader_epoch=state.leader_epoch + 1,
                                  controller_epoch=c.epoch, isr=result.isr)
        changed = (yield self._create_states(creates)) if creates else []
        if updates:
            written = yield c.write_partition_states(updates)
            for tp in written:
                self.states.transition(tp, PS.ONLINE if context.states[tp].leader >= 0
                                       else PS.OFFLINE)
            changed.extend(written)
        return changed

    @defer.inlineCallbacks
    def _create_states(self, creates):
        """Write new partitions' first states (``{tp: state}``); returns those written. A
        partition whose state exists already takes the one in ZooKeeper and stays New."""
        c = self.controller
        context = c.context
        # one pipelined batch: a round trip per partition, one after the other, made a
        # 3,000-partition creation take a minute on a ZooKeeper 5 ms away
        outcomes = yield c.controller_zk.create_partition_states(creates)
        changed = []
        for tp, new_state in creates.items():
            outcome = outcomes[tp]
            if isinstance(outcome, ControllerMovedError):
                raise outcome
            if isinstance(outcome, errors.KafkaError):
                existing = yield c.controller_zk.get_partition_state(*tp)
                if existing is None:
                    log.warning("controller: cannot create state of %s-%d: %s", *tp, outcome)
                    continue
                context.states[tp] = existing
                continue
            context.states[tp] = replace(new_state, zk_version=0)
            self.states.transition(tp, PS.ONLINE)
            changed.append(tp)
        return changed

    def _choose(self, strategy, tp, replicas, state, live, reassign_targets):
        context = self.controller.context
        if strategy == OFFLINE:
            if state.leader in live and state.leader not in context.shutting_down:
                return None  # has a leader already
            return election.offline_election(replicas, state.isr, live,
                                             self.unclean_allowed(tp[0]))
        if strategy == UNCLEAN:
            if state.leader in live:
                return None  # has a leader already
            return election.offline_election(replicas, state.isr, live, True)
        if strategy == PREFERRED:
            if replicas and state.leader == replicas[0]:
                return None
            return election.preferred_election(replicas, state.isr, live)
        if strategy == CONTROLLED_SHUTDOWN:
            return election.controlled_shutdown_election(
                replicas, state.isr, set(context.live_brokers), context.shutting_down)
        if strategy == REASSIGN:
            return election.reassignment_election(reassign_targets[tp], state.isr, live)
        raise ValueError(strategy)

    def unclean_allowed(self, topic: str) -> bool:
        """The topic's unclean.leader.election.enable override, else the broker default."""
        context = self.controller.context
        if topic in context.unclean_topics:
            return True
        if topic in context.clean_topics:
            return False
        return bool(self.controller.config.unclean_leader_election_enable)
