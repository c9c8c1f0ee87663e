"""A broker-coordinated group member's link to its coordinator, and its offsets there.

Finding the coordinator (FindCoordinator to any broker), the member's connections to it (one per
kind of exchange: "join" for JoinGroup/SyncGroup, "request" for commits, offset fetches and
LeaveGroup; the heartbeat thread holds its own), forgetting it when it moves or dies (an epoch
counter makes a stale failure report harmless), and requests retried until
``default_api_timeout_ms`` (OffsetCommit, OffsetFetch). Part of ``BrokerCoordinator``
(``broker_coordinator.py`` has the member's state machine and the module doc); its state lives
there and is guarded by its ``_cv``.
"""

from __future__ import annotations

import logging
from typing import Iterable

from kafkalite import errors
from kafkalite.client.connection import BrokerConnection
from kafkalite.client.structs import OffsetAndMetadata, TopicPartition
from kafkalite.errors import KafkaError
from kafkalite.protocol import messages as m

log = logging.getLogger("kafkalite.client.broker_coordinator")

__all__ = ["CoordinatorLink", "CoordinatorLost", "COORDINATOR_GONE", "RETRIABLE"]

# the member's states (its state machine is broker_coordinator's; its parts read them)
_UNJOINED, _JOINING, _SYNCING, _STABLE = "UNJOINED", "JOINING", "SYNCING", "STABLE"

COORDINATOR_GONE = {errors.CoordinatorNotAvailableError.code, errors.NotCoordinatorError.code}
RETRIABLE = COORDINATOR_GONE | {errors.CoordinatorLoadInProgressError.code}

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


class CoordinatorLost(Exception):
    """Internal: the coordinator is unknown or unreachable now; retry after a backoff."""


class CoordinatorLink:
    """BrokerCoordinator's coordinator lookup, connections and offset requests (a mixin)."""

    # KIP-447: a read_committed consumer's offset fetches wait out offsets committed in a
    # transaction that is not complete yet (UNSTABLE_OFFSET_COMMIT, retried), as Java's
    require_stable: bool = False

    def committed(self, tps: Iterable[TopicPartition]) -> dict:
        tps = [TopicPartition(*tp) for tp in tps]
        if not tps:
            return {}
        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = m.OffsetFetchRequest(group_id=self.group_id, topics=[
            m.OffsetFetchTopic(t, sorted(set(ps))) for t, ps in by_topic.items()],
            require_stable=self.require_stable)
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

    # --- the coordinator and connections to it ----------------------------------------------
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
            if response.error_code in RETRIABLE:
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
        """The calling (user) thread's connection ``kind`` to the coordinator; CoordinatorLost
        when it is unknown (after one lookup)."""
        if self._pool is None:
            self._pool = self._cluster.pool()
        known = self._known_coordinator(self._pool)
        if known is None:
            raise CoordinatorLost("coordinator not available")
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
            raise CoordinatorLost(str(exc)) from None
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
                    raise CoordinatorLost(str(exc)) from None
                verdict = check(response)
                if verdict is None:
                    return response
                code, message = verdict
                last = errors.for_code(code, message)
                if code in COORDINATOR_GONE:
                    self._coordinator_dead(epoch, last.name)
            except CoordinatorLost as exc:
                last = last or errors.CoordinatorNotAvailableError(str(exc))
            if self._clock() >= deadline:
                raise errors.KafkaTimeoutError(
                    f"group {self.group_id}: {what} did not succeed within "
                    f"{self._api_timeout_s * 1000:.0f} ms (last error: {last})")
            self._sleep(self._backoff_s)

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
                if code in RETRIABLE:
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
    if code in RETRIABLE or code == errors.UnstableOffsetCommitError.code:
        return code, "fetching committed offsets"
    raise errors.for_code(code, "fetching committed offsets")
