"""A kafkalite broker starts from Apache Kafka 2.8.2's own default ``config/server.properties``.

The file (``tests/data/kafka-2.8.2-server.properties``, Apache License 2.0, from
github.com/apache/kafka at tag 2.8.2) is used as it is but for its two paths: ``log.dirs`` and
``zookeeper.connect``. It has no ``listeners`` line, so Kafka (and kafkalite) listen on
``PLAINTEXT://host.name:port`` with port 9092; the test gives a free port with ``--override
port=N`` (Kafka's own key for that fallback) instead of adding a ``listeners`` line. The broker
then serves produce and consume through confluent-kafka, and its start-up log names the file's
Kafka settings kafkalite does not apply once, in one line.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.config import BROKER_NO_EFFECT
from kafkalite.protocol import messages as m
from kafkalite.local.cluster import request, wait_until
from kafkalite.local.ports import free_port

pytestmark = [pytest.mark.integration]

KAFKA_FILE = Path(__file__).resolve().parents[1] / "data" / "kafka-2.8.2-server.properties"
# the settings of Kafka's file that kafkalite accepts without effect (its
# transaction.state.log.replication.factor and .min.isr apply since the transaction coordinator)
FILE_NO_EFFECT = ["num.network.threads", "num.io.threads", "socket.send.buffer.bytes",
                  "socket.receive.buffer.bytes", "num.recovery.threads.per.data.dir"]


def _with_paths(text: str, log_dir: str, zk_connect: str) -> str:
    """Kafka's file with its two paths replaced, and nothing else."""
    replaced = {"log.dirs=/tmp/kafka-logs": f"log.dirs={log_dir}",
                "zookeeper.connect=localhost:2181": f"zookeeper.connect={zk_connect}"}
    lines = text.splitlines(keepends=True)
    out = [replaced[line.strip()] + "\n" if line.strip() in replaced else line for line in lines]
    assert sum(a != b for a, b in zip(lines, out)) == 2, "Kafka's file changed its paths' lines"
    return "".join(out)


def _log(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def test_broker_starts_from_kafkas_default_server_properties(zk_connect, tmp_path):
    assert all(name in BROKER_NO_EFFECT for name in FILE_NO_EFFECT)
    config = tmp_path / "server.properties"
    config.write_text(_with_paths(KAFKA_FILE.read_text(), str(tmp_path / "kafka-logs"),
                                  zk_connect))
    port = free_port()
    log_path = tmp_path / "broker.log"
    with open(log_path, "wb") as log_file:
        broker = subprocess.Popen(
            [sys.executable, "-m", "kafkalite", "broker", "--config", str(config),
             "--override", f"port={port}"],
            stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=dict(os.environ, PYTHONUNBUFFERED="1"), start_new_session=True)
    try:
        def serving():
            if broker.poll() is not None:
                raise AssertionError(f"broker exited with {broker.returncode}:\n"
                                     f"{_log(log_path)}")
            response = request("127.0.0.1", port, m.MetadataRequest(topics=[]), timeout_s=2.0)
            return [b.node_id for b in response.brokers] == [0] and response.controller_id == 0
        wait_until(serving, 60, "the broker of Kafka's server.properties",
                   on_timeout=lambda: _log(log_path))

        bootstrap = f"127.0.0.1:{port}"
        topic = f"kafka-file-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})   # kept: its futures need it
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        for i in range(10):
            producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i)
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                             "auto.offset.reset": "earliest"})
        try:
            consumer.subscribe([topic])
            got: list[bytes] = []

            def consumed():
                message = consumer.poll(0.5)
                if message is not None:
                    assert message.error() is None, message.error()
                    got.append(message.value())
                return len(got) >= 10
            wait_until(consumed, 60, "ten records consumed", interval_s=0)
            assert got == [b"v%d" % i for i in range(10)]
        finally:
            consumer.close()

        text = _log(log_path)
        notes = [line for line in text.splitlines() if "accepted without effect" in line]
        assert len(notes) == 1, text
        assert f"{len(FILE_NO_EFFECT)} Kafka config(s) accepted without effect" in notes[0], notes[0]
        assert f"for why): {', '.join(FILE_NO_EFFECT)} (" in notes[0], notes[0]
        assert "isn't a known config" not in text
    finally:
        if broker.poll() is None:
            os.kill(broker.pid, signal.SIGTERM)
            try:
                broker.wait(60)
            except subprocess.TimeoutExpired:
                os.kill(broker.pid, signal.SIGKILL)
                broker.wait(10)
    assert broker.returncode == 0, _log(log_path)
