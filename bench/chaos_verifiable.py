"""Kafka's own verifiable clients as the clients of bench/chaos.py (``--clients verifiable``):
``org.apache.kafka.tools.VerifiableProducer`` and ``VerifiableConsumer`` from Apache Kafka 2.8.2's
jars, the tools Kafka's system tests judge a cluster with, run as ``java -cp '<libs>/*'``.

Each tool prints one JSON object a line on stdout; a reader thread feeds them to the pure logs
below (ProducerLog, ConsumerLog), which tests/unit/test_chaos_verifiable.py checks:

- producer: ``producer_send_success`` (topic, partition, offset, key, value) is an acknowledged
  record; ``producer_send_error`` (exception, message) a failed send, counted by exception class;
  ``tool_data`` (sent, acked) at shutdown; values are the decimal ``b"SEQ"``, the sequence;
- consumer (``--verbose``, manual sync commits, as Kafka's system tests run it):
  ``record_data`` (partition, offset, value) a delivered record, ``records_consumed`` a poll's
  count, ``offsets_committed`` (offsets, success, error), ``partitions_assigned`` / ``revoked``.

The acknowledged records go through chaos_history.account like the Python producer's (lost,
misplaced, duplicated, out of order); the consumer adds what Kafka's system tests check: every
acknowledged record was consumed, and how many were delivered again (at-least-once allows it
after a rebalance or a restart; counted). A consumer that exits by itself is started again (it
goes on from its group's committed offsets) and counted; a producer that does stops the run (a
new one would send the same values again).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import threading
from collections import Counter, defaultdict
from typing import Any, Iterable, Mapping

log = logging.getLogger("chaos")

PRODUCER_CLASS = "org.apache.kafka.tools.VerifiableProducer"
CONSUMER_CLASS = "org.apache.kafka.tools.VerifiableConsumer"
GROUP = "chaos-verifiable"


# ------------------------------------------------------------------------- pure: the events

def parse_event(line: str | bytes) -> dict | None:
    """One stdout line as an event; None for anything that is not a JSON object with a name."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) and "name" in event else None


def verifiable_sequence(value: bytes | None) -> int | None:
    """The sequence in a VerifiableProducer value (``b"SEQ"``, no --value-prefix); None for
    anything else (a chaos probe)."""
    return int(value) if value and value.isdigit() else None


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


class ProducerLog:
    """What a VerifiableProducer's events say. ``acknowledged``: (value, partition, offset)."""

    def __init__(self, topic: str):
        self.topic = topic
        self.acknowledged: list[tuple[bytes, int, int]] = []
        self.errors: Counter = Counter()        # exception class -> failed sends
        self.error_messages: Counter = Counter()
        self.tool_data: dict | None = None      # the tool's own sent/acked at shutdown
        self.other_topic = 0                    # acks naming another topic (never expected)
        self.shutdowns = 0

    def feed(self, event: Mapping[str, Any]) -> None:
        name = event["name"]
        if name == "producer_send_success":
            if event.get("topic") != self.topic:
                self.other_topic += 1
                return
            self.acknowledged.append((_bytes(event["value"]), int(event["partition"]),
                                      int(event["offset"])))
        elif name == "producer_send_error":
            kind = str(event.get("exception", "?")).removeprefix("class ").rsplit(".", 1)[-1]
            self.errors[kind] += 1
            self.error_messages[str(event.get("message"))[:120]] += 1
        elif name == "tool_data":
            self.tool_data = dict(event)
        elif name == "shutdown_complete":
            self.shutdowns += 1

    @property
    def failed(self) -> int:
        return sum(self.errors.values())


class ConsumerLog:
    """What a VerifiableConsumer's events say. ``reads``: {partition: {offset: value}}, the last
    value delivered at each offset; ``conflicts``: an offset delivered twice with two values."""

    def __init__(self, topic: str):
        self.topic = topic
        self.reads: dict[int, dict[int, bytes]] = defaultdict(dict)
        self.delivered = 0                      # record_data events, redeliveries included
        self.polled = 0                         # the records_consumed counts' sum
        self.conflicts: list[tuple[int, int, bytes | None, bytes | None]] = []
        self.committed: dict[int, int] = {}     # partition -> last committed offset
        self.commits = self.commit_failures = 0
        self.assignments = self.revocations = 0
        self.assigned: set[int] = set()

    def feed(self, event: Mapping[str, Any]) -> None:
        name = event["name"]
        if name == "record_data":
            if event.get("topic") != self.topic:
                return
            partition, offset = int(event["partition"]), int(event["offset"])
            value = _bytes(event.get("value"))
            mine = self.reads[partition]
            if offset in mine and mine[offset] != value:
                self.conflicts.append((partition, offset, mine[offset], value))
            mine[offset] = value
            self.delivered += 1
        elif name == "records_consumed":
            self.polled += int(event.get("count", 0))
        elif name == "offsets_committed":
            self.commits += 1
            if not event.get("success", True):
                self.commit_failures += 1
                return
            for entry in event.get("offsets") or ():
                if entry.get("topic") == self.topic:
                    partition = int(entry["partition"])
                    self.committed[partition] = max(self.committed.get(partition, 0),
                                                    int(entry["offset"]))
        elif name == "partitions_assigned":
            self.assignments += 1
            self.assigned = {int(p["partition"]) for p in event.get("partitions") or ()
                             if p.get("topic") == self.topic}
        elif name == "partitions_revoked":
            self.revocations += 1
            self.assigned -= {int(p["partition"]) for p in event.get("partitions") or ()
                              if p.get("topic") == self.topic}

    def count(self) -> int:
        return sum(len(records) for records in list(self.reads.values()))

    @property
    def redelivered(self) -> int:
        """Deliveries of an offset already delivered (at-least-once after a rebalance)."""
        return self.delivered - self.count()


def unconsumed(acknowledged: Iterable[tuple[bytes, int, int]],
               reads: Mapping[int, Mapping[int, bytes]]) -> list[tuple[bytes, int, int]]:
    """Acknowledged (value, partition, offset) the consumer never got at that offset (Kafka's
    system tests' check: everything acked was consumed)."""
    return [(value, partition, offset) for value, partition, offset in acknowledged
            if reads.get(partition, {}).get(offset) != value]


# ---------------------------------------------------------------------------- the processes

class _Tool:
    """A verifiable tool as a child process whose stdout lines feed ``self.events``; started
    again (``restarts``) when it exits by itself, if ``restart_on_exit``."""

    main_class = ""
    restart_on_exit = True

    def __init__(self, name: str, args: list[str], events: Any, workdir: str):
        self.name, self.args, self.events = name, args, events
        self.stderr_path = os.path.join(workdir, f"{name}.stderr.log")
        self.lock = threading.Lock()
        self.process: subprocess.Popen | None = None
        self.restarts = 0
        self.crashed: BaseException | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> "_Tool":
        self._thread.start()
        return self

    def _spawn(self) -> subprocess.Popen:
        from kafkalite.testing.apache_kafka import java_command

        with open(self.stderr_path, "ab") as stderr:
            return subprocess.Popen(java_command(self.main_class, *self.args),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=stderr, bufsize=1 << 16)

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                self.process = self._spawn()
                for line in self.process.stdout:
                    event = parse_event(line)
                    if event is not None:
                        with self.lock:
                            self.events.feed(event)
                code = self.process.wait()
                if self._stopping.is_set():
                    return
                if not self.restart_on_exit:
                    raise RuntimeError(f"{self.name} exited by itself (code {code}); its "
                                       f"stderr: {self.stderr_path}")
                self.restarts += 1
                log.info("%s exited by itself (code %s); starting it again", self.name, code)
                self._stopping.wait(1.0)
        except BaseException as exc:
            self.crashed = exc
            raise

    def stop(self, timeout_s: float = 120) -> None:
        """SIGTERM: the tools' shutdown hooks close the client (the producer flushes first)."""
        self._stopping.set()
        process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._thread.join(30)
        if self.process is not None and self.process.poll() is None:    # spawned meanwhile
            self.process.kill()
            self.process.wait()

    def check(self) -> None:
        if self.crashed is not None:
            raise RuntimeError(f"the {self.name} died: {self.crashed}") from self.crashed


class VerifiableProducer(_Tool):
    """Kafka's VerifiableProducer at acks=all (-1) and ``throughput`` records/s; the tool's own
    settings otherwise (retries=0: a send that meets a fault fails and is counted)."""

    main_class = PRODUCER_CLASS
    restart_on_exit = False     # a new one would number its values from 0 again

    def __init__(self, bootstrap: str, topic: str, workdir: str, throughput: int = 500):
        super().__init__("verifiable-producer",
                         ["--topic", topic, "--bootstrap-server", bootstrap, "--acks", "-1",
                          "--throughput", str(throughput)], ProducerLog(topic), workdir)

    @property
    def acknowledged_values(self) -> list[tuple[bytes, int, int]]:
        with self.lock:
            return list(self.events.acknowledged)

    @property
    def sent(self) -> int:
        return len(self.events.acknowledged) + self.events.failed

    def acked_count(self) -> int:
        self.check()
        with self.lock:
            return len(self.events.acknowledged)

    def acked_since(self, count: int) -> int:
        return self.acked_count() - count

    def failure_kinds(self) -> Counter:
        with self.lock:
            return Counter(self.events.errors)

    def progress(self) -> str:
        return f"send errors {self.events.failed}"


class VerifiableConsumer(_Tool):
    """Kafka's VerifiableConsumer in group ``GROUP`` from the earliest offset, ``--verbose``
    (every record's value) and a synchronous commit after each poll."""

    main_class = CONSUMER_CLASS

    def __init__(self, bootstrap: str, topic: str, partitions: int, workdir: str):
        super().__init__("verifiable-consumer",
                         ["--topic", topic, "--bootstrap-server", bootstrap, "--group-id", GROUP,
                          "--reset-policy", "earliest", "--verbose"], ConsumerLog(topic), workdir)
        self.partitions = partitions

    @property
    def reads(self) -> dict[int, dict[int, bytes]]:
        with self.lock:
            return {p: dict(records) for p, records in self.events.reads.items()}

    def count(self) -> int:
        with self.lock:
            return self.events.count()

    def next_offsets(self) -> dict[int, int]:
        with self.lock:
            reads = self.events.reads
            return {p: (max(reads[p]) + 1 if reads.get(p) else 0)
                    for p in range(self.partitions)}

    def progress(self) -> str:
        e = self.events
        return (f"redelivered {e.redelivered}, rebalances {e.assignments}, failed commits "
                f"{e.commit_failures}, restarts {self.restarts}")
