"""One request's part in client quota enforcement: what Kafka 2.8's KafkaApis does with its
quota managers around a handler (``sendResponseMaybeThrottle``, ``handleProduceRequest``,
``handleFetchRequest``) and what its SocketServer does with a throttle (KIP-219).

The dispatcher gives every request a ``RequestQuota`` (``ctx.quota``; None when the broker has no
quotas). It times the handler (its synchronous part: kafkalite's handler "thread"), records that
time in the request quota (``request_percentage``), and, when the answer is ready:

* sets ``throttle_time_ms`` of every response that has the field to the larger of the request
  quota's throttle and the byte-rate throttle the Produce/Fetch handlers reported
  (``bandwidth``);
* tells the connection (``throttle(ms)``), which sends the answer at once and serves its next
  request only when the throttle has passed (Kafka mutes the channel).

Exempt, as in Kafka: the controller's requests and WriteTxnMarkers (cluster actions, Kafka's
``sendResponseExemptThrottle``) and a follower's Fetch (replication quotas are another matter).
Produce with acks=0 records no request time (no answer to carry a throttle), but its bytes count
and a violation still mutes the connection.
"""

from __future__ import annotations

import time
from typing import Callable

from kafkalite.protocol.api_keys import ApiKey
from kafkalite.server.quota_manager import SECONDS_TO_PERCENT, ClientQuotas, principal_name

__all__ = ["RequestQuota", "EXEMPT_APIS"]

EXEMPT_APIS = frozenset({ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA, ApiKey.STOP_REPLICA,
                         ApiKey.CONTROLLED_SHUTDOWN, ApiKey.WRITE_TXN_MARKERS})


class RequestQuota:
    """The quota bookkeeping of one request. ``now_ms`` is the broker's clock (milliseconds),
    ``timer`` a monotonic clock in seconds for the handler's time."""

    def __init__(self, quotas: ClientQuotas, principal: str, client_id: str | None,
                 now_ms: Callable[[], int], connection=None, exempt: bool = False,
                 timer: Callable[[], float] = time.perf_counter):
        self.quotas = quotas
        self.user = principal_name(principal)
        self.client_id = client_id or ""
        self.now_ms = now_ms
        self.connection = connection
        self.exempt = exempt
        self.timer = timer
        self.bandwidth_ms = 0
        self._started = timer()
        self._handler_seconds: float | None = None
        self._request_ms: int | None = None

    # --- the handler's side ----------------------------------------------------------------------
    def handler_returned(self) -> None:
        """The handler's synchronous part is over: its time is the request's handler time
        (a Deferred's wait for replicas or data is not handler time)."""
        if self._handler_seconds is None:
            self._handler_seconds = self.timer() - self._started

    def request_throttle_ms(self) -> int:
        """Record the handler's time in the request quota (once) and answer its throttle."""
        if self._request_ms is None:
            if self.exempt:
                self._request_ms = 0
            else:
                seconds = (self._handler_seconds if self._handler_seconds is not None
                           else self.timer() - self._started)
                self._request_ms = self.quotas.request.record_and_get_throttle_ms(
                    self.user, self.client_id, seconds * SECONDS_TO_PERCENT, self.now_ms())
        return self._request_ms

    def produce_throttle_ms(self, request_bytes: int) -> int:
        """Record a Produce's bytes (Kafka's ``quotas.produce.maybeRecordAndGetThrottleTimeMs``)."""
        if self.exempt:
            return 0
        self.bandwidth_ms = self.quotas.produce.record_and_get_throttle_ms(
            self.user, self.client_id, request_bytes, self.now_ms())
        return self.bandwidth_ms

    def fetch_max_bytes(self, max_bytes: int) -> int:
        """A consumer's max_bytes cut to what its quota lets through in one window."""
        if self.exempt:
            return max_bytes
        limit = self.quotas.fetch.max_value_in_quota_window(self.user, self.client_id)
        return max_bytes if limit >= max_bytes else max(int(limit), 1)

    def fetch_throttle_ms(self, response_bytes: int) -> int:
        """Request quota first, then the fetch bytes (Kafka's order); when either throttles the
        bytes are taken back, as the answer then carries no data. Answers the larger throttle;
        the caller sends an empty answer when it is above 0."""
        if self.exempt:
            return 0
        request_ms = self.request_throttle_ms()
        now = self.now_ms()
        fetch = self.quotas.fetch
        self.bandwidth_ms = fetch.record_and_get_throttle_ms(self.user, self.client_id,
                                                             response_bytes, now)
        throttle = max(request_ms, self.bandwidth_ms)
        if throttle > 0:
            fetch.unrecord(self.user, self.client_id, response_bytes, now)
        return throttle

    # --- the answer ------------------------------------------------------------------------------
    def failed(self, exc: BaseException) -> None:
        """The handler failed: its error answer (built by the pipeline) is throttled for the
        request quota as Kafka's sendErrorResponseMaybeThrottle; the throttle rides on the
        exception (``throttle_time_ms``) to the pipeline, which puts it in the answer."""
        if self.exempt:
            return
        throttle = max(self.bandwidth_ms, self.request_throttle_ms())
        if throttle > 0:
            mute = getattr(self.connection, "throttle", None)
            if mute is not None:
                mute(throttle)
            try:
                exc.throttle_time_ms = throttle
            except AttributeError:            # an exception that takes no attributes
                pass

    def failed_later(self, failure):
        """``failed`` as a Deferred's errback (the failure goes on)."""
        self.failed(failure.value)
        return failure

    def finish(self, response):
        """The answer is ready: its throttle goes into the response and to the connection."""
        if self.exempt:
            return response
        throttle = max(self.bandwidth_ms,
                       self.request_throttle_ms() if response is not None else 0)
        if throttle > 0:
            if response is not None and hasattr(response, "throttle_time_ms"):
                response.throttle_time_ms = max(response.throttle_time_ms or 0, throttle)
            mute = getattr(self.connection, "throttle", None)
            if mute is not None:
                mute(throttle)
        return response
