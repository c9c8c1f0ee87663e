"""SASL_SSL with SCRAM-SHA-512 and ACLs on a 3-broker cluster, with kcat, confluent-kafka and
kafkalite's own clients and CLI (real processes, certificates made for the test).

alice has Write and Read on her topic and Read on her group; bob has nothing. A wrong password,
a plaintext client on the TLS port, a CA the brokers' certificates do not come from, and garbage
during the TLS handshake or the SASL exchange are refused without disturbing anyone else. An ACL
removed while alice produces stops her on every broker.
"""

from __future__ import annotations

import os
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka", reason="needs confluent-kafka")
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kafkalite.protocol.kafka import codec  # noqa: E402
from kafkalite.local.cluster import wait_until  # noqa: E402

from kafkalite.testing.secure_cluster import secure_cluster  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.skipif(
    subprocess.run(["which", "kcat"], capture_output=True).returncode != 0,
    reason="kcat is not installed (scripts/setup.sh installs it)")]

TOPIC = "alice-orders"
GROUP = "alice-group"


def kafkalite_cli(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkalite", *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def secure(zookeeper, tmp_path_factory):
    with secure_cluster(zookeeper, str(tmp_path_factory.mktemp("sasl-ssl"))) as sc:
        admin = AdminClient(sc.librdkafka("admin"))
        admin.create_topics([NewTopic(TOPIC, 3, 3)])[TOPIC].result(60)
        config = sc.command_config("admin")
        for args in (["--operation", "Write", "--operation", "Read", "--topic", TOPIC],
                     ["--operation", "Read", "--group", GROUP]):
            done = kafkalite_cli("acls", "--bootstrap-server", sc.bootstrap, "--command-config",
                                 config, "--add", "--allow-principal", "User:alice", *args)
            assert done.returncode == 0, done.stderr
        yield sc


def produce(settings: dict, topic: str, values, partition: int | None = None,
            timeout_s: float = 30) -> list:
    """Produce and flush; the delivery errors (None for each success)."""
    outcomes = []
    producer = Producer({**settings, "acks": "all", "message.timeout.ms": int(timeout_s * 1000)})
    for value in values:
        kwargs = {} if partition is None else {"partition": partition}
        producer.produce(topic, value=value, on_delivery=lambda err, msg: outcomes.append(err),
                         **kwargs)
    producer.flush(timeout_s + 5)
    return outcomes


def test_alice_produces_and_consumes_with_her_acls(secure):
    values = [f"order-{i}".encode() for i in range(20)]
    assert produce(secure.librdkafka("alice"), TOPIC, values) == [None] * 20
    consumer = Consumer(secure.librdkafka("alice", **{"group.id": GROUP,
                                                      "auto.offset.reset": "earliest"}))
    consumer.subscribe([TOPIC])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < 20 and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got.append(msg.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert sorted(got) == sorted(values)
    listing = secure.kcat("alice", "-L", "-t", TOPIC)
    assert listing.returncode == 0 and f'topic "{TOPIC}" with 3 partitions' in \
        listing.stdout.decode()


def test_kafkalite_clients_over_sasl_ssl(secure):
    from kafkalite import Consumer as LiteConsumer
    from kafkalite import Producer as LiteProducer
    from kafkalite import TopicPartition

    with LiteProducer(bootstrap_servers=secure.bootstrap, acks="all",
                      **secure.kafkalite_security("alice")) as producer:
        meta = producer.send(TOPIC, value=b"from-kafkalite", partition=0).get(timeout=30)
    consumer = LiteConsumer(bootstrap_servers=secure.bootstrap, auto_offset_reset="earliest",
                            **secure.kafkalite_security("alice"))
    try:
        consumer.assign([TopicPartition(TOPIC, 0)])
        consumer.seek(TopicPartition(TOPIC, 0), meta.offset)
        records = wait_until(lambda: consumer.poll(timeout_ms=1000).get(
            TopicPartition(TOPIC, 0)), 30, "kafkalite consumer over SASL_SSL")
    finally:
        consumer.close()
    assert records[0].value == b"from-kafkalite"


def test_bob_gets_topic_authorization_failed_and_cannot_see_the_topic(secure):
    (error,) = produce(secure.librdkafka("bob"), TOPIC, [b"not-bob"], timeout_s=15)
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    topics = AdminClient(secure.librdkafka("bob")).list_topics(timeout=30).topics
    assert TOPIC not in topics
    assert TOPIC in AdminClient(secure.librdkafka("alice")).list_topics(timeout=30).topics
    listing = secure.kcat("bob", "-L")
    assert listing.returncode == 0 and TOPIC not in listing.stdout.decode()


def test_a_wrong_password_fails_authentication_and_others_go_on(secure):
    errors_seen = []
    producer = Producer({**secure.librdkafka("alice", password="wrong"),
                         "error_cb": errors_seen.append})
    producer.produce(TOPIC, value=b"never")

    def refused() -> bool:
        producer.poll(0.2)
        return any(e.code() == KafkaError._AUTHENTICATION for e in errors_seen)
    wait_until(refused, 30, "an authentication error")
    producer.purge()
    failed = secure.kcat("alice", "-L", password="wrong", timeout_s=60)
    assert failed.returncode != 0 and b"Authentication failed" in failed.stderr
    assert produce(secure.librdkafka("alice"), TOPIC, [b"still-here"]) == [None]


def test_plaintext_client_and_untrusted_ca_are_refused_cleanly(secure, tmp_path):
    from kafkalite.security.certificates import make_ca

    plain = subprocess.run(["kcat", "-b", secure.secure_address(1), "-L", "-m", "5"],
                           capture_output=True, timeout=60)
    assert plain.returncode != 0
    other_ca = make_ca(tmp_path, common_name="someone else's CA")
    settings = secure.librdkafka("alice", **{"ssl.ca.location": other_ca.cert_path})
    untrusted = subprocess.run(
        ["kcat", "-b", secure.secure_address(1), "-L", "-m", "5",
         *sum((["-X", f"{k}={v}"] for k, v in settings.items() if k != "bootstrap.servers"),
              [])], capture_output=True, timeout=60)
    assert untrusted.returncode != 0
    assert b"certificate verify failed" in untrusted.stderr or b"SSL" in untrusted.stderr
    context = ssl.create_default_context(cafile=other_ca.cert_path)
    with pytest.raises(ssl.SSLCertVerificationError):
        with socket.create_connection(("127.0.0.1", secure.secure_ports[1]), timeout=10) as s:
            context.wrap_socket(s, server_hostname="127.0.0.1")
    assert produce(secure.librdkafka("alice"), TOPIC, [b"after-refusals"]) == [None]


def _garbage_tls_handshake(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"\x16\x03\x01\x02\x00" + os.urandom(512))     # a broken ClientHello
        s.settimeout(10)
        try:
            while s.recv(4096):
                pass
        except OSError:
            pass


def _garbage_sasl(port: int, ca_path: str) -> None:
    context = ssl.create_default_context(cafile=ca_path)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            hello = codec.encode_request(17, 1, 1, "fuzz", {"mechanism": "SCRAM-SHA-512"})
            token = codec.encode_request(36, 2, 2, "fuzz", {"auth_bytes": os.urandom(300)})
            junk = os.urandom(64)
            s.sendall(b"".join(struct.pack(">i", len(p)) + p for p in (hello, token, junk)))
            s.settimeout(10)
            try:
                while s.recv(4096):
                    pass
            except OSError:
                pass


def test_garbage_during_tls_handshake_and_sasl_crashes_nothing(secure):
    for broker_id, port in secure.secure_ports.items():
        for _ in range(3):
            _garbage_tls_handshake(port)
            _garbage_sasl(port, secure.ca_path)
    assert all(b.running for b in secure.cluster.brokers.values())
    assert produce(secure.librdkafka("alice"), TOPIC, [b"after-garbage"]) == [None]


def test_acls_list_prints_what_kafka_acls_prints(secure):
    listed = kafkalite_cli("acls", "--bootstrap-server", secure.bootstrap, "--command-config",
                           secure.command_config("admin"), "--list", "--topic", TOPIC)
    assert listed.returncode == 0, listed.stderr
    assert (f"Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name={TOPIC}, "
            f"patternType=LITERAL)`: \n \t(principal=User:alice, host=*, operation=READ, "
            f"permissionType=ALLOW)") in listed.stdout
    refused = kafkalite_cli("acls", "--bootstrap-server", secure.bootstrap, "--command-config",
                            secure.command_config("bob"), "--list")
    assert refused.returncode != 0 and "CLUSTER_AUTHORIZATION_FAILED" in refused.stderr


def test_a_user_added_in_zookeeper_logs_in_and_gets_acls_written_there(secure):
    added = kafkalite_cli("configs", "--zookeeper", secure.zk_connect, "--alter",
                          "--entity-type", "users", "--entity-name", "carol", "--add-config",
                          "SCRAM-SHA-512=[iterations=8192,password=carol-secret]")
    assert added.returncode == 0, added.stderr
    assert "Completed updating config for entity: user-principal 'carol'." in added.stdout
    described = kafkalite_cli("configs", "--zookeeper", secure.zk_connect, "--describe",
                              "--entity-type", "users", "--entity-name", "carol")
    assert "iterations=8192" in described.stdout and "carol-secret" not in described.stdout
    wait_until(lambda: secure.kcat("carol", "-L", password="carol-secret").returncode == 0, 30,
               "every broker accepting carol's new credential")
    assert TOPIC not in secure.kcat("carol", "-L", password="carol-secret").stdout.decode()
    granted = kafkalite_cli("acls", "--authorizer-properties",
                            f"zookeeper.connect={secure.zk_connect}", "--add",
                            "--allow-principal", "User:carol", "--operation", "Describe",
                            "--topic", "alice-", "--resource-pattern-type", "PREFIXED")
    assert granted.returncode == 0, granted.stderr
    assert "patternType=PREFIXED" in granted.stdout
    wait_until(lambda: TOPIC in secure.kcat("carol", "-L", password="carol-secret")
               .stdout.decode(), 30, "carol seeing the topic through a prefixed ACL")


def test_acl_removal_stops_alice_on_every_broker(secure):
    leaders = {p.partition: p.leader for t in secure.cluster.metadata([TOPIC]).topics
               for p in t.partitions}
    assert sorted(set(leaders.values())) == sorted(secure.cluster.brokers)  # one per broker
    outcomes: list = []             # alice's live producer: each delivery's error (or None)
    stop = threading.Event()
    producer = Producer({**secure.librdkafka("alice"), "acks": "all", "linger.ms": 5,
                         "message.timeout.ms": 5000, "retries": 0})

    def produce_forever():
        while not stop.is_set():
            try:
                for partition in leaders:
                    producer.produce(TOPIC, value=b"live", partition=partition,
                                     on_delivery=lambda err, msg: outcomes.append(err))
            except KafkaException as exc:   # librdkafka fails produce() once it knows
                outcomes.append(exc.args[0])
            producer.poll(0.05)
    worker = threading.Thread(target=produce_forever, daemon=True)
    worker.start()

    def refused(errors_) -> bool:
        return any(e is not None and e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
                   for e in errors_)
    try:
        wait_until(lambda: len(outcomes) >= 30, 30, "alice's first records")
        assert not refused(outcomes) and outcomes[0] is None
        removed = kafkalite_cli("acls", "--bootstrap-server", secure.bootstrap,
                                "--command-config", secure.command_config("admin"), "--remove",
                                "--force", "--allow-principal", "User:alice", "--operation",
                                "Write", "--topic", TOPIC)
        assert removed.returncode == 0, removed.stderr
        wait_until(lambda: refused(outcomes), 15, "alice's live producer being refused")
    finally:
        stop.set()
        worker.join(30)
        producer.purge()
    # and each broker refuses her, as leader of its partition
    for partition, leader in leaders.items():
        wait_until(lambda: refused(produce(secure.librdkafka("alice"), TOPIC, [b"again"],
                                           partition=partition, timeout_s=5)),
                   15, f"broker {leader} refusing alice's Produce to partition {partition}")
    assert produce(secure.librdkafka("admin"), TOPIC, [b"admin still writes"]) == [None]
    listed = kafkalite_cli("acls", "--bootstrap-server", secure.bootstrap, "--command-config",
                           secure.command_config("admin"), "--list", "--topic", TOPIC)
    assert "operation=READ" in listed.stdout and "operation=WRITE" not in listed.stdout
