"""One ZooKeeper JVM as a child process, and the server settings every launcher shares.

:class:`ZooKeeperProcess` writes ``zoo.cfg`` (and ``myid`` for a quorum member), starts the JVM in a
process group of its own (optionally behind a command prefix such as ``ip netns exec <ns>``, see
:class:`kafkalite.local.procs.Placement`), waits until clients can use it, and stops, kills,
pauses and resumes it. :func:`server_config` holds the settings tests rely on (short ticks, short
minimum session timeout, four-letter words, no admin server); the Docker launcher passes the same
values (``SERVER_DEFAULTS``) to its container.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import socket
import subprocess
import threading
import time
import weakref
from typing import Any, Sequence

from kafkalite.local.ports import port_is_free
from kafkalite.local.zookeeper_install import ZooKeeperInstall

log = logging.getLogger(__name__)

LOG_NAME = "zookeeper.log"

# what tests need of any ZooKeeper they get, whoever starts it (a JVM here or a container)
SERVER_DEFAULTS: dict[str, Any] = {
    "tickTime": 500,                 # sessions can be as short as 2 ticks
    "minSessionTimeout": 1000,
    "maxSessionTimeout": 60_000,
    "4lw.commands.whitelist": "*",  # ruok for readiness, srvr for a quorum member's mode
    "admin.enableServer": "false",   # its Jetty port would clash between nodes
}


class ZooKeeperStartError(RuntimeError):
    """A ZooKeeper process did not come up (the message carries its log tail)."""


_LIVE: "weakref.WeakSet[ZooKeeperProcess]" = weakref.WeakSet()


@atexit.register
def _kill_leftovers() -> None:
    """Never leave JVMs behind when the interpreter exits without stopping them."""
    for proc in list(_LIVE):
        with contextlib.suppress(Exception):
            proc.kill()


def four_letter_word(host: str, port: int, word: str, timeout: float = 2.0) -> str:
    """Send a ZooKeeper four-letter command (ruok, srvr, mntr, stat ...) and return the answer."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(word.encode("ascii"))
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def _read_tail(path: str, n: int) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 256 * 1024))
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


class ZooKeeperProcess:
    """One ZooKeeper JVM: config file, child process (own process group), log file.

    ``command_prefix`` goes in front of the java command line (``ip netns exec <ns>``: the JVM
    then binds ``host`` inside that network namespace, so nothing here can check the port first).
    """

    def __init__(self, *, workdir: str, host: str, port: int, install: ZooKeeperInstall,
                 main_class: str, config: dict[str, Any], myid: int | None, name: str,
                 startup_timeout_s: float, die_with_parent: int | None = None,
                 command_prefix: Sequence[str] = ()):
        self.workdir = os.path.abspath(workdir)
        self.die_with_parent = die_with_parent
        self.host = host
        self.port = port
        self.command_prefix = tuple(command_prefix)
        self.paused = False
        self.install = install
        self.main_class = main_class
        self.name = name
        self.startup_timeout_s = startup_timeout_s
        self.data_dir = os.path.join(self.workdir, "data")
        self.config_path = os.path.join(self.workdir, "zoo.cfg")
        self.log_path = os.path.join(self.workdir, LOG_NAME)
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        os.makedirs(self.data_dir, exist_ok=True)
        if myid is not None:
            with open(os.path.join(self.data_dir, "myid"), "w") as fh:
                fh.write(f"{myid}\n")
        cfg = {"dataDir": self.data_dir, **config}
        with open(self.config_path, "w") as fh:
            fh.write(f"# written by kafkalite.local for {name}\n")
            for key, value in cfg.items():
                fh.write(f"{key}={value}\n")

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def spawn(self) -> None:
        with self._lock:
            if self.running:
                return
            if not self.command_prefix:
                self._wait_port_free()
            cmd = self.command()
            preexec = None
            if self.die_with_parent is not None:
                from kafkalite.local.procs import parent_death_preexec

                preexec = parent_death_preexec(self.die_with_parent)
            with open(self.log_path, "ab") as logf:
                logf.write(f"\n=== kafkalite: starting {self.name} at "
                           f"{time.strftime('%Y-%m-%d %H:%M:%S')}: {' '.join(cmd)}\n".encode())
                logf.flush()
                self._proc = subprocess.Popen(
                    cmd, cwd=self.workdir, stdin=subprocess.DEVNULL, stdout=logf,
                    stderr=subprocess.STDOUT, env=self.install.environment(self.workdir),
                    # its own process group: a Ctrl-C in the terminal does not reach it, and
                    # kill -9 hits it alone
                    start_new_session=True,
                    preexec_fn=preexec,  # noqa: PLW1509 - one prctl call, nothing that locks
                )
            self.paused = False
            _LIVE.add(self)
            log.debug("%s: started pid %s on %s", self.name, self._proc.pid, self.connect_string)

    def command(self) -> list[str]:
        """The command line that starts this server (behind the command prefix, if any)."""
        return [*self.command_prefix,
                *self.install.command(self.main_class, self.config_path, self.workdir)]

    def _wait_port_free(self) -> None:
        # a previous incarnation (restart) may still be letting go of the port
        deadline = time.monotonic() + (10 if self._proc is not None else 0)
        while not port_is_free(self.port, self.host) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not port_is_free(self.port, self.host):
            raise ZooKeeperStartError(
                f"{self.name}: port {self.host}:{self.port} is taken by another process")

    def wait_serving(self, timeout_s: float | None = None,
                     connect_string: str | None = None) -> None:
        """Wait until a client opens a session and reads "/" (``ruok`` alone is not enough)."""
        from kafkalite.zk.client import probe  # kazoo is imported only when a server starts

        timeout_s = self.startup_timeout_s if timeout_s is None else timeout_s
        target = connect_string or self.connect_string
        deadline = time.monotonic() + timeout_s
        while True:
            if self._proc is None or self._proc.poll() is not None:
                code = None if self._proc is None else self._proc.returncode
                raise ZooKeeperStartError(
                    f"{self.name} exited (code {code}) before serving clients; "
                    f"log {self.log_path}:\n{self.log_tail(40)}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ZooKeeperStartError(
                    f"{self.name} did not serve clients on {target} within {timeout_s:.0f}s; "
                    f"log {self.log_path}:\n{self.log_tail(40)}")
            if self._answers_ruok() and probe(target, timeout_s=min(5.0, max(1.0, remaining))):
                return
            time.sleep(0.1)

    def _answers_ruok(self) -> bool:
        # a four-letter word rather than a bare connect: ZooKeeper logs a stack trace for every
        # client that connects and hangs up without a word, which buries the useful log lines
        try:
            return four_letter_word(self.host, self.port, "ruok", timeout=1.0) == "imok"
        except OSError:
            return False

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM the JVM by pid, SIGKILL after ``grace_s``. Idempotent."""
        with self._lock:
            proc = self._proc
            if proc is None or proc.poll() is not None:
                _LIVE.discard(self)
                return
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
                if self.paused:         # a stopped JVM acts on SIGTERM only once continued
                    os.kill(proc.pid, signal.SIGCONT)
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                log.warning("%s: pid %s ignored SIGTERM for %.0fs; killing it", self.name,
                            proc.pid, grace_s)
                self._sigkill(proc)
            _LIVE.discard(self)
            self._note(f"stopped (exit code {proc.returncode})")

    def kill(self) -> None:
        """SIGKILL, no goodbye (the crash case)."""
        with self._lock:
            proc = self._proc
            if proc is None or proc.poll() is not None:
                _LIVE.discard(self)
                return
            self._sigkill(proc)
            _LIVE.discard(self)
            self._note("killed with SIGKILL")

    def pause(self) -> None:
        """SIGSTOP: the JVM freezes with its sockets open (a GC pause or a hung VM)."""
        with self._lock:
            if self.running:
                os.kill(self._proc.pid, signal.SIGSTOP)
                self.paused = True
                self._note("paused with SIGSTOP")

    def resume(self) -> None:
        """SIGCONT after ``pause``."""
        with self._lock:
            if self.running and self.paused:
                os.kill(self._proc.pid, signal.SIGCONT)
                self._note("resumed with SIGCONT")
            self.paused = False

    @staticmethod
    def _sigkill(proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # the group we created for it, nothing else
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def _note(self, what: str) -> None:
        with contextlib.suppress(OSError), open(self.log_path, "ab") as logf:
            logf.write(f"=== kafkalite: {self.name} {what} at "
                       f"{time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode())

    def log_tail(self, n: int = 50) -> str:
        return _read_tail(self.log_path, n)


def server_config(client_port: int, host: str, *, extra: dict[str, Any] | None = None,
                  **overrides: Any) -> dict[str, Any]:
    """zoo.cfg settings (without dataDir) for a server whose clients connect to host:client_port.

    ``overrides`` take ZooKeeper's own names (``tickTime=250``); ``extra`` is merged last.
    """
    cfg: dict[str, Any] = {
        **SERVER_DEFAULTS,
        "clientPort": client_port,
        "clientPortAddress": host,
        "maxClientCnxns": 0,
        # tests do not need fsync (crash tests kill processes, not disks); ``kafkalite cluster
        # up`` passes forceSync=yes, ZooKeeper's own default, unless told --no-zk-force-sync
        "forceSync": "no",
        "preAllocSize": 1024,       # KB; the default pre-allocates 64 MB transaction logs
        "autopurge.purgeInterval": 0,
        **overrides,
    }
    cfg.update(extra or {})
    return cfg
