"""The kafkalite image's entrypoint (docker/entrypoint.py) with Confluent cp-kafka's KAFKA_*
variables: cp-kafka's naming rule, the variables it leaves out, what it requires, the listeners it
derives, and the precedence of kafkalite's own KAFKALITE_* variables. No Docker needed."""

import importlib.machinery
import importlib.util
from pathlib import Path

import pytest

from kafkalite.config import BROKER_BY_NAME

DOCKER_DIR = Path(__file__).resolve().parents[2] / "docker"
KNOWN = set(BROKER_BY_NAME)


def _load(name):
    loader = importlib.machinery.SourceFileLoader(f"kafkalite_docker_{name}_cp",
                                                  str(DOCKER_DIR / f"{name}.py"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


entrypoint = _load("entrypoint")
healthcheck = _load("healthcheck")

# the broker of Confluent's cp-all-in-one example (ZooKeeper mode), as it is there
CP_ALL_IN_ONE = {
    "KAFKA_BROKER_ID": "1",
    "KAFKA_ZOOKEEPER_CONNECT": "zookeeper:2181",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
    "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://broker:29092,PLAINTEXT_HOST://localhost:9092",
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
    "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    "KAFKA_JMX_PORT": "9101",
    "KAFKA_JMX_HOSTNAME": "localhost",
}


@pytest.mark.parametrize("variable, name", [
    ("KAFKA_BROKER_ID", "broker.id"),
    ("KAFKA_ZOOKEEPER_CONNECT", "zookeeper.connect"),
    ("KAFKA_ADVERTISED_LISTENERS", "advertised.listeners"),
    ("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "listener.security.protocol.map"),
    ("KAFKA_INTER_BROKER_LISTENER_NAME", "inter.broker.listener.name"),
    ("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "offsets.topic.replication.factor"),
    ("KAFKA_LOG_DIRS", "log.dirs"),
    ("KAFKA_LOG_DIR", "log.dir"),
    # __ is a literal _, ___ a -
    ("KAFKA_LISTENER_NAME_SASL__SSL_SCRAM___SHA___256_SASL_JAAS_CONFIG",
     "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config"),
    ("KAFKA_SOME__ODD_KEY", "some_odd.key"),
    # cp-kafka's one name outside the rule
    ("KAFKA_ZOOKEEPER_CLIENT_CNXN_SOCKET", "zookeeper.clientCnxnSocket"),
])
def test_cp_kafka_naming_rule(variable, name):
    assert entrypoint.kafka_setting_name(variable) == name


def test_every_kafkalite_setting_has_a_kafka_variable():
    for name in BROKER_BY_NAME:
        variable = "KAFKA_" + name.upper().replace("-", "___").replace("_", "__").replace(".", "_")
        assert entrypoint.kafka_setting_name(variable) == name


def test_cp_all_in_one_broker():
    result = entrypoint.environment_settings(CP_ALL_IN_ONE, KNOWN)
    assert result.errors == []
    assert result.settings == {
        "advertised.listeners": "PLAINTEXT://broker:29092,PLAINTEXT_HOST://localhost:9092",
        "broker.id": "1",
        "group.initial.rebalance.delay.ms": "0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
        # cp-kafka's default: the advertised listeners, bound to 0.0.0.0 on the same ports
        "listeners": "PLAINTEXT://0.0.0.0:29092,PLAINTEXT_HOST://0.0.0.0:9092",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.replication.factor": "1",
        "zookeeper.connect": "zookeeper:2181",
    }
    assert result.sources["listeners"] == "derived from KAFKA_ADVERTISED_LISTENERS"
    assert result.sources["broker.id"] == "KAFKA_BROKER_ID"
    # JMX is the JVM's: left out, and said so
    assert any("KAFKA_JMX_HOSTNAME (JMX)" in n and "KAFKA_JMX_PORT (JMX)" in n
               for n in result.notes), result.notes
    assert result.log_level is None


@pytest.mark.parametrize("variable", [
    "KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_JMX_OPTS",
    "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_LOGGERS",
    "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_JMX_PORT", "KAFKA_HOME", "KAFKA_DEBUG",
    "KAFKA_LOG4J_ROOT_LOGLEVEL",
])
def test_variables_that_are_no_broker_settings_are_left_out(variable):
    found, ignored, errors = entrypoint.kafka_variables({variable: "-Xmx1G"})
    assert found == {} and errors == []
    if variable != "KAFKA_LOG4J_ROOT_LOGLEVEL":  # that one is the log level
        assert len(ignored) == 1 and ignored[0].startswith(variable + " (")


def test_only_excluded_variables_make_no_cp_mode():
    """KAFKA_HEAP_OPTS alone does not turn on cp-kafka's requirements (a KAFKALITE_* setup)."""
    env = {"KAFKALITE_BROKER_ID": "1", "KAFKA_HEAP_OPTS": "-Xmx1G", "KAFKA_JMX_PORT": "9101"}
    result = entrypoint.environment_settings(env, KNOWN)
    assert result.errors == [] and result.settings == {"broker.id": "1"}


@pytest.mark.parametrize("missing", ["KAFKA_ZOOKEEPER_CONNECT", "KAFKA_ADVERTISED_LISTENERS"])
def test_cp_kafka_requires_zookeeper_and_advertised_listeners(missing):
    env = {k: v for k, v in CP_ALL_IN_ONE.items() if k != missing}
    result = entrypoint.environment_settings(env, KNOWN)
    assert len(result.errors) == 1 and result.errors[0].startswith(f"{missing} is required")


@pytest.mark.parametrize("variable, words", [
    ("KAFKA_PORT", "port is deprecated"),
    ("KAFKA_HOST", "host is deprecated"),
    ("KAFKA_ADVERTISED_PORT", "advertised.port is deprecated"),
    ("KAFKA_ADVERTISED_HOST", "advertised.host is deprecated"),
])
def test_settings_cp_kafka_refuses(variable, words):
    result = entrypoint.environment_settings({**CP_ALL_IN_ONE, variable: "9092"}, KNOWN)
    assert len(result.errors) == 1 and words in result.errors[0]
    assert "KAFKA_ADVERTISED_LISTENERS" in result.errors[0]


def test_a_kubernetes_service_named_kafka_is_not_a_setting():
    links = {"KAFKA_PORT": "tcp://10.0.0.7:9092", "KAFKA_SERVICE_HOST": "10.0.0.7",
             "KAFKA_SERVICE_PORT": "9092", "KAFKA_SERVICE_PORT_BROKER": "9092",
             "KAFKA_PORT_9092_TCP": "tcp://10.0.0.7:9092", "KAFKA_PORT_9092_TCP_ADDR": "10.0.0.7",
             "KAFKA_PORT_9092_TCP_PORT": "9092", "KAFKA_PORT_9092_TCP_PROTO": "tcp"}
    result = entrypoint.environment_settings({"KAFKALITE_BROKER_ID": "3", **links}, KNOWN)
    assert result.errors == [] and result.settings == {"broker.id": "3"}
    assert all(v in result.notes[0] for v in links)


def test_given_listeners_are_kept():
    env = {**CP_ALL_IN_ONE, "KAFKA_LISTENERS": "PLAINTEXT://:29092,PLAINTEXT_HOST://:9092"}
    result = entrypoint.environment_settings(env, KNOWN)
    assert result.settings["listeners"] == "PLAINTEXT://:29092,PLAINTEXT_HOST://:9092"
    assert result.sources["listeners"] == "KAFKA_LISTENERS"


@pytest.mark.parametrize("advertised, listeners", [
    ("PLAINTEXT://broker:29092,PLAINTEXT_HOST://localhost:9092",
     "PLAINTEXT://0.0.0.0:29092,PLAINTEXT_HOST://0.0.0.0:9092"),
    ("SASL_SSL://kafka-1.example.com:9093", "SASL_SSL://0.0.0.0:9093"),
    ("PLAINTEXT://[::1]:9092, INTERNAL://:9094",
     "PLAINTEXT://0.0.0.0:9092,INTERNAL://0.0.0.0:9094"),
])
def test_derived_listeners(advertised, listeners):
    assert entrypoint.derived_listeners(advertised) == listeners


def test_a_malformed_advertised_listener_is_an_error():
    result = entrypoint.environment_settings(
        {**CP_ALL_IN_ONE, "KAFKA_ADVERTISED_LISTENERS": "broker:29092"}, KNOWN)
    assert result.errors and "KAFKA_ADVERTISED_LISTENERS" in result.errors[0]


def test_kafkalite_variables_beat_kafka_variables():
    env = {**CP_ALL_IN_ONE, "KAFKALITE_BROKER_ID": "7",
           "KAFKALITE_ADVERTISED_LISTENERS": "PLAINTEXT://b7:39092,PLAINTEXT_HOST://localhost:19"}
    result = entrypoint.environment_settings(env, KNOWN)
    assert result.settings["broker.id"] == "7"
    assert result.sources["broker.id"] == "KAFKALITE_BROKER_ID"
    # listeners are derived from the advertised listeners that won
    assert result.settings["listeners"] == "PLAINTEXT://0.0.0.0:39092,PLAINTEXT_HOST://0.0.0.0:19"
    assert any(w.startswith("KAFKALITE_BROKER_ID=7 overrides KAFKA_BROKER_ID=1")
               for w in result.warnings), result.warnings
    # the same value twice is no disagreement
    same = entrypoint.environment_settings({**CP_ALL_IN_ONE, "KAFKALITE_BROKER_ID": "1"}, KNOWN)
    assert same.warnings == []


def test_a_name_kafkalite_does_not_know_goes_to_the_broker_with_a_note():
    result = entrypoint.environment_settings(
        {**CP_ALL_IN_ONE, "KAFKA_CONFLUENT_SUPPORT_METRICS_ENABLE": "false"}, {*KNOWN} - {
            "transaction.state.log.min.isr"})
    assert result.settings["confluent.support.metrics.enable"] == "false"
    assert result.settings["transaction.state.log.min.isr"] == "1"
    notes = "\n".join(result.notes)
    assert "KAFKA_CONFLUENT_SUPPORT_METRICS_ENABLE -> confluent.support.metrics.enable" in notes
    assert "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR -> transaction.state.log.min.isr" in notes


@pytest.mark.parametrize("log4j, level", [("WARN", "WARNING"), ("debug", "DEBUG"),
                                          ("TRACE", "DEBUG"), ("INFO", "INFO")])
def test_log4j_root_level_sets_the_log_level(log4j, level):
    result = entrypoint.environment_settings(
        {**CP_ALL_IN_ONE, "KAFKA_LOG4J_ROOT_LOGLEVEL": log4j}, KNOWN)
    assert result.log_level == level and "log4j.root.loglevel" not in result.settings
    own = entrypoint.environment_settings(
        {**CP_ALL_IN_ONE, "KAFKA_LOG4J_ROOT_LOGLEVEL": log4j, "KAFKALITE_LOG_LEVEL": "ERROR"},
        KNOWN)
    assert own.log_level == "ERROR"


def test_broker_command_with_cp_variables(tmp_path, capsys):
    config = tmp_path / "server.properties"
    config.write_text("listeners=PLAINTEXT://:9092\nzookeeper.connect=zookeeper:2181/kafkalite\n")
    env = {"KAFKALITE_CONFIG_FILE": str(config), "KAFKA_BROKER_ID": "1",
           "KAFKA_ZOOKEEPER_CONNECT": "zk:2181",
           "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://broker:29092",
           "KAFKA_LOG4J_ROOT_LOGLEVEL": "WARN", "KAFKA_HEAP_OPTS": "-Xmx1G"}
    command = entrypoint.broker_command([], env)
    assert command == ["kafkalite", "broker", "--config", str(config),
                       "--override", "advertised.listeners=PLAINTEXT://broker:29092",
                       "--override", "broker.id=1",
                       "--override", "listeners=PLAINTEXT://0.0.0.0:29092",
                       "--override", "zookeeper.connect=zk:2181",
                       "--log-level", "WARNING"]
    err = capsys.readouterr().err
    assert "listeners=PLAINTEXT://0.0.0.0:29092 (derived from KAFKA_ADVERTISED_LISTENERS)" in err
    assert "KAFKA_HEAP_OPTS (JVM option)" in err


def test_broker_command_refuses_what_cp_kafka_refuses(tmp_path):
    with pytest.raises(SystemExit, match="KAFKA_ZOOKEEPER_CONNECT is required"):
        entrypoint.broker_command([], {"KAFKALITE_CONFIG_FILE": str(tmp_path / "none"),
                                       "KAFKA_BROKER_ID": "1",
                                       "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://b:9092"})


@pytest.mark.parametrize("env, address", [
    (CP_ALL_IN_ONE, "127.0.0.1:29092"),
    ({**CP_ALL_IN_ONE, "KAFKA_LISTENERS": "PLAINTEXT://:9500"}, "127.0.0.1:9500"),
    ({**CP_ALL_IN_ONE, "KAFKALITE_LISTENERS": "INTERNAL://:9600"}, "127.0.0.1:9600"),
    # KAFKALITE_ADVERTISED_LISTENERS alone keeps the file's listeners (kafkalite's convention)
    ({"KAFKALITE_ADVERTISED_LISTENERS": "PLAINTEXT://b:9700"}, "127.0.0.1:9092"),
])
def test_healthcheck_finds_the_listener(env, address):
    assert healthcheck.default_address(env) == address


def test_healthcheck_broker_id():
    assert entrypoint.broker_id(CP_ALL_IN_ONE) == "1"
    assert entrypoint.broker_id({**CP_ALL_IN_ONE, "KAFKALITE_BROKER_ID": "4"}) == "4"
