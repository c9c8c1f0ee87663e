"""Real kafkalite brokers as child processes, for tests, benchmarks and ``kafkalite cluster up``.

``LocalCluster(zk_connect, num_brokers)`` starts ``python -m kafkalite broker`` processes on free
ports, each with its own log dir under ``workdir`` and its output in ``broker-<id>.log``. It waits
until every broker answers a Metadata request that lists all of them (so a controller has told them
about each other). Fault injection works on the real processes: ``kill`` (SIGKILL), ``pause`` /
``resume`` (SIGSTOP / SIGCONT), ``stop`` (SIGTERM: a clean, controlled shutdown), ``restart``.
Nothing here sleeps for a fixed time: every wait polls a condition with a deadline.

``placement(broker_id) -> Placement`` puts a broker elsewhere than loopback: it binds and
advertises ``placement.host`` and its command line starts with ``placement.command_prefix`` (e.g.
``ip netns exec <ns>``: ``kafkalite.testing.faults`` runs each broker in a network namespace).

``die_with_parent`` (a signal number, e.g. ``signal.SIGKILL``) makes each broker get that signal
when the process that spawned it dies, however it dies (Linux; see ``kafkalite.local.procs``);
``kafkalite cluster up`` uses it so that no broker outlives its launcher.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable

from kafkalite.protocol import messages as m
from kafkalite.protocol.envelope import decode_response, encode_request
from kafkalite.local.ports import free_ports
from kafkalite.local.procs import ChildProcess, Placement


class ClusterError(RuntimeError):
    pass


class BrokerExitedError(ClusterError):
    """A broker process exited while the cluster waited for it (no use waiting longer)."""


def wait_until(condition: Callable[[], object], timeout_s: float, what: str,
               interval_s: float = 0.05, on_timeout: Callable[[], str] | None = None):
    """Poll ``condition`` until it returns something truthy; ClusterError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    last_error = None
    while True:
        try:
            result = condition()
            if result:
                return result
        except BrokerExitedError:
            raise
        except Exception as exc:  # noqa: BLE001 - the condition may fail while things start
            last_error = exc
        if time.monotonic() > deadline:
            detail = f" (last error: {last_error})" if last_error else ""
            extra = f"\n{on_timeout()}" if on_timeout else ""
            raise ClusterError(f"timed out after {timeout_s:.0f} s waiting for {what}{detail}"
                               f"{extra}")
        time.sleep(interval_s)


def request(host: str, port: int, req, timeout_s: float = 5.0):
    """One request over a fresh socket (for probes; clients use kafkalite.client)."""
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.sendall(encode_request(req, 0, 1, "kafkalite-testing"))
        header = _read_exact(sock, 4)
        (length,) = struct.unpack(">i", header)
        _cid, response = decode_response(_read_exact(sock, length), req.API_KEY)
        return response


def _read_exact(sock: socket.socket, n: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            raise ConnectionError("connection closed")
        chunks += chunk
    return bytes(chunks)


@dataclass
class BrokerProcess(ChildProcess):
    broker_id: int
    port: int
    log_dir: str
    log_path: str
    overrides: dict
    placement: Placement = field(default_factory=Placement)
    process: subprocess.Popen | None = None
    paused: bool = False

    @property
    def host(self) -> str:
        return self.placement.host

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass
class LocalCluster:
    zk_connect: str
    num_brokers: int = 1
    workdir: str | None = None
    overrides: dict = field(default_factory=dict)
    start_timeout_s: float = 60.0
    python: str = sys.executable
    first_broker_id: int = 1
    base_port: int | None = None   # fixed ports base_port, base_port+1, ... instead of free ones
    die_with_parent: int | None = None   # signal for the brokers when their spawner dies
    placement: Callable[[int], Placement] | None = None   # where broker <id> runs

    def __post_init__(self):
        self._own_workdir = self.workdir is None
        if self.workdir is None:
            self.workdir = tempfile.mkdtemp(prefix="kafkalite-cluster-")
        os.makedirs(self.workdir, exist_ok=True)
        self.brokers: dict[int, BrokerProcess] = {}
        # all at once: ports picked one by one, each socket closed before the next bind, can
        # repeat (two brokers of one cluster were once given the same port)
        ports = (free_ports(self.num_brokers) if self.base_port is None
                 else [self.base_port + index for index in range(self.num_brokers)])
        for index in range(self.num_brokers):
            broker_id = self.first_broker_id + index
            self.brokers[broker_id] = BrokerProcess(
                broker_id=broker_id,
                port=ports[index],
                log_dir=os.path.join(self.workdir, f"broker-{broker_id}-data"),
                log_path=os.path.join(self.workdir, f"broker-{broker_id}.log"),
                overrides=dict(self.overrides),
                placement=self.placement(broker_id) if self.placement else Placement())

    # --- lifecycle ------------------------------------------------------------------------------
    def start(self) -> "LocalCluster":
        self.spawn()
        self.wait_for_brokers(list(self.brokers))
        return self

    def spawn(self) -> None:
        """Start every broker process without waiting for them (``wait_for_brokers`` does)."""
        for broker in self.brokers.values():
            if not broker.running:
                self._spawn(broker)

    def broker_command(self, broker: BrokerProcess) -> list[str]:
        """The command line that starts ``broker`` (its settings as ``--override`` options)."""
        settings = {
            "broker.id": broker.broker_id,
            "zookeeper.connect": self.zk_connect,
            "listeners": f"PLAINTEXT://{broker.host}:{broker.port}",
            "log.dirs": broker.log_dir,
            "zookeeper.session.timeout.ms": 6000,
            "controlled.shutdown.retry.backoff.ms": 500,
            "replica.fetch.backoff.ms": 200,
            "default.replication.factor": min(3, self.num_brokers),
        }
        settings.update(broker.overrides)
        command = [*broker.placement.command_prefix, self.python, "-m", "kafkalite", "broker"]
        for key, value in settings.items():
            command += ["--override", f"{key}={value}"]
        return command

    def _spawn(self, broker: BrokerProcess) -> None:
        command = self.broker_command(broker)
        log_file = open(broker.log_path, "ab")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        preexec = None
        if self.die_with_parent is not None:
            from kafkalite.local.procs import parent_death_preexec

            preexec = parent_death_preexec(self.die_with_parent)
        try:
            broker.process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT,
                                              stdin=subprocess.DEVNULL, env=env,
                                              start_new_session=True,
                                              preexec_fn=preexec)  # noqa: PLW1509 - one prctl call
        finally:
            log_file.close()
        broker.paused = False

    def wait_for_brokers(self, broker_ids, timeout_s: float | None = None) -> None:
        """Until each broker serves and its metadata lists every broker in ``broker_ids``."""
        expected = set(broker_ids)

        def ready():
            for broker_id in expected:
                broker = self.brokers[broker_id]
                if not broker.running:
                    raise BrokerExitedError(f"broker {broker_id} exited with "
                                       f"{broker.process.returncode if broker.process else None}:"
                                       f"\n{broker.log_tail()}")
                response = request(broker.host, broker.port, m.MetadataRequest(topics=[]),
                                   timeout_s=2.0)
                if not expected <= {b.node_id for b in response.brokers}:
                    return False
                if response.controller_id < 0:
                    return False
            return True
        wait_until(ready, timeout_s or self.start_timeout_s, f"brokers {sorted(expected)}",
                   interval_s=0.1, on_timeout=self.describe_logs)

    def describe_logs(self) -> str:
        return "\n".join(f"--- broker {b.broker_id} ({b.log_path}) ---\n{b.log_tail()}"
                         for b in self.brokers.values())

    def stop(self, timeout_s: float = 30.0, one_by_one: bool = False) -> None:
        """SIGTERM every broker (a clean, controlled shutdown), SIGKILL stragglers.

        ``one_by_one``: stop the brokers in turn, the controller last, each after the previous
        one exited, so each controlled shutdown can move leadership to brokers still running
        (and the controller moves at most once); ``timeout_s`` then applies to each broker.
        """
        if one_by_one:
            try:
                controller = self.controller_id()
            except ClusterError:
                controller = None
            for broker_id in sorted(self.brokers, key=lambda b: (b == controller, b)):
                broker = self.brokers[broker_id]
                if not broker.running:
                    continue
                if broker.paused:
                    os.kill(broker.process.pid, signal.SIGCONT)
                broker.process.terminate()
                try:
                    broker.process.wait(timeout_s)
                except subprocess.TimeoutExpired:
                    broker.process.kill()
                    broker.process.wait()
            return
        for broker in self.brokers.values():
            if broker.running:
                if broker.paused:
                    os.kill(broker.process.pid, signal.SIGCONT)
                broker.process.terminate()
        deadline = time.monotonic() + timeout_s
        for broker in self.brokers.values():
            if broker.process is None:
                continue
            try:
                broker.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                broker.process.kill()
                broker.process.wait()

    def cleanup(self) -> None:
        self.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- fault injection ------------------------------------------------------------------------
    def kill(self, broker_id: int) -> None:
        """kill -9: no controlled shutdown, no flush, no clean-shutdown marker."""
        broker = self.brokers[broker_id]
        if broker.running:
            broker.process.kill()
            broker.process.wait()

    def terminate(self, broker_id: int, timeout_s: float = 30.0) -> int:
        broker = self.brokers[broker_id]
        broker.process.terminate()
        return broker.process.wait(timeout_s)

    def pause(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        os.kill(broker.process.pid, signal.SIGSTOP)
        broker.paused = True

    def resume(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        os.kill(broker.process.pid, signal.SIGCONT)
        broker.paused = False

    def restart(self, broker_id: int, wait: bool = True) -> None:
        broker = self.brokers[broker_id]
        if broker.running:
            self.terminate(broker_id)
        self._spawn(broker)
        if wait:
            self.wait_for_brokers([broker_id])

    # --- what clients need ----------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.address for b in self.brokers.values())

    def live_brokers(self) -> list[BrokerProcess]:
        return [b for b in self.brokers.values() if b.running and not b.paused]

    def metadata(self, topics=None, brokers=None, timeout_s: float = 5.0):
        """Metadata from the first live broker (of ``brokers``, ids) that answers."""
        last = None
        for broker in self.live_brokers():
            if brokers is not None and broker.broker_id not in brokers:
                continue
            try:
                return request(broker.host, broker.port, m.MetadataRequest(
                    topics=topics, allow_auto_topic_creation=False), timeout_s=timeout_s)
            except OSError as exc:
                last = exc
        raise ClusterError(f"no broker answered a Metadata request: {last}")

    def controller_id(self) -> int:
        return self.metadata([]).controller_id

    def partition_metadata(self, topic: str, partition: int, brokers=None):
        for t in self.metadata([topic], brokers=brokers).topics:
            for p in t.partitions:
                if p.partition == partition:
                    return p
        return None

    def leader_of(self, topic: str, partition: int) -> int:
        """The partition's leader as every live broker names it; -1 while they disagree (the
        controller tells them one after another, as Kafka's does) or name none."""
        named = set()
        for broker in self.live_brokers():
            try:
                found = self.partition_metadata(topic, partition, brokers=[broker.broker_id])
            except ClusterError:
                continue            # it died or stopped answering: not a live view
            named.add(-1 if found is None else found.leader)
        return named.pop() if len(named) == 1 else -1

    def wait_for_leader(self, topic: str, partition: int, timeout_s: float = 30.0) -> int:
        """Wait until every live broker names the same leader for the partition; return it."""
        def agreed():
            leader = self.leader_of(topic, partition)
            return (leader,) if leader >= 0 else None      # a tuple: broker 0 is a leader too
        return wait_until(agreed, timeout_s,
                          f"every live broker to name a leader for {topic}-{partition}")[0]
