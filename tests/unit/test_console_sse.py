"""The event stream and the JSON resources on a fake request and a task.Clock: SSE framing,
backlog and Last-Event-ID resume, keepalives, unsubscribe on disconnect, error statuses; and the
console's settling of a ZooKeeper group's rebalance before announcing it."""

import json

from twisted.internet import defer, task
from twisted.web.test.requesthelper import DummyRequest
from zk_schema.topics import TopicAssignment

from kafkalite.console.hub import EventHub
from kafkalite.console.service import ConsoleService
from kafkalite.console.sse import EventStreamResource, format_event
from kafkalite.console.web import HttpError, JsonResource
from kafkalite.errors import ZooKeeperError


def events_in(request) -> list[dict]:
    text = b"".join(request.written).decode()
    return [json.loads(line[len("data: "):]) for line in text.splitlines()
            if line.startswith("data: ")]


def test_format_is_one_id_and_one_data_line():
    assert format_event({"id": 7, "sentence": "a\nb"}) == (
        b'id: 7\ndata: {"id":7,"sentence":"a\\nb"}\n\n')


def test_stream_sends_backlog_then_live_events_and_stops_on_disconnect():
    clock = task.Clock()
    clock.advance(1000)
    hub = EventHub(clock)
    hub.publish("broker_died", "broker 2 died")
    resource = EventStreamResource(hub, clock, keepalive_s=15)
    request = DummyRequest([b""])
    resource.render_GET(request)
    assert request.responseHeaders.getRawHeaders(b"content-type") == [
        b"text/event-stream; charset=utf-8"]
    assert [e["sentence"] for e in events_in(request)] == ["broker 2 died"]
    hub.publish("leader_changed", "partition t-0 elected leader 3", topic="t")
    got = events_in(request)
    assert [(e["id"], e["kind"], e["topic"] if "topic" in e else None) for e in got] == [
        (1, "broker_died", None), (2, "leader_changed", "t")]
    assert got[1]["time"] == 1000.0
    clock.advance(15)
    assert b"".join(request.written).endswith(b": keepalive\n\n")
    request.processingFailed(Exception("client went away"))   # the connection closed
    assert hub.subscribers == 0
    assert not clock.getDelayedCalls()                         # keepalive stopped too


def test_reconnect_with_last_event_id_gets_only_what_it_missed():
    clock = task.Clock()
    hub = EventHub(clock)
    for n in range(5):
        hub.publish("x", f"event {n}")
    request = DummyRequest([b""])
    request.requestHeaders.setRawHeaders(b"last-event-id", [b"3"])
    EventStreamResource(hub, clock).render_GET(request)
    assert [e["id"] for e in events_in(request)] == [4, 5]
    fresh = DummyRequest([b""])
    fresh.args[b"backlog"] = [b"0"]
    EventStreamResource(hub, clock).render_GET(fresh)
    assert events_in(fresh) == []


def render_json(view):
    request = DummyRequest([b""])
    JsonResource(view).render_GET(request)
    return request.responseCode or 200, json.loads(b"".join(request.written))


def test_json_resource_statuses():
    assert render_json(lambda r: {"ok": 1}) == (200, {"ok": 1})
    assert render_json(lambda r: defer.succeed([1, 2])) == (200, [1, 2])
    assert render_json(lambda r: defer.fail(HttpError(404, "no znode at /x"))) == (
        404, {"error": "no znode at /x"})
    code, body = render_json(lambda r: defer.fail(ZooKeeperError("cannot reach ZooKeeper")))
    assert code == 503 and "cannot reach ZooKeeper" in body["error"]


class SyncedWatcher:
    synced = True


def test_a_zookeeper_rebalance_is_announced_once_it_settled():
    clock = task.Clock()
    service = ConsoleService("127.0.0.1:1/unused", clock, settle_s=0.5)
    service.watcher = SyncedWatcher()
    model = service.model
    model.set_topics(["t"])
    model.set_assignment("t", TopicAssignment({0: (1,), 1: (1,)}))
    model.set_zk_groups(["g"])
    model.set_zk_members("g", ["g_h-1-aaaaaaaa", "g_h-2-bbbbbbbb"])
    published = []
    service.hub.subscribe(published.append)
    model.set_zk_owner("g", "t", 0, "g_h-1-aaaaaaaa-0")
    service._owners_changed("g")
    clock.advance(0.5)
    assert published == []                  # t-1 has no owner yet: the rebalance goes on
    model.set_zk_owner("g", "t", 1, "g_h-2-bbbbbbbb-0")
    service._owners_changed("g")
    clock.advance(0.4)
    assert published == []
    clock.advance(0.1)
    assert [e["sentence"] for e in published] == [
        "group g (zookeeper) rebalanced: aaaaaaaa owns t-0; bbbbbbbb owns t-1"]
    service._owners_changed("g")            # nothing new: nothing said
    clock.advance(1)
    assert len(published) == 1
