"""The requests the controller sends to brokers (Kafka's ControllerBrokerRequestBatch): LeaderAndIsr
to replicas, UpdateMetadata to every broker, StopReplica to replicas that stop (or are deleted).

Each request carries the controller's id and epoch and the receiving broker's epoch, and holds the
partition states as the controller's context has them when it is built. Requests go out through
the controller's channel manager, in order per broker; only live brokers are sent anything.
"""

from __future__ import annotations

from kafkalite.protocol import messages as m

LEADER_DURING_DELETE = -2


class ControllerRequests:
    def __init__(self, controller):
        self.controller = controller

    @property
    def _context(self):
        return self.controller.context

    def _header(self, broker_id: int) -> dict:
        c = self.controller
        return dict(controller_id=c.broker_id, controller_epoch=c.epoch,
                    broker_epoch=self._context.live_brokers[broker_id].broker_epoch or -1)

    def _partition_state_entries(self, tps, cls):
        context = self._context
        entries = []
        for tp in tps:
            state = context.states.get(tp)
            if state is None:
                continue
            replicas = list(context.replicas(tp))
            common = dict(topic=tp[0], partition=tp[1], controller_epoch=state.controller_epoch,
                          leader=state.leader, leader_epoch=state.leader_epoch,
                          isr=list(state.isr), zk_version=state.zk_version or 0,
                          replicas=replicas)
            if cls is m.UpdateMetadataPartitionState:
                common["offline_replicas"] = [b for b in replicas
                                              if b not in context.live_brokers]
                common["topic_id"] = context.topic_ids.get(tp[0])
            entries.append(cls(**common))
        return entries

    def leader_and_isr(self, tps, brokers) -> None:
        """LeaderAndIsr to every live replica in ``brokers`` of the partitions ``tps``."""
        brokers = set(brokers)
        self.leader_and_isr_to_replicas(
            [r for r in self._context.replicas_of(tps) if r[2] in brokers])

    def leader_and_isr_to_replicas(self, replicas) -> None:
        """LeaderAndIsr to each live replica ``(topic, partition, broker)``: one request per
        broker with all of its partitions."""
        context = self._context
        by_broker: dict[int, list] = {}
        for topic, partition, broker_id in replicas:
            if broker_id in context.live_brokers:
                by_broker.setdefault(broker_id, []).append((topic, partition))
        leaders = []
        for broker_id in sorted(context.live_brokers):
            host, port = context.endpoint(broker_id)
            leaders.append(m.LeaderAndIsrLiveLeader(broker_id, host, port))
        for broker_id, broker_tps in by_broker.items():
            request = m.LeaderAndIsrRequest(
                **self._header(broker_id),
                partition_states=self._partition_state_entries(broker_tps,
                                                               m.LeaderAndIsrPartitionState),
                live_leaders=leaders)
            self.controller.channels.send_quietly(broker_id, request)

    def update_metadata(self, brokers, tps=None, deleting=()) -> None:
        """UpdateMetadata to the live brokers among ``brokers``: the states of ``tps`` (every
        partition when None) and, for ``deleting``, leader -2 (a topic being deleted)."""
        context = self._context
        tps = context.partitions() if tps is None else tps
        states = self._partition_state_entries(tps, m.UpdateMetadataPartitionState)
        for tp in deleting:
            states.append(m.UpdateMetadataPartitionState(
                topic=tp[0], partition=tp[1], controller_epoch=self.controller.epoch,
                leader=LEADER_DURING_DELETE, leader_epoch=-1, isr=[], zk_version=0,
                replicas=[], offline_replicas=[]))
        live = []
        for broker_id, registration in sorted(context.live_brokers.items()):
            host, port = context.endpoint(broker_id)
            live.append(m.UpdateMetadataBroker(broker_id, host, port, registration.rack,
                                               list(registration.endpoints)))
        for broker_id in brokers:
            if broker_id not in context.live_brokers:
                continue
            request = m.UpdateMetadataRequest(**self._header(broker_id),
                                              partition_states=states, live_brokers=live)
            self.controller.channels.send_quietly(broker_id, request)

    def stop_replica(self, broker_id: int, tps, delete: bool, wait: bool = False):
        """StopReplica of ``tps`` to a live broker (nothing to a dead one). With ``wait``, the
        Deferred of the answer (failing when the broker is gone); else failures are logged."""
        if broker_id not in self._context.live_brokers:
            return None
        request = m.StopReplicaRequest(**self._header(broker_id), delete_partitions=delete,
                                       partitions=[m.TopicPartition(t, p) for t, p in tps])
        if wait:
            return self.controller.channels.send(broker_id, request)
        self.controller.channels.send_quietly(broker_id, request)
        return None
