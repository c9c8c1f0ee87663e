"""Kafka 2.8.2's kafka-delegation-tokens (KIP-48) against kafkalite and against Apache Kafka 2.8
configured alike, and token authentication with Kafka's own Java clients.

Each system is a 3-broker cluster of this module's own: a PLAINTEXT listener (brokers replicate
over it; its ANONYMOUS user is a super user) beside a SASL_PLAINTEXT one offering PLAIN (the
users admin, alice, bob and carol) and SCRAM-SHA-256 (for token logins), the ACL authorizer
with no access without an ACL, ``delegation.token.master.key`` set and an expiry check every
second. The same tool commands run against both and must print the same, once token ids,
HMACs and dates are normalised; the HMACs are checked to be Kafka's (HmacSHA512 of the token id
keyed by the master key) and the token znodes to hold the same JSON. librdkafka cannot log in
with a token (it sends no SCRAM extensions), so token authentication is checked with Kafka's
console producer and the tool itself (``tokenauth="true"`` in the JAAS config).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import NewTopic
from kafka_tool_checks import KAFKA, KAFKALITE, admin, tool, unique, wait_for_leaders
from kazoo.client import KazooClient

from kafkalite.local.cluster import LocalCluster, wait_until
from kafkalite.local.ports import free_port
from kafkalite.testing.apache_kafka import ApacheKafkaCluster
from kafkalite.testing.oracle_fixtures import SHARED_SETTINGS, session_chroot

pytestmark = [pytest.mark.integration]

MASTER_KEY = "kafkalite-token-secret"
PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret",
             "carol": "carol-secret"}
PLAIN_JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
              + " ".join(f'user_{u}="{p}"' for u, p in PASSWORDS.items()) + ";")
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
SETTINGS = {
    **SHARED_SETTINGS,
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
    "security.inter.broker.protocol": "PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",
    "delegation.token.master.key": MASTER_KEY,
    "delegation.token.expiry.check.interval.ms": 1000,
}


class SaslKafka(ApacheKafkaCluster):
    """Apache Kafka with a SASL_PLAINTEXT listener beside each broker's PLAINTEXT one."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.sasl_ports = {broker_id: free_port() for broker_id in self.brokers}

    def settings(self, broker):
        settings = super().settings(broker)
        settings["listeners"] = (f"PLAINTEXT://127.0.0.1:{broker.port},"
                                 f"SASL_PLAINTEXT://127.0.0.1:{self.sasl_ports[broker.broker_id]}")
        return settings


def _kafkalite(zk_connect: str, workdir: str) -> LocalCluster:
    cluster = LocalCluster(zk_connect, 3, workdir=workdir, overrides=dict(SETTINGS))
    cluster.sasl_ports = {}
    for broker_id, broker in cluster.brokers.items():
        cluster.sasl_ports[broker_id] = free_port()
        broker.overrides["listeners"] = (f"PLAINTEXT://127.0.0.1:{broker.port},"
                                         f"SASL_PLAINTEXT://127.0.0.1:"
                                         f"{cluster.sasl_ports[broker_id]}")
    return cluster


@pytest.fixture(scope="module")
def token_systems(request, zookeeper, tmp_path_factory):
    """``{"kafkalite": cluster, "kafka": cluster}``, each with ``sasl_bootstrap``,
    ``zk_connect`` and ``configs`` (a client properties file per user)."""
    systems = {}
    try:
        for name in (KAFKALITE, KAFKA):
            chroot = session_chroot(zookeeper, f"tokens-{name}")
            zk_connect = f"{zookeeper.connect_string}{chroot}"
            workdir = str(tmp_path_factory.mktemp(f"tokens-{name}"))
            cluster = (_kafkalite(zk_connect, workdir) if name == KAFKALITE else
                       SaslKafka(zk_connect, 3, workdir=workdir, overrides=dict(SETTINGS)))
            systems[name] = cluster
            cluster.start()
            cluster.zk_connect = zk_connect
            cluster.sasl_bootstrap = ",".join(f"127.0.0.1:{p}"
                                              for p in cluster.sasl_ports.values())
            cluster.configs = {user: _plain_config(workdir, user) for user in PASSWORDS}
        yield systems
    except BaseException:
        for cluster in systems.values():
            print(cluster.describe_logs())
        raise
    finally:
        if request.session.testsfailed:
            for cluster in systems.values():
                print(cluster.describe_logs())
        for cluster in systems.values():
            cluster.stop()


def _write(path: str, lines: list[str]) -> str:
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def _plain_config(workdir: str, user: str) -> str:
    return _write(os.path.join(workdir, f"{user}.properties"), [
        "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=PLAIN",
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="{PASSWORDS[user]}";'])


def _token_config(path: str, token_id: str, hmac_text: str) -> str:
    """A client logging in with a token: SCRAM with Kafka's tokenauth extension."""
    return _write(path, [
        "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=SCRAM-SHA-256",
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{token_id}" password="{hmac_text}" tokenauth="true";'])


def _tokens(cluster, user: str, *args: str, ok: bool = True, bootstrap: str | None = None,
            config: str | None = None):
    return tool("kafka-delegation-tokens", "--bootstrap-server",
                bootstrap or cluster.sasl_bootstrap, "--command-config",
                config or cluster.configs[user], *args, ok=ok)


_CREATED = re.compile(r"Created delegation token with tokenId : (\S+)")
_ROW = re.compile(r"^(\S+)\s+(\S+)\s+(User:\S+)\s+(\[.*?\])\s+(\S+)\s+(\S+)\s+(\S+)\s*$",
                  re.MULTILINE)


def _created(output: str) -> tuple[str, str]:
    """(token id, base64 HMAC) from --create's output."""
    token_id = _CREATED.search(output).group(1)
    row = {m.group(1): m for m in _ROW.finditer(output)}[token_id]
    return token_id, row.group(2)


def _listed(output: str) -> dict[str, tuple[str, str]]:
    """{token id: (owner, renewers)} from --describe's output."""
    return {m.group(1): (m.group(3), m.group(4)) for m in _ROW.finditer(output)
            if m.group(1) != "TOKENID"}


def _kafka_hmac(token_id: str) -> str:
    return base64.b64encode(hmac.new(MASTER_KEY.encode(), token_id.encode(),
                                     hashlib.sha512).digest()).decode()


def _normalised(text: str, names: dict[str, str]) -> str:
    for value, word in names.items():
        text = text.replace(value, word)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d", "DATE", text)
    return re.sub(r"[ \t]+", " ", text)


def _znode(cluster, token_id: str) -> dict | None:
    zk = KazooClient(hosts=cluster.zk_connect)
    zk.start(timeout=15)
    try:
        if not zk.exists(f"/delegation_token/tokens/{token_id}"):
            return None
        return json.loads(zk.get(f"/delegation_token/tokens/{token_id}")[0])
    finally:
        zk.stop()
        zk.close()


def test_create_describe_renew_expire(token_systems):
    """The tool's whole life cycle of a token, on both systems, with the same output: alice
    creates one that bob may renew; owner and renewer see it, carol (no Describe ACL) does
    not; carol may not renew it, bob may; alice expires it and it is gone."""
    outputs = {}
    for name, cluster in token_systems.items():
        created = _tokens(cluster, "alice", "--create", "--max-life-time-period", "-1",
                          "--renewer-principal", "User:bob")
        token_id, hmac_text = _created(created.stdout)
        assert hmac_text == _kafka_hmac(token_id), name
        znode = _znode(cluster, token_id)
        assert (znode["owner"], znode["renewers"], znode["tokenId"], znode["version"]) == (
            "User%3Aalice", ["User%3Abob"], token_id, 1), name
        assert znode["maxTimestamp"] - znode["issueTimestamp"] == 604_800_000
        assert znode["expiryTimestamp"] - znode["issueTimestamp"] == 86_400_000
        steps = [created]
        for user in ("alice", "bob", "carol"):
            described = _tokens(cluster, user, "--describe")
            expected = {token_id: ("User:alice", "[User:bob]")} if user != "carol" else {}
            assert {t: v for t, v in _listed(described.stdout).items()
                    if t == token_id} == expected, (name, user, described.stdout)
        none = _tokens(cluster, "alice", "--describe", "--owner-principal", "User:carol")
        assert token_id not in none.stdout
        steps.append(_tokens(cluster, "carol", "--renew", "--hmac", hmac_text,
                             "--renew-time-period", "3600000", ok=False))
        steps.append(_tokens(cluster, "bob", "--renew", "--hmac", hmac_text,
                             "--renew-time-period", "3600000"))
        renewed = _znode(cluster, token_id)
        assert 0 < renewed["expiryTimestamp"] - znode["expiryTimestamp"] + 86_400_000 - \
            3_600_000 < 120_000, (name, znode, renewed)
        steps.append(_tokens(cluster, "alice", "--expire", "--hmac", hmac_text,
                             "--expiry-time-period", "-1"))
        assert _znode(cluster, token_id) is None, name
        steps.append(_tokens(cluster, "alice", "--renew", "--hmac", hmac_text,
                             "--renew-time-period", "-1", ok=False))
        assert [s.returncode for s in steps] == [0, 1, 0, 0, 1], name
        outputs[name] = [_normalised(s.stdout, {token_id: "TOKEN-ID", hmac_text: "HMAC"})
                         for s in steps]
    assert "DelegationTokenOwnerMismatchException" in outputs[KAFKALITE][1]
    assert "DelegationTokenNotFoundException" in outputs[KAFKALITE][4]
    assert outputs[KAFKALITE] == outputs[KAFKA]


def test_a_token_logs_in_as_its_owner(token_systems, tmp_path):
    """A Java producer logging in with alice's token (SCRAM, tokenauth=true) writes as alice
    (only she may write to the topic), on every broker; a token connection may not ask for
    tokens, and a wrong HMAC does not log in."""
    outputs = {}
    for name, cluster in token_systems.items():
        topic = unique("tokens")
        client = admin(cluster.bootstrap_servers)      # kept: a dropped client aborts its calls
        client.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)
        wait_for_leaders(cluster.bootstrap_servers, topic, 3)
        tool("kafka-acls", "--bootstrap-server", cluster.sasl_bootstrap, "--command-config",
             cluster.configs["admin"], "--add", "--allow-principal", "User:alice",
             "--operation", "Write", "--operation", "Describe", "--topic", topic)
        token_id, hmac_text = _created(_tokens(cluster, "alice", "--create",
                                               "--max-life-time-period", "-1").stdout)
        token = _token_config(str(tmp_path / f"{name}-token.properties"), token_id, hmac_text)
        lines = [f"token-record-{i}" for i in range(6)]
        tool("kafka-console-producer", "--bootstrap-server", cluster.sasl_bootstrap,
             "--topic", topic, "--producer.config", token, "--producer-property", "acks=all",
             input="\n".join(lines) + "\n")
        assert sorted(_consume(cluster.bootstrap_servers, topic, len(lines))) == lines, name
        steps = []
        for port in cluster.sasl_ports.values():      # every broker knows the token
            steps.append(_tokens(cluster, "alice", "--describe", ok=False, config=token,
                                 bootstrap=f"127.0.0.1:{port}"))
        wrong = _token_config(str(tmp_path / f"{name}-wrong.properties"), token_id,
                              _kafka_hmac("not-" + token_id))
        steps.append(_tokens(cluster, "alice", "--describe", ok=False, config=wrong))
        assert [s.returncode for s in steps] == [1, 1, 1, 1], name
        outputs[name] = [_normalised(s.stdout, {}) for s in steps]
    refusal = ("UnsupportedByAuthenticationException: Delegation Token requests are not "
               "allowed on PLAINTEXT/1-way SSL channels and on delegation token authenticated "
               "channels")
    assert all(refusal in out for out in outputs[KAFKALITE][:3]), outputs[KAFKALITE]
    assert "SaslAuthenticationException" in outputs[KAFKALITE][3]
    assert outputs[KAFKALITE] == outputs[KAFKA]


def _consume(bootstrap: str, topic: str, count: int) -> list[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("tokens"),
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    got: list[str] = []
    try:
        def enough():
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                got.append(message.value().decode())
            return len(got) >= count
        wait_until(enough, timeout_s=60, what=f"{count} records of {topic}")
    finally:
        consumer.close()
    return got


def test_the_expiry_check_removes_expired_tokens(token_systems):
    """A token created to live 2 s is removed by the controller's expiry check (every second
    here) from ZooKeeper and from every broker's cache."""
    for name, cluster in token_systems.items():
        created = _tokens(cluster, "alice", "--create", "--max-life-time-period", "2000")
        token_id, _ = _created(created.stdout)
        assert _znode(cluster, token_id) is not None, name

        def gone():
            return (_znode(cluster, token_id) is None and token_id not in _tokens(
                cluster, "alice", "--describe").stdout)
        wait_until(gone, timeout_s=60, what=f"{name}: token {token_id} removed", interval_s=1)


def test_delegation_tokens_refused_on_plaintext(token_systems, tmp_path):
    """Kafka refuses token requests on an unauthenticated channel with its own error, before it
    looks at anything else; the tool reaches the broker and prints it."""
    settings = tmp_path / "client.properties"
    settings.write_text("client.id=tool-tests\n")
    refusal = ("UnsupportedByAuthenticationException: Delegation Token requests are not "
               "allowed on PLAINTEXT/1-way SSL channels")
    for name in (KAFKA, KAFKALITE):
        bs = token_systems[name].bootstrap_servers          # the PLAINTEXT listeners
        for action in (["--describe"], ["--create", "--max-life-time-period", "-1"]):
            got = tool("kafka-delegation-tokens", "--bootstrap-server", bs, "--command-config",
                       str(settings), *action, ok=False)
            assert got.returncode == 1 and refusal in got.stdout, (name, got.stdout)
