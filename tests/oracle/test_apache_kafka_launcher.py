"""The oracle's launcher: Apache Kafka 2.8.2 brokers beside kafkalite's, on one ZooKeeper.

Read through confluent-kafka (an independent client): both systems list 3 brokers, and a Kafka
broker killed with kill -9 comes back on its port and rejoins the ISR of a replicated topic.
"""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.testing.apache_kafka import ApacheKafkaCluster, run_tool
from kafkalite.local.cluster import wait_until
from kafkalite.testing.oracle_fixtures import SYSTEMS

pytestmark = [pytest.mark.integration]


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_both_systems_list_three_brokers(system):
    admin = AdminClient({"bootstrap.servers": system.bootstrap_servers})
    brokers = admin.list_topics(timeout=10).brokers
    assert sorted(brokers) == [1, 2, 3]
    assert {f"{b.host}:{b.port}" for b in brokers.values()} == set(
        system.bootstrap_servers.split(","))


def test_kafka_tool_answers_with_apache_kafkas_version(apache_kafka):
    proc = run_tool("kafka-topics", "--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith("2.8.2"), proc.stdout


def test_killed_kafka_broker_restarts_and_rejoins_isr(zookeeper, tmp_path):
    """A cluster of its own: killing a broker of the shared oracle would disturb other tests."""
    from kafkalite.testing.oracle_fixtures import session_chroot

    chroot = session_chroot(zookeeper, "apache-kafka-kill")
    with ApacheKafkaCluster(f"{zookeeper.connect_string}{chroot}", 2,
                            workdir=str(tmp_path)) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("k", 1, 2)])["k"].result(30)

        def isr():
            md = admin.list_topics("k", timeout=5).topics["k"].partitions[0]
            return sorted(md.isrs)

        wait_until(lambda: isr() == [1, 2], 60, "ISR [1, 2]")
        pid = cluster.brokers[2].pid
        cluster.kill(2)
        assert not cluster.brokers[2].running
        wait_until(lambda: isr() == [1], 60, "broker 2 out of the ISR")
        cluster.restart(2)
        assert cluster.brokers[2].pid != pid
        wait_until(lambda: isr() == [1, 2], 60, "broker 2 back in the ISR")
