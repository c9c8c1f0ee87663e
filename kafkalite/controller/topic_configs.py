"""The controller's view of topics' ``unclean.leader.election.enable`` overrides.

Kafka 2.8 reads a topic's config when it has to elect a leader with no live in-sync replica, and
elects at once when an operator switches unclean election on for a topic whose partitions are
offline. The controller here does both: ``refresh`` re-reads the overrides of the topics about to
need an unclean decision, and ``on_config_change`` (a watch on ``/config/changes``) re-reads a
changed topic and runs the offline election for its leaderless partitions.
"""

from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalite.controller.state_machines import PartitionState as PS

log = logging.getLogger(__name__)

UNCLEAN = "unclean.leader.election.enable"


class TopicConfigs:
    def __init__(self, controller):
        self.controller = controller
        self._seen_changes: set[str] = set()

    @defer.inlineCallbacks
    def load(self, context, topic: str):
        """Put ``topic``'s override (if any) into ``context``, replacing what it held."""
        overrides = yield self.controller.controller_zk.get_topic_config(topic)
        value = str(overrides.get(UNCLEAN, "")).lower()
        context.unclean_topics.discard(topic)
        context.clean_topics.discard(topic)
        if value == "true":
            context.unclean_topics.add(topic)
        elif value == "false":
            context.clean_topics.add(topic)

    def refresh(self, topics) -> defer.Deferred:
        context = self.controller.context
        return defer.gatherResults([self.load(context, t) for t in sorted(set(topics))],
                                   consumeErrors=True)

    @defer.inlineCallbacks
    def on_config_change(self, children):
        """Event: ``/config/changes`` gained notifications; elect for topics now allowed an
        unclean election (their partitions with no leader)."""
        c = self.controller
        names = set(children or ())
        new = names - self._seen_changes
        self._seen_changes = names          # purged notifications need not be remembered
        if not new:
            return
        notes = yield c.controller_zk.get_config_change_notifications()
        topics = {note.entity_name for name, note in notes.items()
                  if name in new and note.entity_type == "topics"
                  and note.entity_name in c.context.assignments}
        if not topics:
            return
        yield self.refresh(topics)
        yield self._elect_leaderless([t for t in sorted(topics) if t in c.context.unclean_topics])

    @defer.inlineCallbacks
    def on_default_unclean_enabled(self):
        """Event: this broker's (dynamic) default ``unclean.leader.election.enable`` turned on
        (Kafka's enableDefaultUncleanLeaderElection): elect for every topic without an override
        saying false."""
        c = self.controller
        leaderless = {tp[0] for tp, state in c.context.states.items() if state.leader < 0}
        yield self.refresh(leaderless)          # their overrides decide, as the default does not
        yield self._elect_leaderless([t for t in sorted(leaderless)
                                      if t in c.context.assignments
                                      and t not in c.context.clean_topics])

    @defer.inlineCallbacks
    def _elect_leaderless(self, topics):
        c = self.controller
        leaderless = [tp for topic in topics for tp in c.context.partitions(topic)
                      if (state := c.context.states.get(tp)) is not None and state.leader < 0]
        if not leaderless:
            return
        log.info("controller: unclean election switched on for %s; electing %s",
                 sorted(topics), ", ".join(f"{t}-{p}" for t, p in leaderless))
        psm = c.partition_state_machine
        changed = yield psm.handle_state_changes(leaderless, PS.ONLINE)
        live = sorted(c.context.live_brokers)
        if changed:
            c.requests.leader_and_isr(changed, live)
            c.requests.update_metadata(live, changed)
