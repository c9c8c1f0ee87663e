"""Runs the broker fuzz over both protocols (tests/system/test_protocol_fuzz.py,
bench/protocol_fuzz.py; no test functions here).

Cases are made in chunks, Kafka and native interleaved (``native_share`` of them native), each
chunk against the controller view ZooKeeper holds when it is made, and sent ``workers`` at a
time, each on a connection of its own, to the broker it is meant for (else round-robin). Cases
that must not be sent are counted, not sent (fuzz_kio's resource-heavy requests and
native_fuzz_cases.left_out). Each exchange is judged by the protocol the broker will see
(fuzz_frames.sniff), whatever generator made the bytes: a Kafka connection by what kio makes of
each frame (fuzz_kio), a native one by its envelopes (native_fuzz_cases). A closed connection is
a problem when an answer the broker owed is missing (to a well-formed request ahead of any
frame the protocol closes on), unless the case was malformed at the framing level (a length
prefix no broker reads, a first frame of no protocol).
"""

from __future__ import annotations

import collections
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from fuzz_frames import KAFKA, NATIVE, bad_framing, complete_frames, exchange, sniff
from fuzz_kio import Expectation, classify, close_children, expect
from kafka_fuzz_tools import api_ranges, check_kafka, make_case
from native_fuzz_cases import (check_native, context_ints, expected_answers, left_out,
                               make_native_case)
from native_fuzz_seeds import ControllerView, Seed

KEEP_PROBLEMS = 200            # problems kept with their bytes (all are counted)
FIRST_CHUNK = 500              # the first chunk's making (kio's reading) holds up the start


def family(kind: str) -> str:
    """The mutation family a case kind belongs to, for the tables ("length-huge" -> "length")."""
    for prefix in ("pipelined", "length"):
        if kind.startswith(prefix + "-fields-"):
            return kind[len(prefix) + 1:]
        if kind.startswith(prefix + "-"):
            return prefix
    return kind


@dataclass
class Problem:
    protocol: str                 # the generator
    kind: str
    broker_id: int
    seed: str
    what: str
    data: bytes                   # the exact bytes of the case

    def describe(self) -> str:
        shown = self.data.hex() if len(self.data) <= 512 else self.data[:512].hex() + "..."
        return (f"[{self.protocol} {self.kind} from {self.seed!r} to broker {self.broker_id}] "
                f"{self.what}; bytes: {shown}")


@dataclass
class FuzzReport:
    cases: int = 0
    seconds: float = 0.0
    outcomes: collections.Counter = field(default_factory=collections.Counter)
    #   (protocol, kind family, result) -> count
    left_out: collections.Counter = field(default_factory=collections.Counter)
    #   (protocol, reason) -> count
    problem_count: int = 0
    problems: list = field(default_factory=list)     # the first KEEP_PROBLEMS Problems
    errors: list = field(default_factory=list)       # connection failures (a broker down?)
    views: list = field(default_factory=list)        # the controller views the chunks saw

    @property
    def rate(self) -> float:
        return self.cases / self.seconds if self.seconds else 0.0

    def results(self, protocol: str | None = None) -> collections.Counter:
        out = collections.Counter()
        for (proto, _kind, result), n in self.outcomes.items():
            if protocol is None or proto == protocol:
                out[result] += n
        return out

    def summary(self) -> str:
        per_protocol = "; ".join(
            f"{proto} {sum(self.results(proto).values())} ("
            + ", ".join(f"{r} {n}" for r, n in sorted(self.results(proto).items())) + ")"
            for proto in (KAFKA, NATIVE))
        left = ", ".join(f"{p} {r} {n}" for (p, r), n in sorted(self.left_out.items())) or "none"
        return (f"{self.cases} cases in {self.seconds:.1f} s ({self.rate:.0f} cases/s): "
                f"{per_protocol}; left out: {left}; {self.problem_count} problems, "
                f"{len(self.errors)} connection errors")

    def table(self) -> str:
        """Outcome counts per protocol and kind family."""
        rows = collections.defaultdict(collections.Counter)
        for (proto, kind, result), n in self.outcomes.items():
            rows[(proto, kind)][result] += n
        lines = [f"  {'protocol':8} {'kind':22} {'answered':>9} {'closed':>9} {'silent':>9}"]
        for (proto, kind), counts in sorted(rows.items()):
            lines.append(f"  {proto:8} {kind:22} {counts['answered']:9} {counts['closed']:9} "
                         f"{counts['silent']:9}")
        return "\n".join(lines)


def judge(data: bytes, frames: list[bytes], leftover: int, result: str = "answered",
          kafka: Expectation | None = None) -> str | None:
    """What is wrong with the broker's answer to ``data`` (``result``: how the exchange ended,
    fuzz_frames.Exchange), or None. ``kafka``: the expectation for a Kafka connection (fuzz_kio;
    required when the first frame is Kafka's)."""
    if leftover:
        return f"{leftover} bytes of an incomplete response frame"
    sent = complete_frames(data)
    protocol = sniff(sent[0]) if sent else None
    if protocol is None:
        if frames:
            return (f"{len(frames)} answer(s) to a connection whose first frame is "
                    f"{'missing' if not sent else 'neither Kafka nor native'}")
        return None
    if protocol == KAFKA:
        problem = check_kafka(kafka, frames)
        # up to the first frame Kafka closes on, or the first acks=0 Produce (which closes the
        # connection if it fails)
        owed = len(kafka.answers) if kafka.owed is None else kafka.owed
    else:
        problem = check_native(sent, frames)
        owed = len(expected_answers(sent))  # up to the first unreadable envelope
    if problem:
        return problem
    # one request at a time (as Kafka's muted channel): the answers ahead of a frame the broker
    # closes on are sent before it reads that frame; a length prefix it cannot read may close
    # the connection as soon as it arrives
    if result == "closed" and len(frames) < owed and not bad_framing(data):
        return (f"the connection was closed after {len(frames)} of the {owed} answers owed to "
                f"well-formed {protocol} requests")
    return None


def _answers_expected(data: bytes, kafka: Expectation | None) -> int:
    """How many answers to read before the exchange may stop (0: until closed or silent)."""
    sent = complete_frames(data)
    if kafka is not None:
        if kafka.unjudged:
            return len(sent)
        return len(kafka.answers) + (1 if kafka.close_allowed else 0)
    if sent and sniff(sent[0]) == NATIVE:
        return len(expected_answers(sent))
    return len(sent)


def run_fuzz(ports: dict[int, int], kafka_seeds: dict[str, bytes], native_seeds: list[Seed],
             probes: tuple[bytes, bytes], read_view: Callable[[], ControllerView], cases: int,
             seed: int = 20261122, workers: int = 16, wait_s: float = 0.5,
             native_share: float = 0.5, chunk: int = 4000, known_bugs: frozenset = frozenset(),
             time_budget_s: float | None = None, protected_topics: frozenset = frozenset(),
             progress: Callable[[FuzzReport], None] | None = None) -> FuzzReport:
    """``cases`` cases over ``ports`` (broker id -> port); ``probes``: two valid native requests
    to pipeline around mutated ones; ``read_view()`` reads the controller view from ZooKeeper;
    ``known_bugs``: names in native_fuzz_cases.KNOWN_BUGS whose triggers are left out;
    ``protected_topics``: the live topics, which no deleting request may name;
    ``time_budget_s``: send no new chunk after this long (``report.cases`` says how many ran).
    Each chunk is made (and classified) while the one before it is being sent."""
    rnd = random.Random(seed)
    report = FuzzReport()
    broker_ids = sorted(ports)
    ranges = api_ranges(ports[broker_ids[0]])
    lock = threading.Lock()
    start = time.monotonic()

    def one(item):
        broker_id, case, kafka = item
        try:
            ex = exchange(ports[broker_id], case.data, _answers_expected(case.data, kafka),
                          wait_s)
        except OSError as exc:
            with lock:
                report.errors.append((case.protocol, case.kind, broker_id,
                                      f"{type(exc).__name__}: {exc}"))
            return
        problem = judge(case.data, ex.frames, ex.leftover, ex.result, kafka)
        with lock:
            report.cases += 1
            report.outcomes[(case.protocol, family(case.kind), ex.result)] += 1
            if problem:
                report.problem_count += 1
                if len(report.problems) < KEEP_PROBLEMS:
                    report.problems.append(Problem(case.protocol, case.kind, broker_id,
                                                   case.seed, problem, case.data))

    def prepare(size: int, offset: int):
        """The next chunk, made while the previous one is under way: the view it was made
        against, the (broker id, case) pairs to send, and what was left out."""
        view = read_view()
        ints = context_ints(view)
        batch = [make_native_case(rnd, native_seeds, ints, probes, view)
                 if rnd.random() < native_share else make_case(rnd, kafka_seeds)
                 for _ in range(size)]
        kafka_frames = {}
        for i, case in enumerate(batch):
            sent = complete_frames(case.data)
            if sent and sniff(sent[0]) == KAFKA:
                kafka_frames[i] = sent
        flat = [payload for sent in kafka_frames.values() for payload in sent]
        verdicts = iter(classify(flat, ranges) if flat else [])
        kafka = {i: [next(verdicts) for _ in sent] for i, sent in kafka_frames.items()}
        left = collections.Counter()
        planned = []
        for i, case in enumerate(batch):
            broker_id = (case.broker_id if case.broker_id is not None
                         else broker_ids[(offset + i) % len(broker_ids)])
            if i in kafka:
                if any(v.heavy for v in kafka[i]):
                    left[(case.protocol, "resource-heavy")] += 1
                    continue
                planned.append((broker_id, case, expect(kafka[i])))
                continue
            sent = complete_frames(case.data)
            if sent and sniff(sent[0]) == NATIVE:
                reason = left_out(sent, broker_id, view, known_bugs, protected_topics)
                if reason:
                    left[(case.protocol, reason)] += 1
                    continue
            planned.append((broker_id, case, None))
        return view, planned, left

    with ThreadPoolExecutor(max_workers=workers) as pool, \
            ThreadPoolExecutor(max_workers=1) as planner:
        made = min(FIRST_CHUNK, chunk, cases)    # small: nothing is sent while it is made
        pending = planner.submit(prepare, made, 0) if made else None
        while pending is not None:
            view, planned, left = pending.result()
            if time_budget_s is not None and time.monotonic() - start > time_budget_s:
                break
            report.views.append(view)
            report.left_out.update(left)
            size = min(chunk, cases - made)
            pending = planner.submit(prepare, size, made) if size else None
            made += size
            list(pool.map(one, planned))
            report.seconds = time.monotonic() - start
            if progress is not None:
                progress(report)
    close_children()
    report.seconds = time.monotonic() - start
    return report
