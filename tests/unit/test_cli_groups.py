"""``kafkalite groups`` for the brokers' coordinator groups, against the fake brokers' in-memory
group coordinator (the command runs in-process), and the tables' formats."""

from __future__ import annotations

import time

import pytest
from test_client_consumer import fill
from test_client_fakebroker import FakeCluster

from kafkalite.cli.groups import describe_lines, format_table, members_lines, state_lines
from kafkalite.cli.main import main
from kafkalite.client import Consumer, TopicPartition
from kafkalite.client.admin import AdminClient, ConsumerGroupPartition
from kafkalite.client.admin_groups import ConsumerGroupDescription, MemberDescription
from kafkalite.client.structs import BrokerMetadata


@pytest.fixture
def cluster(monkeypatch):
    monkeypatch.delenv("KAFKALITE_ZOOKEEPER", raising=False)
    monkeypatch.delenv("KAFKALITE_BOOTSTRAP_SERVER", raising=False)
    c = FakeCluster(1)
    yield c
    c.close()


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.strip()]


def member(cluster, group, *topics, **kw):
    return Consumer(*topics, bootstrap_servers=cluster.bootstrap, group_id=group,
                    auto_offset_reset="earliest", retry_backoff_ms=10, fetch_max_wait_ms=50,
                    heartbeat_interval_ms=100, client_id="app", **kw)


def consume(consumer, want, timeout=5.0):
    got = 0
    deadline = time.monotonic() + timeout
    while got < want and time.monotonic() < deadline:
        got += sum(len(r) for r in consumer.poll(timeout_ms=50).values())
    return got


def test_describe_list_members_state_reset_and_delete(cluster, capsys):
    cluster.create_topic("events", 2)
    fill(cluster, "events", 0, n=10)
    fill(cluster, "events", 1, n=6)
    bs = ("--bootstrap-server", cluster.bootstrap)
    c = member(cluster, "billing", "events", enable_auto_commit=False)
    try:
        assert consume(c, 16) == 16
        c.commit({TopicPartition("events", 0): 7, TopicPartition("events", 1): 6})
        code, out, err = run(capsys, "groups", "list", *bs)
        assert (code, out) == (0, "billing\n")
        assert err.startswith("Note: This will not show information about old Zookeeper")
        code, out, _ = run(capsys, "groups", "--list", "--state", *bs)
        assert rows(out) == [["GROUP", "STATE"], ["billing", "Stable"]]

        code, out, err = run(capsys, "groups", "describe", "--group", "billing", *bs)
        assert code == 0, err
        table = rows(out)
        assert table[0] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
                            "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
        member_id = c._coordinator.member_id
        assert table[1:] == [["billing", "events", "0", "7", "10", "3", member_id,
                              "/127.0.0.1", "app"],
                             ["billing", "events", "1", "6", "6", "0", member_id,
                              "/127.0.0.1", "app"]]

        code, out, _ = run(capsys, "groups", "describe", "--group", "billing", "--members",
                           "--verbose", *bs)
        assert rows(out) == [["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                              "ASSIGNMENT"],
                             ["billing", member_id, "/127.0.0.1", "app", "2", "events(0,1)"]]
        code, out, _ = run(capsys, "groups", "describe", "--group", "billing", "--state", *bs)
        assert rows(out) == [["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE",
                              "#MEMBERS"],
                             ["billing", f"127.0.0.1:{cluster.brokers[0].port}", "(1)", "range",
                              "Stable", "1"]]

        # live members: no reset, no delete (Kafka's message)
        code, _, err = run(capsys, "groups", "reset-offsets", "--group", "billing", "--topic",
                           "events", "--to-earliest", "--execute", *bs)
        assert code == 1 and "Assignments can only be reset if the group 'billing' is " \
                             "inactive, but the current state is Stable." in err
        code, _, err = run(capsys, "groups", "delete", "--group", "billing", *bs)
        assert code == 1 and "NON_EMPTY_GROUP" in err
    finally:
        c.close()

    code, out, err = run(capsys, "groups", "describe", "--group", "billing", *bs)
    assert "Consumer group 'billing' has no active members." in err
    assert [r[:7] for r in rows(out)[1:]] == [["billing", "events", "0", "7", "10", "3", "-"],
                                              ["billing", "events", "1", "6", "6", "0", "-"]]
    code, out, err = run(capsys, "groups", "reset-offsets", "--group", "billing", "--topic",
                         "events:0", "--shift-by", "-5", *bs)
    assert code == 0 and "dry run" in err
    assert rows(out) == [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
                         ["billing", "events", "0", "2"]]
    code, out, _ = run(capsys, "groups", "reset-offsets", "--group", "billing", "--all-topics",
                       "--to-earliest", "--execute", *bs)
    assert code == 0 and rows(out)[1:] == [["billing", "events", "0", "0"],
                                           ["billing", "events", "1", "0"]]
    with AdminClient(cluster.bootstrap) as admin:
        assert {tp: om.offset for tp, om in admin.list_consumer_group_offsets("billing").items()} \
            == {TopicPartition("events", 0): 0, TopicPartition("events", 1): 0}
        [listing] = admin.list_consumer_groups()
        assert (listing, listing.kind, listing.state) == ("billing", "coordinator", "Empty")
    code, out, _ = run(capsys, "groups", "delete", "--group", "billing", *bs)
    assert (code, out) == (0, "Deletion of requested consumer groups ('billing') was "
                              "successful.\n")
    assert run(capsys, "groups", "list", *bs)[:2] == (0, "")
    code, _, err = run(capsys, "groups", "describe", "--group", "billing", *bs)
    assert code == 1 and "consumer group 'billing' does not exist" in err
    code, _, err = run(capsys, "groups", "delete", "--group", "billing", *bs)
    assert code == 1 and "GROUP_ID_NOT_FOUND" in err


def test_state_is_refused_for_zookeeper_groups(cluster, capsys):
    code, _, err = run(capsys, "groups", "describe", "--group", "g", "--state", "--zookeeper",
                       "127.0.0.1:1/x")
    assert code == 2 and "--state" in err and "--bootstrap-server" in err


def test_table_formats():
    assert describe_lines([ConsumerGroupPartition("g", "t", 0, 5, 9, 4, "c-1", "/10.0.0.1",
                                                  "app", "coordinator"),
                           ConsumerGroupPartition("g", None, None, None, None, None, "c-2",
                                                  None, None, "coordinator")]) == [
        "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG        "
        "     CONSUMER-ID     HOST            CLIENT-ID",
        "g               t               0          5               9               4          "
        "     c-1             /10.0.0.1       app",
        "g               -               -          -               -               -          "
        "     c-2             -               -"]
    static = [MemberDescription("c-1", "host-a", "app", "/10.0.0.1",
                                [TopicPartition("t", 1), TopicPartition("t", 0),
                                 TopicPartition("u", 2)]),
              MemberDescription("c-2", None, "app", "/10.0.0.2", [])]
    lines = members_lines("g", static, verbose=True)
    assert lines[0].split() == ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID",
                                "#PARTITIONS", "ASSIGNMENT"]
    assert lines[1].split() == ["g", "c-1", "host-a", "/10.0.0.1", "app", "3", "t(0,1),", "u(2)"]
    assert lines[2].split() == ["g", "c-2", "/10.0.0.2", "app", "0", "-"]
    assert members_lines("g", static[1:])[0].split() == ["GROUP", "CONSUMER-ID", "HOST",
                                                          "CLIENT-ID", "#PARTITIONS"]
    description = ConsumerGroupDescription("g", "coordinator", "Stable", "consumer", "range",
                                           BrokerMetadata(2, "broker-2.example", 9092),
                                           static)
    # Kafka's "%-25s %-25s %-20s %-15s %s" (the first width is the coordinator column's)
    assert state_lines(description) == [
        "GROUP".ljust(25) + " " + "COORDINATOR (ID)".ljust(25) + " "
        + "ASSIGNMENT-STRATEGY".ljust(20) + " " + "STATE".ljust(15) + " #MEMBERS",
        "g".ljust(25) + " broker-2.example:9092 (2) " + "range".ljust(20) + " "
        + "Stable".ljust(15) + " 2"]
    assert format_table(("A", "B"), [("x", None)], (None, None)) == ["A               B",
                                                                     "x               -"]
