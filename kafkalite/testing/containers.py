"""ZooKeeper and whole kafkalite clusters in Docker (through testcontainers), for integration tests,
with local processes as the fallback when no engine or image is there.

- :class:`ContainerCluster` — ZooKeeper plus N brokers of the ``kafkalite`` image on a network of
  their own, each with two listeners as in docker/docker-compose.yml: INTERNAL (``brokerN:9092``,
  between brokers) and EXTERNAL (``localhost:<free port>``, what tests on the host connect to).
- :class:`LocalProcessCluster` — the same interface over a local ZooKeeper and
  :class:`~kafkalite.local.cluster.LocalCluster` broker processes.
- :func:`start_cluster` — a running cluster: containers when
  :func:`~kafkalite.local.docker_engine.docker_unavailable_reason` says nothing stands in the
  way, local processes otherwise.
- pytest fixtures ``kafkalite_docker_zookeeper`` and ``kafkalite_docker_cluster`` (session scope),
  registered by kafkalite's pytest plugin.

ZooKeeper runs in the one container launcher,
:class:`~kafkalite.local.zookeeper_container.ZooKeeperContainer`, on the cluster's network
(alias ``zookeeper``). Nothing is ever pulled: the images must exist locally (``docker compose -f
docker/docker-compose.yml build`` or ``docker/build.sh`` make ``kafkalite:latest``). The
environment switches (``KAFKALITE_TEST_DOCKER``, ``KAFKALITE_TEST_IMAGE``,
``KAFKALITE_TEST_ZOOKEEPER_IMAGE``) are read in :mod:`kafkalite.local.docker_engine`.
"""

from __future__ import annotations

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

from kafkalite.local import docker_engine
from kafkalite.local.docker_engine import DockerUnavailable
from kafkalite.local.ports import free_ports
from kafkalite.local.zookeeper_container import ZooKeeperContainer

log = logging.getLogger(__name__)

CHROOT = "/kafkalite"
INTERNAL_PORT = 9092
EXTERNAL_PORT = 19092


class ContainerExited(RuntimeError):
    """A container stopped while it was awaited (the message carries its log tail)."""


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
        self.image = image or docker_engine.kafkalite_image()
        self.zookeeper_image = zookeeper_image     # None: the one docker_zookeeper_image finds
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

        if self.zookeeper_image is None:
            self.zookeeper_image, why = docker_engine.docker_zookeeper_image()
            if self.zookeeper_image is None:
                raise DockerUnavailable(why)
        reason = docker_engine.docker_unavailable_reason(self.image, self.zookeeper_image)
        if reason:
            raise DockerUnavailable(reason)
        docker_engine.prepare_testcontainers()
        self.host, interface = docker_engine.host_and_interface()
        docker_engine.stop_at_exit(self)
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
                docker_engine.publish(container, EXTERNAL_PORT, port, interface)
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
        from kafkalite.local.cluster import request

        expected = set(broker_ids)

        def ready():
            for broker_id in expected:
                wrapped = self.brokers[broker_id].get_wrapped_container()
                wrapped.reload()
                if wrapped.status in ("exited", "dead"):
                    raise ContainerExited(f"broker {broker_id}'s container {wrapped.status}:\n"
                                       f"{docker_engine.logs_tail(self.brokers[broker_id])}")
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
            parts.append(f"--- broker {broker_id} ({self.image}) ---\n"
                         f"{docker_engine.logs_tail(container, n)}")
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
    local install and :class:`~kafkalite.local.cluster.LocalCluster` brokers."""

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
        from kafkalite.local.cluster import LocalCluster
        from kafkalite.local.zookeeper import start_zookeeper

        docker_engine.stop_at_exit(self)
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
    locally (``docker=True`` requires it), else local processes (``docker=False`` forces them;
    None: ``KAFKALITE_TEST_DOCKER`` decides). ``overrides``: broker settings, with dots or
    underscores (``min_insync_replicas=2``)."""
    settings = {key.replace("_", "."): value for key, value in overrides.items()}
    if docker is None:
        docker = docker_engine.docker_wanted()
    if docker is not False:
        image = docker_engine.kafkalite_image()
        zk_image, reason = docker_engine.docker_zookeeper_image()
        if zk_image is not None:
            reason = docker_engine.docker_unavailable_reason(image)
        if zk_image is not None and reason is None:
            return ContainerCluster(num_brokers, image=image, zookeeper_image=zk_image,
                                    overrides=settings).start()
        if docker:
            raise DockerUnavailable(reason)
        log.info("kafkalite test cluster: %s; using local processes", reason)
    return LocalProcessCluster(num_brokers, overrides=settings).start()


# ------------------------------------------------------------------------------ pytest fixtures

@pytest.fixture(scope="session")
def kafkalite_docker_zookeeper() -> Iterator[Any]:
    """A ZooKeeper for the session: in Docker (testcontainers) when an engine answers and the
    zookeeper image is local, else the local install. ``connect_string``, ``describe()``."""
    from kafkalite.local.zookeeper import start_zookeeper

    workdir = tempfile.mkdtemp(prefix="kafkalite-zk-")
    server = start_zookeeper(workdir)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def kafkalite_docker_cluster() -> Iterator[ContainerCluster | LocalProcessCluster]:
    """Three kafkalite brokers and ZooKeeper for the whole session: in Docker (testcontainers)
    when an engine answers and the kafkalite and zookeeper images are local, else local
    processes. Use ``.bootstrap_servers`` (and ``.zookeeper_connect``); ``.kind`` says which.
    Tests share it: give each test topics of its own (e.g. with a uuid in the name)."""
    cluster = start_cluster(3)
    log.info("kafkalite_docker_cluster: %s", cluster.describe())
    try:
        yield cluster
    finally:
        cluster.stop()


def unique_name(prefix: str = "t") -> str:
    """A topic or group name no other test uses: ``prefix-1a2b3c4d``."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"
