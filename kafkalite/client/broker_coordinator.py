"""Consumer group membership through the brokers' group coordinator (Kafka 0.9+;
docs/architecture.md, 9. Consumer groups).

What a member does, as Kafka's Java consumer does it (eager rebalancing):

1. **FindCoordinator** to any broker: the coordinator of the group is the leader of its
   ``__consumer_offsets`` partition. COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR and
   COORDINATOR_LOAD_IN_PROGRESS are retried after ``retry_backoff_ms``; NOT_COORDINATOR from any
   later request (or a broken connection) makes the member look the coordinator up again.
2. **JoinGroup** with the subscription (``consumer_protocol``) under every assignor it supports
   (``partition_assignment_strategy``, Kafka's names: "range", "roundrobin", "sticky"). A first
   join is answered MEMBER_ID_REQUIRED with a member id, and the member joins again with it.
   The coordinator answers once every member has (re)joined or the rebalance timeout
   (``max_poll_interval_ms``) passed.
3. The **leader** (the member the coordinator names) runs the chosen assignor locally over every
   member's subscription and the partition counts it reads from the cluster, and sends
   **SyncGroup** with everyone's assignment; the others send an empty SyncGroup. Each gets its
   own assignment back.
4. **Heartbeats** every ``heartbeat_interval_ms``, from a background thread (Kafka's KIP-62), so
   processing between polls does not cost the membership; the thread leaves the group when
   ``poll`` has not been called for ``max_poll_interval_ms`` (the member then rejoins as a new
   one at its next poll). REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID make
   the next ``poll`` revoke everything (``on_partitions_revoked``: the consumer commits there)
   and join again; ``on_partitions_assigned`` follows the SyncGroup.
5. A member rejoins by itself when its subscription changes or the partition count of a
   subscribed topic (for the leader: of any topic of the group) changes.
6. **OffsetCommit** carries the generation and member id (a consumer with manually assigned
   partitions commits as Kafka's "simple" consumer, generation -1, which the coordinator takes
   only while the group has no members); **OffsetFetch** reads committed offsets. ``close``
   leaves the group (LeaveGroup; static members, those with ``group_instance_id``, stay, as in
   Kafka, so a restart within the session timeout gets the same partitions back).

Nothing in ``poll`` blocks on the group: JoinGroup and SyncGroup are sent and their answers
picked up at later polls (a JoinGroup may wait at the coordinator for minutes), so several
consumers driven from one thread rebalance together. Commits and offset fetches block, up to
``default_api_timeout_ms``.

Three connections to the coordinator: one for JoinGroup/SyncGroup (their answers wait for the
other members, and a connection answers in order), one for commits, offset fetches and
LeaveGroup, and the heartbeat thread's own.

The class is cut in three files: this one (the interface and the join/sync state machine),
``broker_coordinator_link`` (finding the coordinator, connections to it, commits and offset
fetches) and ``broker_coordinator_heartbeat`` (the heartbeat thread); their state is this
object's, guarded by its ``_cv``. ``clock``/``sleep`` are injectable for tests.
"""

from __future__ import annotations

import logging
import threading
import time

from kafkalite import errors
from kafkalite.client import consumer_protocol
from kafkalite.client.assignors import assignor_names, get_assignor
from kafkalite.client.broker_coordinator_heartbeat import Heartbeats
from kafkalite.client.broker_coordinator_link import (
    _JOINING,
    _STABLE,
    _SYNCING,
    _UNJOINED,
    COORDINATOR_GONE,
    CoordinatorLink,
    CoordinatorLost,
)
from kafkalite.client.cluster import ClusterMetadata
from kafkalite.client.connection import DEFAULT_CLIENT_ID, BrokerConnection
from kafkalite.client.coordinator import Coordinator
from kafkalite.client.structs import TopicPartition
from kafkalite.errors import KafkaError
from kafkalite.protocol import messages as m

log = logging.getLogger(__name__)

__all__ = ["BrokerCoordinator", "assignor_names"]

class BrokerCoordinator(CoordinatorLink, Heartbeats, Coordinator):
    """A consumer's membership in a broker-coordinated group; see the module doc."""

    def __init__(self, group_id: str, cluster: ClusterMetadata | None = None, *,
                 bootstrap_servers=None, client_id: str | None = None,
                 assignors=("range",), session_timeout_ms: int = 10000,
                 heartbeat_interval_ms: int = 3000, max_poll_interval_ms: int = 300000,
                 group_instance_id: str | None = None, request_timeout_ms: int = 30000,
                 retry_backoff_ms: int = 100, default_api_timeout_ms: int = 60000,
                 clock=time.monotonic, sleep=time.sleep):
        if not isinstance(group_id, str) or not group_id:
            raise errors.ConfigError(f"group_id must be a non-empty string, got {group_id!r}")
        if heartbeat_interval_ms >= session_timeout_ms:
            raise errors.ConfigError(
                f"heartbeat_interval_ms ({heartbeat_interval_ms}) must be lower than "
                f"session_timeout_ms ({session_timeout_ms})")
        if max_poll_interval_ms < 1 or heartbeat_interval_ms < 1:
            raise errors.ConfigError("max_poll_interval_ms and heartbeat_interval_ms must be "
                                     "positive")
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        self.assignors = assignor_names(assignors)
        self.client_id = client_id or DEFAULT_CLIENT_ID
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = max_poll_interval_ms
        self._heartbeat_s = heartbeat_interval_ms / 1000
        self._max_poll_s = max_poll_interval_ms / 1000
        self._request_timeout_ms = request_timeout_ms
        self._backoff_s = retry_backoff_ms / 1000
        self._api_timeout_s = default_api_timeout_ms / 1000
        self._clock = clock            # member and heartbeat timing (tests pass a fake one)
        self._sleep = sleep            # between retries of commits and offset fetches
        self._own_cluster = cluster is None
        self._cluster = cluster if cluster is not None else ClusterMetadata(
            bootstrap_servers or "localhost:9092", client_id=self.client_id,
            request_timeout_ms=request_timeout_ms, retry_backoff_ms=retry_backoff_ms)
        self._pool = None                    # the calling thread's connections, for lookups
        # group state (the heartbeat thread reads it and reports through flags, under _cv)
        self._cv = threading.Condition(threading.RLock())
        self.member_id = ""
        self.generation_id = -1
        self.leader_id: str | None = None
        self.protocol_name: str | None = None
        self._state = _UNJOINED
        self._rejoin_needed = True
        self._fatal: KafkaError | None = None
        self._coordinator: tuple[int, str, int] | None = None
        self._coordinator_epoch = 0
        self._last_found = self._last_dead = None     # for quieter logs during failovers
        self._next_join_at = 0.0
        self._last_poll = clock()
        self._next_heartbeat = 0.0
        self._conns: dict[str, tuple[int, BrokerConnection]] = {}
        self._pending_cid: int | None = None
        self._topics: set[str] = set()
        self._listener = None
        self._owned: set[TopicPartition] = set()
        self._counts: dict[str, int] = {}     # partition counts the assignment was made for
        self._group_topics: set[str] = set()  # every member's topics (known to the leader)
        self._last_assignment: list[TopicPartition] = []   # sent as owned partitions (sticky)
        self._closed = False
        self._thread: threading.Thread | None = None
        self.rebalances = 0
        self.on_rebalance_done = None         # test/bench hook: called with (owned, seconds)
        self._join_started = 0.0

    # --- the Coordinator interface ------------------------------------------------------------
    def subscribe(self, topics: set[str], listener) -> None:
        topics = set(topics)
        self._listener = listener
        with self._cv:
            if topics != self._topics:
                self._topics = topics
                if self._state != _UNJOINED or self.generation_id >= 0:
                    self._request_rejoin("the subscription changed")
                else:
                    self._rejoin_needed = True

    def unsubscribe(self) -> None:
        self._revoke()
        self._leave("the consumer unsubscribed")
        with self._cv:
            self._topics = set()
            self._counts = {}

    def poll(self, cluster) -> set[TopicPartition] | None:
        if self._closed or not self._topics:
            return None
        with self._cv:
            self._last_poll = self._clock()
            fatal, self._fatal = self._fatal, None
        if fatal is not None:
            raise fatal
        result = None
        if self._state == _STABLE:
            if self._metadata_changed():
                self._request_rejoin("the partitions of a subscribed topic changed")
            if not self._rejoin_needed:
                return None
            had = bool(self._owned)
            self._revoke()
            with self._cv:
                self._state = _UNJOINED
            result = set() if had else None
        new = self._advance()
        return new if new is not None else result

    def close(self) -> None:
        if self._closed:
            return
        try:
            if self._owned:
                try:
                    self._revoke()
                except KafkaError as exc:
                    log.warning("group %s: revoking partitions at close failed: %s",
                                self.group_id, exc)
            self._leave("the consumer is being closed")
        finally:
            with self._cv:
                self._closed = True
                self._cv.notify_all()
            thread = self._thread
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout=2.0)     # a heartbeat in flight finishes on its own
            for _epoch, conn in self._conns.values():
                conn.close()
            self._conns.clear()
            if self._pool is not None:
                self._pool.close()
            if self._own_cluster:
                self._cluster.close()

    # --- state ----------------------------------------------------------------------------------
    @property
    def state(self) -> str:
        return self._state

    def assignment(self) -> set[TopicPartition]:
        return set(self._owned)

    def _request_rejoin(self, why: str) -> None:
        with self._cv:
            if not self._rejoin_needed:
                log.info("group %s: member %s will rejoin: %s", self.group_id,
                         self.member_id or "(new)", why)
            self._rejoin_needed = True

    def _reset_generation(self, forget_member: bool) -> None:
        with self._cv:
            self.generation_id = -1
            self.leader_id = None
            if forget_member:
                self.member_id = ""
            self._rejoin_needed = True

    def _revoke(self) -> None:
        owned, self._owned = self._owned, set()
        if owned and self._listener is not None:
            log.info("group %s: member %s revokes %s", self.group_id, self.member_id,
                     _names(owned))
            self._listener.on_partitions_revoked(set(owned))

    def _metadata_changed(self) -> bool:
        snap = self._cluster.snapshot
        gone = errors.UnknownTopicOrPartitionError.code
        for topic, count in self._counts.items():
            if topic in snap.topics:
                if len(snap.topics[topic]) != count:
                    return True
            elif count and snap.topic_errors.get(topic) == gone:
                return True
        return False

    def _record_counts(self, topics: set[str]) -> None:
        snap = self._cluster.snapshot
        self._counts = {t: len(snap.topics.get(t, ())) for t in topics}

    # --- joining ----------------------------------------------------------------------------
    def _advance(self) -> set[TopicPartition] | None:
        """Move the join/sync exchange on without blocking; the new assignment when it
        completes."""
        for _ in range(4):
            now = self._clock()
            if self._state == _UNJOINED:
                if now < self._next_join_at:
                    return None
                if not self._send_join():
                    return None
            response = self._receive()
            if response is None:
                return None
            if self._state == _JOINING:
                self._on_join(response)
                continue
            if self._state == _SYNCING:
                done = self._on_sync(response)
                if done is not None:
                    return done
        return None

    def _retry_join(self, delay: bool = True) -> None:
        with self._cv:
            self._state = _UNJOINED
            self._pending_cid = None
            self._next_join_at = self._clock() + (self._backoff_s if delay else 0.0)

    def _join_timeout_ms(self) -> int:
        return max(self._request_timeout_ms, self.rebalance_timeout_ms + 5000)

    def _send_join(self) -> bool:
        try:
            epoch, conn = self._connection("join", self._join_timeout_ms())
        except CoordinatorLost:
            self._retry_join()
            return False
        except KafkaError as exc:
            if not exc.retriable:
                raise
            self._retry_join()
            return False
        # eager rebalancing: everything is revoked before joining, so the partitions owned
        # until then travel as owned_partitions for the sticky assignor of the leader
        owned = [tp for tp in self._last_assignment if tp.topic in self._topics]
        metadata = consumer_protocol.encode_subscription(self._topics, None, owned)
        request = m.JoinGroupRequest(
            group_id=self.group_id, session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms, member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            protocol_type=consumer_protocol.PROTOCOL_TYPE,
            protocols=[m.JoinGroupProtocol(name, metadata) for name in self.assignors])
        try:
            cid = conn.send(request)
        except KafkaError as exc:
            self._coordinator_dead(epoch, str(exc))
            self._retry_join()
            return False
        with self._cv:
            self._state = _JOINING
            self._pending_cid = cid
            self._rejoin_needed = False
        if not self._join_started:
            self._join_started = self._clock()
        log.debug("group %s: JoinGroup sent (member %r)", self.group_id, self.member_id)
        return True

    def _receive(self):
        """The answer to the pending JoinGroup/SyncGroup if it has arrived (a KafkaError for a
        request-level error); None while waiting or after a lost connection (then the member
        starts over)."""
        held = self._conns.get("join")
        if held is None or self._pending_cid is None:
            self._retry_join()
            return None
        epoch, conn = held
        try:
            results = conn.receive_available()
        except KafkaError as exc:
            conn.close()
            self._coordinator_dead(epoch, str(exc))
            log.info("group %s: lost the coordinator while %s (%s)", self.group_id,
                     "joining" if self._state == _JOINING else "syncing", exc)
            self._retry_join()
            return None
        if not results:
            return None
        _cid, result = results[-1]
        self._pending_cid = None
        return result

    def _on_join(self, response) -> None:
        code = response.code if isinstance(response, KafkaError) else response.error_code
        if code == 0:
            with self._cv:
                self.member_id = response.member_id
                self.generation_id = response.generation_id
                self.leader_id = response.leader
                self.protocol_name = response.protocol_name
            leader = response.leader == response.member_id
            log.info("group %s: joined generation %d as %s (%s), protocol %s", self.group_id,
                     response.generation_id, response.member_id,
                     "leader" if leader else "follower", response.protocol_name)
            assignments = self._assign(response) if leader else []
            self._send_sync(assignments)
            return
        self._join_error(code, response, "JoinGroup")

    def _join_error(self, code: int, response, what: str) -> None:
        name = errors.for_code(code).name
        if code == errors.MemberIdRequiredError.code:
            with self._cv:
                self.member_id = response.member_id
            self._retry_join(delay=False)
        elif code == errors.UnknownMemberIdError.code:
            self._reset_generation(forget_member=True)
            self._retry_join(delay=False)
        elif code == errors.IllegalGenerationError.code:
            self._reset_generation(forget_member=False)
            self._retry_join(delay=False)
        elif code == errors.RebalanceInProgressError.code:
            self._retry_join(delay=False)
        elif code in COORDINATOR_GONE:
            held = self._conns.get("join")
            if held is not None:
                self._coordinator_dead(held[0], name)
            self._retry_join()
        elif code == errors.CoordinatorLoadInProgressError.code:
            self._retry_join()
        else:
            self._retry_join()
            message = getattr(response, "message", None) if isinstance(response, KafkaError) \
                else None
            raise errors.for_code(code, f"{what} for group {self.group_id} failed"
                                        f"{': ' + message if message else ''}")
        log.info("group %s: %s answered %s; joining again", self.group_id, what, name)

    def _assign(self, response) -> list[m.SyncGroupAssignment]:
        """The leader's job: run the group's assignor over every member's subscription."""
        name = response.protocol_name or self.assignors[0]
        assign = get_assignor(name)
        subscriptions: dict[str, set[str]] = {}
        previous: dict[str, list] = {}
        for member in response.members:
            try:
                sub = consumer_protocol.decode_subscription(member.metadata)
            except KafkaError as exc:
                log.warning("group %s: member %s sent an unreadable subscription (%s); it gets "
                            "nothing", self.group_id, member.member_id, exc)
                subscriptions[member.member_id] = set()
                continue
            subscriptions[member.member_id] = set(sub.topics)
            previous[member.member_id] = [tuple(tp) for tp in sub.owned_partitions]
        topics = set().union(*subscriptions.values()) if subscriptions else set()
        self._cluster.add_topics(*topics)
        try:
            snap = self._cluster.refresh()
        except KafkaError as exc:
            log.warning("group %s: metadata refresh before assigning failed (%s); assigning "
                        "with what is known", self.group_id, exc)
            snap = self._cluster.snapshot
        counts = {t: len(snap.topics[t]) for t in topics if t in snap.topics}
        assignment = assign(subscriptions, counts, previous)
        self._group_topics = topics
        log.info("group %s: leader %s assigned (%s) %s", self.group_id, self.member_id, name,
                 {member: _names(tps) for member, tps in sorted(assignment.items())})
        return [m.SyncGroupAssignment(member, consumer_protocol.encode_assignment(
            assignment.get(member, []))) for member in subscriptions]

    def _send_sync(self, assignments: list) -> None:
        held = self._conns.get("join")
        if held is None:
            self._retry_join()
            return
        epoch, conn = held
        request = m.SyncGroupRequest(
            group_id=self.group_id, generation_id=self.generation_id, member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            protocol_type=consumer_protocol.PROTOCOL_TYPE, protocol_name=self.protocol_name,
            assignments=assignments)
        try:
            cid = conn.send(request)
        except KafkaError as exc:
            self._coordinator_dead(epoch, str(exc))
            self._retry_join()
            return
        with self._cv:
            self._state = _SYNCING
            self._pending_cid = cid

    def _on_sync(self, response) -> set[TopicPartition] | None:
        code = response.code if isinstance(response, KafkaError) else response.error_code
        if code != 0:
            self._join_error(code, response, "SyncGroup")
            return None
        try:
            assignment = consumer_protocol.decode_assignment(response.assignment)
        except KafkaError as exc:
            log.warning("group %s: unreadable assignment from the leader (%s); rejoining",
                        self.group_id, exc)
            self._retry_join()
            return None
        owned = {tp for tp in assignment.partitions if tp.topic in self._topics}
        if len(owned) != len(assignment.partitions):
            log.warning("group %s: the leader assigned partitions of topics %s this member "
                        "does not subscribe to; ignoring them", self.group_id,
                        sorted({tp.topic for tp in assignment.partitions} - self._topics))
        with self._cv:
            self._owned = owned
            self._last_assignment = sorted(owned)
            self._state = _STABLE
            self._next_heartbeat = self._clock() + self._heartbeat_s
            self._cv.notify_all()
        tracked = set(self._topics)
        if self.leader_id == self.member_id:
            tracked |= self._group_topics
        self._record_counts(tracked)
        self._start_heartbeats()
        self.rebalances += 1
        elapsed = self._clock() - self._join_started if self._join_started else 0.0
        self._join_started = 0.0
        log.info("group %s: member %s owns %s in generation %d", self.group_id,
                 self.member_id, _names(owned), self.generation_id)
        if self._listener is not None:
            self._listener.on_partitions_assigned(set(owned))
        if self.on_rebalance_done:
            self.on_rebalance_done(set(owned), elapsed)
        return set(owned)

    def _leave(self, why: str) -> None:
        with self._cv:
            member, state = self.member_id, self._state
            self._state = _UNJOINED
            self._pending_cid = None
            self.generation_id = -1
            self._rejoin_needed = True
            if self.group_instance_id is None:
                self.member_id = ""
        held = self._conns.pop("join", None)
        if held is not None:         # an unanswered JoinGroup/SyncGroup must not linger
            held[1].close()
        if not member or self.group_instance_id is not None:
            return
        if state == _UNJOINED and self._coordinator is None:
            return
        log.info("group %s: member %s leaves the group (%s)", self.group_id, member, why)
        try:
            epoch, conn = self._connection("request", self._request_timeout_ms)
            response = conn.request(m.LeaveGroupRequest(
                group_id=self.group_id, members=[m.LeaveGroupMember(member, None)]))
            if response.error_code:
                log.info("group %s: LeaveGroup answered %s", self.group_id,
                         errors.for_code(response.error_code).name)
        except (KafkaError, CoordinatorLost) as exc:
            log.info("group %s: leaving cleanly failed (%s); the session timeout will remove "
                     "%s", self.group_id, exc, member)

def _names(tps) -> list[str]:
    return [f"{tp[0]}-{tp[1]}" for tp in sorted(tps)]
