"""``kafkalite produce --transactional-id`` (the input as one transaction, committed at its end,
or aborted with ``--abort``) and ``kafkalite consume --isolation-level``, against three real
brokers (rf 3, min.insync.replicas 2), judged by confluent-kafka (librdkafka) read_committed and
read_uncommitted consumers."""

from __future__ import annotations

import io
import uuid

import pytest

from cli_tools import run

pytestmark = pytest.mark.integration

TOPIC = "payments"


def feed(monkeypatch, text: str) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


def confluent_values(bootstrap: str, isolation: str, expected: int) -> list[str]:
    """Every value of TOPIC read from the start by confluent-kafka; reads until ``expected``
    records came, then 2 s more, so a record too many shows up."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"judge-{uuid.uuid4()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": isolation})
    try:
        consumer.subscribe([TOPIC])
        values: list[str] = []
        idle = 0
        while idle < (4 if len(values) >= expected else 120):
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                idle += 1
                continue
            idle = 0
            values.append(msg.value().decode())
        return sorted(values)
    finally:
        consumer.close()


def test_commit_and_abort_from_the_command_line(kafkalite_cluster_factory, capsys, monkeypatch):
    from kafkalite.client.admin import AdminClient
    from kafkalite.client.structs import NewTopic

    cluster = kafkalite_cluster_factory(3, transaction_state_log_num_partitions=5)
    bootstrap = cluster.bootstrap_servers
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, 3, 3, topic_configs={"min.insync.replicas": "2"})])

    feed(monkeypatch, "c1\nc2\nc3\n")
    code, out, err = run(capsys, "produce", "--topic", TOPIC, "--transactional-id", "cli-commit",
                         "--bootstrap-server", bootstrap)
    assert code == 0, err
    assert "Committed the transaction." in err
    feed(monkeypatch, "a1\na2\n")
    code, out, err = run(capsys, "produce", "--topic", TOPIC, "--transactional-id", "cli-abort",
                         "--abort", "--bootstrap-server", bootstrap)
    assert code == 0, err
    assert "Aborted the transaction." in err

    assert confluent_values(bootstrap, "read_committed", 3) == ["c1", "c2", "c3"]
    assert confluent_values(bootstrap, "read_uncommitted", 5) == ["a1", "a2", "c1", "c2", "c3"]

    code, out, err = run(capsys, "consume", "--topic", TOPIC, "--from-beginning",
                         "--isolation-level", "read_committed", "--timeout-ms", "3000",
                         "--bootstrap-server", bootstrap)
    assert code == 0, err
    assert sorted(out.split()) == ["c1", "c2", "c3"]
    code, out, err = run(capsys, "consume", "--topic", TOPIC, "--from-beginning",
                         "--timeout-ms", "3000", "--bootstrap-server", bootstrap)
    assert code == 0, err
    assert sorted(out.split()) == ["a1", "a2", "c1", "c2", "c3"]


def test_transactional_options_are_checked(kafkalite_broker, capsys, monkeypatch):
    feed(monkeypatch, "x\n")
    code, _out, err = run(capsys, "produce", "--topic", TOPIC, "--abort",
                          "--bootstrap-server", kafkalite_broker.bootstrap_servers)
    assert code == 2 and "--abort needs --transactional-id" in err
    code, _out, err = run(capsys, "produce", "--topic", TOPIC, "--transactional-id", "t",
                          "--acks", "1", "--bootstrap-server", kafkalite_broker.bootstrap_servers)
    assert code == 2 and "--transactional-id needs --acks all" in err
