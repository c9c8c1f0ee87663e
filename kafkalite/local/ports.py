"""Free TCP ports on the loopback interface, for servers started by tests."""

from __future__ import annotations

import contextlib
import socket
import time

LOCALHOST = "127.0.0.1"


def free_port(host: str = LOCALHOST) -> int:
    """A port nobody listens on right now (the OS picks it; there is a small race until used)."""
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = LOCALHOST) -> list[int]:
    """``count`` distinct free ports (all sockets held until every port is picked)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def port_is_open(host: str, port: int, timeout: float = 0.5) -> bool:
    """True when something accepts TCP connections on host:port."""
    with contextlib.suppress(OSError):
        with socket.create_connection((host, port), timeout=timeout):
            return True
    return False


def port_is_free(port: int, host: str = LOCALHOST) -> bool:
    """True when host:port can be bound now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def wait_for_port(host: str, port: int, timeout: float = 10.0, interval: float = 0.05) -> bool:
    """Wait until host:port accepts connections; False on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_is_open(host, port, timeout=min(0.5, interval * 10)):
            return True
        time.sleep(interval)
    return False
