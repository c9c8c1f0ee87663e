"""ElectLeaders, AlterPartitionReassignments and ListPartitionReassignments
(server/reassignment_apis.py) driven through the API table and the real connection pipeline, for
both protocols: a fake broker (a real metadata cache and metadata waits) whose controller is a
stand-in answering as ``controller.admin_elections`` / ``controller.reassignment`` do (their own
logic is tested against the in-memory ZooKeeper in test_controller_admin_requests.py). Served at
the controller, NOT_CONTROLLER elsewhere, refused without the cluster ACL, malformed requests
answered by the pipeline."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest
from pipeline_driver import (connect, kafka_frame, native_frame, read_frames,
                             read_kafka_responses, read_native_responses)
from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalite import errors
from kafkalite.controller.reassignment import ReplicaAssignment
from kafkalite.protocol import messages as m
from kafkalite.protocol.envelope import encode_request_payload
from kafkalite.protocol.framing import encode_frame
from kafkalite.security.acl import AclOperation, ResourceType
from kafkalite.server.dispatch import ApiDispatcher
from kafkalite.server.metadata_cache import MetadataCache
from kafkalite.server.metadata_waits import MetadataWaits

KAFKA, NATIVE = "kafka", "native"
PROTOCOLS = [KAFKA, NATIVE]
CLUSTER_DENIED, NOT_CONTROLLER, INVALID_REQUEST, TIMED_OUT = 31, 41, 42, 7
NOT_NEEDED, PREFERRED_NOT_AVAILABLE, UNKNOWN = 84, 80, 3


class ClusterAuthorizer:
    """Allows everything but ``denied`` operations on the cluster; records what was asked."""

    def __init__(self, *denied):
        self.denied = set(denied)
        self.asked: list = []

    def authorize(self, principal, host, operation, resource_type, name, log_denied=True):
        self.asked.append((operation, resource_type))
        return not (resource_type == ResourceType.CLUSTER and operation in self.denied)

    def authorize_by_resource_type(self, principal, host, operation, resource_type):
        return True


class FakeController:
    """Answers as the real controller's managers do; records what it was asked."""

    def __init__(self, active=True):
        self.is_active = active
        self.asked: list = []
        self.elections: dict = {}
        self.ongoing: dict = {}

    def elect_leaders(self, tps, election_type):
        self.asked.append(("elect", list(tps), election_type))
        return defer.succeed({tp: self.elections.get(tp, (NOT_NEEDED, "not needed"))
                              for tp in tps})

    def alter_partition_reassignments(self, reassignments):
        self.asked.append(("alter", dict(reassignments)))
        return defer.succeed({tp: (0, None) if target else (85, "none in progress")
                              for tp, target in reassignments.items()})

    def list_partition_reassignments(self, tps=None):
        self.asked.append(("list", tps))
        return defer.succeed({tp: a for tp, a in self.ongoing.items()
                              if tps is None or tp in tps})


def _leaders(cache, leaders):
    cache.update(m.UpdateMetadataRequest(
        controller_id=1, controller_epoch=1,
        partition_states=[m.UpdateMetadataPartitionState(t, p, 1, leader, 0, [1, 2], 0, [1, 2],
                                                         [])
                          for (t, p), leader in leaders.items()],
        live_brokers=[m.UpdateMetadataBroker(1, "h", 9092), m.UpdateMetadataBroker(2, "h", 9093)]))


def _broker(authorizer=None, active=True):
    cache = MetadataCache(1)
    _leaders(cache, {("orders", 0): 1, ("orders", 1): 2})
    reactor = Clock()
    return SimpleNamespace(broker_id=1, reactor=reactor, metadata_cache=cache,
                           controller=FakeController(active), metadata_waits=MetadataWaits(reactor),
                           security=SimpleNamespace(authorizer=authorizer))


def _send(broker, protocol, api_key, version, kafka_body, native_request):
    connection, transport = connect(ApiDispatcher(broker))
    if protocol == KAFKA:
        connection.dataReceived(kafka_frame(api_key, version, 7, kafka_body))
    else:
        connection.dataReceived(native_frame(native_request, 7))

    def answer():
        if protocol == KAFKA:
            [(correlation_id, got)] = read_kafka_responses(transport, [(api_key, version)])
        else:
            [(correlation_id, got)] = read_native_responses(transport, [api_key])
        assert correlation_id == 7
        return got
    return answer, transport


def _call(broker, protocol, api_key, version, kafka_body, native_request):
    answer, _ = _send(broker, protocol, api_key, version, kafka_body, native_request)
    return answer()


# --- ElectLeaders ------------------------------------------------------------------------------

def _elect(broker, protocol, partitions, election_type=0, version=2, timeout_ms=5000):
    body = {"election_type": election_type, "timeout": timeout_ms, "topic_partitions": None
            if partitions is None else [{"topic": t, "partitions": ps}
                                        for t, ps in partitions.items()]}
    native = m.ElectLeadersRequest(
        election_type=election_type, timeout_ms=timeout_ms,
        topic_partitions=None if partitions is None else [
            m.ElectLeadersTopic(t, ps) for t, ps in partitions.items()])
    return _send(broker, protocol, 43, version, body, native)


def _results(answer):
    if hasattr(answer, "replica_election_results"):
        return {(r.topic, p.partition_id): (int(p.error_code), p.error_message)
                for r in answer.replica_election_results for p in r.partition_result}
    return {(r.topic, p.partition): (p.error_code, p.error_message)
            for r in answer.results for p in r.partitions}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_elect_leaders_answers_once_the_new_leader_shows(protocol):
    broker = _broker()
    broker.controller.elections = {("orders", 0): 2, ("gone", 0): (UNKNOWN, "no such")}
    answer, transport = _elect(broker, protocol, {"orders": [0, 1], "gone": [0]})
    assert read_frames(transport, clear=False) == []        # waiting for broker 2 to lead
    _leaders(broker.metadata_cache, {("orders", 0): 2})
    broker.metadata_waits.check()
    got = answer()
    assert _results(got) == {("orders", 0): (0, None), ("orders", 1): (NOT_NEEDED, "not needed"),
                             ("gone", 0): (UNKNOWN, "no such")}
    assert int(got.error_code) == 0
    assert broker.controller.asked == [("elect", [("orders", 0), ("orders", 1), ("gone", 0)], 0)]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_elect_leaders_times_out_per_partition(protocol):
    broker = _broker()
    broker.controller.elections = {("orders", 0): 2}
    answer, _ = _elect(broker, protocol, {"orders": [0]}, election_type=1, timeout_ms=1000)
    broker.reactor.advance(1.0)
    assert _results(answer()) == {("orders", 0): (TIMED_OUT, None)}
    assert broker.controller.asked[0][2] == 1                  # unclean


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_elect_leaders_of_every_partition_leaves_out_those_not_needed(protocol):
    broker = _broker()
    broker.controller.elections = {("orders", 1): (PREFERRED_NOT_AVAILABLE, "failed")}
    answer, _ = _elect(broker, protocol, None)
    assert _results(answer()) == {("orders", 1): (PREFERRED_NOT_AVAILABLE, "failed")}
    assert broker.controller.asked == [("elect", [("orders", 0), ("orders", 1)], 0)]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_elect_leaders_away_from_the_controller(protocol):
    broker = _broker(active=False)
    answer, _ = _elect(broker, protocol, {"orders": [0]})
    assert _results(answer()) == {("orders", 0): (NOT_CONTROLLER, None)}
    assert broker.controller.asked == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_elect_leaders_needs_alter_on_the_cluster(protocol):
    authorizer = ClusterAuthorizer(AclOperation.ALTER)
    broker = _broker(authorizer)
    got = _elect(broker, protocol, {"orders": [0, 1]})[0]()
    assert int(got.error_code) == CLUSTER_DENIED
    assert _results(got) == {("orders", 0): (CLUSTER_DENIED, None),
                             ("orders", 1): (CLUSTER_DENIED, None)}
    assert authorizer.asked == [(AclOperation.ALTER, ResourceType.CLUSTER)]
    assert broker.controller.asked == []


def test_elect_leaders_v0_is_preferred_and_has_no_top_level_error():
    broker = _broker()
    broker.controller.elections = {("orders", 0): (PREFERRED_NOT_AVAILABLE, "failed")}
    got = _elect(broker, KAFKA, {"orders": [0]}, election_type=1, version=0)[0]()
    assert _results(got) == {("orders", 0): (PREFERRED_NOT_AVAILABLE, "failed")}
    assert broker.controller.asked[0][2] == 0


def test_elect_leaders_of_an_unknown_election_type_is_invalid():
    got = _elect(_broker(), NATIVE, {"orders": [0]}, election_type=5)[0]()
    assert _results(got) == {("orders", 0): (INVALID_REQUEST, "unknown election type 5")}


# --- AlterPartitionReassignments ---------------------------------------------------------------

def _alter(broker, protocol, targets):
    body = {"timeout": 5000, "topics": [{"name": "orders", "partitions": [
        {"partition_index": p, "replicas": r} for p, r in targets.items()]}]}
    native = m.AlterPartitionReassignmentsRequest(topics=[m.ReassignableTopic("orders", [
        m.ReassignablePartition(p, r) for p, r in targets.items()])])
    return _call(broker, protocol, 45, 0, body, native)


def _alter_results(answer):
    topics = answer.responses if hasattr(answer, "responses") else answer.results
    return {(t.name if hasattr(t, "name") else t.topic, p.partition_index
             if hasattr(p, "partition_index") else p.partition): (int(p.error_code),
                                                                   p.error_message)
            for t in topics for p in t.partitions}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_alter_partition_reassignments_served_at_the_controller(protocol):
    broker = _broker()
    got = _alter(broker, protocol, {0: [2, 1], 1: None})
    assert (int(got.error_code), got.error_message) == (0, "")      # Kafka's "", not null
    assert _alter_results(got) == {("orders", 0): (0, None),
                                   ("orders", 1): (85, "none in progress")}
    assert broker.controller.asked == [("alter", {("orders", 0): [2, 1], ("orders", 1): None})]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_alter_partition_reassignments_away_from_the_controller(protocol):
    got = _alter(_broker(active=False), protocol, {0: [2, 1]})
    assert (int(got.error_code), got.error_message) == (
        NOT_CONTROLLER, "This is not the correct controller for this cluster.")
    assert _alter_results(got) == {}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_alter_partition_reassignments_needs_alter_on_the_cluster(protocol):
    broker = _broker(ClusterAuthorizer(AclOperation.ALTER))
    got = _alter(broker, protocol, {0: [2, 1]})
    assert int(got.error_code) == CLUSTER_DENIED
    assert [code for code, _ in _alter_results(got).values()] == [CLUSTER_DENIED]
    assert broker.controller.asked == []


# --- ListPartitionReassignments ----------------------------------------------------------------

def _list(broker, protocol, topics):
    body = {"timeout": 5000, "topics": None if topics is None else [
        {"name": t, "partition_indexes": ps} for t, ps in topics.items()]}
    native = m.ListPartitionReassignmentsRequest(topics=None if topics is None else [
        m.ListReassignmentsTopic(t, ps) for t, ps in topics.items()])
    return _call(broker, protocol, 46, 0, body, native)


def _listed(answer):
    return {((t.name if hasattr(t, "name") else t.topic), (p.partition_index if hasattr(
        p, "partition_index") else p.partition)): (list(p.replicas), list(p.adding_replicas),
                                                   list(p.removing_replicas))
            for t in answer.topics for p in t.partitions}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_list_partition_reassignments_served_at_the_controller(protocol):
    broker = _broker(ClusterAuthorizer(AclOperation.ALTER))     # Describe is enough
    broker.controller.ongoing = {("orders", 0): ReplicaAssignment((3, 1, 2), (3,), (2,))}
    listed = _list(broker, protocol, None)
    assert (int(listed.error_code), listed.error_message) == (0, "")
    assert _listed(listed) == {("orders", 0): ([3, 1, 2], [3], [2])}
    assert _listed(_list(broker, protocol, {"orders": [1]})) == {}
    assert broker.controller.asked == [("list", None), ("list", [("orders", 1)])]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_list_partition_reassignments_refused_and_away_from_the_controller(protocol):
    got = _list(_broker(ClusterAuthorizer(AclOperation.DESCRIBE)), protocol, {"orders": [0]})
    assert int(got.error_code) == CLUSTER_DENIED
    got = _list(_broker(active=False), protocol, None)
    assert (int(got.error_code), got.topics) == (NOT_CONTROLLER, [] if protocol == NATIVE
                                                 else ())


# --- malformed requests ------------------------------------------------------------------------

@pytest.mark.parametrize("api_key", [43, 45, 46])
def test_a_malformed_kafka_request_closes_the_connection(api_key):
    connection, transport = connect(ApiDispatcher(_broker()))
    payload = struct.pack(">hhih", api_key, 0, 7, 4) + b"test" + b"\x00\x00\x00\x05"
    connection.dataReceived(encode_frame(payload))
    assert read_frames(transport) == []
    assert transport.disconnecting


@pytest.mark.parametrize("api_key", [43, 45, 46])
def test_a_malformed_native_request_is_answered_with_an_error(api_key):
    connection, transport = connect(ApiDispatcher(_broker()))
    connection.dataReceived(encode_frame(encode_request_payload(
        api_key, 0, 7, "test", {"topics": "not a list"})))
    [(correlation_id, answer)] = read_native_responses(transport, [api_key])
    assert isinstance(answer, m.RequestErrorResponse)
    assert answer.error_code == errors.InvalidRequestError.code
