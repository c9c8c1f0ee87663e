"""Requests still in the broker past their own timeout, logged with what they are.

A connection serves one request at a time (``server.network``), so one request that never
completes silences its connection: the client sees only its own timeout and the broker, until
now, said nothing. Every request that waits in the broker has a bound of its own (Produce's
``timeout_ms``, Fetch's ``max_wait_ms``, JoinGroup's ``rebalance_timeout_ms``, the admin
requests' ``timeout_ms``); others are answered at once or after a ZooKeeper or log write. The
broker checks its connections every ``CHECK_INTERVAL_S`` and logs, once per request, any request
in the broker for longer than its bound plus ``GRACE_S`` (or ``DEFAULT_BOUND_S`` without one),
naming the API, the client, the peer and how long: the first thing to look at when a client
reports a timeout the broker should have answered.

``overdue`` is pure (connections and a time in, descriptions out); ``RequestWatch.check`` logs.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Iterable, NamedTuple

log = logging.getLogger(__name__)

CHECK_INTERVAL_S = 10.0
GRACE_S = 30.0
DEFAULT_BOUND_S = 60.0
# the request fields that bound how long a request may wait in the broker, in Kafka's names
TIMEOUT_FIELDS = ("timeout_ms", "max_wait_ms", "rebalance_timeout_ms", "transaction_timeout_ms")


class InBroker(NamedTuple):
    """The request a connection is serving: what it is and since when (``time.monotonic()``)."""
    api: str
    version: int
    correlation_id: int
    since: float
    bound_s: float


def bound_of(request: Any) -> float:
    """How long ``request`` may legitimately stay in the broker, in seconds, before it is
    overdue: its own timeout field plus the grace, or the default."""
    for field in TIMEOUT_FIELDS:
        value = getattr(request, field, None)
        if isinstance(value, int) and value >= 0:
            return value / 1000.0 + GRACE_S
    return DEFAULT_BOUND_S


def overdue(connections: Iterable[Any], now: float) -> list[tuple[Any, InBroker, float]]:
    """``(connection, request, seconds in the broker)`` of each request past its bound and not
    yet reported. A connection exposes ``in_broker`` (an ``InBroker`` or None) and
    ``reported_overdue`` (the ``InBroker`` last reported)."""
    late = []
    for connection in connections:
        serving = getattr(connection, "in_broker", None)
        if serving is None or connection.reported_overdue is serving:
            continue
        waited = now - serving.since
        if waited > serving.bound_s:
            late.append((connection, serving, waited))
    return late


class RequestWatch:
    """``check()`` logs a dispatcher's overdue requests; the broker calls it every
    ``CHECK_INTERVAL_S``."""

    def __init__(self, dispatcher: Any, now=time.monotonic):
        self.dispatcher = dispatcher
        self._now = now

    def check(self) -> int:
        late = overdue(list(self.dispatcher.connections), self._now())
        for connection, serving, waited in late:
            connection.reported_overdue = serving
            log.warning("%s v%d (correlation id %d) from %s (client %s) has been in the broker "
                        "for %.0f s, past its bound of %.0f s; its connection serves nothing "
                        "else until it is answered", serving.api, serving.version,
                        serving.correlation_id, connection.peer_description(),
                        connection.client_id, waited, serving.bound_s)
        return len(late)
