"""The controller's reaction to a broker's failed log dir (Kafka's LogDirEventNotification handling,
onBrokerLogDirFailure and onReplicasBecomeOffline), as events on the controller's queue.

1. **Notification**: a child of ``/log_dir_event_notification`` names a broker whose log dir
   failed. The controller reads and deletes the notifications (fenced) and asks each named live
   broker about all of its replicas with a LeaderAndIsr of their current states.
2. **Answer**: the replicas answered KAFKA_STORAGE_ERROR are in the offline dir. Partitions that
   broker led get a leader elected among the *other* live in-sync replicas (the offline election;
   unclean only where allowed), with the broker out of the ISR; no eligible replica leaves the
   partition offline (leader -1, the ISR keeping its last member). The offline replicas of the
   partitions it follows go OfflineReplica (they leave the ISR). LeaderAndIsr then goes to the
   replicas of every partition that changed, and UpdateMetadata to every broker.

The broker's other replicas answered as usual: they stay online. When the broker restarts (a new
broker epoch), the usual broker startup brings its replicas back; they catch up and rejoin the ISR.
An answer from a broker that has bounced since the question was asked is ignored.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from twisted.internet import defer

import zk_schema

from kafkalite.controller import election
from kafkalite.controller.state_machines import PartitionState as PS, ReplicaState as RS
from kafkalite.errors import KafkaStorageError
from kafkalite.protocol import messages as m
from kafkalite.zk.log_dir_events import (delete_log_dir_event_notifications,
                                         get_log_dir_event_notifications)

log = logging.getLogger(__name__)

NO_LEADER = -1


class LogDirEvents:
    #: the watch the controller registers when it becomes controller
    PATH = zk_schema.LOG_DIR_EVENT_NOTIFICATION_PATH

    def __init__(self, controller):
        self.controller = controller

    @defer.inlineCallbacks
    def on_notification(self, children):
        """Event: the children of ``/log_dir_event_notification`` changed."""
        if not children:
            return
        c = self.controller
        notes = yield c.deferred_zk.run(get_log_dir_event_notifications, c.zk)
        brokers = sorted({note.broker_id for note in notes.values()})
        try:
            if brokers:
                self.on_broker_log_dir_failure(brokers)
        finally:
            yield c.deferred_zk.run(delete_log_dir_event_notifications, c.zk, list(notes), c.fence())

    def on_broker_log_dir_failure(self, brokers) -> None:
        """Ask each broker (LeaderAndIsr of all its replicas) which of them are offline; the
        answers come back as events (``on_answer``)."""
        c = self.controller
        context = c.context
        log.info("controller: log dir failure on broker(s) %s; asking for offline replicas",
                 brokers)
        leaders = [m.LeaderAndIsrLiveLeader(b, *context.endpoint(b))
                   for b in sorted(context.live_brokers)]
        for broker_id in brokers:
            registration = context.live_brokers.get(broker_id)
            if registration is None:
                continue    # gone: broker failure handling moves its leadership
            tps = [tp for tp in context.partitions()
                   if broker_id in context.replicas(tp) and tp in context.states
                   and tp[0] not in context.topics_to_delete]
            if not tps:
                continue
            request = m.LeaderAndIsrRequest(
                controller_id=c.broker_id, controller_epoch=c.epoch,
                broker_epoch=registration.broker_epoch or -1,
                partition_states=c.requests._partition_state_entries(
                    tps, m.LeaderAndIsrPartitionState),
                live_leaders=leaders)
            d = c.channels.send(broker_id, request)
            d.addCallbacks(c.event_callback(self.on_answer, broker_id, registration.broker_epoch),
                           lambda f, b=broker_id: log.info(
                               "controller: broker %d did not answer about its offline replicas:"
                               " %s", b, f.getErrorMessage()))

    @defer.inlineCallbacks
    def on_answer(self, broker_id: int, broker_epoch, response):
        """Event: the broker's answer; its KAFKA_STORAGE_ERROR partitions are offline."""
        c = self.controller
        registration = c.context.live_brokers.get(broker_id)
        if registration is None or registration.broker_epoch != broker_epoch:
            return      # dead or restarted since: its dirs came back with it
        if response.error_code:
            log.warning("controller: broker %d refused the LeaderAndIsr about its offline "
                        "replicas: error %d", broker_id, response.error_code)
            return
        offline = sorted({(e.topic, e.partition) for e in response.partition_errors
                          if e.error_code == KafkaStorageError.code})
        if offline:
            yield self.on_replicas_offline(broker_id, offline)

    @defer.inlineCallbacks
    def on_replicas_offline(self, broker_id: int, tps):
        c = self.controller
        context = c.context
        log.warning("controller: replicas of %s on broker %d are in an offline log dir",
                    ", ".join(f"{t}-{p}" for t, p in tps), broker_id)
        fresh = yield c.controller_zk.get_partition_states(tps)
        context.states.update(fresh)
        led = [tp for tp in tps if tp in context.states
               and context.states[tp].leader == broker_id]
        changed = yield self._elect_without(broker_id, led)
        changed += (yield c.replica_state_machine.handle_state_changes(
            [(t, p, broker_id) for t, p in tps], RS.OFFLINE, skip_isr=set(changed)))
        live = sorted(context.live_brokers)
        if changed:
            c.requests.leader_and_isr(changed, live)
        c.requests.update_metadata(live, changed)

    @defer.inlineCallbacks
    def _elect_without(self, broker_id: int, tps):
        """New leaders for ``tps``, which ``broker_id`` leads from an offline dir: the offline
        election over the other live replicas, ``broker_id`` out of the ISR."""
        c = self.controller
        context = c.context
        psm = c.partition_state_machine
        live = context.live_ids() - {broker_id}
        updates = {}
        for tp in tps:
            state = context.states[tp]
            isr = tuple(b for b in state.isr if b != broker_id)
            result = election.offline_election(context.replicas(tp), isr, live,
                                               psm.unclean_allowed(tp[0]))
            if result is None:
                log.warning("controller: %s-%d has no eligible leader besides broker %d "
                            "(ISR %s); it is offline", tp[0], tp[1], broker_id, list(state.isr))
                updates[tp] = replace(state, leader=NO_LEADER,
                                      leader_epoch=state.leader_epoch + 1,
                                      controller_epoch=c.epoch, isr=isr or state.isr)
                continue
            if result.unclean:
                log.warning("controller: UNCLEAN election of %d for %s-%d: records not on it "
                            "are lost", result.leader, tp[0], tp[1])
            updates[tp] = replace(state, leader=result.leader,
                                  leader_epoch=state.leader_epoch + 1,
                                  controller_epoch=c.epoch, isr=result.isr)
        if not updates:
            return []
        written = yield c.write_partition_states(updates)
        leaderless = [tp for tp in written if context.states[tp].leader == NO_LEADER]
        if leaderless:
            yield psm.handle_state_changes(leaderless, PS.OFFLINE)
        for tp in written:
            if tp not in leaderless:
                log.info("controller: %s-%d now led by %d (broker %d's log dir failed)",
                         tp[0], tp[1], context.states[tp].leader, broker_id)
        return list(written)
