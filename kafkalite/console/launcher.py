"""``kafkalite console`` as a child process, for ``kafkalite cluster up`` (which owns it like its
brokers: it gets a parent-death signal, so it never outlives the cluster's owner)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from kafkalite.local.ports import free_port, port_is_open


class ConsoleNotStarted(RuntimeError):
    pass


def start_console(zookeeper: str, bootstrap: str | None, port: int, log_path: str,
                  host: str = "127.0.0.1", die_with_parent: int | None = None
                  ) -> tuple[subprocess.Popen, int]:
    """Spawn ``python -m kafkalite console``; returns the process and its port (``port`` 0
    picks a free one). Its output goes to ``log_path``."""
    from kafkalite.local.procs import parent_death_preexec

    port = port or free_port()
    argv = [sys.executable, "-P", "-m", "kafkalite", "console", "--zookeeper", zookeeper,
            "--port", str(port), "--host", host]
    if bootstrap:
        argv += ["--bootstrap-server", bootstrap]
    preexec = parent_death_preexec(die_with_parent) if die_with_parent is not None else None
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                env=dict(os.environ, PYTHONUNBUFFERED="1"),
                                preexec_fn=preexec)  # noqa: PLW1509 - one prctl call
    return proc, port


def wait_serving(proc: subprocess.Popen, port: int, timeout_s: float = 30.0,
                 host: str = "127.0.0.1") -> None:
    """Until the console accepts connections; ConsoleNotStarted if it exits or takes too long."""
    deadline = time.monotonic() + timeout_s
    while not port_is_open(host, port):
        if proc.poll() is not None:
            raise ConsoleNotStarted(f"the console exited with status {proc.returncode}")
        if time.monotonic() > deadline:
            raise ConsoleNotStarted(f"the console did not listen on port {port} within "
                                    f"{timeout_s:.0f} s")
        time.sleep(0.1)


def stop_console(proc: subprocess.Popen, timeout_s: float = 15.0) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_beside_cluster(zookeeper: str, bootstrap: str, port: int, log_path: str,
                         die_with_parent: int, on_spawned) -> tuple[subprocess.Popen, str | None,
                                                                    str]:
    """``cluster up``'s console: (process, URL or None, a line to print); ``on_spawned(pid,
    port)`` once it serves. A console that cannot start (its port is taken) is stopped and
    reported, and the cluster runs on without it."""
    proc, port = start_console(zookeeper, bootstrap, port, log_path,
                               die_with_parent=die_with_parent)
    try:
        wait_serving(proc, port)
    except ConsoleNotStarted as exc:
        stop_console(proc)
        return proc, None, (f"[yellow]console     not started: {exc} (log: {log_path}); start "
                            f"one with 'kafkalite console --zookeeper {zookeeper} --port N'[/]")
    on_spawned(proc.pid, port)
    url = f"http://127.0.0.1:{port}/"
    return proc, url, f"console     [bold]{url}[/] (log: {log_path})"
