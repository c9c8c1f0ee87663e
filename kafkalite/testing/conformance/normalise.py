"""What is allowed to differ between two correct clusters, replaced by a placeholder.

Two correct clusters answer the same question with different ports, hosts, cluster ids, topic
ids, member ids, throttle times and wall-clock timestamps. Those are rewritten here, by the key
they sit under and by the shape of strings (addresses and UUIDs inside error messages), so that
the comparison sees only what a client could rely on. Which broker leads a partition or
coordinates a group is chance in both systems (Kafka picks a random first replica): scenarios
leave such ids out of their answers rather than this module guessing at every ``node_id``.
"""

from __future__ import annotations

import re
from typing import Any

# key -> placeholder, for values that are chance or identity in any cluster
_BY_KEY = {
    "port": "<port>",
    "host": "<host>",
    "client_host": "<host>",
    "cluster_id": "<cluster-id>",
    "topic_id": "<topic-id>",
    "member_id": "<member-id>",
    "leader": "<member-id>",        # DescribeGroups' / JoinGroup's leader member id (a string)
    "group_instance_id": "<instance-id>",
    "controller_id": "<controller>",
    "throttle_time": "<throttle>",
    "throttle_time_ms": "<throttle>",
    "session_id": "<session>",
    "producer_id": "<producer-id>",
}
_WALLCLOCK_KEYS = re.compile(r"time|timestamp", re.I)
_WALLCLOCK = range(1_500_000_000_000, 3_000_000_000_000)   # 2017..2065 in epoch milliseconds
_ADDRESS = re.compile(r"\b(?:127\.0\.0\.1|localhost|\[?::1\]?)(?::\d+)?")
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                   r"[0-9a-fA-F]{12}\b")
_NIL_UUID = "00000000-0000-0000-0000-000000000000"
_BASE64_UUID = re.compile(r"^[A-Za-z0-9_-]{22}$")
# epoch milliseconds (2017..2065) inside a message, e.g. the window of an INVALID_TIMESTAMP
# record error, which each broker computes from its own clock
_WALLCLOCK_IN_TEXT = re.compile(r"\b(?:1[5-9]|2\d)\d{11}\b")


def normalise_text(text: str, prefix: str | None = None) -> str:
    if prefix:
        text = text.replace(prefix, "{p}")
    text = _ADDRESS.sub("<address>", text)
    text = _WALLCLOCK_IN_TEXT.sub("<wallclock>", text)
    return _UUID.sub(lambda m: m.group(0) if m.group(0) == _NIL_UUID else "<uuid>", text)


def normalise(value: Any, prefix: str | None = None, key: str | None = None) -> Any:
    """``value`` with every chance-or-identity part replaced by a placeholder; dict keys are
    normalised too (they may be topic names carrying the prefix)."""
    if isinstance(value, dict):
        return {normalise_text(str(k), prefix): normalise(v, prefix, str(k))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        # a key names the list, not its items: lists of ids are rare, and a scenario's own
        # {"leader": [answers]} must not have its answers taken for member ids
        return [normalise(item, prefix) for item in value]
    if key in _BY_KEY and value not in (None, "", -1):
        if key in ("leader", "member_id") and not isinstance(value, str):
            return value            # a leader broker id (scenarios leave those out) stays
        if key == "topic_id" and value == _NIL_UUID:
            return value
        return _BY_KEY[key]
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and key and _WALLCLOCK_KEYS.search(key) and value in _WALLCLOCK:
        return "<wallclock>"
    if isinstance(value, str):
        if key == "topic_id" and _BASE64_UUID.match(value):
            return "<topic-id>"
        return normalise_text(value, prefix)
    return value


def drop(value: Any, *keys: str) -> Any:
    """``value`` without ``keys`` at any depth (for ids that are chance in a scenario)."""
    if isinstance(value, dict):
        return {k: drop(v, *keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [drop(item, *keys) for item in value]
    return value


def differences(a: Any, b: Any, path: str = "$", limit: int = 8) -> list[str]:
    """Where ``a`` and ``b`` differ, as JSON paths with both values (at most ``limit``)."""
    out: list[str] = []

    def walk(x: Any, y: Any, where: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(set(x) | set(y), key=str):
                if k not in x:
                    out.append(f"{where}.{k}: missing in kafka")
                elif k not in y:
                    out.append(f"{where}.{k}: missing in kafkalite")
                else:
                    walk(x[k], y[k], f"{where}.{k}")
        elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
            for i, (xi, yi) in enumerate(zip(x, y)):
                walk(xi, yi, f"{where}[{i}]")
        elif x != y:
            out.append(f"{where}: kafka {_short(x)} / kafkalite {_short(y)}")

    walk(a, b, path)
    return out


def _short(value: Any, width: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."
