"""Topic config names in CreateTopics and AlterConfigs, through confluent-kafka, on both systems.

Kafka 2.8 refuses an unknown topic config name with INVALID_CONFIG "Unknown topic config name: x"
(``LogConfig.validateNames``) and accepts every name of its own, applied or not; kafkalite answers
the same, adding the closest known name to the message, and accepts Kafka's topic configs it does
not apply (``preallocate``, ``segment.jitter.ms``, ...).
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from kafkalite.testing.oracle_fixtures import SYSTEMS

pytestmark = [pytest.mark.integration]


def _refusal(future) -> KafkaError:
    with pytest.raises(KafkaException) as refused:
        future.result(30)
    return refused.value.args[0]


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_unknown_topic_config_is_refused_and_kafkas_own_are_accepted(system):
    admin = AdminClient({"bootstrap.servers": system.bootstrap_servers})
    bad = f"bad-config-{uuid.uuid4().hex[:8]}"
    error = _refusal(admin.create_topics(
        [NewTopic(bad, 1, 1, config={"retention.msec": "1"})])[bad])
    assert error.code() == KafkaError.INVALID_CONFIG, error
    assert error.str().startswith("Unknown topic config name: retention.msec"), error.str()

    good = f"kafka-configs-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(good, 1, 1, config={
        "preallocate": "true", "segment.jitter.ms": "10", "min.compaction.lag.ms": "0",
        "retention.ms": "60000"})])[good].result(30)

    resource = ConfigResource(ConfigResource.Type.TOPIC, good,
                              set_config={"retention.ms": "60000", "segmnt.bytes": "100000"})
    error = _refusal(admin.alter_configs([resource])[resource])
    assert error.code() == KafkaError.INVALID_CONFIG, error
    assert error.str().startswith("Unknown topic config name: segmnt.bytes"), error.str()

    resource = ConfigResource(ConfigResource.Type.TOPIC, good,
                              set_config={"retention.ms": "120000", "preallocate": "false"})
    admin.alter_configs([resource])[resource].result(30)
