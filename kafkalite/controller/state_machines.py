"""The states of partitions and replicas and their valid previous states (pure tables).

These are Kafka's (PartitionStateMachine / ReplicaStateMachine). A transition from a state that is
not a valid previous state is a controller bug; ``check_transition`` raises IllegalStateError naming
it. The machines that act on these tables (``partition_state_machine``,
``replica_state_machine``) refuse such a transition and log it, instead of corrupting their view.
"""

from __future__ import annotations

from enum import Enum

from kafkalite.errors import IllegalStateError


class PartitionState(Enum):
    NON_EXISTENT = "NonExistentPartition"
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"


class ReplicaState(Enum):
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"


P = PartitionState
R = ReplicaState

PARTITION_PREVIOUS: dict[PartitionState, frozenset[PartitionState]] = {
    P.NEW: frozenset({P.NON_EXISTENT}),
    P.ONLINE: frozenset({P.NEW, P.ONLINE, P.OFFLINE}),
    P.OFFLINE: frozenset({P.NEW, P.ONLINE, P.OFFLINE}),
    P.NON_EXISTENT: frozenset({P.OFFLINE}),
}

REPLICA_PREVIOUS: dict[ReplicaState, frozenset[ReplicaState]] = {
    R.NEW: frozenset({R.NON_EXISTENT}),
    R.ONLINE: frozenset({R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE}),
    R.OFFLINE: frozenset({R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE}),
    R.DELETION_STARTED: frozenset({R.OFFLINE}),
    R.DELETION_SUCCESSFUL: frozenset({R.DELETION_STARTED}),
    R.DELETION_INELIGIBLE: frozenset({R.DELETION_STARTED, R.OFFLINE}),
    R.NON_EXISTENT: frozenset({R.DELETION_SUCCESSFUL}),
}


def check_transition(kind: str, subject, current, target) -> None:
    table = PARTITION_PREVIOUS if isinstance(target, PartitionState) else REPLICA_PREVIOUS
    if current not in table[target]:
        raise IllegalStateError(
            f"{kind} {subject}: invalid transition {current.value} -> {target.value}; "
            f"valid previous states are {sorted(s.value for s in table[target])}")


class StateTable:
    """Current state per key, with transitions checked against the valid-previous table."""

    def __init__(self, kind: str, initial):
        self.kind = kind
        self._initial = initial
        self._states: dict = {}

    def get(self, key):
        return self._states.get(key, self._initial)

    def transition(self, key, target) -> None:
        check_transition(self.kind, key, self.get(key), target)
        if target == self._initial:
            self._states.pop(key, None)
        else:
            self._states[key] = target

    def force(self, key, state) -> None:
        """Set a state loaded from ZooKeeper at failover (no transition check)."""
        self._states[key] = state

    def keys_in(self, *states):
        return [k for k, s in self._states.items() if s in states]

    def remove(self, key) -> None:
        self._states.pop(key, None)
