"""The sampled rate a client quota is measured with, and the throttle time of a violation, as
Kafka 2.8 computes them (``clients/.../metrics/stats/SampledStat.java``, ``Rate.java``,
``core/.../utils/QuotaUtils.scala``), so that a client is held to the same rate and told to wait
the same time as by Apache Kafka.

A ``SampledRate`` keeps ``samples`` windows of ``window_ms`` (Kafka's ``quota.window.num``, 11, and
``quota.window.size.seconds``, 1 s). A record goes into the current window, or starts the next
one (reusing the oldest slot) once the current one is ``window_ms`` old; windows older than
``samples * window_ms`` count for nothing. The rate is the sum of the windows over the elapsed
time since the oldest window began, that time being at least ``samples - 1`` whole windows (so a
new client is not judged on its first milliseconds). Time is the caller's (milliseconds): no
clock is read here.
"""

from __future__ import annotations

import math

__all__ = ["SampledRate", "throttle_time_ms"]


class _Sample:
    __slots__ = ("last_window_ms", "value", "event_count")

    def __init__(self, now_ms: int):
        self.reset(now_ms)

    def reset(self, now_ms: int) -> None:
        self.last_window_ms = now_ms
        self.value = 0.0
        self.event_count = 0


class SampledRate:
    """Kafka's ``Rate`` over a ``WindowedSum``, in units per second."""

    def __init__(self, samples: int = 11, window_ms: int = 1000):
        if samples < 1 or window_ms < 1:
            raise ValueError("a sampled rate needs at least 1 window of at least 1 ms")
        self.samples = samples
        self.window_ms = window_ms
        self._windows: list[_Sample] = []
        self._current = 0

    # --- SampledStat ---------------------------------------------------------------------------
    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.last_window_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.event_count += 1

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._windows:
            self._windows.append(_Sample(now_ms))
        return self._windows[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % self.samples
        if self._current >= len(self._windows):
            sample = _Sample(now_ms)
            self._windows.append(sample)
            return sample
        sample = self._windows[self._current]
        sample.reset(now_ms)
        return sample

    def _purge_obsolete(self, now_ms: int) -> None:
        expire_age = self.samples * self.window_ms
        for sample in self._windows:
            if now_ms - sample.last_window_ms >= expire_age:
                sample.reset(now_ms)

    def _oldest(self, now_ms: int) -> _Sample:
        if not self._windows:
            self._windows.append(_Sample(now_ms))
        return min(self._windows, key=lambda s: s.last_window_ms)

    # --- Rate ------------------------------------------------------------------------------------
    def window_size_ms(self, now_ms: int) -> int:
        """The time the rate divides by (Rate.windowSize): since the oldest window began, at
        least ``samples - 1`` whole windows."""
        self._purge_obsolete(now_ms)
        elapsed = now_ms - self._oldest(now_ms).last_window_ms
        full_windows = elapsed // self.window_ms
        if full_windows < self.samples - 1:
            elapsed += (self.samples - 1 - full_windows) * self.window_ms
        return elapsed

    def measure(self, now_ms: int) -> float:
        """Units per second (Rate.measure with TimeUnit.SECONDS)."""
        self._purge_obsolete(now_ms)
        total = sum(sample.value for sample in self._windows)
        return total / (self.window_size_ms(now_ms) / 1000.0)


def throttle_time_ms(rate: SampledRate, value: float, bound: float, now_ms: int) -> int:
    """QuotaUtils.throttleTime: how long the client must stay silent for ``value`` (the rate
    measured, above ``bound``) to fall back to the bound over the rate's current window;
    Java's Math.round (half up)."""
    window = rate.window_size_ms(now_ms)
    exact = (value - bound) / bound * window
    return int(_java_round(exact))


def _java_round(x: float) -> int:
    return math.floor(x + 0.5)
