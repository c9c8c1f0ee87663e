"""Consume-transform-produce under faults, exactly once (issue 22).

20,000 records in an input topic (3 partitions, rf 3, min.insync.replicas 2) are copied by the
exactly-once copier (``kafkalite.testing.txn_copier``: a separate process on confluent-kafka, a
read_committed consumer in a group, a transactional producer, ``send_offsets_to_transaction``,
500 records a transaction), while one fault hits:

- kill -9 of the copier's transaction coordinator (the leader of its ``__transaction_state``
  partition, as FindCoordinator key type 1 names it), restarted once another broker took its
  role and the copier had a while to go on without it;
- kill -9 of the leader of an output partition (one that is neither coordinator, when there is
  one), restarted likewise;
- kill -9 of the group's coordinator (the leader of its ``__consumer_offsets`` partition),
  likewise;
- SIGSTOP of the copier inside a transaction whose records are written, for longer than its
  ``transaction.timeout.ms`` (10 s; the brokers look for timed-out transactions every second):
  the coordinator aborts it (the output's last stable offset reaches the high watermark again);
  on SIGCONT the copier finds itself fenced and exits, and a new copier with the same
  transactional id finishes the job.

Each time kcat, reading the output with read_committed, sees every input (partition, offset)
exactly once, on the input's partition, and nothing else; and the copier ends only when the
group's committed offsets are the input's end offsets. A copier that librdkafka leaves hanging
in a transactional call exits, and a new one with the same transactional id takes over (see
``_kill_mid_run``): exactly once must hold across that too.

One 3-broker cluster per test (a fault changes leaderships). The brokers notice a kill -9 through
a 3 s ZooKeeper session. ``KAFKALITE_TXN_FAULTS_SYSTEM=kafka`` runs the same tests on Apache
Kafka 2.8.2 (``kafkalite.testing.apache_kafka``), the reference for what they expect.
"""

from __future__ import annotations

import os
import uuid
from typing import Any, Callable, Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafkalite.local.cluster import wait_until
from kafkalite.testing.conformance import raw
from kafkalite.testing.txn_copier import (EXIT_FATAL, EXIT_STALLED, CopierProcess,
                                          exactly_once_problems, prepare_topics,
                                          read_committed_with_kcat)

# a stalled copier costs its call's timeout and a takeover: more than the suite's default 300 s
pytestmark = [pytest.mark.system, pytest.mark.timeout(600)]

SYSTEM = os.environ.get("KAFKALITE_TXN_FAULTS_SYSTEM", "kafkalite")
# librdkafka's debug contexts for the copiers' producers (its log goes to the copier's stderr,
# whose tail a failure shows), e.g. "eos" when a run needs explaining
COPIER_DEBUG = os.environ.get("KAFKALITE_TXN_COPIER_DEBUG")
RECORDS = 20_000
BATCH = 500
TRANSACTIONS = RECORDS // BATCH
SETTINGS = {
    "min.insync.replicas": 2, "default.replication.factor": 3,
    "offsets.topic.replication.factor": 3, "offsets.topic.num.partitions": 10,
    "transaction.state.log.replication.factor": 3, "transaction.state.log.min.isr": 2,
    "transaction.state.log.num.partitions": 10,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000,
    "group.initial.rebalance.delay.ms": 0,
    "zookeeper.session.timeout.ms": 3000, "zookeeper.connection.timeout.ms": 15000,
    "replica.lag.time.max.ms": 5000,
}


@pytest.fixture
def cluster(request: pytest.FixtureRequest, zk_connect: str,
            tmp_path_factory: Any) -> Iterator[Any]:
    """3 brokers of the system under test, on this test's ZooKeeper chroot."""
    if SYSTEM == "kafka":
        from kafkalite.testing.apache_kafka import ApacheKafkaCluster
        from kafkalite.testing.oracle_fixtures import serve_cluster

        made = ApacheKafkaCluster(zk_connect, 3, workdir=str(tmp_path_factory.mktemp("kafka")),
                                  overrides=dict(SETTINGS))
        yield from serve_cluster(request, made)
        return
    factory = request.getfixturevalue("kafkalite_cluster_factory")
    yield factory(3, **{key.replace(".", "_"): value for key, value in SETTINGS.items()})


class Run:
    """One copy job: fresh topics, group and transactional id, the input written."""

    def __init__(self, cluster: Any, workdir: str):
        self.cluster, self.workdir = cluster, workdir
        self.bootstrap = cluster.bootstrap_servers
        tag = uuid.uuid4().hex[:8]
        self.source, self.sink = f"eos-in-{tag}", f"eos-out-{tag}"
        self.group, self.tid = f"eos-group-{tag}", f"eos-copier-{tag}"
        self.ends = prepare_topics(self.bootstrap, self.source, self.sink, RECORDS)
        self.copiers: list[CopierProcess] = []

    def copier(self, *extra: str) -> CopierProcess:
        copier = CopierProcess(self.bootstrap, self.source, self.sink, self.group, self.tid,
                               "--batch", str(BATCH), *extra,
                               *(("--debug", COPIER_DEBUG) if COPIER_DEBUG else ()),
                               log_path=os.path.join(self.workdir,
                                                     f"copier-{len(self.copiers) + 1}.log"))
        self.copiers.append(copier)
        return copier

    def coordinator(self, key: str, key_type: int) -> int:
        """The broker FindCoordinator names for ``key`` (0 a group, 1 a transactional id)."""
        def found() -> int | None:
            for broker in self.cluster.brokers.values():
                if not broker.running:
                    continue
                try:
                    answer = raw.call(broker.address, 10, 3, {"key": key, "key_type": key_type})
                except OSError:
                    continue
                if answer["error_code"] == "NONE":
                    return answer["node_id"]
            return None
        return wait_until(found, 60, f"the coordinator of {key!r}")

    def output_leaders(self) -> dict[int, int]:
        meta = AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(self.sink,
                                                                              timeout=30)
        return {p: m.leader for p, m in meta.topics[self.sink].partitions.items()}

    def open_transaction_in_output(self) -> bool:
        """Some output partition's last stable offset (read_committed) is below its high
        watermark: a transaction holds it."""
        stable, high = self._watermarks("read_committed"), self._watermarks("read_uncommitted")
        return any(stable[p] < high[p] for p in high)

    def output_stable(self) -> bool:
        stable, high = self._watermarks("read_committed"), self._watermarks("read_uncommitted")
        return stable == high

    def _watermarks(self, isolation: str) -> dict[int, int]:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "watermarks",
                             "isolation.level": isolation})
        try:
            return {p: consumer.get_watermark_offsets(TopicPartition(self.sink, p), timeout=10,
                                                      cached=False)[1] for p in self.ends}
        finally:
            consumer.close()

    def finish(self, copier: CopierProcess, takeovers: int = 2) -> CopierProcess:
        """Until the copy is done: when a copier stalls (EXIT_STALLED: librdkafka hung in a
        transactional call), a new one with the same transactional id takes over, at most
        ``takeovers`` times; returns the copier that finished."""
        while True:
            code = copier.wait_exit(240)
            if code == EXIT_STALLED and takeovers > 0:
                print(f"\ncopier {len(self.copiers)} stalled: {copier.seen('stalled')}; "
                      f"a new one takes over")
                takeovers -= 1
                copier = self.copier()
                continue
            assert code == 0, self.describe()
            return copier

    def check_output(self) -> None:
        records = read_committed_with_kcat(self.bootstrap, self.sink)
        assert exactly_once_problems(records, self.ends) == [], self.describe()
        assert len(records) == RECORDS

    def describe(self) -> str:
        return "\n".join(f"copier {i + 1}: {c.describe()}" for i, c in enumerate(self.copiers))

    def close(self) -> None:
        for copier in self.copiers:
            copier.close()


@pytest.fixture
def run(cluster: Any, tmp_path: Any) -> Iterator[Run]:
    job = Run(cluster, str(tmp_path))
    try:
        yield job
    finally:
        job.close()


def _kill_mid_run(run: Run, victim_of: Callable[[Run], int],
                  moved: Callable[[Run, int], bool]) -> None:
    """Kill -9 the broker ``victim_of`` names a third of the way, wait until the cluster moved
    its role (``moved``), give the copier a while to go on without it, restart it, and judge
    the copy.

    Going on without the victim is not required: librdkafka (2.16) can stall a
    ``send_offsets_to_transaction`` whose cached group coordinator is down (its coordinator
    requests are re-examined only when a broker connection changes state, their timeout is not
    enforced), on Apache Kafka as on kafkalite; such a copier exits (EXIT_STALLED) and another
    one takes over. What is required is every record exactly once in the end."""
    copier = run.copier()
    copier.wait_for(lambda c: c.committed() >= TRANSACTIONS // 3, 240, "third of the copy")
    victim = victim_of(run)
    at_kill = copier.committed()
    run.cluster.kill(victim)
    wait_until(lambda: moved(run, victim), 60, f"the role of broker {victim} to move")
    went_on = copier.wait_for(lambda c: c.committed() >= at_kill + 2 or c.seen("done"), 30,
                              f"2 more transactions without broker {victim}", required=False)
    at_restart = copier.committed()
    run.cluster.restart(victim)
    run.finish(copier)
    print(f"\nkilled broker {victim} after {at_kill} of {TRANSACTIONS} transactions; "
          f"{at_restart - at_kill} committed before its restart"
          f"{'' if went_on else ' (the copier waited for it)'}")
    print(copier.describe().split("\n")[0])
    assert at_kill < TRANSACTIONS, "the fault came after the copy"
    run.check_output()


def test_transaction_coordinator_killed(run):
    _kill_mid_run(run, lambda r: r.coordinator(r.tid, 1),
                  lambda r, victim: r.coordinator(r.tid, 1) != victim)


def test_output_partition_leader_killed(run):
    def victim(r: Run) -> int:
        coordinators = {r.coordinator(r.tid, 1), r.coordinator(r.group, 0)}
        leaders = r.output_leaders()
        plain = [leader for leader in leaders.values() if leader not in coordinators]
        return plain[0] if plain else leaders[0]
    _kill_mid_run(run, victim,
                  lambda r, victim: all(0 <= leader != victim
                                        for leader in r.output_leaders().values()))


def test_group_coordinator_killed(run):
    _kill_mid_run(run, lambda r: r.coordinator(r.group, 0),
                  lambda r, victim: r.coordinator(r.group, 0) != victim)


def test_copier_stopped_past_its_transaction_timeout_is_fenced(run):
    first = run.copier("--transaction-timeout-ms", "10000", "--session-timeout-ms", "6000",
                       "--stop-in-transaction", str(TRANSACTIONS // 4))
    first.wait_for(lambda c: c.seen("stopping") and c.is_stopped(), 240,
                   "the copier stopped inside a transaction")
    # its records are written, the transaction open: the output's stable offset is held
    assert run.open_transaction_in_output(), run.describe()
    wait_until(run.output_stable, 60,
               "the coordinator to abort the timed-out transaction (LSO back at the HW)")
    first.resume()
    assert first.wait_exit(120) == EXIT_FATAL, run.describe()
    fatal = first.seen("fatal")
    print(f"\nthe resumed copier: {fatal}")
    assert fatal is not None and fatal["fatal"], run.describe()
    assert first.seen("continued") is not None

    run.finish(run.copier())
    run.check_output()
