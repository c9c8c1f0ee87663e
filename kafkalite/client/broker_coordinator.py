"""Consumer group membership through the brokers' group coordinator (Kafka 0.9+, DESIGN section 9).

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
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Iterable

from kafkalite import errors
from kafkalite.client import consumer_protocol
from kafkalite.client.assignors import get_assignor
from kafkalite.client.cluster import ClusterMetadata
from kafkalite.client.connection import DEFAULT_CLIENT_ID, BrokerConnection
from kafkalite.client.coordinator import Coordinator
from kafkalite.client.structs import OffsetAndMetadata, TopicPartition
from kafkalite.errors import KafkaError
from kafkalite.protocol import messages as m

log = logging.getLogger(__name__)

__all__ = ["BrokerCoordinator", "assignor_names"]

#: Kafka's assignor class names, for users who bring their Java settings along
_ALIASES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "RangeAssignor": "range", "RoundRobinAssignor": "roundrobin", "StickyAssignor": "sticky",
}

_UNJOINED, _JOINING, _SYNCING, _STABLE = "UNJOINED", "JOINING", "SYNCING", "STABLE"

_COORDINATOR_GONE = {errors.CoordinatorNotAvailableError.code, errors.NotCoordinatorError.code}
_RETRIABLE = _COORDINATOR_GONE | {errors.CoordinatorLoadInProgressError.code}

_COMMIT_FAILED = ("Commit cannot be completed since the group has already rebalanced and "
                  "assigned the partitions to another member. This means that the time between "
                  "subsequent calls to poll() was longer than the configured "
                  "max_poll_interval_ms, which typically implies that the poll loop is spending "
                  "too much time message processing. You can address this either by increasing "
                  "max_poll_interval_ms or by reducing the maximum size of batches returned in "
                  "poll() with max_poll_records.")
_COMMIT_REBALANCING = ("Offset commit cannot be completed since the consumer is undergoing a "
                       "rebalance for auto partition assignment. You can try completing the "
                       "rebalance by calling poll() and then retry the operation.")


def assignor_names(strategy) -> list[str]:
    """``partition_assignment_strategy`` (a name or a list of them, Kafka's class names
    accepted) as Kafka's protocol names; ValueError for an unknown one."""
    if isinstance(strategy, str):
        strategy = [strategy]
    names = []
    for item in strategy:
        name = _ALIASES.get(item, item)
        get_assignor(name)            # ValueError naming the choices
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError("partition_assignment_strategy is empty")
    return names


class _CoordinatorLost(Exception):
    """Internal: the coordinator is unknown or unreachable now; retry after a backoff."""


class BrokerCoordinator(Coordinator):
    """A consumer's membership in a broker-coordinated group; see the module doc."""

    def __init__(self, group_id: str, cluster: ClusterMetadata | None = None, *,
                 bootstrap_servers=None, client_id: str | None = None,
                 assignors=("range",), session_timeout_ms: int = 10000,
                 heartbeat_interval_ms: int = 3000, max_poll_interval_ms: int = 300000,
                 group_instance_id: str | None = None, request_timeout_ms: int = 30000,
                 retry_backoff_ms: int = 100, default_api_timeout_ms: int = 60000,
                 clock=time.monotonic):
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
        self._clock = clock
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

    def committed(self, tps: Iterable[TopicPartition]) -> dict:
        tps = [TopicPartition(*tp) for tp in tps]
        if not tps:
            return {}
        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = m.OffsetFetchRequest(group_id=self.group_id, topics=[
            m.OffsetFetchTopic(t, sorted(set(ps))) for t, ps in by_topic.items()])
        response = self._request_coordinator(request, "fetching committed offsets",
                                             lambda r: _offset_fetch_error(r))
        found = {}
        for t in response.topics:
            for p in t.partitions:
                found[TopicPartition(t.topic, p.partition)] = p
        out = {}
        for tp in tps:
            p = found.get(tp)
            out[tp] = (OffsetAndMetadata(p.committed_offset, p.metadata or "")
                       if p is not None and p.committed_offset >= 0 else None)
        return out

    def commit(self, offsets: dict) -> None:
        plain: dict[str, list[m.OffsetCommitPartition]] = {}
        for tp, value in offsets.items():
            if isinstance(value, OffsetAndMetadata):
                offset, metadata = value.offset, value.metadata
            else:
                offset, metadata = int(value), ""
            plain.setdefault(tp[0], []).append(m.OffsetCommitPartition(int(tp[1]), offset, -1,
                                                                       metadata or ""))
        if not plain:
            return
        with self._cv:
            if self._topics:                  # group management: commit in our generation
                if self.generation_id < 0 or self._state != _STABLE:
                    raise errors.RebalanceInProgressError(_COMMIT_REBALANCING)
                generation, member = self.generation_id, self.member_id
            else:                             # manually assigned partitions
                generation, member = -1, ""
        request = m.OffsetCommitRequest(
            group_id=self.group_id, generation_id=generation, member_id=member,
            group_instance_id=self.group_instance_id if member else None,
            topics=[m.OffsetCommitTopic(t, ps) for t, ps in plain.items()])
        self._request_coordinator(request, "committing offsets", self._commit_error)

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

    # --- the coordinator and connections to it ------------------------------------------------
    def _lookup(self, pool) -> tuple[int, str, int] | None:
        """One FindCoordinator to a broker; the address, or None to retry later."""
        snap = self._cluster.snapshot
        if not snap.brokers:
            try:
                snap = self._cluster.refresh()
            except KafkaError as exc:
                log.info("group %s: no cluster metadata yet (%s)", self.group_id, exc)
                return None
        request = m.FindCoordinatorRequest(key=self.group_id)
        for node in sorted(snap.brokers, key=lambda n: (pool.peek(n) is None, n)):
            try:
                response = pool.get(node).request(request)
            except KafkaError as exc:
                if not exc.retriable and not isinstance(exc, errors.NetworkError):
                    raise
                pool.drop(node)
                continue
            if response.error_code == 0:
                return response.node_id, response.host, response.port
            if response.error_code in _RETRIABLE:
                log.debug("group %s: FindCoordinator answered %s", self.group_id,
                          errors.for_code(response.error_code).name)
                return None
            raise errors.for_code(response.error_code,
                                  f"finding the coordinator of group {self.group_id}: "
                                  f"{response.error_message or ''}".rstrip(": "))
        self._cluster.request_update()
        return None

    def _known_coordinator(self, pool) -> tuple[int, tuple[int, str, int]] | None:
        with self._cv:
            if self._coordinator is not None:
                return self._coordinator_epoch, self._coordinator
            epoch = self._coordinator_epoch
        found = self._lookup(pool)
        if found is None:
            return None
        with self._cv:
            if self._coordinator is None and self._coordinator_epoch == epoch:
                self._coordinator = found
                self._coordinator_epoch += 1
                # while leadership moves, brokers still name the dead one for a while
                level = logging.DEBUG if found == self._last_found else logging.INFO
                self._last_found = found
                log.log(level, "group %s: discovered coordinator %s:%d (id %d)", self.group_id,
                        found[1], found[2], found[0])
            return self._coordinator_epoch, self._coordinator

    def _coordinator_dead(self, epoch: int, why: str) -> None:
        with self._cv:
            if self._coordinator_epoch == epoch and self._coordinator is not None:
                level = logging.DEBUG if self._coordinator == self._last_dead else logging.INFO
                self._last_dead = self._coordinator
                log.log(level, "group %s: coordinator %s:%d (id %d) is unavailable or invalid "
                        "(%s); will look it up again", self.group_id, self._coordinator[1],
                        self._coordinator[2], self._coordinator[0], why)
                self._coordinator = None
                self._coordinator_epoch += 1

    def _connection(self, kind: str, timeout_ms: int) -> tuple[int, BrokerConnection]:
        """The calling (user) thread's connection ``kind`` to the coordinator; _CoordinatorLost
        when it is unknown (after one lookup)."""
        if self._pool is None:
            self._pool = self._cluster.pool()
        known = self._known_coordinator(self._pool)
        if known is None:
            raise _CoordinatorLost("coordinator not available")
        epoch, (node_id, host, port) = known
        held = self._conns.get(kind)
        if held is not None and held[0] == epoch and not held[1].dead:
            return held
        if held is not None:
            held[1].close()
        try:
            conn = BrokerConnection(host, port, client_id=self.client_id,
                                    request_timeout_ms=timeout_ms, node_id=node_id,
                                    security=self._cluster.security)
        except KafkaError as exc:
            self._coordinator_dead(epoch, str(exc))
            raise _CoordinatorLost(str(exc)) from None
        self._conns[kind] = (epoch, conn)
        return epoch, conn

    def _request_coordinator(self, request, what: str, check):
        """Send ``request`` to the coordinator and wait, retrying coordinator moves, loading
        and lost connections until ``default_api_timeout_ms``. ``check(response)`` returns
        None when done, "retry", or raises."""
        deadline = self._clock() + self._api_timeout_s
        last = None
        while True:
            try:
                epoch, conn = self._connection("request", self._request_timeout_ms)
                try:
                    response = conn.request(request)
                except KafkaError as exc:
                    if not exc.retriable and not isinstance(exc, errors.NetworkError):
                        raise
                    conn.close()
                    self._coordinator_dead(epoch, str(exc))
                    raise _CoordinatorLost(str(exc)) from None
                verdict = check(response)
                if verdict is None:
                    return response
                code, message = verdict
                last = errors.for_code(code, message)
                if code in _COORDINATOR_GONE:
                    self._coordinator_dead(epoch, last.name)
            except _CoordinatorLost as exc:
                last = last or errors.CoordinatorNotAvailableError(str(exc))
            if self._clock() >= deadline:
                raise errors.KafkaTimeoutError(
                    f"group {self.group_id}: {what} did not succeed within "
                    f"{self._api_timeout_s * 1000:.0f} ms (last error: {last})")
            time.sleep(self._backoff_s)

    def _commit_error(self, response):
        """None when every partition was committed; (code, message) to retry; raises the
        rest (Kafka's CommitFailedException cases as their wire errors, explained)."""
        retry = None
        for t in response.topics:
            for p in t.partitions:
                code = p.error_code
                if code == 0:
                    continue
                where = f"{t.topic}-{p.partition}"
                if code in _RETRIABLE:
                    retry = (code, f"committing {where}")
                    continue
                if code == errors.RebalanceInProgressError.code:
                    self._request_rejoin("the group is rebalancing")
                    raise errors.RebalanceInProgressError(_COMMIT_REBALANCING)
                if code in (errors.UnknownMemberIdError.code, errors.IllegalGenerationError.code,
                            errors.FencedInstanceIdError.code):
                    self._reset_generation(code == errors.UnknownMemberIdError.code)
                    raise errors.for_code(code, _COMMIT_FAILED)
                raise errors.for_code(code, f"committing the offset of {where} for group "
                                            f"{self.group_id}")
        return retry

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
        except _CoordinatorLost:
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
        elif code in _COORDINATOR_GONE:
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
        except (KafkaError, _CoordinatorLost) as exc:
            log.info("group %s: leaving cleanly failed (%s); the session timeout will remove "
                     "%s", self.group_id, exc, member)

    # --- heartbeats ---------------------------------------------------------------------------
    def _start_heartbeats(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._heartbeat_loop,
                                            name=f"kafkalite-heartbeat-{self.group_id}",
                                            daemon=True)
            self._thread.start()

    def _heartbeat_loop(self) -> None:
        pool = self._cluster.pool()
        held: tuple[int, BrokerConnection] | None = None
        try:
            while True:
                with self._cv:
                    if self._closed:
                        return
                    # heartbeats go on while a rebalance waits for this member's next poll
                    # (they keep its session; the coordinator answers REBALANCE_IN_PROGRESS),
                    # and stop once it rejoins or has no generation any more
                    if self._state != _STABLE or self.generation_id < 0:
                        self._cv.wait(1.0)
                        continue
                    now = self._clock()
                    if now - self._last_poll > self._max_poll_s:
                        expired = True
                    else:
                        expired = False
                        wait = self._next_heartbeat - now
                        if wait > 0:
                            self._cv.wait(wait)
                            continue
                    generation, member = self.generation_id, self.member_id
                    self._next_heartbeat = now + self._heartbeat_s
                if expired:
                    self._poll_timeout_expired(pool)
                    continue
                held = self._heartbeat(pool, held, generation, member)
        except Exception:  # noqa: BLE001 - never die silently
            log.exception("group %s: heartbeat thread failed", self.group_id)
        finally:
            if held is not None:
                held[1].close()
            pool.close()

    def _heartbeat(self, pool, held, generation: int, member: str):
        known = self._known_coordinator(pool)
        if known is None:
            with self._cv:
                self._next_heartbeat = self._clock() + self._backoff_s
            return held
        epoch, (node_id, host, port) = known
        if held is None or held[0] != epoch or held[1].dead:
            if held is not None:
                held[1].close()
            try:
                held = (epoch, BrokerConnection(host, port, client_id=self.client_id,
                                                request_timeout_ms=self._request_timeout_ms,
                                                node_id=node_id,
                                                security=self._cluster.security))
            except KafkaError as exc:
                self._coordinator_dead(epoch, str(exc))
                with self._cv:
                    self._next_heartbeat = self._clock() + self._backoff_s
                return None
        try:
            response = held[1].request(m.HeartbeatRequest(
                group_id=self.group_id, generation_id=generation, member_id=member,
                group_instance_id=self.group_instance_id))
            code = response.error_code
        except KafkaError as exc:
            if exc.code is None or isinstance(exc, errors.NetworkError):
                held[1].close()
                self._coordinator_dead(epoch, str(exc))
                with self._cv:
                    self._next_heartbeat = self._clock() + self._backoff_s
                return None
            code = exc.code
        if code == 0:
            return held
        name = errors.for_code(code).name
        with self._cv:
            if generation != self.generation_id or member != self.member_id:
                return held                  # the member moved on meanwhile: stale answer
            if code == errors.RebalanceInProgressError.code:
                self._request_rejoin("the coordinator started a rebalance")
            elif code in (errors.IllegalGenerationError.code, errors.UnknownMemberIdError.code):
                log.info("group %s: heartbeat answered %s; rejoining", self.group_id, name)
                self._reset_generation(code == errors.UnknownMemberIdError.code)
            elif code == errors.FencedInstanceIdError.code:
                self._reset_generation(True)
                self._fatal = errors.FencedInstanceIdError(
                    f"group {self.group_id}: another consumer joined with group_instance_id "
                    f"{self.group_instance_id!r}; this one is fenced off")
            elif code in _RETRIABLE:
                self._coordinator_dead(epoch, name)
                self._next_heartbeat = self._clock() + self._backoff_s
            else:
                log.warning("group %s: heartbeat answered %s", self.group_id, name)
        return held

    def _poll_timeout_expired(self, pool) -> None:
        log.warning("group %s: consumer poll timeout has expired. This means the time between "
                    "subsequent calls to poll() was longer than the configured "
                    "max_poll_interval_ms (%d), which typically implies that the poll loop is "
                    "spending too much time processing messages. You can address this either "
                    "by increasing max_poll_interval_ms or by reducing the maximum size of "
                    "batches returned in poll() with max_poll_records.", self.group_id,
                    self.rebalance_timeout_ms)
        with self._cv:
            member = self.member_id
            dynamic = self.group_instance_id is None
            self._reset_generation(forget_member=dynamic)
        if not dynamic or not member:
            return
        known = self._known_coordinator(pool)
        if known is None:
            return
        _epoch, (node_id, host, port) = known
        conn = None
        try:
            conn = BrokerConnection(host, port, client_id=self.client_id,
                                    request_timeout_ms=self._request_timeout_ms,
                                    node_id=node_id, security=self._cluster.security)
            conn.request(m.LeaveGroupRequest(group_id=self.group_id,
                                             members=[m.LeaveGroupMember(member, None)]))
        except KafkaError as exc:
            log.info("group %s: LeaveGroup after the poll timeout failed: %s", self.group_id,
                     exc)
        finally:
            if conn is not None:
                conn.close()


def _offset_fetch_error(response):
    code = response.error_code
    if code == 0:
        for t in response.topics:
            for p in t.partitions:
                if p.error_code:
                    code = p.error_code
                    break
    if code == 0:
        return None
    if code in _RETRIABLE or code == errors.UnstableOffsetCommitError.code:
        return code, "fetching committed offsets"
    raise errors.for_code(code, "fetching committed offsets")


def _names(tps) -> list[str]:
    return [f"{tp[0]}-{tp[1]}" for tp in sorted(tps)]
