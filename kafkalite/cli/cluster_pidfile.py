"""``cluster.pid``: what ``kafkalite cluster up`` started, for ``status``, ``down`` and
``restart-broker`` to find (JSON: the owner and every child with pid, start time, port and role).

Processes are recognised by pid *and* start time (``kafkalite.local.procs``), never a recycled pid.
"""

from __future__ import annotations

import contextlib
import json
import os

PIDFILE = "cluster.pid"


def pidfile_path(data_dir: str) -> str:
    return os.path.join(data_dir, PIDFILE)


def read_pidfile(data_dir: str) -> dict | None:
    """The cluster.pid of ``data_dir`` (None when there is none, or it is unreadable)."""
    try:
        with open(pidfile_path(data_dir)) as fh:
            info = json.load(fh)
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and "owner" in info else None


def write_atomically(path: str, text: str) -> None:
    """Readers see the old file or the new one, never half of it."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def process_entry(role: str, pid: int | None, port: int | None, **extra) -> dict:
    from kafkalite.local.procs import pid_start_time

    return {"role": role, "pid": pid, "start_time": pid_start_time(pid) if pid else None,
            "port": port, **extra}


def all_processes(info: dict) -> list[dict]:
    """The owner first, then every child."""
    return [info["owner"], *info.get("processes", [])]


def process_alive(entry: dict) -> bool:
    from kafkalite.local.procs import pid_alive

    return pid_alive(entry.get("pid"), entry.get("start_time"))


class Pidfile:
    """The owner's record of what it started, rewritten whole at every change."""

    def __init__(self, data_dir: str, env_file: str, detached: bool, log: str | None):
        self.path = pidfile_path(data_dir)
        self.info = {
            "data_dir": data_dir, "env_file": env_file, "detached": detached, "log": log,
            "state": "starting", "bootstrap_servers": None, "zookeeper": None,
            "owner": process_entry("supervisor" if detached else "launcher", os.getpid(), None),
            "processes": [],
        }

    def add(self, role: str, pid: int, port: int, **extra) -> None:
        self.info["processes"].append(process_entry(role, pid, port, **extra))
        self.write()

    def update(self, **values) -> None:
        self.info.update(values)
        self.write()

    def write(self) -> None:
        write_atomically(self.path, json.dumps(self.info, indent=2) + "\n")

    def remove(self) -> None:
        current = read_pidfile(os.path.dirname(self.path))
        if current is not None and current["owner"].get("pid") == os.getpid():
            with contextlib.suppress(OSError):
                os.unlink(self.path)
