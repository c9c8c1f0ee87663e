"""``kafkalite topics``, ``leader-election`` and ``reassign`` against real broker processes.

The commands run in-process through ``kafkalite.cli.main.main`` with their output captured.
"""

from __future__ import annotations

import json

import pytest

from cli_tools import run, wait_for

pytestmark = pytest.mark.integration


def create(capsys, conn, topic, *args):
    """``topics --create``, then wait until the brokers' metadata shows the topic (the
    controller answers the create; the other brokers learn of it a moment later)."""
    code, out, err = run(capsys, "topics", "--create", "--topic", topic, *args, *conn)
    assert (code, out, err) == (0, f"Created topic {topic}.\n", "")
    wait_for(lambda: run(capsys, "topics", "--describe", "--topic", topic, *conn)[0] == 0,
             what=f"topic {topic} in the metadata")


@pytest.fixture
def two_brokers(kafkalite_cluster_factory):
    # a follower that stopped is dropped from the ISR after 5 s instead of 30
    return kafkalite_cluster_factory(2, replica_lag_time_max_ms=5000)


def test_topics_create_list_describe_alter_delete(two_brokers, zk_connect, capsys):
    conn = ("--bootstrap-server", two_brokers.bootstrap_servers, "--zookeeper", zk_connect)

    code, out, err = run(capsys, "topics", "--create", "--topic", "orders",
                         "--replica-assignment", "1:2,2:1", "--config", "retention.ms=60000",
                         *conn)
    assert (code, out, err) == (0, "Created topic orders.\n", "")
    # subcommand style works as well
    code, out, _ = run(capsys, "topics", "create", "--topic", "events", "--partitions", "3",
                       "--replication-factor", "2", *conn)
    assert (code, out) == (0, "Created topic events.\n")
    for topic in ("orders", "events"):
        wait_for(lambda t=topic: run(capsys, "topics", "--describe", "--topic", t, *conn)[0] == 0,
                 what=f"topic {topic} in the metadata")

    code, out, _ = run(capsys, "topics", "--list", *conn)
    assert (code, out) == (0, "events\norders\n")

    from kafkalite.client.admin import AdminClient

    with AdminClient(two_brokers.bootstrap_servers, zookeeper=zk_connect) as admin:
        topic_id = admin.topic_ids(["orders"])["orders"]
        admin.close_zookeeper()
    assert topic_id
    code, out, _ = run(capsys, "topics", "--describe", "--topic", "orders", *conn)
    assert code == 0
    assert out.splitlines() == [
        (f"Topic: orders\tTopicId: {topic_id}\tPartitionCount: 2\tReplicationFactor: 2\t"
         f"Configs: retention.ms=60000"),
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2",
        "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,1\tIsr: 2,1",
    ]
    code, out, _ = run(capsys, "topics", "describe", *conn)
    assert code == 0
    assert [line.split("\t")[0] for line in out.splitlines() if not line.startswith("\t")] == \
        ["Topic: events", "Topic: orders"]
    assert sum(line.startswith("\tTopic: events\t") for line in out.splitlines()) == 3

    # alter: a bad value and an unknown key are refused, naming the key
    code, _, err = run(capsys, "topics", "--alter", "--topic", "orders", "--config",
                       "retention.ms=soon", *conn)
    assert code != 0 and err.startswith("error: ") and "retention.ms" in err
    assert err.count("\n") == 1
    code, _, err = run(capsys, "topics", "--alter", "--topic", "orders", "--config",
                       "retention.msec=1", *conn)
    assert code != 0 and "Unknown topic config name: retention.msec; did you mean " \
        "retention.ms?" in err                      # Kafka's words, and the closest name
    code, out, _ = run(capsys, "topics", "--alter", "--topic", "orders", "--config",
                       "cleanup.policy=compact", "--delete-config", "retention.ms", *conn)
    assert (code, out) == (0, "Updated config for topic orders.\n")
    code, out, _ = run(capsys, "topics", "--describe", "--topic", "orders", *conn)
    assert out.splitlines()[0].endswith("\tConfigs: cleanup.policy=compact")

    # mistakes: one error line each, naming the fix
    code, _, err = run(capsys, "topics", "--describe", "--topic", "missing", *conn)
    assert code == 1 and "topic 'missing' does not exist" in err
    code, _, err = run(capsys, "topics", "--create", "--topic", "orders", "--partitions", "1",
                       *conn)
    assert code == 1 and "already exists" in err and "--if-not-exists" in err
    code, _, err = run(capsys, "topics", "--create", "--topic", "bad", "--config",
                       "min.insync.replicas=0", *conn)
    assert code != 0 and "min.insync.replicas" in err
    code, _, err = run(capsys, "topics", *conn)
    assert code == 2 and "--create" in err

    code, out, _ = run(capsys, "topics", "--delete", "--topic", "events", *conn)
    assert code == 0 and "events" in out
    code, out, _ = run(capsys, "topics", "--list", *conn)
    assert out in ("orders\n", "events - marked for deletion\norders\n")


def test_describe_filters_and_preferred_election(two_brokers, zk_connect, capsys):
    conn = ("--bootstrap-server", two_brokers.bootstrap_servers, "--zookeeper", zk_connect)
    create(capsys, conn, "both", "--replica-assignment", "1:2,2:1")
    create(capsys, conn, "only2", "--replica-assignment", "2")
    code, out, _ = run(capsys, "leader-election", "--preferred", "--all-topic-partitions",
                       *conn)
    assert code == 0
    assert out == "Valid replica already elected for partitions both-0, both-1, only2-0\n"

    two_brokers.terminate(2)          # controlled shutdown: leadership moves to broker 1

    def filtered(flag):
        code, out, _ = run(capsys, "topics", "--describe", flag, *conn)
        assert code == 0
        return out

    def under_replicated_both():
        lines = [line for line in filtered("--under-replicated-partitions").splitlines()
                 if "Topic: both\t" in line]
        return lines if len(lines) == 2 else None
    assert wait_for(under_replicated_both, what="under-replicated partitions") == [
        "\tTopic: both\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1",
        "\tTopic: both\tPartition: 1\tLeader: 1\tReplicas: 2,1\tIsr: 1",
    ]
    unavailable = filtered("--unavailable-partitions")
    assert len(unavailable.splitlines()) == 1
    assert unavailable.startswith("\tTopic: only2\tPartition: 0\tLeader: none\tReplicas: 2\t")

    two_brokers.restart(2)

    def back_in_isr():
        return filtered("--under-replicated-partitions") == ""
    wait_for(back_in_isr, 30, "broker 2 back in the ISR")
    code, out, err = run(capsys, "leader-election", "--preferred", "--topic", "both",
                         "--partition", "1", *conn)
    assert (code, out) == (0, ("Successfully completed leader election (PREFERRED) for "
                               "partitions both-1\n")), err
    # the brokers hear of the election from the controller's UpdateMetadata, one after another
    wait_for(lambda: "\tTopic: both\tPartition: 1\tLeader: 2\tReplicas: 2,1\t" in run(
        capsys, "topics", "--describe", "--topic", "both", *conn)[1], 30,
        "the brokers to show the preferred leader")

    code, _, err = run(capsys, "leader-election", "--preferred", "--topic", "nope", *conn)
    assert code == 1 and "topic 'nope' does not exist" in err


def test_reassign_generate_execute_verify(two_brokers, zk_connect, capsys, tmp_path):
    conn = ("--bootstrap-server", two_brokers.bootstrap_servers, "--zookeeper", zk_connect)
    create(capsys, conn, "moving", "--replica-assignment", "1,1")
    topics_file = tmp_path / "topics.json"
    topics_file.write_text(json.dumps({"topics": [{"topic": "moving"}], "version": 1}))
    code, out, _ = run(capsys, "reassign", "--generate", "--topics-to-move-json-file",
                       str(topics_file), "--broker-list", "2", *conn)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert json.loads(lines[1]) == {"version": 1, "partitions": [
        {"topic": "moving", "partition": 0, "replicas": [1], "log_dirs": ["any"]},
        {"topic": "moving", "partition": 1, "replicas": [1], "log_dirs": ["any"]}]}
    assert lines[3] == "Proposed partition reassignment configuration"
    proposed = json.loads(lines[4])
    assert [p["replicas"] for p in proposed["partitions"]] == [[2], [2]]

    plan = tmp_path / "plan.json"
    plan.write_text(lines[4])
    code, out, err = run(capsys, "reassign", "--execute", "--reassignment-json-file", str(plan),
                         *conn)
    assert code == 0, err
    assert "Successfully started partition reassignments for moving-0,moving-1" in out

    def verified():
        code, out, _ = run(capsys, "reassign", "--verify", "--reassignment-json-file",
                           str(plan), *conn)
        assert code == 0
        return out if out.count("is completed.") == 2 else None
    out = wait_for(verified, 30, "the reassignment to complete")
    assert out.splitlines() == ["Status of partition reassignment:",
                                "Reassignment of partition moving-0 is completed.",
                                "Reassignment of partition moving-1 is completed."]

    bad = tmp_path / "bad.json"
    bad.write_text('{"partitions": [{"topic": "moving", "partition": 0}]}')
    code, _, err = run(capsys, "reassign", "--execute", "--reassignment-json-file", str(bad),
                       *conn)
    assert code == 1 and err.startswith("error: ") and '"replicas"' in err
    unknown = tmp_path / "unknown.json"
    unknown.write_text('{"version":1,"partitions":[{"topic":"moving","partition":0,'
                       '"replicas":[7]}]}')
    code, _, err = run(capsys, "reassign", "--execute", "--reassignment-json-file",
                       str(unknown), *conn)
    assert code == 1 and "[7]" in err and "not registered" in err
