"""``kafkalite cluster status|down`` on pidfiles made by hand (no ZooKeeper needed), and what
``cluster up --help`` says about ZooKeeper's forceSync. The real thing: tests/integration/
test_cluster_up_detach.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from kafkalite.cli.main import main
from kafkalite.local.procs import pid_alive, pid_start_time


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def entry(role, pid, port=None, **extra):
    return {"role": role, "pid": pid, "start_time": pid_start_time(pid), "port": port, **extra}


def write_pidfile(data_dir, owner, processes, state="ready"):
    info = {"data_dir": str(data_dir), "env_file": str(data_dir / "cluster.env"),
            "detached": True, "state": state, "bootstrap_servers": "127.0.0.1:1",
            "zookeeper": "127.0.0.1:2/kafkalite", "owner": owner, "processes": processes}
    (data_dir / "cluster.pid").write_text(json.dumps(info))
    (data_dir / "cluster.env").write_text("KAFKALITE_BOOTSTRAP_SERVER=127.0.0.1:1\n")


@pytest.fixture
def dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture
def sleepers():
    procs = []

    def start(n):
        for _ in range(n):
            procs.append(subprocess.Popen([sys.executable, "-c",
                                           "import time; time.sleep(120)"]))
        return [p.pid for p in procs[-n:]]

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def test_up_help_states_zookeeper_force_sync_and_its_default(capsys):
    code, out, _err = run(capsys, "cluster", "up", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "--zk-force-sync / --no-zk-force-sync" in text
    assert "forceSync: yes (ZooKeeper's own default)" in text
    assert "[default:zk-force-sync]" in "".join(out.split())
    assert "--detach" in text and "--env-file" in text


def test_status_without_a_cluster(capsys, tmp_path):
    code, _out, err = run(capsys, "cluster", "status", "--data-dir", str(tmp_path))
    assert code == 1 and "no cluster in" in err and "cluster up --detach" in err


def test_status_lists_every_process_and_fails_when_one_is_dead(capsys, tmp_path, dead_pid):
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(1)
        port = listening.getsockname()[1]
        write_pidfile(tmp_path, entry("supervisor", os.getpid()),
                      [entry("zookeeper", os.getpid(), port),
                       entry("broker", dead_pid, 9, broker_id=1)])
        code, out, _err = run(capsys, "cluster", "status", "--data-dir", str(tmp_path))
    assert code == 1
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["ROLE", "PID", "ALIVE", "PORT", "LISTENING"]
    assert rows[1] == ["supervisor", str(os.getpid()), "yes", "-", "-"]
    assert rows[2] == ["zookeeper", str(os.getpid()), "yes", str(port), "yes"]
    assert rows[3] == ["broker", "1", str(dead_pid), "no", "9", "-"]


def test_status_exit_0_when_all_are_up(capsys, tmp_path):
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(1)
        port = listening.getsockname()[1]
        write_pidfile(tmp_path, entry("supervisor", os.getpid()),
                      [entry("broker", os.getpid(), port, broker_id=1)])
        code, out, _err = run(capsys, "cluster", "status", "--data-dir", str(tmp_path))
        assert code == 0, out
        write_pidfile(tmp_path, entry("supervisor", os.getpid()),
                      [entry("broker", os.getpid(), port, broker_id=1)], state="starting")
        code, out, _err = run(capsys, "cluster", "status", "--data-dir", str(tmp_path))
        assert code == 1 and "state: starting" in out


def test_down_without_a_cluster_is_not_an_error(capsys, tmp_path):
    code, _out, err = run(capsys, "cluster", "down", "--data-dir", str(tmp_path))
    assert code == 0 and "no cluster is running" in err


def test_down_stops_children_left_by_a_dead_owner(capsys, tmp_path, dead_pid, sleepers):
    """Where no parent-death signal exists, the children outlive a killed owner: down stops
    them itself, by pid."""
    zk, broker = sleepers(2)
    write_pidfile(tmp_path, entry("supervisor", dead_pid),
                  [entry("zookeeper", zk, 2), entry("broker", broker, 1, broker_id=1)])
    code, _out, err = run(capsys, "cluster", "down", "--data-dir", str(tmp_path), "--timeout",
                          "30")
    assert code == 0, err
    assert not pid_alive(zk) and not pid_alive(broker)
    assert not (tmp_path / "cluster.pid").exists() and not (tmp_path / "cluster.env").exists()
    assert f"broker 1 (pid {broker})" in err


def test_down_never_signals_a_recycled_pid(capsys, tmp_path, dead_pid, sleepers):
    (stranger,) = sleepers(1)
    impostor = entry("broker", stranger, 1, broker_id=1)
    impostor["start_time"] = (impostor["start_time"] or 0) + 12345   # not the one we started
    write_pidfile(tmp_path, entry("supervisor", dead_pid), [impostor])
    code, _out, _err = run(capsys, "cluster", "down", "--data-dir", str(tmp_path))
    assert code == 0
    if sys.platform.startswith("linux"):
        assert pid_alive(stranger)


def test_up_refuses_a_data_dir_whose_cluster_runs(capsys, tmp_path):
    write_pidfile(tmp_path, entry("supervisor", os.getpid()), [])
    code, _out, err = run(capsys, "cluster", "up", "--detach", "--data-dir", str(tmp_path))
    assert code == 1
    assert "already running" in err and "cluster down --data-dir" in err
