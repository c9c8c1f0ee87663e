"""AclAuthorizer's settings given in server.properties, as a broker's DescribeConfigs lists them:
one broker of each system with ``super.users``, ``allow.everyone.if.no.acl.found`` and a
custom name. Kafka 2.8 lists every name it was given (its ``originals``); these are no
KafkaConfig's, so it knows no type for them and treats them as sensitive: value hidden,
type UNKNOWN, source STATIC_BROKER_CONFIG. kafkalite must answer the same, and list the same
names otherwise.
"""

from __future__ import annotations

import signal

import pytest
from confluent_kafka.admin import AdminClient

from kafkalite.testing.apache_kafka import ApacheKafkaCluster
from kafkalite.local.cluster import LocalCluster
from kafkalite.testing.conformance import raw
from kafkalite.testing.conformance.clusters import authorizer_settings
from kafkalite.testing.oracle_fixtures import side_by_side
from kafkalite.local.zookeeper import create_chroots

pytestmark = [pytest.mark.integration]

STATIC, UNKNOWN = 4, 0


def _broker_configs(bootstrap: str) -> dict:
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30)
    [(broker_id, broker)] = metadata.brokers.items()
    answer = raw.call(f"{broker.host}:{broker.port}", 32, 4, {
        "resources": [{"resource_type": 4, "resource_name": str(broker_id),
                       "configuration_keys": None}],
        "include_synonyms": True, "include_documentation": False})
    return {c["name"]: (c["value"], c["config_source"], c["read_only"], c["is_sensitive"],
                        c["config_type"], [(s["name"], s["value"], s["source"])
                                           for s in c["synonyms"]])
            for c in answer["results"][0]["configs"]}


def test_authorizer_settings_are_listed_as_kafka_lists_them(zookeeper, tmp_path):
    settings = {**authorizer_settings(), "super.users": "User:admin;User:bob",
                "custom.setting": "x"}
    kl_root, ak_root = create_chroots(zookeeper.connect_string, "kl-authz-described",
                                      "ak-authz-described")
    kafkalite = LocalCluster(f"{zookeeper.connect_string}{kl_root}", 1,
                             workdir=str(tmp_path / "kafkalite"), overrides=dict(settings),
                             die_with_parent=signal.SIGKILL)
    kafka = ApacheKafkaCluster(f"{zookeeper.connect_string}{ak_root}", 1,
                               workdir=str(tmp_path / "kafka"), overrides=dict(settings))
    answers = {}
    with side_by_side(kafkalite, kafka):
        for name, cluster in (("kafka", kafka), ("kafkalite", kafkalite)):
            answers[name] = _broker_configs(cluster.bootstrap_servers)
    for name, configs in answers.items():
        for setting in ("super.users", "allow.everyone.if.no.acl.found", "custom.setting"):
            assert configs[setting] == (None, STATIC, True, True, UNKNOWN,
                                        [(setting, None, STATIC)]), (name, setting)
        assert "zookeeper.auth.digest" not in configs, name
    assert set(answers["kafkalite"]) == set(answers["kafka"])
