"""The accounting of bench/chaos.py, pure (no I/O): what a history of acknowledged writes and a
final read of the log say, and the per-fault timing table.

Values are the BackgroundProducer's ``b"key-K:SEQ"`` (tests/system/replication_tools.py), or
Kafka's VerifiableProducer's ``b"SEQ"`` (chaos_verifiable.py, given as ``acked_values`` with its
own ``sequence_of``), and the chaos probes' ``b"probe-N"``. ``reads`` is ``{partition: {offset:
value}}``, everything read back below the high watermarks after the faults were healed.

- lost: acknowledged, and its value is nowhere in ``reads``;
- misplaced: acknowledged, read back, but not at the offset its acknowledgement named;
- duplicated: a producer sequence stored at two or more offsets (a retried send that had been
  written: the producer is not idempotent, so this is allowed, and counted);
- out of order: per partition, a record whose sequence is below one stored at a lower offset
  (a repeat of a sequence already seen, a retried batch, is a duplicate instead).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping


def producer_sequence(value: bytes | None) -> int | None:
    """The sequence in a ``b"key-K:SEQ"`` value; None for anything else (a probe)."""
    key, _, sequence = (value or b"").rpartition(b":")
    return int(sequence) if key.startswith(b"key-") and sequence.isdigit() else None


@dataclass
class Accounting:
    acknowledged: int = 0
    probes: int = 0
    read: int = 0
    lost: list = field(default_factory=list)          # (partition, offset, value) acknowledged
    misplaced: list = field(default_factory=list)     # (partition, acked offset, value, found at)
    duplicated: int = 0
    out_of_order: list = field(default_factory=list)  # (partition, offset, sequence, after)
    divergent: list = field(default_factory=list)     # descriptions from the replica comparison
    consumer_mismatches: list = field(default_factory=list)   # (partition, offset, live, final)
    not_consumed: list | None = None  # acknowledged, never consumed (checked: verifiable clients)

    @property
    def failed(self) -> bool:
        """What makes the run fail: lost, misplaced or divergent records, or a live consumer
        that read something the log does not hold (order and duplicates are reported)."""
        return bool(self.lost or self.misplaced or self.divergent or self.consumer_mismatches
                    or self.not_consumed)


def account(acknowledged: Iterable[tuple], probes: Iterable[tuple],
            reads: Mapping[int, Mapping[int, bytes]], *, acked_values: Iterable[tuple] = (),
            sequence_of: Callable[[bytes | None], int | None] = producer_sequence
            ) -> Accounting:
    """``acknowledged``: the producer's (key, sequence, partition, offset); ``probes``:
    (value, partition, offset) of probe writes a broker acknowledged; ``acked_values``: records
    of a producer that names them by value (Kafka's VerifiableProducer), (value, partition,
    offset), counted as acknowledged; ``sequence_of``: a stored value's producer sequence (None
    for a probe), for the duplicate and order checks."""
    result = Accounting()
    where = defaultdict(list)                # value -> [(partition, offset)]
    for partition, records in reads.items():
        for offset, value in records.items():
            where[value].append((partition, offset))
    result.read = sum(len(records) for records in reads.values())

    def check(value, partition, offset):
        if reads.get(partition, {}).get(offset) == value:
            return
        found = where.get(value)
        if not found:
            result.lost.append((partition, offset, value))
        else:
            result.misplaced.append((partition, offset, value, found))

    for key, sequence, partition, offset in acknowledged:
        result.acknowledged += 1
        check(b"%s:%d" % (key, sequence), partition, offset)
    for value, partition, offset in acked_values:
        result.acknowledged += 1
        check(value, partition, offset)
    for value, partition, offset in probes:
        result.probes += 1
        check(value, partition, offset)

    for partition, records in sorted(reads.items()):
        seen, newest = set(), -1
        for offset in sorted(records):
            sequence = sequence_of(records[offset])
            if sequence is None:
                continue
            if sequence in seen:
                result.duplicated += 1
                continue
            if sequence < newest:
                result.out_of_order.append((partition, offset, sequence, newest))
            seen.add(sequence)
            newest = max(newest, sequence)
    return result


def consumer_mismatches(live: Mapping[int, Mapping[int, bytes]],
                        final: Mapping[int, Mapping[int, bytes]]) -> list:
    """Offsets where a consumer reading during the faults got another record than the final log
    holds there (it read something that was later truncated or replaced)."""
    out = []
    for partition, records in sorted(live.items()):
        final_records = final.get(partition, {})
        for offset, value in sorted(records.items()):
            if final_records.get(offset) != value:
                out.append((partition, offset, value, final_records.get(offset)))
    return out


# --- timings -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class FaultTiming:
    kind: str
    failover_s: float | None      # fault start -> new leaders accepted acks=all (None: no failover)
    recovery_s: float | None      # heal start -> every partition led, full ISR, acks=all accepted


def _spread(values: list[float]) -> str:
    if not values:
        return f"{'-':>6} {'-':>6} {'-':>6}"
    return f"{min(values):6.2f} {statistics.median(values):6.2f} {max(values):6.2f}"


def timing_table(timings: Iterable[FaultTiming], kinds: Iterable[str]) -> str:
    """Per fault kind (in ``kinds``' order, then any other): count, failover and recovery
    min/p50/max in seconds; ``failovers`` says how many of the faults moved a leadership."""
    by_kind = defaultdict(list)
    for timing in timings:
        by_kind[timing.kind].append(timing)
    order = list(dict.fromkeys([*kinds, *sorted(by_kind)]))
    header = (f"{'fault':<26} {'count':>5} {'failovers':>9}  {'failover s min/p50/max':>20}"
              f"  {'recovery s min/p50/max':>20}")
    lines = [header, "-" * len(header)]
    for kind in order:
        done = by_kind.get(kind, [])
        failovers = [t.failover_s for t in done if t.failover_s is not None]
        recoveries = [t.recovery_s for t in done if t.recovery_s is not None]
        lines.append(f"{kind:<26} {len(done):>5} {len(failovers):>9}  {_spread(failovers):>20}"
                     f"  {_spread(recoveries):>20}")
    return "\n".join(lines)


def accounting_table(result: Accounting) -> str:
    rows = [("acknowledged (acks=all)", f"{result.acknowledged} records + {result.probes} probes"),
            ("read back", result.read),
            ("lost (acknowledged, not read back)", len(result.lost)),
            ("misplaced (not at the acknowledged offset)", len(result.misplaced)),
            ("duplicated (a sequence at two offsets)", result.duplicated),
            ("divergent (replicas differ below the HW)", len(result.divergent)),
            ("out of order", len(result.out_of_order)),
            ("live consumer read a record not in the log", len(result.consumer_mismatches))]
    if result.not_consumed is not None:
        rows.append(("acknowledged, never consumed by the consumer", len(result.not_consumed)))
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


# --- per fault ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class FaultMark:
    """Where a window of the run starts: ``label`` ("#3 leader-kill", "before the faults") and
    the clients' cumulative ``counters`` then ({"acked": n, "send errors": n, ...})."""
    label: str
    counters: Mapping[str, int]


def per_fault_table(marks: list[FaultMark], final: Mapping[str, int],
                    acked_order: list[tuple], attributed: Mapping[str, Iterable[tuple]]) -> str:
    """One row per window (a fault owns everything from its start to the next one's): each
    counter's increase in it, and how many of each ``attributed`` list's records were
    acknowledged in it. ``acked_order``: the acknowledged records as (value, partition, offset)
    in acknowledgement order (the order of ``counters["acked"]``); ``attributed``: {column:
    [(value, partition, offset)]} (probes and anything else not in ``acked_order`` go to a row
    of their own)."""
    import bisect

    starts = [mark.counters.get("acked", 0) for mark in marks]
    index = {record: i for i, record in enumerate(acked_order)}
    columns = list(dict.fromkeys(k for m in (*[mk.counters for mk in marks], final) for k in m))
    counts = {name: [0] * (len(marks) + 1) for name in attributed}
    for name, records in attributed.items():
        for record in records:
            i = index.get(record)
            row = len(marks) if i is None else max(bisect.bisect_right(starts, i) - 1, 0)
            counts[name][row] += 1
    header = [f"{'window':<32}", *(f"{c:>12}" for c in columns),
              *(f"{a:>14}" for a in attributed)]
    lines = [" ".join(header), "-" * len(" ".join(header))]
    for row, mark in enumerate(marks):
        after = marks[row + 1].counters if row + 1 < len(marks) else final
        cells = [f"{mark.label:<32}",
                 *(f"{after.get(c, 0) - mark.counters.get(c, 0):>12}" for c in columns),
                 *(f"{counts[a][row]:>14}" for a in attributed)]
        lines.append(" ".join(cells))
    if any(counts[a][len(marks)] for a in attributed):
        lines.append(" ".join([f"{'(probes, not the producer)':<32}",
                               *(f"{'':>12}" for _c in columns),
                               *(f"{counts[a][len(marks)]:>14}" for a in attributed)]))
    return "\n".join(lines)
