"""Leader elections an admin asks for through ElectLeaders (KIP-460), as Kafka 2.8's controller
runs them (``processReplicaLeaderElection``), one event on the controller's queue.

Per partition: one that does not exist is UNKNOWN_TOPIC_OR_PARTITION, one of a topic being
deleted INVALID_TOPIC_EXCEPTION; a preferred election where the preferred replica leads already,
or an unclean one where a live broker leads, is ELECTION_NOT_NEEDED; the others are elected by
the partition state machine (preferred: the first assigned replica, if live and in the ISR;
unclean: a live in-sync replica, else any live replica), and those it cannot elect are
PREFERRED_LEADER_NOT_AVAILABLE or ELIGIBLE_LEADERS_NOT_AVAILABLE with Kafka's message. The
elected partitions' replicas hear LeaderAndIsr and every broker UpdateMetadata; the answer holds
each one's new leader, which the broker waits to see in its metadata.
"""

from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalite import errors
from kafkalite.controller.partition_state_machine import PREFERRED, UNCLEAN
from kafkalite.controller.state_machines import PartitionState as PS

log = logging.getLogger(__name__)

PREFERRED_ELECTION, UNCLEAN_ELECTION = 0, 1          # Kafka's ElectionType values

#: how Kafka names the strategy in a failed election's message
_STRATEGY_NAMES = {PREFERRED_ELECTION: "PreferredReplicaPartitionLeaderElectionStrategy",
                   UNCLEAN_ELECTION: "OfflinePartitionLeaderElectionStrategy(true)"}
_FAILED = {PREFERRED_ELECTION: errors.PreferredLeaderNotAvailableError.code,
           UNCLEAN_ELECTION: errors.EligibleLeadersNotAvailableError.code}
NOT_NEEDED = (errors.ElectionNotNeededError.code,
              "Leader election not needed for topic partition.")


class AdminElections:
    def __init__(self, controller):
        self.controller = controller

    @defer.inlineCallbacks
    def elect(self, tps, election_type: int):
        """``{tp: new leader id}`` for the partitions elected, ``{tp: (error code, message)}``
        for the others."""
        c = self.controller
        context = c.context
        results: dict = {}
        electable = []
        live = context.live_ids()
        for tp in dict.fromkeys(tps):
            replicas = context.replicas(tp)
            state = context.states.get(tp)
            if not replicas:
                results[tp] = (errors.UnknownTopicOrPartitionError.code,
                               "The partition does not exist.")
            elif tp[0] in context.topics_to_delete:
                results[tp] = (errors.InvalidTopicError.code, "The topic is being deleted")
            elif state is None:
                results[tp] = self._failed(tp, election_type)
            elif election_type == PREFERRED_ELECTION and state.leader == replicas[0]:
                results[tp] = NOT_NEEDED
            elif election_type == UNCLEAN_ELECTION and state.leader in live:
                results[tp] = NOT_NEEDED
            else:
                electable.append(tp)
        if electable:
            log.info("controller: %s leader election for %s asked by an admin",
                     "preferred" if election_type == PREFERRED_ELECTION else "unclean",
                     ", ".join(f"{t}-{p}" for t, p in electable))
            strategy = PREFERRED if election_type == PREFERRED_ELECTION else UNCLEAN
            changed = yield c.partition_state_machine.handle_state_changes(
                electable, PS.ONLINE, strategy=strategy)
            if changed:
                brokers = sorted(context.live_brokers)
                c.requests.leader_and_isr(changed, brokers)
                c.requests.update_metadata(brokers, changed)
            for tp in electable:
                state = context.states.get(tp)
                results[tp] = (state.leader if tp in changed and state is not None
                               and state.leader >= 0 else self._failed(tp, election_type))
        return results

    @staticmethod
    def _failed(tp, election_type: int) -> tuple[int, str]:
        return (_FAILED[election_type], f"Failed to elect leader for partition {tp[0]}-{tp[1]} "
                                        f"under strategy {_STRATEGY_NAMES[election_type]}")
