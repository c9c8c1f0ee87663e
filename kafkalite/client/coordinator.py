"""The seam between a Consumer and group membership.

A *coordinator* decides which partitions a subscribed consumer owns and where committed offsets
live. The consumer calls it from its own thread only:

* ``subscribe(topics, listener)`` / ``unsubscribe()`` when the subscription changes;
* ``poll(cluster)`` at every ``Consumer.poll``: returns the set of ``TopicPartition`` the member
  should own now, or None when nothing changed. Before taking partitions away a coordinator calls
  ``listener.on_partitions_revoked(revoked)`` (the consumer commits their positions there) and
  after a change ``listener.on_partitions_assigned(assigned)``;
* ``committed(tps)`` -> ``{tp: OffsetAndMetadata | None}`` and ``commit({tp: OffsetAndMetadata})``;
* ``close()``.

``make_coordinator`` picks one of the two generations of Kafka's consumer groups (DESIGN
section 9) from a consumer's settings:

* ``group_id`` alone: the brokers' group coordinator (Kafka 0.9+, what every Kafka client uses):
  ``broker_coordinator.BrokerCoordinator``;
* ``group_id`` with ``zookeeper``: Kafka 0.8's ZooKeeper groups (``/consumers/<g>/ids``, owners,
  offsets): ``zk_coordinator.ZooKeeperCoordinator``;
* no ``group_id``: ``InMemoryCoordinator``, a group of one: the member owns every partition of
  its subscribed topics and commits live in memory for the consumer's lifetime.
"""

from __future__ import annotations

from typing import Iterable

from kafkalite import errors
from kafkalite.client.structs import OffsetAndMetadata, TopicPartition

__all__ = ["Coordinator", "InMemoryCoordinator", "consumer_group_options", "make_coordinator"]


class Coordinator:
    """Interface (and no-op defaults) of a consumer's group coordinator."""

    group_id: str | None = None

    def subscribe(self, topics: set[str], listener) -> None:
        raise NotImplementedError

    def unsubscribe(self) -> None:
        raise NotImplementedError

    def poll(self, cluster) -> set[TopicPartition] | None:
        raise NotImplementedError

    def committed(self, tps: Iterable[TopicPartition]) -> dict:
        raise NotImplementedError

    def commit(self, offsets: dict) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class InMemoryCoordinator(Coordinator):
    """A group of one: every partition of the subscribed topics; commits kept in memory."""

    def __init__(self, group_id: str | None = None):
        self.group_id = group_id
        self._topics: set[str] = set()
        self._listener = None
        self._owned: set[TopicPartition] = set()
        self._version = -1
        self._offsets: dict[TopicPartition, OffsetAndMetadata] = {}

    def subscribe(self, topics: set[str], listener) -> None:
        self._topics = set(topics)
        self._listener = listener
        self._version = -1

    def unsubscribe(self) -> None:
        if self._owned and self._listener is not None:
            self._listener.on_partitions_revoked(set(self._owned))
        self._topics = set()
        self._owned = set()
        self._version = -1

    def poll(self, cluster) -> set[TopicPartition] | None:
        if cluster.version == self._version:
            return None
        self._version = cluster.version
        snap = cluster.snapshot
        wanted = {TopicPartition(t, p) for t in self._topics
                  for p in snap.partition_ids.get(t, ())}
        # a topic missing from one answer keeps its partitions, unless it no longer exists
        gone = errors.UnknownTopicOrPartitionError.code
        for tp in self._owned:
            if (tp.topic in self._topics and tp.topic not in snap.topics
                    and snap.topic_errors.get(tp.topic) != gone):
                wanted.add(tp)
        if wanted == self._owned:
            return None
        revoked = self._owned - wanted
        if revoked and self._listener is not None:
            self._listener.on_partitions_revoked(revoked)
        self._owned = wanted
        if self._listener is not None:
            self._listener.on_partitions_assigned(set(wanted))
        return set(wanted)

    def committed(self, tps: Iterable[TopicPartition]) -> dict:
        return {TopicPartition(*tp): self._offsets.get(TopicPartition(*tp)) for tp in tps}

    def commit(self, offsets: dict) -> None:
        for tp, om in offsets.items():
            if not isinstance(om, OffsetAndMetadata):
                om = OffsetAndMetadata(int(om), "")
            self._offsets[TopicPartition(*tp)] = om


def make_coordinator(group_id: str | None, zookeeper=None, **options) -> Coordinator:
    """The coordinator for a consumer's ``group_id``/``zookeeper`` settings: ZooKeeper group
    membership when both are given, the brokers' group coordinator for a ``group_id`` alone
    (``options`` are BrokerCoordinator's: ``cluster`` or ``bootstrap_servers``, ``assignors``,
    timeouts), a group of one (offsets in memory) without a group."""
    if zookeeper is not None and group_id is not None:
        from kafkalite.client.zk_coordinator import ZooKeeperCoordinator

        return ZooKeeperCoordinator(group_id, zookeeper, **options)
    if group_id is not None:
        from kafkalite.client.broker_coordinator import BrokerCoordinator

        return BrokerCoordinator(group_id, **options)
    return InMemoryCoordinator(group_id)


def consumer_group_options(group_id, zookeeper, cluster, client_id: str, strategy,
                           session_timeout_ms: int | None, heartbeat_interval_ms: int,
                           max_poll_interval_ms: int, group_instance_id: str | None,
                           request_timeout_ms: int, retry_backoff_ms: int,
                           default_api_timeout_ms: int, rebalance_max_retries: int,
                           rebalance_backoff_ms: int, rebalance_debounce_ms: int) -> dict:
    """``make_coordinator``'s options from a Consumer's settings (kafka-python's names): the
    ZooKeeper kind's, the broker kind's, or none without a group. The session timeouts default
    as each generation's did: 6 s for ZooKeeper groups, 10 s for the brokers' coordinator."""
    if isinstance(strategy, str):
        strategy = (strategy,)
    if group_id is None:
        return {}
    if zookeeper is not None:
        return dict(assignor=strategy[0],
                    session_timeout_ms=6000 if session_timeout_ms is None else session_timeout_ms,
                    rebalance_max_retries=rebalance_max_retries,
                    rebalance_backoff_ms=rebalance_backoff_ms,
                    rebalance_debounce_ms=rebalance_debounce_ms, client_id=client_id)
    return dict(cluster=cluster, client_id=client_id, assignors=strategy,
                session_timeout_ms=10000 if session_timeout_ms is None else session_timeout_ms,
                heartbeat_interval_ms=heartbeat_interval_ms,
                max_poll_interval_ms=max_poll_interval_ms, group_instance_id=group_instance_id,
                request_timeout_ms=request_timeout_ms, retry_backoff_ms=retry_backoff_ms,
                default_api_timeout_ms=default_api_timeout_ms)
