"""Kafka Streams 2.8.2 word count with ``exactly_once_beta`` through a broker kill -9 (issue 22).

The word count of StreamsApp.java (groupBy the word through a repartition topic, count into a
store with a compacted changelog, every new count written to the output topic) runs on 3 brokers
of the test's own (rf 3, min.insync.replicas 2, internal topics rf 3 too) while its input is fed
in waves. After the first wave, the broker that coordinates the Streams producer's transactions
(the leader of ``__transaction_state`` partition abs(javaHash(transactional id)) % partitions)
is killed with SIGKILL while the second wave is processed; a third wave goes in without it, then
it restarts and the rest goes in.

Judged by confluent-kafka (librdkafka) reading the output with read_committed: the counts of a
word must come out as exactly 1, 2, ..., N (a record processed twice shows as a count repeated
or too high, one lost as a gap), never above the word's count in the input fed so far, and N is
the word's count in the whole input. The restarted broker must be back in the ISR of every
partition of the application's topics: Streams purges its repartition topic (DeleteRecords) after
each commit, so the broker comes back behind its leaders' log start there. The whole of it,
streams closed cleanly at the end, runs on Apache Kafka 2.8.2 too, the reference.
"""

from __future__ import annotations

import collections
import random
import struct
import subprocess
import time
from typing import Any, Iterator

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from jvm_apps import command, create_topic, jvm_classes, parse_lines, unique  # noqa: F401

from kafkalite.jvm_hashing import java_string_hash
from kafkalite.local.cluster import wait_until
from kafkalite.testing.independent_read import read_to_end

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

WORDS = ("kafka", "lite", "stream", "table", "window", "broker", "zookeeper", "log", "offset")
WAVES = 6
LINES_PER_WAVE = 40
TXN_PARTITIONS = 10
SETTINGS = {
    "min.insync.replicas": 2, "default.replication.factor": 3,
    "offsets.topic.replication.factor": 3, "offsets.topic.num.partitions": 10,
    "transaction.state.log.replication.factor": 3, "transaction.state.log.min.isr": 2,
    "transaction.state.log.num.partitions": TXN_PARTITIONS,
    "group.initial.rebalance.delay.ms": 0,
    # a kill -9 is noticed through the ZooKeeper session
    "zookeeper.session.timeout.ms": 3000, "zookeeper.connection.timeout.ms": 15000,
    "replica.lag.time.max.ms": 5000,
}


@pytest.fixture
def cluster(request: pytest.FixtureRequest, zk_connect: str,
            tmp_path_factory: Any) -> Iterator[Any]:
    """3 brokers of the system named by the test's parameter, on this test's ZooKeeper chroot
    (a kill changes leaderships: the shared session clusters are not for this)."""
    if request.param == "kafka":
        from kafkalite.testing.apache_kafka import ApacheKafkaCluster
        from kafkalite.testing.oracle_fixtures import serve_cluster

        made = ApacheKafkaCluster(zk_connect, 3, workdir=str(tmp_path_factory.mktemp("kafka")),
                                  overrides=dict(SETTINGS))
        yield from serve_cluster(request, made)
        return
    factory = request.getfixturevalue("kafkalite_cluster_factory")
    yield factory(3, **{key.replace(".", "_"): value for key, value in SETTINGS.items()})


def _waves(seed: int) -> list[list[str]]:
    rnd = random.Random(seed)
    return [[" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, 8)))
             for _ in range(LINES_PER_WAVE)] for _ in range(WAVES)]


def _abs(n: int) -> int:
    """Kafka's Utils.abs: Integer.MIN_VALUE is 0."""
    return 0 if n == -(1 << 31) else abs(n)


class OutputReader:
    """The output topic read with read_committed from the beginning, as it grows: every word's
    counts in order, each checked as it arrives against the input fed so far."""

    def __init__(self, bootstrap: str, topic: str, fed: collections.Counter):
        self.fed = fed
        self.seen: dict[str, list[int]] = collections.defaultdict(list)
        self.problems: list[str] = []
        self.consumer = Consumer({"bootstrap.servers": bootstrap,
                                  "group.id": unique("eos-kill-reader"),
                                  "enable.auto.commit": False,
                                  "isolation.level": "read_committed"})
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in (0, 1)])

    def poll(self) -> None:
        for msg in self.consumer.consume(1000, timeout=0.2):
            assert msg.error() is None, msg.error()
            word, count = msg.key().decode(), struct.unpack(">q", msg.value())[0]
            counts = self.seen[word]
            if count != len(counts) + 1:
                self.problems.append(f"{word}: {count} after {counts[-3:]} "
                                     f"(offset {msg.partition()}/{msg.offset()})")
            if count > self.fed[word]:
                self.problems.append(f"{word}: {count} above the {self.fed[word]} fed so far")
            counts.append(count)

    def latest(self) -> dict[str, int]:
        return {word: counts[-1] for word, counts in self.seen.items()}

    def close(self) -> None:
        self.consumer.close()


def _read_to_end(bootstrap: str, topic: str) -> dict[str, list[int]]:
    """A fresh read_committed read of the whole output (to the last stable offset)."""
    seen: dict[str, list[int]] = collections.defaultdict(list)
    for msg in read_to_end(bootstrap, topic, 2, isolation_level="read_committed"):
        seen[msg.key().decode()].append(struct.unpack(">q", msg.value())[0])
    return dict(seen)


def _transactional_ids(bootstrap: str, prefix: str) -> dict[str, int]:
    """The transactional ids starting with ``prefix`` in ``__transaction_state`` (the key is
    Kafka's TransactionLog key: version int16, then the id as an int16-sized string), each with
    the partition it was found in."""
    found: dict[str, int] = {}
    for msg in read_to_end(bootstrap, "__transaction_state", TXN_PARTITIONS):
        key = msg.key()
        size = struct.unpack(">h", key[2:4])[0]
        tid = key[4:4 + size].decode()
        if tid.startswith(prefix):
            found[tid] = msg.partition()
    return found


def _out_of_isr(bootstrap: str, prefix: str, broker_id: int) -> list[str]:
    """The partitions of the topics named ``prefix``-* that ``broker_id`` replicates but is not
    in the ISR of."""
    topics = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    return sorted(f"{name}-{p}" for name, meta in topics.items() if name.startswith(prefix)
                  for p, part in meta.partitions.items()
                  if broker_id in part.replicas and broker_id not in part.isrs)


def _leaders(bootstrap: str, topic: str) -> dict[int, int]:
    meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return {p: m.leader for p, m in meta.topics[topic].partitions.items()}


@pytest.mark.parametrize("cluster", ["kafkalite", "kafka"], indirect=True)
def test_streams_word_count_exactly_once_beta_through_a_coordinator_kill(cluster, jvm_classes,
                                                                          tmp_path):
    bootstrap = cluster.bootstrap_servers
    app = unique("eos-kill")
    text_in, counts_out, amounts_in, sums_out = (f"{app}-{t}" for t in
                                                 ("text", "counts", "amounts", "sums"))
    for topic in (text_in, counts_out, amounts_in, sums_out):
        create_topic(bootstrap, topic, 2)
    waves = _waves(seed=22)
    fed: collections.Counter = collections.Counter()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "enable.idempotence": True})
    produced = 0

    def feed(wave: list[str]) -> None:
        nonlocal produced
        # counted before they are sent: "fed so far" may run ahead of the input, never behind
        fed.update(word for line in wave for word in line.split())
        for line in wave:
            producer.produce(text_in, key=str(produced).encode(), value=line.encode())
            produced += 1
        assert producer.flush(60) == 0

    out_path, err_path = tmp_path / "streams.out", tmp_path / "streams.err"
    with open(out_path, "w") as out, open(err_path, "w") as err:
        proc = subprocess.Popen(command(jvm_classes, "StreamsApp", bootstrap, app,
                                        str(tmp_path / "state"), "exactly_once_beta", text_in,
                                        counts_out, amounts_in, sums_out),
                                stdin=subprocess.PIPE, stdout=out, stderr=err)
    reader = OutputReader(bootstrap, counts_out, fed)

    def report() -> str:
        return (f"StreamsApp stdout:\n{out_path.read_text()[-5000:]}\n"
                f"stderr:\n{err_path.read_text()[-8000:]}")

    def caught_up(what: str, timeout_s: float = 60) -> None:
        """Until the output's latest counts are the input's so far (the app healthy meanwhile);
        every count read on the way is checked."""
        deadline = time.monotonic() + timeout_s
        while True:
            reader.poll()
            assert reader.problems == [], f"{reader.problems}\n{report()}"
            if reader.latest() == dict(fed):
                return
            assert proc.poll() is None, f"StreamsApp exited {proc.returncode}\n{report()}"
            assert not [e for e in parse_lines(out_path.read_text())
                        if e["event"] == "uncaught" or e.get("state") == "ERROR"], report()
            assert time.monotonic() < deadline, (
                f"timed out after {timeout_s} s waiting for {what}: output {reader.latest()}, "
                f"input {dict(fed)}\n{report()}")

    try:
        feed(waves[0])
        caught_up("the first wave's counts", 90)
        tids = _transactional_ids(bootstrap, f"{app}-")
        assert len(tids) == 1, tids     # one stream thread: one producer (eos-beta)
        (tid, found_in), = tids.items()
        partition = _abs(java_string_hash(tid)) % TXN_PARTITIONS
        assert found_in == partition, (tid, found_in, partition)
        victim = _leaders(bootstrap, "__transaction_state")[partition]
        output_leaders = _leaders(bootstrap, counts_out)

        feed(waves[1])
        cluster.kill(victim)        # while the second wave is being processed
        killed_at = time.monotonic()
        caught_up(f"the second wave's counts without broker {victim}")
        feed(waves[2])
        caught_up(f"the third wave's counts without broker {victim}")
        without = time.monotonic() - killed_at
        moved_to = _leaders(bootstrap, "__transaction_state")[partition]
        assert moved_to not in (victim, -1)

        cluster.restart(victim)
        feed(waves[3])
        caught_up(f"the fourth wave's counts with broker {victim} back")
        for wave in waves[4:]:
            feed(wave)
        caught_up("the whole input's counts")
        # the restarted broker caught up on every partition of the application's topics, the
        # repartition topic too, whose log start Streams moved past its log end meanwhile
        # (DeleteRecords after each commit)
        wait_until(lambda: _out_of_isr(bootstrap, app, victim) == [], 30,
                   f"broker {victim} back in the ISR of every partition of {app}'s topics",
                   on_timeout=lambda: f"out of it: {_out_of_isr(bootstrap, app, victim)}")
    except BaseException:
        proc.kill()     # failed already: no graceful close to wait for
        proc.wait()
        raise
    finally:
        reader.close()
        producer.flush(10)
    proc.stdin.close()  # the app closes its streams and exits
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    print(f"\n{tid} (__transaction_state-{partition}): coordinator {victim} killed "
          f"(output leaders {output_leaders}), {moved_to} took over; "
          f"{without:.1f} s without it; {sum(fed.values())} words in {produced} lines")
    assert proc.returncode == 0, report()
    assert {"event": "closed", "clean": True, "state": "NOT_RUNNING"} in \
        parse_lines(out_path.read_text()), report()

    # the judge: a fresh read_committed read of the whole output, every word counted 1..N
    final = _read_to_end(bootstrap, counts_out)
    assert final == {word: list(range(1, n + 1)) for word, n in fed.items()}
