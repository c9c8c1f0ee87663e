"""The docker-compose cluster on a real Docker engine: docker/Dockerfile and docker/docker-compose.yml
as users run them (ZooKeeper + 3 brokers, two listeners each), driven from this machine.

1. the engine: the one that answers, else ``docker/engine.sh start`` (root + Debian's docker.io);
   skipped, with the reason, only when none answers and none can be started (set
   KAFKALITE_DOCKER_REQUIRED=1 to fail instead, as docker/ci.sh does)
2. base images: python:3.11-slim and zookeeper:3.8, local stand-ins built when missing
3. kafkalite's image (docker/build.sh), then ``docker-compose up`` with free host ports
4. a replicated topic created through the EXTERNAL listener, records produced and consumed from the
   host; a client on the compose network gets the INTERNAL addresses and works too
5. the leader of a partition is killed (``docker kill``) under acks=all load: leadership moves and
   every acknowledged record is still there; the broker restarts and rejoins the ISR
6. the ``pipeline`` service (profile "pipeline", the Spark image) generates payments and runs the
   Spark pipeline against the cluster; the window totals it wrote to the topic are read back from
   the host and compared, exactly, with totals computed here from the payments it read
   (tests/system/pipeline_reference.py)
   (KAFKALITE_DOCKER_PIPELINE=0 leaves the Spark image and this step out)
7. ``docker-compose down -v``, and the engine is stopped if this test started it

Every step's time is printed. Run: ``pytest -m docker tests/system/test_docker.py`` (docker/ci.sh does, in CI).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from docker_e2e_clients import consume_all, describe, produce_while
from pipeline_reference import differences, expected_totals, written_totals

pytestmark = [pytest.mark.docker, pytest.mark.system, pytest.mark.slow,
              pytest.mark.timeout(1500)]

REPO = Path(__file__).resolve().parents[2]
DOCKER_DIR = REPO / "docker"
COMPOSE_FILE = DOCKER_DIR / "docker-compose.yml"
SERVICES = ("zookeeper", "broker1", "broker2", "broker3")
BROKER_IDS = {"broker1": 1, "broker2": 2, "broker3": 3}
TOPIC = "docker-e2e"
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
    """docker-compose on docker/docker-compose.yml, under a project name of its own."""

    def __init__(self, command: list[str], cli: str, project: str, env: dict[str, str]):
        self.command, self.cli, self.project, self.env = command, cli, project, env

    def __call__(self, *args, check=True, timeout=600, input=None):
        return run([*self.command, "-f", COMPOSE_FILE, "-p", self.project, *args], check=check,
                   timeout=timeout, env=self.env, input=input)

    def container(self, service: str) -> str:
        return self("ps", "-q", service).stdout.strip()

    def health(self) -> dict[str, str]:
        ids = {service: self.container(service) for service in SERVICES}
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
        timings.line(f"[docker-test] engine {version} ({'started by this test' if started else 'already running'})")
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
            timings.line(f"[docker-test] building stand-ins for {missing} (docker/standin/build.sh)")
            run(["bash", DOCKER_DIR / "standin" / "build.sh"], timeout=1200)
    with timings.step("build the kafkalite image(s)"):
        out = run(["bash", DOCKER_DIR / "build.sh", *(["--spark"] if WITH_PIPELINE else [])],
                  timeout=1800)
        timings.line(out.stdout.strip())
    return "kafkalite:latest"


@pytest.fixture
def compose_cluster(docker_engine, images, timings, request):
    from kafkalite.testing.ports import free_ports

    command = compose_command(docker_engine)
    if command is None:
        pytest.fail("neither docker-compose nor `docker compose` is installed "
                    "(apt-get install docker-compose)")
    zk_port, console_port, *broker_ports = free_ports(5)
    env = dict(os.environ, KAFKALITE_ZOOKEEPER_PORT=str(zk_port),
               KAFKALITE_CONSOLE_PORT=str(console_port),
               KAFKALITE_IMAGE=images,
               **{f"KAFKALITE_BROKER{i}_PORT": str(p) for i, p in enumerate(broker_ports, 1)})
    env.pop("KAFKALITE_EXTERNAL_HOST", None)  # the compose file's default: localhost
    compose = Compose(command, docker_engine, f"kltest{os.getpid()}", env)
    compose.bootstrap = ",".join(f"localhost:{p}" for p in broker_ports)
    compose.broker_ports = dict(zip((1, 2, 3), broker_ports))
    compose.zookeeper = f"127.0.0.1:{zk_port}/kafkalite"
    try:
        with timings.step("compose up, until all 4 are healthy"):
            compose("up", "-d", "--no-build")
            compose.wait_healthy(SERVICES)
        yield compose
    finally:
        report = getattr(request.node, "_kafkalite_report_call", None)
        if report is None or report.failed:
            timings.line(f"[docker-test] container logs:\n{compose.logs()}")
        with timings.step("compose kill, down -v"):
            # the data goes with the volumes: no need for the brokers' controlled shutdown
            compose("kill", check=False, timeout=120)
            compose("down", "-v", "--remove-orphans", check=False, timeout=300)


# ------------------------------------------------------------------------------------ tests

def test_compose_file_is_valid():
    """`docker-compose config -q` accepts the file (needs the compose tool, not an engine)."""
    command = compose_command(docker_cli())
    if command is None:
        pytest.skip("neither docker-compose nor `docker compose` is installed")
    run([*command, "-f", COMPOSE_FILE, "config", "-q"], timeout=60)
    # what the tests here use: the cluster, the web console, the pipeline service (under its
    # profile); the file has more (e.g. the "secure" profile's cluster)
    services = run([*command, "-f", COMPOSE_FILE, "--profile", "pipeline", "config",
                    "--services"], timeout=60).stdout.split()
    assert {*SERVICES, "console", "pipeline"} <= set(services), services


# run inside a broker container, on the compose network: Metadata must name the INTERNAL
# addresses, and a client there produces and reads back through them
INSIDE_SCRIPT = r"""
import json, sys
from kafkalite.client import Consumer, Producer, TopicPartition
from kafkalite.protocol import messages as m
from kafkalite.testing.cluster import request
bootstrap = "broker1:9092,broker2:9092,broker3:9092"
brokers = sorted(f"{b.host}:{b.port}" for b in request("broker1", 9092, m.MetadataRequest(topics=[])).brokers)
with Producer(bootstrap_servers=bootstrap, acks="all") as producer:
    acked = [producer.send(sys.argv[1], value=f"inside-{i}".encode(), partition=0).get(30)
             for i in range(20)]
consumer = Consumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
tp = TopicPartition(sys.argv[1], 0)
consumer.assign([tp])
consumer.seek(tp, acked[0].offset)
values = []
while len(values) < 20:
    for records in consumer.poll(timeout_ms=1000).values():
        values += [r.value.decode() for r in records]
consumer.close()
print(json.dumps({"brokers": brokers, "values": values[:20]}))
"""


def test_compose_cluster(compose_cluster, timings, docker_engine):
    from kafkalite.client import AdminClient, NewTopic, Producer

    compose = compose_cluster
    bootstrap = compose.bootstrap
    admin = AdminClient(bootstrap_servers=bootstrap)
    try:
        with timings.step("create a replicated topic via EXTERNAL"):
            brokers = sorted((b.node_id, b.host, b.port) for b in admin.describe_cluster().brokers)
            assert brokers == [(i, "localhost", compose.broker_ports[i]) for i in (1, 2, 3)], (
                "host clients must get the EXTERNAL addresses")
            admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=3)])
            def fully_replicated():
                ps = describe(admin, TOPIC)
                return len(ps) == 3 and all(p.leader > 0 and len(p.isr) == 3
                                            for p in ps.values()) and ps
            partitions = wait_until(fully_replicated, 60, f"topic {TOPIC} with 3 partitions, "
                                    "each with a leader and 3 in sync")

        with timings.step("produce 300 (acks=all), consume, from host"):
            with Producer(bootstrap_servers=bootstrap, acks="all") as producer:
                futures = [producer.send(TOPIC, key=f"k{i}".encode(), value=f"v{i}".encode())
                           for i in range(300)]
                producer.flush()
                sent = {(md.partition, md.offset): f"v{i}".encode()
                        for i, md in enumerate(f.get(30) for f in futures)}
            assert len(sent) == 300
            consumed = consume_all(bootstrap, TOPIC, partitions)
            assert consumed == sent

        with timings.step("a client on the compose network (INTERNAL)"):
            out = compose("exec", "-T", "broker2", "python", "-c", INSIDE_SCRIPT, TOPIC,
                          timeout=120).stdout
            inside = json.loads(out.strip().splitlines()[-1])
            assert inside["brokers"] == ["broker1:9092", "broker2:9092", "broker3:9092"]
            assert inside["values"] == [f"inside-{i}" for i in range(20)]

        with timings.step("kill a leader under load, leadership moves"):
            before = describe(admin, TOPIC)
            victim = before[0].leader
            victim_service = f"broker{victim}"
            led = {p for p, d in before.items() if d.leader == victim}
            acked, failed = produce_while(
                bootstrap, TOPIC, lambda: run([docker_engine, "kill", compose.container(victim_service)]))
            def failed_over():
                ps = describe(admin, TOPIC)
                return all(d.leader not in (-1, victim) and victim not in d.isr
                           for d in ps.values()) and ps
            after = wait_until(failed_over, 60,
                               f"partitions led by broker {victim} to get another leader")
            for p in led:
                assert after[p].leader_epoch > before[p].leader_epoch
            timings.line(f"[docker-test] killed broker {victim} (led partitions {sorted(led)}); "
                         f"leaders now { {p: d.leader for p, d in after.items()} }; "
                         f"{len(acked)} records acknowledged under load, {failed} not")
            assert len(acked) > 0

        with timings.step("every acknowledged record is there"):
            consumed = consume_all(bootstrap, TOPIC, after, acknowledged={**sent, **acked})
            lost = {k: v for k, v in {**sent, **acked}.items() if consumed.get(k) != v}
            assert not lost, f"{len(lost)} acknowledged records lost, e.g. {list(lost.items())[:5]}"

        with timings.step("restart it, it rejoins every ISR"):
            run([docker_engine, "start", compose.container(victim_service)])
            compose.wait_healthy([victim_service])
            wait_until(lambda: all(victim in d.isr for d in describe(admin, TOPIC).values()),
                       90, f"broker {victim} back in every ISR")

        if WITH_PIPELINE:
            with timings.step("the Spark pipeline service"):
                out = compose("--profile", "pipeline", "run", "--rm", "pipeline", timeout=900)
                timings.line("[docker-test] pipeline: " + " | ".join(
                    line.strip() for line in out.stdout.splitlines()
                    if "] batch " in line or line.startswith("processed"))[:600])
                _check_pipeline_totals(admin, bootstrap, out.stdout, timings)
    finally:
        admin.close()


def _check_pipeline_totals(admin, bootstrap: str, output: str, timings) -> None:
    """The totals the pipeline wrote to payer-totals equal the ones computed here from the
    payments it read (pipeline_reference: plain Python, neither Spark nor the pipeline's code)."""
    payments = [json.loads(v) for v in
                consume_all(bootstrap, "payments", describe(admin, "payments")).values()]
    assert len({p["id"] for p in payments}) == 1000, "the pipeline should generate 1000 payments"
    # the reference assumes one micro-batch read all of them (so none was late)
    first = re.search(r"\[payer_totals_to_kafkalite\] batch 0: (\d+) input rows", output)
    assert first and int(first.group(1)) == len(payments), (
        f"the kafkalite sink's first micro-batch did not read all {len(payments)} payments: "
        f"{first.group(0) if first else 'no batch 0 line'}")
    expected = expected_totals(payments)
    assert len(expected) >= 6, f"too few closed windows to compare: {expected}"
    records = consume_all(bootstrap, "payer-totals", describe(admin, "payer-totals"))
    written, problems = written_totals(records.values())
    assert not problems, problems[:5]
    assert written == expected, (f"{len(written)} window totals written, {len(expected)} "
                                 f"expected; differences: {differences(expected, written)}")
    timings.line(f"[docker-test] pipeline: {len(written)} window totals (from {len(records)} "
                 f"records) equal the reference computed from the {len(payments)} payments; "
                 f"{sum(c for c, _n in written.values()) / 100:,.2f} USD in "
                 f"{sum(n for _c, n in written.values())} payments")


def test_testcontainers_cluster(docker_engine, images, timings):
    """kafkalite.testing.containers (the kafkalite_docker_cluster fixture's machinery) in Docker:
    three brokers reachable from the host, and leadership moves when one is killed."""
    from kafkalite.client import AdminClient, NewTopic, Producer
    from kafkalite.testing.containers import start_cluster

    with timings.step("testcontainers: start 3 brokers + ZooKeeper"):
        cluster = start_cluster(3, docker=True)
    try:
        assert cluster.kind == "docker"
        admin = AdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            with timings.step("testcontainers: topic, produce, consume, kill"):
                admin.create_topics([NewTopic("tc", num_partitions=2, replication_factor=3)])
                wait_until(lambda: all(p.leader > 0 and len(p.isr) == 3
                                       for p in describe(admin, "tc").values()),
                           60, "topic tc with leaders and full ISRs")
                with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all") as p:
                    sent = {(md.partition, md.offset): f"tc-{i}".encode() for i, md in enumerate(
                        p.send("tc", value=f"tc-{i}".encode()).get(30) for i in range(50))}
                victim = describe(admin, "tc")[0].leader
                cluster.kill(victim)
                wait_until(lambda: all(p.leader not in (-1, victim)
                                       for p in describe(admin, "tc").values()),
                           60, f"a new leader after killing broker {victim}")
                assert consume_all(cluster.bootstrap_servers, "tc", (0, 1),
                                    acknowledged=sent) == sent
        finally:
            admin.close()
    finally:
        with timings.step("testcontainers: stop"):
            cluster.stop()
    leftovers = run([docker_engine, "ps", "-aq", "--filter", f"ancestor={images}"]).stdout.split()
    assert not leftovers, f"containers left behind: {leftovers}"
