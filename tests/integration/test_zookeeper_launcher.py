"""The real-ZooKeeper launcher (kafkalite.local.zookeeper) and the pytest plugin's fixtures."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time

import pytest

from kafkalite.local import docker_engine
from kafkalite.local import zookeeper as zkl
from kafkalite.local import zookeeper_install
from kafkalite.local.docker_engine import DockerUnavailable
from kafkalite.local.ports import free_port, port_is_open
from kafkalite.local.zookeeper import (
    ExternalZooKeeper, ZooKeeperContainer, ZooKeeperEnsemble, ZooKeeperNotFoundError,
    ZooKeeperServer, ZooKeeperStartError, expire_session, find_zookeeper_install, start_zookeeper,
    unique_chroot,
)
from kafkalite.local.zookeeper_container import container_environment
from kafkalite.local.zookeeper_process import SERVER_DEFAULTS
from kafkalite.zk import ZkClient, ZkState
from zk_schema import BrokerRegistration

pytestmark = pytest.mark.integration


def wait_until(predicate, timeout=45.0, interval=0.02, what="condition"):
    # generous: a JVM restart plus the client's reconnect backoff is slow on a loaded 2-core box
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class StateLog:
    """Collects a ZkClient's session states (callbacks arrive on kazoo's thread)."""

    def __init__(self, client: ZkClient):
        self.states: list[ZkState] = []
        self._lock = threading.Lock()
        client.add_state_listener(self._on)

    def _on(self, state: ZkState) -> None:
        with self._lock:
            self.states.append(state)

    def saw(self, *states: ZkState) -> bool:
        with self._lock:
            it = iter(self.states)
            return all(any(s == want for s in it) for want in states)  # in this order


# --------------------------------------------------------------------------- fixtures/plugin

def test_session_server_accepts_clients(zookeeper):
    client = ZkClient(zookeeper.connect_string, session_timeout_ms=6000).start()
    try:
        assert client.connected
        path = unique_chroot("launcher-smoke")
        client.create(path, b"hello")
        assert client.get_data(path) == (b"hello", 0)
        client.delete(path)
    finally:
        client.stop()
    if isinstance(zookeeper, ZooKeeperServer):
        assert zookeeper.four_letter_word("ruok") == "imok"
        assert zookeeper.running and os.path.exists(zookeeper.log_path)


def test_zk_connect_carries_a_created_chroot(zookeeper, zk_chroot, zk_connect):
    assert zk_chroot.startswith("/kl-test_zk_connect_carries")
    assert zk_connect == zookeeper.connect_string + zk_chroot
    admin = ZkClient(zookeeper.connect_string).start()
    try:
        assert admin.exists(zk_chroot)
    finally:
        admin.stop()


def test_chroot_isolation(zookeeper, zk_connect, zk_chroot):
    other_chroot = unique_chroot("kl-other")
    a = ZkClient(zk_connect).start()
    b = ZkClient(zookeeper.connect_string + other_chroot).start()  # chroot created at start
    root = ZkClient(zookeeper.connect_string).start()
    try:
        a.ensure_persistent_paths()
        a.create("/only-in-a", b"a")
        b.create("/only-in-b", b"b")
        assert a.exists("/only-in-a") and not a.exists("/only-in-b")
        assert b.exists("/only-in-b") and not b.exists("/only-in-a")
        assert "only-in-a" in a.get_children("/") and "brokers" in a.get_children("/")
        assert b.get_children("/") == ["only-in-b"]
        assert root.get_data(f"{zk_chroot}/only-in-a")[0] == b"a"
        assert root.get_data(f"{other_chroot}/only-in-b")[0] == b"b"
        root.delete(other_chroot, recursive=True)
    finally:
        for c in (a, b, root):
            c.stop()


def test_unique_chroot():
    names = {unique_chroot("kl-test_x[param/1]") for _ in range(100)}
    assert len(names) == 100
    for name in names:
        assert name.startswith("/kl-test_x-param-1-")
        assert "/" not in name[1:] and "[" not in name


def test_zk_expire_drops_the_broker_registration(zk_connect, zk_client, zk_expire):
    """A session expired through the helper loses its ephemeral broker registration."""
    zk_client.ensure_persistent_paths()
    broker = ZkClient(zk_connect, session_timeout_ms=6000).start()
    states = StateLog(broker)
    try:
        broker.register_broker(BrokerRegistration.plaintext(1, "localhost", 9092))
        assert zk_client.get_broker_ids() == [1]
        old_session = broker.session_id
        assert zk_expire(broker) is True
        wait_until(lambda: zk_client.get_broker_ids() == [], what="broker 1 to vanish")
        wait_until(lambda: states.saw(ZkState.LOST, ZkState.CONNECTED), what="LOST, CONNECTED")
        assert broker.session_id != old_session
        broker.register_broker(BrokerRegistration.plaintext(1, "localhost", 9092))  # again
        assert zk_client.get_broker_ids() == [1]
    finally:
        broker.stop()
    wait_until(lambda: zk_client.get_broker_ids() == [], what="clean close to drop broker 1")


def test_expire_session_with_a_bare_session_pair(zookeeper, zk_connect, zk_client):
    other = ZkClient(zk_connect, session_timeout_ms=6000).start()
    try:
        other.create("/eph", b"", ephemeral=True)
        assert expire_session(other.session_id_and_password(), zookeeper.connect_string)
        assert not zk_client.exists("/eph")
    finally:
        other.stop()


# ------------------------------------------------------------------------ standalone launcher

def test_kill_and_restart_keep_port_and_data(tmp_path):
    server = ZooKeeperServer(tmp_path / "zk")
    server.start()
    client = ZkClient(server.connect_string + "/app", session_timeout_ms=20_000,
                      connection_timeout_s=20).start()
    states = StateLog(client)
    try:
        client.create("/persisted", b"data")
        port, pid = server.port, server.pid
        server.kill()
        assert not server.running
        wait_until(lambda: not port_is_open("127.0.0.1", port), what="port to close")
        wait_until(lambda: states.saw(ZkState.SUSPENDED), what="client to notice")
        server.restart()
        assert server.running and server.port == port and server.pid != pid
        wait_until(lambda: states.saw(ZkState.SUSPENDED, ZkState.CONNECTED),
                   what="client to reconnect")
        assert client.get_data("/persisted") == (b"data", 0)
        assert "killed with SIGKILL" in server.log_tail(200)
        # graceful stop, then start again, the same way
        server.stop()
        server.stop()  # idempotent
        assert not server.running
        server.start()
        wait_until(lambda: client.connected, what="client to reconnect after stop/start")
        assert client.get_data("/persisted") == (b"data", 0)
    finally:
        client.stop()
        server.stop()
    assert os.path.exists(server.log_path)  # the log stays for inspection


def test_context_manager_cleans_up_its_own_workdir():
    with ZooKeeperServer() as server:
        workdir, pid = server.workdir, server.pid
        assert port_is_open("127.0.0.1", server.port)
        assert server.connect_string == f"127.0.0.1:{server.port}"
    assert not server.running
    assert not os.path.exists(workdir)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_start_failure_says_why_with_the_log_tail(tmp_path):
    server = ZooKeeperServer(tmp_path, extra_config={"tickTime": "not-a-number"})
    with pytest.raises(ZooKeeperStartError) as err:
        server.start(timeout_s=30)
    message = str(err.value)
    assert "exited" in message and str(server.log_path) in message
    assert "not-a-number" in message or "tickTime" in message  # the JVM's own complaint


def test_port_taken_fails_fast(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        # with an hour to wait, the test ends only if the launcher itself notices the port is
        # taken (rather than waiting for a server that can never answer)
        with pytest.raises(ZooKeeperStartError, match="taken"):
            ZooKeeperServer(tmp_path, port=port).start(timeout_s=3600)


def test_config_allows_short_sessions(tmp_path):
    server = ZooKeeperServer(tmp_path, port=free_port())
    text = open(server.config_path).read()
    for line in ("clientPortAddress=127.0.0.1", "4lw.commands.whitelist=*",
                 "admin.enableServer=false", "tickTime=500", "minSessionTimeout=1000",
                 f"clientPort={server.port}", f"dataDir={server.data_dir}"):
        assert line in text.splitlines()


def test_missing_install_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("ZOOKEEPER_HOME", str(tmp_path))
    with pytest.raises(ZooKeeperNotFoundError, match="apt-get install zookeeper"):
        find_zookeeper_install()
    monkeypatch.delenv("ZOOKEEPER_HOME")
    monkeypatch.setattr(zookeeper_install, "DEBIAN_JAR", str(tmp_path / "nope.jar"))
    monkeypatch.setattr(zookeeper_install, "KNOWN_HOMES", ())
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ZooKeeperNotFoundError) as err:
        find_zookeeper_install()
    assert "apt-get install zookeeper" in str(err.value)
    assert "ZOOKEEPER_HOME" in str(err.value) and "KAFKALITE_ZOOKEEPER" in str(err.value)


def test_zookeeper_home_layout(monkeypatch, tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "zookeeper-3.8.4.jar").write_bytes(b"")
    (lib / "zookeeper-jute-3.8.4.jar").write_bytes(b"")
    monkeypatch.setenv("ZOOKEEPER_HOME", str(tmp_path))
    install = find_zookeeper_install()
    assert install.location == str(tmp_path)
    assert str(lib / "zookeeper-3.8.4.jar") in install.classpath


def test_start_zookeeper_falls_back_to_the_local_install(monkeypatch, caplog, tmp_path):
    _no_docker_settings(monkeypatch)
    image, reason = docker_engine.docker_zookeeper_image()
    if image is not None:
        pytest.skip(f"a Docker engine with the image {image} is available here: start_zookeeper "
                    "uses it (test_start_zookeeper_runs_a_local_docker_image covers that)")
    with caplog.at_level(logging.INFO, logger="kafkalite.local.zookeeper"):
        server = start_zookeeper(tmp_path)
    try:
        assert isinstance(server, ZooKeeperServer) and server.running
        lines = [r.getMessage() for r in caplog.records
                 if "using the local ZooKeeper install at" in r.getMessage()]
        assert len(lines) == 1 and lines[0].startswith(reason)
    finally:
        server.stop()


def test_external_server_from_env(monkeypatch, zookeeper):
    monkeypatch.setenv("KAFKALITE_ZOOKEEPER", zookeeper.connect_string)
    server = start_zookeeper()
    assert isinstance(server, ExternalZooKeeper)
    assert server.connect_string == zookeeper.connect_string
    server.stop()  # must not touch the real one
    with ZkClient(zookeeper.connect_string) as client:
        assert client.exists("/zookeeper")


def test_external_server_must_answer(monkeypatch):
    monkeypatch.setenv("KAFKALITE_ZOOKEEPER", f"127.0.0.1:{free_port()}")
    with pytest.raises(ZooKeeperStartError, match="no ZooKeeper answers"):
        start_zookeeper()


# --------------------------------------------------------------------------------- ensemble

def test_ensemble_survives_losing_one_node(tmp_path):
    ensemble = ZooKeeperEnsemble(3, tmp_path)
    ensemble.start()
    client = ZkClient(ensemble.connect_string + "/ens", session_timeout_ms=10_000,
                      connection_timeout_s=30).start()
    try:
        assert sorted(ensemble.mode(i) for i in range(3)) == ["follower", "follower", "leader"]
        client.create("/before", b"1")
        leader = ensemble.leader()
        assert leader is not None
        ensemble.kill(leader)
        assert not ensemble.running(leader)

        def write_after():
            try:
                client.create("/after", b"2")
                return True
            except Exception:  # noqa: BLE001 - the quorum is re-electing
                return client.exists("/after") if client.connected else False

        wait_until(write_after, timeout=60, interval=0.2, what="a write with 2 of 3 nodes")
        survivors = [i for i in range(3) if i != leader]
        wait_until(lambda: ensemble.leader() in survivors, timeout=30, what="a new leader")
        for i in survivors:  # every surviving node serves the data
            node = ZkClient(ensemble.node_connect_string(i) + "/ens").start()
            try:
                assert node.get_data("/before")[0] == b"1"
                wait_until(lambda: node.exists("/after"), what=f"node {i} to see /after")
            finally:
                node.stop()
        ensemble.start(leader)  # the killed node comes back and catches up
        back = ZkClient(ensemble.node_connect_string(leader) + "/ens").start()
        try:
            wait_until(lambda: back.exists("/after"), what="the restarted node to catch up")
        finally:
            back.stop()
    finally:
        client.stop()
        ensemble.stop()
    assert not any(ensemble.running(i) for i in range(3))


# ----------------------------------------------------------------------------- Docker path

def _no_docker_settings(monkeypatch):
    for name in ("KAFKALITE_ZOOKEEPER", docker_engine.ENV_USE_DOCKER,
                 docker_engine.ENV_USE_DOCKER_OLD, docker_engine.ENV_ZOOKEEPER_IMAGE,
                 docker_engine.ENV_ZOOKEEPER_IMAGE_OLD):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.docker
def test_start_zookeeper_runs_a_local_docker_image(monkeypatch, tmp_path):
    """Where an engine runs and a zookeeper image is local, start_zookeeper() gives a container
    that serves clients with the local launcher's settings, and survives kill + restart with its
    data and its address. A docker test: docker/ci.sh runs it once its engine is up, with
    KAFKALITE_DOCKER_REQUIRED=1, so there a missing engine or image fails it."""
    _no_docker_settings(monkeypatch)
    image, reason = docker_engine.docker_zookeeper_image()
    if image is None:
        message = f"needs a Docker engine and a local zookeeper image: {reason}"
        if os.environ.get("KAFKALITE_DOCKER_REQUIRED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    server = start_zookeeper(tmp_path)
    try:
        assert isinstance(server, ZooKeeperContainer) and server.image == image
        host, _, port = server.connect_string.rpartition(":")
        assert zkl.four_letter_word(host, int(port), "ruok") == "imok"
        conf = zkl.four_letter_word(host, int(port), "conf")
        assert f"tickTime={SERVER_DEFAULTS['tickTime']}" in conf.replace(" ", "")
        assert f"minSessionTimeout={SERVER_DEFAULTS['minSessionTimeout']}" in conf
        with ZkClient(server.connect_string, session_timeout_ms=2000) as client:
            client.create("/kept", b"data")
        address = server.connect_string
        server.kill()
        wait_until(lambda: not port_is_open(host, int(port)), what="the killed container's port")
        server.restart()
        assert server.connect_string == address
        with ZkClient(server.connect_string) as client:
            assert client.get_data("/kept")[0] == b"data"
    finally:
        server.stop()


def test_docker_required_but_unavailable_says_why(monkeypatch):
    _no_docker_settings(monkeypatch)
    image, reason = docker_engine.docker_zookeeper_image()
    if image is not None:
        pytest.skip(f"Docker with {image} is available here; the refusal needs it missing")
    monkeypatch.setenv("KAFKALITE_TEST_DOCKER", "1")
    with pytest.raises(DockerUnavailable) as err:
        start_zookeeper()
    assert "KAFKALITE_TEST_DOCKER=1" in str(err.value) and reason in str(err.value)


class FailingContainer:
    def __init__(self, image):
        self.image = image

    def start(self):
        raise RuntimeError("cannot start container")


def test_start_zookeeper_falls_back_when_docker_fails(monkeypatch, caplog, tmp_path):
    _no_docker_settings(monkeypatch)
    monkeypatch.setattr(docker_engine, "docker_zookeeper_image",
                        lambda: ("zookeeper:3.8", "Docker"))
    monkeypatch.setattr(zkl, "ZooKeeperContainer", FailingContainer)
    with caplog.at_level(logging.INFO, logger="kafkalite.local.zookeeper"):
        server = start_zookeeper(tmp_path)
    try:
        assert isinstance(server, ZooKeeperServer) and server.running
        assert any("Docker ZooKeeper failed (cannot start container)" in r.getMessage()
                   for r in caplog.records)
    finally:
        server.stop()
    monkeypatch.setenv("KAFKALITE_TEST_DOCKER", "1")          # required: no fallback
    with pytest.raises(RuntimeError, match="cannot start container"):
        start_zookeeper(tmp_path)


def test_docker_can_be_switched_off_by_either_name(monkeypatch):
    _no_docker_settings(monkeypatch)
    monkeypatch.setenv("KAFKALITE_ZOOKEEPER_DOCKER", "0")
    assert docker_engine.docker_zookeeper_image() == (
        None, "Docker disabled by KAFKALITE_ZOOKEEPER_DOCKER")
    monkeypatch.setenv("KAFKALITE_TEST_DOCKER", "off")
    assert docker_engine.docker_zookeeper_image() == (
        None, "Docker disabled by KAFKALITE_TEST_DOCKER")
    assert docker_engine.docker_unavailable_reason("zookeeper:3.8") == \
        "Docker disabled by KAFKALITE_TEST_DOCKER"


@pytest.mark.parametrize("environ, wanted", [
    ({}, None), ({"KAFKALITE_TEST_DOCKER": "1"}, True), ({"KAFKALITE_TEST_DOCKER": "no"}, False),
    ({"KAFKALITE_ZOOKEEPER_DOCKER": "0"}, False),
    ({"KAFKALITE_TEST_DOCKER": "1", "KAFKALITE_ZOOKEEPER_DOCKER": "0"}, True),
])
def test_one_docker_switch_with_its_old_name(environ, wanted):
    assert docker_engine.docker_wanted(environ) is wanted


def test_image_choice():
    choose = docker_engine.choose_zookeeper_image
    assert choose(None, ["zookeeper:3.7", "zookeeper:3.8", "python:3.11"]) == "zookeeper:3.8"
    assert choose(None, ["zookeeper:3.7", "zookeeper:3.9"]) == "zookeeper:3.9"
    assert choose(None, ["python:3.11"]) is None
    assert choose("zookeeper:3.7", ["zookeeper:3.7", "zookeeper:3.8"]) == "zookeeper:3.7"
    assert choose("zookeeper:3.6", ["zookeeper:3.8"]) is None    # asked for: never another
    setting = docker_engine.zookeeper_image_setting
    assert setting({"KAFKALITE_ZOOKEEPER_IMAGE": "zk:old"}) == "zk:old"
    assert setting({"KAFKALITE_TEST_ZOOKEEPER_IMAGE": "zk:new",
                    "KAFKALITE_ZOOKEEPER_IMAGE": "zk:old"}) == "zk:new"


def test_container_gets_the_local_servers_settings():
    env = container_environment()
    assert env["ZOO_TICK_TIME"] == str(SERVER_DEFAULTS["tickTime"])
    assert env["ZOO_4LW_COMMANDS_WHITELIST"] == SERVER_DEFAULTS["4lw.commands.whitelist"]
    assert env["ZOO_ADMINSERVER_ENABLED"] == "false"
    assert env["ZOO_CFG_EXTRA"].split() == [
        f"minSessionTimeout={SERVER_DEFAULTS['minSessionTimeout']}",
        f"maxSessionTimeout={SERVER_DEFAULTS['maxSessionTimeout']}"]
