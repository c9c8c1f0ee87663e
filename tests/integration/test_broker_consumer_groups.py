"""kafkalite's consumers in a group of the brokers' group coordinator (Kafka 0.9+), on three real
broker processes: two members split a topic, read every record exactly once with synchronous
commits, one leaves and the other takes everything over; ``kafkalite groups`` with
``--bootstrap-server`` shows the group, its members and its lag."""

from __future__ import annotations

import collections
import time

import pytest

from kafkalite.cli.main import main
from kafkalite.client import AdminClient, Consumer, NewTopic, Producer, TopicPartition

pytestmark = pytest.mark.integration

TOPIC = "orders"


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def produce(bootstrap: str, start: int, count: int) -> None:
    with Producer(bootstrap_servers=bootstrap, acks="all", linger_ms=5) as producer:
        futures = [producer.send(TOPIC, key=b"k%d" % i, value=b"order-%d" % i)
                   for i in range(start, start + count)]
        producer.flush()
        for f in futures:
            f.get(timeout=30)


def drive(consumers, until, seen, timeout_s=90.0):
    """Poll the members in turn from this one thread (each would have its own), committing
    synchronously after every poll that returned records."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for name, consumer in consumers.items():
            got = consumer.poll(timeout_ms=100)
            for recs in got.values():
                seen.extend((r.partition, r.offset, r.value, name) for r in recs)
            if got:
                consumer.commit()
        if until():
            return
    state = {name: sorted(tp.partition for tp in c.assignment()) for name, c in consumers.items()}
    raise AssertionError(f"timed out: assignments {state}, {len(seen)} records read")


def describe_rows(out: str) -> list[list[str]]:
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines[0].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET",
                                "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    return [line.split() for line in lines[1:]]


def test_two_members_share_a_topic_through_the_group_coordinator(kafkalite_cluster_factory,
                                                                  capsys, monkeypatch):
    monkeypatch.delenv("KAFKALITE_ZOOKEEPER", raising=False)
    cluster = kafkalite_cluster_factory(3, **{"group.initial.rebalance.delay.ms": 300,
                                              "offsets.topic.num.partitions": 10})
    bootstrap = cluster.bootstrap_servers
    with AdminClient(bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, 6, 2)])
    produce(bootstrap, 0, 600)

    def member(name):
        return Consumer(TOPIC, bootstrap_servers=bootstrap, group_id="billing",
                        client_id=name, auto_offset_reset="earliest", enable_auto_commit=False,
                        heartbeat_interval_ms=500)

    members = {"a": member("a"), "b": member("b")}
    seen: list = []
    try:
        a, b = members["a"], members["b"]
        drive(members, lambda: len(a.assignment()) == 3 and len(b.assignment()) == 3
              and len(seen) >= 600, seen)
        assert a.assignment() | b.assignment() == {TopicPartition(TOPIC, p) for p in range(6)}
        assert not a.assignment() & b.assignment()
        counts = collections.Counter((p, o) for p, o, _, _ in seen)
        assert len(counts) == 600 and max(counts.values()) == 1, "a record was read twice"
        assert sorted(v for _, _, v, _ in seen) == sorted(b"order-%d" % i for i in range(600))

        # the one that leaves committed everything it read: the other goes on from there
        produce(bootstrap, 600, 60)
        a.close()
        del members["a"]
        drive(members, lambda: len(b.assignment()) == 6 and len(seen) >= 660, seen)
        counts = collections.Counter((p, o) for p, o, _, _ in seen)
        assert len(counts) == 660 and max(counts.values()) == 1, "a record was read twice"
        assert {b.committed(TopicPartition(TOPIC, p)) for p in range(6)} == \
            {b.position(TopicPartition(TOPIC, p)) for p in range(6)}

        # 30 more that nobody reads yet: the group lags by 30
        produce(bootstrap, 660, 30)
        bs = ("--bootstrap-server", bootstrap)
        code, out, err = run(capsys, "groups", "list", *bs)
        assert (code, out) == (0, "billing\n"), err
        code, out, err = run(capsys, "groups", "describe", "--group", "billing", *bs)
        assert code == 0, err
        rows = describe_rows(out)
        member_id = b._coordinator.member_id
        assert [r[2] for r in rows] == [str(p) for p in range(6)]
        assert all(r[0] == "billing" and r[1] == TOPIC for r in rows)
        assert all(int(r[4]) - int(r[3]) == int(r[5]) for r in rows)
        assert sum(int(r[5]) for r in rows) == 30
        assert {(r[6], r[8]) for r in rows} == {(member_id, "b")}
        assert all(r[7].startswith("/") for r in rows)
        code, out, _ = run(capsys, "groups", "describe", "--group", "billing", "--state", *bs)
        state = out.split()
        assert state[-3:] == ["range", "Stable", "1"], out
        code, _, err = run(capsys, "groups", "reset-offsets", "--group", "billing", "--topic",
                           TOPIC, "--to-earliest", "--execute", *bs)
        assert code == 1 and "current state is Stable" in err
    finally:
        for consumer in members.values():
            consumer.close()

    # no members now: the committed offsets and the lag stay; offsets can be reset
    code, out, err = run(capsys, "groups", "describe", "--group", "billing", *bs)
    assert "Consumer group 'billing' has no active members." in err
    rows = describe_rows(out)
    assert sum(int(r[5]) for r in rows) == 30 and {r[6] for r in rows} == {"-"}
    code, out, err = run(capsys, "groups", "reset-offsets", "--group", "billing", "--all-topics",
                         "--shift-by", "-1", "--execute", *bs)
    assert code == 0, err
    rows = describe_rows(run(capsys, "groups", "describe", "--group", "billing", *bs)[1])
    assert sum(int(r[5]) for r in rows) == 36


@pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning")
def test_kafkalite_and_kafka_clients_share_one_group(kafkalite_cluster_factory):
    """Kafka's consumer protocol on both sides: a kafkalite member, a librdkafka member and a
    kafka-python member (each with its own thread, as applications run them) split six
    partitions 2+2+2 under the range assignor, whoever leads, and read every record once."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    kafka = pytest.importorskip("kafka")
    import threading

    cluster = kafkalite_cluster_factory(1, **{"group.initial.rebalance.delay.ms": 300,
                                              "offsets.topic.num.partitions": 4,
                                              "offsets.topic.replication.factor": 1})
    bootstrap = cluster.bootstrap_servers
    with AdminClient(bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, 6, 1)])
    produce(bootstrap, 0, 300)

    seen: dict[str, list] = {"kafkalite": [], "librdkafka": [], "kafka-python": []}
    assigned: dict[str, set] = {name: set() for name in seen}
    stop = threading.Event()
    errors_seen: list = []

    def librdkafka():
        c = confluent_kafka.Consumer({
            "bootstrap.servers": bootstrap, "group.id": "mixed", "client.id": "librdkafka",
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "partition.assignment.strategy": "range", "session.timeout.ms": 10000})
        try:
            c.subscribe([TOPIC])
            while not stop.is_set():
                msg = c.poll(0.1)
                assigned["librdkafka"] = {tp.partition for tp in c.assignment()}
                if msg is None or msg.error():
                    continue
                seen["librdkafka"].append((msg.partition(), msg.offset()))
                c.commit(msg, asynchronous=False)
        except Exception as exc:  # noqa: BLE001
            errors_seen.append(exc)
        finally:
            c.close()

    def kafka_python():
        from kafka.coordinator.assignors.range import RangePartitionAssignor

        c = kafka.KafkaConsumer(
            TOPIC, bootstrap_servers=bootstrap, group_id="mixed", client_id="kafka-python",
            auto_offset_reset="earliest", enable_auto_commit=False,
            partition_assignment_strategy=[RangePartitionAssignor])
        try:
            while not stop.is_set():
                got = c.poll(timeout_ms=100)
                assigned["kafka-python"] = {tp.partition for tp in c.assignment()}
                for recs in got.values():
                    seen["kafka-python"].extend((r.partition, r.offset) for r in recs)
                if got:
                    c.commit()
        except Exception as exc:  # noqa: BLE001
            errors_seen.append(exc)
        finally:
            c.close()

    threads = [threading.Thread(target=fn, daemon=True) for fn in (librdkafka, kafka_python)]
    for t in threads:
        t.start()
    ours = Consumer(TOPIC, bootstrap_servers=bootstrap, group_id="mixed", client_id="kafkalite",
                    auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not errors_seen:
            got = ours.poll(timeout_ms=100)
            assigned["kafkalite"] = {tp.partition for tp in ours.assignment()}
            for recs in got.values():
                seen["kafkalite"].extend((r.partition, r.offset) for r in recs)
            if got:
                ours.commit()
            sizes = [len(a) for a in assigned.values()]
            if sizes == [2, 2, 2] and sum(map(len, seen.values())) >= 300 \
                    and set().union(*assigned.values()) == set(range(6)):
                break
        assert not errors_seen, errors_seen
        assert [len(a) for a in assigned.values()] == [2, 2, 2], assigned
        assert set().union(*assigned.values()) == set(range(6)), assigned
        with AdminClient(bootstrap) as admin:
            [group] = admin.describe_consumer_groups(["mixed"])
        assert group.state == "Stable" and group.assignment_strategy == "range"
        assert sorted(x.client_id for x in group.members) == ["kafka-python", "kafkalite",
                                                              "librdkafka"]
        by_member = {x.client_id: {tp.partition for tp in x.assignment} for x in group.members}
        assert by_member == assigned
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
        ours.close()
    every = [r for records in seen.values() for r in records]
    counts = collections.Counter(every)
    # records read before the last rebalance were committed, so none is read twice
    assert len(counts) == 300 and max(counts.values()) == 1, counts.most_common(3)


def test_console_consumer_group_through_the_brokers(kafkalite_cluster_factory, capsys,
                                                    monkeypatch):
    """``consume --group`` with ``--bootstrap-server`` joins a coordinator group and commits
    when it stops; ``groups`` shows where it stopped. ``perf consume --group`` likewise."""
    monkeypatch.delenv("KAFKALITE_ZOOKEEPER", raising=False)
    cluster = kafkalite_cluster_factory(1, **{"group.initial.rebalance.delay.ms": 0,
                                              "offsets.topic.num.partitions": 2,
                                              "offsets.topic.replication.factor": 1})
    bootstrap = cluster.bootstrap_servers
    bs = ("--bootstrap-server", bootstrap)
    with AdminClient(bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
    produce(bootstrap, 0, 5)
    code, out, err = run(capsys, "consume", "--topic", TOPIC, "--group", "console",
                         "--from-beginning", "--max-messages", "3", "--timeout-ms", "20000", *bs)
    assert (code, out) == (0, "order-0\norder-1\norder-2\n"), err
    code, out, err = run(capsys, "groups", "describe", "--group", "console", *bs)
    assert code == 0, err
    assert describe_rows(out) == [["console", TOPIC, "0", "3", "5", "2", "-", "-", "-"]]
    code, out, err = run(capsys, "consume", "--topic", TOPIC, "--group", "console",
                         "--max-messages", "2", "--timeout-ms", "20000", *bs)
    assert (code, out) == (0, "order-3\norder-4\n"), err       # goes on from the commit
    code, out, err = run(capsys, "perf", "consume", "--topic", TOPIC, "--messages", "5",
                         "--group", "perf-group", "--timeout", "20000", *bs)
    assert code == 0, err
    with AdminClient(bootstrap) as admin:
        assert sorted(admin.list_consumer_groups()) == ["console", "perf-group"]
