"""What this broker knows of the cluster, as the controller last told it (UpdateMetadata).

Every broker answers Metadata requests from this cache, so clients can ask any broker where a
partition's leader is. The controller is the only writer; a request with an older controller epoch
is rejected by the caller before it gets here.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkalite.errors import LeaderNotAvailableError, NONE
from kafkalite.protocol import messages as m


@dataclass(frozen=True)
class BrokerEndpoint:
    id: int
    host: str
    port: int
    rack: str | None = None
    listeners: tuple = ()     # (name, host, port) per advertised listener

    def address(self, listener_name: str | None) -> tuple[str, int]:
        for name, host, port in self.listeners:
            if name == listener_name:
                return host, port
        return self.host, self.port


class MetadataCache:
    def __init__(self, broker_id: int):
        self.broker_id = broker_id
        self.controller_id = -1
        self.controller_epoch = -1
        self.brokers: dict[int, BrokerEndpoint] = {}
        self.partitions: dict[str, dict[int, m.UpdateMetadataPartitionState]] = {}
        self.generation = 0  # bumped on every update, so waiters can tell something changed

    def update(self, request: m.UpdateMetadataRequest) -> list[str]:
        """Apply an UpdateMetadata; returns topics that were deleted (leader -2, as Kafka)."""
        self.controller_id = request.controller_id
        self.controller_epoch = request.controller_epoch
        self.brokers = {b.id: BrokerEndpoint(b.id, b.host, b.port, b.rack,
                                             tuple(_parse_endpoint(e) for e in b.endpoints))
                        for b in request.live_brokers}
        deleted = []
        for state in request.partition_states:
            if state.leader == -2:  # LeaderDuringDelete: the topic is gone
                topic_parts = self.partitions.get(state.topic)
                if topic_parts is not None:
                    topic_parts.pop(state.partition, None)
                    if not topic_parts:
                        del self.partitions[state.topic]
                        deleted.append(state.topic)
                continue
            self.partitions.setdefault(state.topic, {})[state.partition] = state
        self.generation += 1
        return deleted

    def contains(self, topic: str) -> bool:
        return topic in self.partitions

    def contains_partition(self, topic: str, partition: int) -> bool:
        return partition in self.partitions.get(topic, {})

    def topics(self) -> list[str]:
        return sorted(self.partitions)

    def partition_count(self, topic: str) -> int:
        return len(self.partitions.get(topic, {}))

    def leader_of(self, topic: str, partition: int) -> int:
        state = self.partitions.get(topic, {}).get(partition)
        return -1 if state is None else state.leader

    def all_leaders_known(self, topic: str) -> bool:
        parts = self.partitions.get(topic)
        return bool(parts) and all(s.leader >= 0 and s.leader in self.brokers
                                   for s in parts.values())

    def topic_id(self, topic: str) -> str | None:
        """The topic's id as the controller sent it (None if unknown)."""
        for state in self.partitions.get(topic, {}).values():
            if state.topic_id:
                return state.topic_id
        return None

    def topic_metadata(self, topic: str) -> m.MetadataTopic:
        parts = []
        for pid, state in sorted(self.partitions[topic].items()):
            leader_live = state.leader in self.brokers
            error = NONE if leader_live else LeaderNotAvailableError.code
            parts.append(m.MetadataPartition(
                error_code=error, partition=pid, leader=state.leader if leader_live else -1,
                leader_epoch=state.leader_epoch, replicas=list(state.replicas),
                isr=list(state.isr),
                offline_replicas=[b for b in state.replicas if b not in self.brokers]))
        return m.MetadataTopic(NONE, topic, parts, self.topic_id(topic))

    def broker_list(self, listener_name: str | None = None) -> list[m.MetadataBroker]:
        return [m.MetadataBroker(b.id, *b.address(listener_name), b.rack)
                for b in sorted(self.brokers.values(), key=lambda b: b.id)]


def _parse_endpoint(text: str) -> tuple[str, str, int]:
    name, rest = text.split("://", 1)
    host, port = rest.rsplit(":", 1)
    return name, host, int(port)
