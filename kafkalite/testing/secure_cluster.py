"""A secured kafkalite cluster for tests and benchmarks: a SASL_SSL listener beside a PLAINTEXT
one, certificates made on the spot (``security.certificates``; nothing to commit), SCRAM users
written to ZooKeeper before the brokers start (as Kafka's docs bootstrap the admin user), and the
client settings for kcat, confluent-kafka and kafkalite's clients.

Each broker listens on ``PLAINTEXT://127.0.0.1:<port>`` (what ``LocalCluster`` probes, and
unless ``inter_broker`` says otherwise what brokers use between themselves) and
``SASL_SSL://127.0.0.1:<secure port>`` with SCRAM-SHA-512 and PLAIN. The authorizer is on;
``admin`` is a super user. ``secure_apache_kafka`` starts Apache Kafka 2.8.2 brokers with the
same settings, for oracle tests.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass, field

from kafkalite.security.certificates import make_ca, make_certificate
from kafkalite.security.scram import credential_to_string, make_credential
from kafkalite.local.cluster import LocalCluster
from kafkalite.local.ports import free_port
from kafkalite.local.zookeeper import unique_chroot

PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
MECHANISM = "SCRAM-SHA-512"
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
              'username="admin" password="admin-secret";')
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_admin="admin-secret" '
              'user_alice="alice-secret" user_bob="bob-secret";')


@dataclass
class SecureCluster:
    cluster: LocalCluster
    zk_connect: str
    ca_path: str
    secure_ports: dict[int, int]
    workdir: str
    zk_digest: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        """The SASL_SSL listeners."""
        return ",".join(f"127.0.0.1:{p}" for p in self.secure_ports.values())

    def secure_address(self, broker_id: int) -> str:
        return f"127.0.0.1:{self.secure_ports[broker_id]}"

    def librdkafka(self, user: str, password: str | None = None, **more) -> dict:
        """confluent-kafka settings for ``user`` over SASL_SSL with SCRAM-SHA-512."""
        return {"bootstrap.servers": self.bootstrap, "security.protocol": "SASL_SSL",
                "sasl.mechanisms": MECHANISM, "sasl.username": user,
                "sasl.password": PASSWORDS.get(user) if password is None else password,
                "ssl.ca.location": self.ca_path, **more}

    def kcat(self, user: str, *args, password: str | None = None, timeout_s: float = 60,
             stdin: bytes | None = None, address: str | None = None
             ) -> subprocess.CompletedProcess:
        settings = self.librdkafka(user, password)
        command = ["kcat", "-b", address or settings["bootstrap.servers"]]
        for key in ("security.protocol", "sasl.mechanisms", "sasl.username", "sasl.password",
                    "ssl.ca.location"):
            command += ["-X", f"{key}={settings[key]}"]
        return subprocess.run(command + list(args), input=stdin, capture_output=True,
                              timeout=timeout_s)

    def kafkalite_security(self, user: str) -> dict:
        """kafkalite client keyword arguments (kafka-python's names) for ``user``."""
        return dict(security_protocol="SASL_SSL", ssl_cafile=self.ca_path,
                    sasl_mechanism=MECHANISM, sasl_plain_username=user,
                    sasl_plain_password=PASSWORDS[user])

    def command_config(self, user: str = "admin") -> str:
        """A Kafka client properties file for ``user`` (kafka-acls' --command-config)."""
        path = os.path.join(self.workdir, f"{user}.properties")
        with open(path, "w") as f:
            f.write(f"security.protocol=SASL_SSL\nsasl.mechanism={MECHANISM}\n"
                    f"sasl.username={user}\nsasl.password={PASSWORDS[user]}\n"
                    f"ssl.truststore.location={self.ca_path}\n")
            if self.zk_digest:
                f.write(f"zookeeper.auth.digest={self.zk_digest}\n")
        return path


def write_users(zk_connect: str, digest: str | None = None, users=PASSWORDS) -> None:
    """SCRAM-SHA-512 (and -256) credentials in /config/users, before any broker runs."""
    from kafkalite.zk.credentials import UserConfigZkStore
    from kafkalite.zk.znode_acls import secure_zk_client

    zk = secure_zk_client(zk_connect, session_timeout_ms=10000, digest=digest).start()
    try:
        store = UserConfigZkStore(zk)
        for user, password in users.items():
            store.alter(user, {m: credential_to_string(make_credential(m, password))
                               for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")})
    finally:
        zk.stop()


def _secure_settings(zookeeper, workdir: str, num_brokers: int, name: str, inter_broker: str,
                     zk_digest: str | None):
    """(zk_connect, the CA, the broker's certificate, the settings both systems share): a chroot
    of its own, certificates, the SCRAM users written, the listeners' security settings."""
    from kafkalite.zk import ZkClient

    chroot = unique_chroot(f"kl-{name}")
    boot = ZkClient(zookeeper.connect_string, session_timeout_ms=30000).start()
    try:
        boot.ensure_path(chroot)
    finally:
        boot.stop()
    zk_connect = f"{zookeeper.connect_string}{chroot}"
    certs = os.path.join(workdir, "certs")
    ca = make_ca(certs)
    broker_cert = make_certificate(ca, certs, "broker")
    write_users(zk_connect, zk_digest)
    super_users = "User:admin" + (";User:ANONYMOUS" if inter_broker == "PLAINTEXT" else "")
    settings = {
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
        "ssl.keystore.type": "PEM",              # Kafka's default is JKS; kafkalite reads PEM
        "ssl.keystore.location": broker_cert.keystore_path,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": ca.cert_path,
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
        "sasl.mechanism.inter.broker.protocol": MECHANISM,
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": super_users,
        "security.inter.broker.protocol": inter_broker,
        "default.replication.factor": min(3, num_brokers),
        "min.insync.replicas": min(2, num_brokers),
        "auto.create.topics.enable": "false",
    }
    if zk_digest:
        settings.update({"zookeeper.set.acl": "true", "zookeeper.auth.digest": zk_digest})
    return zk_connect, ca, broker_cert, settings


@contextlib.contextmanager
def secure_cluster(zookeeper, workdir: str, num_brokers: int = 3, name: str = "sec",
                   inter_broker: str = "PLAINTEXT", zk_digest: str | None = None,
                   overrides: dict | None = None):
    """A started SecureCluster (stopped on exit). ``inter_broker``: PLAINTEXT (then
    User:ANONYMOUS is a super user, as it must be for replication over an unauthenticated
    listener) or SASL_SSL (brokers log in as admin)."""
    zk_connect, ca, _cert, settings = _secure_settings(zookeeper, workdir, num_brokers, name,
                                                       inter_broker, zk_digest)
    settings.update(overrides or {})
    cluster = LocalCluster(zk_connect, num_brokers, workdir=os.path.join(workdir, "cluster"),
                           overrides=settings)
    secure_ports = {}
    for broker_id, broker in cluster.brokers.items():
        secure_ports[broker_id] = free_port()
        broker.overrides["listeners"] = (f"PLAINTEXT://127.0.0.1:{broker.port},"
                                         f"SASL_SSL://127.0.0.1:{secure_ports[broker_id]}")
    try:
        cluster.start()
        yield SecureCluster(cluster, zk_connect, ca.cert_path, secure_ports, workdir, zk_digest)
    except BaseException:
        print(cluster.describe_logs())
        raise
    finally:
        cluster.stop()


@contextlib.contextmanager
def secure_apache_kafka(zookeeper, workdir: str, num_brokers: int = 3, name: str = "ak-sec",
                        overrides: dict | None = None):
    """The same secured cluster of Apache Kafka 2.8.2 brokers (``testing.apache_kafka``), for
    an oracle: the same listeners, users, authorizer and super users, PLAINTEXT between brokers.
    The one difference is how the broker's key is given: Kafka reads a PEM keystore file only
    with an encrypted key, so it gets the same key and certificate inline
    (``ssl.keystore.key``, ``ssl.keystore.certificate.chain``, KIP-651)."""
    from kafkalite.testing.apache_kafka import ApacheKafkaCluster

    zk_connect, ca, cert, settings = _secure_settings(zookeeper, workdir, num_brokers, name,
                                                      "PLAINTEXT", None)
    del settings["ssl.keystore.location"]
    with open(cert.key_path) as key, open(cert.cert_path) as chain:
        settings.update({"ssl.keystore.key": key.read(),
                         "ssl.keystore.certificate.chain": chain.read()})
    settings.update(overrides or {})
    cluster = ApacheKafkaCluster(zk_connect, num_brokers, workdir=os.path.join(workdir, "kafka"),
                                 overrides=settings, extra_listener="SASL_SSL")
    secure_ports = {b.broker_id: b.extra_port for b in cluster.brokers.values()}
    try:
        cluster.start()
        yield SecureCluster(cluster, zk_connect, ca.cert_path, secure_ports, workdir)
    except BaseException:
        print(cluster.describe_logs())
        raise
    finally:
        cluster.stop()
