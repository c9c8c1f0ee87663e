"""Is an API table whole? ``check_table`` lists what is wrong with its rows, so a row that
advertises what nothing serves, or serves what nothing advertises, fails a unit test rather
than a client.

A row is whole when:

* it is filed under its own key;
* every version range it has is served: a Kafka-protocol range (``kafka_max``) is one kio knows
  and is served by a handler with a Kafka converter; a native range (``native``) has its model
  class in ``protocol.messages.REQUESTS`` and a handler;
* everything it serves has a range: no handler or converter that no range reaches (a handler on
  a row that serves neither protocol, a converter without ``kafka_max``);
* its listener rule is one the table knows (``CLIENT`` or ``CONTROL``).
"""

from __future__ import annotations

from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.server.api_table import CLIENT, CONTROL, ApiSpec

__all__ = ["check_table", "check_row"]


def check_table(table: dict[int, ApiSpec]) -> list[str]:
    """Every problem of ``table``'s rows, one sentence each; empty when the table is whole."""
    problems: list[str] = []
    for key, spec in sorted(table.items(), key=lambda item: int(item[0])):
        if spec.key != key:
            problems.append(f"the row filed under api key {key} is for api key {spec.key}")
        problems.extend(check_row(spec))
    return problems


def check_row(spec: ApiSpec) -> list[str]:
    """The problems of one row."""
    name = ApiKey.name_of(spec.key)
    problems: list[str] = []
    problems.extend(_kafka_problems(name, spec))
    problems.extend(_native_problems(name, spec))
    if spec.handler is not None and spec.kafka_max is None and not spec.native:
        problems.append(f"{name} has a handler but no version range: it serves neither "
                        f"protocol")
    if spec.listeners not in (CLIENT, CONTROL):
        problems.append(f"{name} has the unknown listener rule {spec.listeners!r}")
    return problems


def _kafka_problems(name: str, spec: ApiSpec) -> list[str]:
    if spec.kafka_max is None:
        if spec.kafka is not None:
            return [f"{name} has a Kafka converter but no Kafka version range"]
        return []
    problems = []
    if spec.kafka_versions is None:
        problems.append(f"{name}'s Kafka versions up to {spec.kafka_max} are none that kio "
                        f"knows")
    if spec.handler is None or spec.kafka is None:
        missing = ("no Kafka converter for its handler" if spec.handler is not None
                   else "no handler")
        problems.append(f"{name} has Kafka versions up to {spec.kafka_max} but {missing}")
    if spec.kafka is not None and not (callable(getattr(spec.kafka, "request", None))
                                       and callable(getattr(spec.kafka, "response", None))):
        problems.append(f"{name}'s Kafka converter has no request/response functions")
    return problems


def _native_problems(name: str, spec: ApiSpec) -> list[str]:
    if not spec.native:
        return []
    problems = []
    if spec.key not in m.REQUESTS:
        problems.append(f"{name} is served natively but has no model class in "
                        f"protocol.messages.REQUESTS")
    if spec.handler is None:
        problems.append(f"{name} has native versions but no handler")
    return problems
