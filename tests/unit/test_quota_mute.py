"""KIP-219 in the connection pipeline: a client over its quota gets its answer at once, carrying
``throttle_time_ms``, and its connection serves nothing more until the throttle has passed (a
``task.Clock`` stands for the reactor)."""

from __future__ import annotations

from types import SimpleNamespace

from pipeline_driver import Script, native_frame, read_native_responses, table_of
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.server import data_apis
from kafkalite.server.api_table import ApiSpec
from kafkalite.server.data_values import FetchResult
from kafkalite.server.dispatch import ApiDispatcher
from kafkalite.server.network import BrokerProtocol
from kafkalite.server.quota_manager import ClientQuotas

PRODUCE_BYTES = 20000          # at 1000 B/s over the first 10 s: 2000 B/s -> 10 s throttle


def _connection(quotas: dict):
    clock = Clock()
    clock.advance(100)
    broker = SimpleNamespace(quotas=ClientQuotas(), clock_ms=lambda: int(clock.seconds() * 1000))
    broker.quotas.update(quotas)
    script = Script()

    def produce(ctx, request):
        ctx.quota.produce_throttle_ms(PRODUCE_BYTES)     # what handle_produce records
        return m.ProduceResponse()

    dispatcher = ApiDispatcher(broker, table=table_of([
        ApiSpec(ApiKey.PRODUCE, 9, script.handler(produce)),
        ApiSpec(ApiKey.METADATA, 11, script.handler(lambda ctx, r: m.MetadataResponse())),
    ]))
    protocol = BrokerProtocol(dispatcher, 1 << 20, clock=clock)
    transport = StringTransport()
    protocol.makeConnection(transport)
    return clock, script, protocol, transport


def test_a_throttled_connection_answers_at_once_and_serves_the_next_request_after():
    clock, script, protocol, transport = _connection(
        {(None, "c"): {"producer_byte_rate": "1000"}})
    protocol.dataReceived(native_frame(m.ProduceRequest(acks=1), 1, client_id="c")
                          + native_frame(m.MetadataRequest(), 2, client_id="c"))
    [(cid, answer)] = read_native_responses(transport, [ApiKey.PRODUCE])
    assert (cid, answer.throttle_time_ms) == (1, 10000)
    assert script.keys_called() == [ApiKey.PRODUCE]          # muted
    clock.advance(9.999)
    assert script.keys_called() == [ApiKey.PRODUCE] and transport.value() == b""
    clock.advance(0.001)
    [(cid, answer)] = read_native_responses(transport, [ApiKey.METADATA])
    assert cid == 2 and answer.throttle_time_ms == 0        # within quota again
    # a request arriving after the throttle is served at once
    protocol.dataReceived(native_frame(m.MetadataRequest(), 3, client_id="c"))
    assert [cid for cid, _ in read_native_responses(transport, [ApiKey.METADATA])] == [3]


def test_other_clients_and_unthrottled_answers_are_not_muted():
    clock, script, protocol, transport = _connection(
        {(None, "other"): {"producer_byte_rate": "1000"}})
    protocol.dataReceived(native_frame(m.ProduceRequest(acks=1), 1, client_id="c")
                          + native_frame(m.MetadataRequest(), 2, client_id="c"))
    answers = read_native_responses(transport, [ApiKey.PRODUCE, ApiKey.METADATA])
    assert [(cid, a.throttle_time_ms) for cid, a in answers] == [(1, 0), (2, 0)]
    assert clock.getDelayedCalls() == []


def test_a_connection_closed_while_throttled_leaves_no_timer():
    clock, script, protocol, transport = _connection(
        {(None, "c"): {"producer_byte_rate": "1000"}})
    protocol.dataReceived(native_frame(m.ProduceRequest(acks=0), 1, client_id="c")
                          + native_frame(m.MetadataRequest(), 2, client_id="c"))
    assert transport.value() == b"" and len(clock.getDelayedCalls()) == 1   # acks=0 mutes too
    protocol.connectionLost(None)
    assert clock.getDelayedCalls() == []
    clock.advance(20)
    assert script.keys_called() == [ApiKey.PRODUCE]


def _fetch_broker(quotas: dict, records: bytes):
    class ReplicaManager:
        def fetch(self, params, infos):
            self.params = params
            return {tp: FetchResult(0, 10, 10, 0, records) for tp in infos}

    broker = SimpleNamespace(quotas=ClientQuotas(), clock_ms=lambda: 0,
                             replica_manager=ReplicaManager())
    broker.quotas.update(quotas)
    return broker


def _fetch(broker, replica_id=-1):
    dispatcher = ApiDispatcher(broker)
    ctx = dispatcher.context(SimpleNamespace(), "kafka", ApiKey.FETCH, 12, 1, "c")
    request = m.FetchRequest(replica_id=replica_id, max_bytes=50 << 20, topics=[
        m.FetchTopic("t", [m.FetchPartition(0, 0, -1, 1 << 20)])])
    return dispatcher.call(dispatcher.table[ApiKey.FETCH], ctx, request)


def test_a_consumer_over_its_fetch_quota_gets_an_empty_throttled_answer():
    broker = _fetch_broker({(None, "c"): {"consumer_byte_rate": "1000"}}, b"x" * 9000)
    first = _fetch(broker)
    assert first.throttle_time_ms == 0 and first.responses[0].partitions[0].records
    assert broker.replica_manager.params.max_bytes == 10000        # one quota window's worth
    second = _fetch(broker)
    assert second.throttle_time_ms == 8000 and second.responses == []   # 18000 B over 10 s


def test_a_followers_fetch_is_exempt():
    broker = _fetch_broker({(None, "c"): {"consumer_byte_rate": "1"}}, b"x" * 9000)
    for _ in range(3):
        answer = _fetch(broker, replica_id=2)
        assert answer.throttle_time_ms == 0 and answer.responses[0].partitions[0].records
    assert broker.replica_manager.params.max_bytes == 50 << 20


def test_a_failed_request_is_throttled_too():
    from kafkalite import errors
    clock, script, protocol, transport = _connection(
        {(None, "c"): {"producer_byte_rate": "1000"}})

    def failing_produce(ctx, request):
        ctx.quota.produce_throttle_ms(PRODUCE_BYTES)
        raise errors.InvalidRequestError("no")

    script.behaviour[ApiKey.PRODUCE] = failing_produce
    protocol.dataReceived(native_frame(m.ProduceRequest(acks=1, topic_data={"t": {0: b""}}), 1,
                                       client_id="c")
                          + native_frame(m.MetadataRequest(), 2, client_id="c"))
    [(cid, answer)] = read_native_responses(transport, [ApiKey.PRODUCE])
    assert answer.responses["t"][0].error_code == errors.InvalidRequestError.code
    assert answer.throttle_time_ms == 10000 and script.keys_called() == [ApiKey.PRODUCE]
    clock.advance(10)
    assert [cid for cid, _ in read_native_responses(transport, [ApiKey.METADATA])] == [2]
