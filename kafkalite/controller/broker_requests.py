"""The requests the controller sends to brokers (Kafka's ControllerBrokerRequestBatch): LeaderAndIsr
to replicas, UpdateMetadata to every broker, StopReplica to replicas that stop (or are deleted).

Each request carries the controller's id and epoch and the receiving broker's epoch, and holds the
partition states as the controller's context has them when it is built. Requests go out through
the controller's channel manager, in order per broker; only live brokers are sent anything.

A LeaderAndIsr the broker could not apply (it answered an error for the whole request or for some
partitions, e.g. its topic config could not be read from ZooKeeper while it restarted) is sent
again, with the context's state at that time, after a backoff that doubles up to
``LEADER_AND_ISR_RESEND_MAX_S``, and every failure is logged as a warning. Kafka's controller only
logs such an answer, but the UpdateMetadata queued behind it has already advertised the
partition: its leader would then answer "does not host" until some other event re-sent the state
(issue 24, bug 2). No resend where it cannot help or another path heals it: the broker holds
that leader epoch already (STALE_CONTROLLER_EPOCH), the request was for an old registration of
the broker or from a deposed controller (the bounce or the failover re-sends everything), an
offline log dir (KAFKA_STORAGE_ERROR: the log-dir event moves the leadership), or the channel
was dropped (the broker died or the controller resigned).
"""

from __future__ import annotations

import logging

from kafkalite import errors
from kafkalite.protocol import messages as m

log = logging.getLogger(__name__)

LEADER_DURING_DELETE = -2
LEADER_AND_ISR_RESEND_S = 0.5          # first resend of a LeaderAndIsr the broker failed
LEADER_AND_ISR_RESEND_MAX_S = 30.0
# answers after which a resend cannot help or another path re-sends the state
NO_RESEND = frozenset({0, errors.StaleControllerEpochError.code,
                       errors.StaleBrokerEpochError.code, errors.NotControllerError.code,
                       errors.KafkaStorageError.code})


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
        leaders = self._live_leaders()
        for broker_id, broker_tps in by_broker.items():
            self._send_leader_and_isr(broker_id, broker_tps, leaders, attempt=0)

    def _live_leaders(self):
        context = self._context
        return [m.LeaderAndIsrLiveLeader(b, *context.endpoint(b))
                for b in sorted(context.live_brokers)]

    def _send_leader_and_isr(self, broker_id: int, tps, leaders, attempt: int) -> None:
        request = m.LeaderAndIsrRequest(
            **self._header(broker_id),
            partition_states=self._partition_state_entries(tps, m.LeaderAndIsrPartitionState),
            live_leaders=leaders)
        if not request.partition_states:
            return
        d = self.controller.channels.send(broker_id, request)
        d.addCallbacks(self._leader_and_isr_answered, self._leader_and_isr_failed,
                       callbackArgs=(broker_id, request, attempt),
                       errbackArgs=(broker_id, request, attempt))

    def _leader_and_isr_answered(self, response, broker_id, request, attempt) -> None:
        error = getattr(response, "error_code", 0) or 0
        if error:
            log.warning("broker %d answered LeaderAndIsr with error %d: %s", broker_id, error,
                        getattr(response, "error_message", ""))
            failed = [] if error in NO_RESEND else [
                (s.topic, s.partition) for s in request.partition_states]
            self._resend_later(broker_id, request, failed, f"error {error}", attempt)
            return
        failed = []
        for entry in getattr(response, "partition_errors", []) or []:
            if entry.error_code == errors.StaleControllerEpochError.code:
                # the broker holds that leader epoch already (a new controller resends what it
                # found): ignored there, as Kafka's brokers do
                log.debug("broker %d: %s-%d already at that leader epoch", broker_id,
                          entry.topic, entry.partition)
            elif entry.error_code:
                log.warning("broker %d: %s-%d error %d on LeaderAndIsr", broker_id,
                            entry.topic, entry.partition, entry.error_code)
                if entry.error_code not in NO_RESEND:
                    failed.append((entry.topic, entry.partition))
        self._resend_later(broker_id, request, failed, "partition errors", attempt)

    def _leader_and_isr_failed(self, failure, broker_id, request, attempt) -> None:
        if failure.check(errors.NetworkError) or self.controller.channels.closed:
            # the channel was dropped: the broker died or bounced (its startup re-sends the
            # state), or the controller resigned (the next one sends everything)
            (log.debug if self.controller.channels.closed else log.info)(
                "controller: LeaderAndIsr to broker %d dropped: %s", broker_id,
                failure.getErrorMessage())
            return
        log.warning("controller: broker %d failed LeaderAndIsr: %s", broker_id,
                    failure.getErrorMessage())
        failed = [(s.topic, s.partition) for s in request.partition_states]
        self._resend_later(broker_id, request, failed, failure.getErrorMessage(), attempt)

    def _resend_later(self, broker_id, request, failed, why, attempt) -> None:
        if not failed:
            return
        delay = min(LEADER_AND_ISR_RESEND_S * 2 ** attempt, LEADER_AND_ISR_RESEND_MAX_S)
        log.warning("controller: LeaderAndIsr of %s to broker %d not applied (%s); sending it "
                    "again in %.1f s (attempt %d)",
                    ", ".join(f"{t}-{p}" for t, p in failed), broker_id, why, delay, attempt + 2)
        self.controller.reactor.callLater(delay, self._resend, broker_id, request.broker_epoch,
                                          failed, attempt + 1)

    def _resend(self, broker_id, broker_epoch, tps, attempt) -> None:
        c = self.controller
        context = self._context
        registration = context.live_brokers.get(broker_id)
        if (not c.is_active or c.channels is None or c.channels.closed or registration is None
                or (registration.broker_epoch or -1) != broker_epoch):
            return   # resigned, or the broker died or bounced: those paths send the state
        tps = [tp for tp in tps if tp in context.states and broker_id in context.replicas(tp)]
        if tps:
            self._send_leader_and_isr(broker_id, tps, self._live_leaders(), attempt)

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
