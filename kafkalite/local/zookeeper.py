"""Start a REAL ZooKeeper for tests and for people trying kafkalite on one machine.

- :class:`ZooKeeperServer` -- one standalone server (``ZooKeeperServerMain``) as a child JVM on a
  free loopback port, data and log in a work directory; ``stop``/``kill``/``pause``/``restart`` for fault
  tests.
- :class:`~kafkalite.local.zookeeper_ensemble.ZooKeeperEnsemble` -- N ``QuorumPeerMain`` nodes;
  kill, pause and start single nodes (re-exported here).
- :func:`start_zookeeper` -- what the pytest plugin uses: ``KAFKALITE_ZOOKEEPER=host:port`` (an
  existing server), else Docker (:class:`~kafkalite.local.zookeeper_container.ZooKeeperContainer`)
  when an engine runs and a ``zookeeper`` image is present locally, else the local install
  (:mod:`kafkalite.local.zookeeper_install` says where it is looked for).
- :func:`expire_session`, :func:`unique_chroot` -- helpers for tests.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import tempfile
import time
import uuid
from typing import Any, Protocol

from kafkalite.local import docker_engine
from kafkalite.local.ports import LOCALHOST, free_port, port_is_open
from kafkalite.local.procs import Placement
from kafkalite.local.zookeeper_container import DockerZooKeeper, ZooKeeperContainer
from kafkalite.local.zookeeper_ensemble import ZooKeeperEnsemble
from kafkalite.local.zookeeper_install import (
    ENV_EXTERNAL, STANDALONE_MAIN, ZooKeeperInstall, ZooKeeperNotFoundError, find_zookeeper_install)
from kafkalite.local.zookeeper_process import (
    ZooKeeperProcess, ZooKeeperStartError, four_letter_word, server_config)

log = logging.getLogger(__name__)

CLIENT_PORT = 2181          # on an address of its own (a placement), ZooKeeper's usual port

__all__ = ["ZooKeeperServer", "ZooKeeperEnsemble", "ExternalZooKeeper", "ZooKeeperContainer",
           "DockerZooKeeper", "ZooKeeperInstall", "ZooKeeperNotFoundError", "ZooKeeperStartError",
           "find_zookeeper_install", "start_zookeeper", "expire_session", "unique_chroot",
           "four_letter_word"]


class ZooKeeperHandle(Protocol):
    """What every way of providing a ZooKeeper offers (local process, Docker, external)."""

    connect_string: str

    def stop(self) -> None: ...

    def log_tail(self, n: int = 50) -> str: ...

    def describe(self) -> str: ...


# ------------------------------------------------------------------------------- standalone

class ZooKeeperServer:
    """One standalone ZooKeeper, for a test session or a developer's machine.

    ``workdir`` (default: a new temp dir) holds zoo.cfg, data/ and zookeeper.log; ``port`` defaults
    to a free one. The tick is short (500 ms) and ``minSessionTimeout`` 1000 ms, so tests can use
    short session timeouts. Use as a context manager, or ``start()`` / ``stop()``.

    ``forceSync`` is off (``extra_config={"forceSync": "yes"}`` turns it on: ZooKeeper then
    fsyncs its transaction log before it acknowledges a write). ``die_with_parent``: a signal the
    JVM gets when the process that spawned it dies (Linux; ``kafkalite.local.procs``).
    ``placement``: another address and a command prefix (e.g. a network namespace of
    ``kafkalite.testing.faults``) instead of loopback; ``port`` then defaults to 2181.
    """

    def __init__(self, workdir: str | os.PathLike[str] | None = None, port: int | None = None, *,
                 host: str = LOCALHOST, install: ZooKeeperInstall | None = None,
                 tick_time_ms: int = 500, min_session_timeout_ms: int = 1000,
                 max_session_timeout_ms: int = 60_000, startup_timeout_s: float = 60.0,
                 extra_config: dict[str, Any] | None = None,
                 die_with_parent: int | None = None, placement: Placement | None = None):
        self.install = install or find_zookeeper_install()
        self._own_workdir = workdir is None
        self.workdir = (tempfile.mkdtemp(prefix="kafkalite-zk-") if workdir is None
                        else os.path.abspath(os.fspath(workdir)))
        os.makedirs(self.workdir, exist_ok=True)
        placement = placement or Placement(host)
        self.host = placement.host
        if port is None:
            port = CLIENT_PORT if placement.command_prefix else free_port(self.host)
        self.port = port
        self.tick_time_ms = tick_time_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self._process = ZooKeeperProcess(
            workdir=self.workdir, host=self.host, port=self.port, install=self.install,
            main_class=STANDALONE_MAIN,
            config=server_config(self.port, self.host, extra=extra_config,
                                 tickTime=tick_time_ms, minSessionTimeout=min_session_timeout_ms,
                                 maxSessionTimeout=max_session_timeout_ms),
            myid=None, name=f"ZooKeeper {self.host}:{self.port}",
            startup_timeout_s=startup_timeout_s, die_with_parent=die_with_parent,
            command_prefix=placement.command_prefix)

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
        return (f"local ZooKeeper {self.connect_string} ({self.install.location}), "
                f"log {self.log_path}")

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

    def pause(self) -> None:
        """SIGSTOP: the server freezes with its connections open; ``resume()`` continues it."""
        self._process.pause()

    def resume(self) -> None:
        self._process.resume()

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




# ------------------------------------------------------------------------ external

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


def start_zookeeper(workdir: str | os.PathLike[str] | None = None, *,
                    docker: bool | None = None) -> Any:
    """A running ZooKeeper with ``connect_string``, ``stop()``, ``log_tail()``, ``describe()``.

    ``KAFKALITE_ZOOKEEPER=host:port`` means "use that server" (never started or stopped here).
    Otherwise ``docker`` (default: ``KAFKALITE_TEST_DOCKER``, see ``docker_engine``) decides:
    False never tries Docker; True requires it (``DockerUnavailable`` saying why when it cannot);
    None uses a container when an engine answers and a ``zookeeper`` image is local. Failing
    that, the local install, said in one log line with the reason.
    """
    external = os.environ.get(ENV_EXTERNAL)
    if external:
        log.info("using the ZooKeeper at %s (%s)", external, ENV_EXTERNAL)
        return ExternalZooKeeper(external).start()
    if docker is None:
        docker = docker_engine.docker_wanted()
    reason = "Docker not requested"
    if docker is not False:
        image, reason = docker_engine.docker_zookeeper_image()
        if image is None and docker:
            raise docker_engine.DockerUnavailable(
                f"ZooKeeper in Docker is required ({docker_engine.ENV_USE_DOCKER}=1 or "
                f"docker=True) but: {reason}")
        if image is not None:
            try:
                server = ZooKeeperContainer(image).start()
                log.info("using ZooKeeper in Docker: %s", server.describe())
                return server
            except Exception as exc:  # noqa: BLE001 - fall back to the local install
                if docker:
                    raise
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


def create_chroots(connect_string: str, *prefixes: str) -> list[str]:
    """One fresh chroot per prefix on the ZooKeeper at ``connect_string`` (no chroot of its own),
    created, for clusters that live longer than a test (session fixtures, benches)."""
    from kafkalite.zk import ZkClient

    chroots = [unique_chroot(prefix) for prefix in prefixes]
    admin = ZkClient(connect_string, session_timeout_ms=30_000).start()
    try:
        for chroot in chroots:
            admin.ensure_path(chroot)
    finally:
        admin.stop()
    return chroots
