"""Kafka 2.8.2's kafka-configs on client quotas (KIP-13, KIP-55, KIP-546) against a 3-broker
kafkalite cluster and Apache Kafka 2.8, same commands, same output: users, client ids, (user,
client-id) pairs and their defaults through the brokers (AlterClientQuotas /
DescribeClientQuotas), and through ZooKeeper (``--zookeeper``) both ways, which shows the znodes
are Kafka's.

The clusters are shared: every entity is named uniquely, and the default quotas set here are
huge (they must not throttle Apache Kafka's other tests) and removed again.
"""

from __future__ import annotations

import pytest
from kafka_tool_checks import KAFKA, KAFKALITE, tool, unique, zk_address

pytestmark = [pytest.mark.integration]


def _lines(text: str, *needles: str) -> list[str]:
    """The lines naming one of ``needles`` (other tests' entities are left out), sorted."""
    return sorted(line for line in text.splitlines() if any(n in line for n in needles))


def test_users_clients_pairs_and_defaults_through_the_brokers(kafka_systems):
    user, client = unique("qu"), unique("qc")
    outputs = {}
    for name in (KAFKA, KAFKALITE):
        base = ["kafka-configs", "--bootstrap-server", kafka_systems[name].bootstrap_servers]
        pair = ["--entity-type", "users", "--entity-name", user, "--entity-type", "clients",
                "--entity-name", client]
        user_default = ["--entity-type", "users", "--entity-default"]
        run = []
        try:
            for entity, config in (
                    (pair, "producer_byte_rate=1048576,request_percentage=12.5"),
                    (["--entity-type", "users", "--entity-name", user],
                     "consumer_byte_rate=4096"),
                    (["--entity-type", "clients", "--entity-name", client],
                     "controller_mutation_rate=10000000"),
                    (user_default, "producer_byte_rate=9000000000000"),
                    (["--entity-type", "users", "--entity-name", user, "--entity-type",
                      "clients", "--entity-default"], "consumer_byte_rate=123")):
                run.append(tool(*base, "--alter", "--add-config", config, *entity).stdout)
            run.append(tool(*base, "--describe", *pair).stdout)
            run.append(_lines(tool(*base, "--describe", "--entity-type", "users").stdout,
                              user, "default"))
            run.append(_lines(tool(*base, "--describe", "--entity-type", "clients").stdout,
                              client))
            run.append(_lines(tool(*base, "--describe", "--entity-type", "users",
                                   "--entity-type", "clients").stdout, user, client))
            run.append(tool(*base, "--describe", *user_default).stdout)
            run.append(tool(*base, "--alter", "--delete-config", "request_percentage",
                            *pair).stdout)
            run.append(tool(*base, "--describe", *pair).stdout)
            # a key that is no quota: refused by the tool before any request
            bad = tool(*base, "--alter", "--add-config", "retention.ms=5", *pair, ok=False)
            run.append((bad.returncode, bad.stdout.splitlines()[:1]))
        finally:
            tool(*base, "--alter", "--delete-config", "producer_byte_rate", *user_default)
        run.append(tool(*base, "--describe", *user_default).stdout)
        outputs[name] = run
    assert outputs[KAFKA][5] == (
        f"Quota configs for user-principal '{user}', client-id '{client}' are "
        "request_percentage=12.5, producer_byte_rate=1048576.0\n")
    assert outputs[KAFKALITE] == outputs[KAFKA]


def test_quotas_through_zookeeper_and_the_brokers(kafka_systems, zookeeper, apache_kafka,
                                                  shared_kafkalite):
    """Quotas kafka-configs --zookeeper writes are served by DescribeClientQuotas, and those
    AlterClientQuotas writes are read by kafka-configs --zookeeper: the same znodes."""
    user, client = unique("zu"), unique("zc")
    outputs = {}
    for name, cluster in ((KAFKA, apache_kafka), (KAFKALITE, shared_kafkalite)):
        via_zk = ["kafka-configs", "--zookeeper", zk_address(zookeeper, cluster)]
        via_brokers = ["kafka-configs", "--bootstrap-server", cluster.bootstrap_servers]
        as_user = ["--entity-type", "users", "--entity-name", user]
        as_client = ["--entity-type", "clients", "--entity-name", client]
        run = [tool(*via_zk, "--alter", "--add-config", "producer_byte_rate=2048", *as_user,
                    "--entity-type", "clients", "--entity-name", client).stdout,
               tool(*via_zk, "--alter", "--add-config", "consumer_byte_rate=1024",
                    *as_client).stdout]
        run.append(tool(*via_brokers, "--describe", *as_user, "--entity-type", "clients",
                        "--entity-name", client).stdout)
        run.append(tool(*via_brokers, "--describe", *as_client).stdout)
        run.append(tool(*via_brokers, "--alter", "--add-config",
                        "request_percentage=50,consumer_byte_rate=512", *as_user).stdout)
        run.append(tool(*via_zk, "--describe", *as_user).stdout)
        run.append(tool(*via_brokers, "--alter", "--add-config", "producer_byte_rate=77",
                        *as_client).stdout)
        run.append(tool(*via_zk, "--describe", *as_client).stdout)
        outputs[name] = run
    assert outputs[KAFKA][3] == (f"Quota configs for client-id '{client}' are "
                                 "consumer_byte_rate=1024.0\n")
    assert outputs[KAFKALITE] == outputs[KAFKA]
