"""A Spark standalone cluster (a master and workers) started with pyspark's own ``spark-class``.

Spark beyond one machine without a Spark download: the pyspark package carries Spark's jars and
``bin/spark-class``, so ``SPARK_HOME`` is the package's directory (``pyspark.find_spark_home``).

* :func:`spark_class_command` is the command line of a master or a worker;
* :class:`StandaloneCluster` starts a master and N workers as processes on this machine (free
  ports, each worker with its own work dir and process group), waits until the master's JSON
  (``http://host:webui/json/``) lists them ALIVE, can kill -9 one worker (with its executors, as
  a lost machine), and stops them all (the tests, and anyone trying the pipeline on a cluster);
* :func:`executor_tasks` is Spark's own count of the tasks each executor completed (the driver's
  REST API): where the work ran;
* ``python -m spark_integration.standalone master|worker ...`` execs ``spark-class`` in the
  foreground (the compose file's ``spark-master`` and ``spark-worker`` services).

Why a worker's process group: a worker starts each executor as its own JVM (and the executor its
Python workers); a kill -9 of the worker alone leaves them running until they notice. A lost
machine loses them all at once, which is what the recovery tests need.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field

__all__ = ["spark_home", "spark_class_command", "StandaloneCluster", "worker_env",
           "executor_tasks", "main"]

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> str:
    """pyspark's own directory: it holds Spark's jars and ``bin/spark-class``."""
    from pyspark.find_spark_home import _find_spark_home

    return _find_spark_home()


def spark_class_command(role: str, *, host: str, port: int = 0, webui_port: int = 0,
                        master_url: str | None = None, cores: int = 1, memory: str = "1g",
                        work_dir: str | None = None) -> list[str]:
    """The ``spark-class`` command line of a ``master`` or a ``worker``."""
    spark_class = os.path.join(spark_home(), "bin", "spark-class")
    if role == "master":
        return [spark_class, MASTER_CLASS, "--host", host, "--port", str(port),
                "--webui-port", str(webui_port)]
    if role == "worker":
        if not master_url:
            raise ValueError("a worker needs the master's URL (spark://host:port)")
        command = [spark_class, WORKER_CLASS, master_url, "--host", host, "--port", str(port),
                   "--webui-port", str(webui_port), "--cores", str(cores), "--memory", memory]
        return command + (["--work-dir", work_dir] if work_dir else [])
    raise ValueError(f"role must be master or worker, not {role!r}")


def worker_env(base: dict | None = None, *, daemon_memory: str = "256m",
               worker_timeout_s: int | None = None) -> dict:
    """The environment of a master or worker: SPARK_HOME, the interpreter and PYTHONPATH the
    executors' Python workers need (the driver's, so they import the same kafkalite), and a
    small heap for the daemons themselves (executors get their own ``spark.executor.memory``)."""
    from spark_integration.session import configure_environment

    configure_environment()           # PYSPARK_PYTHON, PYTHONPATH for pyspark_kafkalite
    env = dict(os.environ if base is None else base)
    for name in ("PYSPARK_PYTHON", "PYTHONPATH", "SPARK_LOCAL_IP"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    env["SPARK_HOME"] = spark_home()
    env["SPARK_DAEMON_MEMORY"] = daemon_memory
    if worker_timeout_s is not None:
        # the master declares a silent worker dead after this (Spark's default: 60 s)
        env["SPARK_MASTER_OPTS"] = f"-Dspark.worker.timeout={worker_timeout_s}"
    return env


def _get_json(url: str, timeout_s: float = 5) -> dict:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return json.loads(response.read())


def executor_tasks(spark) -> dict[str, tuple[str, int]]:
    """``{executor id: (host:port, completed tasks)}`` of ``spark``'s executors (not the driver),
    dead ones included, from the driver's REST API; empty when the driver's UI is off."""
    ui = spark.sparkContext.uiWebUrl
    if not ui:
        return {}
    path = f"/api/v1/applications/{spark.sparkContext.applicationId}/allexecutors"
    try:
        executors = _get_json(f"{ui}{path}", timeout_s=60)
    except OSError:
        # the UI binds SPARK_LOCAL_IP (loopback, set by session.configure_environment) while
        # uiWebUrl names the advertised driver host: it is this process's own UI either way
        port = ui.rsplit(":", 1)[1]
        executors = _get_json(f"http://127.0.0.1:{port}{path}", timeout_s=60)
    return {e["id"]: (e["hostPort"], e["completedTasks"]) for e in executors
            if e["id"] != "driver"}


@dataclass
class _Process:
    name: str
    popen: subprocess.Popen
    log_path: str
    work_dir: str
    webui_port: int

    def log_tail(self, chars: int = 3000) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()[-chars:]
        except OSError:
            return ""


@dataclass
class StandaloneCluster:
    """A master and ``workers`` workers on ``host``, each its own process under ``workdir``."""

    workdir: str
    workers: int = 2
    cores: int = 1
    memory: str = "1g"
    host: str = "127.0.0.1"
    worker_timeout_s: int = 20
    master: _Process | None = None
    worker_processes: list = field(default_factory=list)
    master_url: str | None = None

    @property
    def master_json_url(self) -> str:
        return f"http://{self.host}:{self.master.webui_port}/json/"

    def master_state(self) -> dict:
        """The master's JSON: ``url``, ``workers`` (``id``, ``state``, ``webuiaddress``...),
        ``aliveworkers``, ``activeapps``, ``completedapps``."""
        return _get_json(self.master_json_url)

    def alive_workers(self) -> list[dict]:
        return [w for w in self.master_state().get("workers", []) if w.get("state") == "ALIVE"]

    def worker_state(self, index: int) -> dict:
        """Worker ``index``'s own JSON (its executors, with their app ids and executor ids)."""
        worker = self.worker_processes[index]
        return _get_json(f"http://{self.host}:{worker.webui_port}/json/")

    def _spawn(self, name: str, command: list[str], work_dir: str, webui_port: int) -> _Process:
        os.makedirs(work_dir, exist_ok=True)
        log_path = os.path.join(self.workdir, f"{name}.log")
        env = worker_env(worker_timeout_s=self.worker_timeout_s)
        env["SPARK_LOCAL_DIRS"] = os.path.join(work_dir, "local")
        with open(log_path, "ab") as log:
            popen = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                     cwd=work_dir, start_new_session=True)
        return _Process(name, popen, log_path, work_dir, webui_port)

    def start(self, timeout_s: float = 240) -> StandaloneCluster:
        from kafkalite.local.cluster import wait_until
        from kafkalite.local.ports import free_ports

        os.makedirs(self.workdir, exist_ok=True)
        ports = free_ports(1 + self.workers, self.host)
        try:
            # --port 0: the master picks its own RPC port and names it in its JSON ("url")
            self.master = self._spawn(
                "master", spark_class_command("master", host=self.host, port=0,
                                              webui_port=ports[0]),
                os.path.join(self.workdir, "master"), ports[0])
            self.master_url = wait_until(self._master_url, timeout_s, "the Spark master's URL",
                                         interval_s=0.2, on_timeout=self.describe_logs)
            for i in range(self.workers):
                work_dir = os.path.join(self.workdir, f"worker-{i}")
                self.worker_processes.append(self._spawn(
                    f"worker-{i}", spark_class_command(
                        "worker", host=self.host, webui_port=ports[1 + i],
                        master_url=self.master_url, cores=self.cores, memory=self.memory,
                        work_dir=work_dir), work_dir, ports[1 + i]))
            self.wait_for_alive(self.workers, timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _master_url(self) -> str | None:
        if self.master.popen.poll() is not None:
            raise RuntimeError(f"the Spark master exited:\n{self.master.log_tail()}")
        return self.master_state().get("url") or None

    def wait_for_alive(self, count: int, timeout_s: float = 240) -> list[dict]:
        """Wait until the master's JSON lists exactly ``count`` ALIVE workers."""
        from kafkalite.local.cluster import wait_until

        return wait_until(lambda: (lambda alive: alive if len(alive) == count else None)(
            self.alive_workers()), timeout_s, f"{count} ALIVE workers in the master's JSON",
            interval_s=0.2, on_timeout=self.describe_logs)

    def kill_worker(self, index: int) -> None:
        """kill -9 worker ``index`` with its executors and their Python workers (a lost host)."""
        worker = self.worker_processes[index]
        try:
            os.killpg(worker.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        worker.popen.wait(30)

    def stop(self) -> None:
        processes = [*self.worker_processes, *([self.master] if self.master else [])]
        for process in processes:
            if process.popen.poll() is None:
                try:
                    os.killpg(process.popen.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 20
        for process in processes:
            try:
                process.popen.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            # the group too: executors and Python workers a TERM left behind
            try:
                os.killpg(process.popen.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            process.popen.wait(10)

    def describe_logs(self) -> str:
        processes = [*([self.master] if self.master else []), *self.worker_processes]
        return "\n".join(f"--- {p.name} ({p.log_path}):\n{p.log_tail()}" for p in processes)

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """``master [--host H] [--port P] [--webui-port W]`` or
    ``worker spark://H:P [--host H] [--cores N] [--memory M] [--work-dir D]``: exec spark-class."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m spark_integration.standalone")
    parser.add_argument("role", choices=["master", "worker"])
    parser.add_argument("master_url", nargs="?")
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--webui-port", type=int, default=8080)
    parser.add_argument("--cores", type=int, default=1)
    parser.add_argument("--memory", default="1g")
    parser.add_argument("--work-dir", default=None)
    args = parser.parse_args(argv)
    port = args.port if args.port is not None else (7077 if args.role == "master" else 0)
    command = spark_class_command(args.role, host=args.host, port=port,
                                  webui_port=args.webui_port, master_url=args.master_url,
                                  cores=args.cores, memory=args.memory, work_dir=args.work_dir)
    local_ip = os.environ.get("SPARK_LOCAL_IP")
    env = worker_env(daemon_memory=os.environ.get("SPARK_DAEMON_MEMORY", "256m"))
    # on a network (compose), each daemon binds to its --host, never to loopback
    if local_ip is None:
        env.pop("SPARK_LOCAL_IP", None)
    sys.stdout.flush()
    os.execve(command[0], command, env)


if __name__ == "__main__":
    main()
