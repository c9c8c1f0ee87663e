"""Topic deletion (Kafka's TopicDeletionManager).

An admin marks a topic with ``/admin/delete_topics/<t>``; the controller's watch on that znode's
children queues the topic here. A queued topic's partitions are skipped by leader elections. Its
deletion starts once every replica that still has to go is on a live broker (until then it waits,
"ineligible"):

1. UpdateMetadata tells every broker the topic is being deleted (leader -2);
2. its replicas go OfflineReplica, then ReplicaDeletionStarted: StopReplica with deletion to each
   broker, one request per broker;
3. each answer is an event on the controller's queue: the broker's replicas go
   ReplicaDeletionSuccessful, or ReplicaDeletionIneligible when the request failed (the broker
   died or was removed); ineligible replicas are retried when brokers change;
4. when every replica is ReplicaDeletionSuccessful, the topic's znodes go in one fenced transaction
   (assignment, partition states, config, marker), its replicas become NonExistentReplica and its
   partitions Offline then NonExistentPartition, and the controller forgets the topic.

The controller's queue never waits for a broker's answer: answers arrive as events.
"""

from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalite.controller.state_machines import PartitionState as PS, ReplicaState as RS

log = logging.getLogger(__name__)


class TopicDeletionManager:
    def __init__(self, controller):
        self.controller = controller

    def is_queued(self, topic: str) -> bool:
        return topic in self.controller.context.topics_to_delete

    # --- the watch on /admin/delete_topics --------------------------------------------------------
    @defer.inlineCallbacks
    def on_deletion_markers(self, children):
        """Event: the topics marked for deletion changed."""
        c = self.controller
        marked = set(children or ())
        unknown = [t for t in marked if t not in c.context.assignments]
        for topic in unknown:
            yield c.controller_zk.remove_topic_deletion_marker(topic)
        topics = sorted(marked - set(unknown))
        if not topics:
            return
        if not c.config.delete_topic_enable:
            log.warning("controller: delete.topic.enable is false; ignoring deletion of %s",
                        topics)
            for topic in topics:
                yield c.controller_zk.remove_topic_deletion_marker(topic)
            return
        yield self.enqueue(topics)

    def enqueue(self, topics) -> defer.Deferred:
        """Queue ``topics`` for deletion and start what can start."""
        self.controller.context.topics_to_delete |= set(topics)
        return self.resume(topics)

    # --- progress ---------------------------------------------------------------------------------
    @defer.inlineCallbacks
    def resume(self, topics=None):
        """Start (or restart) the deletion of queued topics whose remaining replicas are all on
        live brokers, and finish those whose replicas are all deleted. Deletions under way (a
        replica in ReplicaDeletionStarted) are left to their answers."""
        c = self.controller
        context = c.context
        rsm = c.replica_state_machine
        for topic in sorted(context.topics_to_delete if topics is None else topics):
            if topic not in context.topics_to_delete:
                continue
            replicas = context.replicas_of(context.partitions(topic))
            if rsm.in_state(replicas, RS.DELETION_STARTED):
                continue
            todo = [r for r in replicas if rsm.state(r) != RS.DELETION_SUCCESSFUL]
            if not todo:
                yield self._complete(topic)
                continue
            offline = sorted({b for _t, _p, b in todo if b not in context.live_brokers})
            if offline:
                log.info("controller: deletion of %s waits for broker(s) %s (ineligible)", topic,
                         offline)
                continue
            yield self._start(topic, todo)

    @defer.inlineCallbacks
    def _start(self, topic: str, replicas):
        c = self.controller
        log.info("controller: deleting topic %s", topic)
        c.requests.update_metadata(sorted(c.context.live_brokers), [],
                                   deleting=c.context.partitions(topic))
        rsm = c.replica_state_machine
        # the partition states stay as they are until the znodes go: no ISR writes here
        yield rsm.handle_state_changes(replicas, RS.OFFLINE, shrink_isr=False)
        yield rsm.handle_state_changes(
            replicas, RS.DELETION_STARTED,
            on_response=c.event_callback(self.on_stop_replica_response, topic))

    @defer.inlineCallbacks
    def on_stop_replica_response(self, topic: str, broker_id: int, tps, deleted: bool):
        """Event: broker ``broker_id`` answered the StopReplica (deletion) of ``tps``, or the
        request failed (``deleted`` False)."""
        c = self.controller
        if not self.is_queued(topic):
            return
        rsm = c.replica_state_machine
        replicas = rsm.in_state([(t, p, broker_id) for t, p in tps], RS.DELETION_STARTED)
        if not replicas:
            return
        if not deleted:
            log.warning("controller: broker %d did not confirm the deletion of %s; retrying "
                        "when brokers change", broker_id, topic)
            yield rsm.handle_state_changes(replicas, RS.DELETION_INELIGIBLE)
            return
        yield rsm.handle_state_changes(replicas, RS.DELETION_SUCCESSFUL)
        everything = c.context.replicas_of(c.context.partitions(topic))
        if all(rsm.state(r) == RS.DELETION_SUCCESSFUL for r in everything):
            yield self._complete(topic)

    def fail_replicas_on(self, brokers) -> None:
        """Brokers went away (or came back as new processes): deletions they were asked for will
        not be answered; their replicas become ineligible, to be retried."""
        c = self.controller
        rsm = c.replica_state_machine
        for topic in sorted(c.context.topics_to_delete):
            replicas = rsm.in_state(c.context.replicas_of(c.context.partitions(topic), brokers),
                                    RS.DELETION_STARTED)
            if replicas:
                rsm.handle_state_changes(replicas, RS.DELETION_INELIGIBLE)

    @defer.inlineCallbacks
    def _complete(self, topic: str):
        c = self.controller
        yield c.controller_zk.delete_topic_znodes(topic)
        tps = c.context.partitions(topic)
        yield c.replica_state_machine.handle_state_changes(c.context.replicas_of(tps),
                                                           RS.NON_EXISTENT)
        psm = c.partition_state_machine
        yield psm.handle_state_changes([tp for tp in tps if psm.state(tp) != PS.OFFLINE],
                                       PS.OFFLINE)
        yield psm.handle_state_changes(tps, PS.NON_EXISTENT)
        c.forget_topic(topic)
        log.info("controller: topic %s deleted", topic)
