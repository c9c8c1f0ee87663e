"""Produce and Fetch through the API table and the real connection pipeline, for both wire
protocols: a broker of real parts (a ReplicaManager over real logs, task.Clock) and a fake
authorizer that refuses the topic ``secret``, the transactional id ``tx-denied`` and, when told,
the cluster (a follower's ClusterAction).

Each API: one request served, one refused per resource (Kafka 2.8's per-partition answers), one
malformed."""

from types import SimpleNamespace

import pytest

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.envelope import encode_request_payload
from kafkalite.protocol.framing import encode_frame
from kafkalite.protocol.messages import RequestErrorResponse
from kafkalite.record import iter_records
from kafkalite.record.batch import build_batch
from kafkalite.security.acl import ResourceType
from kafkalite.server.data_apis import handle_fetch, handle_produce
from kafkalite.server.dispatch import ApiDispatcher
from kafkalite.server.request_authz import RequestAuthz

from pipeline_driver import (connect, kafka_frame, native_frame, read_frames,
                             read_kafka_responses, read_native_responses)
from test_server_replica_manager import Harness, _batch

TOPIC_DENIED = errors.TopicAuthorizationFailedError.code
TX_DENIED = errors.TransactionalIdAuthorizationFailedError.code


class FakeAuthorizer:
    def __init__(self, cluster_allowed=True):
        self.cluster_allowed = cluster_allowed
        self.asked = []

    def authorize(self, principal, host, operation, resource_type, name, log_denied=True):
        self.asked.append((operation, resource_type, name))
        if resource_type == ResourceType.CLUSTER:
            return self.cluster_allowed
        return name not in ("secret", "tx-denied")

    def authorize_by_resource_type(self, principal, host, operation, resource_type):
        return True


@pytest.fixture
def broker(tmp_path):
    """A leader of t-0 (and of secret-0, which only the ACLs keep anyone from), replicas 1, 2."""
    h = Harness(tmp_path)
    h.lead([1, 2], [1, 2])
    h.manager.become_leader_or_follower(m.LeaderAndIsrRequest(
        controller_id=1, controller_epoch=1, partition_states=[m.LeaderAndIsrPartitionState(
            "secret", 0, 1, 1, 0, [1], 0, [1])]))
    h.authorizer = FakeAuthorizer()
    h.broker = SimpleNamespace(replica_manager=h.manager,
                               security=SimpleNamespace(authorizer=h.authorizer))
    return h


def _log_end(h, topic="t"):
    return h.manager.partitions[(topic, 0)].log_end_offset


# --- Produce ------------------------------------------------------------------------------------

def _kafka_produce(h, values, version=9):
    protocol, transport = connect(ApiDispatcher(h.broker))
    protocol.dataReceived(kafka_frame(ApiKey.PRODUCE, version, 7, values))
    return protocol, transport


def _produce_values(transactional_id=None, acks=1):
    return {"transactional_id": transactional_id, "acks": acks, "timeout": 1000,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": _batch()}]},
                           {"name": "secret",
                            "partition_data": [{"index": 0, "records": _batch()}]}]}


def test_kafka_produce_serves_the_allowed_topic_and_refuses_the_other(broker):
    _protocol, transport = _kafka_produce(broker, _produce_values())
    [(cid, entity)] = read_kafka_responses(transport, [(ApiKey.PRODUCE, 9)])
    by_topic = {t.name: t.partition_responses[0] for t in entity.responses}
    assert cid == 7
    assert [t.name for t in entity.responses] == ["t", "secret"]     # served first, as Kafka
    assert (by_topic["t"].error_code, by_topic["t"].base_offset) == (0, 0)
    assert (by_topic["secret"].error_code, by_topic["secret"].error_message) == \
        (TOPIC_DENIED, None)
    assert (_log_end(broker), _log_end(broker, "secret")) == (3, 0)


def test_native_produce_serves_the_allowed_topic_and_refuses_the_other(broker):
    protocol, transport = connect(ApiDispatcher(broker.broker))
    protocol.dataReceived(native_frame(m.ProduceRequest(acks=1, topic_data={
        "t": {0: _batch()}, "secret": {0: _batch()}}), 8))
    [(cid, response)] = read_native_responses(transport, [ApiKey.PRODUCE])
    assert cid == 8
    assert response.responses["t"][0].error_code == 0
    assert response.responses["secret"][0].error_code == TOPIC_DENIED
    assert (_log_end(broker), _log_end(broker, "secret")) == (3, 0)


def _transactional_batch():
    return build_batch([(1000, b"k", b"v", None)], producer_id=7, producer_epoch=0,
                       base_sequence=0, transactional=True)


def test_a_refused_transactional_id_refuses_every_partition(broker):
    values = _produce_values("tx-denied")
    for topic in values["topic_data"]:
        topic["partition_data"][0]["records"] = _transactional_batch()
    _protocol, transport = _kafka_produce(broker, values)
    [(_cid, entity)] = read_kafka_responses(transport, [(ApiKey.PRODUCE, 9)])
    assert {t.name: t.partition_responses[0].error_code for t in entity.responses} == \
        {"t": TX_DENIED, "secret": TX_DENIED}
    assert _log_end(broker) == 0


def test_a_refused_transactional_id_beside_plain_records_is_not_asked_about(broker):
    """Kafka 2.8's handleProduceRequest checks the transactional id only when a partition's
    first batch is transactional."""
    broker.authorizer.asked.clear()
    _protocol, transport = _kafka_produce(broker, _produce_values("tx-denied"))
    [(_cid, entity)] = read_kafka_responses(transport, [(ApiKey.PRODUCE, 9)])
    assert {t.name: t.partition_responses[0].error_code for t in entity.responses} == \
        {"t": 0, "secret": TOPIC_DENIED}
    assert _log_end(broker) == 3
    assert all(resource != ResourceType.TRANSACTIONAL_ID
               for _op, resource, _name in broker.authorizer.asked)


def test_acks_0_appends_without_an_answer(broker):
    _protocol, transport = _kafka_produce(broker, _produce_values(acks=0))
    assert read_frames(transport) == []
    assert _log_end(broker) == 3


def test_a_malformed_kafka_produce_closes_the_connection(broker):
    frame = kafka_frame(ApiKey.PRODUCE, 9, 7, _produce_values())
    cut = frame[4:-40]                       # the body ends inside the records
    protocol, transport = connect(ApiDispatcher(broker.broker))
    protocol.dataReceived(len(cut).to_bytes(4, "big") + cut)
    assert transport.disconnecting and read_frames(transport) == []
    assert _log_end(broker) == 0


def test_the_handler_leaves_the_request_as_it_was(broker):
    request = m.ProduceRequest(acks=1, topic_data={"t": {0: _batch()}, "secret": {0: _batch()}})
    ctx = SimpleNamespace(authz=RequestAuthz(broker.authorizer, "User:alice", "10.0.0.1"))
    response = handle_produce(broker.broker, ctx, request)
    assert set(request.topic_data) == {"t", "secret"}
    assert response.responses["secret"][0].error_code == TOPIC_DENIED
    fetch = m.FetchRequest(max_wait_ms=0, topics=[
        m.FetchTopic("t", [m.FetchPartition(0, 0, 1 << 20)]),
        m.FetchTopic("secret", [m.FetchPartition(0, 0, 1 << 20)])])
    handle_fetch(broker.broker, ctx, fetch)
    assert [t.topic for t in fetch.topics] == ["t", "secret"]


# --- Fetch --------------------------------------------------------------------------------------

def _fetch_values(session_epoch=-1):
    partition = {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20}
    return {"replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": session_epoch,
            "topics": [{"topic": "t", "partitions": [partition]},
                       {"topic": "secret", "partitions": [partition]}],
            "forgotten_topics_data": [], "rack_id": ""}


def _committed(h):
    """Three records in t-0 and secret-0, the high watermark past them (acks=1; follower 2
    fetched up to the end)."""
    for topic in ("t", "secret"):
        assert h.manager.append_records(1000, 1, False, {(topic, 0): _batch()})
    h.fetch(3, replica_id=2)


def test_kafka_fetch_serves_the_allowed_topic_and_refuses_the_other(broker):
    _committed(broker)
    protocol, transport = connect(ApiDispatcher(broker.broker))
    protocol.dataReceived(kafka_frame(ApiKey.FETCH, 12, 9, _fetch_values()))
    [(cid, entity)] = read_kafka_responses(transport, [(ApiKey.FETCH, 12)])
    assert (cid, entity.error_code, entity.session_id) == (9, 0, 0)
    t, secret = entity.responses
    assert (t.topic, secret.topic) == ("t", "secret")
    assert (t.partitions[0].error_code, t.partitions[0].high_watermark) == (0, 3)
    assert [r.offset for r in iter_records(bytes(t.partitions[0].records))] == [0, 1, 2]
    assert secret.partitions[0].error_code == TOPIC_DENIED and not secret.partitions[0].records


def test_native_consumer_fetch_serves_the_allowed_topic_and_refuses_the_other(broker):
    _committed(broker)
    protocol, transport = connect(ApiDispatcher(broker.broker))
    protocol.dataReceived(native_frame(m.FetchRequest(max_wait_ms=0, topics=[
        m.FetchTopic("t", [m.FetchPartition(0, 0, 1 << 20)]),
        m.FetchTopic("secret", [m.FetchPartition(0, 0, 1 << 20)])]), 4))
    [(_cid, response)] = read_native_responses(transport, [ApiKey.FETCH])
    t, secret = response.responses
    assert t.partitions[0].error_code == 0 and t.partitions[0].records
    assert secret.partitions[0].error_code == TOPIC_DENIED


@pytest.mark.parametrize("cluster_allowed", [True, False])
def test_a_follower_fetch_needs_cluster_action(broker, cluster_allowed):
    """Kafka 2.8: a follower without ClusterAction gets TOPIC_AUTHORIZATION_FAILED on every
    partition, whatever the topic's ACLs; with it, every partition is served."""
    broker.authorizer.cluster_allowed = cluster_allowed
    broker.manager.append_records(1000, 1, False, {("t", 0): _batch()})
    protocol, transport = connect(ApiDispatcher(broker.broker))
    protocol.dataReceived(native_frame(m.FetchRequest(replica_id=2, max_wait_ms=0, topics=[
        m.FetchTopic("t", [m.FetchPartition(0, 0, 1 << 20)]),
        m.FetchTopic("secret", [m.FetchPartition(0, 0, 1 << 20)])]), 5))
    [(_cid, response)] = read_native_responses(transport, [ApiKey.FETCH])
    codes = {t.topic: t.partitions[0].error_code for t in response.responses}
    if cluster_allowed:
        assert codes == {"t": 0, "secret": 0}
        assert response.responses[0].partitions[0].records      # up to the log end
    else:
        assert codes == {"t": TOPIC_DENIED, "secret": TOPIC_DENIED}
        assert broker.manager.partitions[("t", 0)].high_watermark == 0   # not a follower's


def test_a_kafka_fetch_continuing_a_session_is_told_to_start_over(broker):
    protocol, transport = connect(ApiDispatcher(broker.broker))
    protocol.dataReceived(kafka_frame(ApiKey.FETCH, 12, 10, _fetch_values(session_epoch=2)))
    [(_cid, entity)] = read_kafka_responses(transport, [(ApiKey.FETCH, 12)])
    assert entity.error_code == errors.FetchSessionIdNotFoundError.code
    assert entity.responses == ()


def test_a_malformed_native_fetch_answers_an_error(broker):
    protocol, transport = connect(ApiDispatcher(broker.broker))
    protocol.dataReceived(encode_frame(encode_request_payload(ApiKey.FETCH, 0, 11, "test",
                                                              ["not", "a", "fetch"])))
    [(cid, response)] = read_native_responses(transport, [ApiKey.FETCH])
    assert cid == 11 and isinstance(response, RequestErrorResponse)
    assert response.error_code == errors.InvalidRequestError.code
