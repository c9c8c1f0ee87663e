"""Consumer group membership through ZooKeeper (Kafka 0.8's scheme, done carefully).

A member registers the ephemeral ``/consumers/<g>/ids/<member>`` with its subscription and watches
the group's members, its topics' partition lists and ``/brokers/ids``. Any change marks the member
dirty; once the changes have been quiet for ``rebalance_debounce_ms`` (so a burst of joins costs a
few rebalances, not one per event per member) the next ``poll`` rebalances:

1. the consumer stops fetching and commits what it processed (``on_partitions_revoked``);
2. the member deletes its owner znodes;
3. it reads every member's subscription and every subscribed topic's partition count, and runs the
   assignor over the sorted members and partitions: every member computes the same answer;
4. it claims its partitions by creating ephemeral ``/consumers/<g>/owners/<t>/<p>``, retrying with
   backoff while a previous owner has not let go yet. If a claim still fails, it releases what it
   claimed in this attempt and starts over, up to ``rebalance_max_retries`` times, then fails with
   RebalanceFailedError;
5. it reads the committed offsets and resumes (``on_partitions_assigned``).

When the group changes again while a member is still claiming (others already follow the newer
view), the attempt is dropped without counting against the retries: the member returns owning
nothing and rebalances again after the debounce. When a rebalance fails (RebalanceFailedError, or
a ZooKeeper error after the member revoked), every later poll tries again at once, and the
consumer fetches nothing it revoked meanwhile. When the session expires, the next poll revokes
everything at once (the owner znodes went with the session), then the member registers again.

An owner znode is only ever created when it does not exist, so a partition is never owned by two
members at once; a crashed member's owners vanish with its session.

For the sticky assignor every member needs the same view of who owned what: each member records its
assignment in its registration (an ``assignment`` field Kafka's payload does not have), and the
next rebalance reads it from there.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from typing import Iterable

import zk_schema
from zk_schema.consumers import ConsumerRegistration, new_member_id, owner_thread_id

from kafkalite import errors
from kafkalite.client.assignors import get_assignor
from kafkalite.client.coordinator import Coordinator
from kafkalite.client.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)


class ZooKeeperCoordinator(Coordinator):
    def __init__(self, group_id: str, zookeeper: str, assignor: str = "range",
                 session_timeout_ms: int = 6000, rebalance_max_retries: int = 4,
                 rebalance_backoff_ms: int = 2000, rebalance_debounce_ms: int = 300,
                 claim_timeout_ms: int | None = None, pattern: str | None = None,
                 client_id: str | None = None, zk_client=None, clock=time.monotonic,
                 sleep=time.sleep):
        from kafkalite.zk import ZkClient, ZkState

        self.group_id = group_id
        self.zookeeper = zookeeper
        self._clock = clock            # debounce, claim deadlines (tests pass a fake one)
        self._sleep = sleep            # the backoff between rebalance attempts
        self.assign = get_assignor(assignor)
        self.assignor_name = assignor
        self.rebalance_max_retries = rebalance_max_retries
        self.rebalance_backoff_s = rebalance_backoff_ms / 1000.0
        self.debounce_s = rebalance_debounce_ms / 1000.0
        self.claim_timeout_s = (claim_timeout_ms if claim_timeout_ms is not None
                                else max(session_timeout_ms + 2000, 4000)) / 1000.0
        self.pattern = re.compile(pattern) if pattern else None
        self.client_id = client_id
        self.member_id = new_member_id(group_id, socket.gethostname(),
                                       int(time.time() * 1000))
        self.owner_id = owner_thread_id(self.member_id)
        self._zk_state = ZkState
        self.zk = zk_client or ZkClient(zookeeper, session_timeout_ms=session_timeout_ms)
        self._own_zk = zk_client is None
        self._topics: set[str] = set()
        self._listener = None
        self._owned: set[TopicPartition] = set()
        self._assignment: list = []
        self._lock = threading.Lock()
        self._last_change = 0.0
        self._dirty = False
        self._retry_now = False       # a rebalance failed after revoking: redo it at next poll
        self._session_lost = False    # the session expired: our owner znodes are gone
        self._registered = False
        self._watches: list = []
        self._topic_watches: dict[str, object] = {}
        self._closed = False
        self.rebalances = 0
        self.on_rebalance_done = None    # test/bench hook: called with (owned, seconds)

    # --- membership -----------------------------------------------------------------------------
    def _start(self) -> None:
        if self._registered:
            return
        if not self.zk.connected:
            self.zk.start()
            self.zk.add_state_listener(self._on_state)
        self._register()
        group_ids = zk_schema.consumers.group_ids_path(self.group_id)
        self.zk.ensure_path(group_ids)
        self._watches.append(self.zk.watch_children(group_ids, self._on_change))
        self._watches.append(self.zk.watch_children(zk_schema.BROKER_IDS_PATH, self._on_change))
        if self.pattern is not None:
            self._watches.append(self.zk.watch_children(zk_schema.TOPICS_PATH,
                                                        self._on_topics))

    def _register(self) -> None:
        registration = self._registration()
        self.zk.register_consumer(self.group_id, self.member_id, registration)
        self._registered = True
        self._mark_dirty()
        log.info("group %s: member %s registered (subscription %s)", self.group_id,
                 self.member_id, sorted(registration.subscription))

    def _mark_dirty(self, *_args) -> None:
        with self._lock:
            self._dirty = True
            self._last_change = self._clock()

    def _on_change(self, _children) -> None:
        self._mark_dirty()

    def _on_topics(self, children) -> None:
        matched = {t for t in (children or ()) if self.pattern.fullmatch(t)}
        if matched != self._topics:
            self._topics = matched
            self._watch_topics()
        self._mark_dirty()

    def _watch_topics(self) -> None:
        for topic in self._topics:
            if topic not in self._topic_watches:
                self._topic_watches[topic] = self.zk.watch_data(
                    zk_schema.topics.topic_path(topic), self._mark_dirty)

    def _on_state(self, state) -> None:
        if state == self._zk_state.LOST:
            log.warning("group %s: ZooKeeper session of %s expired; re-registering",
                        self.group_id, self.member_id)
            self._registered = False
            self._session_lost = True
            self._mark_dirty()

    # --- Coordinator interface ------------------------------------------------------------------
    def subscribe(self, topics: set[str], listener) -> None:
        if self.pattern is None:
            self._topics = set(topics)
        self._listener = listener
        self._start()
        self._watch_topics()
        self.zk.update_consumer_registration(self.group_id, self.member_id, self._registration())
        self._mark_dirty()

    def unsubscribe(self) -> None:
        self._revoke()
        self._topics = set()
        self._mark_dirty()

    def poll(self, cluster) -> set[TopicPartition] | None:
        if self._closed:
            return None
        lost = None
        if self._session_lost:
            # the expired session took our owner znodes with it, and other members may claim
            # them any moment: stop consuming them now, not after the debounce (if revoking
            # raises, the next poll tries again)
            if self._owned:
                log.warning("group %s: %s lost %s with its session", self.group_id,
                            self.member_id, sorted(self._owned))
                self._revoke()
            self._session_lost = False
            lost = set()
        if not self._registered:
            try:
                self._register()
            except errors.KafkaError as exc:
                log.info("group %s: cannot register yet (%s)", self.group_id, exc)
                return lost
        with self._lock:
            if not self._dirty:
                return lost
            if not self._retry_now and self._clock() - self._last_change < self.debounce_s:
                return lost
            self._dirty = False
            self._retry_now = False
        try:
            return self._rebalance()
        except BaseException:
            # we may have revoked already: the next poll must rebalance again, without waiting
            # for another change (the consumer fetches nothing it revoked meanwhile)
            with self._lock:
                self._dirty = True
                self._retry_now = True
            raise

    def committed(self, tps: Iterable[TopicPartition]) -> dict:
        tps = [TopicPartition(*tp) for tp in tps]
        stored = self.zk.get_consumer_offsets(self.group_id)
        return {tp: (OffsetAndMetadata(stored[(tp.topic, tp.partition)], "")
                     if (tp.topic, tp.partition) in stored else None) for tp in tps}

    def commit(self, offsets: dict) -> None:
        plain = {}
        for tp, value in offsets.items():
            offset = value.offset if isinstance(value, OffsetAndMetadata) else int(value)
            plain[(tp[0], tp[1])] = offset
        if plain:
            self.zk.set_consumer_offsets(self.group_id, plain)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for watch in self._watches + list(self._topic_watches.values()):
            watch.cancel()
        try:
            self._revoke()
            self.zk.unregister_consumer(self.group_id, self.member_id)
        except errors.KafkaError as exc:
            log.info("group %s: leaving cleanly failed (%s); the session's end cleans up",
                     self.group_id, exc)
        if self._own_zk:
            self.zk.stop()

    # --- the rebalance --------------------------------------------------------------------------
    def _registration(self) -> ConsumerRegistration:
        subscription = ({self.pattern.pattern: 1} if self.pattern is not None
                        else {t: 1 for t in sorted(self._topics)})
        return ConsumerRegistration(subscription=subscription,
                                    pattern="white_list" if self.pattern else "static",
                                    timestamp_ms=int(time.time() * 1000),
                                    assignment=tuple(self._assignment))

    def _revoke(self) -> None:
        if not self._owned:
            return
        if self._listener is not None:
            self._listener.on_partitions_revoked(set(self._owned))
        for tp in sorted(self._owned):
            self.zk.release_partition_owner(self.group_id, tp.topic, tp.partition,
                                            self.owner_id)
            self._owned.discard(tp)

    def _group_view(self):
        registrations = self.zk.get_consumer_registrations(self.group_id)
        all_topics = None
        subscriptions: dict[str, set] = {}
        for member, registration in registrations.items():
            if registration.pattern == "static":
                subscriptions[member] = set(registration.subscription)
            else:
                if all_topics is None:
                    all_topics = self.zk.list_topics()
                regexes = [re.compile(p) for p in registration.subscription]
                subscriptions[member] = {t for t in all_topics
                                         if any(r.fullmatch(t) for r in regexes)}
        topics = set().union(*subscriptions.values()) if subscriptions else set()
        assignments = self.zk.get_topic_assignments(sorted(topics))
        counts = {t: a.partition_count for t, a in assignments.items()}
        previous = self._previous_assignment(registrations)
        return subscriptions, counts, previous

    @staticmethod
    def _previous_assignment(registrations) -> dict:
        """What each live member recorded owning after its last rebalance."""
        return {member: [tuple(tp) for tp in registration.assignment]
                for member, registration in registrations.items()}

    def _rebalance(self) -> set[TopicPartition]:
        """Revoke, assign, claim; the new set of owned partitions. An attempt overtaken by a
        newer change (its claims then fail because others follow the newer view) does not count
        as a failed attempt: the member returns owning nothing and the next poll rebalances on
        the newer view once the debounce has passed."""
        started = self._clock()
        last_error = None
        for attempt in range(self.rebalance_max_retries + 1):
            self._revoke()
            subscriptions, counts, previous = self._group_view()
            if self.member_id not in subscriptions:
                # our registration is not visible yet (or vanished): register and try again
                self._register()
                subscriptions, counts, previous = self._group_view()
            assignment = self.assign(subscriptions, counts, previous)
            mine = [TopicPartition(t, p) for t, p in assignment.get(self.member_id, [])]
            claimed = self._claim(mine)
            if claimed is not None:
                self._owned = set(claimed)
                self._assignment = sorted((tp.topic, tp.partition) for tp in claimed)
                self.zk.update_consumer_registration(self.group_id, self.member_id,
                                                     self._registration())
                self.rebalances += 1
                elapsed = self._clock() - started
                log.info("group %s: member %s owns %s after rebalance %d (%.2f s, %s)",
                         self.group_id, self.member_id,
                         [f"{tp.topic}-{tp.partition}" for tp in sorted(self._owned)],
                         self.rebalances, elapsed, self.assignor_name)
                if self._listener is not None:
                    self._listener.on_partitions_assigned(set(self._owned))
                if self.on_rebalance_done:
                    self.on_rebalance_done(set(self._owned), elapsed)
                return set(self._owned)
            if self._dirty:
                log.info("group %s: the group changed while %s was claiming %s; starting over",
                         self.group_id, self.member_id, sorted(mine))
                return set()
            last_error = f"could not claim all of {sorted(mine)}"
            log.info("group %s: rebalance attempt %d of %s failed (%s); backing off",
                     self.group_id, attempt + 1, self.member_id, last_error)
            self._sleep(self.rebalance_backoff_s)
            with self._lock:
                self._dirty = False
        raise errors.RebalanceFailedError(
            f"group {self.group_id}: member {self.member_id} could not complete a rebalance "
            f"after {self.rebalance_max_retries + 1} attempts ({last_error}); another member may "
            f"hold partitions it should have released, or rebalance.max.retries is too low")

    def _claim(self, tps: list[TopicPartition]) -> list[TopicPartition] | None:
        """Claim every owner znode, waiting for previous owners to release; None on failure
        (after undoing this attempt's claims)."""
        claimed: list[TopicPartition] = []
        pending = list(tps)
        deadline = self._clock() + self.claim_timeout_s
        delay = 0.02
        while pending:
            still = []
            for tp in pending:
                if self.zk.claim_partition_owner(self.group_id, tp.topic, tp.partition,
                                                 self.owner_id):
                    claimed.append(tp)
                else:
                    still.append(tp)
            pending = still
            if not pending:
                break
            if self._clock() > deadline or self._dirty:
                for tp in claimed:
                    self.zk.release_partition_owner(self.group_id, tp.topic, tp.partition,
                                                    self.owner_id)
                return None
            self._sleep(delay)
            delay = min(delay * 2, 0.5)
        return claimed
