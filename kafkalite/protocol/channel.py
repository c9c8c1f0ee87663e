"""A reconnecting request channel to one broker, for code running on a reactor.

The controller keeps one per live broker (LeaderAndIsr, UpdateMetadata, StopReplica) and each
replica fetcher keeps one to its leader. ``request`` connects on demand; a connection failure
errbacks with NetworkError and the next request reconnects after a backoff, so callers decide
whether to retry (the controller re-sends until the broker is gone; fetchers back off and retry).

``connect(reactor, host, port, protocol, timeout_s)`` opens the connection (default: plain TCP);
a broker passes ``security.client_transport.broker_connector``'s for TLS and SASL between
brokers. Its Deferred fires once the connection may carry requests.
"""

from __future__ import annotations

import logging

from twisted.internet import defer
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol

from kafkalite.errors import NetworkError, RequestTimedOutError
from kafkalite.protocol.connection import ClientConnection

log = logging.getLogger(__name__)


def _plain_connect(reactor, host: str, port: int, protocol, timeout_s: float):
    return connectProtocol(TCP4ClientEndpoint(reactor, host, port, timeout=timeout_s), protocol)


class BrokerChannel:
    def __init__(self, reactor, host: str, port: int, client_id: str,
                 connect_timeout_s: float = 5.0, request_timeout_s: float = 30.0,
                 max_frame_bytes: int | None = None, connect=None):
        self.reactor = reactor
        self._open = connect or _plain_connect
        self.host = host or "127.0.0.1"
        self.port = port
        self.client_id = client_id
        self.connect_timeout_s = connect_timeout_s
        self.request_timeout_s = request_timeout_s
        self.max_frame_bytes = max_frame_bytes
        self._connection: ClientConnection | None = None
        self._connecting = False
        self._waiters: list[defer.Deferred] = []
        self._closed = False

    def __repr__(self) -> str:
        return f"BrokerChannel({self.host}:{self.port})"

    @property
    def connected(self) -> bool:
        return self._connection is not None and self._connection.connected_ok

    def _connect(self) -> defer.Deferred:
        if self.connected:
            return defer.succeed(self._connection)
        waiter: defer.Deferred = defer.Deferred()
        self._waiters.append(waiter)
        if self._connecting:
            return waiter
        self._connecting = True
        protocol = ClientConnection(self.client_id, self.max_frame_bytes)

        def connected(proto):
            self._connection = proto
            self._release(lambda w: w.callback(proto))

        def failed(failure):
            error = NetworkError(f"cannot connect to {self.host}:{self.port}: "
                                 f"{failure.getErrorMessage()}")
            protocol.close()
            self._release(lambda w: w.errback(error))
        self._open(self.reactor, self.host, self.port, protocol,
                   self.connect_timeout_s).addCallbacks(connected, failed)
        return waiter

    def _release(self, fire) -> None:
        self._connecting = False
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            fire(waiter)

    def request(self, req, timeout_s: float | None = None) -> defer.Deferred:
        if self._closed:
            return defer.fail(NetworkError(f"channel to {self.host}:{self.port} is closed"))
        timeout = self.request_timeout_s if timeout_s is None else timeout_s

        def send(connection: ClientConnection):
            d = connection.request(req)
            d.addTimeout(timeout, self.reactor, onTimeoutCancel=self._on_timeout)
            return d
        d = self._connect()
        d.addCallback(send)
        return d

    def _on_timeout(self, result, timeout):
        # the connection's response order is now unknown to the caller: start afresh
        self.reset()
        raise RequestTimedOutError(f"no answer from {self.host}:{self.port} in {timeout} s")

    def reset(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def close(self) -> None:
        self._closed = True
        self.reset()
