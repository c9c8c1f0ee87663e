"""What the controller knows of the cluster (Kafka's ControllerContext).

Loaded from ZooKeeper when a broker becomes controller and kept current by the controller's events
(only ever touched on the controller's serial event queue). The partition and replica state
machines keep their own states; this is the metadata they act on.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ControllerContext:
    """Everything the controller knows, loaded from ZooKeeper at failover and kept current."""
    live_brokers: dict = field(default_factory=dict)        # id -> BrokerRegistration
    assignments: dict = field(default_factory=dict)         # topic -> {partition: (replicas)}
    states: dict = field(default_factory=dict)              # (topic, p) -> ZkPartitionState
    topics_to_delete: set = field(default_factory=set)
    shutting_down: set = field(default_factory=set)
    reassignments: dict = field(default_factory=dict)      # (topic, p) -> target replicas
    # a reassigning partition's replicas being added and removed (KIP-455; persisted in the
    # topic znode's adding_replicas / removing_replicas, so a new controller resumes them)
    adding: dict = field(default_factory=dict)              # (topic, p) -> replicas
    removing: dict = field(default_factory=dict)            # (topic, p) -> replicas
    topic_ids: dict = field(default_factory=dict)           # topic -> topic_id
    unclean_topics: set = field(default_factory=set)        # topics overriding unclean election
    clean_topics: set = field(default_factory=set)
    listener_name: str = "PLAINTEXT"   # the inter-broker listener

    def partitions(self, topic: str | None = None):
        topics = [topic] if topic is not None else list(self.assignments)
        return [(t, p) for t in topics for p in sorted(self.assignments.get(t, {}))]

    def replicas(self, tp) -> tuple[int, ...]:
        return tuple(self.assignments.get(tp[0], {}).get(tp[1], ()))

    def replicas_of(self, tps, brokers=None) -> list[tuple[str, int, int]]:
        """``(topic, partition, broker)`` of every replica of ``tps`` (on ``brokers`` only, when
        given), in assignment order."""
        return [(t, p, b) for t, p in tps for b in self.replicas((t, p))
                if brokers is None or b in brokers]

    def live_ids(self) -> set[int]:
        return set(self.live_brokers) - self.shutting_down

    def endpoint(self, broker_id: int) -> tuple[str, int]:
        registration = self.live_brokers[broker_id]
        return registration.endpoint(self.listener_name) or (registration.host,
                                                             registration.port)
