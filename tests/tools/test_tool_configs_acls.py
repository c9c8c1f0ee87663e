"""Kafka 2.8.2's kafka-configs and kafka-acls against kafkalite.

Topic and broker configs run against the shared clusters and are compared with the Apache Kafka
oracle. SCRAM users and ACLs need a broker with SASL and an authorizer: a one-broker secured
kafkalite cluster of this module's own (``kafkalite.testing.secure_cluster``: SASL_SSL with
SCRAM-SHA-512 beside a PLAINTEXT listener whose ANONYMOUS user is a super user, so the tools can
administer it unauthenticated). Their effect is read through confluent-kafka logging in as the
user the tool wrote or granted.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka_tool_checks import (KAFKA, KAFKALITE, admin, produce, tool, unique,
                               wait_for_leaders, zk_address)

from kafkalite.config_kafka_table import KAFKA_BROKER_DEFS
from kafkalite.local.cluster import wait_until
from kafkalite.testing.oracle_fixtures import SHARED_SETTINGS

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def secure(zookeeper, tmp_path_factory):
    from kafkalite.testing.secure_cluster import secure_cluster

    with secure_cluster(zookeeper, str(tmp_path_factory.mktemp("tool-secure")), num_brokers=1,
                        name="tools") as cluster:
        yield cluster


# --- topic and broker configs -------------------------------------------------------------------

def test_topic_config_alter_describe_and_delete(kafka_systems):
    """--alter --add-config sets overrides that DescribeConfigs (librdkafka) reads and the
    leader enforces (max.message.bytes); --delete-config removes one."""
    topic = unique("tcfg")
    outputs = {}
    for name, cluster in kafka_systems.items():
        bs = cluster.bootstrap_servers
        client = admin(bs)
        client.create_topics([NewTopic(topic, 1, 2)])[topic].result(30)
        wait_for_leaders(bs, topic, 1)
        base = ["kafka-configs", "--bootstrap-server", bs, "--entity-type", "topics",
                "--entity-name", topic]
        altered = tool(*base, "--alter", "--add-config",
                       "retention.ms=12345,cleanup.policy=compact,max.message.bytes=2000")
        described = tool(*base, "--describe")
        resource = ConfigResource("topic", topic)
        got = client.describe_configs([resource])[resource].result(30)
        assert {k: got[k].value for k in ("retention.ms", "cleanup.policy",
                                          "max.message.bytes")} == {
            "retention.ms": "12345", "cleanup.policy": "compact", "max.message.bytes": "2000"}

        def refused():
            try:
                produce(bs, topic, [(b"k", b"x" * 3000)])
            except AssertionError as exc:
                return "MSG_SIZE_TOO_LARGE" in str(exc)
            return False
        wait_until(refused, 30, f"the leader of {topic} to refuse a 3000-byte record",
                   interval_s=0.2)
        removed = tool(*base, "--alter", "--delete-config", "retention.ms")
        after = tool(*base, "--describe")
        got = client.describe_configs([resource])[resource].result(30)
        assert got["retention.ms"].is_default and got["cleanup.policy"].value == "compact"
        # Kafka lists a topic's configs in its HashMap's order; kafkalite in its table's
        outputs[name] = [sorted(text.splitlines()) for text in
                         (altered.stdout, described.stdout, removed.stdout, after.stdout)]
    assert outputs[KAFKALITE] == outputs[KAFKA]


def _all_configs(text: str) -> dict[str, tuple[str, str, str]]:
    """``{key: (value, sensitive, synonyms)}`` from kafka-configs --describe --all."""
    found = {}
    for line in text.splitlines():
        match = re.match(r"  (\S+?)=(.*?) sensitive=(\w+) synonyms=\{(.*)\}$", line)
        if match:
            found[match[1]] = (match[2], match[3], match[4])
    return found


@pytest.fixture(scope="module")
def broker_configs(kafka_systems):
    """Each system's ``--entity-type brokers --describe`` (dynamic configs of every broker)
    and broker 1's ``--describe --all``, run once for the tests below."""
    out = {}
    for name, cluster in kafka_systems.items():
        bs = cluster.bootstrap_servers
        dynamic = tool("kafka-configs", "--bootstrap-server", bs, "--entity-type", "brokers",
                       "--describe")
        every = tool("kafka-configs", "--bootstrap-server", bs, "--entity-type", "brokers",
                     "--entity-name", "1", "--describe", "--all")
        out[name] = (dynamic.stdout, every.stdout, cluster)
    return out


def test_broker_configs_describe(broker_configs):
    """No broker has dynamic configs; --all shows the settings both clusters were given as
    STATIC_BROKER_CONFIG with the same values, synonyms and sensitivity, and where each broker
    listens and keeps its logs."""
    dynamic = {name: out[0] for name, out in broker_configs.items()}
    assert dynamic[KAFKALITE] == "".join(
        f"Dynamic configs for broker {b} are:\n" for b in (1, 2, 3)) + \
        "Default configs for brokers in the cluster are:\n"
    assert dynamic[KAFKALITE] == dynamic[KAFKA]
    every = {name: _all_configs(out[1]) for name, out in broker_configs.items()}
    assert broker_configs[KAFKALITE][1].startswith("All configs for broker 1 are:\n")
    for key in SHARED_SETTINGS:
        assert every[KAFKALITE][key] == every[KAFKA][key], key
        assert f"STATIC_BROKER_CONFIG:{key}=" in every[KAFKALITE][key][2]
    cluster = broker_configs[KAFKALITE][2]
    assert every[KAFKALITE]["log.dirs"][0] == cluster.brokers[1].log_dir
    assert every[KAFKALITE]["listeners"][0] == f"PLAINTEXT://{cluster.brokers[1].address}"
    assert every[KAFKALITE]["zookeeper.connect"][0] == cluster.zk_connect


def test_broker_configs_describe_all_matches_kafka(broker_configs):
    """Every config kafkalite lists is one Kafka lists, with Kafka's default, and none is
    missing (the cluster-specific values aside)."""
    every = {name: _all_configs(out[1]) for name, out in broker_configs.items()}
    per_cluster = {"listeners", "log.dirs", "zookeeper.connect", "broker.id",
                   "advertised.listeners"}
    # what only one launcher sets (Kafka's gives log.retention.check.interval.ms and the
    # internal topics' replication): harness, not system
    per_cluster |= {k for out in every.values() for k, v in out.items()
                    if "STATIC_BROKER_CONFIG:" in v[2] and k not in SHARED_SETTINGS}
    # Kafka 2.8 lists its internal (KRaft) configs too once a dynamic broker config has changed
    # in the session (KafkaConfig.nonInternalValues then answers every value): a Kafka bug
    per_cluster |= {k for k, d in KAFKA_BROKER_DEFS.items() if d.internal}
    kafkalite = {k: v for k, v in every[KAFKALITE].items() if k not in per_cluster}
    kafka = {k: v for k, v in every[KAFKA].items() if k not in per_cluster}
    assert sorted(set(kafkalite) - set(kafka)) == []
    assert {k: v for k, v in kafkalite.items() if kafka[k] != v} == {}
    assert sorted(set(kafka) - set(kafkalite)) == []


# --- SCRAM users ------------------------------------------------------------------------------

def _scram_keys(password: str, salt: bytes, iterations: int, digest: str) -> tuple[str, str]:
    """RFC 5802's stored and server keys for ``password`` (base64), to check what was written."""
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    stored = hashlib.new(digest, client_key).digest()
    server = hmac.new(salted, b"Server Key", digest).digest()
    return base64.b64encode(stored).decode(), base64.b64encode(server).decode()


def _logs_in(secure, user: str, password: str) -> bool:
    """Whether librdkafka authenticates as ``user`` over SASL_SSL/SCRAM-SHA-512."""
    client = AdminClient(secure.librdkafka(user, password, log_level=0))
    try:
        client.list_topics(timeout=3)
        return True
    except KafkaException:
        return False


def test_scram_user_through_zookeeper_logs_in(secure, zookeeper, apache_kafka):
    """kafka-configs --zookeeper writes a SCRAM-SHA-512 credential; the broker lets the user in
    with that password only, and no longer once the credential is deleted. The tool's output is
    Kafka's own for the same commands (salt and keys aside)."""
    user, password = unique("carol"), "carol-secret"
    outputs = {}
    for name, zk in ((KAFKALITE, secure.zk_connect),
                     (KAFKA, zk_address(zookeeper, apache_kafka))):
        base = ["kafka-configs", "--zookeeper", zk, "--entity-type", "users",
                "--entity-name", user]
        added = tool(*base, "--alter", "--add-config",
                     f"SCRAM-SHA-512=[iterations=8192,password={password}]")
        described = tool(*base, "--describe")
        match = re.search(r"SCRAM-SHA-512=salt=(\S+?),stored_key=(\S+?),server_key=(\S+?),"
                          r"iterations=8192", described.stdout)
        assert match, described.stdout
        assert _scram_keys(password, base64.b64decode(match[1]), 8192, "sha512") == (
            match[2], match[3])
        if name == KAFKALITE:
            wait_until(lambda: _logs_in(secure, user, password), 30,
                       f"{user} to log in with the password kafka-configs set", interval_s=0.2)
            assert not _logs_in(secure, user, "wrong-password")
        removed = tool(*base, "--alter", "--delete-config", "SCRAM-SHA-512")
        if name == KAFKALITE:
            wait_until(lambda: not _logs_in(secure, user, password), 30,
                       f"{user} refused once the credential is deleted", interval_s=0.2)
        outputs[name] = [added.stdout, re.sub(r"salt=.*iterations", "KEYS,iterations",
                                              described.stdout), removed.stdout]
    assert outputs[KAFKALITE] == outputs[KAFKA]


def test_scram_user_through_bootstrap_server(kafka_systems):
    """Kafka 2.8 alters and describes SCRAM credentials through the brokers (KIP-554).
    tests/tools/test_tool_scram_credentials.py checks the same through kafka-configs --alter
    and librdkafka's describe."""
    user = unique("dave")
    outputs = {}
    for name in (KAFKA, KAFKALITE):                  # the oracle first: it must pass
        bs = kafka_systems[name].bootstrap_servers
        base = ["kafka-configs", "--bootstrap-server", bs, "--entity-type", "users",
                "--entity-name", user]
        added = tool(*base, "--alter", "--add-config", "SCRAM-SHA-256=[password=dave-secret]")
        described = tool(*base, "--describe")
        outputs[name] = [added.stdout, described.stdout]
    assert outputs[KAFKA] == [
        f"Completed updating config for user {user}.\n",
        f"SCRAM credential configs for user-principal '{user}' are SCRAM-SHA-256=iterations="
        "4096\n"]
    assert outputs[KAFKALITE] == outputs[KAFKA]


def test_quotas_through_bootstrap_server(kafka_systems):
    """Client-id and user quotas through the brokers (KIP-546), as Kafka 2.8 allows."""
    client_id, user = unique("qc"), unique("qu")
    outputs = {}
    for name in (KAFKA, KAFKALITE):
        bs = kafka_systems[name].bootstrap_servers
        run = []
        for kind, entity, config in (("clients", client_id, "producer_byte_rate=1024,"
                                      "consumer_byte_rate=2048"),
                                     ("users", user, "request_percentage=50")):
            base = ["kafka-configs", "--bootstrap-server", bs, "--entity-type", kind,
                    "--entity-name", entity]
            run.append(tool(*base, "--alter", "--add-config", config).stdout)
            run.append(tool(*base, "--describe").stdout)
        outputs[name] = run
    assert outputs[KAFKA][1] == (f"Quota configs for client-id '{client_id}' are "
                                 "consumer_byte_rate=2048.0, producer_byte_rate=1024.0\n")
    assert outputs[KAFKALITE] == outputs[KAFKA]


# --- ACLs ----------------------------------------------------------------------------------------

def _sees_topic(secure, user: str, topic: str) -> bool:
    """Whether ``user``'s Metadata shows ``topic`` (Describe on it is allowed)."""
    client = AdminClient(secure.librdkafka(user, log_level=0))
    try:
        md = client.list_topics(topic, timeout=5).topics.get(topic)
    except KafkaException:
        return False
    return md is not None and md.error is None


def _acl_lines(text: str) -> list[str]:
    return sorted(line.strip() for line in text.splitlines() if "principal=" in line)


def test_acls_through_bootstrap_server_and_zookeeper(secure):
    """ACLs added through the brokers (CreateAcls) are in ZooKeeper for the ZooKeeper-mode tool,
    ACLs it adds are served by DescribeAcls, and both decide what alice may see; removing them
    through either path takes the access away."""
    topic = unique("tacl")
    plain = secure.cluster.bootstrap_servers           # ANONYMOUS there is a super user
    via_brokers = ["kafka-acls", "--bootstrap-server", plain]
    via_zk = ["kafka-acls", "--authorizer-properties", f"zookeeper.connect={secure.zk_connect}"]
    tool("kafka-topics", "--bootstrap-server", plain, "--create", "--topic", topic,
         "--partitions", "1", "--replication-factor", "1")
    wait_for_leaders(plain, topic, 1)
    assert not _sees_topic(secure, "alice", topic)

    added = tool(*via_brokers, "--add", "--allow-principal", "User:alice", "--operation",
                 "Describe", "--operation", "Read", "--topic", topic)
    resource = (f"ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)")
    alice = [f"(principal=User:alice, host=*, operation={op}, permissionType=ALLOW)"
             for op in ("DESCRIBE", "READ")]
    assert f"Adding ACLs for resource `{resource}`:" in added.stdout
    assert _acl_lines(added.stdout) == sorted(alice + alice), added.stdout   # added, then all
    wait_until(lambda: _sees_topic(secure, "alice", topic), 30,
               "alice to see the topic once allowed", interval_s=0.2)
    bob = "(principal=User:bob, host=*, operation=WRITE, permissionType=ALLOW)"
    tool(*via_zk, "--add", "--allow-principal", "User:bob", "--operation", "Write",
         "--topic", topic)
    listing = [f"Current ACLs for resource `{resource}`:", *sorted(alice + [bob])]

    def listed(path) -> list[str]:
        text = tool(*path, "--list", "--topic", topic).stdout
        head = [line.strip() for line in text.splitlines() if line.startswith("Current ACLs")]
        return head + _acl_lines(text)
    wait_until(lambda: listed(via_brokers) == listing, 30,
               "the brokers to list the ACL added through ZooKeeper", interval_s=0.2)
    assert listed(via_zk) == listing

    removed = tool(*via_brokers, "--remove", "--force", "--allow-principal", "User:alice",
                   "--operation", "Describe", "--operation", "Read", "--topic", topic)
    assert _acl_lines(removed.stdout) == [bob], removed.stdout      # what is left
    wait_until(lambda: not _sees_topic(secure, "alice", topic), 30,
               "alice to lose the topic once the ACLs are removed", interval_s=0.2)
    assert listed(via_zk) == [listing[0], bob]
    tool(*via_zk, "--remove", "--force", "--allow-principal", "User:bob", "--operation",
         "Write", "--topic", topic)
    wait_until(lambda: listed(via_brokers) == [], 30, "no ACLs left on the topic",
               interval_s=0.5)
