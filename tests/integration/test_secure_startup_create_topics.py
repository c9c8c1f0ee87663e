"""CreateTopics sent as a secured broker starts is answered (issue 24, bug 3).

The issue's setup: one broker, a SASL_SSL listener with SCRAM-SHA-512 beside a PLAINTEXT
inter-broker listener, AclAuthorizer with ``super.users=User:admin;User:ANONYMOUS`` and
``allow.everyone.if.no.acl.found=false``, a PEM keystore. A confluent-kafka AdminClient as
``admin`` sent CreateTopics right after start-up and got no answer in 60 s, 1 run in 5: its
first Metadata reached the broker before the controller's first UpdateMetadata, answered with
no broker and no controller, and librdkafka then waited for a controller it did not ask about
again. Here the client is made while the broker process is still starting (it connects as soon
as the port opens, reconnecting every 10 ms), in several start-ups; confluent-kafka judges: the
topic is created and each partition has a leader, within the client's request timeout.
"""

from __future__ import annotations

import os

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.local.cluster import LocalCluster
from kafkalite.local.ports import free_port
from kafkalite.testing.secure_cluster import SecureCluster, _secure_settings

pytestmark = pytest.mark.integration

STARTUPS = 6
REQUEST_TIMEOUT_S = 20


@pytest.mark.parametrize("run", range(STARTUPS))
def test_create_topics_as_a_secured_broker_starts_is_answered(zookeeper, tmp_path, run):
    workdir = str(tmp_path)
    zk_connect, ca, _cert, settings = _secure_settings(zookeeper, workdir, 1, f"boot{run}",
                                                       "PLAINTEXT", None)
    settings["allow.everyone.if.no.acl.found"] = "false"
    cluster = LocalCluster(zk_connect, 1, workdir=os.path.join(workdir, "cluster"),
                           overrides=settings)
    broker = cluster.brokers[1]
    secure_port = free_port()
    broker.overrides["listeners"] = (f"PLAINTEXT://127.0.0.1:{broker.port},"
                                     f"SASL_SSL://127.0.0.1:{secure_port}")
    sc = SecureCluster(cluster, zk_connect, ca.cert_path, {1: secure_port}, workdir)
    cluster.spawn()                       # not waited for: the client races the start-up
    try:
        admin = AdminClient(sc.librdkafka("admin", **{
            "socket.timeout.ms": REQUEST_TIMEOUT_S * 1000, "reconnect.backoff.ms": 10,
            "reconnect.backoff.max.ms": 10, "log_level": 0}))
        topic = f"boot-{run}"
        future = admin.create_topics([NewTopic(topic, 3, 1)],
                                     request_timeout=REQUEST_TIMEOUT_S)[topic]
        try:
            future.result(timeout=2 * REQUEST_TIMEOUT_S)      # raises on any error
        except Exception as exc:
            raise AssertionError(f"CreateTopics: {exc}\n{cluster.describe_logs()}") from exc
        described = admin.list_topics(topic, timeout=REQUEST_TIMEOUT_S).topics[topic]
        assert described.error is None
        assert sorted(described.partitions) == [0, 1, 2]
        assert all(p.leader == 1 for p in described.partitions.values())
    finally:
        cluster.stop()
