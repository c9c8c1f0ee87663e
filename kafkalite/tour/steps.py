"""The steps of ``kafkalite tour``, in the seeds' order: each shows one idea of the classic
architecture on a running ``cluster up``, with the console open beside it, and checks what it
predicted. Topic and group names carry the run's id, so a second tour starts clean."""

from __future__ import annotations

import os
import tempfile

from kafkalite.client import AdminClient, TopicPartition
from kafkalite.client.partitioner import partition_for_key
from kafkalite.tour.runner import Tour, TourError

KEYS = ["ada", "grace", "linus", "ada", "barbara", "grace", "ada", "ken"]


def admin(t: Tour) -> AdminClient:
    return AdminClient(t.bootstrap, request_timeout_ms=10000)


def partitions(t: Tour, topic: str):
    with admin(t) as a:
        return a.describe_topics([topic])[0].partitions


def end_offsets(t: Tour, topic: str, count: int) -> dict[int, int]:
    with admin(t) as a:
        return {tp.partition: off for tp, off in a._list_offsets(  # noqa: SLF001
            [TopicPartition(topic, p) for p in range(count)], -1).items()}


def broker_count(t: Tour) -> int:
    with admin(t) as a:
        return len(a.describe_cluster().brokers)


def consumed(t: Tour, topic: str, count: int, *extra: str) -> list[list[str]]:
    start = [] if "--offset" in extra else ["--from-beginning"]
    out = t.kafkalite("consume", "--topic", topic, *start, "--max-messages",
                      str(count), "--timeout-ms", "20000", "--property", "print.partition=true",
                      "--property", "print.offset=true", "--property", "print.key=true", *extra)
    return [line.split("\t") for line in out.splitlines() if line.strip()]


def step_topics(t: Tour) -> None:
    rf = min(3, broker_count(t))
    topic = t.name("orders")
    t.say(f"A topic is split into partitions; each partition is an append-only log kept on "
          f"{rf} broker(s): one leader that takes the writes, and followers that copy it.")
    t.look(f"topic {topic} appears, each partition drawn on {rf} broker(s): one LEADER, the "
           f"others '✓ in sync'.")
    t.kafkalite("topics", "--create", "--topic", topic, "--partitions", "3",
                "--replication-factor", str(rf))
    t.kafkalite("topics", "--describe", "--topic", topic)
    t.check(f"3 partitions, each with a leader and {rf} in-sync replicas",
            lambda: len(ps := partitions(t, topic)) == 3 and all(
                p.leader >= 0 and len(p.isr) == rf for p in ps))


def step_keys(t: Tour) -> None:
    topic = t.name("orders")
    t.say("A record's key chooses its partition: murmur2(key) modulo the partition count, as "
          "Kafka does, so every record of one key lands in the same partition.")
    predicted = {k: partition_for_key(k.encode(), 3) for k in KEYS}
    t.say("Predicted: " + ", ".join(f"{k} -> partition {p}" for k, p in sorted(predicted.items())))
    t.look("the HW/LEO numbers of the leaders grow where the keys land.")
    lines = "".join(f"{k}:{n}\n" for n, k in enumerate(KEYS))
    t.kafkalite("produce", "--topic", topic, "--property", "parse.key=true",
                "--property", "key.separator=:", input_text=lines)
    rows = consumed(t, topic, len(KEYS))

    def landed():
        got = {row[2]: int(row[0].removeprefix("Partition:")) for row in rows}
        return len(rows) == len(KEYS) and got == predicted
    t.check("every key in its predicted partition", landed, timeout_s=1)


def step_offsets(t: Tour) -> None:
    topic = t.name("orders")
    p = partition_for_key(b"ada", 3)
    t.say("Each record has an offset in its partition (0, 1, 2, ...). A consumer chooses where "
          "to read from, so any offset can be read again: the log is not a queue that empties.")
    t.look(f"the leader of {topic}-{p} shows HW (what consumers may read) and LEO.")
    in_p = [str(n) for n, k in enumerate(KEYS) if partition_for_key(k.encode(), 3) == p]
    rows = consumed(t, topic, 2, "--partition", str(p), "--offset", "1")
    t.check(f"reading {topic}-{p} from offset 1 gives offsets 1 and 2: the 2nd and 3rd records "
            f"written to it, {in_p[1]} and {in_p[2]}",
            lambda: [r[1] for r in rows] == ["Offset:1", "Offset:2"]
            and [r[3] for r in rows] == in_p[1:3], timeout_s=1)
    t.kafkalite("consume", "--topic", topic, "--partition", str(p), "--offset", "earliest",
                "--max-messages", "1", "--timeout-ms", "20000", "--property", "print.offset=true")
    t.say("Replayed from the start: offset 0 again, as often as you like.")


def step_order(t: Tour) -> None:
    topic = t.name("sequence")
    t.say("Order holds within a partition, not across them: records 0..29 written round the "
          "keys k0, k1, k2 come back in order per partition, interleaved differently overall.")
    t.kafkalite("topics", "--create", "--topic", topic, "--partitions", "3",
                "--replication-factor", "1")
    lines = "".join(f"k{n % 3}:{n}\n" for n in range(30))
    t.kafkalite("produce", "--topic", topic, "--property", "parse.key=true",
                "--property", "key.separator=:", input_text=lines)
    rows = consumed(t, topic, 30)
    per_partition: dict[str, list[int]] = {}
    for row in rows:
        per_partition.setdefault(row[0], []).append(int(row[3]))
    t.check("each partition's values ascending",
            lambda: len(rows) == 30 and all(v == sorted(v) for v in per_partition.values()),
            timeout_s=1)
    overall = [int(r[3]) for r in rows]
    t.say(f"Overall the consumer saw {overall[:8]}...: "
          + ("not the order they were written in." if overall != sorted(overall) else
             "by chance in order this time; nothing promises it."))


def step_groups(t: Tour) -> None:
    topic = t.name("orders")
    queue, pubsub = t.name("billing"), t.name("audit")
    t.say(f"A consumer group shares the partitions: each partition has one owner in the group "
          f"(a queue). Two groups each read everything (publish-subscribe). Group {queue} gets "
          f"2 members, group {pubsub} 4 members for 3 partitions: one of them stays idle.")
    t.look("the consumer groups: an arrow from each member to the partitions it owns; the idle "
           "member says 'idle (owns nothing)'.")
    outputs = []
    for group, members in ((queue, 2), (pubsub, 4)):
        for n in range(members):
            path = os.path.join(tempfile.gettempdir(), f"tour-{group}-{n}.out")
            outputs.append((group, path))
            t.start_background(["consume", "--topic", topic, "--group", group,
                                "--bootstrap-server", t.bootstrap, "--from-beginning"], path)

    def shared(group: str, members: int):
        def check():
            with admin(t) as a:
                desc = a.describe_consumer_groups([group], kind="coordinator")[0]
            owned = [tp for m in desc.members for tp in m.assignment]
            busy = [m for m in desc.members if m.assignment]
            return (desc.state == "Stable" and len(desc.members) == members
                    and sorted(tp.partition for tp in owned) == [0, 1, 2]
                    and len(busy) == min(members, 3))
        return check
    try:
        t.check(f"{queue}: 2 members share the 3 partitions, each owned once",
                shared(queue, 2), timeout_s=60)
        t.check(f"{pubsub}: 3 of its 4 members own one partition each, one is idle",
                shared(pubsub, 4), timeout_s=60)

        def everyone_read_everything():
            for group in (queue, pubsub):
                values = []
                for g, path in outputs:
                    if g == group:
                        with open(path) as f:
                            values += f.read().split()
                if sorted(values) != sorted(str(n) for n in range(len(KEYS))):
                    return False
            return True
        t.check(f"each group read all {len(KEYS)} records exactly once",
                everyone_read_everything, timeout_s=30)
    finally:
        t.stop_background()


def _pids(t: Tour) -> dict[int, int]:
    from kafkalite.cli.cluster import read_pidfile

    info = read_pidfile(t.data_dir)
    if info is None:
        raise TourError(f"no cluster.pid in {t.data_dir}: the kill -9 steps need the cluster "
                        f"of 'kafkalite cluster up --data-dir DIR' (pass --data-dir DIR)")
    return {e["broker_id"]: e["pid"] for e in info["processes"] if e["role"] == "broker"}


def _restart(t: Tour, broker_id: int) -> None:
    t.kafkalite("cluster", "restart-broker", str(broker_id), "--data-dir", t.data_dir)


def step_replication(t: Tour) -> None:
    if broker_count(t) < 3:
        t.say("(needs 3 live brokers: 'kafkalite cluster up --brokers 3'; skipped)")
        return
    topic = t.name("replicated")
    t.say("With replication factor 3 and acks=all, a record is acknowledged once every in-sync "
          "replica has it. Kill -9 the leader: the controller elects another in-sync replica, "
          "and nothing acknowledged is lost.")
    t.kafkalite("topics", "--create", "--topic", topic, "--partitions", "1",
                "--replication-factor", "3", "--config", "min.insync.replicas=2")
    t.kafkalite("produce", "--topic", topic, "--acks", "all",
                input_text="".join(f"{n}\n" for n in range(10)))
    leader = partitions(t, topic)[0].leader
    t.look(f"broker {leader} turns DEAD (hatched, dashed) once its ZooKeeper session ends; "
           f"♛ LEADER of {topic}-0 moves to another broker; the timeline says why.")
    t.kill_9(_pids(t)[leader], f"broker {leader}, the leader of {topic}-0")
    new = t.check(f"a new leader for {topic}-0 from the ISR, without broker {leader}",
                  lambda: (p := partitions(t, topic)[0]).leader not in (-1, leader)
                  and leader not in p.isr and p, timeout_s=60)
    t.say(f"Leader now {new.leader}, ISR {new.isr}.")
    rows = consumed(t, topic, 10)
    t.check("all 10 acknowledged records are still there", lambda: len(rows) == 10, timeout_s=1)
    t.look(f"broker {leader} comes back alive, catches up and rejoins the ISR ('✓ in sync').")
    _restart(t, leader)
    t.check(f"broker {leader} rejoined the ISR of {topic}-0",
            lambda: leader in partitions(t, topic)[0].isr, timeout_s=60)


def step_controller(t: Tour) -> None:
    if broker_count(t) < 2:
        t.say("(needs 2 live brokers; skipped)")
        return
    with admin(t) as a:
        controller = a.describe_cluster().controller_id
    t.say(f"Broker {controller} is the controller: it holds the ephemeral /controller znode and "
          f"elects leaders. Kill it: its znode vanishes with its session and the first broker to "
          f"create /controller again takes over, with a higher controller epoch.")
    t.kafkalite("zk", "get", "/controller")
    t.look("the ★ controller mark moves to another broker; the ZooKeeper box shows the new "
           "epoch.")
    t.kill_9(_pids(t)[controller], f"broker {controller}, the controller")

    def moved():
        with admin(t) as a:
            now = a.describe_cluster().controller_id
        return now not in (-1, controller) and now
    new = t.check(f"another broker became the controller (not {controller})", moved,
                  timeout_s=60)
    t.kafkalite("zk", "get", "/controller_epoch")
    t.say(f"Broker {new} is the controller now.")
    _restart(t, controller)
    t.check(f"broker {controller} is back as an ordinary broker",
            lambda: broker_count(t) >= 3 or controller in _live_ids(t), timeout_s=60)


def _live_ids(t: Tour) -> set[int]:
    with admin(t) as a:
        return {b.node_id for b in a.describe_cluster().brokers}


def step_retention(t: Tour) -> None:
    from kafkalite.client.admin_configs import ConfigResource

    topic = t.name("short-lived")
    t.say("Retention deletes whole segments, never single records: a segment goes once its "
          "newest record is older than retention.ms (the active one too, after a new empty "
          "segment is rolled, as Kafka 2.8 does). Here segments of 1 KiB and retention.ms=1000, "
          "so they go at the next retention check and the earliest offset moves up.")
    t.kafkalite("topics", "--create", "--topic", topic, "--partitions", "1",
                "--replication-factor", "1", "--config", "segment.bytes=1024",
                "--config", "retention.ms=1000")
    for first in range(0, 60, 15):      # four produce runs: four batches of ~1 KiB, so
        pad = "x" * 60                  # four segments (a batch is never split)
        t.kafkalite("produce", "--topic", topic,
                    input_text="".join(f"record-{n:03d}-{pad}\n" for n in range(first, first + 15)),
                    input_shown=f"seq -f 'record-%03g-{pad}' {first} {first + 14}")
    with admin(t) as a:
        broker = str(partitions(t, topic)[0].leader)
        key = ConfigResource("BROKER", broker, ["log.retention.check.interval.ms"])
        entry = a.describe_configs([key])
        interval_ms = int(next(iter(entry.values()))["log.retention.check.interval.ms"].value)
    if interval_ms > 60000:
        t.say(f"This cluster checks retention every {interval_ms // 1000} s "
              f"(log.retention.check.interval.ms); start it with 'kafkalite cluster up "
              f"--override log.retention.check.interval.ms=5000' to watch it within the tour. "
              f"Not waiting for it now.")
        return

    def earliest():
        with admin(t) as a:
            got = a._list_offsets([TopicPartition(topic, 0)], -2)  # noqa: SLF001
        return got.get(TopicPartition(topic, 0), 0) > 0 and got
    start = t.check("old segments deleted: the earliest offset is above 0", earliest,
                    timeout_s=interval_ms / 1000 + 30)
    t.say(f"Earliest offset now {start[TopicPartition(topic, 0)]}: what lay before is gone.")


TXN_TOPIC = "__transaction_state"


def _coordinator(t: Tour, transactional_id: str) -> tuple[int, int]:
    """``(partition of __transaction_state, its leader)`` for ``transactional_id``: Kafka's
    ``abs(javaHashCode(id)) % partitions`` (``Utils.abs``: MIN_VALUE is 0)."""
    from kafkalite.jvm_hashing import java_string_hash

    parts = partitions(t, TXN_TOPIC)
    h = java_string_hash(transactional_id)
    partition = (0 if h == -(1 << 31) else abs(h)) % len(parts)
    return partition, next(p.leader for p in parts if p.partition == partition)


def _stable_and_high(t: Tour, topic: str, count: int) -> dict[int, tuple[int, int]]:
    """``{partition: (last stable offset, high watermark)}`` asked of the leaders."""
    tps = [TopicPartition(topic, p) for p in range(count)]
    with admin(t) as a:
        high = a._list_offsets(tps, -1)                          # noqa: SLF001
        stable = a._list_offsets(tps, -1, isolation_level=1)     # noqa: SLF001
    return {tp.partition: (stable[tp], high[tp]) for tp in tps if tp in stable and tp in high}


def _values(t: Tour, topic: str, isolation: str) -> list[str]:
    out = t.kafkalite("consume", "--topic", topic, "--from-beginning", "--isolation-level",
                      isolation, "--timeout-ms", "5000", show_lines=20)
    return sorted(line for line in out.splitlines() if line.strip())


def step_exactly_once(t: Tour) -> None:
    if broker_count(t) < 3:
        t.say("(needs 3 live brokers: 'kafkalite cluster up --brokers 3'; skipped)")
        return
    topic = t.name("payments")
    committed, aborted = t.name("tx-commit"), t.name("tx-abort")
    t.say("A transaction writes to several partitions all or nothing. Its records go into the "
          "logs at once, but a read_committed consumer reads only up to the last stable offset "
          "(LSO): the first record of a transaction still open. A COMMIT marker makes them "
          "visible; after an ABORT marker they stay in the log and read_committed consumers "
          "skip them. The transaction coordinator keeps each transaction's state in the "
          "replicated log __transaction_state.")
    t.kafkalite("topics", "--create", "--topic", topic, "--partitions", "3",
                "--replication-factor", "3", "--config", "min.insync.replicas=2")
    t.look("the Transactions band: one id turns ✔ COMMITTED, the other ✖ ABORTED; the timeline "
           "says which producer committed or aborted a transaction on which partitions.")
    keyed = ["--property", "parse.key=true", "--property", "key.separator=:"]
    t.kafkalite("produce", "--topic", topic, "--transactional-id", committed, *keyed,
                input_text="".join(f"k{n}:paid-{n}\n" for n in range(6)))
    t.kafkalite("produce", "--topic", topic, "--transactional-id", aborted, "--abort", *keyed,
                input_text="".join(f"k{n}:refund-{n}\n" for n in range(3)))
    paid = sorted(f"paid-{n}" for n in range(6))
    refunds = sorted(f"refund-{n}" for n in range(3))
    seen_committed = _values(t, topic, "read_committed")
    t.check("read_committed sees the 6 committed records, not the aborted ones",
            lambda: seen_committed == paid, timeout_s=1)
    seen_all = _values(t, topic, "read_uncommitted")
    t.check("read_uncommitted sees all 9: the aborted records are still in the log",
            lambda: seen_all == sorted(paid + refunds), timeout_s=1)

    survivor = t.name("tx-failover")
    coordinator_partition, coordinator = _coordinator(t, survivor)
    t.say(f"Now a transaction through a kill -9 of its coordinator. Transactional id {survivor} "
          f"belongs to {TXN_TOPIC} partition abs(hash) % partitions = {coordinator_partition}, "
          f"led by broker {coordinator}: that broker is its coordinator. The producer writes "
          f"and, before the end of its input, the coordinator is killed.")
    before = {p: hw for p, (_lso, hw) in _stable_and_high(t, topic, 3).items()}
    writer = t.start_typing(["produce", "--topic", topic, "--transactional-id", survivor,
                             *keyed], [f"k{n}:paid-late-{n}" for n in range(6)])

    def open_transaction():
        now = _stable_and_high(t, topic, 3)
        grew = [p for p, (_lso, hw) in now.items() if hw > before.get(p, hw)]
        return (len(now) == 3 and sum(now[p][1] - before[p] for p in grew) >= 6
                and all(now[p][0] < now[p][1] for p in grew) and now)
    t.look(f"the partitions of {topic} it writes show '◐ open transaction': their LSO stays "
           f"below the HW; the {survivor} id is ◐ OPEN.")
    t.check("the 6 records are written and the transaction is open (LSO below the HW)",
            open_transaction, timeout_s=60)
    t.kafkalite("topics", "--describe", "--topic", topic, "--offsets")
    t.look(f"broker {coordinator} turns DEAD; the transaction stays open while another "
           f"replica of {TXN_TOPIC}-{coordinator_partition} takes over as its coordinator.")
    t.kill_9(_pids(t)[coordinator], f"broker {coordinator}, the transaction coordinator of "
                                    f"{survivor}")
    new = t.check(f"a new leader, hence coordinator, for {TXN_TOPIC}-{coordinator_partition}",
                  lambda: (leader := _coordinator(t, survivor)[1]) not in (-1, coordinator)
                  and leader, timeout_s=60)
    t.say(f"Broker {new} loaded the transaction's state from its replica of the log. The "
          f"input ends: the producer finds the new coordinator and commits.")
    t.end_input(writer)
    t.check("the commit is complete: LSO = HW on every partition",
            lambda: len(got := _stable_and_high(t, topic, 3)) == 3
            and all(lso == hw for lso, hw in got.values()),
            timeout_s=60)
    _restart(t, coordinator)
    t.check(f"broker {coordinator} is back in the ISR of {TXN_TOPIC}-{coordinator_partition}",
            lambda: coordinator in next(p.isr for p in partitions(t, TXN_TOPIC)
                                        if p.partition == coordinator_partition), timeout_s=60)
    final = _values(t, topic, "read_committed")
    late = sorted(f"paid-late-{n}" for n in range(6))
    t.check("read_committed sees each committed record exactly once (12), no aborted one",
            lambda: final == sorted(paid + late), timeout_s=1)


STEPS = [
    ("topics", "Topics and partitions", step_topics),
    ("keys", "Keys choose partitions", step_keys),
    ("offsets", "Offsets, and replay from any offset", step_offsets),
    ("order", "Order within a partition, none across", step_order),
    ("groups", "A group is a queue; several groups are publish-subscribe", step_groups),
    ("replication", "Replication, and a leader's kill -9", step_replication),
    ("controller", "Controller failover", step_controller),
    ("retention", "Retention", step_retention),
    ("exactly-once", "Exactly-once: transactions, and a kill -9 of their coordinator",
     step_exactly_once),
]
