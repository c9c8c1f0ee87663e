"""What the payments pipeline must write, computed from its input without Spark and without the
pipeline's own code (the oracle of the Docker test; no test functions here).

The compose ``pipeline`` service runs ``kafkalite pipeline run --generate 1000`` with the defaults:
tumbling 1-minute windows of event time (aligned to the epoch, UTC), per payer, a 2-minute
watermark, payments deduplicated by id, one availableNow run. Everything generated is read in one
micro-batch (the caller checks that from the pipeline's progress lines), so no payment is late:
after it the watermark is the latest event time minus 2 minutes, and exactly the windows that end
at or before the watermark are written, each once, as JSON records
``{"payer", "window_start": "YYYY-MM-DDTHH:MM:SSZ", "window_end", "total_cents", "payments"}``.
"""

from __future__ import annotations

import calendar
import json
import time
from collections.abc import Iterable

WINDOW_MS = 60_000
WATERMARK_DELAY_MS = 120_000

Totals = dict[tuple[int, str], tuple[int, int]]   # (window start ms, payer) -> (cents, count)


def expected_totals(payments: Iterable[dict]) -> Totals:
    """The closed windows' totals for payments (JSON objects as the generator writes them)."""
    unique: dict[str, dict] = {}
    for payment in payments:
        unique.setdefault(payment["id"], payment)       # a producer's retry counts once
    if not unique:
        return {}
    watermark = max(p["event_time_ms"] for p in unique.values()) - WATERMARK_DELAY_MS
    sums: dict[tuple[int, str], list[int]] = {}
    for p in unique.values():
        start = p["event_time_ms"] // WINDOW_MS * WINDOW_MS
        if start + WINDOW_MS <= watermark:
            entry = sums.setdefault((start, p["payer"]), [0, 0])
            entry[0] += p["amount_cents"]
            entry[1] += 1
    return {key: (cents, count) for key, (cents, count) in sums.items()}


def _utc_ms(text: str) -> int:
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")) * 1000


def written_totals(values: Iterable[bytes]) -> tuple[Totals, list[str]]:
    """The totals records of the output topic -> (totals, problems). The topic sink is
    at-least-once: a window may be written twice, but never with two different totals."""
    totals: Totals = {}
    problems = []
    for value in values:
        record = json.loads(value)
        start = _utc_ms(record["window_start"])
        if _utc_ms(record["window_end"]) != start + WINDOW_MS:
            problems.append(f"not a {WINDOW_MS} ms window: {record}")
        key = (start, record["payer"])
        total = (record["total_cents"], record["payments"])
        if totals.setdefault(key, total) != total:
            problems.append(f"window {key} written as {totals[key]} and as {total}")
    return totals, problems


def differences(expected: Totals, written: Totals) -> list[str]:
    """Human-readable differences, at most 10."""
    out = []
    for key in sorted(set(expected) | set(written)):
        if expected.get(key) != written.get(key):
            out.append(f"{time.strftime('%H:%M', time.gmtime(key[0] / 1000))} {key[1]}: "
                       f"expected {expected.get(key)}, written {written.get(key)}")
    return out[:10]
