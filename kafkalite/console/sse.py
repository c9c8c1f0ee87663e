"""``GET /api/events``: the :class:`~kafkalite.console.hub.EventHub` as Server-Sent Events.

Each event is one ``id:``/``data:`` block whose data is the event's JSON (the page and
``curl -N`` read the same stream). A reconnecting EventSource sends ``Last-Event-ID`` and gets
what it missed (while it is still in the backlog); a new one gets the recent backlog first
(``?backlog=N``, 50 by default, 0 for none). A comment line every ``keepalive_s`` keeps proxies
and idle connections from closing the stream.
"""

from __future__ import annotations

import json
from typing import Any

from twisted.internet import task
from twisted.web import resource, server

from kafkalite.console.hub import EventHub

RETRY_MS = 2000


def format_event(event: dict) -> bytes:
    """One SSE block (``id``, then one ``data`` line: the JSON has no newlines)."""
    return f"id: {event['id']}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n".encode()


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class EventStreamResource(resource.Resource):
    isLeaf = True

    def __init__(self, hub: EventHub, clock: Any, keepalive_s: float = 15.0):
        super().__init__()
        self._hub = hub
        self._clock = clock
        self._keepalive_s = keepalive_s

    def render_GET(self, request):
        request.setHeader(b"content-type", b"text/event-stream; charset=utf-8")
        request.setHeader(b"cache-control", b"no-cache")
        request.setHeader(b"x-accel-buffering", b"no")
        last_id = _int_or_none(request.getHeader(b"last-event-id"))
        backlog = _int_or_none((request.args.get(b"backlog") or [b"50"])[0])
        request.write(f"retry: {RETRY_MS}\n: kafkalite console events\n\n".encode())
        for event in self._hub.since(last_id, default_count=max(backlog or 0, 0)):
            request.write(format_event(event))

        def send(event: dict) -> None:
            request.write(format_event(event))

        keepalive = task.LoopingCall(request.write, b": keepalive\n\n")
        keepalive.clock = self._clock
        keepalive.start(self._keepalive_s, now=False)
        self._hub.subscribe(send)

        def finished(_ignored: Any) -> None:
            self._hub.unsubscribe(send)
            if keepalive.running:
                keepalive.stop()

        request.notifyFinish().addBoth(finished)
        return server.NOT_DONE_YET
