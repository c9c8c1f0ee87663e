"""The broker's watch over requests that stay in it past their own timeout (request_watch), and
the connection pipeline's record of the request it serves."""

import logging

from pipeline_driver import Script, connect, native_frame, table_of

from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.server.api_table import ApiSpec
from kafkalite.server.dispatch import ApiDispatcher
from kafkalite.server.request_watch import (DEFAULT_BOUND_S, GRACE_S, InBroker, RequestWatch,
                                            bound_of, overdue)


class Conn:
    def __init__(self, serving):
        self.in_broker = serving
        self.reported_overdue = None
        self.client_id = "c"

    def peer_description(self):
        return "peer"


def test_bound_is_the_requests_own_timeout_plus_grace_or_the_default():
    assert bound_of(m.FetchRequest(topics=[], max_wait_ms=500)) == 0.5 + GRACE_S
    assert bound_of(m.ApiVersionsRequest()) == DEFAULT_BOUND_S


def test_overdue_names_each_late_request_once(caplog):
    late = Conn(InBroker("Fetch", 12, 7, since=100.0, bound_s=30.5))
    fine = Conn(InBroker("Produce", 9, 8, since=120.0, bound_s=60.0))
    idle = Conn(None)
    assert overdue([late, fine, idle], 130.0) == []
    assert overdue([late, fine, idle], 131.0) == [(late, late.in_broker, 31.0)]

    class Dispatcher:
        connections = {late, fine, idle}
    now = [131.0]
    watch = RequestWatch(Dispatcher(), now=lambda: now[0])
    with caplog.at_level(logging.WARNING, "kafkalite.server.request_watch"):
        assert watch.check() == 1
        assert watch.check() == 0               # said once per request
    [record] = caplog.records
    assert "Fetch v12 (correlation id 7) from peer (client c)" in record.getMessage()
    late.in_broker = InBroker("Fetch", 12, 9, since=200.0, bound_s=30.5)
    fine.in_broker = None                       # answered
    now[0] = 231.0
    assert watch.check() == 1                   # a new request is a new report


def test_the_pipeline_records_the_request_it_serves_until_it_is_answered():
    script = Script()
    table = table_of([ApiSpec(ApiKey.FETCH, 12, script.handler(lambda ctx, r: m.FetchResponse()))])
    protocol, _ = connect(ApiDispatcher(None, table=table))
    script.behaviour[ApiKey.FETCH] = "defer"
    protocol.dataReceived(native_frame(m.FetchRequest(topics=[], max_wait_ms=2000), 4))
    serving = protocol.in_broker
    assert (serving.api, serving.correlation_id, serving.bound_s) == ("FETCH", 4, 2 + GRACE_S)
    script.deferreds[ApiKey.FETCH][0].callback(m.FetchResponse())
    assert protocol.in_broker is None
