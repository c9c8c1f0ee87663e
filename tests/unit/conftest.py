"""Fixtures shared by the unit tests of the clients: ports that refuse connections, and a count
of the connection attempts the clients make."""

import socket

import pytest


@pytest.fixture
def closed_ports():
    """Two ports nothing listens on (bound, never listening: connections are refused)."""
    socks = [socket.socket() for _ in range(2)]
    for sock in socks:
        sock.bind(("127.0.0.1", 0))
    yield [sock.getsockname()[1] for sock in socks]
    for sock in socks:
        sock.close()


@pytest.fixture
def connects(monkeypatch):
    """Connection attempts per port, through the clients' one way to open a socket."""
    from kafkalite.client import connection

    counts: dict[int, int] = {}
    real = connection.socket.create_connection

    def counting(address, *args, **kwargs):
        counts[address[1]] = counts.get(address[1], 0) + 1
        return real(address, *args, **kwargs)

    monkeypatch.setattr(connection.socket, "create_connection", counting)
    return counts
