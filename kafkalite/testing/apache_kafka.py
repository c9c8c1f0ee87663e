"""Apache Kafka 2.8.2 beside kafkalite: the oracle's brokers and Kafka's own tools.

``scripts/fetch_apache_kafka.sh`` (run by ``scripts/setup.sh``) fetches Kafka 2.8.2's jars from
Maven Central at pinned versions (``jvm/apache-kafka/pom.xml``) into a cache outside git:
``$KAFKALITE_APACHE_KAFKA_HOME`` or ``~/.cache/kafkalite/apache-kafka-2.8.2``, jars in ``libs/``.
Nothing of Kafka's is copied into the project; it runs from the cache.

- :class:`ApacheKafkaCluster` starts N real Kafka brokers (``kafka.Kafka server.properties``, one
  JVM each, ZooKeeper mode) on free loopback ports, on a ZooKeeper connect string (with a chroot of
  their own), waits until every broker's metadata lists all of them, and can ``kill`` (SIGKILL),
  ``restart`` and ``stop`` one broker or all, by pid -- the same shape as
  :class:`kafkalite.local.cluster.LocalCluster`.
- :func:`run_tool` runs one of Kafka's command-line tools by its script name
  (``run_tool("kafka-topics", "--bootstrap-server", addr, "--list")``), as the ``bin/`` scripts
  would: the same main class, the same classpath, log4j to stderr at WARN.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

from kafkalite.local.cluster import BrokerExitedError, ClusterError, wait_until
from kafkalite.local.ports import free_port
from kafkalite.local.procs import ChildProcess, parent_death_preexec

KAFKA_VERSION = "2.8.2"
ENV_HOME = "KAFKALITE_APACHE_KAFKA_HOME"
FETCH_SCRIPT = "scripts/fetch_apache_kafka.sh"

# The bin/ scripts of Kafka 2.8's distribution and the class each one runs (kafka-run-class.sh).
TOOLS: dict[str, str] = {
    "kafka-topics": "kafka.admin.TopicCommand",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-acls": "kafka.admin.AclCommand",
    "kafka-consumer-groups": "kafka.admin.ConsumerGroupCommand",
    "kafka-reassign-partitions": "kafka.admin.ReassignPartitionsCommand",
    "kafka-preferred-replica-election": "kafka.admin.PreferredReplicaLeaderElectionCommand",
    "kafka-leader-election": "kafka.admin.LeaderElectionCommand",
    "kafka-log-dirs": "kafka.admin.LogDirsCommand",
    "kafka-delete-records": "kafka.admin.DeleteRecordsCommand",
    "kafka-broker-api-versions": "kafka.admin.BrokerApiVersionsCommand",
    "kafka-delegation-tokens": "kafka.admin.DelegationTokenCommand",
    "kafka-features": "kafka.admin.FeatureCommand",
    "kafka-console-producer": "kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "kafka.tools.ConsoleConsumer",
    "kafka-consumer-perf-test": "kafka.tools.ConsumerPerformance",
    "kafka-dump-log": "kafka.tools.DumpLogSegments",
    "kafka-get-offsets": "kafka.tools.GetOffsetShell",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "zookeeper-shell": "org.apache.zookeeper.ZooKeeperMainWithTlsSupportForKafka",
}

# what a bin/ script puts before the user's arguments: `zookeeper-shell.sh host:port` runs
# ZooKeeperMainWithTlsSupportForKafka -server host:port
_PREFIXED_ARGS: dict[str, tuple[str, ...]] = {"zookeeper-shell": ("-server",)}

# log4j 1 for the tools, as Kafka's config/tools-log4j.properties: WARN to stderr.
_TOOLS_LOG4J = """log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.stderr.Target=System.err
"""
# the brokers log INFO to their own file, as Kafka's config/log4j.properties does (server.log)
_BROKER_LOG4J = """log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=INFO
"""


class ApacheKafkaNotFoundError(ClusterError):
    """Kafka's jars are not in the cache: the message names the command that fetches them."""


def kafka_home() -> str:
    """Where Kafka 2.8.2's jars are cached (``libs/`` under it)."""
    default = os.path.join(os.path.expanduser("~"), ".cache", "kafkalite",
                           f"apache-kafka-{KAFKA_VERSION}")
    return os.environ.get(ENV_HOME) or default


def libs_dir() -> str:
    """The folder of jars; ApacheKafkaNotFoundError (naming the fix) when it is not there."""
    libs = os.path.join(kafka_home(), "libs")
    jars = [name for name in os.listdir(libs)] if os.path.isdir(libs) else []
    if not any(name.startswith("kafka_2.13-") for name in jars):
        raise ApacheKafkaNotFoundError(
            f"Apache Kafka {KAFKA_VERSION} is not fetched: no kafka_2.13 jar in {libs}. "
            f"Run `bash {FETCH_SCRIPT}` (scripts/setup.sh runs it; it needs Maven and Java) or "
            f"set {ENV_HOME} to a folder whose libs/ holds Kafka {KAFKA_VERSION}'s jars.")
    return libs


def available() -> bool:
    try:
        libs_dir()
    except ApacheKafkaNotFoundError:
        return False
    return shutil.which("java") is not None


def _log4j_file(name: str, text: str) -> str:
    """A log4j properties file in the cache (written once; the same text every time)."""
    folder = os.path.join(kafka_home(), "config")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    if not os.path.exists(path) or open(path).read() != text:
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    return path


def java_command(main_class: str, *args: str, heap: str = "256m",
                 log4j: str | None = None) -> list[str]:
    """``java -cp libs/* main_class args`` as kafka-run-class.sh builds it (a smaller heap)."""
    log4j = log4j or _log4j_file("tools-log4j.properties", _TOOLS_LOG4J)
    return ["java", f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true", f"-Dlog4j.configuration=file:{log4j}",
            "-cp", os.path.join(libs_dir(), "*"), main_class, *args]


def run_tool(tool: str, *args: str, input: str | bytes | None = None, timeout_s: float = 120,
             check: bool = False, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run Kafka's ``tool`` (a bin/ script name, e.g. ``kafka-topics``) with ``args``.

    Output is text. ``check=True`` raises ClusterError with both streams on a non-zero exit.
    """
    main_class = TOOLS.get(tool, tool)
    if tool in _PREFIXED_ARGS:
        args = (*_PREFIXED_ARGS[tool], *args)
    text = not isinstance(input, bytes)
    # the tools start quickly with the client JIT only (TieredStopAtLevel=1) and a serial GC
    proc = subprocess.run(java_command(main_class, *args), input=input, capture_output=True,
                          text=text, timeout=timeout_s, env={**os.environ, **(env or {})},
                          stdin=None if input is not None else subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise ClusterError(f"{tool} {' '.join(args)} exited {proc.returncode}:\n"
                           f"stdout: {proc.stdout}\nstderr: {proc.stderr}")
    return proc


# --------------------------------------------------------------------------------- brokers

@dataclass
class KafkaBrokerProcess(ChildProcess):
    broker_id: int
    port: int
    log_dir: str
    config_path: str
    log_path: str
    process: subprocess.Popen | None = None
    extra_port: int | None = None       # the cluster's extra_listener, when it has one

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


# Settings every oracle broker gets, beside Kafka's own defaults. They mirror what kafkalite's test
# clusters are given, so that both systems are judged on the same configuration:
# group.initial.rebalance.delay.ms=0 is in Kafka's own config/server.properties too.
BASE_SETTINGS: dict[str, object] = {
    "group.initial.rebalance.delay.ms": 0,
    "zookeeper.session.timeout.ms": 6000,
    "controlled.shutdown.retry.backoff.ms": 500,
    "replica.fetch.backoff.ms": 200,
    "log.retention.check.interval.ms": 300_000,
    "auto.create.topics.enable": "true",
}


@dataclass
class ApacheKafkaCluster:
    """N Apache Kafka 2.8.2 brokers on ``zk_connect`` (give it a chroot of its own)."""

    zk_connect: str
    num_brokers: int = 3
    workdir: str | None = None
    overrides: dict = field(default_factory=dict)
    heap: str = "512m"
    start_timeout_s: float = 120.0
    first_broker_id: int = 1
    die_with_parent: int | None = signal.SIGKILL
    # a second listener's name (e.g. SASL_SSL) beside PLAINTEXT, on a port of its own per broker
    # (``broker.extra_port``); its protocol map and security settings come in ``overrides``
    extra_listener: str | None = None

    def __post_init__(self) -> None:
        libs_dir()          # fail at once, naming the fix, when Kafka is not fetched
        self._own_workdir = self.workdir is None
        if self.workdir is None:
            self.workdir = tempfile.mkdtemp(prefix="apache-kafka-")
        os.makedirs(self.workdir, exist_ok=True)
        self.brokers: dict[int, KafkaBrokerProcess] = {}
        for index in range(self.num_brokers):
            broker_id = self.first_broker_id + index
            self.brokers[broker_id] = KafkaBrokerProcess(
                broker_id=broker_id, port=free_port(),
                log_dir=os.path.join(self.workdir, f"kafka-{broker_id}-data"),
                config_path=os.path.join(self.workdir, f"kafka-{broker_id}.properties"),
                log_path=os.path.join(self.workdir, f"kafka-{broker_id}.log"),
                extra_port=free_port() if self.extra_listener else None)

    # --- configuration ------------------------------------------------------------------------
    def settings(self, broker: KafkaBrokerProcess) -> dict[str, object]:
        rf = min(3, self.num_brokers)
        settings: dict[str, object] = {
            "broker.id": broker.broker_id,
            "listeners": f"PLAINTEXT://127.0.0.1:{broker.port}",
            "log.dirs": broker.log_dir,
            "zookeeper.connect": self.zk_connect,
            "default.replication.factor": rf,
            "offsets.topic.replication.factor": rf,
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": min(2, rf),
            **BASE_SETTINGS,
        }
        settings.update(self.overrides)
        if self.extra_listener:
            settings["listeners"] = (f"PLAINTEXT://127.0.0.1:{broker.port},"
                                     f"{self.extra_listener}://127.0.0.1:{broker.extra_port}")
        return settings

    def _write_config(self, broker: KafkaBrokerProcess) -> None:
        with open(broker.config_path, "w") as fh:
            for key, value in self.settings(broker).items():
                # a multi-line value (an inline PEM) as java.util.Properties reads one
                if "\n" in str(value):
                    value = str(value).replace("\\", "\\\\").replace("\n", "\\n")
                fh.write(f"{key}={value}\n")

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> "ApacheKafkaCluster":
        for broker in self.brokers.values():
            if not broker.running:
                self._spawn(broker)
        self.wait_for_brokers(list(self.brokers))
        return self

    def _spawn(self, broker: KafkaBrokerProcess) -> None:
        self._write_config(broker)
        log4j = _log4j_file("broker-log4j.properties", _BROKER_LOG4J)
        command = java_command("kafka.Kafka", broker.config_path, heap=self.heap, log4j=log4j)
        # the broker keeps the default (C2) JIT: -XX:TieredStopAtLevel=1 is for short-lived tools
        command.remove("-XX:TieredStopAtLevel=1")
        preexec = parent_death_preexec(self.die_with_parent) if self.die_with_parent else None
        with open(broker.log_path, "ab") as log_file:
            broker.process = subprocess.Popen(
                command, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, preexec_fn=preexec)  # noqa: PLW1509 - one prctl call

    def wait_for_brokers(self, broker_ids: list[int], timeout_s: float | None = None) -> None:
        """Until every broker in ``broker_ids`` answers Metadata listing all of them."""
        wanted = set(broker_ids)

        def ready() -> bool:
            for broker_id in broker_ids:
                broker = self.brokers[broker_id]
                if not broker.running:
                    raise BrokerExitedError(f"Kafka broker {broker_id} exited "
                                       f"({broker.process.returncode if broker.process else '?'}):"
                                       f"\n{broker.log_tail()}")
                if not wanted <= set(self.metadata_brokers(broker.address)):
                    return False
            return True

        wait_until(ready, timeout_s or self.start_timeout_s,
                   f"Apache Kafka brokers {sorted(wanted)} to list each other",
                   interval_s=0.25, on_timeout=self.describe_logs)

    @staticmethod
    def metadata_brokers(address: str, timeout_s: float = 5.0) -> list[int]:
        """The broker ids in ``address``'s Metadata answer (confluent-kafka, an independent
        client; imported here so that the module loads without it)."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": address, "socket.timeout.ms": 5000,
                             "log_level": 0})
        return list(admin.list_topics(timeout=timeout_s).brokers)

    def kill(self, broker_id: int) -> None:
        """SIGKILL one broker (kill -9) and reap it."""
        broker = self.brokers[broker_id]
        if broker.running:
            broker.process.send_signal(signal.SIGKILL)
            broker.process.wait(30)

    def restart(self, broker_id: int, wait: bool = True) -> None:
        """Start a stopped or killed broker again on the same port and log dir.

        After a kill -9 the broker's ephemeral ``/brokers/ids/<id>`` lives on until its ZooKeeper
        session expires, and Kafka 2.8 exits at start-up while it is there ("node exists"). So this
        first waits until the other brokers' metadata no longer lists it (the controller saw the
        registration go)."""
        broker = self.brokers[broker_id]
        if broker.running:
            raise ClusterError(f"Kafka broker {broker_id} is running; kill or stop it first")
        others = [b for b in self.brokers.values() if b.running]
        if others:
            wait_until(lambda: broker_id not in self.metadata_brokers(others[0].address),
                       self.start_timeout_s,
                       f"the other Kafka brokers to drop broker {broker_id} (session expiry)",
                       interval_s=0.25)
        self._spawn(broker)
        if wait:
            self.wait_for_brokers(list(self.live_ids()))

    def stop_broker(self, broker_id: int, timeout_s: float = 60.0) -> None:
        """SIGTERM (Kafka's controlled shutdown), then SIGKILL after ``timeout_s``."""
        broker = self.brokers[broker_id]
        if not broker.running:
            return
        broker.process.send_signal(signal.SIGTERM)
        try:
            broker.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill(broker_id)

    def stop(self, timeout_s: float = 60.0) -> None:
        """Stop every broker: SIGTERM to all at once, SIGKILL for those still up at the deadline."""
        running = [b for b in self.brokers.values() if b.running]
        for broker in running:
            broker.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for broker in running:
            try:
                broker.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                broker.process.send_signal(signal.SIGKILL)
                broker.process.wait(30)

    def cleanup(self) -> None:
        self.stop()
        if self._own_workdir and self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "ApacheKafkaCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    # --- reading -------------------------------------------------------------------------------
    def live_ids(self) -> list[int]:
        return [b.broker_id for b in self.brokers.values() if b.running]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.address for b in self.brokers.values() if b.running)

    def describe_logs(self, n: int = 40) -> str:
        return "\n".join(f"--- Apache Kafka broker {b.broker_id} ({b.log_path}) ---\n"
                         f"{b.log_tail(n)}" for b in self.brokers.values())

