"""Offsets for the "kafkalite" data source (pure: no Spark, no network).

* :class:`OffsetSpec`: what ``startingOffsets`` / ``endingOffsets`` asked for (earliest, latest,
  or specific offsets per partition with -2 = earliest and -1 = latest), resolved against the
  partitions' real earliest/latest offsets by :meth:`OffsetSpec.resolve`.
* Streaming offsets are plain JSON-able dicts in Spark's Kafka format,
  ``{"topic": {"0": 23, "1": 7}}``: the offset of the NEXT record to read per partition. Spark
  stores them in the query's checkpoint, so a restarted query continues exactly where it stopped.
* :class:`OffsetRange` ``[from_offset, until_offset)`` of one partition is what a Spark task reads;
  :func:`plan_ranges` splits ranges to reach ``minPartitions``; :func:`limit_offsets` spreads a
  ``maxOffsetsPerTrigger`` budget over partitions.
* :func:`check_start` decides what to do when wanted offsets are gone (retention) or the log went
  backwards: :class:`DataLossError` with ``failOnDataLoss=true``, a warning and a skip otherwise.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafkalite.client.structs import TopicPartition

__all__ = [
    "EARLIEST", "LATEST", "TopicPartition", "OffsetSpec", "OffsetRange", "DataLossError",
    "offsets_to_json", "offsets_from_json", "plan_ranges", "limit_offsets", "check_start",
    "data_loss",
]

log = logging.getLogger("spark_integration")

EARLIEST = -2
LATEST = -1

_DATA_LOSS_HINT = ("Some data may have been lost because it is no longer available in kafkalite "
                   "(retention deleted it, or the topic was deleted or recreated). If you want "
                   "the query to go on in such cases, set the source option "
                   "\"failOnDataLoss\" to \"false\".")


class DataLossError(RuntimeError):
    """Offsets a query needed are no longer there (and ``failOnDataLoss`` is true)."""


def data_loss(message: str, fail_on_data_loss: bool) -> None:
    """Raise DataLossError with ``failOnDataLoss=true``; log a warning otherwise."""
    if fail_on_data_loss:
        raise DataLossError(f"{message}. {_DATA_LOSS_HINT}")
    log.warning("%s. Skipping the lost offsets because failOnDataLoss=false.", message)


# --- what the options asked for ----------------------------------------------------------------
@dataclass(frozen=True)
class OffsetSpec:
    kind: str                                               # "earliest" | "latest" | "specific"
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)

    @classmethod
    def earliest(cls) -> OffsetSpec:
        return cls("earliest")

    @classmethod
    def latest(cls) -> OffsetSpec:
        return cls("latest")

    @classmethod
    def specific(cls, offsets: Mapping[TopicPartition, int]) -> OffsetSpec:
        return cls("specific", dict(sorted(offsets.items())))

    def wanted(self, tp: TopicPartition, default: int) -> int:
        """-2, -1 or an offset for ``tp`` (``default`` when a JSON spec does not name it)."""
        if self.kind == "earliest":
            return EARLIEST
        if self.kind == "latest":
            return LATEST
        return self.offsets.get(tp, default)

    def resolve(self, partitions: Iterable[TopicPartition], earliest: Mapping, latest: Mapping,
                default: int) -> dict[TopicPartition, int]:
        """Concrete offsets for ``partitions`` given their earliest and latest offsets."""
        out: dict[TopicPartition, int] = {}
        for tp in partitions:
            wanted = self.wanted(tp, default)
            if wanted == EARLIEST:
                out[tp] = earliest[tp]
            elif wanted == LATEST:
                out[tp] = latest[tp]
            else:
                out[tp] = wanted
        return out


# --- the streaming offset format -----------------------------------------------------------------
def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """``{TopicPartition("t", 0): 5}`` -> ``{"t": {"0": 5}}`` (sorted, JSON-able)."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def offsets_from_json(data: Mapping | None) -> dict[TopicPartition, int]:
    """The inverse of :func:`offsets_to_json` (also accepts int partition keys)."""
    out: dict[TopicPartition, int] = {}
    if not data:
        return out
    if not isinstance(data, Mapping):
        raise ValueError(f"not a kafkalite offset: {data!r}")
    for topic, per_partition in data.items():
        if not isinstance(per_partition, Mapping):
            raise ValueError(f"not a kafkalite offset (topic {topic!r}): {data!r}")
        for partition, offset in per_partition.items():
            out[TopicPartition(str(topic), int(partition))] = int(offset)
    return dict(sorted(out.items()))


# --- ranges -------------------------------------------------------------------------------------
@dataclass(frozen=True, order=True)
class OffsetRange:
    """Offsets ``[from_offset, until_offset)`` of one partition."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def size(self) -> int:
        return max(0, self.until_offset - self.from_offset)

    def split(self, pieces: int) -> list[OffsetRange]:
        """``pieces`` contiguous sub-ranges of (nearly) equal size, covering this one exactly."""
        pieces = max(1, min(pieces, self.size))
        base, extra = divmod(self.size, pieces)
        out = []
        start = self.from_offset
        for i in range(pieces):
            end = start + base + (1 if i < extra else 0)
            out.append(OffsetRange(self.topic, self.partition, start, end))
            start = end
        return out

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}[{self.from_offset}, {self.until_offset})"


def _apportion(sizes: list[int], budget: int) -> list[int]:
    """Split ``budget`` over ``sizes`` proportionally (largest remainders, ties by position),
    never giving an entry more than its size."""
    total = sum(sizes)
    if total <= budget:
        return list(sizes)
    shares = [budget * s // total for s in sizes]
    remainders = sorted(range(len(sizes)), key=lambda i: (-(budget * sizes[i] % total), i))
    left = budget - sum(shares)
    for i in remainders:
        if left <= 0:
            break
        if shares[i] < sizes[i]:
            shares[i] += 1
            left -= 1
    return shares


def plan_ranges(ranges: Iterable[OffsetRange], min_partitions: int | None = None
                ) -> list[OffsetRange]:
    """Spark partitions for ``ranges``: one per non-empty range, split when ``min_partitions``
    asks for more (bigger ranges get proportionally more pieces; every range keeps one)."""
    ranges = sorted(r for r in ranges if r.size > 0)
    if not min_partitions or min_partitions <= len(ranges):
        return ranges
    sizes = [r.size for r in ranges]
    total = sum(sizes)
    # every range keeps one piece; the extra pieces go proportionally to size
    extra = _apportion([s - 1 for s in sizes], min(min_partitions, total) - len(ranges))
    out: list[OffsetRange] = []
    for r, more in zip(ranges, extra):
        out.extend(r.split(1 + more))
    return out


def limit_offsets(start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
                  max_records: int) -> dict[TopicPartition, int]:
    """End offsets reading at most ``max_records`` in total from ``start`` towards ``latest``,
    spread over the partitions in proportion to what each has available."""
    tps = sorted(latest)
    sizes = [max(0, latest[tp] - start.get(tp, latest[tp])) for tp in tps]
    shares = _apportion(sizes, max_records)
    return {tp: (start[tp] + share if tp in start else latest[tp])
            for tp, share in zip(tps, shares)}


def check_start(tp: TopicPartition, wanted: int, earliest: int, latest: int,
                fail_on_data_loss: bool, what: str = "offset") -> int | None:
    """Where to start reading ``tp`` given a wanted offset and the log's [earliest, latest].

    A wanted offset below ``earliest`` was deleted: data loss (fail, or skip ahead to
    ``earliest``). One above ``latest`` means the log went backwards (e.g. the topic was
    recreated): data loss (fail, or start over at ``earliest``). Returns the offset to start at.
    """
    if wanted < earliest:
        data_loss(f"Partition {tp}: the {what} {wanted} is gone, the log now starts at "
                  f"{earliest} ({earliest - wanted} records lost)", fail_on_data_loss)
        return earliest
    if wanted > latest:
        data_loss(f"Partition {tp}: the {what} {wanted} is after the log's end {latest} (the "
                  f"log was truncated, or the topic deleted and recreated)", fail_on_data_loss)
        return earliest
    return wanted
