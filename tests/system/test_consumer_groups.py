"""Consumer groups that rebalance through ZooKeeper, shown with real processes: a real ZooKeeper, a
real broker, and every group member its own ``group_member.py`` process that logs what it received
and its rebalance events (with timestamps) as JSON lines.

What each test shows (issue 5, "What it must show"):

- range assignment: 6 partitions / 3 members -> 2 each; a 4th member rebalances the group; a watcher
  samples the owner znodes throughout, and the members' own reports never overlap;
- a member killed with SIGKILL: its partitions move to the others within the session timeout
  plus the rebalance time, and every record is consumed at least once;
- 8 members on 6 partitions: exactly 2 idle;
- queue and pub-sub: two groups on one topic each receive every record; within a group a record
  reaches two members only when a rebalance came between its delivery and its commit (counted);
- restart: a restarted member resumes from the committed offset; with auto-commit and a crash
  nothing is lost and duplicates stay within the uncommitted window;
- sticky: when one member of five leaves, the sticky assignor moves fewer partitions than range.

Two more, in-process and staged, pin down coordinator/consumer fixes: a partition claimed back
after another member committed meanwhile resumes from that commit; a claim that never succeeds
fails with RebalanceFailedError, consumes nothing it does not own, and recovers at a later poll.

One broker serves the whole module (its own ZooKeeper chroot); every test uses its own topics and
groups. Nothing sleeps for a fixed time: every wait polls a condition with a deadline.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict

import pytest

from kafkalite import AdminClient, NewTopic, Producer
from kafkalite.client.assignors import moved_partitions, range_assign
from kafkalite.local.cluster import LocalCluster, wait_until
from kafkalite.local.zookeeper import unique_chroot

pytestmark = [pytest.mark.system]

HERE = os.path.dirname(os.path.abspath(__file__))
MEMBER_SCRIPT = os.path.join(HERE, "group_member.py")

SESSION_TIMEOUT_MS = 4000
# a deadline against a hang, not a measure: each wait below names the event it waits for (the
# owners in ZooKeeper, the records consumed); bench/rebalance_bench.py measures rebalances
SETTLE_S = 120.0


# ------------------------------------------------------------------------------------ fixtures

@pytest.fixture(scope="module")
def group_cluster(zookeeper, tmp_path_factory):
    """One broker for the module, on a chroot of its own: ``(zk_connect, cluster)``."""
    from kafkalite.zk import ZkClient

    chroot = unique_chroot("kl-consumer-groups")
    admin = ZkClient(zookeeper.connect_string, session_timeout_ms=30000).start()
    admin.ensure_path(chroot)
    admin.stop()
    zk_connect = f"{zookeeper.connect_string}{chroot}"
    cluster = LocalCluster(zk_connect, 1, workdir=str(tmp_path_factory.mktemp("groups-cluster")),
                           overrides={"num.partitions": 1})
    cluster.start()
    try:
        yield zk_connect, cluster
    finally:
        cluster.stop()


@pytest.fixture
def members(group_cluster, tmp_path):
    """``start(group, topic, name, *extra_args) -> Member``; every member is ended afterwards."""
    zk_connect, _cluster = group_cluster
    started: list[Member] = []

    def start(group, topic, name, *extra):
        member = Member(zk_connect, group, topic, tmp_path / f"{group}-{name}", *extra)
        started.append(member)
        return member

    yield start
    for member in started:
        if member.alive:
            member.proc.send_signal(signal.SIGTERM)
    for member in started:
        try:
            member.proc.wait(20)
        except subprocess.TimeoutExpired:
            member.proc.kill()
            member.proc.wait()


@pytest.fixture
def zk(group_cluster):
    from kafkalite.zk import ZkClient

    client = ZkClient(group_cluster[0], session_timeout_ms=10000).start()
    yield client
    client.stop()


# ------------------------------------------------------------------------------------- members

class Member:
    """A ``group_member.py`` process and the events it logged."""

    def __init__(self, zk_connect, group, topic, base, *extra):
        self.group = group
        self.name = base.name
        self.out = f"{base}.jsonl"
        self.err = f"{base}.err"
        command = [sys.executable, MEMBER_SCRIPT, "--zookeeper", zk_connect, "--group", group,
                   "--topic", topic, "--out", self.out,
                   "--session-timeout-ms", str(SESSION_TIMEOUT_MS), *extra]
        with open(self.err, "ab") as err:
            self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err,
                                         env=dict(os.environ, GROUP_MEMBER_LOGLEVEL="INFO"))
        self.killed_at: float | None = None
        self.stopping = False
        self._id: str | None = None

    def __repr__(self):
        return f"<member {self.name} pid {self.proc.pid} {self._id}>"

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def events(self) -> list[dict]:
        try:
            with open(self.out, "rb") as f:
                lines = f.read().split(b"\n")
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            if line:
                try:
                    out.append(json.loads(line))
                except ValueError:      # a line cut short by SIGKILL (one write(): unlikely)
                    pass
        return out

    @property
    def member_id(self) -> str | None:
        if self._id is None:
            for ev in self.events():
                if ev["ev"] == "start":
                    self._id = ev["member"]
        return self._id

    @property
    def gone(self) -> bool:
        """Killed, or told to leave."""
        return self.killed_at is not None or self.stopping

    def check_running(self) -> None:
        if not self.alive and not self.gone:
            with open(self.err) as f:
                tail = f.read()[-3000:]
            raise AssertionError(f"{self} exited with {self.proc.returncode}:\n{tail}")

    def owned(self) -> set:
        """What the member believes it owns now (its last assigned, unless revoked since)."""
        owned: set = set()
        for ev in self.events():
            if ev["ev"] == "assigned":
                owned = {tuple(p) for p in ev["parts"]}
            elif ev["ev"] == "revoked":
                owned = set()
        return owned if self.killed_at is None else set()

    def delivered(self) -> list[tuple[float, tuple, int]]:
        """``[(t, (topic, partition), offset)]`` in delivery order."""
        return [(ev["t"], tuple(ev["tp"]), o) for ev in self.events() if ev["ev"] == "recs"
                for o in ev["offsets"]]

    def commits(self) -> list[tuple[float, dict]]:
        return [(ev["t"], {(t, p): o for t, p, o in ev["offsets"]})
                for ev in self.events() if ev["ev"] == "commit"]

    def rebalances(self) -> list[dict]:
        return [ev for ev in self.events() if ev["ev"] == "rebalance"]

    def intervals(self, now: float) -> list[tuple[tuple, float, float]]:
        """``[(tp, from, to)]``: when the member believed it owned each partition."""
        out, since = [], {}
        for ev in self.events():
            if ev["ev"] == "assigned":
                for p in ev["parts"]:
                    since[tuple(p)] = ev["t"]
            elif ev["ev"] == "revoked":
                for p in ev["parts"]:
                    if tuple(p) in since:
                        out.append((tuple(p), since.pop(tuple(p)), ev["t"]))
        end = self.killed_at if self.killed_at is not None else now
        out.extend((tp, start, end) for tp, start in since.items())
        return out

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.killed_at = time.time()

    def stop(self) -> None:
        self.stopping = True
        self.proc.send_signal(signal.SIGTERM)


def wait_started(group_members, timeout_s=30):
    def started():
        for m in group_members:
            m.check_running()
        return all(m.member_id for m in group_members)
    wait_until(started, timeout_s, "members to register")


# ------------------------------------------------------------------------------------- helpers

def create_topic(cluster, name, partitions):
    with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(name, partitions, 1)], timeout_ms=30000)
    wait_until(lambda: all(cluster.leader_of(name, p) > 0 for p in range(partitions)), 30,
               f"leaders of {name}")


def _producer(cluster):
    return Producer(bootstrap_servers=cluster.bootstrap_servers, acks=1, linger_ms=5,
                    retries=1_000_000, retry_backoff_ms=100, request_timeout_ms=5000,
                    delivery_timeout_ms=120000)


def _settle(producer, futures) -> dict:
    """Deliver everything and return ``{tp: end offset}``. ``close()`` rather than ``flush()``:
    the producer's sender can lose a wakeup (Sender._wait clears ``_wake_pending`` before it
    drains the wake socket), and then a flush waits forever; close() resets the flag."""
    producer.close(timeout=120)
    ends = {}
    for f in futures:
        md = f.get(timeout=10)
        tp = (md.topic, md.partition)
        ends[tp] = max(ends.get(tp, 0), md.offset + 1)
    return ends


def produce(cluster, topic, partitions, per_partition, tag="r"):
    """``per_partition`` records to every partition; returns ``{tp: end offset}`` afterwards."""
    producer = _producer(cluster)
    futures = [producer.send(topic, value=b"%s-%d-%d" % (tag.encode(), p, i), partition=p)
               for i in range(per_partition) for p in range(partitions)]
    return _settle(producer, futures)


class BackgroundProducer:
    """Sends to every partition in round-robin at a modest pace until stopped; remembers the end
    offset of every partition."""

    def __init__(self, cluster, topic, partitions, rate_per_s=400):
        self.cluster, self.topic, self.partitions = cluster, topic, partitions
        self.interval = 1.0 / rate_per_s
        self.ends: dict = {}
        self.sent = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        try:
            self._produce()
        except BaseException as exc:    # noqa: BLE001 - reported by stop()
            self.error = exc

    def _produce(self):
        # a fresh producer for every quarter of a second of records, each closed (and so
        # delivered) at the end of its chunk: see _settle for why not one producer and flush()
        next_at = time.monotonic()
        while not self._stop.is_set():
            producer, futures = _producer(self.cluster), []
            chunk_end = time.monotonic() + 0.25
            while not self._stop.is_set() and time.monotonic() < chunk_end:
                p = self.sent % self.partitions
                futures.append(producer.send(self.topic, value=b"bg-%d" % self.sent,
                                             partition=p))
                self.sent += 1
                next_at += self.interval
                delay = next_at - time.monotonic()
                if delay > 0:
                    self._stop.wait(delay)
            for tp, end in _settle(producer, futures).items():
                self.ends[tp] = max(self.ends.get(tp, 0), end)

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join(180)
        if self.error is not None:
            raise AssertionError(f"the background producer failed: {self.error!r}")
        assert self.sent > 0 and sum(self.ends.values()) >= self.sent, (self.sent, self.ends)
        return dict(self.ends)


def owner_map(zk, group) -> dict:
    """``{(topic, partition): member id}`` from the owner znodes (``<member>-0`` -> member)."""
    return {tp: (owner[:-2] if owner.endswith("-0") else owner)
            for tp, owner in zk.get_partition_owners(group).items()}


def by_member(owners: dict) -> dict:
    out = defaultdict(list)
    for tp, member in owners.items():
        out[member].append(tp)
    return {m: sorted(tps) for m, tps in out.items()}


def expected_range(group_members, topic, partitions) -> dict:
    return range_assign({m.member_id: {topic} for m in group_members}, {topic: partitions})


def settled(zk, group, group_members, expected=None, partitions=None) -> bool:
    """The owner znodes and every member's own belief agree (and match ``expected``, a
    member -> partitions map, when given); every partition is owned; only these are members."""
    for m in group_members:
        m.check_running()
    live = [m for m in group_members if not m.gone]
    if sorted(zk.get_consumer_members(group)) != sorted(m.member_id for m in live):
        return False
    owners = owner_map(zk, group)
    if partitions is not None and len(owners) != partitions:
        return False
    for m in live:
        believed = m.owned()
        in_zk = {tp for tp, owner in owners.items() if owner == m.member_id}
        if believed != in_zk:
            return False
        if expected is not None and believed != set(expected.get(m.member_id, [])):
            return False
    return True


def all_consumed(group_members, ends) -> bool:
    got = set()
    for m in group_members:
        got.update((tp, o) for _t, tp, o in m.delivered())
    return all((tp, o) in got for tp, end in ends.items() for o in range(end))


def overlapping_beliefs(group_members, now=None) -> list:
    """Pairs of members that believed they owned the same partition at overlapping times."""
    now = now or time.time()
    per_tp = defaultdict(list)
    for m in group_members:
        for tp, start, end in m.intervals(now):
            per_tp[tp].append((start, end, m.name))
    bad = []
    for tp, spans in per_tp.items():
        spans.sort()
        for i, (s1, e1, n1) in enumerate(spans):
            for s2, e2, n2 in spans[i + 1:]:
                if s2 >= e1:
                    break
                if n1 != n2:
                    bad.append((tp, n1, (s1, e1), n2, (s2, e2)))
    return bad


def duplicates(group_members) -> tuple[int, int, list]:
    """Records delivered to more than one member of a group: ``(excused, unexcused, examples)``.

    A second delivery is excused when a rebalance came between the first delivery and its
    commit: the first member had not committed past the record when it next gave up its
    partitions (its ``revoked`` event) or died.
    """
    deliveries = defaultdict(list)
    for m in group_members:
        for t, tp, o in m.delivered():
            deliveries[(tp, o)].append((t, m))
    excused, unexcused, examples = 0, 0, []
    for (tp, o), got in deliveries.items():
        members_seen = {m.name for _t, m in got}
        if len(members_seen) < 2:
            continue
        got.sort(key=lambda x: x[0])
        t_first, first = got[0]
        revoked_after = [ev["t"] for ev in first.events()
                         if ev["ev"] == "revoked" and ev["t"] >= t_first]
        gave_up = min(revoked_after) if revoked_after else first.killed_at
        committed_at = next((t for t, offs in first.commits()
                             if t >= t_first and offs.get(tp, -1) > o), None)
        if committed_at is None or (gave_up is not None and gave_up < committed_at):
            excused += 1
        else:
            unexcused += 1
            if len(examples) < 5:
                examples.append((tp, o, [(round(t, 3), m.name) for t, m in got],
                                 committed_at, gave_up))
    return excused, unexcused, examples


class OwnerWatcher:
    """Samples the group's members and owner znodes in a loop on its own ZooKeeper session."""

    def __init__(self, zk_connect, group):
        from kafkalite.zk import ZkClient

        self.zk = ZkClient(zk_connect, session_timeout_ms=10000).start()
        self.group = group
        self.samples: list = []     # (t0, t1, owners)
        self.orphans: list = []     # owners that were not registered members
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            t0 = time.time()
            before = set(self.zk.get_consumer_members(self.group))
            owners = owner_map(self.zk, self.group)
            after = set(self.zk.get_consumer_members(self.group))
            t1 = time.time()
            self.samples.append((t0, t1, owners))
            for tp, owner in owners.items():
                if owner not in before | after:
                    self.orphans.append((t0, tp, owner))
            self._stop.wait(0.01)

    def stop(self):
        self._stop.set()
        self._thread.join(10)
        self.zk.stop()

    def contradictions(self, group_members) -> list:
        """Samples in which a member believed, throughout the sample, that it owned a partition
        whose owner znode named someone else (or no one)."""
        now = time.time()
        spans = [(m, tp, s, e) for m in group_members for tp, s, e in m.intervals(now)]
        bad = []
        for t0, t1, owners in self.samples:
            for m, tp, s, e in spans:
                if s <= t0 and t1 <= e and owners.get(tp) != m.member_id:
                    bad.append((round(t0, 3), m.name, tp, owners.get(tp)))
        return bad


# --------------------------------------------------------------------------------------- tests

def test_range_assignment_and_join_rebalance(group_cluster, members, zk):
    zk_connect, cluster = group_cluster
    topic, group = "range-t", "range-g"
    create_topic(cluster, topic, 6)
    ends = produce(cluster, topic, 6, 50)
    watcher = OwnerWatcher(zk_connect, group)
    try:
        first = [members(group, topic, f"m{i}") for i in range(3)]
        wait_started(first)
        expected3 = expected_range(first, topic, 6)
        wait_until(lambda: settled(zk, group, first, expected3, 6), SETTLE_S,
                   "3 members owning 2 partitions each")
        assert sorted(len(tps) for tps in by_member(owner_map(zk, group)).values()) == [2, 2, 2]
        wait_until(lambda: all_consumed(first, ends), 60, "the first records consumed")
        rebalances_before = {m.name: len(m.rebalances()) for m in first}

        fourth = members(group, topic, "m3")
        group_members = first + [fourth]
        wait_started([fourth])
        expected4 = expected_range(group_members, topic, 6)
        wait_until(lambda: settled(zk, group, group_members, expected4, 6), SETTLE_S,
                   "4 members sharing 6 partitions (2, 2, 1, 1)")
        ends.update(produce(cluster, topic, 6, 50, tag="after-join"))
        wait_until(lambda: all_consumed(group_members, ends), 60, "every record consumed")
    finally:
        watcher.stop()

    counts = sorted((len(tps) for tps in by_member(owner_map(zk, group)).values()),
                    reverse=True)
    assert counts == [2, 2, 1, 1]
    for m in first:     # the join made every old member rebalance
        assert len(m.rebalances()) > rebalances_before[m.name]
    assert len(watcher.samples) > 20, "the watcher should have sampled the owners throughout"
    assert not watcher.orphans, f"owner znodes of unregistered members: {watcher.orphans[:5]}"
    contradictions = watcher.contradictions(group_members)
    assert not contradictions, f"members believed they owned another's partition: " \
                               f"{contradictions[:5]}"
    overlaps = overlapping_beliefs(group_members)
    assert not overlaps, f"two members believed they owned a partition at once: {overlaps[:5]}"
    excused, unexcused, examples = duplicates(group_members)
    assert not unexcused, examples
    print(f"\nrange: 3 members -> {sorted(len(v) for v in expected3.values())}, 4 members -> "
          f"{counts}; watcher samples {len(watcher.samples)}; rebalances per member "
          f"{[len(m.rebalances()) for m in group_members]}; overlapping ownership 0; "
          f"duplicates {excused} (all after a rebalance)")


def test_crashed_member_partitions_move(group_cluster, members, zk):
    _zk_connect, cluster = group_cluster
    topic, group = "crash-t", "crash-g"
    create_topic(cluster, topic, 6)
    ends = produce(cluster, topic, 6, 50)
    group_members = [members(group, topic, f"m{i}", "--process-ms", "1") for i in range(3)]
    wait_started(group_members)
    wait_until(lambda: settled(zk, group, group_members, expected_range(group_members, topic, 6),
                               6), SETTLE_S, "3 members owning 2 partitions each")
    wait_until(lambda: all_consumed(group_members, ends), 60, "the first records consumed")

    background = BackgroundProducer(cluster, topic, 6, rate_per_s=300)
    victim = sorted(group_members, key=lambda m: m.member_id)[1]
    orphaned = set(by_member(owner_map(zk, group))[victim.member_id])
    wait_until(lambda: len(victim.delivered()) > sum(n for n in ends.values()) // 3 + 30, 30,
               "the victim consuming the background records")
    victim.kill()
    survivors = [m for m in group_members if m is not victim]
    kill_t = time.monotonic()
    wait_until(lambda: settled(zk, group, group_members, expected_range(survivors, topic, 6), 6),
               SETTLE_S, "the victim's partitions moving to the survivors")
    moved_after = time.monotonic() - kill_t
    ends.update(background.stop())
    wait_until(lambda: all_consumed(group_members, ends), 60, "every record consumed")

    owners = owner_map(zk, group)
    assert victim.member_id not in owners.values()
    assert {owners[tp] for tp in orphaned} <= {m.member_id for m in survivors}
    assert not overlapping_beliefs(group_members)
    excused, unexcused, examples = duplicates(group_members)
    assert not unexcused, examples
    total = sum(ends.values())
    print(f"\ncrash: killed {victim.name} owning {sorted(p for _t, p in orphaned)}; its "
          f"partitions moved after {moved_after:.2f} s (session timeout "
          f"{SESSION_TIMEOUT_MS / 1000:.1f} s); {total} records all consumed; duplicates "
          f"{excused} (delivered to the victim, not committed before it died)")


def test_idle_members_beyond_partition_count(group_cluster, members, zk):
    _zk_connect, cluster = group_cluster
    topic, group = "idle-t", "idle-g"
    create_topic(cluster, topic, 6)
    group_members = [members(group, topic, f"m{i}") for i in range(8)]
    wait_started(group_members, timeout_s=60)
    expected = expected_range(group_members, topic, 6)
    wait_until(lambda: settled(zk, group, group_members, expected, 6), SETTLE_S,
               "8 members on 6 partitions")
    ends = produce(cluster, topic, 6, 20)
    wait_until(lambda: all_consumed(group_members, ends), 60, "every record consumed")
    idle = [m for m in group_members if not m.owned()]
    owners = owner_map(zk, group)
    assert len(idle) == 2
    assert len(set(owners.values())) == 6
    assert not any(m.delivered() for m in idle)
    assert {m.member_id for m in idle}.isdisjoint(owners.values())
    assert not overlapping_beliefs(group_members)
    print(f"\nidle: 8 members, 6 partitions -> {len(idle)} idle "
          f"({', '.join(m.name for m in idle)}); rebalances per member "
          f"{[len(m.rebalances()) for m in group_members]}")


def test_queue_within_group_pubsub_across_groups(group_cluster, members, zk):
    _zk_connect, cluster = group_cluster
    topic = "pubsub-t"
    create_topic(cluster, topic, 6)
    queue = [members("pubsub-queue-g", topic, f"q{i}", "--process-ms", "1") for i in range(3)]
    auto = [members("pubsub-auto-g", topic, f"a{i}", "--commit", "auto",
                    "--auto-commit-interval-ms", "500", "--process-ms", "1") for i in range(2)]
    wait_started(queue + auto)
    wait_until(lambda: settled(zk, "pubsub-queue-g", queue, None, 6) and
               settled(zk, "pubsub-auto-g", auto, None, 6), SETTLE_S, "both groups assigned")

    background = BackgroundProducer(cluster, topic, 6, rate_per_s=400)
    wait_until(lambda: background.sent > 600, 30, "records flowing")
    # during the stream: one more member joins the queue, one queue member leaves cleanly, and
    # an auto-committing member of the other group crashes
    queue.append(members("pubsub-queue-g", topic, "q3", "--process-ms", "1"))
    wait_started(queue[-1:])
    wait_until(lambda: settled(zk, "pubsub-queue-g", queue, None, 6), SETTLE_S, "the join")
    queue[0].stop()
    auto[0].kill()
    auto.append(members("pubsub-auto-g", topic, "a2", "--commit", "auto",
                        "--auto-commit-interval-ms", "500", "--process-ms", "1"))
    wait_until(lambda: not queue[0].alive, 20, "q0 leaving")
    wait_until(lambda: background.sent > 1800, 30, "more records")
    ends = background.stop()
    for name, group_members in (("pubsub-queue-g", queue), ("pubsub-auto-g", auto)):
        wait_until(lambda: all_consumed(group_members, ends), 60, f"{name} receiving everything")

    report = []
    total = sum(ends.values())
    for name, group_members in (("pubsub-queue-g", queue), ("pubsub-auto-g", auto)):
        assert not overlapping_beliefs(group_members), name
        excused, unexcused, examples = duplicates(group_members)
        assert not unexcused, f"{name}: records delivered twice without a rebalance: {examples}"
        delivered = sum(len(m.delivered()) for m in group_members)
        report.append(f"{name}: {delivered} deliveries of {total} records, {excused} records "
                      f"delivered to two members after a rebalance, 0 without")
    print("\npub-sub: " + "; ".join(report))


def test_restart_resumes_from_committed_offsets(group_cluster, members, zk):
    """One member committing after every poll, one auto-committing every 700 ms; both are
    killed while records stream in (with commits on every partition behind them), then started
    again."""
    _zk_connect, cluster = group_cluster
    topic = "restart-t"
    create_topic(cluster, topic, 3)
    slow = ("--process-ms", "2", "--max-poll-records", "25")
    # the manual member falls behind the producer: its polls return full batches of 25
    manual = members("restart-manual-g", topic, "first", "--process-ms", "4",
                     "--max-poll-records", "25")
    auto = members("restart-auto-g", topic, "first", "--commit", "auto",
                   "--auto-commit-interval-ms", "700", *slow)
    wait_started([manual, auto])
    wait_until(lambda: settled(zk, "restart-manual-g", [manual], None, 3) and
               settled(zk, "restart-auto-g", [auto], None, 3), SETTLE_S, "both assigned")
    background = BackgroundProducer(cluster, topic, 3, rate_per_s=300)

    def part_way(member):
        committed = {}
        for _t, offsets in member.commits():
            committed.update({tp: o for tp, o in offsets.items() if o > 0})
        return len(committed) == 3 and len(member.delivered()) > 600

    def kill_manual_between_poll_and_commit():     # so that it leaves records uncommitted
        events = manual.events()
        if part_way(manual) and events[-1]["ev"] == "recs":
            manual.kill()
            return True
        return False

    wait_until(lambda: part_way(auto), 60, "the auto-committing member part-way through")
    wait_until(kill_manual_between_poll_and_commit, 60,
               "the manually committing member part-way through, between a poll and a commit")
    auto.kill()
    committed_manual = zk.get_consumer_offsets("restart-manual-g")
    committed_auto = zk.get_consumer_offsets("restart-auto-g")
    manual2 = members("restart-manual-g", topic, "restarted")
    auto2 = members("restart-auto-g", topic, "restarted", "--commit", "auto")
    wait_until(lambda: background.sent > 1500, 30, "more records after the crash")
    ends = background.stop()
    wait_until(lambda: all_consumed([manual, manual2], ends) and
               all_consumed([auto, auto2], ends), SETTLE_S,
               "the restarted members reading everything (nothing lost)")

    report = []
    for name, dead, restarted, committed in (("manual", manual, manual2, committed_manual),
                                             ("auto", auto, auto2, committed_auto)):
        # the restarted member starts every partition exactly at the committed offset
        first = {}
        for _t, tp, o in restarted.delivered():
            first.setdefault(tp, o)
        assert first == {tp: committed[tp] for tp in ends}, (name, first, committed)
        # duplicates: exactly what the dead member got after its last commit
        got_before = {(tp, o) for _t, tp, o in dead.delivered()}
        got_after = {(tp, o) for _t, tp, o in restarted.delivered()}
        dups = got_before & got_after
        last = {}
        for _t, tp, o in dead.delivered():
            last[tp] = max(last.get(tp, -1), o)
        window = {(tp, o) for tp, hi in last.items() for o in range(committed[tp], hi + 1)}
        assert dups <= window, sorted(dups - window)[:5]
        assert dups == window, "the uncommitted window should have been read again"
        report.append(f"{name} commits: {len(got_before)} records before the crash, "
                      f"{len(dups)} duplicates = the uncommitted window ("
                      + ", ".join(f"p{tp[1]}: committed {committed[tp]}, got up to {last[tp]}"
                                  for tp in sorted(last)) + ")")
    print(f"\nrestart ({sum(ends.values())} records, all consumed): " + "; ".join(report))


def test_sticky_moves_fewer_partitions_than_range(group_cluster, members, zk):
    _zk_connect, cluster = group_cluster
    topic, partitions = "sticky-t", 12
    create_topic(cluster, topic, partitions)
    groups = {}
    for strategy in ("sticky", "range"):
        group = f"cmp-{strategy}-g"
        groups[strategy] = [members(group, topic, f"{strategy}{i}", "--strategy", strategy)
                            for i in range(5)]
    wait_started(groups["sticky"] + groups["range"], timeout_s=60)

    def balanced(group, group_members):
        owners = owner_map(zk, group)
        counts = Counter(owners.values())
        live = [m for m in group_members if not m.gone]
        return (settled(zk, group, group_members, None, partitions) and
                len(counts) == len(live) and max(counts.values()) - min(counts.values()) <= 1)

    wait_until(lambda: balanced("cmp-sticky-g", groups["sticky"]) and
               balanced("cmp-range-g", groups["range"]), SETTLE_S, "both groups balanced")
    assert settled(zk, "cmp-range-g", groups["range"],
                   expected_range(groups["range"], topic, partitions), partitions)
    before = {s: by_member(owner_map(zk, f"cmp-{s}-g")) for s in groups}
    leavers = {}
    for strategy, group_members in groups.items():
        leavers[strategy] = sorted(group_members, key=lambda m: m.member_id)[0]
        leavers[strategy].stop()
    for strategy, group_members in groups.items():
        leaver = leavers[strategy]
        wait_until(lambda: not leaver.alive, 20, "the leaver closing")
        group_members.remove(leaver)
    wait_until(lambda: balanced("cmp-sticky-g", groups["sticky"]) and
               balanced("cmp-range-g", groups["range"]), SETTLE_S, "both groups balanced again")
    after = {s: by_member(owner_map(zk, f"cmp-{s}-g")) for s in groups}
    moved = {s: moved_partitions(before[s], after[s]) for s in groups}
    leaver_had = {s: len(before[s][leavers[s].member_id]) for s in groups}
    print(f"\nsticky: one member of five leaves ({partitions} partitions): range moved "
          f"{moved['range']} partitions, sticky moved {moved['sticky']} (the leaver owned "
          f"{leaver_had['sticky']})")
    assert moved["sticky"] < moved["range"]
    assert moved["sticky"] == leaver_had["sticky"]


def test_partition_back_after_another_owner_resumes_from_its_commit(group_cluster, zk):
    """A partition revoked in a rebalance and claimed back after another member consumed and
    committed meanwhile (members with split views of the group) resumes from that commit, not
    from where this member had got to. In-process and staged: right after the consumer releases
    its owner znode, "another member" (the test's ZooKeeper session) takes it, commits 60, and
    lets go 0.3 s later, while the consumer retries its claim."""
    import zk_schema
    from kafkalite import Consumer
    from zk_schema.consumers import PartitionOwner

    zk_connect, cluster = group_cluster
    topic, group = "comeback-t", "comeback-g"
    create_topic(cluster, topic, 1)
    produce(cluster, topic, 1, 100)
    owner_path = zk_schema.consumers.owner_path(group, topic, 0)
    other = "comeback-g_zzz-0-other"        # sorts after the consumer: range leaves it idle
    consumer = Consumer(group_id=group, zookeeper=zk_connect, auto_offset_reset="earliest",
                        enable_auto_commit=False, max_poll_records=10, fetch_max_wait_ms=100,
                        session_timeout_ms=SESSION_TIMEOUT_MS, rebalance_debounce_ms=100,
                        rebalance_backoff_ms=200)
    stolen = threading.Event()
    coordinator_zk = consumer._coordinator.zk
    plain_release = coordinator_zk.release_partition_owner

    def release_then_steal(*args, **kwargs):
        released = plain_release(*args, **kwargs)
        if not stolen.is_set():
            stolen.set()
            zk.create(owner_path, PartitionOwner(f"{other}-0").encode(), ephemeral=True)
            zk.set_consumer_offset(group, topic, 0, 60)
            threading.Timer(0.3, lambda: zk.delete(owner_path)).start()
        return released

    try:
        consumer.subscribe([topic])
        first = []
        wait_until(lambda: first.extend(r.offset for rs in consumer.poll(100).values()
                                        for r in rs) or len(first) >= 10, 30, "some records")
        consumer.commit()
        assert first == list(range(10))
        coordinator_zk.release_partition_owner = release_then_steal
        # another member registers: the consumer rebalances, releases, and claims back
        zk.register_consumer(group, other, consumer._coordinator._registration())
        coordinator, rebalances = consumer._coordinator, consumer._coordinator.rebalances
        after = []

        def records_after_the_rebalance():
            got = [r.offset for rs in consumer.poll(100).values() for r in rs]
            if coordinator.rebalances > rebalances:     # the rebalance runs first in a poll
                after.extend(got)
            return after
        wait_until(records_after_the_rebalance, 30, "records after the rebalance")
        assert stolen.is_set()
        assert after[0] == 60, f"resumed at {after[0]}, not at the other member's commit (60)"
    finally:
        consumer.close()


def test_claim_that_never_succeeds_fails_clearly_and_consumes_nothing(group_cluster, zk):
    """A member whose partition stays held by another (a stuck member) gives up after
    rebalance_max_retries with RebalanceFailedError, consumes nothing meanwhile, and completes the
    rebalance at a later poll once the partition is free. In-process, with a short claim timeout."""
    import zk_schema
    from kafkalite import Consumer, errors
    from kafkalite.client.zk_coordinator import ZooKeeperCoordinator
    from zk_schema.consumers import ConsumerRegistration, PartitionOwner

    zk_connect, cluster = group_cluster
    topic, group = "stuck-t", "stuck-g"
    create_topic(cluster, topic, 2)
    produce(cluster, topic, 2, 20)
    stuck = "stuck-g_aaa-0-stuck"           # sorts first: range gives it p0, the consumer p1
    zk.register_consumer(group, stuck, ConsumerRegistration(subscription={topic: 1},
                                                            pattern="static", timestamp_ms=0))
    zk.create(zk_schema.consumers.owner_path(group, topic, 1),
              PartitionOwner(f"{stuck}-0").encode(), ephemeral=True, makepath=True)
    coordinator = ZooKeeperCoordinator(group, zk_connect, session_timeout_ms=SESSION_TIMEOUT_MS,
                                       rebalance_max_retries=1, rebalance_backoff_ms=100,
                                       rebalance_debounce_ms=100, claim_timeout_ms=500)
    consumer = Consumer(zookeeper=zk_connect, group_id=group, coordinator=coordinator,
                        auto_offset_reset="earliest", fetch_max_wait_ms=100)
    try:
        consumer.subscribe([topic])
        failures, got = [], []

        def poll_until_failed_3_times():     # every later poll tries again, and fails again
            try:
                got.extend(consumer.poll(100).values())
            except errors.RebalanceFailedError as exc:
                failures.append(str(exc))
            return len(failures) >= 3
        wait_until(poll_until_failed_3_times, 30, "the rebalance to fail 3 times")
        assert "could not complete a rebalance after 2 attempts" in failures[0]
        assert not got, "records consumed from partitions the member does not own"
        assert owner_map(zk, group) == {(topic, 1): stuck}

        zk.delete(zk_schema.consumers.owner_path(group, topic, 1))   # the stuck member lets go
        records = []
        wait_until(lambda: records.extend(r for rs in consumer.poll(100).values() for r in rs)
                   or len(records) >= 20, 30, "the records of p1")
        assert sorted((r.partition, r.offset) for r in records) == [(1, o) for o in range(20)]
        assert owner_map(zk, group) == {(topic, 1): coordinator.member_id}
        print(f"\nstuck owner: {len(failures)} x RebalanceFailedError ({failures[0][:90]}...), "
              f"nothing consumed meanwhile; p1 consumed once released")
    finally:
        consumer.close()
        zk.unregister_consumer(group, stuck)


def test_expired_session_stops_consuming_at_once_then_rejoins(group_cluster, zk, zk_expire):
    """When a member's ZooKeeper session expires its owner znodes vanish, and another member may
    claim them: the very next poll drops every partition (before any debounce), then the member
    registers again and the group rebalances back to one partition each. In-process."""
    from kafkalite import Consumer

    zk_connect, cluster = group_cluster
    topic, group = "expire-t", "expire-g"
    create_topic(cluster, topic, 2)
    options = dict(group_id=group, zookeeper=zk_connect, auto_offset_reset="earliest",
                   fetch_max_wait_ms=100, session_timeout_ms=SESSION_TIMEOUT_MS,
                   rebalance_debounce_ms=300, rebalance_backoff_ms=200)
    first, second = Consumer(topic, **options), Consumer(topic, **options)
    try:
        def one_each():
            first.poll(50)
            second.poll(50)
            return len(first.assignment()) == 1 and len(second.assignment()) == 1
        wait_until(one_each, SETTLE_S, "one partition each")
        before = first.assignment()
        assert zk_expire(first._coordinator.zk), "the session did not expire"
        first.poll(0)
        assert first.assignment() == set(), "still consuming partitions of an expired session"
        wait_until(lambda: one_each() and len(owner_map(zk, group)) == 2, SETTLE_S,
                   "the member back in the group")
        assert first._coordinator.member_id in owner_map(zk, group).values()
        print(f"\nsession expiry: {sorted(p.partition for p in before)} dropped at the next "
              f"poll, member re-registered and owns "
              f"{sorted(p.partition for p in first.assignment())} again")
    finally:
        first.close()
        second.close()
