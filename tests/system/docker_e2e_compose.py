"""What the Docker tests share (no test functions here): the docker CLI and compose, a compose
project driven from the host, step timings, and the module-scoped fixtures ``timings``,
``docker_engine`` (an engine that answers, started by docker/engine.sh when needed) and ``images``
(the stand-in base images when missing, then kafkalite's images from docker/build.sh)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKER_DIR = REPO / "docker"
WITH_PIPELINE = os.environ.get("KAFKALITE_DOCKER_PIPELINE", "1") != "0"


# ------------------------------------------------------------------------------------ helpers

def docker_cli() -> str:
    """Debian's docker.io client (same version as its dockerd) when present, else PATH's."""
    if os.environ.get("KAFKALITE_DOCKER_CLI"):
        return os.environ["KAFKALITE_DOCKER_CLI"]
    if os.access("/usr/bin/docker", os.X_OK):
        return "/usr/bin/docker"
    return shutil.which("docker") or "docker"


def run(args, *, check=True, timeout=600, env=None, input=None) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout,
                          env=env, input=input, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {proc.returncode}:\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def engine_answers(cli: str) -> bool:
    with contextlib.suppress(Exception):
        return run([cli, "version", "--format", "{{.Server.Version}}"], check=False,
                   timeout=15).returncode == 0
    return False


def compose_command(cli: str) -> list[str] | None:
    """docker-compose (1.29, Debian's), else the `docker compose` plugin, else None."""
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    with contextlib.suppress(Exception):
        if run([cli, "compose", "version"], check=False, timeout=15).returncode == 0:
            return [cli, "compose"]
    return None


def wait_until(condition, timeout_s: float, what: str, interval_s: float = 0.5):
    deadline = time.monotonic() + timeout_s
    last = None
    while True:
        try:
            result = condition()
            if result:
                return result
        except Exception as exc:  # noqa: BLE001 - conditions fail while things start
            last = exc
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}"
                                 + (f" (last error: {last!r})" if last else ""))
        time.sleep(interval_s)


class Timings:
    """Prints each step's time as it ends (past pytest's capture) and a table at the end."""

    def __init__(self, config):
        self.reporter = config.pluginmanager.get_plugin("terminalreporter")
        self.capture = config.pluginmanager.get_plugin("capturemanager")
        self.rows: list[tuple[str, float]] = []

    def line(self, text: str) -> None:
        if self.reporter is None:
            print(text, flush=True)
            return
        disabled = (self.capture.global_and_fixture_disabled() if self.capture is not None
                    else contextlib.nullcontext())
        with disabled:
            self.reporter.write_line(text)

    @contextlib.contextmanager
    def step(self, name: str):
        start = time.monotonic()
        self.line(f"[docker-test] {name} ...")
        try:
            yield
        finally:
            elapsed = time.monotonic() - start
            self.rows.append((name, elapsed))
            self.line(f"[timing] {name:<44} {elapsed:7.1f} s")

    def summary(self) -> None:
        self.line("[docker-test] step timings:")
        for name, elapsed in self.rows:
            self.line(f"[timing]   {name:<42} {elapsed:7.1f} s")
        self.line(f"[timing]   {'total':<42} {sum(e for _, e in self.rows):7.1f} s")


class Compose:
    """docker-compose on one compose file (docker/docker-compose.yml unless told), under a
    project name of its own; ``services`` are the ones that must be healthy."""

    def __init__(self, command: list[str], cli: str, project: str, env: dict[str, str],
                 file: Path = DOCKER_DIR / "docker-compose.yml",
                 services: tuple[str, ...] = ("zookeeper", "broker1", "broker2", "broker3")):
        self.command, self.cli, self.project, self.env = command, cli, project, env
        self.file, self.services = file, services

    def __call__(self, *args, check=True, timeout=600, input=None):
        return run([*self.command, "-f", self.file, "-p", self.project, *args], check=check,
                   timeout=timeout, env=self.env, input=input)

    def container(self, service: str) -> str:
        return self("ps", "-q", service).stdout.strip()

    def health(self) -> dict[str, str]:
        ids = {service: self.container(service) for service in self.services}
        states = {}
        for service, cid in ids.items():
            if not cid:
                states[service] = "missing"
                continue
            out = run([self.cli, "inspect", "--format",
                       "{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}",
                       cid]).stdout.split()
            states[service] = out[-1] if out[0] == "running" else out[0]
        return states

    def wait_healthy(self, services, timeout_s: float = 120.0) -> None:
        def healthy():
            states = self.health()
            bad = {s: st for s, st in states.items() if s in services and st != "healthy"}
            exited = {s: st for s, st in bad.items()
                      if st in ("exited", "dead", "missing", "restarting")}
            if exited:  # restarting: it crashed and its restart policy brings it back
                raise AssertionError(f"containers not running: {exited}\n{self.logs()}")
            return not bad
        wait_until(healthy, timeout_s, f"healthy containers {sorted(services)}", interval_s=1.0)

    def logs(self, tail: int = 60) -> str:
        proc = self("logs", "--no-color", f"--tail={tail}", check=False, timeout=60)
        return proc.stdout + proc.stderr


# ------------------------------------------------------------------------------------ fixtures

@pytest.fixture(scope="module")
def timings(request):
    t = Timings(request.config)
    yield t
    t.summary()


@pytest.fixture(scope="module")
def docker_engine(timings):
    """The docker CLI of an engine that answers; started here (and stopped after) when needed."""
    cli = docker_cli()
    started = False
    with timings.step("engine"):
        if not engine_answers(cli):
            proc = run(["bash", DOCKER_DIR / "engine.sh", "start"], check=False, timeout=180)
            if proc.returncode != 0:
                reason = (f"no Docker engine answers and none could be started here "
                          f"(docker/engine.sh start exited {proc.returncode}: "
                          f"{proc.stderr.strip()[-600:]})")
                if os.environ.get("KAFKALITE_DOCKER_REQUIRED") == "1":
                    pytest.fail(reason)
                pytest.skip(reason)
            started = proc.stdout.strip().endswith("started")
        version = run([cli, "version", "--format", "{{.Server.Version}}"]).stdout.strip()
        how = "started by this test" if started else "already running"
        timings.line(f"[docker-test] engine {version} ({how})")
    yield cli
    if started:
        with timings.step("stop the engine this test started"):
            run(["bash", DOCKER_DIR / "engine.sh", "stop"], check=False, timeout=180)


@pytest.fixture(scope="module")
def images(docker_engine, timings):
    with timings.step("base images (stand-ins when missing)"):
        missing = [image for image in ("python:3.11-slim", "zookeeper:3.8")
                   if run([docker_engine, "image", "inspect", image], check=False).returncode]
        if missing:
            timings.line(f"[docker-test] building stand-ins for {missing} "
                         "(docker/standin/build.sh)")
            run(["bash", DOCKER_DIR / "standin" / "build.sh"], timeout=1200)
    with timings.step("build the kafkalite image(s)"):
        out = run(["bash", DOCKER_DIR / "build.sh", *(["--spark"] if WITH_PIPELINE else [])],
                  timeout=1800)
        timings.line(out.stdout.strip())
    return "kafkalite:latest"


