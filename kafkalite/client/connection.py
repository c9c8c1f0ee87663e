"""A blocking, pipelining connection to one broker (plain sockets, no Twisted).

Frames are a 4-byte big-endian length and one msgpack value (docs/architecture.md, 3. The
request pipeline): a request is ``[api_key, api_version, correlation_id, client_id, body]``, a
response ``[correlation_id, body]``.
The broker answers in order, so responses are matched against a FIFO of pending requests.

Use::

    conn = BrokerConnection("localhost", 9092, client_id="me")
    resp = conn.request(MetadataRequest(topics=None))        # send + wait

    a = conn.send(FetchRequest(...))                          # pipelined: no wait
    b = conn.send(FetchRequest(...))
    cid, resp = conn.receive()                                # the answer to ``a``

Errors:

* A broker that could not serve a request at all answers with a ``RequestErrorResponse``;
  ``receive``/``request`` raise it as ``errors.for_code(code, message)`` (with ``.correlation_id``
  set). The connection stays usable.
* A socket error, the broker closing the connection, or an unreadable stream raise
  ``errors.NetworkError`` and leave the connection *dead*: every pending request is lost (the
  caller decides whether to retry; with ``acks`` it cannot know whether a produce was written).
  A connect that the host refused (nothing listens on the port) sets ``refused`` on the error.
* A request with no answer within ``request_timeout_ms`` of being sent raises
  ``errors.RequestTimedOutError`` and also closes the connection (its position in the stream is
  lost).

Reading is linear in the bytes received: ``recv_into`` fills one preallocated ``bytearray``; frames
are decoded straight out of it through a ``memoryview`` (msgpack copies the ``bin`` values it
returns); only the unfinished tail of a frame is ever moved, and the buffer grows to the largest
frame seen and shrinks back when idle.

Security: with ``security`` (a ``security.settings.ClientSecurity``, made from kafka-python's
``security_protocol``, ``ssl_cafile``, ``sasl_mechanism``, ``sasl_plain_username`` ... options by
the clients) the socket is wrapped in TLS (SSL, SASL_SSL) and the SASL exchange runs
(SASL_PLAINTEXT, SASL_SSL) inside ``connect()``, before any request. A failed TLS handshake
raises SslAuthenticationFailedError, bad credentials SaslAuthenticationFailedError; neither is
retriable, and the connection is dead.

Thread safety: a BrokerConnection is NOT thread-safe. Use each one from one thread at a time
(the producer's sender thread owns the producer's connections; a consumer or admin client uses
its own from the calling thread; ``ClusterMetadata`` guards its metadata connection with a lock).
"""

from __future__ import annotations

import socket
import ssl
import struct
import time
from collections import deque
from typing import Any

import msgpack

from kafkalite import errors
from kafkalite.errors import KafkaError, NetworkError, RequestTimedOutError
from kafkalite.protocol.envelope import encode_request_payload, parse_response_body
from kafkalite.protocol.framing import DEFAULT_MAX_FRAME_BYTES, frame_header
from kafkalite.protocol.messages import Request, RequestErrorResponse
from kafkalite.security.settings import ClientSecurity

__all__ = ["BrokerConnection", "DEFAULT_CLIENT_ID", "parse_address"]

DEFAULT_CLIENT_ID = "kafkalite-python"

_LENGTH = struct.Struct(">i")
_unpack_length = _LENGTH.unpack_from
_MAX_CORRELATION_ID = (1 << 31) - 1
_INITIAL_BUFFER = 256 * 1024
_RECV_CHUNK_MIN = 64 * 1024


def parse_address(address, default_port: int = 9092) -> tuple[str, int]:
    """``"host:port"``, ``"[::1]:9092"``, ``"host"`` or ``(host, port)`` -> ``(host, port)``."""
    if isinstance(address, (tuple, list)) and len(address) == 2:
        return str(address[0]), int(address[1])
    if not isinstance(address, str) or not address.strip():
        raise errors.ConfigError(f"invalid broker address {address!r}; expected 'host:port'")
    text = address.strip()
    if "://" in text:                       # PLAINTEXT://host:port
        text = text.split("://", 1)[1]
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = text, ""
    if not port_text:
        return host, default_port
    try:
        port = int(port_text)
    except ValueError:
        raise errors.ConfigError(f"invalid port in broker address {address!r}") from None
    if not 0 < port < 65536:
        raise errors.ConfigError(f"invalid port in broker address {address!r}")
    return host or "localhost", port


class _Pending:
    __slots__ = ("correlation_id", "api_key", "api_version", "deadline")

    def __init__(self, correlation_id: int, api_key: int, api_version: int, deadline: float):
        self.correlation_id = correlation_id
        self.api_key = api_key
        self.api_version = api_version
        self.deadline = deadline


class BrokerConnection:
    """One TCP connection to a broker; see the module doc for the error and threading rules."""

    def __init__(self, host: str, port: int, client_id: str | None = DEFAULT_CLIENT_ID,
                 request_timeout_ms: int = 30000,
                 max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
                 connect_timeout_ms: int | None = None, node_id: int | None = None,
                 connect: bool = True, security: ClientSecurity | None = None):
        self.host = host
        self.security = security
        self.port = int(port)
        self.client_id = client_id
        self.node_id = node_id
        self.request_timeout_ms = request_timeout_ms
        self.max_frame_bytes = max_frame_bytes
        self.connect_timeout_ms = (connect_timeout_ms if connect_timeout_ms is not None
                                   else min(request_timeout_ms, 10000))
        self._sock: socket.socket | None = None
        self._dead: KafkaError | None = None
        self._pending: deque[_Pending] = deque()
        self._next_id = 0
        self._buf = bytearray(_INITIAL_BUFFER)
        self._view = memoryview(self._buf)
        self._r = 0          # start of unread bytes
        self._w = 0          # end of received bytes
        self.bytes_sent = 0
        self.bytes_received = 0
        if connect:
            self.connect()

    # --- lifecycle --------------------------------------------------------------------------
    def __repr__(self) -> str:
        state = "dead" if self._dead else ("connected" if self._sock else "not connected")
        node = f" node {self.node_id}" if self.node_id is not None else ""
        return f"<BrokerConnection{node} {self.host}:{self.port} {state}>"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def connect(self) -> None:
        """Open the socket (no-op when already connected). NetworkError if it cannot."""
        if self._sock is not None:
            return
        if self._dead is not None:
            raise NetworkError(f"connection to {self.address} is closed: {self._dead.message}")
        try:
            sock = socket.create_connection((self.host, self.port),
                                            timeout=self.connect_timeout_ms / 1000)
        except OSError as exc:
            err = NetworkError(f"cannot connect to broker {self.address}: {exc}")
            # nothing listens there (as opposed to a slow or unreachable host): callers may
            # give up at once instead of retrying for their whole timeout
            err.refused = isinstance(exc, ConnectionRefusedError)
            self._dead = err
            raise err from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        except OSError:  # pragma: no cover - some platforms refuse
            pass
        if self.security is not None and self.security.uses_tls:
            sock = self._tls(sock)
        self._sock = sock
        if self.security is not None and self.security.uses_sasl:
            from kafkalite.client.sasl_handshake import authenticate

            try:
                authenticate(self, self.security)
            except KafkaError as exc:
                self.close(exc.message)
                raise

    def _tls(self, sock: socket.socket) -> ssl.SSLSocket:
        from kafkalite.security.tls import stdlib_client_context

        try:
            context = stdlib_client_context(self.security.tls)
            sock.settimeout(self.connect_timeout_ms / 1000)
            return context.wrap_socket(sock, server_hostname=self.host)
        except (OSError, KafkaError) as exc:
            sock.close()
            message = exc.message if isinstance(exc, KafkaError) else str(exc)
            err = errors.SslAuthenticationFailedError(
                f"TLS handshake with broker {self.address} failed: {message}")
            self._dead = err
            raise err from None

    @property
    def connected(self) -> bool:
        return self._sock is not None and self._dead is None

    @property
    def dead(self) -> bool:
        """True once the connection failed or was closed; make a new one to talk to the broker."""
        return self._dead is not None

    @property
    def in_flight(self) -> int:
        """Requests sent whose responses have not been received yet."""
        return len(self._pending)

    def oldest_deadline(self) -> float | None:
        """``time.monotonic()`` by which the oldest pending request must be answered."""
        return self._pending[0].deadline if self._pending else None

    def fileno(self) -> int:
        """The socket's descriptor (for select/selectors), -1 when closed (as a socket's)."""
        return -1 if self._sock is None else self._sock.fileno()

    def close(self, reason: str | None = None) -> None:
        """Close the socket; pending requests are abandoned. Safe to call twice."""
        if self._dead is None:
            self._dead = NetworkError(reason or f"connection to {self.address} was closed")
        sock, self._sock = self._sock, None
        self._pending.clear()
        if sock is not None:
            try:
                sock.close()
            except OSError:  # pragma: no cover
                pass

    def _fail(self, message: str) -> NetworkError:
        self.close(message)
        return NetworkError(message)

    def _check_usable(self) -> socket.socket:
        if self._dead is not None:
            raise NetworkError(self._dead.message)
        if self._sock is None:
            self.connect()
        return self._sock  # type: ignore[return-value]

    # --- sending ----------------------------------------------------------------------------
    def send(self, request: Request, api_version: int = 0) -> int:
        """Write one request (pipelined: no wait) and return its correlation id.

        A request that expects no response (Produce with acks=0) is not queued for one.
        NetworkError (connection now dead) if the write fails or times out.
        """
        sock = self._check_usable()
        cid = self._next_id
        self._next_id = cid + 1 if cid < _MAX_CORRELATION_ID else 0
        payload = encode_request_payload(request.API_KEY, api_version, cid, self.client_id,
                                         request.to_body(api_version))
        if len(payload) > self.max_frame_bytes:
            raise errors.RecordListTooLargeError(
                f"request of {len(payload)} bytes exceeds the {self.max_frame_bytes}-byte "
                f"frame limit")
        timeout = self.request_timeout_ms / 1000
        try:
            sock.settimeout(timeout)
            sock.sendall(frame_header(len(payload)) + payload)
        except OSError as exc:
            what = "timed out" if isinstance(exc, TimeoutError) else str(exc)
            raise self._fail(f"sending to broker {self.address} failed: {what}") from None
        self.bytes_sent += len(payload) + 4
        if request.expects_response():
            self._pending.append(_Pending(cid, request.API_KEY, api_version,
                                          time.monotonic() + timeout))
        return cid

    # --- receiving --------------------------------------------------------------------------
    def receive(self, timeout: float | None = None):
        """Wait for the oldest pending response; returns ``(correlation_id, response)``.

        ``timeout`` (seconds) bounds the wait; when it passes first, None is returned and the
        request stays pending. ``timeout=None`` waits until that request's own deadline
        (``request_timeout_ms`` after it was sent), after which RequestTimedOutError is raised and
        the connection closed. A RequestErrorResponse is raised as its KafkaError.
        """
        if self._dead is not None:
            raise NetworkError(self._dead.message)
        if not self._pending:
            raise errors.IllegalStateError(f"no request is waiting for a response from "
                                           f"{self.address}")
        item = self._next_result()
        if item is not None:
            return self._unwrap(item)
        now = time.monotonic()
        deadline = self._pending[0].deadline
        user_deadline = None if timeout is None else now + max(timeout, 0.0)
        sock = self._sock
        while True:
            limit = deadline if user_deadline is None else min(deadline, user_deadline)
            wait = limit - now
            if wait <= 0:
                if user_deadline is not None and user_deadline < deadline:
                    return None
                raise self._timed_out()
            try:
                sock.settimeout(wait)
                self._recv_once(sock)
            except TimeoutError:
                now = time.monotonic()
                continue
            except OSError as exc:
                raise self._fail(f"reading from broker {self.address} failed: {exc}") from None
            item = self._next_result()
            if item is not None:
                return self._unwrap(item)
            now = time.monotonic()

    def receive_available(self) -> list[tuple[int, Any]]:
        """Read whatever has arrived without blocking; the complete responses, in order.

        Each entry is ``(correlation_id, result)`` where ``result`` is the Response, or the
        KafkaError instance for a RequestErrorResponse / a malformed body. NetworkError if the
        connection broke (pending requests are lost), RequestTimedOutError if the oldest request
        is past its deadline.
        """
        if self._dead is not None:
            raise NetworkError(self._dead.message)
        sock = self._sock
        if sock is None:
            return []
        try:
            sock.settimeout(0.0)
            while True:
                got = self._recv_once(sock)
                # TLS hands out a record at a time: read on while it holds decrypted bytes
                if got < _RECV_CHUNK_MIN and not (isinstance(sock, ssl.SSLSocket)
                                                  and sock.pending()):
                    break
        except (BlockingIOError, ssl.SSLWantReadError):
            pass
        except OSError as exc:
            raise self._fail(f"reading from broker {self.address} failed: {exc}") from None
        out = []
        while self._pending:
            item = self._next_result()
            if item is None:
                break
            out.append(item)
        if not out and self._pending and time.monotonic() > self._pending[0].deadline:
            raise self._timed_out()
        return out

    def request(self, request: Request, api_version: int = 0):
        """Send and wait for the response (None for acks=0 produce). Needs an idle connection."""
        if self._pending:
            raise errors.IllegalStateError(
                f"request() on {self.address} while {len(self._pending)} pipelined response(s) "
                f"are pending; use send()/receive()")
        self.send(request, api_version)
        if not request.expects_response():
            return None
        return self.receive()[1]

    # --- internals --------------------------------------------------------------------------
    def _timed_out(self) -> RequestTimedOutError:
        message = (f"no response from broker {self.address} within "
                   f"{self.request_timeout_ms} ms; connection closed")
        self.close(message)
        return RequestTimedOutError(message)

    @staticmethod
    def _unwrap(item):
        cid, result = item
        if isinstance(result, KafkaError):
            raise result
        return cid, result

    def _recv_once(self, sock: socket.socket) -> int:
        """One ``recv_into`` at the end of the buffer (made room for first). Returns the count."""
        if len(self._buf) - self._w < _RECV_CHUNK_MIN:
            self._make_room()
        with self._view[self._w:] as target:
            n = sock.recv_into(target)
        if n == 0:
            raise self._fail(f"broker {self.address} closed the connection")
        self._w += n
        self.bytes_received += n
        return n

    def _make_room(self) -> None:
        """Move the unfinished frame to the front, growing the buffer to hold it whole."""
        r, w = self._r, self._w
        avail = w - r
        need = _RECV_CHUNK_MIN + avail
        if avail >= 4:
            need = max(need, 4 + _unpack_length(self._buf, r)[0] + _RECV_CHUNK_MIN)
        if need > len(self._buf):
            new = bytearray(max(need, 2 * len(self._buf)))
            new[:avail] = self._view[r:w]
            self._view.release()
            self._buf = new
            self._view = memoryview(new)
        elif r:
            self._buf[:avail] = bytes(self._view[r:w])  # only the partial tail is copied
        self._r, self._w = 0, avail

    def _next_result(self):
        """Decode the next complete frame, if any, into ``(cid, response-or-error)``."""
        r, w = self._r, self._w
        if w - r < 4:
            return None
        (length,) = _unpack_length(self._buf, r)
        if length < 0 or length > self.max_frame_bytes:
            raise self._fail(f"broker {self.address} sent a frame of invalid length {length}")
        end = r + 4 + length
        if end > w:
            return None
        with self._view[r + 4:end] as payload:
            try:
                value = msgpack.unpackb(payload, raw=False, strict_map_key=False)
            except Exception as exc:  # noqa: BLE001 - any decode failure breaks the stream
                raise self._fail(f"broker {self.address} sent an unreadable frame "
                                 f"({type(exc).__name__}: {exc})") from None
        if end == w:
            self._r = self._w = 0
            if len(self._buf) > 8 * _INITIAL_BUFFER:      # give back a big buffer when idle
                self._view.release()
                self._buf = bytearray(_INITIAL_BUFFER)
                self._view = memoryview(self._buf)
        else:
            self._r = end
        if type(value) is not list or len(value) != 2 or type(value[0]) is not int:
            raise self._fail(f"broker {self.address} sent a malformed response envelope")
        cid, body = value
        if not self._pending:
            raise self._fail(f"broker {self.address} sent an unexpected response "
                             f"(correlation id {cid})")
        pending = self._pending[0]
        if cid != pending.correlation_id:
            raise self._fail(f"broker {self.address} answered correlation id {cid}, expected "
                             f"{pending.correlation_id}; connection closed")
        self._pending.popleft()
        try:
            result = parse_response_body(pending.api_key, body, pending.api_version)
        except KafkaError as exc:
            result = exc
        if isinstance(result, RequestErrorResponse):
            result = result.exception()
        if isinstance(result, KafkaError):
            result.correlation_id = cid  # type: ignore[attr-defined]
        return cid, result

