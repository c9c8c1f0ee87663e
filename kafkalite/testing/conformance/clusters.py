"""The authorizer pair: one kafkalite broker and one Apache Kafka broker with an ACL authorizer.

ACL refusals need brokers started with ``authorizer.class.name``, which the session's shared
clusters must not have (every other test would need ACLs). So the ACL scenarios get a pair of
their own: one broker of each system, Kafka's AclAuthorizer (kafkalite serves the same class
name with its own), ``allow.everyone.if.no.acl.found=true`` so that everything no ACL names
stays allowed, and the shared settings with replication brought down to one broker. Clients
connect over PLAINTEXT, as ``User:ANONYMOUS``: a scenario denies that principal what it asks
about, on resources named by its own prefix.
"""

from __future__ import annotations

import os
import signal
from typing import Any

AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"


def authorizer_settings() -> dict[str, Any]:
    from kafkalite.testing.oracle_fixtures import SHARED_SETTINGS

    return {**SHARED_SETTINGS, "authorizer.class.name": AUTHORIZER,
            "allow.everyone.if.no.acl.found": "true", "default.replication.factor": 1,
            "min.insync.replicas": 1, "offsets.topic.replication.factor": 1,
            "offsets.topic.num.partitions": 5}


class AuthorizerPair:
    """One broker of each system with an authorizer, on chroots of ``zk_connect_base``'s
    ZooKeeper; ``servers`` is {system: bootstrap servers} once started."""

    def __init__(self, zk_connect_base: str, workdir: str):
        from kafkalite.testing.apache_kafka import ApacheKafkaCluster
        from kafkalite.local.cluster import LocalCluster
        from kafkalite.local.zookeeper import create_chroots

        chroots = create_chroots(zk_connect_base, "kl-authorizer", "ak-authorizer")
        settings = authorizer_settings()
        self.kafkalite = LocalCluster(f"{zk_connect_base}{chroots[0]}", 1,
                                      workdir=os.path.join(workdir, "kafkalite-authorizer"),
                                      overrides=dict(settings), die_with_parent=signal.SIGKILL)
        self.kafka = ApacheKafkaCluster(f"{zk_connect_base}{chroots[1]}", 1,
                                        workdir=os.path.join(workdir, "kafka-authorizer"),
                                        overrides=dict(settings))

    def start(self) -> "AuthorizerPair":
        self.kafkalite.spawn()
        try:
            self.kafka.start()
            self.kafkalite.wait_for_brokers(list(self.kafkalite.brokers))
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def servers(self) -> dict[str, str]:
        return {"kafkalite": self.kafkalite.bootstrap_servers,
                "kafka": self.kafka.bootstrap_servers}

    def describe_logs(self) -> str:
        return self.kafkalite.describe_logs() + "\n" + self.kafka.describe_logs()

    def stop(self) -> None:
        self.kafkalite.stop()
        self.kafka.stop()
