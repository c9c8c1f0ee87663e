"""Kafka's rules for topic names, raised as kafkalite errors (the rules live in zk_schema)."""

from __future__ import annotations

from zk_schema.topics import topic_name_problem

from kafkalite.errors import InvalidTopicError


def validate_topic_name(name: object) -> str:
    problem = topic_name_problem(name)  # type: ignore[arg-type]
    if problem:
        raise InvalidTopicError(problem)
    return name  # type: ignore[return-value]
