"""docker/docker-compose.cp-style.yml on a real Docker engine: Confluent's cp-all-in-one
(ZooKeeper mode) with only the image name changed, so a broker configured purely by cp-kafka's
KAFKA_* variables (no KAFKA_LISTENERS: the entrypoint derives them from the advertised ones).

1. the file carries the broker environment of Confluent's example, variable for variable
2. ``docker-compose up`` (ZooKeeper + ``broker``) with free host ports; the broker's log shows the
   settings it took, the listeners it derived and the JMX variables it left out; the ZooKeeper
   stand-in writes cp-zookeeper's ZOOKEEPER_CLIENT_PORT and ZOOKEEPER_TICK_TIME to its zoo.cfg
3. host clients get ``localhost:<port>`` (PLAINTEXT_HOST); a client on the compose network gets
   ``broker:29092`` (PLAINTEXT); a topic is produced (acks=all) and consumed back from the host, by
   a consumer group whose offsets topic has the replication factor the file asks for (1)
4. the ``pipeline`` service (profile "pipeline") runs the Spark pipeline against broker:29092 on
   the file's Spark standalone cluster (spark-master, two spark-workers; both ran tasks) and
   its window totals are compared exactly with totals computed here (as in test_docker.py;
   KAFKALITE_DOCKER_PIPELINE=0 leaves it out)

Shares the engine, image and timing fixtures with test_docker.py (docker_e2e_compose); docker/ci.sh
runs both.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from docker_e2e_clients import (
    check_pipeline_totals,
    check_workers_ran_tasks,
    consume_all,
    describe,
)
from docker_e2e_compose import (  # noqa: F401 - docker_engine, images, timings: fixtures
    DOCKER_DIR, WITH_PIPELINE, Compose, compose_command, docker_cli, docker_engine, images, run,
    timings, wait_until)

pytestmark = [pytest.mark.docker, pytest.mark.system, pytest.mark.slow,
              pytest.mark.timeout(1200)]

CP_FILE = DOCKER_DIR / "docker-compose.cp-style.yml"
SERVICES = ("zookeeper", "broker")
TOPIC = "cp-style"

# the broker's environment in Confluent's cp-all-in-one(-community) docker-compose.yml (ZooKeeper
# mode); the host listener's port is a variable here, 9092 by default as there
CONFLUENT_BROKER_ENV = {
    "KAFKA_BROKER_ID": "1",
    "KAFKA_ZOOKEEPER_CONNECT": "'zookeeper:2181'",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
    "KAFKA_ADVERTISED_LISTENERS":
        "PLAINTEXT://broker:29092,PLAINTEXT_HOST://localhost:${KAFKALITE_BROKER_PORT:-9092}",
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
    "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    "KAFKA_JMX_PORT": "9101",
    "KAFKA_JMX_HOSTNAME": "localhost",
}


def _service_block(text: str, service: str) -> str:
    match = re.search(rf"^  {service}:\n((?:    .*\n|\s*\n)+)", text, re.M)
    assert match, f"no service {service!r} in {CP_FILE.name}"
    return match.group(1)


def test_cp_style_compose_file():
    """Confluent's variables, exactly; the image where Confluent has cp-kafka; valid for compose."""
    text = CP_FILE.read_text()
    broker = _service_block(text, "broker")
    env = dict(re.findall(r"^      (KAFKA_\w+): (.*)$", broker, re.M))
    assert env == CONFLUENT_BROKER_ENV
    assert re.search(r"^    image: \$\{KAFKALITE_IMAGE:-kafkalite:latest\}$", broker, re.M)
    assert "KAFKALITE_" not in "".join(re.findall(r"^      (\w+):", broker, re.M))
    zookeeper = _service_block(text, "zookeeper")
    assert re.search(r"^      ZOOKEEPER_CLIENT_PORT: 2181$", zookeeper, re.M)
    assert re.search(r"^      ZOOKEEPER_TICK_TIME: 2000$", zookeeper, re.M)
    command = compose_command(docker_cli())
    if command is None:
        pytest.fail("neither docker-compose nor `docker compose` is installed "
                    "(apt-get install docker-compose)")
    run([*command, "-f", CP_FILE, "config", "-q"], timeout=60)
    services = run([*command, "-f", CP_FILE, "--profile", "pipeline", "config", "--services"],
                   timeout=60).stdout.split()
    assert set(services) == {*SERVICES, "pipeline", "spark-master", "spark-worker-1",
                             "spark-worker-2"}, services


@pytest.fixture
def cp_cluster(docker_engine, images, timings, request):
    from kafkalite.local.ports import free_ports

    command = compose_command(docker_engine)
    if command is None:
        pytest.fail("neither docker-compose nor `docker compose` is installed "
                    "(apt-get install docker-compose)")
    zk_port, broker_port = free_ports(2)
    env = dict(os.environ, KAFKALITE_ZOOKEEPER_PORT=str(zk_port),
               KAFKALITE_BROKER_PORT=str(broker_port), KAFKALITE_IMAGE=images)
    compose = Compose(command, docker_engine, f"klcp{os.getpid()}", env, CP_FILE, SERVICES)
    compose.bootstrap = f"localhost:{broker_port}"
    compose.broker_port = broker_port
    try:
        with timings.step("cp-style: compose up, until both are healthy"):
            compose("up", "-d", "--no-build")
            compose.wait_healthy(SERVICES)
        yield compose
    finally:
        report = getattr(request.node, "_kafkalite_report_call", None)
        if report is None or report.failed:
            timings.line(f"[docker-test] cp-style container logs:\n{compose.logs()}")
        with timings.step("cp-style: compose kill, down -v"):
            compose("kill", check=False, timeout=120)
            compose("down", "-v", "--remove-orphans", check=False, timeout=300)


# run inside the broker container, on the compose network, through PLAINTEXT (broker:29092)
INSIDE_SCRIPT = r"""
import json
from kafkalite.protocol import messages as m
from kafkalite.local.cluster import request
answer = request("broker", 29092, m.MetadataRequest(topics=[]))
print(json.dumps(sorted(f"{b.node_id}@{b.host}:{b.port}" for b in answer.brokers)))
"""


def test_cp_style_cluster(cp_cluster, timings, docker_engine):
    from kafkalite.client import AdminClient, Consumer, NewTopic, Producer

    compose = cp_cluster
    port = compose.broker_port
    with timings.step("cp-style: the ZooKeeper stand-in reads ZOOKEEPER_*"):
        standin = run([docker_engine, "image", "inspect", "--format",
                       '{{ index .Config.Labels "org.kafkalite.standin" }}',
                       "zookeeper:3.8"]).stdout.strip()
        if standin == "zookeeper:3.8":  # the official image ignores them (the file's values
            # are its defaults); the stand-in must write them to zoo.cfg
            config = run([docker_engine, "run", "--rm", "-e", "ZOOKEEPER_CLIENT_PORT=2999",
                          "-e", "ZOOKEEPER_TICK_TIME=1500", "zookeeper:3.8", "cat",
                          "/conf/zoo.cfg"], timeout=120).stdout.splitlines()
            assert "clientPort=2999" in config and "tickTime=1500" in config, config
            used = compose("exec", "-T", "zookeeper", "cat", "/conf/zoo.cfg").stdout.split()
            assert "clientPort=2181" in used and "tickTime=2000" in used, used
        else:
            timings.line("[docker-test] zookeeper:3.8 is the official image: it ignores "
                         "cp-zookeeper's variables, whose values here are its defaults")
    with timings.step("cp-style: the settings the entrypoint took"):
        log = compose("logs", "--no-color", "broker", timeout=60).stdout
        assert (f"listeners=PLAINTEXT://0.0.0.0:29092,PLAINTEXT_HOST://0.0.0.0:{port} "
                "(derived from KAFKA_ADVERTISED_LISTENERS)") in log, log[-3000:]
        assert "broker.id=1 (KAFKA_BROKER_ID)" in log, log[-3000:]
        assert "KAFKA_JMX_HOSTNAME (JMX), KAFKA_JMX_PORT (JMX)" in log, log[-3000:]
    admin = AdminClient(bootstrap_servers=compose.bootstrap)
    try:
        with timings.step("cp-style: both listeners' addresses"):
            brokers = [(b.node_id, b.host, b.port) for b in admin.describe_cluster().brokers]
            assert brokers == [(1, "localhost", port)], "host clients get PLAINTEXT_HOST"
            out = compose("exec", "-T", "broker", "python", "-c", INSIDE_SCRIPT, timeout=120)
            assert json.loads(out.stdout.strip().splitlines()[-1]) == ["1@broker:29092"]

        with timings.step("cp-style: produce 200 (acks=all), consume in a group"):
            admin.create_topics([NewTopic(TOPIC, num_partitions=2, replication_factor=1)])
            wait_until(lambda: all(p.leader == 1 for p in describe(admin, TOPIC).values())
                       and len(describe(admin, TOPIC)) == 2, 60, f"leaders for {TOPIC}")
            with Producer(bootstrap_servers=compose.bootstrap, acks="all") as producer:
                futures = [producer.send(TOPIC, key=f"k{i}".encode(), value=f"v{i}".encode())
                           for i in range(200)]
                producer.flush()
                sent = {(md.partition, md.offset): f"v{i}".encode()
                        for i, md in enumerate(f.get(30) for f in futures)}
            assert consume_all(compose.bootstrap, TOPIC, (0, 1)) == sent
            consumer = Consumer(TOPIC, bootstrap_servers=compose.bootstrap, group_id="cp-group",
                                auto_offset_reset="earliest", enable_auto_commit=False)
            try:
                seen = {}
                def all_seen():
                    for records in consumer.poll(timeout_ms=500).values():
                        seen.update({(r.partition, r.offset): r.value for r in records})
                    return len(seen) >= len(sent)
                wait_until(all_seen, 60, "the group consumer to read every record",
                           interval_s=0)
                assert seen == sent
                consumer.commit()
            finally:
                consumer.close(autocommit=False)
            offsets = describe(admin, "__consumer_offsets")
            assert offsets and all(len(p.replicas) == 1 for p in offsets.values()), (
                "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=1 should make a 1-replica offsets topic")

        if WITH_PIPELINE:
            with timings.step("cp-style: the Spark pipeline service"):
                out = compose("--profile", "pipeline", "run", "--rm", "pipeline", timeout=900)
                check_pipeline_totals(admin, compose.bootstrap, out.stdout, timings.line)
                check_workers_ran_tasks(out.stdout, timings.line)
    finally:
        admin.close()
