"""The replica state machine (Kafka's ZkReplicaStateMachine).

A replica is ``(topic, partition, broker)``. Its states and their valid previous states are in
``state_machines.REPLICA_PREVIOUS``; ``handle_state_changes`` moves replicas and does what the
target state takes:

- NewReplica: the state only (a new partition's, or a reassignment's added replica);
- OnlineReplica: LeaderAndIsr to the replicas on live brokers, one request per broker;
- OfflineReplica: the replica leaves the ISR of the partitions it follows (a fenced conditional
  write each; the last ISR member stays, so that a clean election stays possible; a partition whose
  leader goes offline with it is left to leader election). The caller tells the brokers
  (LeaderAndIsr, UpdateMetadata) and, in a controlled shutdown, stops the follower afterwards;
- ReplicaDeletionStarted: StopReplica with deletion to the replica's broker; the answer (or its
  failure) is reported to ``on_response`` as an event when one is given;
- ReplicaDeletionSuccessful, ReplicaDeletionIneligible, NonExistentReplica: the state only.

A replica whose current state is not a valid previous state of the target is refused and logged as
a controller bug: nothing is sent or written for it.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from twisted.internet import defer

from kafkalite import errors
from kafkalite.controller.state_machines import ReplicaState as RS, StateTable, check_transition

log = logging.getLogger(__name__)


class ReplicaStateMachine:
    def __init__(self, controller):
        self.controller = controller
        self.states = StateTable("replica", RS.NON_EXISTENT)

    def state(self, replica) -> RS:
        return self.states.get(replica)

    def in_state(self, replicas, *states) -> list:
        return [r for r in replicas if self.state(r) in states]

    def initialize(self) -> None:
        """At failover: replicas on live brokers are Online, the others ReplicaDeletionIneligible
        (Kafka's: they go Offline when the controller starts up)."""
        context = self.controller.context
        self.states = StateTable("replica", RS.NON_EXISTENT)
        for replica in context.replicas_of(context.partitions()):
            self.states.force(replica, RS.ONLINE if replica[2] in context.live_brokers
                              else RS.DELETION_INELIGIBLE)

    def remove_topic(self, topic: str) -> None:
        """Forget the replicas of a topic that is gone."""
        for key in [k for k in self.states.keys_in(*RS) if k[0] == topic]:
            self.states.remove(key)

    def valid(self, replicas, target) -> list:
        """The replicas that may move to ``target``; the others are logged as controller bugs."""
        out = []
        for replica in replicas:
            try:
                check_transition("replica", "{}-{} on broker {}".format(*replica),
                                 self.state(replica), target)
            except errors.IllegalStateError as exc:
                log.error("controller bug, transition refused: %s", exc)
                continue
            out.append(replica)
        return out

    @defer.inlineCallbacks
    def handle_state_changes(self, replicas, target: RS, *, shrink_isr: bool = True,
                             skip_isr=(), on_response=None):
        """Move ``replicas`` to ``target``. Fires with the partitions whose state znode was
        written (OfflineReplica's ISR changes; ``skip_isr`` partitions are left alone, as are
        all with ``shrink_isr=False``)."""
        replicas = self.valid(list(dict.fromkeys(replicas)), target)
        for replica in replicas:
            self.states.transition(replica, target)
        if not replicas:
            return []
        if target == RS.ONLINE:
            self.controller.requests.leader_and_isr_to_replicas(replicas)
        elif target == RS.OFFLINE and shrink_isr:
            changed = yield self._remove_from_isr(replicas, set(skip_isr))
            return changed
        elif target == RS.DELETION_STARTED:
            self._stop_and_delete(replicas, on_response)
        return []

    def _stop_and_delete(self, replicas, on_response) -> None:
        by_broker: dict[int, list] = {}
        for topic, partition, broker_id in replicas:
            by_broker.setdefault(broker_id, []).append((topic, partition))
        requests = self.controller.requests
        for broker_id, tps in sorted(by_broker.items()):
            if on_response is None:
                requests.stop_replica(broker_id, tps, delete=True)
                continue
            d = requests.stop_replica(broker_id, tps, delete=True, wait=True)
            if d is None:   # the broker is not live: it cannot delete anything now
                on_response(broker_id, tps, False)
                continue
            d.addCallbacks(lambda _response, b=broker_id, t=tps: on_response(b, t, True),
                           lambda _failure, b=broker_id, t=tps: on_response(b, t, False))

    @defer.inlineCallbacks
    def _remove_from_isr(self, replicas, skip):
        c = self.controller
        going: dict[tuple, set] = {}
        for topic, partition, broker_id in replicas:
            going.setdefault((topic, partition), set()).add(broker_id)
        shrink = {}
        for tp, brokers in going.items():
            state = c.context.states.get(tp)
            if state is None or tp in skip or state.leader in brokers or state.leader < 0:
                continue
            isr = tuple(b for b in state.isr if b not in brokers)
            if isr and isr != state.isr:
                # a new leader epoch, as Kafka's doRemoveReplicasFromIsr (newLeaderAndIsr): the
                # replicas left are told with a LeaderAndIsr, which a broker ignores at the
                # epoch it already holds (Kafka's becomeLeaderOrFollower)
                shrink[tp] = replace(state, isr=isr, leader_epoch=state.leader_epoch + 1,
                                     controller_epoch=c.epoch)
        if not shrink:
            return []
        changed = yield c.write_partition_states(shrink)
        return changed
