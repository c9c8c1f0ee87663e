"""Kafka's rules for topic names (Kafka's ``Topic``), raised as kafkalite errors with Kafka's
wording: tools such as kafka-topics print the broker's message to the user as it is."""

from __future__ import annotations

from kafkalite.errors import InvalidTopicError

MAX_NAME_LENGTH = 249
_LEGAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def topic_name_problem(name: object) -> str | None:
    """Why ``name`` is not a legal topic name, in Kafka's words (Topic.validate), or None."""
    if not isinstance(name, str) or not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_NAME_LENGTH:
        return (f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, "
                f"topic name: {name}")
    if not set(name) <= _LEGAL:
        return (f'Topic name "{name}" is illegal, it contains a character other than ASCII '
                "alphanumerics, '.', '_' and '-'")
    return None


def validate_topic_name(name: object) -> str:
    problem = topic_name_problem(name)
    if problem:
        raise InvalidTopicError(problem)
    return name  # type: ignore[return-value]


def has_collision_chars(name: str) -> bool:
    """'.' and '_' map to the same character in metric names, so names with either may
    collide (Topic.hasCollisionChars)."""
    return "." in name or "_" in name


def collides(a: str, b: str) -> bool:
    """Whether two names are the same once '.' and '_' are taken as one (Topic.hasCollision)."""
    return a.replace(".", "_") == b.replace(".", "_")
