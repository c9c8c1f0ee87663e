"""Brokers joining, leaving and shutting down (KafkaController's onBrokerStartup, onBrokerFailure
and controlled shutdown), as events on the controller's queue.

- **Change** of ``/brokers/ids``: new, dead and bounced brokers (a bounced broker re-registered with
  a new epoch: its old process is gone). Their channels are dropped, deletions they were asked for
  are failed, then failure and startup handling run.
- **Failure**: partitions the dead brokers led go Offline and get leaders (the offline election:
  first live ISR member in assignment order; unclean only when the topic or the broker default
  allows it); the dead replicas go OfflineReplica (leaving the ISRs they were in); LeaderAndIsr to
  the replicas of the partitions that changed and UpdateMetadata to every broker.
- **Startup**: UpdateMetadata to every broker, the new brokers' replicas go OnlineReplica
  (LeaderAndIsr), partitions without a live leader get one, and pending deletions resume.
- **Controlled shutdown** (a broker asks before stopping): leadership moves off it, it leaves the
  ISRs it follows in, every broker hears of it, then it stops following (StopReplica).
"""

from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalite import errors
from kafkalite.controller.partition_state_machine import CONTROLLED_SHUTDOWN, NO_LEADER
from kafkalite.controller.state_machines import PartitionState as PS, ReplicaState as RS
from kafkalite.protocol import messages as m

log = logging.getLogger(__name__)


class BrokerChanges:
    def __init__(self, controller):
        self.controller = controller

    def _replicas_on(self, brokers) -> list:
        """The replicas on ``brokers``, without those of topics being deleted that are deleted
        already (or being deleted): the deletion manager owns them."""
        c = self.controller
        rsm = c.replica_state_machine
        return [r for r in c.context.replicas_of(c.context.partitions(), set(brokers))
                if not (r[0] in c.context.topics_to_delete
                        and rsm.state(r) in (RS.DELETION_STARTED, RS.DELETION_SUCCESSFUL))]

    @defer.inlineCallbacks
    def on_broker_change(self, children):
        """Event: the children of ``/brokers/ids`` changed."""
        c = self.controller
        registrations = yield c.controller_zk.get_brokers()
        known = c.context.live_brokers
        new = [b for b in registrations if b not in known]
        dead = [b for b in known if b not in registrations]
        bounced = [b for b in registrations if b in known
                   and registrations[b].broker_epoch != known[b].broker_epoch]
        if not (new or dead or bounced):
            return
        log.info("controller: brokers joined %s, left %s, bounced %s", new, dead, bounced)
        for broker_id in dead + bounced:
            c.channels.remove_broker(broker_id)
        c.topic_deletion.fail_replicas_on(dead + bounced)
        c.context.live_brokers = dict(registrations)
        c.context.shutting_down -= set(dead + bounced)
        if dead:
            yield self.on_broker_failure(dead)
        if new or bounced:
            yield self.on_broker_startup(new + bounced)

    @defer.inlineCallbacks
    def on_broker_startup(self, brokers):
        c = self.controller
        context = c.context
        for broker_id in brokers:
            c.channels.add_broker(broker_id, *context.endpoint(broker_id))
        live = sorted(context.live_brokers)
        c.requests.update_metadata(live)
        yield c.replica_state_machine.handle_state_changes(self._replicas_on(brokers), RS.ONLINE)
        offline = [tp for tp in context.partitions()
                   if context.states.get(tp) is None
                   or context.states[tp].leader not in context.live_brokers]
        changed = yield c.partition_state_machine.handle_state_changes(offline, PS.ONLINE)
        if changed:
            c.requests.leader_and_isr(changed, live)
            c.requests.update_metadata(live, changed)
        if context.topics_to_delete:
            yield c.topic_deletion.resume()

    @defer.inlineCallbacks
    def on_broker_failure(self, dead):
        c = self.controller
        context = c.context
        dead_set = set(dead)
        # leaders change ISRs on their own (announced in batches): decide on fresh states
        touched = [tp for tp in context.partitions() if dead_set & set(context.replicas(tp))]
        if touched:
            fresh = yield c.controller_zk.get_partition_states(touched)
            context.states.update(fresh)
        psm = c.partition_state_machine
        led = [tp for tp, state in context.states.items() if state.leader in dead_set]
        yield psm.handle_state_changes(led, PS.OFFLINE)
        changed = yield psm.handle_state_changes(led, PS.ONLINE)
        changed += (yield c.replica_state_machine.handle_state_changes(
            self._replicas_on(dead_set), RS.OFFLINE, skip_isr=set(changed)))
        live = sorted(context.live_brokers)
        if changed:
            c.requests.leader_and_isr(changed, live)
        c.requests.update_metadata(live, changed)

    # --- controlled shutdown ----------------------------------------------------------------------
    @defer.inlineCallbacks
    def controlled_shutdown(self, broker_id: int, broker_epoch: int):
        """Event: ``broker_id`` asks to shut down; answers ControlledShutdownResponse with the
        partitions it still leads."""
        c = self.controller
        context = c.context
        registration = context.live_brokers.get(broker_id)
        if registration is None:
            raise errors.BrokerNotAvailableError(f"broker {broker_id} is not live")
        # Kafka lets a request without an epoch (-1) through; kafkalite's brokers always send
        # their registration's, so anything else is refused (a forged shutdown would move every
        # leadership away from a healthy broker)
        if broker_epoch != registration.broker_epoch:
            raise errors.StaleBrokerEpochError(
                f"broker {broker_id} epoch {broker_epoch} is not the registered "
                f"{registration.broker_epoch}")
        context.shutting_down.add(broker_id)
        led = [tp for tp, s in context.states.items()
               if s.leader == broker_id and len(context.replicas(tp)) > 1]
        changed = yield c.partition_state_machine.handle_state_changes(
            led, PS.ONLINE, strategy=CONTROLLED_SHUTDOWN)
        # the replicas it follows go offline: they leave the ISR now, so acks=all does not
        # wait for them
        following = [tp for tp, s in context.states.items()
                     if s.leader not in (broker_id, NO_LEADER)
                     and broker_id in context.replicas(tp)]
        changed += (yield c.replica_state_machine.handle_state_changes(
            [(t, p, broker_id) for t, p in following], RS.OFFLINE, skip_isr=set(changed)))
        live = sorted(context.live_brokers)
        if changed:
            c.requests.leader_and_isr(changed, live)
            c.requests.update_metadata(live, changed)
        # then the broker stops following, so its leaders do not take it back into the ISR
        if following:
            c.requests.stop_replica(broker_id, following, delete=False)
        remaining = [m.TopicPartition(t, p) for (t, p), s in context.states.items()
                     if s.leader == broker_id]
        log.info("controller: controlled shutdown of broker %d: moved %d, %d remain", broker_id,
                 len(changed), len(remaining))
        return m.ControlledShutdownResponse(remaining_partitions=remaining)
