"""protocol.connection.write_now / KafkaWireProtocol.send_frame: a frame goes straight to an idle
plain-TCP socket (no reactor turn), and falls back to Twisted's buffered write whenever order or
errors need it. Real socket pairs, a fake transport holding Twisted's buffer attributes."""

import errno
import socket

import pytest

from kafkalite.protocol.connection import KafkaWireProtocol, write_now
from kafkalite.protocol.framing import frame_header


class FakeTcpTransport:
    """The attributes write_now reads on twisted.internet.tcp.Connection, and its writes."""

    def __init__(self, sock):
        self.socket = sock
        self.TLS = False
        self.connected = True
        self.disconnecting = False
        self.dataBuffer = b""
        self._tempDataBuffer = []
        self.buffered = []

    def writeSequence(self, chunks):
        self.buffered.extend(bytes(c) for c in chunks)

    def write(self, data):
        self.buffered.append(bytes(data))


class ShortSocket:
    """A socket whose send buffer takes only ``room`` bytes, or fails with ``error``."""

    def __init__(self, room=0, error=None):
        self.room, self.error, self.got = room, error, b""

    def sendmsg(self, chunks):
        if self.error:
            raise OSError(self.error, "fake")
        data = b"".join(bytes(c) for c in chunks)[:self.room]
        self.got += data
        return len(data)


def _protocol(transport):
    protocol = KafkaWireProtocol()
    protocol.makeConnection(transport)
    return protocol


def _read(sock, n):
    out = b""
    while len(out) < n:
        out += sock.recv(n - len(out))
    return out


def test_an_idle_socket_gets_the_frame_at_once():
    a, b = socket.socketpair()
    with a, b:
        transport = FakeTcpTransport(a)
        _protocol(transport).send_frame(b"hello")
        assert transport.buffered == []
        assert _read(b, 9) == frame_header(5) + b"hello"


def test_buffered_bytes_keep_their_place():
    # something is waiting in Twisted's buffer: the frame queues behind it
    a, b = socket.socketpair()
    with a, b:
        for attribute, value in (("dataBuffer", b"older"), ("_tempDataBuffer", [b"older"])):
            transport = FakeTcpTransport(a)
            setattr(transport, attribute, value)
            _protocol(transport).send_frame(b"x")
            assert transport.buffered == [frame_header(1), b"x"]


def test_tls_or_closing_transports_and_transports_without_socket_buffer():
    a, b = socket.socketpair()
    with a, b:
        for attribute, value in (("TLS", True), ("disconnecting", True), ("connected", False)):
            transport = FakeTcpTransport(a)
            setattr(transport, attribute, value)
            assert write_now(transport, frame_header(1), b"x") == 0
        transport = FakeTcpTransport(None)
        _protocol(transport).send_frame(b"x")
        assert transport.buffered == [frame_header(1), b"x"]


def test_a_partial_send_buffers_exactly_the_rest():
    for room in (2, 4, 7):
        sock = ShortSocket(room)
        transport = FakeTcpTransport(sock)
        _protocol(transport).send_frame(b"payload")
        assert sock.got + b"".join(transport.buffered) == frame_header(7) + b"payload"


def test_errors_leave_the_frame_to_twisted():
    for code in (errno.EAGAIN, errno.EPIPE, errno.ECONNRESET):
        transport = FakeTcpTransport(ShortSocket(error=code))
        _protocol(transport).send_frame(b"x")
        assert transport.buffered == [frame_header(1), b"x"]


def test_connections_turn_nagle_off_as_kafka_does():
    class NoDelayTransport(FakeTcpTransport):
        no_delay = None

        def setTcpNoDelay(self, enabled):
            self.no_delay = enabled

    a, b = socket.socketpair()
    with a, b:
        transport = NoDelayTransport(a)
        _protocol(transport)
        assert transport.no_delay is True
        _protocol(FakeTcpTransport(a))      # a transport without the option: left alone


def test_a_tls_wrapper_is_never_bypassed():
    """TLSMemoryBIOProtocol (the SSL/SASL_SSL listeners' and clients' TLS) is a ProtocolWrapper,
    which passes attribute reads through to the TCP transport below: write_now must not find
    that transport's socket and send the frame unencrypted (it broke every TLS connection)."""
    from twisted.internet.protocol import Factory, Protocol
    from twisted.protocols.policies import ProtocolWrapper, WrappingFactory

    a, b = socket.socketpair()
    with a, b:
        tcp = FakeTcpTransport(a)
        wrapper = ProtocolWrapper(WrappingFactory(Factory.forProtocol(Protocol)), Protocol())
        wrapper.makeConnection(tcp)
        assert wrapper.socket is a                          # what the old check saw
        assert write_now(wrapper, frame_header(3), b"abc") == 0
        b.setblocking(False)
        with pytest.raises(BlockingIOError):            # nothing reached the raw socket
            b.recv(16)
