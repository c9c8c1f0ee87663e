"""Consumer groups of the brokers' group coordinator (docs/architecture.md, 9. Consumer groups)
with real Kafka clients, on three broker processes (rf 3, min.insync.replicas 2,
group.initial.rebalance.delay.ms 300).

Group members that are killed run as processes of their own (kafka_group_member.py: a
confluent-kafka consumer that commits synchronously after every batch and logs its rebalance
callbacks, the records it was handed and the commits the coordinator acknowledged). What each
test shows:

- two members split a 6-partition topic 3+3 and together read every record exactly once;
- a member that leaves (close()): the other owns all six partitions well within its session
  timeout (LeaveGroup, not expiry), and goes on from the leaver's commits;
- a member killed with SIGKILL: the others own its partitions within the session timeout plus
  the rebalance time, and start them at (or after) its last acknowledged commit;
- kafka-python: a consumer commits and closes; the next one in the group reads exactly what
  was produced since;
- aiokafka members and ``kcat -G`` read everything and commit it;
- static membership (group.instance.id): a member restarted within its session timeout (after
  a clean close and after kill -9) gets its partitions back and the other member is not
  rebalanced;
- ``kafkalite groups describe --bootstrap-server`` shows the coordinator group with its members
  and lag;
- kill -9 of the group's coordinator while the group consumes and commits: the group goes on
  with the new leader of its ``__consumer_offsets`` partition, and no acknowledged commit is
  lost (nothing below one is read again, and the committed offsets end at or above them).

One cluster serves the module (the coordinator failover comes last and restarts the broker it
killed); every test uses a topic and groups of its own. Every wait polls a condition with a
deadline; the time bounds are what a loaded 2-core machine may need, far below what a broken
mechanism would take (bench/group_rebalance_bench.py measures).
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from collections import Counter

import pytest

from kafkalite.coordinator.partitioner import partition_for
from kafkalite.coordinator.types import OFFSETS_TOPIC
from kafkalite.local.cluster import wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
sys.path.insert(0, HERE)

from kafka_clients_tools import KCAT, create_topic, kcat, module_cluster  # noqa: E402
from kafka_group_member import MemberProcess  # noqa: E402

pytestmark = [
    pytest.mark.system,
    # kafka-python 3 loads its protocol schemas with importlib.resources' legacy functions
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

PARTITIONS = 6
SESSION_TIMEOUT_MS = 6000
# a deadline against a hang, not a measure: each wait below names the event it waits for (an
# assignment, a read) and prints how long it took; bench/group_rebalance_bench.py measures
REBALANCE_DEADLINE_S = 120.0


@pytest.fixture(scope="module")
def cluster(request, zookeeper, tmp_path_factory):
    yield from module_cluster(request, zookeeper, tmp_path_factory, "kafka-consumer-groups",
                              overrides={"group.initial.rebalance.delay.ms": 300})


@pytest.fixture
def members(cluster, tmp_path, request):
    """``start(group, topic, name, *extra) -> MemberProcess``; all are stopped afterwards, and
    their event summaries are printed when the test failed."""
    started: list[MemberProcess] = []

    def start(group: str, topic: str, name: str, *extra: str) -> MemberProcess:
        member = MemberProcess(cluster.bootstrap_servers, group, topic, str(tmp_path / name),
                               "--session-timeout-ms", str(SESSION_TIMEOUT_MS), *extra)
        started.append(member)
        return member

    yield start
    for member in started:
        if member.alive:
            member.stop()
    report = getattr(request.node, "_kafkalite_report_call", None)   # kafkalite's plugin
    if report is not None and report.failed:
        print(describe(started))


def describe(members) -> str:
    return "\n".join(m.summary() + "\n  stderr: " + m.stderr_tail(600) for m in members)


def wait_for(condition, timeout_s: float, what: str, members=()):
    """wait_until that fails with the members' events, and as soon as one of them died."""
    def check():
        for m in members:
            m.check_running()
        return condition()
    return wait_until(check, timeout_s, what, interval_s=0.1,
                      on_timeout=lambda: describe(members))


# --- records -------------------------------------------------------------------------------

def produce(bootstrap: str, topic: str, count: int, start: int = 0) -> list[tuple[int, int]]:
    """``count`` keyed records with acks=all; their (partition, offset) as acknowledged."""
    from confluent_kafka import Producer

    acked, failed = [], []

    def report(err, msg):
        if err is None:
            acked.append((msg.partition(), msg.offset()))
        else:
            failed.append(err)

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "enable.idempotence": True})
    for i in range(start, start + count):
        producer.produce(topic, key=b"key-%d" % i, value=b"%d" % i, on_delivery=report)
        producer.poll(0)
    assert producer.flush(60) == 0, "records still queued after a minute"
    assert not failed, failed[:5]
    assert len(acked) == count
    return acked


class BackgroundProducer:
    """Produces to ``topic`` at about ``rate`` records/s in a thread (acks=all, idempotent)
    until stopped, round-robin over ``partitions`` (which a test may change meanwhile);
    ``acked`` are the (partition, offset) acknowledged."""

    def __init__(self, bootstrap: str, topic: str, rate: float = 300):
        self.bootstrap, self.topic, self.rate = bootstrap, topic, rate
        self.partitions = list(range(PARTITIONS))
        self.sent = 0
        self.acked: list[tuple[int, int]] = []
        self.failed: list = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from confluent_kafka import Producer

        def report(err, msg):
            if err is None:
                self.acked.append((msg.partition(), msg.offset()))
            else:
                self.failed.append(str(err))

        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                             "linger.ms": 5, "enable.idempotence": True,
                             "message.timeout.ms": 120000, "retry.backoff.ms": 100})
        i = 0
        started = time.monotonic()
        while not self._stop.is_set():
            partitions = self.partitions
            producer.produce(self.topic, key=b"key-%d" % i, value=b"%d" % i,
                             partition=partitions[i % len(partitions)], on_delivery=report)
            i += 1
            self.sent = i
            producer.poll(0)
            ahead = i / self.rate - (time.monotonic() - started)
            if ahead > 0:
                self._stop.wait(ahead)
        producer.flush(120)

    def stop(self) -> list[tuple[int, int]]:
        self._stop.set()
        self._thread.join(150)
        assert not self._thread.is_alive(), "the producer did not finish"
        assert not self.failed, self.failed[:5]
        return list(self.acked)


def reads_of(members) -> list[tuple[float, int, int]]:
    return sorted(r for m in members for r in m.reads())


def read_once_each(members, produced) -> None:
    """Every produced record was read exactly once."""
    counts = Counter((p, o) for _, p, o in reads_of(members))
    missing = set(produced) - set(counts)
    assert not missing, f"{len(missing)} records never read: {sorted(missing)[:10]}"
    twice = {k: n for k, n in counts.items() if n > 1}
    assert not twice, f"{len(twice)} records read more than once: {sorted(twice.items())[:10]}"
    assert Counter(produced) == counts


def check_no_reread_below_acked_commits(members) -> dict[int, int]:
    """No record was read again below a commit the coordinator had acknowledged before it was
    read (by any member): what was committed stays committed, through rebalances, restarts and
    coordinator moves. Returns the highest acknowledged commit per partition."""
    events = sorted([(t, 1, p, o) for m in members for t, p, o in m.acked_commits()]
                    + [(t, 0, p, o) for m in members for t, p, o in m.reads()])
    committed: dict[int, int] = {}
    below = []
    for t, kind, p, o in events:
        if kind == 1:
            committed[p] = max(committed.get(p, 0), o)
        elif o < committed.get(p, 0):
            below.append((round(t, 3), p, o, committed[p]))
    assert not below, (f"{len(below)} records read below an acknowledged commit "
                       f"(t, partition, offset, committed): {below[:10]}")
    return committed


def acked_up_to(members) -> dict[int, int]:
    """The highest acknowledged commit per partition, over all the members."""
    out = {p: 0 for p in range(PARTITIONS)}
    for m in members:
        for _, p, o in m.acked_commits():
            out[p] = max(out[p], o)
    return out


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets, as confluent-kafka's ``committed()`` fetches them (a
    consumer with the group's id that never joins it)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    try:
        answer = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)],
                                    timeout=30)
    finally:
        consumer.close()
    assert all(tp.error is None for tp in answer), answer
    return {tp.partition: tp.offset for tp in answer}


def end_offsets(produced) -> dict[int, int]:
    ends = {p: 0 for p in range(PARTITIONS)}
    for p, o in produced:
        ends[p] = max(ends[p], o + 1)
    return ends


def split(members, sizes) -> bool:
    """The members own disjoint partitions covering the topic, in these counts."""
    owned = [m.owned() for m in members]
    return (sorted(len(o) for o in owned) == sorted(sizes)
            and set().union(*owned) == set(range(PARTITIONS))
            and sum(len(o) for o in owned) == PARTITIONS)


def all_read(members, produced) -> bool:
    return {(p, o) for _, p, o in reads_of(members)} >= set(produced)


# --- tests ---------------------------------------------------------------------------------

def test_two_members_split_three_and_three_and_read_each_record_once(cluster, members):
    topic, group = "split", "split-group"
    create_topic(cluster, topic, PARTITIONS)
    produced = produce(cluster.bootstrap_servers, topic, 3000)
    # a reads slowly, so b joins (and the group rebalances) in the middle of the topic
    a = members(group, topic, "a", "--process-ms", "1")
    wait_for(lambda: len(a.owned()) == PARTITIONS and a.read_count() >= 300, 60,
             "a alone, owning all six partitions and reading", [a])
    b = members(group, topic, "b", "--process-ms", "1")
    wait_for(lambda: split([a, b], [3, 3]) and all_read([a, b], produced)
             and acked_up_to([a, b]) == end_offsets(produced), 90,
             "a and b owning three partitions each, every record read and its commit "
             "acknowledged", [a, b])

    assert a.read_count() < 3000, "a read everything before b joined: nothing was shared"
    assert b.read_count() > 0
    read_once_each([a, b], produced)
    committed = check_no_reread_below_acked_commits([a, b])
    assert committed == end_offsets(produced)
    assert committed_offsets(cluster.bootstrap_servers, group, topic) == end_offsets(produced)
    # the one rebalance b's join caused: a gave back its six partitions (after committing what
    # it had read) and took three
    assert [(e["ev"], len(e["parts"])) for e in a.callbacks()] == \
        [("assigned", 6), ("revoked", 6), ("assigned", 3)]
    assert [(e["ev"], len(e["parts"])) for e in b.callbacks()] == [("assigned", 3)]


def test_member_that_leaves_hands_everything_to_the_other(cluster, members):
    topic, group = "leave", "leave-group"
    create_topic(cluster, topic, PARTITIONS)
    # a session timeout far above the bound below: only LeaveGroup can make the hand-over fast
    session = ("--session-timeout-ms", "45000")
    a = members(group, topic, "a", *session)
    b = members(group, topic, "b", *session)
    produced = produce(cluster.bootstrap_servers, topic, 600)
    wait_for(lambda: split([a, b], [3, 3]) and all_read([a, b], produced), 60,
             "a and b owning three partitions each, every record read", [a, b])
    b_owned = b.owned()

    b.stop()        # b commits the batch it is in, then close() sends LeaveGroup
    left_at = b.stopped_at
    assert b.events()[-1]["ev"] == "closed"
    wait_for(lambda: a.owned() == set(range(PARTITIONS)), REBALANCE_DEADLINE_S,
             "a owning all six partitions after b left", [a])
    took = a.assignments(since=left_at)[-1]["t"] - left_at
    print(f"\nleave: a owned all six {took:.2f} s after b was told to close")

    produced += produce(cluster.bootstrap_servers, topic, 600, start=600)
    wait_for(lambda: all_read([a, b], produced), 60, "a reading the new records", [a])
    # b committed everything it read: a starts b's partitions where b stopped
    read_once_each([a, b], produced)
    check_no_reread_below_acked_commits([a, b])
    first_after = {p: min(o for t, q, o in a.reads() if q == p and t > left_at)
                   for p in b_owned}
    assert first_after == {p: max(o for _, q, o in b.reads() if q == p) + 1 for p in b_owned}


def test_killed_member_partitions_move_to_the_survivors(cluster, members):
    topic, group = "kill", "kill-group"
    create_topic(cluster, topic, PARTITIONS)
    # records keep coming while c dies, so every partition of c has some to read afterwards
    producer = BackgroundProducer(cluster.bootstrap_servers, topic, rate=300)
    try:
        trio = [members(group, topic, name, "--max-messages", "20") for name in "abc"]
        a, b, c = trio
        wait_for(lambda: split(trio, [2, 2, 2]) and len(
            {p for _, p, _ in c.acked_commits() if p in c.owned()}) == 2, 60,
            "three members with two partitions each, c committing both of its", trio)
        victim = c.owned()

        c.kill()
        killed_at = c.killed_at
        last_acked = {p: max(o for _, q, o in c.acked_commits() if q == p) for p in victim}
        wait_for(lambda: split([a, b], [3, 3]),
                 REBALANCE_DEADLINE_S,
                 "a and b owning c's partitions", [a, b])
        took = max(m.assignments(since=killed_at)[-1]["t"] for m in (a, b)) - killed_at
        print(f"\nkill -9: a and b owned all six {took:.2f} s after the kill "
              f"(session.timeout.ms {SESSION_TIMEOUT_MS})")
    finally:
        produced = producer.stop()
    wait_for(lambda: all_read(trio, produced), 60, "every record read", [a, b])

    # the survivors start c's partitions at c's last acknowledged commit, or at a later one c
    # got acknowledged but had no time to log; never beyond what c had read
    check_no_reread_below_acked_commits(trio)
    for p in victim:
        first = min(o for m in (a, b) for t, q, o in m.reads() if q == p and t > killed_at)
        c_read = max(o for _, q, o in c.reads() if q == p)
        assert last_acked[p] <= first <= c_read + 1, (p, last_acked[p], first, c_read)
    # nothing lost; read twice only what c read after its last commit
    counts = Counter((p, o) for _, p, o in reads_of(trio))
    assert set(counts) == set(produced)
    twice = {(p, o) for (p, o), n in counts.items() if n > 1}
    assert all(p in victim and o >= last_acked[p] for p, o in twice), sorted(twice)[:10]
    assert max(counts.values()) <= 2


def test_kafka_python_commit_close_and_a_new_consumer_goes_on(cluster):
    from kafka import KafkaConsumer, TopicPartition

    topic, group = "kp-restart", "kp-restart-group"
    create_topic(cluster, topic, PARTITIONS)
    bootstrap = cluster.bootstrap_servers.split(",")
    first_batch = produce(cluster.bootstrap_servers, topic, 500)

    def consume_until(consumer, done) -> list[tuple[int, int]]:
        got: list[tuple[int, int]] = []

        def poll():
            for records in consumer.poll(timeout_ms=200).values():
                got.extend((r.partition, r.offset) for r in records)
            return done(consumer, got)
        wait_until(poll, 60, f"kafka-python reading {topic}")
        return got

    def at_the_end(ends):
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]

        def check(consumer, _got):
            return (consumer.assignment() == set(tps)
                    and all(consumer.position(tp) == ends[tp.partition] for tp in tps))
        return check

    def consumer():
        return KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                             client_id="kafka-python", auto_offset_reset="earliest",
                             enable_auto_commit=False, session_timeout_ms=SESSION_TIMEOUT_MS,
                             heartbeat_interval_ms=1000)

    first = consumer()
    try:
        got = consume_until(first, at_the_end(end_offsets(first_batch)))
        first.commit()
    finally:
        first.close()
    assert Counter(got) == Counter(first_batch)
    assert committed_offsets(cluster.bootstrap_servers, group, topic) == end_offsets(first_batch)

    since = produce(cluster.bootstrap_servers, topic, 300, start=500)
    second = consumer()
    try:
        got = consume_until(second, at_the_end(end_offsets(first_batch + since)))
        second.commit()
    finally:
        second.close()
    assert Counter(got) == Counter(since), "the new consumer did not start at the commit"
    assert committed_offsets(cluster.bootstrap_servers, group, topic) == \
        end_offsets(first_batch + since)


def test_aiokafka_group_and_kcat_balanced_consumer_read_everything(cluster):
    from aiokafka import AIOKafkaConsumer, TopicPartition

    topic = "aio-kcat"
    create_topic(cluster, topic, PARTITIONS)
    produced = produce(cluster.bootstrap_servers, topic, 1200)

    async def group_of_two():
        consumers = [AIOKafkaConsumer(topic, bootstrap_servers=cluster.bootstrap_servers,
                                      group_id="aio-group", client_id=f"aio-{i}",
                                      auto_offset_reset="earliest", enable_auto_commit=False,
                                      session_timeout_ms=SESSION_TIMEOUT_MS,
                                      heartbeat_interval_ms=1000)
                     for i in range(2)]
        reads: list[list] = [[], []]
        for consumer in consumers:
            await consumer.start()
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 90
            while loop.time() < deadline:
                for consumer, got in zip(consumers, reads):
                    batch = await consumer.getmany(timeout_ms=100)
                    if batch:
                        got.extend((r.partition, r.offset) for rs in batch.values()
                                   for r in rs)
                        await consumer.commit({tp: rs[-1].offset + 1
                                               for tp, rs in batch.items()})
                owned = [{tp.partition for tp in c.assignment()} for c in consumers]
                if ([len(o) for o in owned] == [3, 3] and owned[0] | owned[1] == set(range(6))
                        and {r for got in reads for r in got} >= set(produced)):
                    return owned, reads
            raise AssertionError(f"aiokafka group: owned {owned}, "
                                 f"read {sum(map(len, reads))} records")
        finally:
            for consumer in consumers:
                await consumer.stop()

    owned, reads = asyncio.run(group_of_two())
    assert all(reads), "one aiokafka member read nothing"
    counts = Counter(r for got in reads for r in got)
    assert set(counts) == set(produced)
    # a rebalance while the first member read may hand a record to both (at least once)
    print(f"\naiokafka: members read {[len(r) for r in reads]}, "
          f"{sum(n - 1 for n in counts.values())} read twice")
    assert committed_offsets(cluster.bootstrap_servers, "aio-group", topic) == \
        end_offsets(produced)

    if KCAT is None:
        pytest.skip("kcat is not installed (scripts/setup.sh installs it)")
    # kcat's balanced consumer (librdkafka's KafkaConsumer); -e: exit at the end of every
    # assigned partition
    out = kcat("-b", cluster.bootstrap_servers, "-G", "kcat-group", "-X",
               "auto.offset.reset=earliest", "-f", "%p %o\\n", "-e", topic)
    got = [tuple(map(int, line.split())) for line in out.splitlines()]
    assert Counter(got) == Counter(produced)
    # its close() committed what it read
    assert committed_offsets(cluster.bootstrap_servers, "kcat-group", topic) == \
        end_offsets(produced)
    # a second run in the group reads only what came since (-c: exactly that many, or it
    # waits and times out)
    since = produce(cluster.bootstrap_servers, topic, 60, start=1200)
    out = kcat("-b", cluster.bootstrap_servers, "-G", "kcat-group", "-f", "%p %o\\n",
               "-c", "60", topic)
    assert Counter(tuple(map(int, line.split())) for line in out.splitlines()) == \
        Counter(since)


def test_static_member_restarting_within_session_timeout_keeps_its_partitions(cluster,
                                                                             members):
    topic, group = "static", "static-group"
    create_topic(cluster, topic, PARTITIONS)
    # the restarts below must come back within the session timeout
    static = ("--session-timeout-ms", "30000")
    a = members(group, topic, "a", "--instance-id", "static-a", *static)
    b = members(group, topic, "b", "--instance-id", "static-b", *static)
    produced = produce(cluster.bootstrap_servers, topic, 600)
    wait_for(lambda: split([a, b], [3, 3]) and all_read([a, b], produced), 60,
             "a and b owning three partitions each, every record read", [a, b])
    settled_at = time.time()
    a_callbacks = a.callbacks()
    b_owned = b.owned()
    incarnations = [b]

    for how in ("close", "kill -9"):
        old = incarnations[-1]
        if how == "close":
            old.stop()                  # a static member's close() sends no LeaveGroup
        else:
            old.kill()
        new = members(group, topic, f"b-after-{how.replace(' ', '')}",
                      "--instance-id", "static-b", *static)
        incarnations.append(new)
        wait_for(lambda: new.owned(), 60, f"b back after {how}", [a, new])
        assert new.owned() == b_owned, f"b came back after {how} with other partitions"
        assert new.assignments()[0]["member"] != old.assignments()[-1]["member"]
        produced += produce(cluster.bootstrap_servers, topic, 300, start=len(produced))
        wait_for(lambda: all_read([a, *incarnations], produced), 60,
                 f"a and b reading what came after b's {how}", [a, new])

    # a was never rebalanced: no callback since the group settled, and it kept reading
    assert a.callbacks() == a_callbacks, a.callbacks(since=settled_at)
    assert a.owned() == set(range(PARTITIONS)) - b_owned
    assert all(len(m.assignments()) == 1 for m in incarnations[1:])
    check_no_reread_below_acked_commits([a, *incarnations])
    counts = Counter((p, o) for _, p, o in reads_of([a, *incarnations]))
    assert set(counts) == set(produced)
    # the clean restart committed everything; a kill -9 may cost a batch read twice
    assert all(p in b_owned for (p, _), n in counts.items() if n > 1)


def test_groups_describe_shows_the_coordinator_group_with_lag(cluster, capsys, monkeypatch):
    from confluent_kafka import Consumer

    from kafkalite.cli.main import main

    monkeypatch.delenv("KAFKALITE_ZOOKEEPER", raising=False)
    topic, group = "described", "described-group"
    create_topic(cluster, topic, PARTITIONS)
    produced = produce(cluster.bootstrap_servers, topic, 600)
    consumers = {name: Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                                 "group.id": group, "client.id": name,
                                 "enable.auto.commit": False, "auto.offset.reset": "earliest",
                                 "session.timeout.ms": 30000, "heartbeat.interval.ms": 1000})
                 for name in ("reader-a", "reader-b")}
    read: list[tuple[int, int]] = []
    try:
        for consumer in consumers.values():
            consumer.subscribe([topic])

        def poll_both():
            for consumer in consumers.values():
                for message in consumer.consume(100, 0.1):
                    if message.error() is None:
                        read.append((message.partition(), message.offset()))
            owned = [len(c.assignment()) for c in consumers.values()]
            return owned == [3, 3] and set(read) >= set(produced)
        wait_until(poll_both, 60, "two confluent-kafka members reading everything",
                   interval_s=0)
        for consumer in consumers.values():
            consumer.commit(offsets=consumer.position(consumer.assignment()),
                            asynchronous=False)
        ids = {name: c.memberid() for name, c in consumers.items()}

        # 90 more that nobody reads yet; the members stay in the group (librdkafka heartbeats
        # from its own thread)
        more = produce(cluster.bootstrap_servers, topic, 90, start=600)
        lag = Counter(p for p, _ in more)
        ends = end_offsets(produced + more)
        code = main(["groups", "describe", "--group", group,
                     "--bootstrap-server", cluster.bootstrap_servers])
        out, err = capsys.readouterr()
        assert code == 0, err
        lines = [line.split() for line in out.splitlines() if line.strip()]
        assert lines[0] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
                            "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"], out
        rows = {int(r[2]): r for r in lines[1:]}
        assert sorted(rows) == list(range(PARTITIONS)), out
        for p, r in rows.items():
            assert r[:2] == [group, topic]
            assert (int(r[3]), int(r[4]), int(r[5])) == (ends[p] - lag[p], ends[p], lag[p]), r
            assert r[7].startswith("/")
        by_member = {(r[6], r[8]) for r in rows.values()}
        assert by_member == {(ids[name], name) for name in consumers}, out
        assert {name: {p for p, r in rows.items() if r[8] == name} for name in consumers} == \
            {name: {tp.partition for tp in c.assignment()} for name, c in consumers.items()}

        code = main(["groups", "describe", "--group", group, "--state",
                     "--bootstrap-server", cluster.bootstrap_servers])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert out.split()[-3:] == ["range", "Stable", "2"], out
    finally:
        for consumer in consumers.values():
            consumer.close()


@pytest.mark.slow
def test_coordinator_killed_while_the_group_commits(cluster, members):
    """kill -9 of the broker leading the group's __consumer_offsets partition while two members
    consume and commit synchronously. Runs last in the module: the victim is restarted at the
    end."""
    topic, group = "coordinator-failover", "failover-group"
    create_topic(cluster, topic, PARTITIONS)
    # sessions that outlast the failover (the controller notices the dead broker when its
    # ZooKeeper session, 6 s here, expires): the members stay members of the group the new
    # coordinator loads from the log, instead of rejoining as new ones
    pair = [members(group, topic, name, "--max-messages", "50", "--session-timeout-ms", "20000")
            for name in ("a", "b")]
    a, b = pair
    victim = None
    try:
        producer = BackgroundProducer(cluster.bootstrap_servers, topic, rate=300)
        try:
            wait_for(lambda: split(pair, [3, 3]) and len(
                {p for m in pair for _, p, _ in m.acked_commits()}) == PARTITIONS, 60,
                "a and b owning three partitions each and committing", pair)
            # partitions 3-5 get no more records: once the group has read and committed them
            # to the end, their committed offsets can only come from the log the next
            # coordinator loads; 0-2 go on being read and committed across the failover
            producer.partitions = [0, 1, 2]
            quiet = {3, 4, 5}
            switched = producer.sent + 1        # a send under way may use the old list
            wait_for(lambda: len(producer.acked) >= switched, 60,
                     "the records sent to partitions 3-5 acknowledged")
            wait_for(lambda: all(acked_up_to(pair)[p] == end_offsets(producer.acked)[p]
                                 for p in quiet), 60,
                     "partitions 3-5 read and committed to the end", pair)
            # the coordinator: the leader of the group's partition of __consumer_offsets (which
            # the group's first FindCoordinator created)
            [offsets_topic] = cluster.metadata([OFFSETS_TOPIC]).topics
            group_partition = partition_for(group, len(offsets_topic.partitions))
            victim = cluster.wait_for_leader(OFFSETS_TOPIC, group_partition)
            assert victim == coordinator_of(cluster, group), "FindCoordinator disagrees"

            cluster.kill(victim)
            killed_at = time.time()
            acked_before = acked_up_to(pair)
            new_leader = wait_until(
                lambda: (lambda leader: leader if leader not in (-1, victim) else None)(
                    cluster.leader_of(OFFSETS_TOPIC, group_partition)),
                60, f"a new leader of {OFFSETS_TOPIC}-{group_partition}")
            elected_at = time.time()
            # the group goes on: commits acknowledged again on every partition, by the new
            # coordinator (the old one is dead)
            wait_for(lambda: {p for m in pair for t, p, _ in m.acked_commits()
                              if t > elected_at} >= {0, 1, 2}, 90,
                     "commits acknowledged on partitions 0-2 by the new coordinator", pair)
            # what the new coordinator loaded: the commits of 3-5, all made to the old one
            loaded = committed_offsets(cluster.bootstrap_servers, group, topic)
            assert {p: loaded[p] for p in quiet} == {p: acked_before[p] for p in quiet}, \
                "the new coordinator lost commits"
            print(f"\ncoordinator failover: killed broker {victim}, "
                  f"{OFFSETS_TOPIC}-{group_partition} led by {new_leader} after "
                  f"{elected_at - killed_at:.1f} s; refused commits meanwhile: "
                  f"{dict(Counter(e['error'] for m in pair for e in m.failed_commits()))}; "
                  f"lost assignments: {[e for m in pair for e in m.events() if e['ev'] == 'lost']}")
            assert coordinator_of(cluster, group) == new_leader
            # and it went on with the same members, generation and assignment: nothing was
            # revoked, lost or assigned again, and no commit was refused as coming from an
            # unknown member or an old generation
            assert [e for m in pair for e in m.callbacks(since=killed_at)] == []
            assert not [e for m in pair for e in m.failed_commits()
                        if "UNKNOWN_MEMBER" in e["error"] or "GENERATION" in e["error"]]
        finally:
            produced = producer.stop()
        wait_for(lambda: all_read(pair, produced), 90, "every record read", pair)
        # b leaves: a takes b's partitions from the offsets the new coordinator loaded and has
        # been committing since (a lost commit would make a read below it)
        b.stop()
        wait_for(lambda: a.owned() == set(range(PARTITIONS)), REBALANCE_DEADLINE_S,
                 "a owning all six partitions after b left", [a])
        produced += produce(cluster.bootstrap_servers, topic, 300, start=len(produced))
        wait_for(lambda: all_read(pair, produced), 60, "a reading the last records", [a])
        a.stop()
    finally:
        if victim is not None:
            cluster.restart(victim)

    committed = check_no_reread_below_acked_commits(pair)
    counts = Counter((p, o) for _, p, o in reads_of(pair))
    assert set(counts) == set(produced), "records lost"
    fetched = committed_offsets(cluster.bootstrap_servers, group, topic)
    assert all(fetched[p] >= acked_before[p] for p in range(PARTITIONS)), (fetched, acked_before)
    assert all(fetched[p] >= committed[p] for p in range(PARTITIONS)), (fetched, committed)
    assert fetched == end_offsets(produced)
    assert not [e for m in pair for e in m.events() if e["ev"] == "error" and e["fatal"]]


def coordinator_of(cluster, group: str) -> int:
    """The coordinator confluent-kafka's AdminClient finds for ``group`` (FindCoordinator)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": ",".join(
        b.address for b in cluster.live_brokers())})
    [future] = admin.describe_consumer_groups([group], request_timeout=30).values()
    return future.result(timeout=60).coordinator.id
