"""Every reading command with ``--bootstrap-server`` alone, as Kafka's tools work since 2.2.

The default ZooKeeper is made unusable (``KAFKALITE_ZOOKEEPER`` points at a closed port) and any
attempt to open a ZooKeeper session in this process fails the test at once, so a command that
still reads ZooKeeper behind the user's back cannot pass. Elections and reassignments go to the
controller through the brokers (ElectLeaders, Alter/ListPartitionReassignments); consumer groups
are the brokers' (their group coordinator's) there.

The commands run in-process through ``kafkalite.cli.main.main`` with their output captured.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import socket

import pytest

from cli_tools import run, wait_for

pytestmark = pytest.mark.integration

NO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"


@pytest.fixture
def closed_port():
    """A port nothing listens on (bound, never listening, so connections are refused)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    yield sock.getsockname()[1]
    sock.close()


@pytest.fixture
def no_zookeeper(monkeypatch, closed_port):
    """The default ZooKeeper is unusable and opening any ZooKeeper session here fails the
    test; returns a function that lifts the ban (for the checks made with ``--zookeeper``)."""
    from kafkalite.zk.client import ZkClient

    original = ZkClient.start

    def refuse(self):
        raise AssertionError(f"a command opened a ZooKeeper session ({self.connect_string}) "
                             f"although only --bootstrap-server was given")

    monkeypatch.setenv("KAFKALITE_ZOOKEEPER", f"127.0.0.1:{closed_port}/unusable")
    monkeypatch.delenv("KAFKALITE_BOOTSTRAP_SERVER", raising=False)
    monkeypatch.setattr(ZkClient, "start", refuse)

    def allow():
        monkeypatch.setattr(ZkClient, "start", original)

    return allow


@pytest.fixture
def two_brokers(kafkalite_cluster_factory):
    return kafkalite_cluster_factory(2)


def test_topics_with_bootstrap_server_only(two_brokers, zk_client, no_zookeeper, capsys):
    bs = ("--bootstrap-server", two_brokers.bootstrap_servers)

    code, out, err = run(capsys, "topics", "--create", "--topic", "orders",
                         "--replica-assignment", "1:2,2:1", "--config", "retention.ms=60000",
                         "--config", "cleanup.policy=compact", *bs)
    assert (code, out, err) == (0, "Created topic orders.\n", "")
    code, out, err = run(capsys, "topics", "create", "--topic", "events", "--partitions", "3",
                         "--replication-factor", "2", *bs)
    assert (code, out, err) == (0, "Created topic events.\n", "")
    for topic in ("orders", "events"):
        wait_for(lambda t=topic: run(capsys, "topics", "--describe", "--topic", t, *bs)[0] == 0,
                 what=f"topic {topic} in the metadata")

    code, out, err = run(capsys, "topics", "--list", *bs)
    assert (code, out, err) == (0, "events\norders\n", "")
    code, out, _ = run(capsys, "topics", "--list", "--topic", "ord.*", *bs)
    assert (code, out) == (0, "orders\n")

    ids = {t: a.topic_id for t, a in zk_client.get_topic_assignments(["orders", "events"]).items()}
    assert ids["orders"] and ids["events"] and ids["orders"] != ids["events"]

    def describe_orders():
        code, out, err = run(capsys, "topics", "--describe", "--topic", "orders", *bs)
        assert (code, err) == (0, "")
        lines = out.splitlines()
        # until both replicas caught up, the ISR may still be the leader alone
        return lines if "Isr: 1,2" in out and "Isr: 2,1" in out else None

    assert wait_for(describe_orders, what="a full ISR for orders") == [
        (f"Topic: orders\tTopicId: {ids['orders']}\tPartitionCount: 2\tReplicationFactor: 2\t"
         f"Configs: cleanup.policy=compact,retention.ms=60000"),
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2",
        "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,1\tIsr: 2,1",
    ]

    code, out, _ = run(capsys, "topics", "describe", *bs)
    assert code == 0
    heads = [line for line in out.splitlines() if not line.startswith("\t")]
    assert heads[0] == (f"Topic: events\tTopicId: {ids['events']}\tPartitionCount: 3\t"
                        f"ReplicationFactor: 2\tConfigs: ")
    assert heads[1].startswith(f"Topic: orders\tTopicId: {ids['orders']}\tPartitionCount: 2\t")
    rows = [line for line in out.splitlines() if line.startswith("\tTopic: events\t")]
    assert [re.sub(r"Leader: \d.*", "", r) for r in rows] == [
        f"\tTopic: events\tPartition: {p}\t" for p in range(3)]
    for row in rows:
        leader, replicas, isr = re.fullmatch(
            r"\tTopic: events\tPartition: \d\tLeader: (\d)\tReplicas: ([\d,]+)\tIsr: ([\d,]+)",
            row).groups()
        assert sorted(replicas.split(",")) == ["1", "2"] and leader in replicas.split(",")
        assert set(isr.split(",")) <= {"1", "2"}

    code, out, _ = run(capsys, "topics", "--describe", "--topics-with-overrides", *bs)
    assert code == 0 and [line.split("\t")[0] for line in out.splitlines()] == ["Topic: orders"]
    code, out, _ = run(capsys, "topics", "--describe", "--unavailable-partitions", *bs)
    assert (code, out) == (0, "")

    # mistakes still name the fix
    code, _, err = run(capsys, "topics", "--describe", "--topic", "missing", *bs)
    assert code == 1 and "topic 'missing' does not exist" in err
    code, _, err = run(capsys, "topics", "--create", "--topic", "orders", "--partitions", "1", *bs)
    assert code == 1 and "already exists" in err

    # changing configs: a broker writes ZooKeeper for us (IncrementalAlterConfigs), and every
    # broker serves the new override (the env's ZooKeeper is unset)
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("KAFKALITE_ZOOKEEPER")
        code, out, err = run(capsys, "topics", "--alter", "--topic", "orders", "--config",
                             "retention.ms=1000", "--delete-config", "cleanup.policy", *bs)
    assert (code, out) == (0, "Updated config for topic orders.\n"), err
    wait_for(lambda: "Configs: retention.ms=1000\n" in run(
        capsys, "topics", "--describe", "--topic", "orders", *bs)[1],
             what="the altered override in --describe")

    code, out, err = run(capsys, "topics", "--delete", "--topic", "events", *bs)
    assert code == 0 and out in ("Deleted topic events.\n",
                                 "Topic events is marked for deletion.\n"), err
    wait_for(lambda: run(capsys, "topics", "--list", *bs)[1] == "orders\n",
             what="events to leave the metadata")

    # the same describe through ZooKeeper's broker list agrees (and sees the ids in ZooKeeper)
    no_zookeeper()
    zk = ("--zookeeper", zk_client.connect_string)
    code, out, _ = run(capsys, "topics", "--describe", "--topic", "orders", *zk)
    assert code == 0 and out.splitlines()[0].startswith(
        f"Topic: orders\tTopicId: {ids['orders']}\tPartitionCount: 2")


def test_clients_and_tools_with_bootstrap_server_only(two_brokers, zk_client, no_zookeeper,
                                                      capsys, monkeypatch, tmp_path):
    bs = ("--bootstrap-server", two_brokers.bootstrap_servers)
    code, _, err = run(capsys, "topics", "--create", "--topic", "lines",
                       "--replica-assignment", "1:2,2:1", *bs)
    assert code == 0, err
    wait_for(lambda: run(capsys, "topics", "--describe", "--topic", "lines", *bs)[0] == 0,
             what="topic lines in the metadata")

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"a:1\nb:2\nc:3\n")))
    code, out, err = run(capsys, "produce", "--topic", "lines", "--property", "parse.key=true",
                         "--property", "key.separator=:", "--acks", "all", *bs)
    assert (code, out, err) == (0, "", "")
    code, out, err = run(capsys, "consume", "--topic", "lines", "--from-beginning",
                         "--max-messages", "3", "--timeout-ms", "10000",
                         "--property", "print.key=true", *bs)
    assert code == 0 and err == "Processed a total of 3 messages\n"
    assert sorted(out.splitlines()) == ["a\t1", "b\t2", "c\t3"]

    code, out, err = run(capsys, "perf", "produce", "--topic", "lines", "--num-records", "200",
                         "--record-size", "10", "--throughput", "-1", *bs)
    assert code == 0, err
    assert out.splitlines()[-1].startswith("200 records sent")
    code, out, err = run(capsys, "perf", "consume", "--topic", "lines", "--messages", "203",
                         "--timeout", "10000", "--hide-header", *bs)
    assert code == 0, err
    assert out.splitlines()[-2].split(", ")[4] == "203"

    # reassign --generate and --verify read the brokers' metadata only
    topics_file = tmp_path / "topics.json"
    topics_file.write_text(json.dumps({"topics": [{"topic": "lines"}], "version": 1}))
    code, out, err = run(capsys, "reassign", "--generate", "--topics-to-move-json-file",
                         str(topics_file), "--broker-list", "1,2", *bs)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert json.loads(lines[1])["partitions"] == [
        {"topic": "lines", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]},
        {"topic": "lines", "partition": 1, "replicas": [2, 1], "log_dirs": ["any", "any"]}]
    current = tmp_path / "current.json"
    current.write_text(lines[1])
    wait_for(lambda: run(capsys, "reassign", "--verify", "--reassignment-json-file",
                         str(current), *bs)[1].count("is completed.") == 2,
             what="the current assignment to verify as complete")
    other = tmp_path / "other.json"
    other.write_text('{"version":1,"partitions":[{"topic":"lines","partition":0,'
                     '"replicas":[2]}]}')
    code, out, _ = run(capsys, "reassign", "--verify", "--reassignment-json-file", str(other),
                       *bs)
    assert code == 0 and out.splitlines()[1] == (
        "Reassignment of partition lines-0 failed: its replicas are 1,2, not 2.")

    # elections and reassignment listings: the controller's, through the brokers
    monkeypatch.delenv("KAFKALITE_ZOOKEEPER")
    code, out, err = run(capsys, "reassign", "--list", *bs)
    assert (code, out) == (0, "No partition reassignments found.\n"), err
    code, out, err = run(capsys, "leader-election", "--preferred", "--all-topic-partitions", *bs)
    assert code == 0, (out, err)
    # consumer groups: the brokers' coordinator groups (none here), said so on stderr
    code, out, err = run(capsys, "groups", "--list", *bs)
    assert (code, out) == (0, "") and "old Zookeeper-based consumers" in err, err

    # a --verify while a reassignment runs, without ZooKeeper: execute through ZooKeeper, then
    # watch it with --bootstrap-server alone until it completes
    no_zookeeper()
    moving = tmp_path / "moving.json"
    moving.write_text('{"version":1,"partitions":[{"topic":"lines","partition":0,'
                      '"replicas":[2]}]}')
    code, out, err = run(capsys, "reassign", "--execute", "--reassignment-json-file",
                         str(moving), "--zookeeper", zk_client.connect_string)
    assert code == 0, err
    allowed = (("Reassignment of partition lines-0 failed: its replicas "
                "are 1,2, not 2."),     # until the controller picked the request up
               "Reassignment of partition lines-0 is still in progress.",   # replicas 2,1
               "Reassignment of partition lines-0 is completed.")

    def verified():
        code, out, _ = run(capsys, "reassign", "--verify", "--reassignment-json-file",
                           str(moving), *bs)
        assert code == 0
        status = out.splitlines()[1]
        assert status in allowed, status
        return status == allowed[-1]

    wait_for(verified, what="the reassignment to complete")

    # --zookeeper alone: the console consumer finds the brokers there (no default address)
    code, out, err = run(capsys, "consume", "--topic", "lines", "--from-beginning",
                         "--max-messages", "3", "--timeout-ms", "10000",
                         "--zookeeper", zk_client.connect_string)
    assert code == 0 and err == "Processed a total of 3 messages\n", err


def _port_open(port: int) -> bool:
    with contextlib.closing(socket.socket()) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_no_flags_error_names_both_flags_and_the_address(monkeypatch, capsys):
    """Neither flag: the defaults are tried, and the error says which and how to choose."""
    if _port_open(9092):
        pytest.skip("something listens on 127.0.0.1:9092, the default bootstrap server")
    monkeypatch.delenv("KAFKALITE_ZOOKEEPER", raising=False)
    monkeypatch.delenv("KAFKALITE_BOOTSTRAP_SERVER", raising=False)
    for args in (("topics", "--list"), ("topics", "--describe")):
        code, out, err = run(capsys, *args)
        assert code == 1 and out == "" and err.count("\n") == 1, err
        assert "127.0.0.1:9092" in err and "--bootstrap-server HOST:PORT" in err
        assert "--zookeeper HOST:PORT/chroot" in err
