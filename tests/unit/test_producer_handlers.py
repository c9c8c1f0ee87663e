"""DescribeProducers (server/producer_apis.py) through the API table and the real connection
pipeline, for both wire protocols, over a real ReplicaManager and log (tmp_path, task.Clock)
whose partition t-0 took an idempotent batch, an open transaction and a committed one: each
producer's epoch, last sequence, last timestamp, coordinator epoch and open transaction's first
offset as Kafka 2.8's ``Log.activeProducers`` gives them; Read on the topic; Kafka's
getPartitionOrError per partition (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION); a
follower answers too; malformed requests."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest
from pipeline_driver import (connect, kafka_frame, native_frame, read_frames,
                             read_kafka_responses, read_native_responses)

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.envelope import encode_request_payload
from kafkalite.protocol.framing import encode_frame
from kafkalite.record import build_batch
from kafkalite.record.control import build_control_batch
from kafkalite.security.acl import AclOperation, ResourceType
from kafkalite.server.dispatch import ApiDispatcher

from test_server_replica_manager import TP, Harness, _resolved

KAFKA, NATIVE = "kafka", "native"
PROTOCOLS = [KAFKA, NATIVE]
DENIED = errors.TopicAuthorizationFailedError.code
UNKNOWN = errors.UnknownTopicOrPartitionError.code
NOT_LEADER = errors.NotLeaderForPartitionError.code
TS = 1_700_000_000_000


class TopicAuthorizer:
    """Refuses the topic ``secret``; records what it was asked."""

    def __init__(self):
        self.asked: list = []

    def authorize(self, principal, host, operation, resource_type, name, log_denied=True):
        self.asked.append((operation, resource_type, name))
        return name != "secret"

    def authorize_by_resource_type(self, principal, host, operation, resource_type):
        return True


def _append(h, batch, origin="client"):
    result = _resolved(h.manager.append_records(5000, 1, False, {TP: batch}, origin=origin))
    assert result[TP].error_code == 0, result
    return result[TP].base_offset


@pytest.fixture
def broker(tmp_path):
    """t-0 led here: producer 5 (idempotent, epoch 2, records 0-2), producer 7 (transaction
    open from offset 3, sequences 0-1), producer 9 (transaction 5 committed by a marker of
    coordinator epoch 4). The metadata knows t (partitions 0 and 1) and u (partition 0, hosted
    elsewhere); ``gone`` is unknown."""
    h = Harness(tmp_path)
    h.lead([1], [1])
    _append(h, build_batch([(TS + i, None, b"i%d" % i, None) for i in range(3)],
                           producer_id=5, producer_epoch=2, base_sequence=0))
    assert _append(h, build_batch([(TS + 10, None, b"a", None), (TS + 11, None, b"b", None)],
                                  producer_id=7, producer_epoch=0, base_sequence=0,
                                  transactional=True)) == 3
    _append(h, build_batch([(TS + 20, None, b"c", None)], producer_id=9, producer_epoch=1,
                           base_sequence=0, transactional=True))
    _append(h, build_control_batch(9, 1, True, 4, TS + 30), origin="coordinator")
    h.manager.partition_known = lambda topic, partition: (topic, partition) in {
        ("t", 0), ("t", 1), ("u", 0)}
    yield SimpleNamespace(
        harness=h, replica_manager=h.manager,
        metadata_cache=SimpleNamespace(contains=lambda topic: topic in ("t", "u")),
        security=SimpleNamespace(authorizer=None))
    h.logs.stopService()


EXPECTED_T0 = [(5, 2, 2, TS + 2, -1, -1),        # idempotent: no marker, no transaction
               (7, 0, 1, TS + 11, -1, 3),        # open transaction from offset 3
               (9, 1, 0, TS + 30, 4, -1)]        # committed: the marker's time and epoch


def _describe(broker, protocol, topics: list[tuple[str, list[int]]]):
    """[(topic, [(partition, error, [(pid, epoch, seq, ts, coordinator epoch, txn start)])])]."""
    connection, transport = connect(ApiDispatcher(broker))
    if protocol == KAFKA:
        connection.dataReceived(kafka_frame(61, 0, 7, {"topics": [
            {"name": t, "partition_indexes": ps} for t, ps in topics]}))
        [(correlation_id, answer)] = read_kafka_responses(transport, [(61, 0)])
        assert all(p.error_message is None for t in answer.topics for p in t.partitions)
    else:
        connection.dataReceived(native_frame(m.DescribeProducersRequest(topics=[
            m.DescribeProducersTopic(t, ps) for t, ps in topics]), 7))
        [(correlation_id, answer)] = read_native_responses(transport, [61])
    assert correlation_id == 7
    return [(t.name, [(p.partition_index, int(p.error_code), sorted(
        (s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp,
         s.coordinator_epoch, s.current_txn_start_offset) for s in p.active_producers))
        for p in t.partitions]) for t in answer.topics]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_active_producers_of_a_partition(broker, protocol):
    assert _describe(broker, protocol, [("t", [0])]) == [("t", [(0, 0, EXPECTED_T0)])]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_state_moves_with_the_log(broker, protocol):
    """Producer 7's abort closes its transaction; producer 5 writes on at a new epoch."""
    h = broker.harness
    _append(h, build_control_batch(7, 0, False, 6, TS + 40), origin="coordinator")
    _append(h, build_batch([(TS + 50, None, b"x", None)], producer_id=5, producer_epoch=3,
                           base_sequence=0))
    assert _describe(broker, protocol, [("t", [0])]) == [("t", [(0, 0, [
        (5, 3, 0, TS + 50, -1, -1), (7, 0, 1, TS + 40, 6, -1), (9, 1, 0, TS + 30, 4, -1)])])]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_partition_errors_as_kafkas_get_partition_or_error(broker, protocol):
    """t-1 and u-0 are known but not hosted here: NOT_LEADER_OR_FOLLOWER; t-5 is not a
    partition of t and ``gone`` no topic: UNKNOWN_TOPIC_OR_PARTITION. The request's order,
    a partition named twice answered twice."""
    assert _describe(broker, protocol, [("gone", [0]), ("t", [1, 5, 0, 0]), ("u", [0])]) == [
        ("gone", [(0, UNKNOWN, [])]),
        ("t", [(1, NOT_LEADER, []), (5, UNKNOWN, []), (0, 0, EXPECTED_T0),
               (0, 0, EXPECTED_T0)]),
        ("u", [(0, NOT_LEADER, [])])]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_read_on_the_topic_is_needed(broker, protocol):
    authorizer = broker.security.authorizer = TopicAuthorizer()
    assert _describe(broker, protocol, [("secret", [0, 1]), ("t", [0])]) == [
        ("secret", [(0, DENIED, []), (1, DENIED, [])]), ("t", [(0, 0, EXPECTED_T0)])]
    assert sorted(authorizer.asked) == [
        (AclOperation.READ, ResourceType.TOPIC, "secret"),
        (AclOperation.READ, ResourceType.TOPIC, "t")]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_follower_answers_with_what_it_replicated(broker, protocol):
    """Kafka 2.8 reads any local replica's log, not only the leader's."""
    broker.harness.lead([1, 2], [1, 2], epoch=1, leader=2)
    assert not broker.replica_manager.partitions[TP].is_leader
    assert _describe(broker, protocol, [("t", [0])]) == [("t", [(0, 0, EXPECTED_T0)])]


def test_a_malformed_native_request_is_answered_with_an_error(broker):
    connection, transport = connect(ApiDispatcher(broker))
    connection.dataReceived(encode_frame(encode_request_payload(61, 0, 7, "test",
                                                                {"topics": [["t", "0"]]})))
    [(correlation_id, answer)] = read_native_responses(transport, [61])
    assert isinstance(answer, m.RequestErrorResponse)
    assert answer.error_code == errors.InvalidRequestError.code


def test_a_malformed_kafka_request_closes_the_connection(broker):
    connection, transport = connect(ApiDispatcher(broker))
    # request header v2 (DescribeProducers is flexible), then a topics array cut short
    payload = struct.pack(">hhih", 61, 0, 7, 4) + b"test" + b"\x00" + b"\x05\x02"
    connection.dataReceived(encode_frame(payload))
    assert read_frames(transport) == []
    assert transport.disconnecting


def test_producers_in_the_order_of_kafkas_map():
    """Kafka's producers are a Scala mutable.HashMap keyed by Long: bucket order (the key's
    spread hash modulo 16 here), not the order they wrote in."""
    from kafkalite.server.producer_apis import active_producers
    from kafkalite.server.producer_state import ProducerEntry, ProducerStateTable

    table = ProducerStateTable()
    for pid in (20, 3, 2**40 + 1, 17):
        table.producers[pid] = ProducerEntry(epoch=pid % 7)
    # 20 -> bucket 4, 3 -> 3, 2**40 + 1 -> Long.hashCode 257 -> 1, 17 -> 1: a bucket's
    # entries by hash (Scala 2.13's sorted bucket lists), 17 before 257
    assert [s.producer_id for s in active_producers(table)] == [17, 2**40 + 1, 3, 20]
    assert [s.producer_epoch for s in active_producers(table)] == [3, (2**40 + 1) % 7, 3, 6]
