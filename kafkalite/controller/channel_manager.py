"""The controller's channels to the brokers (Kafka's ControllerChannelManager).

One queue per live broker. Requests to a broker leave in order, one at a time; a request that fails
on the network is sent again after a backoff until it is answered or the broker is removed (it died
and the controller no longer cares what it hears). Callers get a Deferred of the response.
"""

from __future__ import annotations

import logging
from collections import deque

from twisted.internet import defer, task

from kafkalite.errors import (KafkaError, NetworkError, RequestTimedOutError,
                              StaleControllerEpochError)
from kafkalite.protocol.channel import BrokerChannel

log = logging.getLogger(__name__)


class _BrokerQueue:
    def __init__(self, manager: "ControllerChannelManager", broker_id: int, host: str, port: int):
        self.manager = manager
        self.broker_id = broker_id
        self.channel = BrokerChannel(manager.reactor, host, port,
                                     client_id=f"controller-{manager.controller_id}",
                                     request_timeout_s=manager.request_timeout_s,
                                     connect=manager.connect)
        self.queue: deque[tuple[object, defer.Deferred]] = deque()
        self.sending = False
        self.removed = False

    def enqueue(self, request) -> defer.Deferred:
        d: defer.Deferred = defer.Deferred()
        self.queue.append((request, d))
        if not self.sending:
            self._send_next()
        return d

    @defer.inlineCallbacks
    def _send_next(self):
        self.sending = True
        try:
            while self.queue and not self.removed:
                request, d = self.queue[0]
                try:
                    response = yield self.channel.request(request)
                except (NetworkError, RequestTimedOutError) as exc:
                    if self.removed:
                        break
                    log.info("controller: request %s to broker %d failed (%s); retrying",
                             type(request).__name__, self.broker_id, exc)
                    yield task.deferLater(self.manager.reactor, self.manager.backoff_s,
                                          lambda: None)
                    continue
                except KafkaError as exc:
                    self.queue.popleft()
                    d.errback(exc)
                    continue
                self.queue.popleft()
                d.callback(response)
        finally:
            self.sending = False

    def remove(self) -> None:
        self.removed = True
        self.channel.close()
        pending, self.queue = self.queue, deque()
        for _request, d in pending:
            d.errback(NetworkError(f"broker {self.broker_id} was removed"))


class ControllerChannelManager:
    def __init__(self, reactor, controller_id: int, request_timeout_s: float = 30.0,
                 backoff_s: float = 0.2, connect=None):
        self.reactor = reactor
        self.connect = connect          # TLS/SASL to the brokers (security.client_transport)
        self.controller_id = controller_id
        self.request_timeout_s = request_timeout_s
        self.backoff_s = backoff_s
        self._brokers: dict[int, _BrokerQueue] = {}
        self.closed = False

    def add_broker(self, broker_id: int, host: str, port: int) -> None:
        if self.closed:
            return
        existing = self._brokers.get(broker_id)
        if existing is not None:
            if (existing.channel.host, existing.channel.port) == (host or "127.0.0.1", port):
                return
            existing.remove()
        self._brokers[broker_id] = _BrokerQueue(self, broker_id, host, port)

    def remove_broker(self, broker_id: int) -> None:
        queue = self._brokers.pop(broker_id, None)
        if queue is not None:
            queue.remove()

    def send(self, broker_id: int, request) -> defer.Deferred:
        queue = self._brokers.get(broker_id)
        if queue is None:
            why = "the controller resigned" if self.closed else f"no channel to broker {broker_id}"
            return defer.fail(NetworkError(why))
        d = queue.enqueue(request)
        return d

    def send_quietly(self, broker_id: int, request) -> None:
        """Send and log failures (for requests whose answers the controller only logs)."""
        def report(response):
            error = getattr(response, "error_code", 0)
            if error:
                log.warning("broker %d answered %s with error %d: %s", broker_id,
                            type(request).__name__, error,
                            getattr(response, "error_message", ""))
            for entry in getattr(response, "partition_errors", []) or []:
                if entry.error_code == StaleControllerEpochError.code:
                    # a state at the leader epoch the broker holds (a new controller resends
                    # what it found): ignored there, as Kafka's brokers do; nothing to warn of
                    log.debug("broker %d: %s-%d already at that leader epoch", broker_id,
                              entry.topic, entry.partition)
                elif entry.error_code:
                    log.warning("broker %d: %s-%d error %d on %s", broker_id, entry.topic,
                                entry.partition, entry.error_code, type(request).__name__)

        def dropped(failure):
            (log.debug if self.closed else log.info)(
                "controller: %s to broker %d dropped: %s", type(request).__name__, broker_id,
                failure.getErrorMessage())
        self.send(broker_id, request).addCallbacks(report, dropped)

    def brokers(self) -> list[int]:
        return sorted(self._brokers)

    def close(self) -> None:
        """Drop every channel for good (the controller resigned): later sends fail at once and
        ``send_quietly`` drops them without a word."""
        self.closed = True
        for broker_id in list(self._brokers):
            self.remove_broker(broker_id)
