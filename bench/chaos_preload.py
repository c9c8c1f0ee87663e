"""bench/chaos.py ``--preload-offsets N``: the brokers' logs at N offsets per partition before the
faults, and what a restarted broker re-verifies (issue 24, bug 5: recovery after kill -9 grew
with the log).

The preload goes to a topic of its own, ``chaos-preload`` (as many partitions as the bench topic,
replication factor 3, min.insync.replicas 2), written by librdkafka (confluent-kafka: acks=all,
linger, large batches) before the schedule starts. A topic of its own keeps the chaos topic's
accounting as it is (the BackgroundProducer's ``key-K:SEQ`` values, probes, the live consumer)
while the restart costs the same: a broker re-verifies every partition it hosts before it
registers. At the end every acknowledged preload record must be read back by confluent-kafka at
its acknowledged offset (``preload_problems``); any other outcome fails the run.

``RestartWatch`` notes for each leader kill how long the restarted broker took to register in
ZooKeeper again (the part of the recovery that log recovery is in) and what it re-verified,
counted from the files right after the kill -9 by the loader's rule
(``kill9_recovery.to_reverify``: every segment from the one holding the checkpointed recovery
point on), so that a broker that does not log the count (the code before issue 24's fix) is
measured the same way; a broker that logs it is checked against it.
"""

from __future__ import annotations

import os
import re
import statistics
import time
from collections import defaultdict
from typing import Any, Iterable, Mapping

PRELOAD_TOPIC = "chaos-preload"
VALUE_BYTES = 100
#: the loader's per-data-dir line (kafkalite/log/manager.py), in brokers that log it
LOGGED = re.compile(r"recovered (\d+) log\(s\) in \S+: re-verified (\d+) segment\(s\), "
                    r"(\d+) bytes")
#: the broker's own start-up lines, with their times (milliseconds where the broker logs them)
STEP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:,(\d{3}))?\] INFO (?:broker \d+ "
                  r"(starting)|(loading logs) from|broker \d+ (registered) at)", re.M)


def preload_value(partition: int, number: int) -> bytes:
    """The ``number``-th preload record of ``partition``: unique, ``VALUE_BYTES`` long."""
    head = b"pre-%d-%d:" % (partition, number)
    return head + b"." * max(0, VALUE_BYTES - len(head))


def preload_problems(acked: Mapping[int, Mapping[int, int]], reads: Iterable[tuple]
                     ) -> list[str]:
    """What is wrong with the read-back: ``acked`` {partition: {offset: number}} as the producer
    acknowledged them, ``reads`` (partition, offset, value) as read back. Lost: acknowledged,
    its value nowhere; misplaced: at another offset; a value read twice is a duplicate."""
    found: dict[bytes, list[tuple[int, int]]] = defaultdict(list)
    for partition, offset, value in reads:
        found[value].append((partition, offset))
    problems = []
    for partition, offsets in sorted(acked.items()):
        for offset, number in sorted(offsets.items()):
            where = found.get(preload_value(partition, number), [])
            if not where:
                problems.append(f"lost: partition {partition} offset {offset} (record {number})")
            elif (partition, offset) not in where:
                problems.append(f"misplaced: partition {partition} record {number} acknowledged "
                                f"at {offset}, read at {where}")
    problems += [f"duplicated: {value[:24]!r} at {where}" for value, where in found.items()
                 if len(where) > 1]
    return problems


def preload(bootstrap: str, partitions: int, per_partition: int, timeout_s: float = 900
            ) -> tuple[dict[int, dict[int, int]], float]:
    """Write ``per_partition`` records to each partition of PRELOAD_TOPIC, acks=all; returns
    ({partition: {offset: number}} acknowledged, seconds). Raises on any failed delivery: the
    preload runs before the faults, on a healthy cluster."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 50,
                         "batch.size": 1_000_000, "queue.buffering.max.messages": 200_000,
                         "message.timeout.ms": int(timeout_s * 1000)})
    acked: dict[int, dict[int, int]] = {p: {} for p in range(partitions)}
    failures: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failures.append(f"{msg.partition()}: {err}")
        else:
            number = int(msg.value()[4:].split(b":")[0].split(b"-")[1])
            acked[msg.partition()][msg.offset()] = number

    started = time.monotonic()
    for number in range(per_partition):
        for partition in range(partitions):
            while True:
                try:
                    producer.produce(PRELOAD_TOPIC, preload_value(partition, number),
                                     partition=partition, on_delivery=delivered)
                    break
                except BufferError:      # the local queue is full: let deliveries drain it
                    producer.poll(0.05)
        if number % 1000 == 0:
            producer.poll(0)
    left = producer.flush(timeout_s)
    if failures or left:
        raise RuntimeError(f"preload: {len(failures)} failed deliveries ({failures[:3]}), "
                           f"{left} undelivered")
    return acked, time.monotonic() - started


def check_preload(bootstrap: str, partitions: int, acked: Mapping[int, Mapping[int, int]]
                  ) -> list[str]:
    """Read PRELOAD_TOPIC to its end with confluent-kafka; ``preload_problems`` of it."""
    from kafkalite.testing.independent_read import read_to_end

    messages = read_to_end(bootstrap, PRELOAD_TOPIC, partitions, timeout_s=600)
    return preload_problems(acked, ((m.partition(), m.offset(), m.value()) for m in messages))


class RestartWatch:
    """The leader-kill hooks of chaos_faults.Chaos: ``killed`` (after the kill -9, before the
    restart) counts what the restart will re-verify; ``recovered`` reads what the broker logged."""

    def __init__(self, kafka: Any):
        self.kafka = kafka
        self.counted: list[tuple[int, int, int]] = []   # (segments, bytes, total bytes)
        self.logged: list[tuple[int, int]] = []         # (segments, bytes) the broker logged
        self.registered_s: list[float] = []             # restart -> registered in ZooKeeper
        self.steps: list[tuple[float, float]] = []      # startup_steps of each restart
        self.registered_cpu_s: list[float] = []         # the broker's CPU s when registered
        self._lines: dict[int, int] = {}

    def _logged_lines(self, broker_id: int) -> list[tuple[str, str, str]]:
        return LOGGED.findall(self.kafka.brokers[broker_id].log_tail(10**7))

    def killed(self, broker_id: int) -> str:
        from kill9_recovery import to_reverify

        segments, size, total = to_reverify(self.kafka.brokers[broker_id].log_dir)
        self.counted.append((segments, size, total))
        self._lines[broker_id] = len(self._logged_lines(broker_id))
        return (f"re-verifies {segments} segment(s), {size / 1e6:.1f} of {total / 1e6:.1f} MB "
                f"({100 * size / max(total, 1):.0f}%)")

    def registered(self, broker_id: int, seconds: float) -> str:
        """The restarted broker is registered again ``seconds`` after its restart began; its
        CPU seconds so far (what the start-up cost, whatever else the machine runs)."""
        self.registered_s.append(seconds)
        process = self.kafka.brokers[broker_id].process if self.kafka else None
        cpu = cpu_seconds(process.pid) if process is not None else None
        if cpu is None:
            return f"; registered {seconds:.1f} s after the restart"
        self.registered_cpu_s.append(cpu)
        return f"; registered {seconds:.1f} s after the restart, {cpu:.1f} CPU s"

    def recovered(self, broker_id: int) -> str:
        text = self.kafka.brokers[broker_id].log_tail(10**7)
        steps = startup_steps(text)
        said = ""
        if steps:
            self.steps.append(steps)
            said = (f"; in its log: loading logs -> registered {steps[0]:.1f} s (starting -> "
                    f"registered {steps[1]:.1f} s)")
        new = LOGGED.findall(text)[self._lines.get(broker_id, 0):]
        if not new:
            return said + "; the broker logs no count"
        segments = sum(int(s) for _n, s, _b in new)
        size = sum(int(b) for _n, _s, b in new)
        self.logged.append((segments, size))
        return said + f"; it logged {segments} segment(s), {size / 1e6:.1f} MB"

    def summary(self) -> str:
        line = reverify_summary(self.counted, self.logged)
        if self.registered_s:
            line += (f"\nrestart -> registered in ZooKeeper (process start, log recovery): p50 "
                     f"{statistics.median(self.registered_s):.2f} s, max "
                     f"{max(self.registered_s):.2f} s; the rest of the recovery column is the "
                     f"rejoin (LeaderAndIsr, catch-up, ISR expansion, a probe acknowledged)")
        if self.registered_cpu_s:
            cpu = self.registered_cpu_s
            line += (f"\nthe restarted broker's CPU seconds when seen registered: p50 "
                     f"{statistics.median(cpu):.2f} s, max {max(cpu):.2f} s")
        if self.steps:
            loaded = [a for a, _b in self.steps]
            line += (f"\nin the brokers' logs, 'loading logs' -> 'registered' (the log recovery "
                     f"and the rest of the start-up): p50 {statistics.median(loaded):.2f} s, max "
                     f"{max(loaded):.2f} s; 'starting' -> 'registered' p50 "
                     f"{statistics.median(b for _a, b in self.steps):.2f} s (the rest of the "
                     f"restart -> registered time is the process start before 'starting')")
        return line


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (Linux /proc), None where not readable."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def startup_steps(log_text: str) -> tuple[float, float] | None:
    """For the broker's last start in ``log_text``: seconds from 'loading logs' (the log recovery
    starts; the rest up to the registration is short: services, listeners, a ZooKeeper write)
    and from 'starting' to 'registered'; None if that start has not registered yet. The times
    have the log's resolution (1 s in brokers that log no milliseconds)."""
    from datetime import datetime

    last: dict[str, float] = {}
    for stamp, millis, starting, loading, registered in STEP.findall(log_text):
        at = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").timestamp() + int(millis or 0) / 1e3
        if starting:
            last = {"starting": at}
        elif loading and "starting" in last:
            last["loading"] = at
        elif registered and "starting" in last:
            last["registered"] = at
    if "registered" not in last or "loading" not in last:
        return None
    return last["registered"] - last["loading"], last["registered"] - last["starting"]


def reverify_summary(counted: list[tuple[int, int, int]], logged: list[tuple[int, int]]) -> str:
    """One line: p50/max of the bytes (and share of the broker's log) re-verified per restart."""
    if not counted:
        return "re-verified at restart: no leader kill"
    sizes = [size for _s, size, _t in counted]
    shares = [100 * size / max(total, 1) for _s, size, total in counted]
    line = (f"re-verified at restart ({len(counted)} leader kills, counted from the files): "
            f"p50 {statistics.median(sizes) / 1e6:.1f} MB, max {max(sizes) / 1e6:.1f} MB; "
            f"p50 {statistics.median(shares):.0f}%, max {max(shares):.0f}% of the broker's log")
    if logged:
        line += (f"; as the brokers logged: p50 "
                 f"{statistics.median(b for _s, b in logged) / 1e6:.1f} MB "
                 f"({len(logged)} restarts)")
    else:
        line += "; the brokers log no count"
    return line
