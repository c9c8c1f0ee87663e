"""KIP-392, fetching from the closest replica: which replica may serve a fetch, and which one the
leader points a consumer to. Pure decisions (no I/O), used by ``ReplicaManager.read_fetch`` and
``DelayedFetch``, so the rules live in one place and are unit tested on their own.

Kafka 2.8's rules (ReplicaManager.fetchMessages, readFromLocalLog, findPreferredReadReplica;
Partition.getLocalLog; RackAwareReplicaSelector):

* A follower's replica fetch, and a consumer's Fetch below v11 (it carries no client metadata),
  read only from the leader. A consumer's Fetch v11+ may read from any replica that hosts the
  partition, up to that replica's own high watermark (read_committed: its last stable offset).
* The current-leader-epoch check comes first (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH), then
  the leader requirement (NOT_LEADER_OR_FOLLOWER), as Partition.getLocalLog orders them.
* With ``replica.selector.class`` = RackAwareReplicaSelector, the leader answers a consumer's
  Fetch v11+ with a preferred read replica: the leader itself when it is on the client's rack
  (then none is named), else the most caught-up replica on that rack among those whose log
  covers the fetch offset (log end >= offset >= log start); none when no replica is on that rack
  or the client names no rack. Kafka does not require that replica to be in the ISR. When one is
  named, the answer carries no records.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from kafkalite.errors import (
    ConfigError, FencedLeaderEpochError, KafkaError, NotLeaderForPartitionError,
    UnknownLeaderEpochError)

__all__ = ["RACK_AWARE_SELECTOR", "ReplicaView", "fetch_only_from_leader", "read_error",
           "serve_refusal", "rack_aware_select", "preferred_read_replica", "preferred_for",
           "replica_selector"]

RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


def fetch_only_from_leader(replica_id: int, client_rack: str | None) -> bool:
    """Kafka's fetchOnlyFromLeader: a follower's fetch (replica id >= 0) or a consumer's fetch
    without client metadata (``client_rack`` None: Fetch below v11)."""
    return replica_id >= 0 or client_rack is None


def read_error(topic: str, partition: int, broker_id: int, leader_id: int, leader_epoch: int,
               current_leader_epoch: int, only_leader: bool) -> KafkaError | None:
    """Why this replica may not serve the fetch (None: it may), as Partition.getLocalLog:
    the epoch check first, then the leader requirement."""
    name = f"{topic}-{partition}"
    if current_leader_epoch >= 0:
        if current_leader_epoch < leader_epoch:
            return FencedLeaderEpochError(
                f"{name}: request epoch {current_leader_epoch} < leader epoch {leader_epoch}")
        if current_leader_epoch > leader_epoch:
            return UnknownLeaderEpochError(
                f"{name}: request epoch {current_leader_epoch} > leader epoch {leader_epoch}")
    if only_leader and leader_id != broker_id:
        return NotLeaderForPartitionError(
            f"broker {broker_id} is not the leader of {name} (leader is {leader_id})")
    return None


def serve_refusal(partition, current_leader_epoch: int, only_leader: bool) -> KafkaError | None:
    """``read_error`` for a hosted ``server.partition.Partition``."""
    return read_error(partition.topic, partition.partition, partition.broker_id,
                      partition.leader_id, partition.leader_epoch, current_leader_epoch,
                      only_leader)


class ReplicaView(NamedTuple):
    """One replica as the leader sees it (Kafka's ReplicaView): its broker's rack (None when
    the broker is not alive or has no rack), log end, and time since it last caught up."""
    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_caught_up_ms: int = 0


def rack_aware_select(client_rack: str | None, leader: ReplicaView,
                      replicas: list[ReplicaView]) -> ReplicaView:
    """Kafka's RackAwareReplicaSelector.select over ``replicas`` (the leader among them): the
    leader unless another replica is on the client's rack and the leader is not; then the most
    caught-up of those (log end, then the shortest time since caught up, then the highest id)."""
    if not client_rack:
        return leader
    same_rack = [r for r in replicas if r.rack == client_rack]
    if not same_rack or leader in same_rack:
        return leader
    return max(same_rack, key=lambda r: (r.log_end_offset, -r.time_since_caught_up_ms,
                                         r.broker_id))


Selector = Callable[[str | None, ReplicaView, list[ReplicaView]], ReplicaView]


def preferred_read_replica(selector: Selector | None, client_rack: str | None,
                           leader: ReplicaView, followers: list[tuple[ReplicaView, int]],
                           fetch_offset: int) -> int:
    """The replica the leader names to a consumer (-1: none, read here), as Kafka's
    findPreferredReadReplica: ``followers`` are (view, log start offset) pairs; only those whose
    log holds ``fetch_offset`` are candidates; the leader is never named."""
    if selector is None or client_rack is None:
        return -1
    candidates = [view for view, start in followers
                  if view.log_end_offset >= fetch_offset >= start]
    chosen = selector(client_rack, leader, [*candidates, leader])
    if chosen == leader or chosen.rack is None:
        return -1
    return chosen.broker_id


def preferred_for(partition, selector: Selector | None, rack_of: Callable[[int], str | None],
                  params, fetch_offset: int, now_ms: int) -> int:
    """``preferred_read_replica`` for a hosted partition and a fetch's ``FetchParams``: only a
    leader names one, only to a consumer's Fetch v11+ (``client_rack`` not None)."""
    if (selector is None or params.client_rack is None or params.replica_id >= 0
            or not partition.is_leader):
        return -1
    leader = ReplicaView(partition.broker_id, rack_of(partition.broker_id),
                         partition.log_end_offset)
    # a follower that has not fetched since this leadership began has no known log end
    # (Kafka's UnknownOffset): it covers no offset
    followers = [(ReplicaView(broker_id, rack_of(broker_id),
                              state.log_end_offset if state.log_start_offset >= 0 else -1,
                              now_ms - state.last_caught_up_ms), state.log_start_offset)
                 for broker_id, state in partition.followers.items()]
    return preferred_read_replica(selector, params.client_rack, leader, followers, fetch_offset)


def replica_selector(class_name: str | None) -> Selector | None:
    """The selector ``replica.selector.class`` names (None: Kafka's default, the leader serves).
    Any class other than RackAwareReplicaSelector is refused (Kafka fails to start when it
    cannot load the class)."""
    if class_name is None:
        return None
    if class_name == RACK_AWARE_SELECTOR:
        return rack_aware_select
    raise ConfigError(f"replica.selector.class: cannot load {class_name!r}; kafkalite offers "
                      f"{RACK_AWARE_SELECTOR} only (or no value: consumers read from leaders)")
