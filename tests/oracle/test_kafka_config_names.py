"""Kafka 2.8.2's own config names, asked of its jars, are all known to kafkalite's table.

A small Java program (run as a single source file, ``java -cp libs/* Names.java``) prints
``kafka.server.KafkaConfig.configNames`` (every broker config, the KRaft early-access ones that
KafkaConfig's HTML listing leaves out included) and ``kafka.log.LogConfig.configNames``. The test
fails when a name is neither applied by kafkalite nor in its no-effect table, and when
``tests/data/kafka-2.8.2-config-names.txt`` (what the unit tests read) differs from the jars.
It fails, never skips, without the jars: ``libs_dir()`` names the command that fetches them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kafkalite.config import BROKER_BY_NAME, BROKER_NO_EFFECT, TOPIC_BY_NAME, TOPIC_NO_EFFECT
from kafkalite.testing.apache_kafka import java_command, libs_dir

pytestmark = [pytest.mark.integration]

NAMES_FILE = Path(__file__).resolve().parents[1] / "data" / "kafka-2.8.2-config-names.txt"

_PROGRAM = """
public class KafkaConfigNames {
    public static void main(String[] args) {
        scala.collection.Iterator<String> broker = kafka.server.KafkaConfig.configNames().iterator();
        while (broker.hasNext()) System.out.println("broker " + broker.next());
        scala.collection.Iterator<String> topic = kafka.log.LogConfig.configNames().iterator();
        while (topic.hasNext()) System.out.println("topic " + topic.next());
    }
}
"""


def _kafka_names(tmp_path: Path) -> list[str]:
    libs_dir()                       # ApacheKafkaNotFoundError naming the fix, when not fetched
    source = tmp_path / "KafkaConfigNames.java"
    source.write_text(_PROGRAM)
    proc = subprocess.run(java_command(str(source)), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"Kafka's config listing failed:\n{proc.stderr}"
    return proc.stdout.splitlines()


def test_every_kafka_config_name_is_known_to_kafkalite(tmp_path):
    lines = _kafka_names(tmp_path)
    broker = [line.split()[1] for line in lines if line.startswith("broker ")]
    topic = [line.split()[1] for line in lines if line.startswith("topic ")]
    assert len(broker) > 200 and len(topic) > 20, lines
    unknown_broker = sorted(set(broker) - set(BROKER_BY_NAME) - set(BROKER_NO_EFFECT))
    unknown_topic = sorted(set(topic) - set(TOPIC_BY_NAME) - set(TOPIC_NO_EFFECT))
    assert (unknown_broker, unknown_topic) == ([], []), (
        "Kafka config names neither applied (kafkalite/config.py) nor listed without effect "
        "(kafkalite/config_kafka_names.py)")
    assert set(BROKER_NO_EFFECT) <= set(broker) and set(TOPIC_NO_EFFECT) <= set(topic)
    committed = [line for line in NAMES_FILE.read_text().splitlines()
                 if not line.startswith("#")]
    assert committed == lines, f"{NAMES_FILE} differs from Kafka's jars"
