"""The console's event stream: numbered events, a backlog for late joiners, live subscribers.

Every change the console sees becomes one event ``{"id", "time", "kind", "sentence", ...}``;
``/api/events`` sends them as Server-Sent Events and the page's timeline shows the sentences.
Runs on the reactor thread; the clock is injected (``seconds()``), so tests use ``task.Clock``.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any, Callable

log = logging.getLogger(__name__)

Listener = Callable[[dict], Any]


class EventHub:
    def __init__(self, clock: Any, backlog: int = 500):
        self._clock = clock
        self._backlog: deque[dict] = deque(maxlen=backlog)
        self._listeners: list[Listener] = []
        self._next_id = 1

    def publish(self, kind: str, sentence: str, **data: Any) -> dict:
        event = {"id": self._next_id, "time": round(self._clock.seconds(), 3), "kind": kind,
                 "sentence": sentence, **data}
        self._next_id += 1
        self._backlog.append(event)
        log.info("%s", sentence)
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # noqa: BLE001 - one broken subscriber must not stop the others
                log.exception("event listener failed; dropping it")
                self.unsubscribe(listener)
        return event

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    @property
    def subscribers(self) -> int:
        return len(self._listeners)

    def since(self, last_id: int | None, default_count: int = 50) -> list[dict]:
        """Events after ``last_id`` still in the backlog; without one, the last
        ``default_count`` events (what a newly opened page shows in its timeline)."""
        if last_id is None:
            return list(self._backlog)[-default_count:] if default_count else []
        return [e for e in self._backlog if e["id"] > last_id]

    def recent(self, count: int = 50) -> list[dict]:
        return list(self._backlog)[-count:]
