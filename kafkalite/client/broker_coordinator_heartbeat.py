"""A broker-coordinated group member's heartbeat thread (Kafka's KIP-62).

Heartbeats go every ``heartbeat_interval_ms`` from a background thread, on a connection of its
own, so processing between polls does not cost the membership; the thread leaves the group when
``poll`` has not been called for ``max_poll_interval_ms``. What the coordinator answers is
reported to the member through its state flags, under its ``_cv``: the member's next ``poll``
acts on them. Part of ``BrokerCoordinator`` (``broker_coordinator.py`` has the module doc).
"""

from __future__ import annotations

import logging
import threading

from kafkalite import errors
from kafkalite.client.broker_coordinator_link import _STABLE, RETRIABLE
from kafkalite.client.connection import BrokerConnection
from kafkalite.errors import KafkaError
from kafkalite.protocol import messages as m

log = logging.getLogger("kafkalite.client.broker_coordinator")

__all__ = ["Heartbeats"]


class Heartbeats:
    """BrokerCoordinator's heartbeat thread (a mixin)."""

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
            elif code in RETRIABLE:
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
