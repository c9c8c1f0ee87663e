"""What a conformance scenario is, and what it is given.

A scenario is one question put to a Kafka cluster through a client, whose answer is plain JSON-able
data: what the client saw (error names, offsets, config entries, group states...). The runner puts
the same question to Apache Kafka 2.8.2 and to kafkalite and compares the two answers after
normalisation. So a scenario never asserts anything itself: it reports, and the comparison judges.

A scenario must not depend on which system it talks to. ``Context.system`` exists only for
normalisation helpers; a scenario that branched on it would make the comparison meaningless.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

#: the families the catalogue groups scenarios by (one module each)
FAMILIES = ("topics", "produce-fetch", "groups", "configs", "admin", "security", "retention")


@dataclass
class Context:
    """What a scenario run gets: where the cluster is and the names it may use.

    ``prefix`` is unique per run of a scenario (the same for both systems, so names match in the
    answers); every topic, group and transactional id the scenario creates starts with it, since
    the clusters are shared with the rest of the test session.
    """

    bootstrap_servers: str
    prefix: str
    system: str
    timeout_s: float = 20.0
    cleanup: list[Callable[[], Any]] = field(default_factory=list)

    def name(self, suffix: str = "t") -> str:
        """A topic/group name of this run: ``<prefix>-<suffix>``."""
        return f"{self.prefix}-{suffix}"

    @property
    def addresses(self) -> list[str]:
        return self.bootstrap_servers.split(",")


@dataclass(frozen=True)
class Scenario:
    """One question for both systems.

    ``apis`` names the Kafka APIs (by their protocol names, e.g. ``"OffsetForLeaderEpoch"``) the
    question exercises, so that coverage of the served API table can be checked. ``cluster``
    names the pair of clusters it needs: ``"shared"`` (3 brokers of each system, shared with the
    session) or ``"authorizer"`` (1 broker of each with an ACL authorizer, see ``clusters``).
    """

    name: str
    family: str
    apis: tuple[str, ...]
    run: Callable[[Context], Any]
    doc: str = ""
    cluster: str = "shared"


_SAFE = re.compile(r"[^a-z0-9]+")


def unique_prefix(scenario_name: str) -> str:
    """``cf-<scenario>-<8 hex>``: a legal topic/group name start (at most ~60 characters)."""
    clean = _SAFE.sub("-", scenario_name.lower()).strip("-")[:40]
    return f"cf-{clean}-{uuid.uuid4().hex[:8]}"


class Family:
    """The scenarios of one catalogue module, registered with the ``scenario`` decorator."""

    def __init__(self, family: str):
        if family not in FAMILIES:
            raise ValueError(f"unknown family {family!r}; one of {FAMILIES}")
        self.family = family
        self.scenarios: list[Scenario] = []

    def scenario(self, name: str, *apis: str, cluster: str = "shared"
                 ) -> Callable[[Callable[[Context], Any]], Callable[[Context], Any]]:
        """Register ``fn`` as scenario ``name`` covering ``apis``; its docstring says what it
        asks and why."""

        def register(fn: Callable[[Context], Any]) -> Callable[[Context], Any]:
            if not apis:
                raise ValueError(f"scenario {name} names no API")
            doc = " ".join((fn.__doc__ or "").split())
            self.scenarios.append(Scenario(name, self.family, tuple(apis), fn, doc, cluster))
            return fn

        return register
