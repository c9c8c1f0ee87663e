"""One fuzz session against a running 3-broker cluster, both protocols at once, with live clients
beside it; shared by tests/system/test_protocol_fuzz.py and bench/protocol_fuzz.py (no test
functions here).

``run_session`` creates the live topics (rf 3, min.insync.replicas 2: one for confluent-kafka over
Kafka's protocol, one for kafkalite's own clients over the native protocol) and the Kafka fuzz
target, records the controller's own LeaderAndIsr, UpdateMetadata and StopReplica through a
stand-in broker (controller_frames) and the native seeds from a real client session, builds the
controller-request seeds from ZooKeeper's view, starts the live clients, runs the cases, and
returns what it saw and every invariant that broke:

- every broker process alive, answering Metadata on both protocols, naming ZooKeeper's controller;
- no malformed, misordered or made-up answer (Kafka's judged by kio); no connection refused;
  none closed where an answer was owed to a well-formed request;
- no ERROR or unhandled failure in the broker logs;
- both live producers and consumers made progress during the fuzz and after it, and no record
  failed to be acknowledged;
- every acknowledged record readable at its (partition, offset), with its value, once;
- no partition advertised in Metadata whose leader does not host it;
- ZooKeeper's assignments numbered 0..n-1, each partition with a live leader; no live topic
  changed partition count; no state written at a controller epoch ZooKeeper never had; the
  controller epoch the same as when the fuzz began, and the brokers' leaders as ZooKeeper's.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from kafkalite import AdminClient, NewTopic
from kafkalite.local.cluster import ClusterError, wait_until
from kafkalite.zk import ZkClient

from controller_frames import record_controller_frames, recorded_seeds
from fuzz_invariants import log_sizes, settled_cluster_problems, topic_counts, unexpected_errors
from fuzz_live_clients import KafkaLiveTraffic, NativeLiveTraffic
from fuzz_runner import FuzzReport, run_fuzz
from fuzz_kio import warm
from kafka_fuzz_tools import api_ranges, seed_payloads
from native_fuzz_seeds import (built_client_seeds, controller_seeds, probe_payloads,
                               read_controller_view, record_client_session)

LIVE_PARTITIONS = 3
KAFKA_LIVE, NATIVE_LIVE, KAFKA_TARGET = "live-kafka", "live-native", "fuzz-target"
AFTER_FUZZ_S = 30       # how long the live clients have to show progress after the fuzz
#: at most this share of the cases made may be left out unsent (impersonation, resource-heavy,
#: aimed at a live topic, known bugs): a fuzz that quietly stopped sending would assert nothing
MAX_LEFT_OUT_SHARE = 0.01      # runs leave out 0.1-0.2%
CLUSTER_OVERRIDES = {"replica.lag.time.max.ms": 10000, "offsets.topic.num.partitions": 3}


class InvariantsBroken(AssertionError):
    """What a fuzz session found (raised by ``SessionResult.check``); any other exception is a
    session that could not run."""


@dataclass
class SessionResult:
    report: FuzzReport
    seed: int = 0                                  # the random seed: --seed replays the cases
    seeds: dict = field(default_factory=dict)      # kind -> how many
    live: list = field(default_factory=list)       # (name, traffic, before, during)
    problems: list = field(default_factory=list)   # every broken invariant, described
    topics: tuple = ({}, {})                       # fuzz_invariants.topic_counts before, after
    phases: dict = field(default_factory=dict)     # what took how long (s)

    def check(self) -> None:
        if self.problems:
            raise InvariantsBroken(f"invariants broken (seed {self.seed}):\n" + "\n".join(
                f"- {p}" for p in self.problems))

    def describe(self) -> str:
        left = sum(self.report.left_out.values())
        made = self.report.cases + left
        lines = [f"seed {self.seed} (replay: bench/protocol_fuzz.py --seed {self.seed}, or "
                 f"KAFKALITE_FUZZ_SEED={self.seed} for tests/system/test_protocol_fuzz.py)",
                 self.report.summary(),
                 f"left out {left} of {made} cases made ({left / max(made, 1):.2%}; bound "
                 f"{MAX_LEFT_OUT_SHARE:.0%})", self.report.table(),
                 "seeds: " + ", ".join(f"{k} {n}" for k, n in self.seeds.items())]
        before, after = self.topics
        lines.append(f"topics in ZooKeeper: {len(before)} with "
                     f"{sum(n for _, n in before.values())} partitions before the fuzz, "
                     f"{len(after)} with {sum(n for _, n in after.values())} "
                     f"after it (new: {sorted(set(after) - set(before))[:8]}"
                     f"{'...' if len(set(after) - set(before)) > 8 else ''})")
        lines.append("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in self.phases.items()))
        for name, traffic, before, during in self.live:
            lines.append(f"{name}: {traffic.describe()} (acked/read {before} before the fuzz, "
                         f"{during} right after it)")
        return "\n".join(lines)


def create_topics(bootstrap: str) -> None:
    with AdminClient(bootstrap_servers=bootstrap, client_id="fuzz-setup") as admin:
        admin.create_topics([
            NewTopic(KAFKA_LIVE, LIVE_PARTITIONS, 3, topic_configs={"min.insync.replicas": "2"}),
            NewTopic(NATIVE_LIVE, LIVE_PARTITIONS, 3,
                     topic_configs={"min.insync.replicas": "2"}),
            NewTopic(KAFKA_TARGET, 1, 3)], timeout_ms=60000)


SEED_VARIABLE = "KAFKALITE_FUZZ_SEED"


def fresh_seed() -> int:
    """The seed of a run: ``$KAFKALITE_FUZZ_SEED`` when set (a replay), else a new one. A replay
    makes the same choices (seeds, mutations, brokers) in the same order; the recorded frames
    are recorded again, so ids and timestamps inside them may differ: a problem's own bytes,
    which the report prints, are its exact reproduction."""
    import os
    import random

    given = os.environ.get(SEED_VARIABLE)
    return int(given) if given else random.SystemRandom().randrange(1 << 32)


def run_session(cluster, cases: int, seed: int, workers: int = 16,
                wait_s: float = 0.5, native_share: float = 0.5, live: bool = True,
                known_bugs: frozenset = frozenset(), time_budget_s: float | None = None,
                progress: Callable[[FuzzReport], None] | None = None) -> SessionResult:
    bootstrap = cluster.bootstrap_servers
    ports = {b.broker_id: b.port for b in cluster.brokers.values()}
    create_topics(bootstrap)
    for topic in (KAFKA_LIVE, NATIVE_LIVE):
        for p in range(LIVE_PARTITIONS):
            wait_until(lambda: cluster.leader_of(topic, p) > 0, 60, f"a leader for {topic}-{p}")
    zk = ZkClient(cluster.zk_connect).start()
    traffic: list = []
    stopped = False
    try:
        # kio's reader loads its schemas while the seeds are recorded
        warming = threading.Thread(target=warm, args=(api_ranges(min(ports.values())),),
                                   daemon=True)
        warming.start()
        if live:       # started first: they get under way while the seeds are recorded
            traffic = [("confluent-kafka on " + KAFKA_LIVE,
                        KafkaLiveTraffic(bootstrap, KAFKA_LIVE, LIVE_PARTITIONS).start()),
                       ("kafkalite clients on " + NATIVE_LIVE,
                        NativeLiveTraffic(bootstrap, NATIVE_LIVE, LIVE_PARTITIONS).start())]
        # the controller's own frames first: its stand-in broker must be gone before the client
        # session creates topics (they could be assigned to it)
        started = time.monotonic()
        own = recorded_seeds(record_controller_frames(cluster.zk_connect, bootstrap,
                                                      min(ports)))
        phases = {"controller's frames recorded": time.monotonic() - started}
        recorded = record_client_session(bootstrap, {port: b for b, port in ports.items()})
        view = read_controller_view(zk)
        forged = controller_seeds(view, {KAFKA_LIVE: LIVE_PARTITIONS,
                                         NATIVE_LIVE: LIVE_PARTITIONS})
        phases["client session recorded"] = time.monotonic() - started - sum(phases.values())
        built = built_client_seeds()
        kafka_seeds = seed_payloads(KAFKA_TARGET)
        seeds = {"kafka": len(kafka_seeds), "native recorded": len(recorded),
                 "native built": len(built), "native controller": len(forged),
                 "controller's own (recorded)": len(own)}
        for name, t in traffic:
            wait_until(lambda: min(t.counts()) > 100, 60, f"{name} under way")
        phases["live clients under way"] = time.monotonic() - started - sum(phases.values())
        before_counts = [t.counts() for _, t in traffic]
        topics_before = topic_counts(zk)
        fixed = {KAFKA_LIVE, NATIVE_LIVE} | ({"__consumer_offsets"} & set(topics_before))
        logs = log_sizes([b.log_path for b in cluster.brokers.values()])

        warming.join()
        report = run_fuzz(ports, kafka_seeds, recorded + built + forged + own, probe_payloads(),
                          lambda: read_controller_view(zk), cases, seed=seed, workers=workers,
                          wait_s=wait_s, native_share=native_share, known_bugs=known_bugs,
                          time_budget_s=time_budget_s,
                          protected_topics=frozenset({KAFKA_LIVE, NATIVE_LIVE}),
                          progress=progress)

        during_counts = [t.counts() for _, t in traffic]
        phases["fuzz"] = time.monotonic() - started - sum(phases.values())
        result = SessionResult(report, seed, seeds, [(name, t, b, d) for (name, t), b, d
                                               in zip(traffic, before_counts, during_counts)],
                               phases=phases)
        problems = result.problems
        left = sum(report.left_out.values())
        if left > MAX_LEFT_OUT_SHARE * (report.cases + left):
            problems.append(f"{left} of {report.cases + left} cases were left out, above the "
                            f"bound of {MAX_LEFT_OUT_SHARE:.0%}: {dict(report.left_out)}")
        if traffic:
            try:
                wait_until(lambda: all(min(t.counts()) > min(during) + 100 for (_, t), during
                                       in zip(traffic, during_counts)), AFTER_FUZZ_S,
                           "the live clients going on after the fuzz")
            except ClusterError as exc:
                problems.append(f"{exc}: acked/read {[t.counts() for _, t in traffic]}, "
                                f"{during_counts} right after the fuzz")
        for _, t in traffic:          # both at once: each may wait STOP_TIMEOUT_S for acks
            t.request_stop()
        for _, t in traffic:
            t.stop()
        stopped = True
        dead = [b.broker_id for b in cluster.brokers.values() if not b.running]
        if dead:
            problems.append(f"brokers {dead} died")
        problems += [f"bad answer: {p.describe()}" for p in report.problems[:20]]
        if report.problem_count > 20:
            problems.append(f"... {report.problem_count - 20} more bad answers")
        problems += [f"connection error: {e}" for e in report.errors[:10]]
        problems += [f"logged: {e}" for e in unexpected_errors(logs)[:20]]
        for (name, t), before, during in zip(traffic, before_counts, during_counts):
            if not (during[0] > before[0] and during[1] > before[1]):
                problems.append(f"{name} stalled in the fuzz: acked/read {before} before, "
                                f"{during} after")
            if t.failed:
                problems.append(f"{name}: {len(t.failed)} records failed: {t.failed[:3]}")
        problems += settled_cluster_problems(zk, ports, topics_before, fixed, timeout_s=45)
        result.topics = (topics_before, topic_counts(zk))
        epochs = sorted({view.epoch, read_controller_view(zk).epoch}
                        | {v.epoch for v in report.views})
        if len(epochs) > 1:
            problems.append(f"the controller epoch moved during the fuzz: {epochs}")
        for _, t in traffic:
            problems += t.verify()
        phases["checks"] = time.monotonic() - started - sum(phases.values())
        return result
    finally:
        if not stopped:
            for _, t in traffic:
                t.stop()
        zk.stop()
