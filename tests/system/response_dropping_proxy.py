"""A TCP proxy in front of one broker that can lose a response (no test functions here).

``ResponseDroppingProxy(broker_port)`` listens on a port of its own and forwards whole frames
(Int32 length prefix, both of kafkalite's protocols: Kafka's and the native msgpack one) between
each client connection and the broker. Advertise it (the broker's ``advertised.listeners``) and
every client, the other brokers included, talks to the broker through it.

``lose_response(predicate)`` arms it once: the response to the next request for which
``predicate(api_key, payload)`` is true is not forwarded. The broker has then handled the request
in full (for acks=all Produce: appended and replicated), yet the client never hears of it: a lost
response, deterministically. The connection is held (nothing more is forwarded either way)
until ``release()`` closes it, so a test can act in between (e.g. kill the broker); the client
sees a dropped connection and retries. With ``hold=False`` the connection is closed at once.

Responses come back in request order on each connection (both protocols pipeline in order), so
the proxy pairs them with the requests it forwarded by position; it must not be used with acks=0
Produce requests, which get no response.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections import deque

from kafkalite.protocol.envelope import decode_request_envelope

PRODUCE = 0        # Produce's API key in both protocols
_LENGTH = struct.Struct(">i")


def api_key_of(payload: bytes) -> int:
    """The request's API key: Kafka's requests start with an int16 API key (< 256, so a first
    byte of 0), the native ones with a msgpack array ``[api_key, ...]``; -1 if unreadable."""
    if payload[:1] == b"\x00":
        return struct.unpack_from(">h", payload)[0]
    try:
        return decode_request_envelope(payload)[0].api_key
    except Exception:  # noqa: BLE001 - not ours to judge: forward it anyway
        return -1


def _read_frame(sock: socket.socket) -> bytes | None:
    """One whole frame (length prefix included), or None at end of stream."""
    header = _read_exact(sock, 4)
    if header is None:
        return None
    (length,) = _LENGTH.unpack(header)
    body = _read_exact(sock, length)
    return None if body is None else header + body


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < n:
        try:
            chunk = sock.recv(n - len(chunks))
        except OSError:
            return None
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def _close(*socks: socket.socket) -> None:
    for sock in socks:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()


class ResponseDroppingProxy:
    def __init__(self, broker_port: int, host: str = "127.0.0.1"):
        self.target = (host, broker_port)
        self._listener = socket.create_server((host, 0))
        self.port = self._listener.getsockname()[1]
        self.address = f"{host}:{self.port}"
        self.requests: list[tuple[int, bytes]] = []    # (api key, payload) forwarded, in order
        self.lost: list[tuple[int, bytes]] = []        # requests whose response was lost
        self.lost_event = threading.Event()
        self._predicate = None
        self._hold = True
        self._release = threading.Event()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._closed = False
        threading.Thread(target=self._accept, name=f"proxy-{self.port}", daemon=True).start()

    # --- control ------------------------------------------------------------------------------
    def lose_response(self, predicate, hold: bool = True) -> None:
        """Lose the response to the next request matching ``predicate(api_key, payload)``."""
        with self._lock:
            self._predicate, self._hold = predicate, hold
            self._release.clear()
            self.lost_event.clear()

    def release(self) -> None:
        """Close the held connection: the client sees it drop and retries."""
        self._release.set()

    def forwarded(self, api_key: int, marker: bytes) -> int:
        """How many requests with this API key and ``marker`` in their bytes were forwarded."""
        with self._lock:
            return sum(1 for key, payload in self.requests if key == api_key and marker in payload)

    def close(self) -> None:
        self._closed = True
        self._release.set()
        _close(self._listener)
        with self._lock:
            socks = list(self._sockets)
        _close(*socks)

    # --- forwarding ---------------------------------------------------------------------------
    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                _close(client)          # the broker is gone: so is the connection
                continue
            with self._lock:
                self._sockets.update((client, upstream))
            pending: deque = deque()
            threading.Thread(target=self._forward_requests, args=(client, upstream, pending),
                             daemon=True).start()
            threading.Thread(target=self._forward_responses, args=(client, upstream, pending),
                             daemon=True).start()

    def _forward_requests(self, client, upstream, pending: deque) -> None:
        while True:
            frame = _read_frame(client)
            if frame is None:
                break
            payload = frame[4:]
            key = api_key_of(payload)
            with self._lock:
                self.requests.append((key, payload))
            # queued before it is forwarded: its response cannot overtake it
            pending.append((key, payload))
            try:
                upstream.sendall(frame)
            except OSError:
                break
        _close(client, upstream)

    def _forward_responses(self, client, upstream, pending: deque) -> None:
        while True:
            frame = _read_frame(upstream)
            if frame is None:
                break
            key, payload = pending.popleft() if pending else (-1, b"")
            with self._lock:
                lose = self._predicate is not None and self._predicate(key, payload)
                if lose:
                    self._predicate = None
                    self.lost.append((key, payload))
                    hold = self._hold
            if lose:
                self.lost_event.set()
                if hold:
                    self._release.wait()
                break
            try:
                client.sendall(frame)
            except OSError:
                break
        _close(client, upstream)
