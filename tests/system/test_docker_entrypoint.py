"""The kafkalite image's entrypoint (docker/entrypoint.py) and healthcheck defaults, without Docker:
how KAFKALITE_* variables become broker settings."""

import importlib.util
from pathlib import Path

import pytest

from kafkalite.config import BROKER_BY_NAME

DOCKER_DIR = Path(__file__).resolve().parents[2] / "docker"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"kafkalite_docker_{name}",
                                                  DOCKER_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


entrypoint = _load("entrypoint")
healthcheck = _load("healthcheck")


@pytest.mark.parametrize("suffix, name", [
    ("BROKER_ID", "broker.id"),
    ("ZOOKEEPER_CONNECT", "zookeeper.connect"),
    ("ADVERTISED_LISTENERS", "advertised.listeners"),
    ("INTER_BROKER_LISTENER_NAME", "inter.broker.listener.name"),
    ("SOME__ODD_KEY", "some_odd.key"),
])
def test_variable_names_map_to_settings(suffix, name):
    assert entrypoint.setting_name(suffix) == name


def test_every_broker_setting_has_a_variable():
    for name in BROKER_BY_NAME:
        variable = "KAFKALITE_" + name.upper().replace("_", "__").replace(".", "_")
        overrides, warnings = entrypoint.broker_overrides({variable: "x"}, set(BROKER_BY_NAME))
        assert overrides == [f"{name}=x"] and not warnings


def test_overrides_from_the_environment():
    env = {"KAFKALITE_BROKER_ID": "2", "KAFKALITE_LISTENERS": "INTERNAL://:9092",
           "KAFKALITE_LOG_LEVEL": "DEBUG", "KAFKALITE_BOOTSTRAP_SERVER": "b:9092",
           "KAFKALITE_ZOOKEEPER": "zk:2181/kl", "PATH": "/bin"}
    overrides, warnings = entrypoint.broker_overrides(env, set(BROKER_BY_NAME))
    assert overrides == ["broker.id=2", "listeners=INTERNAL://:9092"]
    assert warnings == []


def test_a_misspelt_variable_is_reported_with_the_closest_name():
    _, warnings = entrypoint.broker_overrides({"KAFKALITE_ADVERTISED_LISTENER": "x"},
                                              set(BROKER_BY_NAME))
    assert len(warnings) == 1
    assert "KAFKALITE_ADVERTISED_LISTENERS" in warnings[0]


def test_broker_command(tmp_path):
    config = tmp_path / "server.properties"
    config.write_text("listeners=PLAINTEXT://:9092\n")
    command = entrypoint.broker_command(["--log-level", "INFO"], {
        "KAFKALITE_CONFIG_FILE": str(config), "KAFKALITE_BROKER_ID": "1",
        "KAFKALITE_ZOOKEEPER_CONNECT": "zk:2181/kl"})
    assert command == ["kafkalite", "broker", "--config", str(config),
                       "--override", "broker.id=1", "--override", "zookeeper.connect=zk:2181/kl",
                       "--log-level", "INFO"]


def test_broker_command_without_an_id_says_how_to_set_it(tmp_path):
    config = tmp_path / "server.properties"
    config.write_text("listeners=PLAINTEXT://:9092\n")
    with pytest.raises(SystemExit, match="KAFKALITE_BROKER_ID"):
        entrypoint.broker_command([], {"KAFKALITE_CONFIG_FILE": str(config)})


@pytest.mark.parametrize("listeners, address", [
    ("INTERNAL://:9092,EXTERNAL://:19092", "127.0.0.1:9092"),
    ("PLAINTEXT://0.0.0.0:9500", "127.0.0.1:9500"),
    ("", "127.0.0.1:9092"),
])
def test_healthcheck_default_address(listeners, address):
    assert healthcheck.default_address({"KAFKALITE_LISTENERS": listeners}) == address
