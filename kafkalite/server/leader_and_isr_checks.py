"""Which partition states of a LeaderAndIsr a broker ignores (Kafka 2.8's
ReplicaManager.becomeLeaderOrFollower).

A state is taken only when its leader epoch is newer than the one this broker holds for the
partition (-1 for a partition it does not host yet, so a new partition's epoch 0 is newer). A
state at the same epoch is a repeat -- a new controller resending what it found in ZooKeeper, or a
replayed request -- and one at an older epoch comes from a decision already superseded: both are
ignored and answered STALE_CONTROLLER_EPOCH for that partition, the partition left as it is. A
newer state that does not list this broker among the replicas is answered
UNKNOWN_TOPIC_OR_PARTITION.

Kafka checks nothing else: a leader outside the ISR, or an ISR naming brokers outside the
replicas, is taken as the controller sent it (the high watermark counts only assigned replicas, so
such an ISR member holds nothing back: ``partition.compute_high_watermark``).

A taken state that makes this broker a follower of a leader that is no live broker (Kafka's
makeFollowers looks the leader up in the metadata cache; kafkalite also in the request's live
leaders) changes nothing but the log, which is made: the partition keeps its leader epoch, so the
controller's next state at that epoch is still taken. Otherwise a forged or corrupt state naming
a broker that does not exist left the partition following nobody at the controller's own epoch,
deaf to the controller's resends (found by the 1,000,000-case fuzz: a partition advertised with
leader 1, whose broker 1 answered NOT_LEADER_OR_FOLLOWER). A leader of -1 (none) is taken as sent.
"""

from __future__ import annotations

import logging
from typing import Callable, NamedTuple

from kafkalite.errors import StaleControllerEpochError, UnknownTopicOrPartitionError

__all__ = ["Ignored", "ignored_state", "unavailable_leader"]


class Ignored(NamedTuple):
    """Why a partition state is not applied: the per-partition error code and Kafka's log line."""
    error_code: int
    message: str
    level: int


def ignored_state(state, current_leader_epoch: int, broker_id: int, controller_id: int,
                  controller_epoch: int) -> Ignored | None:
    """None when ``state`` (a LeaderAndIsrPartitionState) is to be applied, else why not."""
    head = (f"Ignoring LeaderAndIsr request from controller {controller_id} epoch "
            f"{controller_epoch} for partition {state.topic}-{state.partition}")
    if state.leader_epoch > current_leader_epoch:
        if broker_id in state.replicas:
            return None
        return Ignored(UnknownTopicOrPartitionError.code,
                       f"{head} as itself is not in assigned replica list "
                       f"{','.join(map(str, state.replicas))}", logging.WARNING)
    if state.leader_epoch < current_leader_epoch:
        return Ignored(StaleControllerEpochError.code,
                       f"{head} since its associated leader epoch {state.leader_epoch} is "
                       f"smaller than the current leader epoch {current_leader_epoch}",
                       logging.WARNING)
    return Ignored(StaleControllerEpochError.code,
                   f"{head} since its associated leader epoch {state.leader_epoch} matches "
                   "the current leader epoch", logging.INFO)


def unavailable_leader(state, broker_id: int, controller_id: int, controller_epoch: int,
                       broker_alive: Callable[[int], bool]) -> str | None:
    """Why a state taken by ``ignored_state`` still cannot make this broker a follower (Kafka's
    log line), or None."""
    leader = state.leader
    if leader < 0 or leader == broker_id or broker_alive(leader):
        return None
    return (f"Received LeaderAndIsr request from controller {controller_id} epoch "
            f"{controller_epoch} for partition {state.topic}-{state.partition} but cannot "
            f"become follower since the new leader {leader} is unavailable")
