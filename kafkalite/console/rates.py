"""Producers' recent rates, from how fast each partition's high watermark grows.

Kafka keeps no list of producers, so the console shows what producing does: records per second
added to each partition over the last ``window_s`` seconds of samples. Pure (times are passed in).
"""

from __future__ import annotations

from collections import deque
from typing import Mapping

from kafkalite.topic_partition import TopicPartition


class RateTracker:
    def __init__(self, window_s: float = 10.0):
        self.window_s = window_s
        self._samples: dict[TopicPartition, deque[tuple[float, int]]] = {}

    def add(self, now: float, offsets: Mapping[TopicPartition, int]) -> None:
        """One sample: ``{tp: high watermark}`` at time ``now`` (seconds)."""
        for tp, offset in offsets.items():
            samples = self._samples.setdefault(tp, deque())
            if samples and offset < samples[-1][1]:
                samples.clear()     # a recreated topic or truncated log: start over
            samples.append((now, offset))
            while len(samples) > 2 and now - samples[1][0] >= self.window_s:
                samples.popleft()
        for tp in set(self._samples) - set(offsets):
            del self._samples[tp]

    def rate(self, tp: TopicPartition) -> float:
        """Records per second over the window (0.0 until there are two samples)."""
        samples = self._samples.get(tp)
        if not samples or len(samples) < 2:
            return 0.0
        (t0, o0), (t1, o1) = samples[0], samples[-1]
        return (o1 - o0) / (t1 - t0) if t1 > t0 else 0.0

    def topic_rates(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for tp in self._samples:
            out[tp[0]] = out.get(tp[0], 0.0) + self.rate(tp)
        return dict(sorted(out.items()))
