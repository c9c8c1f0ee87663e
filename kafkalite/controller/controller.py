"""The controller: one broker, elected through ZooKeeper, that runs the cluster's metadata.

Election is one ZooKeeper transaction (create ephemeral ``/controller`` + bump ``/controller_epoch``
at its expected version). Every later controller write is fenced by a check of that version, and
every request the controller sends carries its epoch, so a deposed controller changes nothing.

All work happens as events on ONE serial queue (Kafka's ControllerEventManager): ZooKeeper watches
and broker requests only enqueue; ``_process`` runs one event at a time to completion, so the
controller's view (``ControllerContext``) is never seen half-updated.

Decisions are delegated to pure functions (``election``, ``assignment``); this module does the
I/O around them: read ZooKeeper, write conditionally, tell the brokers.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field, replace

from twisted.internet import defer, task

import zk_schema
from zk_schema.topics import PartitionState as ZkPartitionState

from kafkalite import errors
from kafkalite.controller import election
from kafkalite.controller.channel_manager import ControllerChannelManager
from kafkalite.controller.partition_modifications import PartitionModifications
from kafkalite.controller.state_machines import PartitionState as PS, StateTable
from kafkalite.protocol import messages as m
from kafkalite.zk.errors import ControllerMovedError, ZkBadVersionError, ZooKeeperError

log = logging.getLogger(__name__)

LEADER_DURING_DELETE = -2
NO_LEADER = -1


@dataclass
class ControllerContext:
    """Everything the controller knows, loaded from ZooKeeper at failover and kept current."""
    live_brokers: dict = field(default_factory=dict)        # id -> BrokerRegistration
    assignments: dict = field(default_factory=dict)         # topic -> {partition: (replicas)}
    states: dict = field(default_factory=dict)              # (topic, p) -> ZkPartitionState
    topics_to_delete: set = field(default_factory=set)
    shutting_down: set = field(default_factory=set)
    reassignments: dict = field(default_factory=dict)      # (topic, p) -> target replicas
    topic_ids: dict = field(default_factory=dict)           # topic -> topic_id
    unclean_topics: set = field(default_factory=set)        # topics overriding unclean election
    clean_topics: set = field(default_factory=set)

    def partitions(self, topic: str | None = None):
        topics = [topic] if topic is not None else list(self.assignments)
        return [(t, p) for t in topics for p in sorted(self.assignments.get(t, {}))]

    def replicas(self, tp) -> tuple[int, ...]:
        return tuple(self.assignments.get(tp[0], {}).get(tp[1], ()))

    def live_ids(self) -> set[int]:
        return set(self.live_brokers) - self.shutting_down

    listener_name: str = "PLAINTEXT"   # the inter-broker listener

    def endpoint(self, broker_id: int) -> tuple[str, int]:
        registration = self.live_brokers[broker_id]
        return registration.endpoint(self.listener_name) or (registration.host,
                                                             registration.port)


class Controller:
    def __init__(self, broker_id: int, zk, tzk, reactor, config, on_epoch=None):
        self.broker_id = broker_id
        self.zk = zk            # blocking ZkClient (watches)
        self.tzk = tzk          # TwistedZk: the same calls as Deferreds
        self.reactor = reactor
        self.config = config
        self.on_epoch = on_epoch
        self.is_active = False
        self.epoch = -1
        self.epoch_zk_version = -1
        self.context = ControllerContext()
        self.partition_states = StateTable("partition", PS.NON_EXISTENT)
        self.channels: ControllerChannelManager | None = None
        self._events: deque = deque()
        self._processing = False
        self._controller_watch = None
        self._watches: list = []
        self._stopped = False
        self._rebalance_loop = None
        self.partition_modifications = PartitionModifications(self)

    # --- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        """Watch /controller; whenever it is free, try to take it."""
        self._controller_watch = self.zk.watch_data(zk_schema.CONTROLLER_PATH,
                                                    self._on_controller_znode)

    def _on_controller_znode(self, data, zk_version) -> None:
        if self._stopped:
            return
        if data is None:
            self.enqueue(self._elect)
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
        self.enqueue(self._elect)

    @defer.inlineCallbacks
    def stop(self):
        self._stopped = True
        if self._controller_watch is not None:
            self._controller_watch.cancel()
        if self.is_active:
            self._deactivate()
            try:
                yield self.tzk.resign_controller(self.epoch_zk_version)
            except ZooKeeperError as exc:
                log.info("controller: could not delete /controller at shutdown: %s", exc)

    # --- the event queue ------------------------------------------------------------------------
    def enqueue(self, handler, *args) -> defer.Deferred:
        d: defer.Deferred = defer.Deferred()
        self._events.append((handler, args, d))
        if not self._processing:
            self._process()
        return d

    @defer.inlineCallbacks
    def _process(self):
        self._processing = True
        try:
            while self._events:
                handler, args, d = self._events.popleft()
                try:
                    result = yield handler(*args)
                except ControllerMovedError as exc:
                    log.warning("controller: fenced while handling %s: %s", handler.__name__, exc)
                    self._deactivate()
                    d.errback(exc)
                    continue
                except Exception as exc:  # noqa: BLE001 - one bad event must not stop the rest
                    log.exception("controller: event %s failed", handler.__name__)
                    d.errback(exc)
                    continue
                d.callback(result)
        finally:
            self._processing = False

    # --- election -------------------------------------------------------------------------------
    @defer.inlineCallbacks
    def _elect(self):
        if self.is_active or self._stopped:
            return
        won = yield self.tzk.try_elect_controller(self.broker_id)
        if won is None:
            holder = yield self.tzk.get_controller_id()
            log.info("broker %d: broker %s is the controller", self.broker_id, holder)
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
        for watch in self._watches:
            watch.cancel()
        self._watches = []
        self.partition_modifications.close()
        if self.channels is not None:
            self.channels.close()
            self.channels = None
        if self._rebalance_loop is not None and self._rebalance_loop.running:
            self._rebalance_loop.stop()
        self.context = ControllerContext(listener_name=self.config.inter_broker_listener)
        self.partition_states = StateTable("partition", PS.NON_EXISTENT)

    @defer.inlineCallbacks
    def _on_become_controller(self):
        self.is_active = True
        self.channels = ControllerChannelManager(
            self.reactor, self.broker_id,
            request_timeout_s=self.config.controller_socket_timeout_ms / 1000.0)
        # watches first (Kafka's order); their first deliveries queue behind this event
        for path, kind, handler in (
                (zk_schema.BROKER_IDS_PATH, "children", self._on_broker_change),
                (zk_schema.TOPICS_PATH, "children", self._on_topic_change),
                (zk_schema.DELETE_TOPICS_PATH, "children", self._on_topic_deletion),
                (zk_schema.ISR_CHANGE_NOTIFICATION_PATH, "children", self._on_isr_change),
                (zk_schema.PREFERRED_REPLICA_ELECTION_PATH, "data",
                 self._on_preferred_election_request),
                (zk_schema.REASSIGN_PARTITIONS_PATH, "data", self._on_reassignment_request)):
            watch = yield self.tzk.run(
                self.zk.watch_children if kind == "children" else self.zk.watch_data,
                path, self._enqueue_from_watch(handler))
            self._watches.append(watch)
        yield self._load_context()
        yield self.partition_modifications.watch(list(self.context.assignments))
        live = sorted(self.context.live_brokers)
        log.info("controller: %d live broker(s) %s, %d topic(s)", len(live), live,
                 len(self.context.assignments))
        for broker_id in live:
            self.channels.add_broker(broker_id, *self.context.endpoint(broker_id))
        self._send_update_metadata(live)
        # partitions: those with a live leader are online; the rest need a leader
        needs_leader = []
        for tp in self.context.partitions():
            state = self.context.states.get(tp)
            if state is None:
                self.partition_states.force(tp, PS.NEW)
                needs_leader.append(tp)
            elif state.leader in self.context.live_brokers:
                self.partition_states.force(tp, PS.ONLINE)
            else:
                self.partition_states.force(tp, PS.OFFLINE)
                needs_leader.append(tp)
        changed = yield self._elect_leaders(needs_leader)
        dead_replicas = {b for tp in self.context.partitions() for b in self.context.replicas(tp)
                         if b not in self.context.live_brokers}
        if dead_replicas:
            changed += (yield self._remove_from_isr(dead_replicas, skip=set(changed)))
        # replica state machine startup: every live replica hears its partitions' state
        self._send_leader_and_isr(self.context.partitions(), live)
        if changed:
            self._send_update_metadata(live, changed)
        if self.context.topics_to_delete:
            yield self._delete_topics(sorted(self.context.topics_to_delete))
        if self.config.auto_leader_rebalance_enable:
            self._rebalance_loop = task.LoopingCall(
                lambda: self.enqueue(self._auto_leader_rebalance))
            self._rebalance_loop.clock = self.reactor
            self._rebalance_loop.start(self.config.leader_imbalance_check_interval_seconds,
                                       now=False)

    def _enqueue_from_watch(self, handler):
        def callback(*args):
            if self.is_active:
                self.enqueue(handler, *args)
        return callback

    @defer.inlineCallbacks
    def _load_context(self):
        context = ControllerContext(listener_name=self.config.inter_broker_listener)
        context.live_brokers = yield self.tzk.get_brokers()
        assignments = yield self.tzk.get_topic_assignments()
        context.assignments = {t: dict(a.partitions) for t, a in assignments.items()}
        context.topic_ids = {t: a.topic_id for t, a in assignments.items()}
        yield defer.gatherResults([self._load_unclean_override(context, topic)
                                   for topic in context.assignments], consumeErrors=True)
        context.states = yield self.tzk.get_partition_states(context.partitions())
        marked = yield self.tzk.topics_marked_for_deletion()
        context.topics_to_delete = {t for t in marked if t in context.assignments}
        self.context = context

    # --- leader election and state writes -------------------------------------------------------
    @defer.inlineCallbacks
    def _elect_leaders(self, tps, kind: str = "offline", target=None):
        """Elect leaders for ``tps`` and write them (fenced, conditional). Returns changed tps."""
        updates = {}
        creates = {}
        live = self.context.live_ids()
        for tp in tps:
            if tp[0] in self.context.topics_to_delete:
                continue
            replicas = self.context.replicas(tp)
            state = self.context.states.get(tp)
            if state is None:
                result = election.new_partition_election(replicas, live)
                if result is None:
                    log.warning("controller: new partition %s-%d has no live replica %s",
                                tp[0], tp[1], list(replicas))
                    continue
                creates[tp] = ZkPartitionState(result.leader, 0, self.epoch, result.isr)
                continue
            result = self._choose(kind, tp, replicas, state, live, target)
            if result is None:
                if kind == "offline" and state.leader != NO_LEADER and state.leader not in live:
                    # nobody eligible: the partition goes offline (leader -1), the ISR keeps
                    # its last member so a clean election can happen when it returns
                    isr = tuple(b for b in state.isr if b in live) or state.isr
                    updates[tp] = replace(state, leader=NO_LEADER,
                                          leader_epoch=state.leader_epoch + 1,
                                          controller_epoch=self.epoch, isr=isr)
                    log.warning("controller: %s-%d has no eligible leader (replicas %s, ISR %s, "
                                "live %s); it is offline", tp[0], tp[1], list(replicas),
                                list(state.isr), sorted(live))
                continue
            if result.unclean:
                log.warning("controller: UNCLEAN election of %d for %s-%d: records not on it "
                            "are lost", result.leader, tp[0], tp[1])
            updates[tp] = replace(state, leader=result.leader,
                                  leader_epoch=state.leader_epoch + 1,
                                  controller_epoch=self.epoch, isr=result.isr)
        changed = []
        for tp, new_state in creates.items():
            try:
                yield self.tzk.create_partition_state(tp[0], tp[1], new_state,
                                                      self.epoch_zk_version)
            except errors.KafkaError as exc:
                if isinstance(exc, ControllerMovedError):
                    raise
                existing = yield self.tzk.get_partition_state(*tp)
                if existing is None:
                    log.warning("controller: cannot create state of %s-%d: %s", *tp, exc)
                    continue
                self.context.states[tp] = existing
                continue
            self.context.states[tp] = replace(new_state, zk_version=0)
            self._transition(tp, PS.ONLINE)
            changed.append(tp)
        if updates:
            written = yield self._write_states(updates)
            changed.extend(written)
        return changed

    def _choose(self, kind, tp, replicas, state, live, target):
        if kind == "offline":
            if state.leader in live and state.leader not in self.context.shutting_down:
                return None  # has a leader already
            return election.offline_election(replicas, state.isr, live,
                                             self._unclean_allowed(tp[0]))
        if kind == "preferred":
            if replicas and state.leader == replicas[0]:
                return None
            return election.preferred_election(replicas, state.isr, live)
        if kind == "controlled_shutdown":
            return election.controlled_shutdown_election(
                replicas, state.isr, set(self.context.live_brokers), self.context.shutting_down)
        if kind == "reassign":
            return election.reassignment_election(target[tp], state.isr, live)
        raise ValueError(kind)

    def _unclean_allowed(self, topic: str) -> bool:
        """The topic's unclean.leader.election.enable override, else the broker default."""
        if topic in self.context.unclean_topics:
            return True
        if topic in self.context.clean_topics:
            return False
        return bool(self.config.unclean_leader_election_enable)

    @defer.inlineCallbacks
    def _load_unclean_override(self, context, topic):
        overrides = yield self.tzk.get_topic_config(topic)
        value = str(overrides.get("unclean.leader.election.enable", "")).lower()
        if value == "true":
            context.unclean_topics.add(topic)
        elif value == "false":
            context.clean_topics.add(topic)

    @defer.inlineCallbacks
    def _write_states(self, updates):
        """Conditional, fenced writes; a stale zkVersion is re-read and retried once."""
        pending = {tp: (state, state.zk_version if state.zk_version is not None else -1)
                   for tp, state in updates.items()}
        changed = []
        for attempt in range(3):
            if not pending:
                break
            results = yield self.tzk.set_partition_states(pending, self.epoch_zk_version)
            retry = {}
            for tp, outcome in results.items():
                state = pending[tp][0]
                if isinstance(outcome, ControllerMovedError):
                    raise outcome
                if isinstance(outcome, ZkBadVersionError) and attempt < 2:
                    fresh = yield self.tzk.get_partition_state(*tp)
                    if fresh is None:
                        continue
                    # the leader changed the ISR meanwhile: keep our leader choice, take its ISR
                    retry[tp] = (replace(state, isr=tuple(b for b in fresh.isr)
                                         if state.leader in fresh.isr else state.isr,
                                         leader_epoch=max(state.leader_epoch,
                                                          fresh.leader_epoch + 1)),
                                 fresh.zk_version)
                    continue
                if isinstance(outcome, Exception):
                    log.warning("controller: writing state of %s-%d failed: %s", tp[0], tp[1],
                                outcome)
                    continue
                self.context.states[tp] = replace(state, zk_version=outcome)
                self._transition(tp, PS.ONLINE if state.leader >= 0 else PS.OFFLINE)
                changed.append(tp)
            pending = retry
        return changed

    def _transition(self, tp, target) -> None:
        current = self.partition_states.get(tp)
        if current == PS.NON_EXISTENT and target != PS.NEW:
            self.partition_states.transition(tp, PS.NEW)
        try:
            self.partition_states.transition(tp, target)
        except errors.IllegalStateError as exc:
            log.warning("controller: %s", exc)
            self.partition_states.force(tp, target)

    # --- requests to brokers --------------------------------------------------------------------
    def _partition_state_entries(self, tps, cls):
        entries = []
        for tp in tps:
            state = self.context.states.get(tp)
            if state is None:
                continue
            replicas = list(self.context.replicas(tp))
            common = dict(topic=tp[0], partition=tp[1], controller_epoch=state.controller_epoch,
                          leader=state.leader, leader_epoch=state.leader_epoch,
                          isr=list(state.isr), zk_version=state.zk_version or 0,
                          replicas=replicas)
            if cls is m.UpdateMetadataPartitionState:
                common["offline_replicas"] = [b for b in replicas
                                              if b not in self.context.live_brokers]
                common["topic_id"] = self.context.topic_ids.get(tp[0])
            entries.append(cls(**common))
        return entries

    def _send_leader_and_isr(self, tps, brokers) -> None:
        """LeaderAndIsr to every live replica in ``brokers`` of the partitions ``tps``."""
        by_broker: dict[int, list] = {}
        for tp in tps:
            for replica in self.context.replicas(tp):
                if replica in brokers and replica in self.context.live_brokers:
                    by_broker.setdefault(replica, []).append(tp)
        leaders = []
        for broker_id in sorted(self.context.live_brokers):
            host, port = self.context.endpoint(broker_id)
            leaders.append(m.LeaderAndIsrLiveLeader(broker_id, host, port))
        for broker_id, broker_tps in by_broker.items():
            request = m.LeaderAndIsrRequest(
                controller_id=self.broker_id, controller_epoch=self.epoch,
                broker_epoch=self.context.live_brokers[broker_id].broker_epoch or -1,
                partition_states=self._partition_state_entries(broker_tps,
                                                               m.LeaderAndIsrPartitionState),
                live_leaders=leaders)
            self.channels.send_quietly(broker_id, request)

    def _send_update_metadata(self, brokers, tps=None, deleting=()) -> None:
        tps = self.context.partitions() if tps is None else tps
        states = self._partition_state_entries(tps, m.UpdateMetadataPartitionState)
        for tp in deleting:
            states.append(m.UpdateMetadataPartitionState(
                topic=tp[0], partition=tp[1], controller_epoch=self.epoch,
                leader=LEADER_DURING_DELETE, leader_epoch=-1, isr=[], zk_version=0,
                replicas=[], offline_replicas=[]))
        live = []
        for broker_id, registration in sorted(self.context.live_brokers.items()):
            host, port = self.context.endpoint(broker_id)
            live.append(m.UpdateMetadataBroker(broker_id, host, port, registration.rack,
                                               list(registration.endpoints)))
        for broker_id in brokers:
            if broker_id not in self.context.live_brokers:
                continue
            request = m.UpdateMetadataRequest(
                controller_id=self.broker_id, controller_epoch=self.epoch,
                broker_epoch=self.context.live_brokers[broker_id].broker_epoch or -1,
                partition_states=states, live_brokers=live)
            self.channels.send_quietly(broker_id, request)

    # --- events: brokers ------------------------------------------------------------------------
    @defer.inlineCallbacks
    def _on_broker_change(self, children):
        registrations = yield self.tzk.get_brokers()
        known = self.context.live_brokers
        new = [b for b in registrations if b not in known]
        dead = [b for b in known if b not in registrations]
        bounced = [b for b in registrations if b in known
                   and registrations[b].broker_epoch != known[b].broker_epoch]
        if not (new or dead or bounced):
            return
        log.info("controller: brokers joined %s, left %s, bounced %s", new, dead, bounced)
        for broker_id in dead + bounced:
            self.channels.remove_broker(broker_id)
        self.context.live_brokers = dict(registrations)
        self.context.shutting_down -= set(dead + bounced)
        if dead:
            yield self._on_broker_failure(dead)
        if new or bounced:
            yield self._on_broker_startup(new + bounced)

    @defer.inlineCallbacks
    def _on_broker_startup(self, brokers):
        for broker_id in brokers:
            self.channels.add_broker(broker_id, *self.context.endpoint(broker_id))
        live = sorted(self.context.live_brokers)
        self._send_update_metadata(live)
        hosted = [tp for tp in self.context.partitions()
                  if set(self.context.replicas(tp)) & set(brokers)]
        self._send_leader_and_isr(hosted, brokers)
        offline = [tp for tp in self.context.partitions()
                   if self.context.states.get(tp) is None
                   or self.context.states[tp].leader not in self.context.live_brokers]
        changed = yield self._elect_leaders(offline)
        if changed:
            self._send_leader_and_isr(changed, live)
            self._send_update_metadata(live, changed)
        if self.context.topics_to_delete:
            yield self._delete_topics(sorted(self.context.topics_to_delete))

    @defer.inlineCallbacks
    def _on_broker_failure(self, dead):
        dead_set = set(dead)
        # leaders change ISRs on their own (announced in batches): decide on fresh states
        touched = [tp for tp in self.context.partitions()
                   if dead_set & set(self.context.replicas(tp))]
        if touched:
            fresh = yield self.tzk.get_partition_states(touched)
            self.context.states.update(fresh)
        led = [tp for tp, state in self.context.states.items() if state.leader in dead_set]
        for tp in led:
            self._transition(tp, PS.OFFLINE)
        changed = yield self._elect_leaders(led)
        changed += (yield self._remove_from_isr(dead_set, skip=set(changed)))
        live = sorted(self.context.live_brokers)
        if changed:
            self._send_leader_and_isr(changed, live)
        self._send_update_metadata(live, changed)

    @defer.inlineCallbacks
    def _remove_from_isr(self, brokers: set, skip=()):
        """Dead replicas leave the ISR of partitions they follow (Kafka's OfflineReplica); the
        last ISR member stays so that a clean election stays possible."""
        shrink = {}
        for tp, state in self.context.states.items():
            if tp in skip or state.leader in brokers or state.leader < 0:
                continue
            if brokers & set(state.isr):
                isr = tuple(b for b in state.isr if b not in brokers) or state.isr
                shrink[tp] = replace(state, isr=isr, controller_epoch=self.epoch)
        if not shrink:
            return []
        changed = yield self._write_states(shrink)
        return changed

    # --- events: topics -------------------------------------------------------------------------
    @defer.inlineCallbacks
    def _on_topic_change(self, children):
        children = set(children or ())
        new_topics = sorted(children - set(self.context.assignments))
        gone = set(self.context.assignments) - children
        for topic in gone:
            self._forget_topic(topic)
        if not new_topics:
            return
        assignments = yield self.tzk.get_topic_assignments(new_topics)
        new_tps = []
        for topic, assignment in assignments.items():
            self.context.assignments[topic] = dict(assignment.partitions)
            self.context.topic_ids[topic] = assignment.topic_id
            new_tps += self.context.partitions(topic)
            yield self._load_unclean_override(self.context, topic)
        yield self.partition_modifications.watch(list(assignments))
        log.info("controller: new topic(s) %s, %d partition(s)", new_topics, len(new_tps))
        yield self._on_new_partition_creation(new_tps)

    @defer.inlineCallbacks
    def _on_new_partition_creation(self, new_tps):
        """A new topic's partitions, or partitions added to a topic: New -> Online with a leader,
        then LeaderAndIsr to their replicas and UpdateMetadata to every broker."""
        for tp in new_tps:
            self.partition_states.transition(tp, PS.NEW)
        existing = yield self.tzk.get_partition_states(new_tps)
        self.context.states.update(existing)
        changed = yield self._elect_leaders(new_tps)
        live = sorted(self.context.live_brokers)
        self._send_leader_and_isr(new_tps, live)
        self._send_update_metadata(live, changed or new_tps)

    def _forget_topic(self, topic: str) -> None:
        self.partition_modifications.unwatch(topic)
        for tp in self.context.partitions(topic):
            self.context.states.pop(tp, None)
            self.partition_states.remove(tp)
        self.context.assignments.pop(topic, None)
        self.context.topics_to_delete.discard(topic)

    @defer.inlineCallbacks
    def _on_topic_deletion(self, children):
        marked = set(children or ())
        unknown = [t for t in marked if t not in self.context.assignments]
        for topic in unknown:
            yield self.tzk.remove_topic_deletion_marker(topic, self.epoch_zk_version)
        topics = sorted(marked - set(unknown))
        if not topics:
            return
        if not self.config.delete_topic_enable:
            log.warning("controller: delete.topic.enable is false; ignoring deletion of %s",
                        topics)
            for topic in topics:
                yield self.tzk.remove_topic_deletion_marker(topic, self.epoch_zk_version)
            return
        self.context.topics_to_delete |= set(topics)
        yield self._delete_topics(topics)

    @defer.inlineCallbacks
    def _delete_topics(self, topics):
        live = sorted(self.context.live_brokers)
        for topic in topics:
            tps = self.context.partitions(topic)
            replicas = {b for tp in tps for b in self.context.replicas(tp)}
            offline = replicas - set(self.context.live_brokers)
            if offline:
                log.info("controller: deletion of %s waits for broker(s) %s (ineligible)", topic,
                         sorted(offline))
                continue
            log.info("controller: deleting topic %s", topic)
            self._send_update_metadata(live, [], deleting=tps)
            stops = []
            for broker_id in sorted(replicas):
                request = m.StopReplicaRequest(
                    controller_id=self.broker_id, controller_epoch=self.epoch,
                    broker_epoch=self.context.live_brokers[broker_id].broker_epoch or -1,
                    delete_partitions=True,
                    partitions=[m.TopicPartition(t, p) for t, p in tps
                                if broker_id in self.context.replicas((t, p))])
                stops.append(self.channels.send(broker_id, request))
            results = yield defer.DeferredList(stops, consumeErrors=True)
            if not all(ok for ok, _ in results):
                log.warning("controller: some replicas of %s did not confirm deletion; retrying "
                            "when brokers change", topic)
                continue
            yield self.tzk.delete_topic_znodes(topic, self.epoch_zk_version)
            for tp in tps:
                if self.partition_states.get(tp) == PS.ONLINE:
                    self.partition_states.transition(tp, PS.OFFLINE)
                self.partition_states.transition(tp, PS.NON_EXISTENT)
            self._forget_topic(topic)

    # --- events: ISR changes from leaders -------------------------------------------------------
    @defer.inlineCallbacks
    def _on_isr_change(self, children):
        if not children:
            return
        notes = yield self.tzk.get_isr_change_notifications()
        tps = sorted({(t, p) for note in notes.values() for t, p in note.partitions
                      if t in self.context.assignments})
        if tps:
            fresh = yield self.tzk.get_partition_states(tps)
            self.context.states.update(fresh)
            log.info("controller: ISR changed for %s", ", ".join(
                f"{t}-{p} -> {list(fresh[(t, p)].isr)}" for t, p in tps if (t, p) in fresh))
            self._send_update_metadata(sorted(self.context.live_brokers), tps)
        yield self.tzk.delete_isr_change_notifications(list(notes), self.epoch_zk_version)
        if self.context.reassignments:
            yield self._check_reassignments()

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
        yield self.tzk.delete_preferred_replica_election(self.epoch_zk_version)

    @defer.inlineCallbacks
    def elect_preferred(self, tps):
        tps = [tp for tp in tps if tp in self.context.states]
        changed = yield self._elect_leaders(tps, kind="preferred")
        if changed:
            live = sorted(self.context.live_brokers)
            self._send_leader_and_isr(changed, live)
            self._send_update_metadata(live, changed)
        return changed

    # --- partition reassignment (Kafka's phases, through /admin/reassign_partitions) -------------
    @defer.inlineCallbacks
    def _on_reassignment_request(self, data, zk_version):
        if data is None:
            return
        try:
            request = zk_schema.PartitionReassignment.decode(data)
        except zk_schema.SchemaError as exc:
            log.warning("controller: malformed reassignment request, deleting it: %s", exc)
            yield self.tzk.delete_partition_reassignment(self.epoch_zk_version)
            return
        started = []
        for tp, target in request.partitions.items():
            target = tuple(target)
            current = self.context.replicas(tp)
            if not current:
                log.warning("controller: cannot reassign %s-%d: no such partition", *tp)
                continue
            if tp in self.context.reassignments and self.context.reassignments[tp] == target:
                continue
            unknown = [b for b in target if b not in self.context.live_brokers]
            if unknown or not target or len(set(target)) != len(target):
                log.warning("controller: reassignment of %s-%d to %s refused: broker(s) %s are "
                            "not live or the list is invalid", tp[0], tp[1], list(target),
                            unknown)
                continue
            self.context.reassignments[tp] = target
            started.append(tp)
        if started:
            yield self._start_reassignments(started)
        yield self._check_reassignments()

    @defer.inlineCallbacks
    def _start_reassignments(self, tps):
        """Phase 1: replicas = target + old; new replicas start following."""
        topics = {}
        for tp in tps:
            target = self.context.reassignments[tp]
            current = self.context.replicas(tp)
            union = tuple(target) + tuple(b for b in current if b not in target)
            topics.setdefault(tp[0], {})[tp[1]] = union
            log.info("controller: reassigning %s-%d from %s to %s", tp[0], tp[1], list(current),
                     list(target))
        yield self._write_assignments(topics)
        bumped = {}
        for tp in tps:
            state = self.context.states.get(tp)
            if state is not None:
                bumped[tp] = replace(state, leader_epoch=state.leader_epoch + 1,
                                     controller_epoch=self.epoch)
        changed = yield self._write_states(bumped)
        live = sorted(self.context.live_brokers)
        self._send_leader_and_isr(changed or tps, live)
        self._send_update_metadata(live, changed or tps)

    @defer.inlineCallbacks
    def _write_assignments(self, topics):
        for topic, partitions in topics.items():
            full = dict(self.context.assignments[topic])
            full.update(partitions)
            assignment = zk_schema.TopicAssignment(
                partitions={p: tuple(r) for p, r in full.items()},
                topic_id=self.context.topic_ids.get(topic))
            yield self.tzk.set_topic_assignment(topic, assignment, -1, self.epoch_zk_version)
            self.context.assignments[topic] = full

    @defer.inlineCallbacks
    def _check_reassignments(self):
        """Phase 2, for each reassignment whose target replicas are all in the ISR: lead from
        the target, drop the old replicas, and write the final assignment."""
        done = []
        live = sorted(self.context.live_brokers)
        for tp, target in list(self.context.reassignments.items()):
            state = self.context.states.get(tp)
            if state is None or not set(target) <= set(state.isr):
                continue
            removed = [b for b in self.context.replicas(tp) if b not in target]
            if state.leader not in target:
                changed = yield self._elect_leaders([tp], kind="reassign",
                                                    target=self.context.reassignments)
                if not changed:
                    continue
                state = self.context.states[tp]
            new_isr = tuple(b for b in state.isr if b in target)
            if new_isr != state.isr:
                yield self._write_states({tp: replace(state, isr=new_isr,
                                                      leader_epoch=state.leader_epoch + 1,
                                                      controller_epoch=self.epoch)})
            yield self._write_assignments({tp[0]: {tp[1]: tuple(target)}})
            self._send_leader_and_isr([tp], live)
            for broker_id in removed:
                if broker_id in self.context.live_brokers:
                    self.channels.send_quietly(broker_id, m.StopReplicaRequest(
                        controller_id=self.broker_id, controller_epoch=self.epoch,
                        broker_epoch=self.context.live_brokers[broker_id].broker_epoch or -1,
                        delete_partitions=True, partitions=[m.TopicPartition(*tp)]))
            self._send_update_metadata(live, [tp])
            del self.context.reassignments[tp]
            done.append(tp)
            log.info("controller: reassignment of %s-%d to %s complete", tp[0], tp[1],
                     list(target))
        if done:
            yield self._rewrite_reassignment_znode()

    @defer.inlineCallbacks
    def _rewrite_reassignment_znode(self):
        try:
            pending = yield self.tzk.get_partition_reassignment()
        except zk_schema.SchemaError:
            pending = zk_schema.PartitionReassignment({})
        if pending is None:
            return
        remaining = {tp: r for tp, r in pending.partitions.items()
                     if tp in self.context.reassignments}
        yield self.tzk.update_partition_reassignment(remaining, self.epoch_zk_version)

    @defer.inlineCallbacks
    def _auto_leader_rebalance(self):
        if not self.is_active:
            return
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

    # --- controlled shutdown --------------------------------------------------------------------
    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> defer.Deferred:
        return self.enqueue(self._controlled_shutdown, broker_id, broker_epoch)

    @defer.inlineCallbacks
    def _controlled_shutdown(self, broker_id, broker_epoch):
        registration = self.context.live_brokers.get(broker_id)
        if registration is None:
            raise errors.BrokerNotAvailableError(f"broker {broker_id} is not live")
        if broker_epoch >= 0 and registration.broker_epoch not in (None, broker_epoch):
            raise errors.StaleBrokerEpochError(
                f"broker {broker_id} epoch {broker_epoch} is not the registered "
                f"{registration.broker_epoch}")
        self.context.shutting_down.add(broker_id)
        led = [tp for tp, s in self.context.states.items()
               if s.leader == broker_id and len(self.context.replicas(tp)) > 1]
        changed = yield self._elect_leaders(led, kind="controlled_shutdown")
        # followers on the broker leave the ISR now, so acks=all does not wait for them
        shrink = {}
        for tp, state in self.context.states.items():
            if tp in changed or state.leader == broker_id or broker_id not in state.isr:
                continue
            if len(state.isr) > 1:
                shrink[tp] = replace(state, isr=tuple(b for b in state.isr if b != broker_id),
                                     controller_epoch=self.epoch)
        if shrink:
            changed += (yield self._write_states(shrink))
        live = sorted(self.context.live_brokers)
        if changed:
            self._send_leader_and_isr(changed, live)
            self._send_update_metadata(live, changed)
        # the broker stops following, so its leaders do not take it back into the ISR
        following = [m.TopicPartition(t, p) for (t, p), s in self.context.states.items()
                     if s.leader not in (broker_id, NO_LEADER)
                     and broker_id in self.context.replicas((t, p))]
        if following:
            self.channels.send_quietly(broker_id, m.StopReplicaRequest(
                controller_id=self.broker_id, controller_epoch=self.epoch,
                broker_epoch=registration.broker_epoch or -1, delete_partitions=False,
                partitions=following))
        remaining = [m.TopicPartition(t, p) for (t, p), s in self.context.states.items()
                     if s.leader == broker_id]
        log.info("controller: controlled shutdown of broker %d: moved %d, %d remain", broker_id,
                 len(changed), len(remaining))
        return m.ControlledShutdownResponse(remaining_partitions=remaining)
