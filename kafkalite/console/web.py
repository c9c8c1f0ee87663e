"""The console's twisted.web resources: the page, its static files and the JSON API.

    /                       the page (static/console.html)
    /static/<file>          its script and style (shipped as package data: no CDN, no internet)
    /api/cluster            brokers, controller, topics with leaders, ISR and offsets
    /api/groups             consumer groups of both kinds, with owners and lag
    /api/zk?path=/brokers   one znode: data, stat, children
    /api/events             Server-Sent Events: one sentence per change
"""

from __future__ import annotations

import json
import logging
from importlib import resources as importlib_resources
from typing import Any, Callable

from twisted.internet import defer
from twisted.web import pages, resource, server, static

from kafkalite.errors import KafkaError

log = logging.getLogger(__name__)


def static_dir() -> str:
    """The installed ``kafkalite/console/static`` directory (package data)."""
    return str(importlib_resources.files("kafkalite.console") / "static")


class HttpError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _write_json(request, status: int, body: Any) -> None:
    if request.finished or getattr(request, "_disconnected", False):
        return
    request.setResponseCode(status)
    request.setHeader(b"content-type", b"application/json; charset=utf-8")
    request.setHeader(b"cache-control", b"no-store")
    request.write(json.dumps(body, indent=None, separators=(",", ":")).encode())
    request.finish()


class JsonResource(resource.Resource):
    """GET answers ``view(request)`` as JSON; the view may return a Deferred. HttpError gives
    that status; a kafkalite error (ZooKeeper unreachable...) gives 503 naming it."""

    isLeaf = True

    def __init__(self, view: Callable[[Any], Any]):
        super().__init__()
        self._view = view

    def render_GET(self, request):
        d = defer.maybeDeferred(self._view, request)
        d.addCallback(lambda body: _write_json(request, 200, body))

        def failed(failure):
            if failure.check(HttpError):
                _write_json(request, failure.value.status, {"error": str(failure.value)})
            elif failure.check(KafkaError):
                _write_json(request, 503, {"error": str(failure.value)})
            else:
                log.error("console API %s failed: %s", request.path,
                          failure.getTraceback())
                _write_json(request, 500, {"error": failure.getErrorMessage()})
        d.addErrback(failed)
        return server.NOT_DONE_YET


class PageResource(resource.Resource):
    """``/`` serves the page; everything else below it is a 404."""

    def __init__(self, page_path: str):
        super().__init__()
        self._page = static.File(page_path, defaultType="text/html; charset=utf-8")

    def getChild(self, path, request):
        if path in (b"", b"index.html"):
            return self._page
        return pages.notFound()

    def render_GET(self, request):
        return self._page.render_GET(request)


def build_site(api: dict[str, resource.Resource]) -> server.Site:
    """The whole site; ``api`` maps the names under ``/api/`` to their resources."""
    root = PageResource(f"{static_dir()}/console.html")
    root.putChild(b"static", static.File(static_dir()))
    api_root = resource.Resource()
    for name, child in api.items():
        api_root.putChild(name.encode(), child)
    root.putChild(b"api", api_root)
    site = server.Site(root)
    site.displayTracebacks = False
    return site
