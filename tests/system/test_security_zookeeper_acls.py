"""zookeeper.set.acl=true: the brokers' znodes carry ZooKeeper ACLs (the cluster's digest
identity may change them, everyone may read them, credentials are readable by that identity
alone), so a kazoo client without credentials can create, change and delete nothing under the
cluster's chroot -- while the brokers, the CLI given the identity, and a leader failover go on.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import OPEN_ACL_UNSAFE

from kafkalite.local.cluster import wait_until

from kafkalite.testing.secure_cluster import secure_cluster  # noqa: E402

confluent_kafka = pytest.importorskip("confluent_kafka", reason="needs confluent-kafka")
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

pytestmark = [pytest.mark.system]

DIGEST = "kafka:zk-secret"
TOPIC = "zk-acl-topic"


def cli(*args, digest: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "KAFKALITE_ZOOKEEPER_AUTH_DIGEST"}
    if digest:
        env["KAFKALITE_ZOOKEEPER_AUTH_DIGEST"] = digest
    return subprocess.run([sys.executable, "-m", "kafkalite", *args], capture_output=True,
                          text=True, timeout=120, env=env)


@pytest.fixture(scope="module")
def secure(zookeeper, tmp_path_factory):
    with secure_cluster(zookeeper, str(tmp_path_factory.mktemp("zk-acl")), name="zkacl",
                        zk_digest=DIGEST) as sc:
        admin = AdminClient(sc.librdkafka("admin"))      # kept: its futures need it alive
        admin.create_topics([NewTopic(TOPIC, 3, 3)])[TOPIC].result(60)
        yield sc


@pytest.fixture
def anonymous(secure):
    hosts, chroot = secure.zk_connect.split("/", 1)
    client = KazooClient(hosts=f"{hosts}/{chroot}")
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


def test_an_unauthenticated_client_changes_nothing(secure, anonymous):
    state = f"/brokers/topics/{TOPIC}/partitions/0/state"
    data, stat = anonymous.get(state)                 # everyone reads
    assert b'"leader"' in data
    for attempt in (lambda: anonymous.create("/intruder", b"x"),
                    lambda: anonymous.create("/brokers/topics/forged", b"{}"),
                    lambda: anonymous.set(state, b"{}"),
                    lambda: anonymous.delete("/controller"),
                    lambda: anonymous.delete(f"/brokers/topics/{TOPIC}", recursive=True),
                    lambda: anonymous.set_acls("/brokers", OPEN_ACL_UNSAFE),
                    lambda: anonymous.get("/config/users/alice")):
        with pytest.raises(NoAuthError):
            attempt()
    assert anonymous.get(state)[1].version == stat.version
    shown = cli("zk", "getacl", "/brokers", "--zookeeper", secure.zk_connect)
    assert shown.returncode == 0, shown.stderr
    assert "world:anyone:r" in shown.stdout and "digest:kafka:" in shown.stdout
    assert "world:anyone:cdrwa" in cli("zk", "getacl", "/consumers", "--zookeeper",
                                       secure.zk_connect).stdout     # Kafka leaves it open


def test_brokers_and_the_cli_with_the_identity_keep_working(secure):
    producer = Producer({**secure.librdkafka("admin"), "acks": "all"})
    outcomes = []
    for i in range(10):
        producer.produce(TOPIC, value=b"v%d" % i, on_delivery=lambda e, m: outcomes.append(e))
    producer.flush(30)
    assert outcomes == [None] * 10
    without = cli("configs", "--zookeeper", secure.zk_connect, "--alter", "--entity-type",
                  "users", "--entity-name", "mallory", "--add-config",
                  "SCRAM-SHA-512=[password=mallory-secret]")
    assert without.returncode != 0
    with_identity = cli("configs", "--zookeeper", secure.zk_connect, "--alter", "--entity-type",
                        "users", "--entity-name", "dave", "--add-config",
                        "SCRAM-SHA-512=[password=dave-secret]", digest=DIGEST)
    assert with_identity.returncode == 0, with_identity.stderr
    granted = cli("acls", "--authorizer-properties", f"zookeeper.connect={secure.zk_connect}",
                  "--add", "--allow-principal", "User:dave", "--operation", "Describe",
                  "--topic", TOPIC, digest=DIGEST)
    assert granted.returncode == 0, granted.stderr
    wait_until(lambda: TOPIC in secure.kcat("dave", "-L", password="dave-secret")
               .stdout.decode(), 30, "dave logging in and seeing the topic")
    refused = cli("acls", "--authorizer-properties", f"zookeeper.connect={secure.zk_connect}",
                  "--add", "--allow-principal", "User:dave", "--operation", "Write",
                  "--topic", TOPIC)
    assert refused.returncode != 0


def test_a_killed_leader_still_moves_leadership(secure):
    cluster = secure.cluster
    leader = cluster.wait_for_leader(TOPIC, 0)
    assert leader > 0
    cluster.kill(leader)
    try:
        wait_until(lambda: cluster.leader_of(TOPIC, 0) not in (-1, leader), 60,
                   f"a new leader for {TOPIC}-0 after killing broker {leader}")
        outcomes = []
        producer = Producer({**secure.librdkafka("admin"), "acks": "all"})
        producer.produce(TOPIC, value=b"after failover", partition=0,
                         on_delivery=lambda e, m: outcomes.append(e))
        producer.flush(60)
        assert outcomes == [None]
    finally:
        cluster.restart(leader)
