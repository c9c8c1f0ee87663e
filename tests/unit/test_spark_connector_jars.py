"""spark_integration.kafka_connector: where Spark's Kafka connector's jars are found, how they join
spark.jars, and the pinned pom that fetches only what pyspark lacks."""

from __future__ import annotations

import pathlib
import xml.etree.ElementTree as ET

import pytest

from spark_integration import kafka_connector

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_missing_jars_name_the_fetch_script(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKALITE_SPARK_KAFKA_HOME", str(tmp_path))
    (tmp_path / "jars").mkdir()
    (tmp_path / "jars" / "kafka-clients-3.9.2.jar").write_bytes(b"")   # the connector is not
    with pytest.raises(kafka_connector.ConnectorNotFoundError, match="fetch_spark_kafka.sh"):
        kafka_connector.connector_jars()
    assert not kafka_connector.connector_available()


def test_jars_join_spark_jars_once(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKALITE_SPARK_KAFKA_HOME", str(tmp_path))
    jars = tmp_path / "jars"
    jars.mkdir()
    names = ["commons-pool2-2.13.1.jar", "kafka-clients-3.9.2.jar",
             "spark-sql-kafka-0-10_2.13-4.2.0.jar", "spark-token-provider-kafka-0-10_2.13-4.2.0.jar"]
    for name in names:
        (jars / name).write_bytes(b"")
    found = kafka_connector.connector_jars()
    assert found == [str(jars / n) for n in names]
    conf = kafka_connector.with_connector({"spark.jars": f"/other.jar,{found[1]}", "x": "1"})
    assert conf["x"] == "1"
    assert conf["spark.jars"].split(",") == ["/other.jar", found[1], found[0], *found[2:]]
    assert kafka_connector.with_connector()["spark.jars"].split(",") == found


def test_pom_pins_the_connector_and_only_what_pyspark_lacks():
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    pom = ET.parse(ROOT / "jvm" / "spark-kafka" / "pom.xml").getroot()
    props = {p.tag.split("}")[1]: p.text for p in pom.find("m:properties", ns)}
    deps = {}
    for dep in pom.iterfind("m:dependencies/m:dependency", ns):
        version = dep.findtext("m:version", namespaces=ns)
        version = props.get(version[2:-1], version) if version.startswith("${") else version
        excluded = {(e.findtext("m:groupId", namespaces=ns), e.findtext("m:artifactId",
                                                                        namespaces=ns))
                    for e in dep.iterfind("m:exclusions/m:exclusion", ns)}
        assert excluded == {("*", "*")}, dep.findtext("m:artifactId", namespaces=ns)
        deps[dep.findtext("m:artifactId", namespaces=ns)] = version
    assert deps == {"spark-sql-kafka-0-10_2.13": "4.2.0",
                    "spark-token-provider-kafka-0-10_2.13": "4.2.0",
                    "kafka-clients": "3.9.2", "commons-pool2": "2.13.1"}
    assert kafka_connector.CONNECTOR.endswith(":4.2.0")


@pytest.mark.parametrize("subcommand", ["run", "demo"])
def test_pipeline_cli_without_the_jars_says_how_to_fetch_them(subcommand, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from kafkalite.cli.pipeline import command
    from spark_integration.session import spark_unavailable_reason

    assert spark_unavailable_reason() is None, spark_unavailable_reason()
    monkeypatch.setenv("KAFKALITE_SPARK_KAFKA_HOME", str(tmp_path))
    result = CliRunner().invoke(command, [subcommand, "--bootstrap-server", "127.0.0.1:1",
                                          "--connector", "kafka"])
    assert result.exit_code == 1 and "scripts/fetch_spark_kafka.sh" in result.output, \
        result.output
    result = CliRunner().invoke(command, [subcommand, "--connector", "confluent"])
    assert result.exit_code == 2 and "'kafkalite', 'kafka'" in result.output, result.output
