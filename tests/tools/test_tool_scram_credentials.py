"""SCRAM credentials through the brokers (KIP-554), with Kafka 2.8.2's kafka-configs and
confluent-kafka's AdminClient (librdkafka), on kafkalite and on the Apache Kafka oracle alike, and
a credential set this way logging a SASL/SCRAM client in on a secured kafkalite broker.

kafka-configs --bootstrap-server --alter sends AlterUserScramCredentials to the controller (the
salted password, never the password); what it wrote is read back with librdkafka's
describe_user_scram_credentials, and, on the secured cluster, by logging in.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialDeletion, UserScramCredentialUpsertion)
from kafka_tool_checks import KAFKA, KAFKALITE, tool, unique

from kafkalite.local.cluster import wait_until

pytestmark = [pytest.mark.integration]

ORACLE_FIRST = (KAFKA, KAFKALITE)


@pytest.fixture(scope="module")
def secure(zookeeper, tmp_path_factory):
    """One broker (so the controller) with SASL_SSL/SCRAM-SHA-512 beside a PLAINTEXT listener
    whose ANONYMOUS user is a super user, for the tools to administer it."""
    from kafkalite.testing.secure_cluster import secure_cluster

    with secure_cluster(zookeeper, str(tmp_path_factory.mktemp("scram-api")), num_brokers=1,
                        name="scram-api") as cluster:
        yield cluster


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def _described(client: AdminClient, users: list[str]) -> dict:
    """``{user: [[mechanism, iterations], ...]}`` or ``{user: error name}``."""
    out = {}
    for user, future in client.describe_user_scram_credentials(users).items():
        try:
            infos = future.result(30).scram_credential_infos
        except KafkaException as exc:
            out[user] = exc.args[0].name()
        else:
            out[user] = sorted([i.mechanism.name, i.iterations] for i in infos)
    return out


def _altered(client: AdminClient, alterations) -> dict:
    out = {}
    for user, future in client.alter_user_scram_credentials(alterations).items():
        try:
            future.result(30)
            out[user] = "ok"
        except KafkaException as exc:
            out[user] = exc.args[0].name()
    return out


def test_kafka_configs_alters_and_librdkafka_describes(kafka_systems):
    """kafka-configs adds SCRAM-SHA-256 (8192 iterations) and SCRAM-SHA-512 for a user and
    deletes one; librdkafka describes each state; both systems answer alike."""
    user = unique("erin")
    outputs = {}
    for name in ORACLE_FIRST:
        bs = kafka_systems[name].bootstrap_servers
        client = _admin(bs)
        base = ["kafka-configs", "--bootstrap-server", bs, "--entity-type", "users",
                "--entity-name", user]
        added = tool(*base, "--alter", "--add-config",
                     "SCRAM-SHA-256=[iterations=8192,password=erin-secret],"
                     "SCRAM-SHA-512=[password=erin-secret]")
        both = _described(client, [user])
        removed = tool(*base, "--alter", "--delete-config", "SCRAM-SHA-512")
        one = _described(client, [user])
        missing = tool(*base, "--alter", "--delete-config", "SCRAM-SHA-512", ok=False)
        outputs[name] = [added.stdout, both, removed.stdout, one, missing.returncode,
                         "ResourceNotFoundException" in missing.stdout + missing.stderr,
                         _described(client, [unique("nobody")]).popitem()[1]]
    assert outputs[KAFKA] == [
        f"Completed updating config for user {user}.\n",
        {user: [["SCRAM_SHA_256", 8192], ["SCRAM_SHA_512", 4096]]},
        f"Completed updating config for user {user}.\n",
        {user: [["SCRAM_SHA_256", 8192]]}, 1, True, "RESOURCE_NOT_FOUND"]
    assert outputs[KAFKALITE] == outputs[KAFKA]


def test_librdkafka_alterations_and_their_refusals(kafka_systems):
    """alter_user_scram_credentials from librdkafka: an upsertion, and the ones Kafka refuses
    (iterations out of [4096, 16384], a credential altered twice in one request)."""
    users = {k: unique(k) for k in ("ok", "few", "many", "twice")}
    sha256 = ScramMechanism.SCRAM_SHA_256

    def upsert(user, iterations):
        return UserScramCredentialUpsertion(user, ScramCredentialInfo(sha256, iterations),
                                            b"secret")
    outputs = {}
    for name in ORACLE_FIRST:
        client = _admin(kafka_systems[name].bootstrap_servers)
        outputs[name] = [_altered(client, [
            upsert(users["ok"], 4096), upsert(users["few"], 4095), upsert(users["many"], 16385),
            upsert(users["twice"], 4096),
            UserScramCredentialDeletion(users["twice"], sha256)]),
            _described(client, list(users.values()))]
    assert outputs[KAFKA][0] == {users["ok"]: "ok", users["few"]: "UNACCEPTABLE_CREDENTIAL",
                                 users["many"]: "UNACCEPTABLE_CREDENTIAL",
                                 users["twice"]: "DUPLICATE_RESOURCE"}
    assert outputs[KAFKALITE] == outputs[KAFKA]


def _logs_in(secure, user: str, password: str) -> bool:
    """Whether librdkafka authenticates as ``user`` over SASL_SSL/SCRAM-SHA-512."""
    client = AdminClient(secure.librdkafka(user, password, log_level=0))
    try:
        client.list_topics(timeout=3)
        return True
    except KafkaException:
        return False


def test_a_credential_set_through_the_brokers_logs_in(secure):
    """A credential kafka-configs --bootstrap-server sets lets the user in over SASL/SCRAM with
    that password only; librdkafka's upsertion changes the password, its deletion locks the
    user out (each change reaching the broker's credentials through /config/changes)."""
    user, first, second = unique("frank"), "frank-secret", "frank-second"
    bs = secure.cluster.bootstrap_servers              # PLAINTEXT: ANONYMOUS is a super user
    added = tool("kafka-configs", "--bootstrap-server", bs, "--alter", "--add-config",
                 f"SCRAM-SHA-512=[iterations=8192,password={first}]", "--entity-type", "users",
                 "--entity-name", user)
    assert added.stdout == f"Completed updating config for user {user}.\n"
    wait_until(lambda: _logs_in(secure, user, first), 30, f"{user} to log in", interval_s=0.2)
    assert not _logs_in(secure, user, "wrong-password")
    client = _admin(bs)
    assert _described(client, [user]) == {user: [["SCRAM_SHA_512", 8192]]}
    sha512 = ScramMechanism.SCRAM_SHA_512
    assert _altered(client, [UserScramCredentialUpsertion(
        user, ScramCredentialInfo(sha512, 4096), second.encode())]) == {user: "ok"}
    wait_until(lambda: _logs_in(secure, user, second), 30, f"{user}'s new password",
               interval_s=0.2)
    assert not _logs_in(secure, user, first)
    assert _altered(client, [UserScramCredentialDeletion(user, sha512)]) == {user: "ok"}
    wait_until(lambda: not _logs_in(secure, user, second), 30, f"{user} locked out",
               interval_s=0.2)
