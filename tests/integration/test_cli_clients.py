"""``kafkalite produce``, ``consume`` and ``groups`` against a real broker process and ZooKeeper.

The commands run in-process through ``kafkalite.cli.main.main``; stdin is replaced for the
console producer and the output is captured.
"""

from __future__ import annotations

import io
import re
import time

import pytest

from kafkalite.cli.main import main
from kafkalite.client.partitioner import partition_for_key

pytestmark = pytest.mark.integration


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def feed(monkeypatch, text: str) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


def wait_for(condition, timeout_s=20.0, what="condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_produce_from_stdin_and_consume_with_keys(kafkalite_broker, zk_connect, capsys,
                                                  monkeypatch):
    bootstrap = ("--bootstrap-server", kafkalite_broker.bootstrap_servers)
    conn = bootstrap + ("--zookeeper", zk_connect)
    assert run(capsys, "topics", "create", "--topic", "kv", "--partitions", "2", *conn)[0] == 0
    lines = [f"key-{i % 4}:value-{i}" for i in range(12)]
    feed(monkeypatch, "\n".join(lines) + "\n")
    code, out, err = run(capsys, "produce", "--topic", "kv", "--property", "parse.key=true",
                         "--property", "key.separator=:", "--acks", "all",
                         "--compression-type", "lz4", *bootstrap)
    assert (code, out, err) == (0, "", "")

    code, out, err = run(capsys, "consume", "--topic", "kv", "--from-beginning",
                         "--max-messages", "12", "--timeout-ms", "10000",
                         "--property", "print.key=true", "--property", "print.partition=true",
                         "--property", "print.offset=true", *bootstrap)
    assert code == 0 and err == "Processed a total of 12 messages\n"
    got = [line.split("\t") for line in out.splitlines()]
    assert len(got) == 12
    assert sorted(f"{key}:{value}" for _, _, key, value in got) == sorted(lines)
    offsets: dict[int, list[int]] = {}
    for partition, offset, key, value in got:
        p = int(partition.removeprefix("Partition:"))
        assert p == partition_for_key(key.encode(), 2)          # where Kafka puts the key
        offsets.setdefault(p, []).append(int(offset.removeprefix("Offset:")))
        if len(offsets[p]) > 1:
            assert offsets[p][-1] == offsets[p][-2] + 1          # in order per partition

    # one partition from an offset, with timestamps; stops after --timeout-ms without records
    p0 = partition_for_key(b"key-0", 2)
    code, out, err = run(capsys, "consume", "--topic", "kv", "--partition", str(p0),
                         "--offset", "1", "--timeout-ms", "500", "--property",
                         "print.timestamp=true", *bootstrap)
    assert code == 0
    assert len(out.splitlines()) == len(offsets[p0]) - 1
    assert all(re.fullmatch(r"CreateTime:\d{13}\tvalue-\d+", line) for line in out.splitlines())

    # mistakes: one error line naming the fix
    feed(monkeypatch, "no separator here\n")
    code, _, err = run(capsys, "produce", "--topic", "kv", "--property", "parse.key=true",
                       "--property", "key.separator=:", *bootstrap)
    assert code == 1
    assert err.startswith("error: line 1 has no key.separator ':'") and "KEY:VALUE" in err
    code, _, err = run(capsys, "consume", "--topic", "nope", "--timeout-ms", "100", *bootstrap)
    assert (code, err) == (1, ("error: topic 'nope' does not exist (see 'kafkalite topics "
                               "--list')\n"))
    code, _, err = run(capsys, "consume", "--topic", "kv", "--offset", "3", *bootstrap)
    assert code == 2 and "--offset needs --partition" in err
    code, _, err = run(capsys, "consume", "--topic", "kv", "--property", "print.kee=true",
                       *bootstrap)
    assert code == 2 and "print.kee" in err
    code, _, err = run(capsys, "produce", "--topic", "kv", "--producer-property",
                       "linger.mss=5", *bootstrap)
    assert code == 2 and "linger.mss" in err


def describe_rows(out: str) -> list[list[str]]:
    lines = [line for line in out.splitlines() if line.strip()]
    header = lines.index(next(line for line in lines if line.startswith("GROUP ")))
    assert lines[header].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET",
                                     "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    return [line.split() for line in lines[header + 1:]]


def test_groups_describe_reset_and_delete(kafkalite_broker, zk_connect, capsys, monkeypatch):
    from kafkalite import Consumer

    bootstrap = ("--bootstrap-server", kafkalite_broker.bootstrap_servers)
    conn = bootstrap + ("--zookeeper", zk_connect)
    assert run(capsys, "topics", "create", "--topic", "events", "--partitions", "1",
               *conn)[0] == 0
    feed(monkeypatch, "".join(f"event-{i}\n" for i in range(5)))
    assert run(capsys, "produce", "--topic", "events", *bootstrap)[0] == 0

    # a group member reads 3 records and commits them when it stops
    code, out, err = run(capsys, "consume", "--topic", "events", "--group", "billing",
                         "--from-beginning", "--max-messages", "3", *conn)
    assert (code, out) == (0, "event-0\nevent-1\nevent-2\n"), err

    assert run(capsys, "groups", "list", *conn)[:2] == (0, "billing\n")
    # with --zookeeper alone the brokers are found through ZooKeeper
    monkeypatch.delenv("KAFKALITE_BOOTSTRAP_SERVER", raising=False)
    code, out, _ = run(capsys, "groups", "describe", "--group", "billing", "--zookeeper",
                       zk_connect)
    assert code == 0
    assert describe_rows(out) == [["billing", "events", "0", "3", "5", "2", "-", "-", "-"]]
    code, out, _ = run(capsys, "groups", "--describe", "--group", "billing", *conn)
    assert code == 0
    assert "Consumer group 'billing' has no active members." in out
    assert describe_rows(out) == [["billing", "events", "0", "3", "5", "2", "-", "-", "-"]]

    # dry run: the plan is printed, nothing changes
    code, out, err = run(capsys, "groups", "reset-offsets", "--group", "billing", "--topic",
                         "events", "--to-earliest", *conn)
    assert code == 0 and "dry run" in err
    assert [line.split() for line in out.splitlines() if line.strip()] == [
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], ["billing", "events", "0", "0"]]
    assert describe_rows(run(capsys, "groups", "describe", "--group", "billing", *conn)[1]) == \
        [["billing", "events", "0", "3", "5", "2", "-", "-", "-"]]

    code, out, _ = run(capsys, "groups", "--reset-offsets", "--group", "billing", "--topic",
                       "events:0", "--shift-by", "-2", "--execute", *conn)
    assert code == 0 and out.split()[-4:] == ["billing", "events", "0", "1"]
    assert describe_rows(run(capsys, "groups", "describe", "--group", "billing", *conn)[1]) == \
        [["billing", "events", "0", "1", "5", "4", "-", "-", "-"]]
    code, out, _ = run(capsys, "groups", "reset-offsets", "--group", "billing", "--all-topics",
                       "--to-offset", "99", "--execute", *conn)
    assert code == 0 and out.split()[-1] == "5"            # clamped to the log end offset

    # a live member: shown in describe, and resets and deletes are refused
    member = Consumer("events", group_id="billing", zookeeper=zk_connect,
                      bootstrap_servers=kafkalite_broker.bootstrap_servers,
                      enable_auto_commit=False, rebalance_debounce_ms=50)
    try:
        wait_for(lambda: member.poll(timeout_ms=100) is not None and member.assignment(),
                 what="the member's assignment")

        def owned():
            rows = describe_rows(run(capsys, "groups", "describe", "--group", "billing",
                                     *conn)[1])
            return rows if rows[0][6] != "-" else None
        [row] = wait_for(owned, what="the owner in describe")
        assert row[:6] == ["billing", "events", "0", "5", "5", "0"]
        assert row[6].startswith("billing_") and row[7].startswith("/") and row[8] == "-"
        code, _, err = run(capsys, "groups", "reset-offsets", "--group", "billing", "--topic",
                           "events", "--to-earliest", "--execute", *conn)
        assert code == 1 and "NON_EMPTY_GROUP" in err and "stop its consumers" in err
        code, _, err = run(capsys, "groups", "delete", "--group", "billing", *conn)
        assert code == 1 and "NON_EMPTY_GROUP" in err
    finally:
        member.close()
    code, out, _ = run(capsys, "groups", "delete", "--group", "billing", *conn)
    assert (code, out) == (0, ("Deletion of requested consumer groups ('billing') was "
                               "successful.\n"))
    assert run(capsys, "groups", "list", *conn)[:2] == (0, "")
    code, _, err = run(capsys, "groups", "describe", "--group", "billing", *conn)
    assert code == 1 and "consumer group 'billing' does not exist" in err
    code, _, err = run(capsys, "groups", "reset-offsets", "--group", "billing", "--topic",
                       "nope", "--to-latest", *conn)
    assert code == 1 and "topic 'nope' does not exist" in err
