"""What one broker says in its Metadata answer, condensed, and the report of bench/scale_sim.py.

The bench asks every broker for Metadata (v1, every topic) with a raw Kafka-protocol request built
and read by kio (``kafkalite.protocol.kafka.codec``, the same frames as any Kafka client), so each
broker's own view is judged, not the view of whichever broker a client library picks. One answer
lists 10,000 partitions, so it is condensed at once into a :class:`View` (counts only): what the
phases wait for is a count (partitions listed, partitions led by a live broker, full ISRs).

Pure but for :func:`fetch_view` (one socket): ``View.of`` and the report are unit tested.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

TOPIC_PREFIX = "scale-"
METADATA, METADATA_VERSION = 3, 1      # v1: controller_id, replicas and ISR per partition
_correlation = itertools.count(1)


@dataclass(frozen=True)
class View:
    """One broker's Metadata answer: the brokers it lists, the controller it names, and, over
    the bench's topics (``scale-*``) only, how many partitions it lists, how many each broker
    leads (-1: no leader) and how many have every replica in the ISR."""

    brokers: frozenset[int]
    controller: int
    partitions: int
    leaders: Counter = field(default_factory=Counter)
    full_isr: int = 0

    @classmethod
    def of(cls, response: Any) -> "View":
        """From a kio MetadataResponse (any entity with its field names)."""
        leaders: Counter = Counter()
        partitions = full = 0
        for topic in response.topics:
            if not str(topic.name).startswith(TOPIC_PREFIX):
                continue
            for part in topic.partitions:
                partitions += 1
                leaders[int(part.leader_id)] += 1
                if len(part.isr_nodes) >= len(part.replica_nodes) > 0:
                    full += 1
        return cls(frozenset(int(b.node_id) for b in response.brokers),
                   int(response.controller_id), partitions, leaders, full)

    def led_by(self, brokers: Iterable[int]) -> int:
        """Partitions whose leader is one of ``brokers``."""
        return sum(self.leaders.get(b, 0) for b in set(brokers))

    def all_led(self, expected: int, live: Iterable[int]) -> bool:
        """Every one of ``expected`` partitions listed, each led by a broker of ``live``."""
        return self.partitions == expected and self.led_by(live) == expected

    def settled(self, expected: int, live: Iterable[int]) -> bool:
        """``all_led`` and every partition's ISR is all its replicas."""
        return self.all_led(expected, live) and self.full_isr == expected


def fetch_view(address: str, timeout_s: float = 30.0) -> View:
    """Ask the broker at ``address`` (host:port) for Metadata v1 of every topic."""
    from kafkalite.protocol.kafka import codec
    from kafkalite.testing.conformance.raw import send_frame

    correlation_id = next(_correlation)
    payload = codec.encode_request(METADATA, METADATA_VERSION, correlation_id, "scale-sim",
                                   {"topics": None})
    answer = send_frame(address, payload, timeout_s)
    if answer is None:
        raise ConnectionError(f"{address} closed the connection without answering Metadata")
    got, entity = codec.decode_response(METADATA, METADATA_VERSION, answer)
    if got != correlation_id:
        raise ConnectionError(f"{address} answered correlation id {got}, sent {correlation_id}")
    return View.of(entity)


# ------------------------------------------------------------------------------------ report

@dataclass
class Figure:
    """One measured figure of one system: a value in ``unit`` (seconds unless said; None: not
    reached), the 1-minute load average when it was taken, and a note (why it is missing)."""

    system: str
    key: str
    label: str
    seconds: float | None
    load1: float
    note: str = ""
    unit: str = "s"

    def json_line(self, shape: dict[str, Any]) -> str:
        return json.dumps({"system": self.system, "key": self.key, "label": self.label,
                           "value": self.seconds, "unit": self.unit, "load1": round(self.load1, 2),
                           "note": self.note, **shape})


def read_figures(path: str) -> list[Figure]:
    """The figures of a ``--json`` file (several runs may have appended to it)."""
    figures = []
    with open(path) as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                figures.append(Figure(row["system"], row["key"], row["label"], row["value"],
                                      row["load1"], row.get("note", ""), row.get("unit", "s")))
    return figures


def _cell(figure: Figure | None) -> str:
    if figure is None:
        return "not run"
    if figure.seconds is None:
        return "not reached"
    return f"{figure.seconds:.1f} {figure.unit} (load {figure.load1:.1f})"


def table(figures: list[Figure], systems: tuple[str, str] = ("kafkalite", "kafka")) -> str:
    """A Markdown table: one row per figure key in first-seen order, both systems and the
    ratio first/second (below 1: the first system is faster)."""
    first, second = systems
    by = {(f.system, f.key): f for f in figures}
    keys = list(dict.fromkeys(f.key for f in figures))
    labels = {f.key: f.label for f in figures}
    lines = [f"| measure | {first} | {second} | {first} / {second} |", "|---|---|---|---|"]
    for key in keys:
        a, b = by.get((first, key)), by.get((second, key))
        ratio = "-"
        if a and b and a.seconds is not None and b.seconds:
            ratio = f"×{a.seconds / b.seconds:.2f}"
        lines.append(f"| {labels[key]} | {_cell(a)} | {_cell(b)} | {ratio} |")
    notes = [f"- {f.system}, {f.label}: {f.note}" for f in figures if f.note]
    return "\n".join(lines + ([""] + notes if notes else []))
