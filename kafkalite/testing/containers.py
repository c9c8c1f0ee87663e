"""ZooKeeper and whole kafkalite clusters in Docker (through testcontainers), for integration tests,
with local processes as the fallback when no engine or image is there.

- :class:`ZooKeeperContainer` — the ``zookeeper:3.8`` image on a Docker network (alias
  ``zookeeper``), its client port published on the host's loopback.
- :class:`ContainerCluster` — ZooKeeper plus N brokers of the ``kafkalite`` image on a network of
  their own, each with two listeners as in docker/docker-compose.yml: INTERNAL (``brokerN:9092``,
  between brokers) and EXTERNAL (``localhost:<free port>``, what tests on the host connect to).
- :class:`LocalProcessCluster` — the same interface over a local ZooKeeper and
  :class:`~kafkalite.testing.cluster.LocalCluster` broker processes.
- :func:`start_cluster` — a running cluster: containers when :func:`docker_unavailable_reason` says
  nothing stands in the way, local processes otherwise.
- pytest fixtures ``kafkalite_docker_zookeeper`` and ``kafkalite_docker_cluster`` (session scope),
  registered by kafkalite's pytest plugin.

Nothing is ever pulled: the images must exist locally (``docker compose -f docker/docker-compose.yml
build`` or ``docker/build.sh`` make ``kafkalite:latest``). Environment:
``KAFKALITE_TEST_DOCKER=0`` never uses Docker, ``=1`` requires it (no fallback);
``KAFKALITE_TEST_IMAGE`` (``kafkalite:latest``) and ``KAFKALITE_TEST_ZOOKEEPER_IMAGE``
(``zookeeper:3.8``) name the images.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite.testing.ports import free_ports

log = logging.getLogger(__name__)

ENV_USE_DOCKER = "KAFKALITE_TEST_DOCKER"
ENV_IMAGE = "KAFKALITE_TEST_IMAGE"
ENV_ZOOKEEPER_IMAGE = "KAFKALITE_TEST_ZOOKEEPER_IMAGE"
DEFAULT_IMAGE = "kafkalite:latest"
DEFAULT_ZOOKEEPER_IMAGE = "zookeeper:3.8"
CHROOT = "/kafkalite"
INTERNAL_PORT = 9092
EXTERNAL_PORT = 19092


class DockerUnavailable(RuntimeError):
    """No engine answers, or an image is missing locally (the message says which)."""


class ContainerExited(RuntimeError):
    """A container stopped while it was awaited (the message carries its log tail)."""


# ------------------------------------------------------------------------------ the engine

def _docker_client(timeout: int = 5):
    import docker

    client = docker.from_env(timeout=timeout)
    client.ping()
    return client


def docker_unavailable_reason(*images: str) -> str | None:
    """None when an engine answers and every image in ``images`` exists locally; else why not."""
    if os.environ.get(ENV_USE_DOCKER, "").lower() in ("0", "false", "no", "off"):
        return f"Docker disabled by {ENV_USE_DOCKER}"
    try:
        client = _docker_client()
    except ImportError:
        return "the docker Python package (testcontainers' dependency) is not installed"
    except Exception as exc:  # noqa: BLE001 - every failure means: no engine
        return f"no Docker engine answers ({type(exc).__name__})"
    try:
        for image in images:
            try:
                client.images.get(image)
            except Exception:  # noqa: BLE001 - ImageNotFound, or an engine error
                return (f"no local Docker image {image!r} (nothing is pulled; build it, e.g. "
                        f"docker/build.sh for kafkalite:latest)")
    finally:
        client.close()
    return None


def prepare_testcontainers() -> None:
    """Ryuk (testcontainers' reaper) needs the image testcontainers/ryuk; where it is not present
    locally (and TESTCONTAINERS_RYUK_DISABLED is not set), run without it: these classes remove
    their containers themselves, at stop() and at exit."""
    from testcontainers.core.config import testcontainers_config

    if "TESTCONTAINERS_RYUK_DISABLED" in os.environ:
        return
    try:
        client = _docker_client()
        try:
            client.images.get(testcontainers_config.ryuk_image)
        finally:
            client.close()
    except Exception:  # noqa: BLE001 - no local ryuk image (or no engine: start will say so)
        testcontainers_config.ryuk_disabled = True


def _host_and_loopback() -> tuple[str, str | None]:
    """(address tests use to reach published ports, interface to publish on: loopback when the
    engine is local, so container traffic stays on this machine; None = all)."""
    from testcontainers.core.docker_client import DockerClient

    host = DockerClient().host()
    if host in ("localhost", "127.0.0.1", "::1"):
        return "localhost", "127.0.0.1"
    return host, None


def _publish(container: Any, port: int, host_port: int, interface: str | None) -> None:
    if interface:  # docker-py's (interface, port) form; testcontainers' with_bind_ports has none
        container.ports[f"{port}/tcp"] = (interface, host_port)
    else:
        container.with_bind_ports(port, host_port)


def _logs_tail(container: Any, n: int = 40) -> str:
    with contextlib.suppress(Exception):
        out, err = container.get_logs()
        text = (out or b"").decode("utf-8", "replace") + (err or b"").decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-n:])
    return ""


def _wait(condition, timeout_s: float, what: str, on_timeout=lambda: "",
          fatal: type[BaseException] | None = None) -> None:
    """Poll ``condition`` until true; TimeoutError after ``timeout_s``. A ``fatal`` exception
    from the condition ends the wait at once (e.g. a container that exited)."""
    deadline = time.monotonic() + timeout_s
    last = None
    while True:
        try:
            if condition():
                return
        except Exception as exc:  # noqa: BLE001 - it may fail while starting
            if fatal is not None and isinstance(exc, fatal):
                raise
            last = exc
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}"
                               f"{f' (last error: {last})' if last else ''}\n{on_timeout()}")
        time.sleep(0.2)


# ------------------------------------------------------------------------------ ZooKeeper

class ZooKeeperContainer:
    """ZooKeeper in Docker: ``connect_string`` (from the host), ``internal_connect_string`` (from
    containers on ``network``), ``stop()``, ``kill()``, ``log_tail()``, ``describe()``."""

    def __init__(self, image: str | None = None, network: Any = None,
                 startup_timeout_s: float = 60.0):
        self.image = image or os.environ.get(ENV_ZOOKEEPER_IMAGE, DEFAULT_ZOOKEEPER_IMAGE)
        self.network = network
        self.startup_timeout_s = startup_timeout_s
        self.connect_string = ""
        self.internal_connect_string = "zookeeper:2181"
        self._container: Any = None

    def start(self) -> ZooKeeperContainer:
        from testcontainers.core.container import DockerContainer

        from kafkalite.zk.client import probe

        prepare_testcontainers()
        host, interface = _host_and_loopback()
        (port,) = free_ports(1)
        container = (DockerContainer(self.image)
                     .with_env("ZOO_4LW_COMMANDS_WHITELIST", "srvr,ruok,mntr,stat")
                     .with_env("ZOO_TICK_TIME", "500")
                     .with_env("ZOO_ADMINSERVER_ENABLED", "false")
                     .with_env("ZOO_CFG_EXTRA", "minSessionTimeout=1000 maxSessionTimeout=60000"))
        _publish(container, 2181, port, interface)
        if self.network is not None:
            container.with_network(self.network).with_network_aliases("zookeeper")
        container.start()
        _register_for_exit(self)
        self._container = container
        self.connect_string = f"{host}:{port}"
        try:
            _wait(lambda: probe(self.connect_string, timeout_s=2.0), self.startup_timeout_s,
                  f"ZooKeeper container {self.image} at {self.connect_string}", self.log_tail)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        container, self._container = self._container, None
        if container is not None:
            with contextlib.suppress(Exception):
                container.stop()

    cleanup = stop

    def kill(self) -> None:
        self._container.get_wrapped_container().kill()

    def log_tail(self, n: int = 40) -> str:
        return _logs_tail(self._container, n) if self._container is not None else ""

    def describe(self) -> str:
        return f"ZooKeeper container {self.image} at {self.connect_string}"

    def __enter__(self) -> ZooKeeperContainer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ------------------------------------------------------------------------------ clusters

class ContainerCluster:
    """ZooKeeper and ``num_brokers`` kafkalite brokers in Docker, on a network of their own.

    ``bootstrap_servers`` ("localhost:p1,localhost:p2,...") and ``zookeeper_connect`` (with the
    chroot) are what a test on the host uses. ``kill(broker_id)`` (SIGKILL), ``stop_broker``,
    ``start_broker``, ``stop()``; ``describe_logs()`` for failure reports. ``overrides`` are
    broker settings with Kafka's names.
    """

    kind = "docker"

    def __init__(self, num_brokers: int = 3, *, image: str | None = None,
                 zookeeper_image: str | None = None, overrides: dict[str, Any] | None = None,
                 start_timeout_s: float = 90.0):
        self.num_brokers = num_brokers
        self.image = image or os.environ.get(ENV_IMAGE, DEFAULT_IMAGE)
        self.zookeeper_image = zookeeper_image or os.environ.get(ENV_ZOOKEEPER_IMAGE,
                                                                 DEFAULT_ZOOKEEPER_IMAGE)
        self.overrides = dict(overrides or {})
        self.start_timeout_s = start_timeout_s
        self.network: Any = None
        self.zookeeper: ZooKeeperContainer | None = None
        self.brokers: dict[int, Any] = {}
        self.ports: dict[int, int] = {}
        self.host = "localhost"

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{self.host}:{self.ports[b]}" for b in sorted(self.ports))

    @property
    def zookeeper_connect(self) -> str:
        return f"{self.zookeeper.connect_string}{CHROOT}" if self.zookeeper else ""

    def start(self) -> ContainerCluster:
        from testcontainers.core.container import DockerContainer
        from testcontainers.core.network import Network

        prepare_testcontainers()
        reason = docker_unavailable_reason(self.image, self.zookeeper_image)
        if reason:
            raise DockerUnavailable(reason)
        self.host, interface = _host_and_loopback()
        _register_for_exit(self)
        try:
            self.network = Network().create()
            self.zookeeper = ZooKeeperContainer(self.zookeeper_image, self.network).start()
            host_ports = free_ports(self.num_brokers)
            for index in range(self.num_brokers):
                broker_id = index + 1
                port = host_ports[index]
                settings = {
                    "broker.id": broker_id,
                    "zookeeper.connect": f"zookeeper:2181{CHROOT}",
                    "listeners": f"INTERNAL://:{INTERNAL_PORT},EXTERNAL://:{EXTERNAL_PORT}",
                    "advertised.listeners": f"INTERNAL://broker{broker_id}:{INTERNAL_PORT},"
                                            f"EXTERNAL://{self.host}:{port}",
                    "inter.broker.listener.name": "INTERNAL",
                    "default.replication.factor": min(3, self.num_brokers),
                    "zookeeper.session.timeout.ms": 6000,
                    "controlled.shutdown.retry.backoff.ms": 500,
                    **self.overrides,
                }
                container = DockerContainer(self.image).with_network(self.network) \
                    .with_network_aliases(f"broker{broker_id}")
                for key, value in settings.items():
                    container.with_env("KAFKALITE_" + key.upper().replace("_", "__")
                                       .replace(".", "_"), str(value))
                _publish(container, EXTERNAL_PORT, port, interface)
                container.start()
                self.brokers[broker_id] = container
                self.ports[broker_id] = port
            self.wait_for_brokers(list(self.brokers))
        except BaseException:
            log.error("kafkalite containers did not start:\n%s", self.describe_logs())
            self.stop()
            raise
        return self

    def wait_for_brokers(self, broker_ids, timeout_s: float | None = None) -> None:
        """Until each broker answers on its EXTERNAL listener and lists all of ``broker_ids``."""
        from kafkalite.protocol import messages as m
        from kafkalite.testing.cluster import request

        expected = set(broker_ids)

        def ready():
            for broker_id in expected:
                wrapped = self.brokers[broker_id].get_wrapped_container()
                wrapped.reload()
                if wrapped.status in ("exited", "dead"):
                    raise ContainerExited(f"broker {broker_id}'s container {wrapped.status}:\n"
                                       f"{_logs_tail(self.brokers[broker_id])}")
                response = request(self.host, self.ports[broker_id],
                                   m.MetadataRequest(topics=[]), timeout_s=3.0)
                if not expected <= {b.node_id for b in response.brokers}:
                    return False
                if response.controller_id < 0:
                    return False
            return True

        _wait(ready, timeout_s or self.start_timeout_s, f"brokers {sorted(expected)} in Docker",
              self.describe_logs, fatal=ContainerExited)

    def kill(self, broker_id: int) -> None:
        """SIGKILL the broker's container (no controlled shutdown)."""
        self.brokers[broker_id].get_wrapped_container().kill()

    def stop_broker(self, broker_id: int, timeout_s: int = 30) -> None:
        """SIGTERM: a controlled shutdown."""
        self.brokers[broker_id].get_wrapped_container().stop(timeout=timeout_s)

    def start_broker(self, broker_id: int, wait: bool = True) -> None:
        self.brokers[broker_id].get_wrapped_container().start()
        if wait:
            self.wait_for_brokers([broker_id])

    def describe_logs(self, n: int = 40) -> str:
        parts = []
        if self.zookeeper is not None:
            parts.append(f"--- {self.zookeeper.describe()} ---\n{self.zookeeper.log_tail(n)}")
        for broker_id, container in sorted(self.brokers.items()):
            parts.append(f"--- broker {broker_id} ({self.image}) ---\n{_logs_tail(container, n)}")
        return "\n".join(parts)

    def describe(self) -> str:
        return (f"{self.num_brokers} kafkalite broker(s) in Docker ({self.image}) at "
                f"{self.bootstrap_servers}, ZooKeeper {self.zookeeper_connect}")

    def stop(self) -> None:
        for container in self.brokers.values():
            with contextlib.suppress(Exception):
                container.stop()
        self.brokers.clear()
        if self.zookeeper is not None:
            self.zookeeper.stop()
        if self.network is not None:
            with contextlib.suppress(Exception):
                self.network.remove()
            self.network = None

    cleanup = stop

    def __enter__(self) -> ContainerCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class LocalProcessCluster:
    """The same interface as :class:`ContainerCluster` over local processes: a ZooKeeper from the
    local install and :class:`~kafkalite.testing.cluster.LocalCluster` brokers."""

    kind = "local"

    def __init__(self, num_brokers: int = 3, *, overrides: dict[str, Any] | None = None,
                 workdir: str | None = None, zookeeper: Any = None):
        self.num_brokers = num_brokers
        self.overrides = dict(overrides or {})
        self._own_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="kafkalite-local-cluster-")
        self.zookeeper = zookeeper
        self._own_zookeeper = zookeeper is None
        self.cluster: Any = None

    @property
    def bootstrap_servers(self) -> str:
        return self.cluster.bootstrap_servers

    @property
    def zookeeper_connect(self) -> str:
        return f"{self.zookeeper.connect_string}{CHROOT}"

    @property
    def brokers(self) -> dict[int, Any]:
        return self.cluster.brokers

    def start(self) -> LocalProcessCluster:
        from kafkalite.testing.cluster import LocalCluster
        from kafkalite.testing.zookeeper import start_zookeeper

        _register_for_exit(self)
        if self.zookeeper is None:
            self.zookeeper = start_zookeeper(os.path.join(self.workdir, "zookeeper"),
                                             docker=False)
        self.cluster = LocalCluster(self.zookeeper_connect, self.num_brokers,
                                    workdir=os.path.join(self.workdir, "brokers"),
                                    overrides=self.overrides)
        try:
            self.cluster.start()
        except BaseException:
            self.stop()
            raise
        return self

    def kill(self, broker_id: int) -> None:
        self.cluster.kill(broker_id)

    def stop_broker(self, broker_id: int, timeout_s: int = 30) -> None:
        self.cluster.terminate(broker_id, timeout_s)

    def start_broker(self, broker_id: int, wait: bool = True) -> None:
        self.cluster.restart(broker_id, wait=wait)

    def wait_for_brokers(self, broker_ids, timeout_s: float | None = None) -> None:
        self.cluster.wait_for_brokers(broker_ids, timeout_s)

    def describe_logs(self, n: int = 40) -> str:
        return self.cluster.describe_logs() if self.cluster is not None else ""

    def describe(self) -> str:
        return (f"{self.num_brokers} local kafkalite broker process(es) at "
                f"{self.bootstrap_servers}, ZooKeeper {self.zookeeper_connect}")

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
        if self._own_zookeeper and self.zookeeper is not None:
            self.zookeeper.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    cleanup = stop

    def __enter__(self) -> LocalProcessCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_cluster(num_brokers: int = 3, *, docker: bool | None = None,
                  **overrides: Any) -> ContainerCluster | LocalProcessCluster:
    """A running cluster of ``num_brokers``: in Docker when an engine answers and the images exist
    locally (``docker=True`` requires it), else local processes (``docker=False`` forces them).
    ``overrides``: broker settings, with dots or underscores (``min_insync_replicas=2``)."""
    settings = {key.replace("_", "."): value for key, value in overrides.items()}
    env = os.environ.get(ENV_USE_DOCKER, "").lower()
    if docker is None and env in ("1", "true", "yes", "on"):
        docker = True
    if docker is not False:
        image = os.environ.get(ENV_IMAGE, DEFAULT_IMAGE)
        zk_image = os.environ.get(ENV_ZOOKEEPER_IMAGE, DEFAULT_ZOOKEEPER_IMAGE)
        reason = docker_unavailable_reason(image, zk_image)
        if reason is None:
            return ContainerCluster(num_brokers, image=image, zookeeper_image=zk_image,
                                    overrides=settings).start()
        if docker:
            raise DockerUnavailable(reason)
        log.info("kafkalite test cluster: %s; using local processes", reason)
    return LocalProcessCluster(num_brokers, overrides=settings).start()


def start_zookeeper_container(docker: bool | None = None) -> Any:
    """ZooKeeper in Docker when possible (``docker=True``: required), else the local install."""
    if docker is not False:
        image = os.environ.get(ENV_ZOOKEEPER_IMAGE, DEFAULT_ZOOKEEPER_IMAGE)
        reason = docker_unavailable_reason(image)
        if reason is None:
            return ZooKeeperContainer(image).start()
        if docker:
            raise DockerUnavailable(reason)
        log.info("kafkalite test ZooKeeper: %s; using the local install", reason)
    from kafkalite.testing.zookeeper import start_zookeeper

    return start_zookeeper(tempfile.mkdtemp(prefix="kafkalite-zk-"), docker=False)


_running: list[Any] = []


def _register_for_exit(thing: Any) -> None:
    if not _running:
        atexit.register(_stop_all)
    if thing not in _running:
        _running.append(thing)


def _stop_all() -> None:
    while _running:
        with contextlib.suppress(Exception):
            _running.pop().stop()


# ------------------------------------------------------------------------------ pytest fixtures

def _wanted_docker() -> bool | None:
    env = os.environ.get(ENV_USE_DOCKER, "").lower()
    if env in ("1", "true", "yes", "on"):
        return True
    if env in ("0", "false", "no", "off"):
        return False
    return None


@pytest.fixture(scope="session")
def kafkalite_docker_zookeeper() -> Iterator[Any]:
    """A ZooKeeper for the session: in Docker (testcontainers) when an engine answers and the
    zookeeper image is local, else the local install. ``connect_string``, ``describe()``."""
    server = start_zookeeper_container(_wanted_docker())
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def kafkalite_docker_cluster() -> Iterator[ContainerCluster | LocalProcessCluster]:
    """Three kafkalite brokers and ZooKeeper for the whole session: in Docker (testcontainers)
    when an engine answers and the kafkalite and zookeeper images are local, else local
    processes. Use ``.bootstrap_servers`` (and ``.zookeeper_connect``); ``.kind`` says which.
    Tests share it: give each test topics of its own (e.g. with a uuid in the name)."""
    cluster = start_cluster(3, docker=_wanted_docker())
    log.info("kafkalite_docker_cluster: %s", cluster.describe())
    try:
        yield cluster
    finally:
        cluster.stop()


def unique_name(prefix: str = "t") -> str:
    """A topic or group name no other test uses: ``prefix-1a2b3c4d``."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"
