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
   Spark pipeline against the cluster, submitted to the ``spark-master`` service (two
   ``spark-worker`` services; it prints the tasks each executor completed: both workers ran some); the window totals it wrote to the topic are read back from
   the host and compared, exactly, with totals computed here from the payments it read
   (tests/system/pipeline_reference.py)
   (KAFKALITE_DOCKER_PIPELINE=0 leaves the Spark image and this step out)
7. ``docker-compose down -v``, and the engine is stopped if this test started it

Every step's time is printed. Run: ``pytest -m docker tests/system/test_docker.py`` (docker/ci.sh does, in CI).
"""

from __future__ import annotations

import json
import os

import pytest
from docker_e2e_clients import (
    check_pipeline_totals,
    check_workers_ran_tasks,
    consume_all,
    describe,
    produce_while,
)
from docker_e2e_compose import (  # noqa: F401 - docker_engine, images, timings: fixtures
    DOCKER_DIR, WITH_PIPELINE, Compose, compose_command, docker_cli, docker_engine, images, run,
    timings, wait_until)

pytestmark = [pytest.mark.docker, pytest.mark.system, pytest.mark.slow,
              pytest.mark.timeout(1500)]

COMPOSE_FILE = DOCKER_DIR / "docker-compose.yml"
SERVICES = ("zookeeper", "broker1", "broker2", "broker3")
BROKER_IDS = {"broker1": 1, "broker2": 2, "broker3": 3}
TOPIC = "docker-e2e"


@pytest.fixture
def compose_cluster(docker_engine, images, timings, request):
    from kafkalite.local.ports import free_ports

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
    compose = Compose(command, docker_engine, f"kltest{os.getpid()}", env,
                      COMPOSE_FILE, SERVICES)
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
    assert {*SERVICES, "console", "pipeline", "spark-master", "spark-worker-1",
            "spark-worker-2"} <= set(services), services


# run inside a broker container, on the compose network: Metadata must name the INTERNAL
# addresses, and a client there produces and reads back through them
INSIDE_SCRIPT = r"""
import json, sys
from kafkalite.client import Consumer, Producer, TopicPartition
from kafkalite.protocol import messages as m
from kafkalite.local.cluster import request
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
                check_pipeline_totals(admin, bootstrap, out.stdout, timings.line)
                check_workers_ran_tasks(out.stdout, timings.line)
    finally:
        admin.close()


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
