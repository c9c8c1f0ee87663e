"""ZooKeeper in Docker through testcontainers: the one container launcher.

:class:`ZooKeeperContainer` runs a local ``zookeeper`` image (nothing is pulled; see
``kafkalite.local.docker_engine`` for which image and the switches) with the same server
settings as the local launcher (``SERVER_DEFAULTS``: 500 ms ticks, 1 s minimum session timeout,
four-letter words, no admin server). Its client port is published on the host's loopback on a
fixed free port, so ``connect_string`` stays the same across ``restart()``. On a Docker network
(``network=``) other containers reach it as ``zookeeper:2181`` (``internal_connect_string``).
``start_zookeeper`` (kafkalite.local.zookeeper) and ``ContainerCluster`` both use it.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Mapping

from kafkalite.local import docker_engine
from kafkalite.local.ports import free_ports
from kafkalite.local.zookeeper_process import SERVER_DEFAULTS, ZooKeeperStartError

CLIENT_PORT = 2181
NETWORK_ALIAS = "zookeeper"


def container_environment(settings: Mapping[str, Any] = SERVER_DEFAULTS) -> dict[str, str]:
    """The official image's environment variables for ``settings`` (zoo.cfg names)."""
    extra = " ".join(f"{key}={settings[key]}" for key in ("minSessionTimeout", "maxSessionTimeout")
                     if key in settings)
    return {
        "ZOO_TICK_TIME": str(settings["tickTime"]),
        "ZOO_4LW_COMMANDS_WHITELIST": str(settings["4lw.commands.whitelist"]),
        "ZOO_ADMINSERVER_ENABLED": str(settings["admin.enableServer"]),
        "ZOO_CFG_EXTRA": extra,
    }


class ZooKeeperContainer:
    """ZooKeeper in Docker: ``connect_string`` (from the host), ``internal_connect_string`` (from
    containers on ``network``), ``start()``, ``stop()``, ``kill()``, ``restart()``,
    ``log_tail()``, ``describe()``. ``image`` None: the one ``docker_zookeeper_image`` finds."""

    log_path = None

    def __init__(self, image: str | None = None, network: Any = None,
                 startup_timeout_s: float = 60.0):
        self.image = image
        self.network = network
        self.startup_timeout_s = startup_timeout_s
        self.connect_string = ""
        self.internal_connect_string = f"{NETWORK_ALIAS}:{CLIENT_PORT}"
        self._container: Any = None

    def build(self, host_port: int, interface: str | None) -> Any:
        """The testcontainers object this launcher starts (not started; no engine needed)."""
        from testcontainers.core.container import DockerContainer

        container = DockerContainer(self.image)
        for key, value in container_environment().items():
            container.with_env(key, value)
        docker_engine.publish(container, CLIENT_PORT, host_port, interface)
        if self.network is not None:
            container.with_network(self.network).with_network_aliases(NETWORK_ALIAS)
        return container

    def start(self) -> "ZooKeeperContainer":
        if self.image is None:
            image, reason = docker_engine.docker_zookeeper_image()
            if image is None:
                raise docker_engine.DockerUnavailable(reason)
            self.image = image
        docker_engine.prepare_testcontainers()   # no Ryuk pull on machines without a registry
        host, interface = docker_engine.host_and_interface()
        (port,) = free_ports(1)
        container = self.build(port, interface)
        container.start()
        docker_engine.stop_at_exit(self)
        self._container = container
        self.connect_string = f"{host}:{port}"
        try:
            self._wait_serving()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_serving(self) -> None:
        from kafkalite.zk.client import probe

        deadline = time.monotonic() + self.startup_timeout_s
        while not probe(self.connect_string, timeout_s=2.0):
            if time.monotonic() > deadline:
                raise ZooKeeperStartError(
                    f"ZooKeeper container {self.image} did not serve clients on "
                    f"{self.connect_string} within {self.startup_timeout_s:.0f} s:\n"
                    f"{self.log_tail(40)}")
            time.sleep(0.2)

    def stop(self) -> None:
        container, self._container = self._container, None
        if container is not None:
            with contextlib.suppress(Exception):
                container.stop()

    cleanup = stop

    def kill(self) -> None:
        """SIGKILL the container (it stays, stopped: ``restart()`` brings it back)."""
        self._container.get_wrapped_container().kill()

    def restart(self) -> "ZooKeeperContainer":
        """Start the container again (same host port, same data) and wait until it serves."""
        self._container.get_wrapped_container().restart()
        self._wait_serving()
        return self

    def log_tail(self, n: int = 40) -> str:
        return docker_engine.logs_tail(self._container, n) if self._container is not None else ""

    def describe(self) -> str:
        return f"ZooKeeper container {self.image} at {self.connect_string}"

    def __enter__(self) -> "ZooKeeperContainer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


DockerZooKeeper = ZooKeeperContainer    # the name kafkalite.testing exported before the merge
