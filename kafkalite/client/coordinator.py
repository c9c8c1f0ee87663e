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

``coordinator_factory.make_coordinator`` picks one from a consumer's settings: the brokers'
(``broker_coordinator``), a ZooKeeper group's (``zk_coordinator``), or this module's
``InMemoryCoordinator``, a group of one: the member owns every partition of its subscribed topics
and commits live in memory for the consumer's lifetime.
"""

from __future__ import annotations

from typing import Iterable

from kafkalite import errors
from kafkalite.client.structs import OffsetAndMetadata, TopicPartition

__all__ = ["Coordinator", "InMemoryCoordinator"]


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
