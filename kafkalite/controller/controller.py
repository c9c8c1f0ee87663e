"""The controller: one broker, elected through ZooKeeper, that runs the cluster's metadata.

Election is one ZooKeeper transaction (create ephemeral ``/controller`` + bump ``/controller_epoch``
at its expected version). Every later controller write is fenced by a check of that version
(:mod:`~kafkalite.controller.controller_zk`), and every request the controller sends carries its
epoch, so a deposed controller changes nothing.

All work happens as events on ONE serial queue (Kafka's ControllerEventManager): ZooKeeper watches,
brokers' answers and broker requests only enqueue; ``_process`` runs one event at a time to
completion, so the controller's view (``ControllerContext``) is never seen half-updated. Each event
belongs to the term (``_generation``) it was queued in: events of an earlier term, or queued after
the controller resigned or stopped, are dropped quietly.

The work itself is split as in Kafka: the partition and replica state machines own their
transitions, the topic deletion and reassignment managers their procedures, ``broker_changes`` the
broker events; decisions are pure functions (``election``, ``assignment``).
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, replace

from twisted.internet import defer, task

import zk_schema
from zk_schema.topics import new_topic_id

from kafkalite import errors
from kafkalite.controller.admin_elections import AdminElections
from kafkalite.controller.broker_changes import BrokerChanges
from kafkalite.controller.broker_requests import ControllerRequests
from kafkalite.controller.channel_manager import ControllerChannelManager
from kafkalite.controller.context import ControllerContext
from kafkalite.controller.controller_zk import ControllerZk
from kafkalite.controller.log_dir_events import LogDirEvents
from kafkalite.controller.topic_configs import TopicConfigs
from kafkalite.controller.partition_modifications import PartitionModifications
from kafkalite.controller.partition_state_machine import PREFERRED, PartitionStateMachine
from kafkalite.controller.reassignment import ReassignmentManager, load_reassignments
from kafkalite.controller.replica_state_machine import ReplicaStateMachine
from kafkalite.controller.state_machines import PartitionState as PS, ReplicaState as RS
from kafkalite.controller import election
from kafkalite.controller.topic_deletion import TopicDeletionManager
from kafkalite.zk.errors import ControllerMovedError, ZooKeeperError

__all__ = ["Controller", "ControllerContext"]

log = logging.getLogger(__name__)

ANY_TERM = None     # an event that runs whether or not this broker is controller (election)


@dataclass
class _Event:
    handler: object
    args: tuple
    generation: int | None
    result: defer.Deferred | None = None    # for callers that wait (controlled shutdown)


class Controller:
    def __init__(self, broker_id: int, zk, deferred_zk, reactor, config, on_epoch=None,
                 channel_manager_factory=ControllerChannelManager):
        self.broker_id = broker_id
        self.zk = zk            # blocking ZkClient (the /controller watch)
        self.deferred_zk = deferred_zk          # TwistedZk: the same calls as Deferreds
        self.controller_zk = ControllerZk(deferred_zk, self.fence, lambda: self._generation)
        self.reactor = reactor
        self.config = config
        self.on_epoch = on_epoch
        self._channel_manager_factory = channel_manager_factory
        self.is_active = False
        self.epoch = -1
        self.epoch_zk_version = -1
        self.context = ControllerContext(listener_name=config.controller_listener)
        self.channels = None
        self.requests = ControllerRequests(self)
        self.partition_state_machine = PartitionStateMachine(self)
        self.replica_state_machine = ReplicaStateMachine(self)
        self.topic_deletion = TopicDeletionManager(self)
        self.reassignment = ReassignmentManager(self)
        self.admin_elections = AdminElections(self)
        self.broker_changes = BrokerChanges(self)
        self.partition_modifications = PartitionModifications(self)
        self.log_dir_events = LogDirEvents(self)
        self.topic_configs = TopicConfigs(self)
        self._events: deque[_Event] = deque()
        self._processing = False
        self._generation = 0
        self._controller_watch = None
        self._watches: list = []
        self._stopped = False
        self._rebalance_loop = None

    # --- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        """Watch /controller; whenever it is free, try to take it."""
        self._controller_watch = self.zk.watch_data(zk_schema.CONTROLLER_PATH,
                                                    self._on_controller_znode)

    def _on_controller_znode(self, data, zk_version) -> None:
        if self._stopped:
            return
        if data is None:
            self._put(self._elect, (), ANY_TERM)
        elif self.is_active:
            try:
                holder = zk_schema.ControllerRegistration.decode(data).broker_id
            except zk_schema.SchemaError:
                return
            if holder != self.broker_id:
                self.enqueue(self._resign, f"broker {holder} holds /controller now")

    def session_lost(self) -> None:
        """Our ZooKeeper session expired: /controller (ours, if we held it) is gone."""
        if self.is_active:
            self.enqueue(self._resign, "ZooKeeper session expired")

    def session_reestablished(self) -> None:
        self._put(self._elect, (), ANY_TERM)

    @defer.inlineCallbacks
    def stop(self):
        """Stop for good: queued events are dropped, and /controller is given up if ours."""
        self._stopped = True
        if self._controller_watch is not None:
            self._controller_watch.cancel()
        self._drop_queued()
        if self.is_active:
            version = self.epoch_zk_version
            self._deactivate()
            try:
                yield self.controller_zk.resign_controller(version)
            except ZooKeeperError as exc:
                log.info("controller: could not delete /controller at shutdown: %s", exc)

    # --- the event queue ------------------------------------------------------------------------
    def enqueue(self, handler, *args) -> None:
        """Queue an event of the current term."""
        self._put(handler, args, self._generation)

    def enable_default_unclean_election(self) -> None:
        """The broker's default unclean.leader.election.enable turned on dynamically: when
        this broker is the controller, elect leaders for leaderless partitions (an event)."""
        if self.is_active and not self._stopped:
            self.enqueue(self.topic_configs.on_default_unclean_enabled)

    def call(self, handler, *args) -> defer.Deferred:
        """Queue an event of the current term and get its result (NotControllerError when this
        broker is not, or stops being, the controller before it runs)."""
        if not self.is_active or self._stopped:
            return defer.fail(errors.NotControllerError(
                f"broker {self.broker_id} is not the controller"))
        d: defer.Deferred = defer.Deferred()
        self._put(handler, args, self._generation, d)
        return d

    def event_callback(self, handler, *bound):
        """A callback (for a watch, or a broker's answer) that queues ``handler(*bound, *args)``
        as an event of the term it was made in: after a resignation it queues nothing that runs."""
        generation = self._generation

        def callback(*args):
            if generation == self._generation and not self._stopped:
                self._put(handler, bound + args, generation)
        callback.__name__ = getattr(handler, "__name__", "event")
        return callback

    def _put(self, handler, args, generation, result=None) -> None:
        self._events.append(_Event(handler, args, generation, result))
        if not self._processing:
            self._process()

    def _stale(self, event: _Event) -> bool:
        return self._stopped or (event.generation is not ANY_TERM
                                 and event.generation != self._generation)

    def _drop_queued(self) -> None:
        events, self._events = self._events, deque()
        for event in events:
            if event.result is not None:
                event.result.errback(errors.NotControllerError(
                    f"broker {self.broker_id} is no longer the controller"))

    @defer.inlineCallbacks
    def _process(self):
        self._processing = True
        try:
            while self._events:
                event = self._events.popleft()
                name = getattr(event.handler, "__name__", repr(event.handler))
                if self._stale(event):
                    log.debug("controller: dropped %s (queued before the controller resigned)",
                              name)
                    if event.result is not None:
                        event.result.errback(errors.NotControllerError(
                            f"broker {self.broker_id} is no longer the controller"))
                    continue
                try:
                    result = yield event.handler(*event.args)
                except Exception as exc:  # noqa: BLE001 - one bad event must not stop the rest
                    self._failed(event, name, exc)
                    if event.result is not None:
                        event.result.errback(exc)
                    continue
                if event.result is not None:
                    event.result.callback(result)
        finally:
            self._processing = False

    def _failed(self, event: _Event, name: str, exc: Exception) -> None:
        if self._stale(event):
            # the controller resigned or stopped while this event was under way
            log.debug("controller: %s ended with the controller's term: %s", name, exc)
        elif isinstance(exc, ControllerMovedError):
            log.warning("controller: fenced while handling %s: %s", name, exc)
            self._deactivate()
        elif event.result is not None and isinstance(exc, errors.KafkaError):
            # a request refused with its error (e.g. a stale broker epoch): the asker gets the
            # error; nothing is wrong with the controller
            log.info("controller: %s refused: %s", name, exc.message)
        else:
            log.error("controller: event %s failed", name, exc_info=exc)

    def fence(self) -> int:
        """The controller epoch's zkVersion, which every controller write carries; raises
        ControllerMovedError when this broker is no longer the controller."""
        if not self.is_active or self._stopped:
            raise ControllerMovedError(f"broker {self.broker_id} is no longer the controller")
        return self.epoch_zk_version

    # --- election -------------------------------------------------------------------------------
    @defer.inlineCallbacks
    def _elect(self):
        if self.is_active or self._stopped:
            return
        won = yield self.controller_zk.try_elect_controller(self.broker_id)
        if won is None:
            holder = yield self.controller_zk.get_controller_id()
            log.info("broker %d: broker %s is the controller", self.broker_id, holder)
            return
        if self._stopped:      # stopped while the election ran: give it back at once
            yield self.controller_zk.resign_controller(won.zk_version)
            return
        self.epoch, self.epoch_zk_version = won.epoch, won.zk_version
        log.info("broker %d: became controller at epoch %d", self.broker_id, self.epoch)
        if self.on_epoch:
            self.on_epoch(self.epoch)
        yield self._on_become_controller()

    def _resign(self, why: str):
        if self.is_active:
            log.info("broker %d: no longer controller (%s)", self.broker_id, why)
            self._deactivate()

    def _deactivate(self) -> None:
        self.is_active = False
        self._generation += 1
        for watch in self._watches:
            watch.cancel()
        self._watches = []
        self.partition_modifications.close()
        if self.channels is not None:
            self.channels.close()     # closed, not gone: a late send is dropped quietly
        if self._rebalance_loop is not None and self._rebalance_loop.running:
            self._rebalance_loop.stop()
        self.context = ControllerContext(listener_name=self.config.controller_listener)
        self.partition_state_machine = PartitionStateMachine(self)
        self.replica_state_machine = ReplicaStateMachine(self)

    @defer.inlineCallbacks
    def _on_become_controller(self):
        self.is_active = True
        self._generation += 1
        began, steps = self.reactor.seconds(), []   # the failover's timeline, logged at the end
        self.channels = self._channel_manager_factory(
            self.reactor, self.broker_id,
            request_timeout_s=self.config.controller_socket_timeout_ms / 1000.0)
        yield self.controller_zk.enable_feature_versioning()
        # watches first (Kafka's order); their first deliveries queue behind this event
        for path, kind, handler in (
                (zk_schema.BROKER_IDS_PATH, "children", self.broker_changes.on_broker_change),
                (zk_schema.TOPICS_PATH, "children", self._on_topic_change),
                (zk_schema.DELETE_TOPICS_PATH, "children",
                 self.topic_deletion.on_deletion_markers),
                (zk_schema.ISR_CHANGE_NOTIFICATION_PATH, "children", self._on_isr_change),
                (zk_schema.PREFERRED_REPLICA_ELECTION_PATH, "data",
                 self._on_preferred_election_request),
                (zk_schema.REASSIGN_PARTITIONS_PATH, "data", self.reassignment.on_request),
                (LogDirEvents.PATH, "children", self.log_dir_events.on_notification),
                (zk_schema.CONFIG_CHANGES_PATH, "children",
                 self.topic_configs.on_config_change)):
            watch_fn = (self.controller_zk.watch_children if kind == "children"
                        else self.controller_zk.watch_data)
            watch = yield watch_fn(path, self.event_callback(handler))
            self._watches.append(watch)
        steps.append(("watches", self.reactor.seconds() - began))
        yield self._load_context()
        yield self.partition_modifications.watch(list(self.context.assignments))
        steps.append(("context", self.reactor.seconds() - began))
        live = sorted(self.context.live_brokers)
        log.info("controller: %d live broker(s) %s, %d topic(s)", len(live), live,
                 len(self.context.assignments))
        for broker_id in live:
            self.channels.add_broker(broker_id, *self.context.endpoint(broker_id))
        self.requests.update_metadata(live)
        # the state machines start from ZooKeeper's picture; partitions without a live leader
        # get one, dead replicas leave the ISRs, and every live replica hears its partitions
        rsm, psm = self.replica_state_machine, self.partition_state_machine
        rsm.initialize()
        changed = yield psm.handle_state_changes(psm.initialize(), PS.ONLINE)
        elected = len(changed)
        steps.append(("leaders elected", self.reactor.seconds() - began))
        replicas = self.context.replicas_of(self.context.partitions())
        changed += (yield rsm.handle_state_changes(rsm.in_state(replicas, RS.DELETION_INELIGIBLE),
                                                   RS.OFFLINE, skip_isr=set(changed)))
        yield rsm.handle_state_changes(rsm.in_state(replicas, RS.ONLINE), RS.ONLINE)
        if changed:
            self.requests.update_metadata(live, changed)
        steps.append(("LeaderAndIsr sent", self.reactor.seconds() - began))
        # one line to read a controller failover by (issue 24: where a failover's time goes)
        log.info("controller: ready at epoch %d after %.0f ms (%s); %d partition(s) elected",
                 self.epoch, 1000 * steps[-1][1],
                 ", ".join(f"{name} +{1000 * at:.0f} ms" for name, at in steps), elected)
        if self.context.reassignments:
            yield self.reassignment.resume()
        if self.context.topics_to_delete:
            yield self.topic_deletion.resume()
        if self.config.auto_leader_rebalance_enable:
            self._rebalance_loop = task.LoopingCall(self.enqueue, self._auto_leader_rebalance)
            self._rebalance_loop.clock = self.reactor
            self._rebalance_loop.start(self.config.leader_imbalance_check_interval_seconds,
                                       now=False)

    @defer.inlineCallbacks
    def _load_context(self):
        context = ControllerContext(listener_name=self.config.controller_listener)
        context.live_brokers = yield self.controller_zk.get_brokers()
        assignments = yield self.controller_zk.get_topic_assignments()
        assignments = yield self._give_topic_ids(assignments)
        context.assignments = {t: dict(a.partitions) for t, a in assignments.items()}
        context.topic_ids = {t: a.topic_id for t, a in assignments.items()}
        load_reassignments(context, assignments)      # moves under way, resumed below
        yield defer.gatherResults([self.topic_configs.load(context, topic)
                                   for topic in context.assignments], consumeErrors=True)
        context.states = yield self.controller_zk.get_partition_states(context.partitions())
        marked = yield self.controller_zk.topics_marked_for_deletion()
        context.topics_to_delete = {t for t in marked if t in context.assignments}
        self.context = context

    # --- writes shared by the state machines and managers -------------------------------------
    @defer.inlineCallbacks
    def write_partition_states(self, updates):
        """Conditional, fenced writes of partition states; the context takes what was written.
        Returns the partitions written."""
        written = yield self.controller_zk.update_leader_and_isr(updates)
        self.context.states.update(written)
        return list(written)

    _write_states = write_partition_states   # tests/system/test_controller_fencing.py drives it

    @defer.inlineCallbacks
    def write_assignments(self, topics):
        """Rewrite ``{topic: {partition: replicas}}`` into the topics' assignments (fenced)."""
        for topic, partitions in topics.items():
            full = dict(self.context.assignments[topic])
            full.update(partitions)
            context = self.context
            assignment = zk_schema.TopicAssignment(
                partitions={p: tuple(r) for p, r in full.items()},
                topic_id=context.topic_ids.get(topic),
                adding_replicas={p: r for (t, p), r in context.adding.items() if t == topic},
                removing_replicas={p: r for (t, p), r in context.removing.items()
                                   if t == topic})
            yield self.controller_zk.set_topic_assignment(topic, assignment)
            self.context.assignments[topic] = full

    def forget_topic(self, topic: str) -> None:
        self.partition_modifications.unwatch(topic)
        for tp in self.context.partitions(topic):
            self.context.states.pop(tp, None)
            for table in (self.context.reassignments, self.context.adding,
                          self.context.removing):
                table.pop(tp, None)
            self.partition_state_machine.remove(tp)
        self.replica_state_machine.remove_topic(topic)
        self.context.assignments.pop(topic, None)
        self.context.topics_to_delete.discard(topic)

    # --- events: topics -------------------------------------------------------------------------
    @defer.inlineCallbacks
    def _on_topic_change(self, children):
        children = set(children or ())
        new_topics = sorted(children - set(self.context.assignments))
        for topic in set(self.context.assignments) - children:
            self.forget_topic(topic)
        if not new_topics:
            return
        assignments = yield self.controller_zk.get_topic_assignments(new_topics)
        assignments = yield self._give_topic_ids(assignments)
        new_tps = []
        for topic, assignment in assignments.items():
            self.context.assignments[topic] = dict(assignment.partitions)
            self.context.topic_ids[topic] = assignment.topic_id
            new_tps += self.context.partitions(topic)
            yield self.topic_configs.load(self.context, topic)
        yield self.partition_modifications.watch(list(assignments))
        log.info("controller: new topic(s) %s, %d partition(s)", new_topics, len(new_tps))
        yield self.on_new_partition_creation(new_tps)

    @defer.inlineCallbacks
    def _give_topic_ids(self, assignments):
        """Kafka 2.8's controller gives a topic id to every topic whose znode has none (one
        written by ``kafka-topics --zookeeper`` or an older tool) and writes it back, so that
        Metadata, LeaderAndIsr and a ZooKeeper describe all carry the same id. Returns the
        assignments with their ids."""
        given = dict(assignments)
        for topic, assignment in assignments.items():
            if assignment.topic_id:
                continue
            given[topic] = replace(assignment, topic_id=new_topic_id())
            yield self.controller_zk.set_topic_assignment(topic, given[topic])
            log.info("controller: topic %s had no topic id; gave it %s", topic,
                     given[topic].topic_id)
        return given

    @defer.inlineCallbacks
    def on_new_partition_creation(self, new_tps):
        """A new topic's partitions, or partitions added to a topic: New -> Online with a leader,
        then LeaderAndIsr to their replicas and UpdateMetadata to every broker."""
        psm, rsm = self.partition_state_machine, self.replica_state_machine
        replicas = self.context.replicas_of(new_tps)
        yield psm.handle_state_changes(new_tps, PS.NEW)
        yield rsm.handle_state_changes(replicas, RS.NEW)
        existing = yield self.controller_zk.get_partition_states(new_tps)
        self.context.states.update(existing)
        changed = yield psm.handle_state_changes(new_tps, PS.ONLINE)
        live = set(self.context.live_brokers)
        # replicas on live brokers come online and hear LeaderAndIsr; the others are offline
        # (not in the ISR of a new partition: nothing to write for them)
        yield rsm.handle_state_changes([r for r in replicas if r[2] in live], RS.ONLINE)
        yield rsm.handle_state_changes([r for r in replicas if r[2] not in live], RS.OFFLINE,
                                       shrink_isr=False)
        self.requests.update_metadata(sorted(live), changed or new_tps)

    # --- events: ISR changes from leaders -------------------------------------------------------
    @defer.inlineCallbacks
    def _on_isr_change(self, children):
        if not children:
            return
        notes = yield self.controller_zk.get_isr_change_notifications()
        tps = sorted({(t, p) for note in notes.values() for t, p in note.partitions
                      if t in self.context.assignments})
        if tps:
            fresh = yield self.controller_zk.get_partition_states(tps)
            self.context.states.update(fresh)
            log.info("controller: ISR changed for %s", ", ".join(
                f"{t}-{p} -> {list(fresh[(t, p)].isr)}" for t, p in tps if (t, p) in fresh))
            self.requests.update_metadata(sorted(self.context.live_brokers), tps)
        yield self.controller_zk.delete_isr_change_notifications(list(notes))
        if self.context.reassignments:
            yield self.reassignment.check()

    # --- preferred leaders ----------------------------------------------------------------------
    @defer.inlineCallbacks
    def _on_preferred_election_request(self, data, zk_version):
        if data is None:
            return
        try:
            request = zk_schema.PreferredReplicaElection.decode(data)
            tps = [tuple(tp) for tp in request.partitions]
        except zk_schema.SchemaError as exc:
            log.warning("controller: malformed preferred election request: %s", exc)
            tps = []
        yield self.elect_preferred(tps)
        yield self.controller_zk.delete_preferred_replica_election()

    @defer.inlineCallbacks
    def elect_preferred(self, tps):
        tps = [tp for tp in tps if tp in self.context.states]
        changed = yield self.partition_state_machine.handle_state_changes(
            tps, PS.ONLINE, strategy=PREFERRED)
        if changed:
            live = sorted(self.context.live_brokers)
            self.requests.leader_and_isr(changed, live)
            self.requests.update_metadata(live, changed)
        return changed

    @defer.inlineCallbacks
    def _auto_leader_rebalance(self):
        leaders = {tp: s.leader for tp, s in self.context.states.items()}
        replicas = {tp: self.context.replicas(tp) for tp in leaders}
        imbalance = election.leader_imbalance(replicas, leaders)
        threshold = self.config.leader_imbalance_per_broker_percentage / 100.0
        brokers = {b for b, ratio in imbalance.items() if ratio > threshold}
        tps = [tp for tp, reps in replicas.items() if reps and reps[0] in brokers]
        if tps:
            log.info("controller: leader imbalance above %d%% on %s; preferred election",
                     self.config.leader_imbalance_per_broker_percentage, sorted(brokers))
            yield self.elect_preferred(tps)

    # --- requests from the brokers' handlers (NotControllerError unless active) --------------
    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> defer.Deferred:
        return self.call(self.broker_changes.controlled_shutdown, broker_id, broker_epoch)

    def elect_leaders(self, tps, election_type: int) -> defer.Deferred:
        return self.call(self.admin_elections.elect, list(tps), election_type)

    def alter_partition_reassignments(self, reassignments: dict) -> defer.Deferred:
        return self.call(self.reassignment.alter, dict(reassignments))

    def list_partition_reassignments(self, tps=None) -> defer.Deferred:
        return self.call(self.reassignment.list, tps)
