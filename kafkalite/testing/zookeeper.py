"""Start a REAL ZooKeeper for tests and for people trying kafkalite on one machine.

- :class:`ZooKeeperServer` — one standalone server (``ZooKeeperServerMain``) as a child JVM on a free
  loopback port, data and log in a work directory; ``stop``/``kill``/``restart`` for fault tests.
- :class:`ZooKeeperEnsemble` — N ``QuorumPeerMain`` nodes on loopback; kill and start single nodes.
- :func:`start_zookeeper` — what the pytest plugin uses: ``KAFKALITE_ZOOKEEPER=host:port`` (an
  existing server), else Docker through testcontainers when an engine runs and a ``zookeeper`` image
  is present locally, else the local install.
- :func:`expire_session`, :func:`unique_chroot` — helpers for tests.

The local install is found in this order: ``$ZOOKEEPER_HOME`` (``lib/*.jar``), Debian/Ubuntu's
``zookeeper`` package (``/usr/share/java/zookeeper.jar``), a few usual directories, ``zkServer.sh``
on PATH. Java comes from ``$JAVA_HOME`` or PATH.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
import weakref
import zipfile
from dataclasses import dataclass, field
from typing import Any, Protocol

from kafkalite.testing.ports import LOCALHOST, free_port, free_ports, port_is_free, port_is_open

log = logging.getLogger(__name__)

ENV_EXTERNAL = "KAFKALITE_ZOOKEEPER"          # host:port[,host:port] of a server to use as is
ENV_DOCKER = "KAFKALITE_ZOOKEEPER_DOCKER"     # "0" to never try Docker
ENV_IMAGE = "KAFKALITE_ZOOKEEPER_IMAGE"       # Docker image to use (default: any local zookeeper:*)

STANDALONE_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
QUORUM_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
DEBIAN_JAR = "/usr/share/java/zookeeper.jar"
DEBIAN_SLF4J_BINDING = "/usr/share/java/slf4j-simple.jar"
KNOWN_HOMES = (
    "/opt/zookeeper", "/usr/local/zookeeper", "/usr/share/zookeeper", "/usr/lib/zookeeper",
    "/opt/homebrew/opt/zookeeper/libexec", "/usr/local/opt/zookeeper/libexec",
)
LOG_NAME = "zookeeper.log"

INSTALL_HINT = (
    "Install ZooKeeper: `sudo apt-get install zookeeper` (Debian/Ubuntu: provides "
    "/usr/share/java/zookeeper.jar), or unpack an Apache ZooKeeper release and set "
    "ZOOKEEPER_HOME=/path/to/apache-zookeeper-x.y.z-bin, or put zkServer.sh on PATH. "
    f"Or point {ENV_EXTERNAL}=host:port at a ZooKeeper that is already running."
)


class ZooKeeperNotFoundError(RuntimeError):
    """No local ZooKeeper (or no Java) to start."""


class ZooKeeperStartError(RuntimeError):
    """A ZooKeeper process did not come up (the message carries its log tail)."""


class ZooKeeperHandle(Protocol):
    """What every way of providing a ZooKeeper offers (local process, Docker, external)."""

    connect_string: str

    def stop(self) -> None: ...

    def log_tail(self, n: int = 50) -> str: ...


# ------------------------------------------------------------------------------------ the install

@dataclass(frozen=True)
class ZooKeeperInstall:
    """How to run ZooKeeper here: java + a classpath, or (last resort) a zkServer.sh script."""

    java: str | None
    classpath: tuple[str, ...] = ()
    script: str | None = None
    location: str = ""
    missing_jars: tuple[str, ...] = field(default=(), compare=False)

    def command(self, main_class: str, config_path: str, workdir: str) -> list[str]:
        if self.script is not None:
            return [self.script, "start-foreground", config_path]
        assert self.java is not None
        return [self.java, *_jvm_options(workdir), "-cp", os.pathsep.join(self.classpath),
                main_class, config_path]

    def environment(self, workdir: str) -> dict[str, str]:
        env = dict(os.environ)
        if self.script is not None:
            env.setdefault("ZOO_LOG_DIR", workdir)
            env["ZOO_LOG4J_PROP"] = "INFO,CONSOLE"
            env["SERVER_JVMFLAGS"] = " ".join(_jvm_options(workdir))
        return env


def _jvm_options(workdir: str) -> list[str]:
    return [
        "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        "-Djava.net.preferIPv4Stack=true",
        "-Dzookeeper.admin.enableServer=false",
        "-Dzookeeper.jmx.log4j.disable=true",
        f"-Dzookeeper.log.dir={workdir}",
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
        "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
    ]


def find_java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def _manifest_class_path(jar: str) -> list[str]:
    """Jars a jar's manifest pulls in (Debian's zookeeper.jar lists its dependencies there)."""
    try:
        with zipfile.ZipFile(jar) as zf:
            text = zf.read("META-INF/MANIFEST.MF").decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return []
    text = text.replace("\r\n", "\n").replace("\n ", "")  # unfold continuation lines
    for line in text.split("\n"):
        if line.startswith("Class-Path:"):
            return line.split(":", 1)[1].split()
    return []


def _install_from_home(home: str, java: str | None) -> ZooKeeperInstall | None:
    """An Apache-style layout: <home>/lib/*.jar (+ <home>/*.jar, <home>/conf for logging)."""
    jars = sorted(glob.glob(os.path.join(home, "lib", "*.jar"))) + sorted(
        glob.glob(os.path.join(home, "*.jar")))
    if not any(re.match(r"zookeeper-\d.*\.jar$|zookeeper\.jar$", os.path.basename(j))
               for j in jars):
        return None
    conf = os.path.join(home, "conf")
    classpath = ([conf] if os.path.isdir(conf) else []) + jars
    return ZooKeeperInstall(java=java, classpath=tuple(classpath), location=home)


def _install_debian(java: str | None) -> ZooKeeperInstall | None:
    if not os.path.exists(DEBIAN_JAR):
        return None
    classpath = [DEBIAN_JAR]
    if os.path.exists(DEBIAN_SLF4J_BINDING):
        classpath.append(DEBIAN_SLF4J_BINDING)  # without a binding slf4j logs nothing at all
    missing = tuple(j for j in _manifest_class_path(DEBIAN_JAR) if not os.path.exists(j))
    return ZooKeeperInstall(java=java, classpath=tuple(classpath), location=DEBIAN_JAR,
                            missing_jars=missing)


def find_zookeeper_install() -> ZooKeeperInstall:
    """The local ZooKeeper to launch, or ZooKeeperNotFoundError saying how to get one."""
    java = find_java()
    looked: list[str] = []
    candidates = []
    home = os.environ.get("ZOOKEEPER_HOME")
    if home:
        looked.append(f"ZOOKEEPER_HOME={home} (lib/*.jar)")
        found = _install_from_home(home, java)
        if found is None:
            raise ZooKeeperNotFoundError(
                f"ZOOKEEPER_HOME={home} has no zookeeper jar in lib/. {INSTALL_HINT}")
        candidates.append(found)
    looked.append(DEBIAN_JAR)
    candidates.append(_install_debian(java))
    for known in KNOWN_HOMES:
        looked.append(f"{known}/lib")
        candidates.append(_install_from_home(known, java))
    script = shutil.which("zkServer.sh")
    looked.append("zkServer.sh on PATH")
    if script:
        real = os.path.realpath(script)
        candidates.append(_install_from_home(os.path.dirname(os.path.dirname(real)), java))
        candidates.append(ZooKeeperInstall(java=java, script=real, location=real))
    for install in candidates:
        if install is None:
            continue
        if install.script is None and install.java is None:
            raise ZooKeeperNotFoundError(
                f"found ZooKeeper at {install.location} but no Java to run it: install one "
                "(`sudo apt-get install default-jre-headless`) or set JAVA_HOME.")
        if [j for j in install.missing_jars if "jline" not in j]:  # jline: only zkCli needs it
            log.warning("ZooKeeper at %s lists jars that are missing: %s", install.location,
                        ", ".join(install.missing_jars))
        return install
    raise ZooKeeperNotFoundError(
        f"no ZooKeeper installation found (looked at: {'; '.join(looked)}). {INSTALL_HINT}")


# --------------------------------------------------------------------------- one ZooKeeper JVM

_LIVE: "weakref.WeakSet[_ZooKeeperProcess]" = weakref.WeakSet()


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


class _ZooKeeperProcess:
    """One ZooKeeper JVM: config file, child process (own process group), log file."""

    def __init__(self, *, workdir: str, host: str, port: int, install: ZooKeeperInstall,
                 main_class: str, config: dict[str, Any], myid: int | None, name: str,
                 startup_timeout_s: float, die_with_parent: int | None = None):
        self.workdir = os.path.abspath(workdir)
        self.die_with_parent = die_with_parent
        self.host = host
        self.port = port
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
            fh.write(f"# written by kafkalite.testing.zookeeper for {name}\n")
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
            # a previous incarnation (restart) may still be letting go of the port
            deadline = time.monotonic() + (10 if self._proc is not None else 0)
            while not port_is_free(self.port, self.host) and time.monotonic() < deadline:
                time.sleep(0.1)
            if not port_is_free(self.port, self.host):
                raise ZooKeeperStartError(
                    f"{self.name}: port {self.host}:{self.port} is taken by another process")
            cmd = self.install.command(self.main_class, self.config_path, self.workdir)
            preexec = None
            if self.die_with_parent is not None:
                from kafkalite.testing.procs import parent_death_preexec

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
            _LIVE.add(self)
            log.debug("%s: started pid %s on %s", self.name, self._proc.pid, self.connect_string)

    def wait_serving(self, timeout_s: float | None = None, connect_string: str | None = None) -> None:
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


def _base_config(port: int, host: str, tick_time_ms: int, min_session_timeout_ms: int,
                 max_session_timeout_ms: int, extra: dict[str, Any] | None) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "tickTime": tick_time_ms,
        "clientPort": port,
        "clientPortAddress": host,
        "minSessionTimeout": min_session_timeout_ms,
        "maxSessionTimeout": max_session_timeout_ms,
        "maxClientCnxns": 0,
        "4lw.commands.whitelist": "*",
        "admin.enableServer": "false",
        # tests do not need fsync (crash tests kill processes, not disks); ``kafkalite cluster
        # up`` passes forceSync=yes, ZooKeeper's own default, unless told --no-zk-force-sync
        "forceSync": "no",
        "preAllocSize": 1024,       # KB; the default pre-allocates 64 MB transaction logs
        "autopurge.purgeInterval": 0,
    }
    cfg.update(extra or {})
    return cfg


# --------------------------------------------------------------------------------- standalone

class ZooKeeperServer:
    """One standalone ZooKeeper on loopback, for a test session or a developer's machine.

    ``workdir`` (default: a new temp dir) holds zoo.cfg, data/ and zookeeper.log; ``port`` defaults
    to a free one. The tick is short (500 ms) and ``minSessionTimeout`` 1000 ms, so tests can use
    short session timeouts. Use as a context manager, or ``start()`` / ``stop()``.

    ``forceSync`` is off (``extra_config={"forceSync": "yes"}`` turns it on: ZooKeeper then
    fsyncs its transaction log before it acknowledges a write). ``die_with_parent``: a signal the
    JVM gets when the process that spawned it dies (Linux; ``kafkalite.testing.procs``).
    """

    def __init__(self, workdir: str | os.PathLike[str] | None = None, port: int | None = None, *,
                 host: str = LOCALHOST, install: ZooKeeperInstall | None = None,
                 tick_time_ms: int = 500, min_session_timeout_ms: int = 1000,
                 max_session_timeout_ms: int = 60_000, startup_timeout_s: float = 60.0,
                 extra_config: dict[str, Any] | None = None,
                 die_with_parent: int | None = None):
        self.install = install or find_zookeeper_install()
        self._own_workdir = workdir is None
        self.workdir = (tempfile.mkdtemp(prefix="kafkalite-zk-") if workdir is None
                        else os.path.abspath(os.fspath(workdir)))
        os.makedirs(self.workdir, exist_ok=True)
        self.host = host
        self.port = port if port is not None else free_port(host)
        self.tick_time_ms = tick_time_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self._process = _ZooKeeperProcess(
            workdir=self.workdir, host=host, port=self.port, install=self.install,
            main_class=STANDALONE_MAIN,
            config=_base_config(self.port, host, tick_time_ms, min_session_timeout_ms,
                                max_session_timeout_ms, extra_config),
            myid=None, name=f"ZooKeeper {host}:{self.port}", startup_timeout_s=startup_timeout_s,
            die_with_parent=die_with_parent)

    # -------------------------------------------------------------------- what tests read

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def log_path(self) -> str:
        return self._process.log_path

    @property
    def data_dir(self) -> str:
        return self._process.data_dir

    @property
    def config_path(self) -> str:
        return self._process.config_path

    @property
    def pid(self) -> int | None:
        return self._process.pid

    @property
    def running(self) -> bool:
        return self._process.running

    def log_tail(self, n: int = 50) -> str:
        return self._process.log_tail(n)

    def four_letter_word(self, word: str) -> str:
        return four_letter_word(self.host, self.port, word)

    def describe(self) -> str:
        return f"local ZooKeeper {self.connect_string} ({self.install.location}), log {self.log_path}"

    # ------------------------------------------------------------------------ lifecycle

    def start(self, timeout_s: float | None = None) -> "ZooKeeperServer":
        """Start (if not running) and wait until a client can use it."""
        self.spawn()
        self.wait_serving(timeout_s)
        return self

    def spawn(self) -> None:
        """Start the JVM (if not running) without waiting for it (``wait_serving`` does)."""
        self._process.spawn()

    def wait_serving(self, timeout_s: float | None = None) -> None:
        """Wait until a client opens a session and reads "/" (ZooKeeperStartError if not)."""
        self._process.wait_serving(timeout_s)

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``grace_s``. Idempotent. Data and log stay."""
        self._process.stop(grace_s)

    def kill(self) -> None:
        """SIGKILL (a crash). ``start()`` or ``restart()`` brings it back with its data."""
        self._process.kill()

    def restart(self, timeout_s: float | None = None) -> "ZooKeeperServer":
        """Stop and start again on the same port with the same data."""
        self.stop()
        return self.start(timeout_s)

    def cleanup(self) -> None:
        """Stop, and delete the work directory if this server created it."""
        self.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "ZooKeeperServer":
        return self.start()

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:
            self.cleanup()
        else:
            self.stop()
            log.warning("ZooKeeper work directory kept for inspection: %s", self.workdir)

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<ZooKeeperServer {self.connect_string} {state} workdir={self.workdir}>"


# ----------------------------------------------------------------------------------- ensemble

class ZooKeeperEnsemble:
    """``size`` ZooKeeper nodes (QuorumPeerMain) on loopback forming one quorum.

    Nodes are indexed 0..size-1 (their myid is index+1). ``kill(i)`` / ``start(i)`` / ``stop(i)``
    act on one node; without an index, ``start()`` and ``stop()`` act on all.
    """

    def __init__(self, size: int = 3, workdir: str | os.PathLike[str] | None = None, *,
                 host: str = LOCALHOST, install: ZooKeeperInstall | None = None,
                 tick_time_ms: int = 500, min_session_timeout_ms: int = 1000,
                 max_session_timeout_ms: int = 60_000, startup_timeout_s: float = 90.0,
                 extra_config: dict[str, Any] | None = None):
        if size < 1:
            raise ValueError("an ensemble needs at least one node")
        self.size = size
        self.install = install or find_zookeeper_install()
        self._own_workdir = workdir is None
        self.workdir = (tempfile.mkdtemp(prefix="kafkalite-zk-ensemble-") if workdir is None
                        else os.path.abspath(os.fspath(workdir)))
        self.host = host
        self.startup_timeout_s = startup_timeout_s
        ports = free_ports(3 * size, host)
        self.client_ports = ports[0::3]
        self.peer_ports = ports[1::3]
        self.election_ports = ports[2::3]
        servers = {f"server.{i + 1}": f"{host}:{self.peer_ports[i]}:{self.election_ports[i]}"
                   for i in range(size)}
        self.nodes: list[_ZooKeeperProcess] = []
        for i in range(size):
            cfg = _base_config(self.client_ports[i], host, tick_time_ms, min_session_timeout_ms,
                               max_session_timeout_ms, None)
            cfg.update({"initLimit": 20, "syncLimit": 10, "standaloneEnabled": "false",
                        "reconfigEnabled": "false", "cnxTimeout": 1000, **servers})
            cfg.update(extra_config or {})
            self.nodes.append(_ZooKeeperProcess(
                workdir=os.path.join(self.workdir, f"node{i + 1}"), host=host,
                port=self.client_ports[i], install=self.install, main_class=QUORUM_MAIN,
                config=cfg, myid=i + 1, name=f"ZooKeeper node {i} (myid {i + 1}) {host}:"
                f"{self.client_ports[i]}", startup_timeout_s=startup_timeout_s))

    @property
    def connect_string(self) -> str:
        return ",".join(n.connect_string for n in self.nodes)

    def node_connect_string(self, i: int) -> str:
        return self.nodes[i].connect_string

    @property
    def log_paths(self) -> list[str]:
        return [n.log_path for n in self.nodes]

    def running(self, i: int) -> bool:
        return self.nodes[i].running

    def pid(self, i: int) -> int | None:
        return self.nodes[i].pid

    def log_tail(self, n: int = 50) -> str:
        return "\n".join(f"--- node {i} ({node.log_path}) ---\n{node.log_tail(n)}"
                         for i, node in enumerate(self.nodes))

    def describe(self) -> str:
        return f"local ZooKeeper ensemble {self.connect_string} ({self.install.location})"

    def mode(self, i: int) -> str | None:
        """"leader", "follower", "standalone", or None when the node does not answer."""
        try:
            answer = four_letter_word(self.host, self.client_ports[i], "srvr", timeout=1.0)
        except OSError:
            return None
        match = re.search(r"^Mode:\s*(\S+)", answer, re.MULTILINE)
        return match.group(1) if match else None

    def leader(self) -> int | None:
        """Index of the current leader, or None."""
        for i in range(self.size):
            if self.running(i) and self.mode(i) == "leader":
                return i
        return None

    def start(self, i: int | None = None, timeout_s: float | None = None) -> "ZooKeeperEnsemble":
        """Start every node (i None) or node ``i``, and wait until it serves clients (which a
        quorum member only does once it has a quorum)."""
        timeout_s = self.startup_timeout_s if timeout_s is None else timeout_s
        targets = range(self.size) if i is None else [i]
        for idx in targets:
            self.nodes[idx].spawn()
        for idx in targets:
            self.nodes[idx].wait_serving(timeout_s)
        return self

    def wait_for_quorum(self, timeout_s: float | None = None) -> None:
        """Wait until every running node serves clients."""
        for node in self.nodes:
            if node.running:
                node.wait_serving(timeout_s)

    def kill(self, i: int) -> None:
        self.nodes[i].kill()

    def stop(self, i: int | None = None, grace_s: float = 10.0) -> None:
        targets = range(self.size) if i is None else [i]
        for idx in targets:
            self.nodes[idx].stop(grace_s)

    def restart(self, i: int, timeout_s: float | None = None) -> None:
        self.nodes[i].stop()
        self.start(i, timeout_s)

    def cleanup(self) -> None:
        self.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "ZooKeeperEnsemble":
        return self.start()

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:
            self.cleanup()
        else:
            self.stop()
            log.warning("ZooKeeper ensemble work directory kept for inspection: %s", self.workdir)


# ------------------------------------------------------------------------ external and Docker

class ExternalZooKeeper:
    """A ZooKeeper someone else runs (``KAFKALITE_ZOOKEEPER=host:port``): never started/stopped."""

    log_path = None

    def __init__(self, connect_string: str):
        self.connect_string = connect_string.strip().rstrip("/")

    def start(self, timeout_s: float = 10.0) -> "ExternalZooKeeper":
        from kafkalite.zk.client import probe, split_connect_string

        hosts = split_connect_string(self.connect_string)[0].split(",")
        reachable = False
        for hostport in hosts:
            host, _, port = hostport.strip().rpartition(":")
            with contextlib.suppress(ValueError):
                reachable = reachable or port_is_open(host.strip("[]"), int(port), timeout=2.0)
        if not reachable or not probe(self.connect_string, timeout_s=timeout_s):
            raise ZooKeeperStartError(
                f"{ENV_EXTERNAL}={self.connect_string}: no ZooKeeper answers there")
        return self

    def stop(self) -> None:
        """Nothing: the server is not ours."""

    def cleanup(self) -> None:
        """Nothing: the server is not ours."""

    def kill(self) -> None:
        raise RuntimeError(f"cannot kill the external ZooKeeper {self.connect_string}")

    def restart(self) -> None:
        raise RuntimeError(f"cannot restart the external ZooKeeper {self.connect_string}")

    def log_tail(self, n: int = 50) -> str:
        return ""

    def describe(self) -> str:
        return f"external ZooKeeper {self.connect_string} (from {ENV_EXTERNAL})"


class DockerZooKeeper:
    """A ZooKeeper container started through testcontainers (only when an engine and a local
    ``zookeeper`` image exist; nothing is pulled)."""

    log_path = None

    def __init__(self, image: str, startup_timeout_s: float = 60.0):
        self.image = image
        self.startup_timeout_s = startup_timeout_s
        self._container: Any = None
        self.connect_string = ""

    def start(self) -> "DockerZooKeeper":
        from testcontainers.core.container import DockerContainer

        from kafkalite.testing.containers import prepare_testcontainers

        prepare_testcontainers()   # no Ryuk pull on machines without a registry

        from kafkalite.zk.client import probe

        container = (
            DockerContainer(self.image)
            .with_exposed_ports(2181)
            .with_env("ZOO_4LW_COMMANDS_WHITELIST", "*")
            .with_env("ZOO_TICK_TIME", "500")
            .with_env("ZOO_ADMINSERVER_ENABLED", "false")
            .with_env("ZOO_CFG_EXTRA", "minSessionTimeout=1000 maxSessionTimeout=60000")
        )
        container.start()
        self._container = container
        self.connect_string = (f"{container.get_container_host_ip()}:"
                               f"{container.get_exposed_port(2181)}")
        deadline = time.monotonic() + self.startup_timeout_s
        while not probe(self.connect_string, timeout_s=2.0):
            if time.monotonic() > deadline:
                tail = self.log_tail(40)
                self.stop()
                raise ZooKeeperStartError(
                    f"ZooKeeper container {self.image} did not serve clients on "
                    f"{self.connect_string}:\n{tail}")
            time.sleep(0.2)
        return self

    def stop(self) -> None:
        if self._container is not None:
            container, self._container = self._container, None
            with contextlib.suppress(Exception):
                container.stop()

    cleanup = stop

    def kill(self) -> None:
        if self._container is not None:
            self._container.get_wrapped_container().kill()

    def restart(self) -> "DockerZooKeeper":
        """Restart the container (Docker may map a different host port: re-read connect_string)."""
        from kafkalite.zk.client import probe

        wrapped = self._container.get_wrapped_container()
        wrapped.restart()
        self.connect_string = (f"{self._container.get_container_host_ip()}:"
                               f"{self._container.get_exposed_port(2181)}")
        deadline = time.monotonic() + self.startup_timeout_s
        while not probe(self.connect_string, timeout_s=2.0) and time.monotonic() < deadline:
            time.sleep(0.2)
        return self

    def log_tail(self, n: int = 50) -> str:
        if self._container is None:
            return ""
        with contextlib.suppress(Exception):
            out, err = self._container.get_logs()
            text = (out or b"").decode("utf-8", "replace") + (err or b"").decode("utf-8", "replace")
            return "\n".join(text.splitlines()[-n:])
        return ""

    def describe(self) -> str:
        return f"ZooKeeper container {self.image} at {self.connect_string}"


def _docker_sockets() -> list[str]:
    home = os.path.expanduser("~")
    return ["/var/run/docker.sock", "/run/docker.sock", f"/run/user/{os.getuid()}/docker.sock",
            os.path.join(home, ".docker", "run", "docker.sock"),
            os.path.join(home, ".docker", "desktop", "docker.sock")]


def docker_zookeeper_image() -> tuple[str | None, str]:
    """(local zookeeper image to use, or None; why not) — never pulls anything."""
    if os.environ.get(ENV_DOCKER, "").lower() in ("0", "false", "no", "off"):
        return None, f"Docker disabled by {ENV_DOCKER}"
    if not os.environ.get("DOCKER_HOST") and not any(os.path.exists(s) for s in _docker_sockets()):
        return None, "no Docker engine"
    try:
        import docker  # testcontainers' dependency

        client = docker.from_env(timeout=3)
        client.ping()
    except Exception:  # noqa: BLE001 - any failure: treat as no engine
        return None, "no Docker engine"
    wanted = os.environ.get(ENV_IMAGE)
    try:
        images = client.images.list(name=wanted or "zookeeper")
    except Exception:  # noqa: BLE001
        images = []
    tags = sorted(tag for img in images for tag in img.tags)
    if not tags:
        return None, f"no local {wanted or 'zookeeper'!r} Docker image (`docker pull zookeeper`)"
    return (wanted if wanted in tags else tags[0]), "Docker"


def start_zookeeper(workdir: str | os.PathLike[str] | None = None, *,
                    docker: bool | None = None) -> Any:
    """A running ZooKeeper with ``connect_string``, ``stop()``, ``log_tail()``, ``describe()``.

    ``KAFKALITE_ZOOKEEPER=host:port`` means "use that server" (never started or stopped here).
    Otherwise Docker (testcontainers) when ``docker`` is not False, an engine answers and a
    ``zookeeper`` image is present locally; otherwise the local install, said in one log line.
    """
    external = os.environ.get(ENV_EXTERNAL)
    if external:
        log.info("using the ZooKeeper at %s (%s)", external, ENV_EXTERNAL)
        return ExternalZooKeeper(external).start()
    reason = "Docker not requested"
    if docker is not False:
        image, reason = docker_zookeeper_image()
        if image is not None:
            try:
                server = DockerZooKeeper(image).start()
                log.info("using ZooKeeper in Docker: %s", server.describe())
                return server
            except Exception as exc:  # noqa: BLE001 - fall back to the local install
                reason = f"Docker ZooKeeper failed ({exc})"
    install = find_zookeeper_install()
    log.info("%s: using the local ZooKeeper install at %s", reason, install.location)
    return ZooKeeperServer(workdir, install=install).start()


# ------------------------------------------------------------------------------------ helpers

def expire_session(client: Any, connect_string: str, *, wait_s: float = 10.0) -> bool:
    """Expire ``client``'s ZooKeeper session the standard way (a second connection attaches to the
    same session id and password, then closes it). ``client``: a kafkalite ZkClient, a kazoo
    client, or a (session_id, password) pair; ``connect_string``: the server (a chroot is ignored).

    When this returns the session is gone on the server (its ephemeral znodes too). Then waits up
    to ``wait_s`` for a client object to notice (its session id changes); returns whether it did
    (always True for a bare pair).
    """
    from kafkalite.zk.client import expire_session as _expire
    from kafkalite.zk.client import session_credentials

    old_sid, _ = session_credentials(client)
    _expire(client, connect_string, timeout_s=max(wait_s, 5.0))
    if isinstance(client, tuple):
        return True
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if session_credentials(client)[0] != old_sid:
                return True
        time.sleep(0.02)
    return False


_CHROOT_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def unique_chroot(prefix: str = "kl-test") -> str:
    """A fresh chroot path such as ``/kl-test-test_name-1a2b3c4d5e6f`` (not created here)."""
    clean = _CHROOT_SAFE.sub("-", prefix).strip("-.")[:60] or "kl"
    return f"/{clean}-{uuid.uuid4().hex[:12]}"
