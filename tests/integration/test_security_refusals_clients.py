"""Security refusals seen by every client (issue 24): one secured 2-broker kafkalite cluster,
AclAuthorizer with ``allow.everyone.if.no.acl.found=false``, ``admin`` the only super user,
brokers replicating over SASL_SSL as ``admin`` (so an unauthenticated connection is nobody).

Each broker listens on PLAINTEXT (anonymous), SASL_SSL (SCRAM-SHA-512, SCRAM-SHA-256, PLAIN) and
SSL with ``ssl.client.auth=required`` (mutual TLS, the principal from the client's certificate).

- confluent-kafka, kafka-python, aiokafka and kcat, logged in as bob, each meet the Describe
  refusal (Metadata/DescribeTopics: TOPIC_AUTHORIZATION_FAILED), the Read refusal (Fetch:
  TOPIC_AUTHORIZATION_FAILED) and the Group refusal (FindCoordinator:
  GROUP_AUTHORIZATION_FAILED), each in the client's own terms, and succeed once admin adds the
  ACL that was missing (Describe, then Read on the topic, then Read on the group);
- mutual TLS: a certificate signed by the CA is served as ``User:CN=reader,O=kafkalite`` (an ACL
  on that principal lets it read, the same ACL does nothing for another certificate); no
  certificate, or one from another CA, is refused during the handshake;
- SCRAM-SHA-256 and PLAIN end to end with confluent-kafka and aiokafka, and a wrong password
  refused with each client's authentication error (Kafka's own sentences);
- a Fetch with a follower's replica id sent anonymously on the PLAINTEXT listener is answered
  TOPIC_AUTHORIZATION_FAILED for every partition (Kafka 2.8's KafkaApis.handleFetchRequest: a
  follower needs ClusterAction on the cluster) even though User:ANONYMOUS may Read the topic (its
  consumer Fetch is served), encoded and decoded by kafka-python's protocol classes, while the
  real followers keep every ISR full and acks=all writes succeed.

ACLs reach each broker's authorizer through ZooKeeper asynchronously: each success is retried
until it happens (a refusal answers at once), each refusal is asserted before its ACL exists.
With ``KAFKALITE_SECURITY_VS_KAFKA=1`` the refusals, the mechanisms and the follower fetch also
run on 2 Apache Kafka 2.8.2 brokers of the same settings (``secure_apache_kafka``), held to the
same assertions; the mTLS tests are kafkalite's only (that launcher has no SSL listener). Off by
default: two JVMs cost more than this module's share of the suite.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import ssl
import struct
import subprocess

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType)

from kafkalite.local.cluster import LocalCluster, wait_until
from kafkalite.local.ports import free_ports
from kafkalite.security.certificates import make_ca, make_certificate
from kafkalite.testing.secure_cluster import (PASSWORDS, SCRAM_JAAS, SecureCluster,
                                              _secure_settings, secure_apache_kafka)

from refusal_clients import CLIENTS, DESCRIBE, READ, Login, confluent_read

pytestmark = pytest.mark.integration

TIMEOUT_S = 60
VALUES = [b"v0", b"v1", b"v2"]
MECHANISMS = ("SCRAM-SHA-256", "PLAIN")
REPLICATED = "replicated"
MTLS_TOPIC = "mtls"
READER = "User:CN=reader,O=kafkalite"      # make_certificate's subject, as Java prints a DN
# what Kafka 2.8's SASL servers answer a wrong password with (ScramSaslServer, PlainSaslServer)
WRONG_PASSWORD = {
    "SCRAM-SHA-256": "Authentication failed during authentication due to invalid credentials "
                     "with SASL mechanism SCRAM-SHA-256",
    "PLAIN": "Authentication failed: Invalid username or password"}
# Apache Kafka 2.8.2 beside kafkalite, opt-in (see the docstring)
SYSTEMS = ["kafkalite"] + (["kafka"] if os.environ.get("KAFKALITE_SECURITY_VS_KAFKA") == "1"
                           else [])
OVERRIDES = {
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL",
    "listener.name.ssl.ssl.client.auth": "required",
    "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
    "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
    "allow.everyone.if.no.acl.found": "false",
    "offsets.topic.replication.factor": 2, "offsets.topic.num.partitions": 2,
    "group.initial.rebalance.delay.ms": 0,
}


def topic_of(client: str) -> str:
    return f"refused-{client}"


def group_of(client: str) -> str:
    return f"refused-{client}-group"


def mechanism_topic(mechanism: str) -> str:
    return f"mech-{mechanism.lower()}"


def _require_kcat() -> None:
    if shutil.which("kcat") is None:
        pytest.fail("kcat is not installed: run scripts/setup.sh (it apt-get installs kcat)")


@pytest.fixture(scope="module", params=SYSTEMS)
def secured(request, zookeeper, tmp_path_factory):
    """The cluster the refusals, mechanisms and follower fetch run on: kafkalite's, or with
    KAFKALITE_SECURITY_VS_KAFKA=1 also 2 Apache Kafka 2.8.2 brokers of the same settings (their
    launcher has no SSL listener, so the mTLS tests are kafkalite's only)."""
    if request.param == "kafkalite":
        yield request.getfixturevalue("lite")
        return
    _require_kcat()
    overrides = {**OVERRIDES, "super.users": "User:admin",
                 "security.inter.broker.protocol": "SASL_SSL"}
    with secure_apache_kafka(zookeeper, str(tmp_path_factory.mktemp("refusals-kafka")),
                             num_brokers=2, name="refusals-kafka", overrides=overrides) as sc:
        _prepare(sc)
        yield sc


@pytest.fixture(scope="module")
def lite(zookeeper, tmp_path_factory):
    """The kafkalite cluster, with its SSL listener (ssl.client.auth=required)."""
    _require_kcat()
    workdir = str(tmp_path_factory.mktemp("refusals"))
    zk_connect, ca, _cert, settings = _secure_settings(zookeeper, workdir, 2, "refusals",
                                                       "SASL_SSL", None)
    settings.update(OVERRIDES)
    cluster = LocalCluster(zk_connect, 2, workdir=os.path.join(workdir, "cluster"),
                           overrides=settings)
    ports = iter(free_ports(2 * len(cluster.brokers)))
    sasl_ports, ssl_ports = {}, {}
    for broker_id, broker in cluster.brokers.items():
        sasl_ports[broker_id], ssl_ports[broker_id] = next(ports), next(ports)
        broker.overrides["listeners"] = (f"PLAINTEXT://127.0.0.1:{broker.port},"
                                         f"SASL_SSL://127.0.0.1:{sasl_ports[broker_id]},"
                                         f"SSL://127.0.0.1:{ssl_ports[broker_id]}")
    sc = SecureCluster(cluster, zk_connect, ca.cert_path, sasl_ports, workdir)
    sc.extra.update(ca=ca, ssl_ports=ssl_ports)
    try:
        cluster.start()
        _prepare(sc)
        yield sc
    except BaseException:
        print(cluster.describe_logs())
        raise
    finally:
        cluster.stop()


def _prepare(sc: SecureCluster) -> None:
    """Topics (admin), VALUES in each client's topic and the mTLS topic, alice's ACLs."""
    admin = AdminClient(sc.librdkafka("admin"))
    topics = [NewTopic(topic_of(c), 1, 2) for c in CLIENTS]
    topics += [NewTopic(mechanism_topic(m), 1, 2) for m in MECHANISMS]
    topics += [NewTopic(MTLS_TOPIC, 1, 2), NewTopic(REPLICATED, 2, 2)]
    for future in admin.create_topics(topics).values():
        future.result(TIMEOUT_S)
    for topic in [topic_of(c) for c in CLIENTS] + [MTLS_TOPIC]:
        assert produce(sc.librdkafka("admin"), topic, VALUES) == [None] * len(VALUES)
    for mechanism in MECHANISMS:
        grant(sc, "User:alice", *[(ResourceType.TOPIC, mechanism_topic(mechanism), op)
                                  for op in (AclOperation.WRITE, AclOperation.READ)])


def grant(sc: SecureCluster, principal: str, *specs) -> None:
    """ALLOW ACLs for ``principal``: (resource type, name, operation) each, literal, any host."""
    admin = AdminClient(sc.librdkafka("admin"))
    bindings = [AclBinding(kind, name, ResourcePatternType.LITERAL, principal, "*", operation,
                           AclPermissionType.ALLOW) for kind, name, operation in specs]
    for future in admin.create_acls(bindings).values():
        future.result(TIMEOUT_S)


def produce(settings: dict, topic: str, values, partition: int = 0) -> list:
    """Each value to ``partition``, acks=all; the delivery errors (None for each success)."""
    outcomes: list = []
    producer = Producer({**settings, "acks": "all", "message.timeout.ms": 30000})
    for value in values:
        producer.produce(topic, value=value, partition=partition,
                         on_delivery=lambda err, msg: outcomes.append(err))
    producer.flush(40)
    return outcomes


def producer_errors(settings: dict, topic: str, wanted, what: str) -> list:
    """The errors a refused confluent-kafka producer reports (error_cb) until one is
    ``wanted``; the producer is purged and destroyed before this returns."""
    errors: list = []
    producer = Producer({**settings, "error_cb": errors.append})
    producer.produce(topic, value=b"never")

    def reported() -> bool:
        producer.poll(0.2)
        return any(wanted(e) for e in errors)
    try:
        wait_until(reported, TIMEOUT_S, what)
    finally:
        producer.purge()
        producer.flush(0)
    return errors


def login(sc: SecureCluster, user: str = "bob", mechanism: str = "SCRAM-SHA-512",
          password: str | None = None) -> Login:
    return Login(sc.bootstrap, sc.ca_path, user,
                 PASSWORDS[user] if password is None else password, mechanism)


# --- refusals with each client -------------------------------------------------------------

def test_describe_refused_then_allowed_with_each_client(secured):
    bob = login(secured)
    refused = {client: DESCRIBE[client](bob, topic_of(client)) for client in CLIENTS}
    assert refused == {client: ("TOPIC_AUTHORIZATION_FAILED", 0) for client in CLIENTS}
    grant(secured, "User:bob",
          *[(ResourceType.TOPIC, topic_of(c), AclOperation.DESCRIBE) for c in CLIENTS])
    for client in CLIENTS:
        wait_until(lambda: DESCRIBE[client](bob, topic_of(client)) == (None, 1), TIMEOUT_S,
                   f"{client} describing {topic_of(client)} once bob may Describe it")


def test_read_refused_then_allowed_with_each_client(secured):
    bob = login(secured)
    # Describe granted, Read not: metadata answers, the Fetch is what is refused
    grant(secured, "User:bob",
          *[(ResourceType.TOPIC, topic_of(c), AclOperation.DESCRIBE) for c in CLIENTS])
    for client in CLIENTS:
        wait_until(lambda: DESCRIBE["confluent-kafka"](bob, topic_of(client)) == (None, 1),
                   TIMEOUT_S, f"bob's Describe ACL on {topic_of(client)}")
    denied = "TOPIC_AUTHORIZATION_FAILED"
    refused = {client: READ[client](bob, topic_of(client), None, len(VALUES), stop_on=denied)
               for client in CLIENTS}
    for client, read in refused.items():
        assert read.values == [] and denied in read.errors, (client, read)
    grant(secured, "User:bob",
          *[(ResourceType.TOPIC, topic_of(c), AclOperation.READ) for c in CLIENTS])
    for client in CLIENTS:
        wait_until(lambda: READ[client](bob, topic_of(client), None, len(VALUES),
                                        stop_on=denied).values == VALUES, TIMEOUT_S,
                   f"{client} reading {topic_of(client)} once bob may Read it")


def test_group_refused_then_allowed_with_each_client(secured):
    bob = login(secured)
    grant(secured, "User:bob",
          *[(ResourceType.TOPIC, topic_of(c), AclOperation.READ) for c in CLIENTS])
    denied = "GROUP_AUTHORIZATION_FAILED"
    refused = {}
    for client in CLIENTS:
        # the topic's Read ACL first (a refused Fetch would be another refusal)
        wait_until(lambda: READ["confluent-kafka"](bob, topic_of(client), None, 1,
                                                   "TOPIC_AUTHORIZATION_FAILED").values,
                   TIMEOUT_S, f"bob's Read ACL on {topic_of(client)}")
        refused[client] = READ[client](bob, topic_of(client), group_of(client), len(VALUES),
                                       stop_on=denied)
    for client, read in refused.items():
        assert read.values == [] and denied in read.errors, (client, read)
    grant(secured, "User:bob",
          *[(ResourceType.GROUP, group_of(c), AclOperation.READ) for c in CLIENTS])
    for client in CLIENTS:
        wait_until(lambda: READ[client](bob, topic_of(client), group_of(client), len(VALUES),
                                        stop_on=denied).values == VALUES, TIMEOUT_S,
                   f"{client} consuming in {group_of(client)} once bob may Read the group")


# --- mutual TLS ----------------------------------------------------------------------------

def _tls_settings(sc: SecureCluster, cert=None) -> dict:
    settings = {"bootstrap.servers": ",".join(f"127.0.0.1:{p}"
                                              for p in sc.extra["ssl_ports"].values()),
                "security.protocol": "SSL", "ssl.ca.location": sc.ca_path}
    if cert is not None:
        settings.update({"ssl.certificate.location": cert.cert_path,
                         "ssl.key.location": cert.key_path})
    return settings


def _handshake(port: int, ca_path: str, cert=None) -> None:
    """A TLS connection with the standard library, one byte sent and one read: under TLS 1.3
    the server's verdict on the client's certificate arrives after the client's Finished."""
    context = ssl.create_default_context(cafile=ca_path)
    if cert is not None:
        context.load_cert_chain(cert.cert_path, cert.key_path)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(struct.pack(">i", 0))
            tls.recv(1)


def test_mutual_tls_principal_from_certificate(lite, tmp_path):
    reader = make_certificate(lite.extra["ca"], tmp_path, "reader")
    intruder = make_certificate(lite.extra["ca"], tmp_path, "intruder")

    def describe(cert):
        found = AdminClient(_tls_settings(lite, cert)).list_topics(
            MTLS_TOPIC, timeout=30).topics[MTLS_TOPIC]
        return found.error.name() if found.error else len(found.partitions)
    assert describe(reader) == "TOPIC_AUTHORIZATION_FAILED"
    grant(lite, READER, (ResourceType.TOPIC, MTLS_TOPIC, AclOperation.READ))

    def read(cert):
        consumer_settings = {**_tls_settings(lite, cert), "group.id": "mtls-assign"}
        return confluent_read(_Settings(consumer_settings), MTLS_TOPIC, None, len(VALUES),
                              "TOPIC_AUTHORIZATION_FAILED").values
    wait_until(lambda: read(reader) == VALUES, TIMEOUT_S, f"{READER} reading {MTLS_TOPIC}")
    listing = kcat_tls(lite, reader, "-C", "-t", MTLS_TOPIC, "-p", "0", "-o", "beginning",
                       "-c", str(len(VALUES)), "-q")
    assert listing.returncode == 0 and listing.stdout.split() == VALUES, listing
    assert describe(intruder) == "TOPIC_AUTHORIZATION_FAILED"     # the ACL names the reader


def test_mutual_tls_refuses_a_client_without_a_trusted_certificate(lite, tmp_path):
    port = lite.extra["ssl_ports"][1]
    with pytest.raises(ssl.SSLError, match="certificate required"):
        _handshake(port, lite.ca_path)
    stranger = make_certificate(make_ca(tmp_path / "other", "another CA"), tmp_path, "reader")
    with pytest.raises(ssl.SSLError, match="unknown ca"):
        _handshake(port, lite.ca_path, stranger)
    errors = producer_errors(_tls_settings(lite), MTLS_TOPIC,
                             lambda e: "certificate required" in e.str(),
                             "librdkafka's TLS error for a missing certificate")
    assert all(e.code() in (KafkaError._TRANSPORT, KafkaError._SSL,
                            KafkaError._ALL_BROKERS_DOWN) for e in errors), errors
    assert all(b.running for b in lite.cluster.brokers.values())
    assert produce(lite.librdkafka("admin"), MTLS_TOPIC, [b"served"]) == [None]


class _Settings:
    """A stand-in Login for confluent_read over plain TLS (no SASL)."""

    def __init__(self, settings: dict):
        self._settings = settings

    def librdkafka(self, **more) -> dict:
        return {**self._settings, **more}


def kcat_tls(sc: SecureCluster, cert, *args: str) -> subprocess.CompletedProcess:
    settings = _tls_settings(sc, cert)
    command = ["kcat", "-b", settings.pop("bootstrap.servers")]
    for key, value in settings.items():
        command += ["-X", f"{key}={value}"]
    return subprocess.run(command + list(args), capture_output=True, timeout=60)


# --- SASL mechanisms -----------------------------------------------------------------------

@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_sasl_mechanism_end_to_end_and_wrong_password(secured, mechanism, caplog):
    import aiokafka
    import aiokafka.errors

    alice = login(secured, "alice", mechanism)
    topic = mechanism_topic(mechanism)
    by_confluent = [f"confluent-{mechanism}-{i}".encode() for i in range(3)]
    wait_until(lambda: produce(alice.librdkafka(), topic, by_confluent[:1]) == [None],
               TIMEOUT_S, f"alice's Write ACL on {topic} ({mechanism})")
    assert produce(alice.librdkafka(), topic, by_confluent[1:]) == [None, None]
    by_aiokafka = [f"aiokafka-{mechanism}-{i}".encode() for i in range(3)]

    async def aiokafka_round_trip() -> list[bytes]:
        producer = aiokafka.AIOKafkaProducer(**alice.aiokafka_kwargs(), acks="all")
        await producer.start()
        try:
            for value in by_aiokafka:
                await producer.send_and_wait(topic, value, partition=0)
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(**alice.aiokafka_kwargs(),
                                             auto_offset_reset="earliest")
        await consumer.start()
        got: list[bytes] = []
        try:
            consumer.assign([aiokafka.TopicPartition(topic, 0)])
            while len(got) < 6:
                for records in (await consumer.getmany(timeout_ms=1000)).values():
                    got.extend(r.value for r in records)
        finally:
            await consumer.stop()
        return got
    expected = by_confluent + by_aiokafka
    assert asyncio.run(asyncio.wait_for(aiokafka_round_trip(), TIMEOUT_S)) == expected
    assert READ["confluent-kafka"](alice, topic, None, 6).values == expected

    # a wrong password: librdkafka's authentication error, aiokafka's SaslAuthenticationFailed
    wrong = login(secured, "alice", mechanism, password="wrong")
    errors = producer_errors(wrong.librdkafka(), topic,
                             lambda e: e.code() == KafkaError._AUTHENTICATION,
                             f"librdkafka's authentication error ({mechanism})")
    assert any(WRONG_PASSWORD[mechanism] in e.str() for e in errors), errors

    async def aiokafka_start() -> None:
        refused_producer = aiokafka.AIOKafkaProducer(**wrong.aiokafka_kwargs())
        try:
            await refused_producer.start()
        finally:
            await refused_producer.stop()
    with caplog.at_level(logging.ERROR, logger="aiokafka"):
        with pytest.raises(aiokafka.errors.KafkaConnectionError):
            asyncio.run(aiokafka_start())
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert f"SaslAuthenticationFailed: {WRONG_PASSWORD[mechanism]}" in logged, logged
    assert produce(alice.librdkafka(), topic, [b"after"]) == [None]


# --- an anonymous follower fetch -----------------------------------------------------------

def anonymous_fetch(port: int, replica_id: int, topic: str, partitions) -> dict:
    """Fetch v4 from every offset 0, encoded and decoded by kafka-python's protocol classes (an
    independent codec), on the PLAINTEXT listener: no login, so the principal is ANONYMOUS."""
    from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse

    request_class = FetchRequest[4]
    request = request_class(
        replica_id=replica_id, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
        topics=[request_class.FetchTopic(topic=topic, partitions=[
            request_class.FetchTopic.FetchPartition(partition=p, fetch_offset=0,
                                                    partition_max_bytes=1 << 20)
            for p in partitions])])
    request.with_header(correlation_id=41, client_id="not-a-broker")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request.encode(header=True, framed=True))
        size = struct.unpack(">i", _read_exact(sock, 4))[0]
        answer = FetchResponse[4].decode(_read_exact(sock, size), header=True)
    assert answer.header.correlation_id == 41
    return answer.to_dict()


def _fetched(answer: dict) -> tuple:
    """(partition, error code, high watermark, whether records came) of a one-partition
    answer."""
    (topic,) = answer["responses"]
    assert topic["topic"] == REPLICATED
    (p,) = topic["partitions"]
    return p["partition_index"], p["error_code"], p["high_watermark"], bool(p["records"])


def _read_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} of {n} bytes")
        data += chunk
    return data


def test_anonymous_follower_fetch_refused_while_brokers_replicate(secured):
    admin_settings = secured.librdkafka("admin")
    admin = AdminClient(admin_settings)

    def partitions():
        return admin.list_topics(REPLICATED, timeout=10).topics[REPLICATED].partitions

    def full_isr() -> bool:
        found = partitions()
        return len(found) == 2 and all(p.leader > 0 and sorted(p.isrs) == [1, 2]
                                       for p in found.values())
    before = [b"before-%d" % i for i in range(5)]
    for partition in (0, 1):
        # min.insync.replicas=2: acks=all succeeds only with the follower in the ISR
        assert produce(admin_settings, REPLICATED, before, partition) == [None] * 5
    wait_until(full_isr, TIMEOUT_S, f"every replica of {REPLICATED} in sync")
    # anonymous consumers may read the topic: only ClusterAction is missing for a follower
    grant(secured, "User:ANONYMOUS", (ResourceType.TOPIC, REPLICATED, AclOperation.READ))
    for partition, found in partitions().items():
        leader = secured.cluster.brokers[found.leader]
        wait_until(lambda: _fetched(anonymous_fetch(leader.port, -1, REPLICATED, [partition]))
                   == (partition, 0, 5, True), TIMEOUT_S,
                   f"an anonymous consumer's Fetch of {REPLICATED}-{partition} being served")
        follower = next(r for r in found.replicas if r != found.leader)
        answer = anonymous_fetch(leader.port, follower, REPLICATED, [partition])
        # 29: TOPIC_AUTHORIZATION_FAILED, no high watermark, no records
        assert _fetched(answer) == (partition, 29, -1, False), answer
    after = [b"after-%d" % i for i in range(5)]
    for partition in (0, 1):
        assert produce(admin_settings, REPLICATED, after, partition) == [None] * 5
    assert full_isr()
    for partition in (0, 1):
        read = confluent_read(_Settings(admin_settings), REPLICATED, None, 10, partition=partition)
        assert read.values == before + after

