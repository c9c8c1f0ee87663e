"""Put each scenario to both systems and judge the pair of answers.

Both systems get the same scenario with the same name prefix, each in its own thread (the
clusters are independent, and most of a scenario's time is waiting on a broker), then the
answers are normalised and compared. A row's verdict:

- ``same``: the normalised answers are equal, and the scenario is not allowlisted;
- ``different``: they differ and the allowlist does not excuse it (a failure);
- ``allowlisted``: they differ and the allowlist says why (what kafkalite does not serve, or
  Kafka's bug);
- ``stale``: allowlisted, yet the answers are now the same (a failure: the entry must go, so
  that the allowlist stays true), except for the allowlist's INTERMITTENT entries (timing);
- ``error``: the scenario itself could not run on a system (a failure, saying why).
"""

from __future__ import annotations

import concurrent.futures
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from kafkalite.testing.conformance.allowlist import ALLOWLIST, INTERMITTENT
from kafkalite.testing.conformance.normalise import differences, normalise
from kafkalite.testing.conformance.scenario import Context, Scenario, unique_prefix

SYSTEMS = ("kafka", "kafkalite")
FAILING = ("different", "stale", "error")
#: families whose scenarios wait on cleaners for tens of seconds
SLOW_FAMILIES = ("retention",)


@dataclass
class Row:
    scenario: str
    family: str
    apis: tuple[str, ...]
    kafka: Any
    kafkalite: Any
    verdict: str
    reason: str = ""
    diff: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.verdict in FAILING

    def explain(self) -> str:
        """Both answers and where they differ, for a failing test's message."""
        import json

        lines = [f"{self.scenario} ({', '.join(self.apis)}): {self.verdict}"]
        if self.reason:
            lines.append(f"reason: {self.reason}")
        lines += [f"  {d}" for d in self.diff]
        lines.append("kafka:     " + json.dumps(self.kafka, sort_keys=True, default=str))
        lines.append("kafkalite: " + json.dumps(self.kafkalite, sort_keys=True, default=str))
        return "\n".join(lines)


class _Failed:
    """A scenario that raised: kept apart from answers so that two crashes never compare
    equal."""

    def __init__(self, text: str):
        self.text = text


def _run_one(scenario: Scenario, system: str, bootstrap: str, prefix: str,
             timeout_s: float) -> Any:
    ctx = Context(bootstrap, prefix, system, timeout_s)
    try:
        return normalise(scenario.run(ctx), prefix)
    except Exception as exc:  # noqa: BLE001 - a scenario's failure is reported, with why
        last = traceback.extract_tb(exc.__traceback__)[-1]
        return _Failed(f"{type(exc).__name__}: {exc} (at {last.filename.rsplit('/', 1)[-1]}:"
                       f"{last.lineno})")
    finally:
        for undo in reversed(ctx.cleanup):
            try:
                undo()
            except Exception:  # noqa: BLE001 - cleanup is best effort
                pass


def judge(scenario: Scenario, kafka: Any, kafkalite: Any) -> Row:
    """The row for a pair of (normalised) answers."""
    reason = ALLOWLIST.get(scenario.name, "")
    row = Row(scenario.name, scenario.family, scenario.apis, kafka, kafkalite, "same", reason)
    if isinstance(kafka, _Failed) or isinstance(kafkalite, _Failed):
        row.kafka = {"scenario failed": kafka.text} if isinstance(kafka, _Failed) else kafka
        row.kafkalite = ({"scenario failed": kafkalite.text} if isinstance(kafkalite, _Failed)
                         else kafkalite)
        row.verdict = "error"
        row.diff = ["the scenario could not run on "
                    + " and ".join(n for n, a in (("kafka", kafka), ("kafkalite", kafkalite))
                                   if isinstance(a, _Failed))]
        return row
    if kafka == kafkalite:
        if reason and scenario.name in INTERMITTENT:
            row.verdict = "allowlisted"
            row.diff = ["the same in this run (a difference of timing, see INTERMITTENT)"]
        elif reason:
            row.verdict = "stale"
            row.diff = ["the answers are the same now: remove the allowlist entry"]
        return row
    row.diff = differences(kafka, kafkalite)
    row.verdict = "allowlisted" if reason else "different"
    return row


def _servers_for(scenario: Scenario, servers: dict) -> dict[str, str]:
    """``servers`` is {system: bootstrap} (the shared pair only) or {cluster kind: {system:
    bootstrap}}; the pair ``scenario`` needs, or ValueError saying it was not started."""
    kinds = {"shared": servers} if "kafka" in servers else servers
    if scenario.cluster not in kinds:
        raise ValueError(f"scenario {scenario.name} needs the {scenario.cluster!r} clusters, "
                         f"which were not started (have: {sorted(kinds)})")
    return kinds[scenario.cluster]


def run_scenario(scenario: Scenario, servers: dict, timeout_s: float = 20.0) -> Row:
    """Run ``scenario`` against both systems (``servers``: system name -> bootstrap servers,
    or cluster kind -> that)."""
    prefix = unique_prefix(scenario.name)
    started = time.monotonic()
    try:
        pair = _servers_for(scenario, servers)
    except ValueError as exc:
        row = judge(scenario, _Failed(str(exc)), _Failed(str(exc)))
        row.seconds = time.monotonic() - started
        return row
    with concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="conformance") as pool:
        futures = {name: pool.submit(_run_one, scenario, name, pair[name], prefix, timeout_s)
                   for name in SYSTEMS}
        answers = {name: future.result() for name, future in futures.items()}
    row = judge(scenario, answers["kafka"], answers["kafkalite"])
    row.seconds = time.monotonic() - started
    return row


def run_all(scenarios: list[Scenario], servers: dict, timeout_s: float = 20.0,
            progress: Any = None, workers: int = 4) -> list[Row]:
    """Every scenario's row, in the catalogue's order. ``workers`` scenarios run at a time
    (each on both systems at once): their topics and groups are their own, and most of their
    time is spent waiting on brokers or cleaners. The slow families start first."""
    order = sorted(range(len(scenarios)),
                   key=lambda i: (scenarios[i].family not in SLOW_FAMILIES, i))
    rows: list[Row | None] = [None] * len(scenarios)
    with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="scenario") as pool:
        futures = {pool.submit(run_scenario, scenarios[i], servers, timeout_s): i for i in order}
        for future in concurrent.futures.as_completed(futures):
            row = future.result()
            rows[futures[future]] = row
            if progress is not None:
                progress(row)
    return [row for row in rows if row is not None]
