"""Whether tests may and can use Docker: the one set of settings and the one engine check.

Environment (read here and nowhere else):

- ``KAFKALITE_TEST_DOCKER``: ``0`` never use Docker; ``1`` require it (no fallback to local
  processes); unset: use it when an engine answers and the images are there locally.
  ``KAFKALITE_ZOOKEEPER_DOCKER`` is the older name of the same switch (read when the first is
  unset).
- ``KAFKALITE_TEST_ZOOKEEPER_IMAGE`` (older name ``KAFKALITE_ZOOKEEPER_IMAGE``): the ZooKeeper
  image.
  Unset: ``zookeeper:3.8`` when present, else any local ``zookeeper:<tag>``.
- ``KAFKALITE_TEST_IMAGE``: the kafkalite image of container clusters (``kafkalite:latest``).

Nothing is ever pulled: images must exist locally. testcontainers and docker are imported only
when an engine is actually asked something, so importing this module costs nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import os
from typing import Any, Iterable, Mapping

ENV_USE_DOCKER = "KAFKALITE_TEST_DOCKER"
ENV_USE_DOCKER_OLD = "KAFKALITE_ZOOKEEPER_DOCKER"
ENV_ZOOKEEPER_IMAGE = "KAFKALITE_TEST_ZOOKEEPER_IMAGE"
ENV_ZOOKEEPER_IMAGE_OLD = "KAFKALITE_ZOOKEEPER_IMAGE"
ENV_IMAGE = "KAFKALITE_TEST_IMAGE"
DEFAULT_IMAGE = "kafkalite:latest"
DEFAULT_ZOOKEEPER_IMAGE = "zookeeper:3.8"
ZOOKEEPER_REPOSITORY = "zookeeper"

_YES = ("1", "true", "yes", "on")
_NO = ("0", "false", "no", "off")


class DockerUnavailable(RuntimeError):
    """No engine answers, or an image is missing locally (the message says which)."""


# ------------------------------------------------------------------------------ settings (pure)

def docker_wanted(environ: Mapping[str, str] | None = None) -> bool | None:
    """True: Docker is required; False: never use it; None: use it when it is there."""
    environ = os.environ if environ is None else environ
    value = environ.get(ENV_USE_DOCKER)
    if value is None:
        value = environ.get(ENV_USE_DOCKER_OLD, "")
    value = value.strip().lower()
    if value in _YES:
        return True
    if value in _NO:
        return False
    return None


def docker_switch_name(environ: Mapping[str, str] | None = None) -> str:
    """The variable that set ``docker_wanted`` (for messages)."""
    environ = os.environ if environ is None else environ
    return ENV_USE_DOCKER if ENV_USE_DOCKER in environ or ENV_USE_DOCKER_OLD not in environ \
        else ENV_USE_DOCKER_OLD


def zookeeper_image_setting(environ: Mapping[str, str] | None = None) -> str | None:
    """The ZooKeeper image a user asked for, or None (then any local one will do)."""
    environ = os.environ if environ is None else environ
    return environ.get(ENV_ZOOKEEPER_IMAGE) or environ.get(ENV_ZOOKEEPER_IMAGE_OLD) or None


def kafkalite_image(environ: Mapping[str, str] | None = None) -> str:
    environ = os.environ if environ is None else environ
    return environ.get(ENV_IMAGE) or DEFAULT_IMAGE


def choose_zookeeper_image(wanted: str | None, local_tags: Iterable[str]) -> str | None:
    """The image to run: ``wanted`` if it is local; without a wish, the default tag if local,
    else the newest-looking local ``zookeeper:<tag>``; None when nothing fits."""
    tags = sorted(set(local_tags))
    if wanted is not None:
        return wanted if wanted in tags else None
    if DEFAULT_ZOOKEEPER_IMAGE in tags:
        return DEFAULT_ZOOKEEPER_IMAGE
    candidates = [t for t in tags if t.split(":", 1)[0] == ZOOKEEPER_REPOSITORY]
    return candidates[-1] if candidates else None


# ------------------------------------------------------------------------------ the engine

def _engine_sockets() -> list[str]:
    home = os.path.expanduser("~")
    return ["/var/run/docker.sock", "/run/docker.sock", f"/run/user/{os.getuid()}/docker.sock",
            os.path.join(home, ".docker", "run", "docker.sock"),
            os.path.join(home, ".docker", "desktop", "docker.sock")]


def docker_client(timeout: int = 5) -> Any:
    """A docker-py client that answered a ping (raises when none does)."""
    import docker

    client = docker.from_env(timeout=timeout)
    try:
        client.ping()
    except BaseException:
        client.close()
        raise
    return client


def _engine_unavailable_reason() -> str | None:
    if docker_wanted() is False:
        return f"Docker disabled by {docker_switch_name()}"
    # without DOCKER_HOST or a socket there is nothing to ask: answer at once, no import
    if not os.environ.get("DOCKER_HOST") and not any(os.path.exists(s) for s in _engine_sockets()):
        return "no Docker engine (no DOCKER_HOST, no docker.sock)"
    try:
        docker_client(timeout=3).close()
    except ImportError:
        return "the docker Python package (testcontainers' dependency) is not installed"
    except Exception as exc:  # noqa: BLE001 - every failure means: no engine
        return f"no Docker engine answers ({type(exc).__name__})"
    return None


def docker_unavailable_reason(*images: str) -> str | None:
    """None when Docker may be used, an engine answers and every image in ``images`` exists
    locally; else why not (a sentence naming the fix)."""
    reason = _engine_unavailable_reason()
    if reason is not None or not images:
        return reason
    client = docker_client()
    try:
        for image in images:
            try:
                client.images.get(image)
            except Exception:  # noqa: BLE001 - ImageNotFound, or an engine error
                return (f"no local Docker image {image!r} (nothing is pulled; build it, e.g. "
                        f"docker/build.sh for {DEFAULT_IMAGE}, or docker/standin/build.sh)")
    finally:
        client.close()
    return None


def docker_zookeeper_image() -> tuple[str | None, str]:
    """(the local ZooKeeper image to run, or None; why not) -- never pulls anything."""
    reason = _engine_unavailable_reason()
    if reason is not None:
        return None, reason
    wanted = zookeeper_image_setting()
    client = docker_client()
    try:
        tags = [tag for img in client.images.list(name=ZOOKEEPER_REPOSITORY if wanted is None
                                                   else wanted.split(":", 1)[0])
                for tag in img.tags]
    except Exception:  # noqa: BLE001
        tags = []
    finally:
        client.close()
    image = choose_zookeeper_image(wanted, tags)
    if image is None:
        return None, (f"no local {wanted or ZOOKEEPER_REPOSITORY!r} Docker image (nothing is "
                      f"pulled: `docker pull {wanted or DEFAULT_ZOOKEEPER_IMAGE}`, or "
                      "docker/standin/build.sh)")
    return image, "Docker"


# ------------------------------------------------------------------------------ testcontainers

def prepare_testcontainers() -> None:
    """Ryuk (testcontainers' reaper) needs the image testcontainers/ryuk; where it is not present
    locally (and TESTCONTAINERS_RYUK_DISABLED is not set), run without it: our launchers remove
    their containers themselves, at stop() and at exit (``stop_at_exit``)."""
    from testcontainers.core.config import testcontainers_config

    if "TESTCONTAINERS_RYUK_DISABLED" in os.environ:
        return
    try:
        client = docker_client()
        try:
            client.images.get(testcontainers_config.ryuk_image)
        finally:
            client.close()
    except Exception:  # noqa: BLE001 - no local ryuk image (or no engine: start will say so)
        testcontainers_config.ryuk_disabled = True


def host_and_interface() -> tuple[str, str | None]:
    """(address tests use to reach published ports, interface to publish on: loopback when the
    engine is local, so container traffic stays on this machine; None = all)."""
    from testcontainers.core.docker_client import DockerClient

    host = DockerClient().host()
    if host in ("localhost", "127.0.0.1", "::1"):
        return "localhost", "127.0.0.1"
    return host, None


def publish(container: Any, port: int, host_port: int, interface: str | None) -> None:
    """Publish the container's ``port`` on ``host_port`` (on ``interface`` only, when given)."""
    if interface:  # docker-py's (interface, port) form; testcontainers' with_bind_ports has none
        container.ports[f"{port}/tcp"] = (interface, host_port)
    else:
        container.with_bind_ports(port, host_port)


def logs_tail(container: Any, n: int = 40) -> str:
    with contextlib.suppress(Exception):
        out, err = container.get_logs()
        text = (out or b"").decode("utf-8", "replace") + (err or b"").decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-n:])
    return ""


_running: list[Any] = []


def stop_at_exit(thing: Any) -> None:
    """Call ``thing.stop()`` when the interpreter exits (Ryuk may not be there to reap)."""
    if not _running:
        atexit.register(_stop_all)
    if thing not in _running:
        _running.append(thing)


def _stop_all() -> None:
    while _running:
        with contextlib.suppress(Exception):
            _running.pop().stop()
