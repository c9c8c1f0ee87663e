"""Kafka 2.8.2's config definitions in ``kafkalite/config_kafka_table.py`` are its jars' own.

A small Java program (run as a single source file, ``java -cp libs/* KafkaConfigTable.java``)
prints every broker config of ``kafka.server.KafkaConfig``'s ConfigDef (type, internal or not,
in ``DynamicBrokerConfig.AllDynamicConfigs`` or not, default), the dynamic-only broker configs
of ``DynamicConfig.Broker`` and every topic config of ``kafka.log.LogConfig`` (type, broker
synonym, default). The test fails when the committed rows differ (the unit tests check the rest
of kafkalite against the rows: ``tests/unit/test_config_describe.py``). It fails, never skips,
without the jars: ``libs_dir()`` names the command that fetches them.

Run as a script (``.venv/bin/python tests/oracle/test_kafka_config_table.py``) it prints the
rows to paste into the module.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from kafkalite.config_kafka_table import table_lines
from kafkalite.testing.apache_kafka import java_command, libs_dir

pytestmark = [pytest.mark.integration]

_PROGRAM = """
import java.util.*;
import org.apache.kafka.common.config.ConfigDef;

public class KafkaConfigTable {
    static String render(ConfigDef.ConfigKey key) {
        if (key.defaultValue == ConfigDef.NO_DEFAULT_VALUE) return "<required>";
        if (key.defaultValue == null) return "<null>";
        String text = ConfigDef.convertToString(key.defaultValue, key.type);
        return text.isEmpty() ? "<empty>" : text;
    }
    static String internal(ConfigDef.ConfigKey key) {
        return key.internalConfig ? "internal" : "public";
    }
    public static void main(String[] args) throws Exception {
        Map<String, ConfigDef.ConfigKey> broker =
            kafka.server.KafkaConfig$.MODULE$.configDef().configKeys();
        scala.collection.Set<String> dynamic =
            kafka.server.DynamicBrokerConfig$.MODULE$.AllDynamicConfigs();
        for (String name : new TreeSet<>(broker.keySet())) {
            ConfigDef.ConfigKey key = broker.get(name);
            System.out.println("broker " + name + " " + key.type + " " + internal(key) + " "
                + (dynamic.contains(name) ? "dynamic" : "static") + " " + render(key));
        }
        Object module = Class.forName("kafka.server.DynamicConfig$Broker$")
            .getField("MODULE$").get(null);
        Map<String, ConfigDef.ConfigKey> only = ((ConfigDef) module.getClass()
            .getMethod("brokerConfigDef").invoke(module)).configKeys();
        for (String name : new TreeSet<>(only.keySet())) {
            if (broker.containsKey(name)) continue;
            ConfigDef.ConfigKey key = only.get(name);
            System.out.println("dynamic-only " + name + " " + key.type + " public dynamic "
                + render(key));
        }
        Map<String, ConfigDef.ConfigKey> topic =
            kafka.log.LogConfig$.MODULE$.configDefCopy().configKeys();
        for (String name : new TreeSet<>(topic.keySet())) {
            ConfigDef.ConfigKey key = topic.get(name);
            scala.Option<String> synonym = kafka.log.LogConfig$.MODULE$.TopicConfigSynonyms()
                .get(name);
            System.out.println("topic " + name + " " + key.type + " " + internal(key) + " "
                + (synonym.isDefined() ? synonym.get() : "-") + " " + render(key));
        }
    }
}
"""


def kafka_rows(workdir: Path) -> list[str]:
    libs_dir()                       # ApacheKafkaNotFoundError naming the fix, when not fetched
    source = workdir / "KafkaConfigTable.java"
    source.write_text(_PROGRAM)
    proc = subprocess.run(java_command(str(source)), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"Kafka's config table failed:\n{proc.stderr}"
    return proc.stdout.splitlines()


def test_committed_table_is_kafkas(tmp_path):
    rows = kafka_rows(tmp_path)
    assert len(rows) > 250, rows
    assert table_lines() == rows, (
        "kafkalite/config_kafka_table.py differs from Kafka's jars: run this file as a script "
        "and paste its output into _ROWS")


def _as_python(rows: list[str]) -> str:
    out = []
    for row in rows:
        if len(row) + 8 <= 100:
            out.append(f'    "{row}",')
        else:
            head, _, default = row.rpartition(" ")
            out.append(f'    "{head} "\n    "{default}",')
    return "\n".join(out)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        sys.stdout.write(_as_python(kafka_rows(Path(tmp))) + "\n")
