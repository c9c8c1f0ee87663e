"""A TCP proxy in front of ZooKeeper whose connections a test can cut (no test functions here).

``CutProxy(host, port)`` listens on a port of its own and copies bytes both ways between each
client connection and the server. ``cut()`` closes every connection and refuses new ones until
``reconnect()``: the clients behind it lose their connection but not their session (as long as
they are back within the session timeout), which is what a network blip does to them.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class CutProxy:
    def __init__(self, host: str, port: int):
        self._target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._refusing = False
        self._closed = False
        threading.Thread(target=self._accept_loop, name="zk-cut-proxy", daemon=True).start()

    def cut(self) -> None:
        """Close every connection now and refuse new ones until ``reconnect()``."""
        with self._lock:
            self._refusing = True
            sockets, self._open = self._open, []
        for sock in sockets:
            _close(sock)

    def reconnect(self) -> None:
        with self._lock:
            self._refusing = False

    def close(self) -> None:
        self._closed = True
        self.cut()
        _close(self._listener)

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                refusing = self._refusing
            if refusing:
                _close(client)
                continue
            try:
                server = socket.create_connection(self._target)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._open += [client, server]
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=_pump, args=(src, dst), daemon=True).start()


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while chunk := src.recv(65536):
            dst.sendall(chunk)
    except OSError:
        pass
    finally:  # one side gone: so is the other (a cut closes both anyway)
        _close(src)
        _close(dst)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
