"""``kafkalite cluster up --detach`` / ``status`` / ``down`` as a script runs them, as real
processes (the launcher, its supervisor, a real ZooKeeper JVM and real brokers).

Nothing may be left behind: every pid the pidfile names is checked after ``down`` -- and after the
supervisor was killed with SIGKILL, which only the children's parent-death signal can answer --
with ``os.kill(pid, 0)`` and ``/proc/<pid>/stat`` (a zombie is a dead process, not yet reaped).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from kafkalite.local.ports import free_port

pytestmark = pytest.mark.integration

LINUX = sys.platform.startswith("linux")


@pytest.fixture(autouse=True)
def _needs_a_local_zookeeper():
    from kafkalite.local.zookeeper import ZooKeeperNotFoundError, find_zookeeper_install

    try:
        find_zookeeper_install()
    except ZooKeeperNotFoundError as exc:
        pytest.skip(f"cluster up starts a local ZooKeeper: {exc}")


def kafkalite(*args, timeout=300):
    """Run the CLI as a user's script does: a process of its own, its output captured."""
    return subprocess.run([sys.executable, "-P", "-m", "kafkalite", *args], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False)


def running(pid: int, start_time: int | None = None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return not LINUX
    if fields[0] in ("Z", "X"):
        return False
    return start_time is None or int(fields[19]) == start_time


def wait_gone(pids: dict[int, int | None], timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while True:
        left = [pid for pid, start in pids.items() if running(pid, start)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


@pytest.fixture
def cluster_dir(tmp_path):
    """A data dir; whatever runs from it at the end is stopped (and the test fails)."""
    data_dir = tmp_path / "cluster"
    yield data_dir
    pidfile = data_dir / "cluster.pid"
    if pidfile.exists():
        info = json.loads(pidfile.read_text())
        pids = {p["pid"]: p["start_time"] for p in [info["owner"], *info["processes"]]}
        left = [pid for pid, start in pids.items() if running(pid, start)]
        if left:
            kafkalite("cluster", "down", "--data-dir", str(data_dir), "--timeout", "30")
            for pid in left:
                if running(pid, pids[pid]):
                    os.kill(pid, signal.SIGKILL)
            pytest.fail(f"processes left running: {left}")


def up_detached(data_dir, brokers=1, *extra):
    zk_port = free_port()
    result = kafkalite("cluster", "up", "--detach", "--brokers", str(brokers), "--data-dir",
                       str(data_dir), "--zk-port", str(zk_port), "--base-port", "0", *extra)
    assert result.returncode == 0, result.stderr
    return result, zk_port


def pidfile(data_dir) -> dict:
    return json.loads((data_dir / "cluster.pid").read_text())


def all_pids(info) -> dict[int, int | None]:
    return {p["pid"]: p["start_time"] for p in [info["owner"], *info["processes"]]}


def test_up_detach_status_down_leaves_nothing_behind(cluster_dir):
    result, zk_port = up_detached(cluster_dir, 1)

    # stdout is for eval: the two exports and nothing else
    exports = dict(line.removeprefix("export ").split("=", 1)
                   for line in result.stdout.splitlines())
    assert list(exports) == ["KAFKALITE_BOOTSTRAP_SERVER", "KAFKALITE_ZOOKEEPER"]
    assert exports["KAFKALITE_ZOOKEEPER"] == f"127.0.0.1:{zk_port}/kafkalite"
    assert all(line.startswith("export ") for line in result.stdout.splitlines())
    assert "cluster down --data-dir" in result.stderr
    # the same settings in the env file, as KEY=VALUE lines
    env = (cluster_dir / "cluster.env").read_text().splitlines()
    assert env == [f"{k}={v}" for k, v in exports.items()]
    # ZooKeeper runs with forceSync=yes, its own default
    assert "forceSync=yes" in (cluster_dir / "zookeeper" / "zoo.cfg").read_text().splitlines()

    info = pidfile(cluster_dir)
    assert info["state"] == "ready" and info["owner"]["role"] == "supervisor"
    roles = sorted(p["role"] for p in info["processes"])
    assert roles == ["broker", "console", "zookeeper"]
    pids = all_pids(info)
    assert all(running(pid, start) for pid, start in pids.items())

    # returned once ready: a client works at once
    from kafkalite import Producer

    with Producer(exports["KAFKALITE_BOOTSTRAP_SERVER"]) as producer:
        assert producer.send("after-up", b"x").get(30).offset == 0

    # a second cluster in the same data dir is refused
    again = kafkalite("cluster", "up", "--detach", "--data-dir", str(cluster_dir))
    assert again.returncode == 1 and "already running" in again.stderr

    status = kafkalite("cluster", "status", "--data-dir", str(cluster_dir))
    assert status.returncode == 0, status.stdout + status.stderr
    rows = [line.split() for line in status.stdout.splitlines()]
    assert rows[0] == ["ROLE", "PID", "ALIVE", "PORT", "LISTENING"]
    assert {row[-4] for row in rows[1:-1]} == {str(pid) for pid in pids}
    assert all(row[-3] == "yes" for row in rows[1:-1])
    assert any(row[:2] == ["zookeeper", str(info["processes"][0]["pid"])] for row in rows)

    down = kafkalite("cluster", "down", "--data-dir", str(cluster_dir))
    assert down.returncode == 0, down.stderr
    # down returns when the processes are gone: nothing to wait for here
    assert [pid for pid, start in pids.items() if running(pid, start)] == []
    assert not (cluster_dir / "cluster.pid").exists()
    assert not (cluster_dir / "cluster.env").exists()
    # the brokers stopped cleanly (a controlled shutdown, not a kill)
    assert "stopped cleanly" in (cluster_dir / "broker-1.log").read_text()

    status = kafkalite("cluster", "status", "--data-dir", str(cluster_dir))
    assert status.returncode == 1 and "no cluster" in status.stderr


@pytest.mark.skipif(not LINUX, reason="the parent-death signal is Linux's (elsewhere 'cluster "
                                       "down' stops the children by pid)")
def test_a_supervisor_killed_with_sigkill_takes_zookeeper_and_the_brokers_with_it(cluster_dir):
    up_detached(cluster_dir, 1, "--no-zk-force-sync")
    assert "forceSync=no" in (cluster_dir / "zookeeper" / "zoo.cfg").read_text().splitlines()
    info = pidfile(cluster_dir)
    children = {p["pid"]: p["start_time"] for p in info["processes"]}
    assert len(children) == 3 and all(running(p, s) for p, s in children.items())  # + console

    os.kill(info["owner"]["pid"], signal.SIGKILL)

    assert wait_gone(children, timeout_s=30) == [], "children outlived the supervisor"
    status = kafkalite("cluster", "status", "--data-dir", str(cluster_dir))
    assert status.returncode == 1
    assert all(row.split()[-3] == "no" for row in status.stdout.splitlines()[1:-1])
    # down tidies the stale pidfile; a new cluster may start in the same data dir
    down = kafkalite("cluster", "down", "--data-dir", str(cluster_dir))
    assert down.returncode == 0 and not (cluster_dir / "cluster.pid").exists()


def test_foreground_up_stops_everything_on_sigterm(cluster_dir):
    zk_port = free_port()
    launcher = subprocess.Popen(
        [sys.executable, "-P", "-m", "kafkalite", "cluster", "up", "--data-dir", str(cluster_dir),
         "--zk-port", str(zk_port), "--base-port", "0", "--no-zk-force-sync"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # the exports come once everything is ready
        first = launcher.stdout.readline()
        assert first.startswith("KAFKALITE_BOOTSTRAP_SERVER="), launcher.stderr.read()
        info = pidfile(cluster_dir)
        assert info["owner"] == {**info["owner"], "pid": launcher.pid, "role": "launcher"}
        pids = all_pids(info)
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(120) == 0
        assert wait_gone(pids, timeout_s=10) == []
        assert not (cluster_dir / "cluster.pid").exists()
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
