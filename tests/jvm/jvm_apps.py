"""Helpers for the tests that run small Java programs (tests/jvm/src) against both systems.

The programs are compiled once per source text with ``javac`` against the Kafka 2.8.2 jars that
``scripts/fetch_apache_kafka.sh`` fetched (kafka-clients, kafka-streams and their dependencies are
all in its ``libs/``), into a cache outside git: ``~/.cache/kafkalite/jvm-tests/<hash>``. Each
program prints JSON lines; :func:`run_java` returns them parsed. Nothing here uses kafkalite's own
client: what the Java programs did is cross-checked with confluent-kafka (librdkafka).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import uuid

import pytest

from kafkalite.testing.apache_kafka import (FETCH_SCRIPT, ApacheKafkaNotFoundError, java_command,
                                            libs_dir)

SOURCES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "src")
PACKAGE = "kafkalite.jvmtests"


def unique(prefix: str) -> str:
    """A topic, group or application id no other test of the session uses."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _cache_root() -> str:
    return os.path.join(os.path.expanduser("~"), ".cache", "kafkalite", "jvm-tests")


def compile_programs() -> str:
    """The folder of compiled classes (compiled now unless this source text already was)."""
    try:
        libs = libs_dir()
    except ApacheKafkaNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)
    javac = shutil.which("javac")
    if javac is None:
        pytest.fail(f"javac (a JDK 11 or later) is not on PATH: the tests/jvm programs are "
                    f"compiled against the jars `bash {FETCH_SCRIPT}` fetches", pytrace=False)
    files = sorted(glob.glob(os.path.join(SOURCES, "**", "*.java"), recursive=True))
    digest = hashlib.sha256()
    for path in files:
        digest.update(os.path.relpath(path, SOURCES).encode() + b"\0")
        with open(path, "rb") as fh:
            digest.update(fh.read() + b"\0")
    digest.update("\n".join(sorted(os.listdir(libs))).encode())
    target = os.path.join(_cache_root(), digest.hexdigest()[:16])
    if os.path.isdir(target):
        return target
    os.makedirs(_cache_root(), exist_ok=True)
    build = tempfile.mkdtemp(prefix="build-", dir=_cache_root())
    proc = subprocess.run([javac, "-encoding", "UTF-8", "-cp", os.path.join(libs, "*"),
                           "-d", build, *files], capture_output=True, text=True, timeout=180)
    if proc.returncode != 0:
        shutil.rmtree(build, ignore_errors=True)
        pytest.fail(f"javac failed:\n{proc.stdout}\n{proc.stderr}", pytrace=False)
    try:
        os.rename(build, target)
    except OSError:     # another session compiled the same sources meanwhile
        shutil.rmtree(build, ignore_errors=True)
    return target


@pytest.fixture(scope="session")
def jvm_classes() -> str:
    return compile_programs()


def command(classes: str, program: str, *args: str) -> list[str]:
    """``java`` running ``kafkalite.jvmtests.<program>`` with the compiled classes first on the
    classpath, then Kafka's jars (log4j at WARN to stderr, as Kafka's tools)."""
    cmd = java_command(f"{PACKAGE}.{program}", *args, heap="384m")
    at = cmd.index("-cp")
    cmd[at + 1] = classes + os.pathsep + cmd[at + 1]
    return cmd


def parse_lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def run_java(classes: str, program: str, *args: str, timeout_s: float = 150) -> list[dict]:
    """Run a program to its end; its JSON lines, parsed (it must exit 0)."""
    proc = subprocess.run(command(classes, program, *args), capture_output=True, text=True,
                          timeout=timeout_s, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, (
        f"{program} {' '.join(args)} exited {proc.returncode}\n"
        f"stdout:\n{proc.stdout[-5000:]}\nstderr:\n{proc.stderr[-10000:]}")
    return parse_lines(proc.stdout)


# --- confluent-kafka (librdkafka) side --------------------------------------------------------

def create_topic(bootstrap: str, topic: str, partitions: int, replication: int = 3,
                 config: dict | None = None) -> None:
    """Create ``topic`` and wait until every partition has a leader in the metadata."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafkalite.local.cluster import wait_until

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, replication, config=config or {})]
                        )[topic].result(30)

    def led() -> bool:
        meta = admin.list_topics(topic, timeout=5).topics.get(topic)
        return (meta is not None and meta.error is None and len(meta.partitions) == partitions
                and all(p.leader >= 0 for p in meta.partitions.values()))
    wait_until(led, 30, f"leaders for {topic}")


def record_of(msg) -> dict:
    """A confluent-kafka message in the form the Java programs print (Out.record)."""
    kind, ts = msg.timestamp()
    return {"topic": msg.topic(), "partition": msg.partition(), "offset": msg.offset(),
            "timestamp": ts, "timestamp_type": {1: "CreateTime", 2: "LogAppendTime"}[kind],
            "key": None if msg.key() is None else msg.key().hex(),
            "value": None if msg.value() is None else msg.value().hex(),
            "headers": [[k, None if v is None else v.hex()] for k, v in (msg.headers() or [])]}


def read_all(bootstrap: str, topic: str, partitions: int, count: int, timeout_s: float = 60,
             isolation: str = "read_uncommitted") -> list:
    """At least ``count`` messages of ``topic`` from the beginning (librdkafka), as messages."""
    import time

    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("jvm-reader"),
                         "enable.auto.commit": False, "isolation.level": isolation,
                         "enable.partition.eof": False})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        got = []
        deadline = time.monotonic() + timeout_s
        while len(got) < count and time.monotonic() < deadline:
            for msg in consumer.consume(500, timeout=0.5):
                assert msg.error() is None, msg.error()
                got.append(msg)
        assert len(got) >= count, f"read {len(got)} of {count} records of {topic}"
        return got
    finally:
        consumer.close()
