"""Partitions added to existing topics (Kafka's PartitionModifications controller event).

The controller watches the data of every topic's ``/brokers/topics/<t>``. An admin adds
partitions by rewriting that znode with more partitions (``ZkClient.add_partitions``); the watch
enqueues an event, and on the controller's serial queue this module compares the assignment with
the controller's context:

- partitions the context does not know yet are new: they enter the context and go through the
  same creation path as a new topic's partitions (New -> Online with a leader elected, then
  LeaderAndIsr to their replicas and UpdateMetadata to every broker);
- a topic queued for deletion gets its known assignment written back instead (Kafka restores it,
  so a deleted topic does not grow partitions nobody will create);
- anything else (the controller's own reassignment writes, a repeated value) changes nothing.
"""

from __future__ import annotations

import logging

from twisted.internet import defer

import zk_schema

log = logging.getLogger(__name__)


class PartitionModifications:
    """The per-topic data watches of one controller and the event handler behind them."""

    def __init__(self, controller):
        self.controller = controller
        self._watches: dict = {}       # topic -> ZkWatch
        self._generation = 0           # bumped by close(): late registrations are dropped

    @defer.inlineCallbacks
    def watch(self, topics):
        """Watch the assignment znode of each of ``topics`` (those not watched yet). The first
        delivery of each watch queues an event too; it finds nothing new unless partitions were
        added meanwhile."""
        c = self.controller
        generation = self._generation
        todo = [t for t in dict.fromkeys(topics) if t not in self._watches]
        results = yield defer.DeferredList(
            [c.controller_zk.watch_data(zk_schema.topic_path(topic),
                                        c.event_callback(self._handler_for(topic)))
             for topic in todo], consumeErrors=True)
        for topic, (ok, value) in zip(todo, results):
            if not ok and generation != self._generation:
                continue      # the controller resigned meanwhile (the watch was cancelled)
            if not ok:
                log.warning("controller: cannot watch the assignment of topic %s: %s", topic,
                            value.getErrorMessage())
                continue
            if generation != self._generation or topic in self._watches:
                value.cancel()     # the controller resigned (or the topic went) meanwhile
                continue
            self._watches[topic] = value

    def _handler_for(self, topic: str):
        def on_partition_modifications(data, zk_version):
            return self.on_change(topic, data, zk_version)
        return on_partition_modifications   # named: the event queue logs handlers by name

    def unwatch(self, topic: str) -> None:
        watch = self._watches.pop(topic, None)
        if watch is not None:
            watch.cancel()

    def close(self) -> None:
        """Cancel every watch (the controller resigned)."""
        self._generation += 1
        watches, self._watches = self._watches, {}
        for watch in watches.values():
            watch.cancel()

    @property
    def watched(self) -> set:
        return set(self._watches)

    # --- the event (runs on the controller's queue) ---------------------------------------------
    @defer.inlineCallbacks
    def on_change(self, topic: str, data, zk_version):
        c = self.controller
        context = c.context
        if not c.is_active or data is None or topic not in context.assignments:
            return   # topic creation and deletion are the topic-change event's business
        try:
            assignment = zk_schema.TopicAssignment.decode(data, zk_version, topic=topic)
        except zk_schema.SchemaError as exc:
            log.warning("controller: malformed assignment of topic %s ignored: %s", topic, exc)
            return
        known_id = context.topic_ids.get(topic)
        if assignment.topic_id and known_id and assignment.topic_id != known_id:
            return   # a recreated topic: the topic-change event handles it
        known = context.assignments[topic]
        added = {p: tuple(r) for p, r in assignment.partitions.items() if p not in known}
        if not added:
            return
        if topic in context.topics_to_delete:
            log.warning("controller: not adding partitions %s to topic %s: it is being deleted; "
                        "restoring its assignment", sorted(added), topic)
            yield c.write_assignments({topic: {}})
            return
        log.info("controller: topic %s: new partitions %s", topic,
                 ", ".join(f"{p} -> {list(r)}" for p, r in sorted(added.items())))
        known.update(added)
        yield c.on_new_partition_creation([(topic, p) for p in sorted(added)])
