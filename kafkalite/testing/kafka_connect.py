"""A Kafka Connect 2.8.2 distributed worker as a child process, for tests/jvm/test_kafka_connect.py
and bench/connect_soak.py.

``ConnectWorker`` runs ``org.apache.kafka.connect.cli.ConnectDistributed`` with a worker
properties file, as Kafka's ``bin/connect-distributed.sh`` does, from the jars that
``scripts/fetch_apache_kafka.sh`` fetched (connect-runtime and connect-file are in its pom; the
broker's and Streams' own jars left out), and drives it through its REST API with the standard
library's HTTP client. Port 0 is not possible for Connect's REST listener (the worker advertises
the port it was given), so a free port is picked first. Also here: ``check_at_least_once``, the
shape a copy may have when records are redelivered after a failure (the FileStream sink rewinds
to its last committed offset), and ``PacedWriter``, which keeps a copy under way.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from kafkalite.local.cluster import wait_until
from kafkalite.local.ports import free_port
from kafkalite.testing.apache_kafka import java_command, libs_dir

MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"
SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
# the brokers' settings (both systems) of the test and the soak: rf 3, min.insync.replicas 2
CLUSTER_SETTINGS: dict[str, Any] = {
    "min.insync.replicas": 2, "default.replication.factor": 3,
    "offsets.topic.replication.factor": 3, "offsets.topic.num.partitions": 10,
    "group.initial.rebalance.delay.ms": 0,
    # a kill -9 is noticed through the ZooKeeper session
    "zookeeper.session.timeout.ms": 3000, "zookeeper.connection.timeout.ms": 15000,
    "replica.lag.time.max.ms": 5000,
}
INTERNAL = {"config": 1, "offset": 5, "status": 3}     # topic -> partitions asked of the worker
# Connect scans its whole classpath for plugins at start-up (several seconds on a loaded machine):
# the jars only the broker and Streams use are left out of the worker's classpath
NOT_CONNECT = ("kafka_2.13-", "scala-", "jackson-module-scala", "jackson-dataformat-csv",
               "paranamer-", "rocksdbjni-", "kafka-streams-", "zookeeper-", "netty-",
               "metrics-core-")
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
# Connect's INFO log to the worker's own file (it tells why a task failed), clients at WARN
_LOG4J = """log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=${connect.log.file}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.kafka.clients=WARN
log4j.logger.org.reflections=ERROR
log4j.logger.org.eclipse.jetty=WARN
"""


def worker_settings(group: str) -> dict[str, Any]:
    """The worker's own topics (rf 3, ``INTERNAL``'s partitions) and a 1 s offset flush (the
    sink file flushed and the offsets committed every second)."""
    settings: dict[str, Any] = {f"{kind}.storage.topic": f"{group}-{kind}s" for kind in INTERNAL}
    settings.update({f"{kind}.storage.replication.factor": 3 for kind in INTERNAL})
    settings.update({"offset.storage.partitions": INTERNAL["offset"],
                     "status.storage.partitions": INTERNAL["status"],
                     "offset.flush.interval.ms": 1000})
    return settings


def file_copy_configs(name: str, topic: str, source_file: str, sink_file: str
                      ) -> dict[str, dict[str, str]]:
    """The FileStreamSource (file -> topic) and FileStreamSink (topic -> file) connectors of a
    copy called ``name``, by connector name."""
    return {f"{name}-source": {"connector.class": SOURCE, "tasks.max": "1", "file": source_file,
                               "topic": topic},
            f"{name}-sink": {"connector.class": SINK, "tasks.max": "1", "file": sink_file,
                             "topics": topic}}


class ConnectWorker:
    """One distributed worker: ``start()``, ``create_connector``, ``status``, ``stop()``."""

    def __init__(self, bootstrap: str, workdir: str, group: str, settings: dict[str, Any]):
        self.workdir = workdir
        self.group = group
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = os.path.join(workdir, "connect.log")
        self.out_path = os.path.join(workdir, "connect.out")
        self.properties = {
            "bootstrap.servers": bootstrap, "group.id": group,
            "key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER,
            "listeners": self.url, "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": self.port, **settings}
        self.process: subprocess.Popen | None = None

    def start(self, timeout_s: float = 180) -> "ConnectWorker":
        os.makedirs(self.workdir, exist_ok=True)
        config = os.path.join(self.workdir, "connect-distributed.properties")
        with open(config, "w") as fh:
            fh.writelines(f"{key}={value}\n" for key, value in self.properties.items())
        log4j = os.path.join(self.workdir, "connect-log4j.properties")
        with open(log4j, "w") as fh:
            fh.write(_LOG4J)
        cmd = java_command(MAIN, config, heap="384m", log4j=log4j)
        libs = libs_dir()
        cmd[cmd.index("-cp") + 1] = os.pathsep.join(
            os.path.join(libs, jar) for jar in sorted(os.listdir(libs))
            if jar.endswith(".jar") and not jar.startswith(NOT_CONNECT))
        cmd.insert(1, f"-Dconnect.log.file={self.log_path}")
        with open(self.out_path, "w") as out:
            self.process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)
        # /connectors answers once the herder has joined its group and read the config topic
        wait_until(lambda: self._alive() and self.request("GET", "/connectors") == [],
                   timeout_s, f"the Connect worker's REST API on {self.url}",
                   interval_s=0.5, on_timeout=self.describe)
        return self

    def _alive(self) -> bool:
        if self.process is None or self.process.poll() is not None:
            raise AssertionError(f"the Connect worker exited\n{self.describe()}")
        return True

    def request(self, method: str, path: str, body: Any = None, timeout_s: float = 30) -> Any:
        """The JSON answer of a REST call (an HTTPError for a 4xx/5xx answer)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json",
                                              "Accept": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout_s) as answer:
            text = answer.read()
        return json.loads(text) if text else None

    def create_connector(self, name: str, config: dict[str, Any], timeout_s: float = 60) -> None:
        """POST /connectors, retried while the worker answers 409 (a rebalance under way)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                made = self.request("POST", "/connectors", {"name": name, "config": config})
                assert made["name"] == name, made
                return
            except urllib.error.HTTPError as exc:
                if exc.code != 409 or time.monotonic() > deadline:
                    raise AssertionError(f"POST /connectors {name}: {exc.code} "
                                         f"{exc.read()[:2000]!r}\n{self.describe()}") from exc
                time.sleep(0.5)     # a rebalance: asked again, as a client would

    def status(self, name: str) -> dict:
        return self.request("GET", f"/connectors/{name}/status")

    def running(self, name: str, tasks: int = 1) -> bool:
        """Whether the connector and its ``tasks`` tasks are RUNNING (a FAILED one fails)."""
        self._alive()
        try:
            status = self.status(name)
        except urllib.error.HTTPError as exc:
            if exc.code in (404, 409):     # not yet in the status topic / rebalancing
                return False
            raise
        states = [status["connector"]["state"]] + [t["state"] for t in status["tasks"]]
        assert "FAILED" not in states, f"{json.dumps(status)[:4000]}\n{self.describe()}"
        return len(status["tasks"]) == tasks and set(states) == {"RUNNING"}

    def describe(self, lines: int = 60) -> str:
        parts = []
        for path in (self.out_path, self.log_path):
            if os.path.exists(path):
                with open(path, errors="replace") as fh:
                    tail = fh.read().splitlines()[-lines:]
                parts.append(f"--- {path} ---\n" + "\n".join(tail))
        return "\n".join(parts)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)

    def stop(self, timeout_s: float = 30) -> None:
        """SIGTERM (Connect's shutdown hook stops the herder), SIGKILL at the deadline."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)


def full_lines(path: str) -> list[str]:
    """The newline-terminated lines of ``path`` (a line being written is left out)."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    return text.split("\n")[:-1]


def check_at_least_once(got: list[str], source: list[str]) -> int:
    """Check that ``got`` is ``source`` delivered at least once in order: read front to back,
    each line is either the next line of ``source`` or a line already delivered, after which
    delivery goes on from there (a rewind to a committed offset replays a contiguous range).
    Every line of ``source`` must be there. Returns how many lines were duplicates."""
    index = {line: i for i, line in enumerate(source)}
    assert len(index) == len(source), "the source lines must be unique"
    position = delivered = 0    # next expected line; how many distinct lines delivered so far
    for at, line in enumerate(got):
        i = index.get(line)
        assert i is not None, f"line {at} ({line!r}) is not in the source"
        if i == position or i < delivered:
            position = i + 1
            delivered = max(delivered, position)
        else:
            raise AssertionError(f"line {at} ({line!r}) skips source lines "
                                 f"{position}..{i - 1} ({delivered} delivered so far)")
    assert delivered == len(source), f"{delivered} of {len(source)} source lines delivered"
    return len(got) - len(source)


def append_lines(path: str, lines: list[str]) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))


class PacedWriter(threading.Thread):
    """Appends ``lines`` to the source file in chunks, each once the sink file has as many lines
    as were appended ``ahead`` chunks before: the copy stays under way (a fault injected now hits
    lines in flight) and never runs more than ``ahead`` chunks behind. Clearing ``proceed`` holds
    it before its next chunk. ``error`` is what stopped it, if anything did."""

    def __init__(self, source_file: str, sink_file: str, lines: list[str], chunk: int = 50,
                 ahead: int = 2, timeout_s: float = 120):
        super().__init__(daemon=True, name="connect-paced-writer")
        self.source_file, self.sink_file, self.lines = source_file, sink_file, lines
        self.chunk, self.ahead, self.timeout_s = chunk, ahead, timeout_s
        self.appended = 0
        self.error: BaseException | None = None
        self.proceed = threading.Event()    # cleared: no further chunk until it is set again
        self.proceed.set()

    def run(self) -> None:
        try:
            for start in range(0, len(self.lines), self.chunk):
                if not self.proceed.wait(self.timeout_s):
                    raise TimeoutError(f"held for {self.timeout_s} s at line {start}")
                behind = start - self.ahead * self.chunk
                wait_until(lambda: len(full_lines(self.sink_file)) >= behind, self.timeout_s,
                           f"{behind} lines in the sink file", interval_s=0.02)
                append_lines(self.source_file, self.lines[start:start + self.chunk])
                self.appended = min(start + self.chunk, len(self.lines))
        except BaseException as exc:  # noqa: BLE001 - reported by the test that joins it
            self.error = exc
