"""The broker's CreatePartitions (kafkalite.server.partition_admin, and its handler in
kafkalite.server.topic_apis) against a fake ZooKeeper bridge,
a real metadata cache and a Clock: validation, the conditional write, the wait for leaders.
ZooKeeper decides, as in Kafka's ZkAdminManager: the cache may lag behind it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.server.metadata_cache import MetadataCache
from kafkalite.server.metadata_waits import MetadataWaits
from kafkalite.server.partition_admin import create_partitions
from kafkalite.server.request_context import NATIVE, RequestContext
from kafkalite.server.topic_apis import handle_create_partitions
from kafkalite.zk.errors import ZkBadVersionError
from zk_schema import TopicAssignment


class FakeTzk:
    def __init__(self, assignments, registered=(1, 2, 3)):
        self.assignments = {t: TopicAssignment({p: tuple(r) for p, r in a.items()}, "id-" + t,
                                               zk_version=0)
                            for t, a in assignments.items()}
        self.marked: list[str] = []
        self.reassigning: dict = {}
        self.writes: list = []
        self.conflicts = 0          # how many writes fail with a bad version first
        self.registered = list(registered)      # /brokers/ids

    def get_broker_ids(self):
        return defer.succeed(sorted(self.registered))

    def topics_marked_for_deletion(self):
        return defer.succeed(list(self.marked))

    def get_partition_reassignments(self):
        return defer.succeed(dict(self.reassigning))

    def get_topic_assignment(self, topic):
        return defer.succeed(self.assignments.get(topic))

    def add_partitions(self, topic, additions, expected_version):
        self.writes.append((topic, dict(additions), expected_version))
        if self.conflicts:
            self.conflicts -= 1
            current = self.assignments[topic]
            self.assignments[topic] = TopicAssignment(current.partitions, current.topic_id,
                                                      zk_version=current.zk_version + 1)
            return defer.fail(ZkBadVersionError("changed"))
        current = self.assignments[topic]
        merged = {**current.partitions, **{p: tuple(r) for p, r in additions.items()}}
        self.assignments[topic] = TopicAssignment(merged, current.topic_id,
                                                  zk_version=current.zk_version + 1)
        return defer.succeed(self.assignments[topic])


class FakeBroker:
    def __init__(self, assignments, live=(1, 2, 3)):
        self.clock = Clock()
        self.deferred_zk = FakeTzk(assignments, live)
        self.metadata_cache = MetadataCache(1)
        self.controller = SimpleNamespace(is_active=True)    # only the controller serves it
        self.live = list(live)
        self.metadata_waits = MetadataWaits(self.clock)
        self.publish({t: {p: (r, r[0]) for p, r in a.items()} for t, a in assignments.items()})

    def publish(self, topics):
        """An UpdateMetadata as the controller sends it: {topic: {p: (replicas, leader)}}."""
        states = [m.UpdateMetadataPartitionState(t, p, 1, leader, 0, list(replicas), 0,
                                                 list(replicas), [])
                  for t, parts in topics.items() for p, (replicas, leader) in parts.items()]
        self.metadata_cache.update(m.UpdateMetadataRequest(
            controller_id=1, controller_epoch=1, partition_states=states,
            live_brokers=[m.UpdateMetadataBroker(b, "h", 9000 + b) for b in self.live]))
        self.metadata_waits.check()


def result_of(d):
    out = []
    d.addBoth(out.append)
    assert out, "the Deferred has not fired"
    return out[0]


@pytest.fixture
def broker():
    return FakeBroker({"t": {0: [1, 2], 1: [2, 3]}})


def test_adds_partitions_and_waits_for_their_leaders(broker):
    d = create_partitions(broker, "t", 4, None, False, 5000)
    assert not d.called                       # written, waiting for the controller
    assert broker.deferred_zk.writes == [("t", {2: [3, 1], 3: [1, 3]}, 0)]
    broker.publish({"t": {2: ([3, 1], 3)}})
    assert not d.called                       # partition 3 has no leader yet
    broker.publish({"t": {3: ([1, 3], 1)}})
    assert result_of(d) == (0, None)


def test_times_out_with_request_timed_out_and_no_message(broker):
    d = create_partitions(broker, "t", 3, None, False, 2000)
    broker.clock.advance(2.1)
    assert result_of(d) == (errors.RequestTimedOutError.code, None)      # Kafka's answer


def test_explicit_assignments_and_no_wait(broker):
    # Kafka: a timeout of 0 writes the partitions and answers REQUEST_TIMED_OUT at once
    d = create_partitions(broker, "t", 3, [[3, 2]], False, 0)
    assert result_of(d) == (errors.RequestTimedOutError.code, None)
    assert broker.deferred_zk.writes == [("t", {2: [3, 2]}, 0)]


def test_validate_only_writes_nothing(broker):
    assert result_of(create_partitions(broker, "t", 5, None, True, 5000)) == (0, None)
    assert broker.deferred_zk.writes == []


def test_a_concurrent_change_is_reread_and_decided_again(broker):
    broker.deferred_zk.conflicts = 1
    d = create_partitions(broker, "t", 3, None, False, 5000)
    broker.publish({"t": {2: ([3, 1], 3)}})
    assert result_of(d) == (0, None)
    assert [w[2] for w in broker.deferred_zk.writes] == [0, 1]


@pytest.mark.parametrize("topic,count,assignments,setup,code,text", [
    ("t", 2, None, None, 37, "Topic already has 2 partitions."),
    ("t", 1, None, None, 37, "which is higher than the requested 1"),
    ("missing", 3, None, None, 3, "The topic 'missing' does not exist."),
    ("bad name!", 3, None, None, 3, "The topic 'bad name!' does not exist."),
    ("t", 3, [[1, 9]], None, 39, "Unknown broker(s) in replica assignment: 9."),
    ("t", 4, [[1, 2]], None, 39, "by 2 but 1 assignments"),
    ("t", 3, [[1, 2, 3]], None, 39, "Inconsistent replication factor"),
    ("t", 3, [["x"]], None, 42, "lists of broker ids"),
    ("t", 3, None, "marked", 17, "The topic is queued for deletion."),
    ("t", 3, None, "reassigning", 60, "reassignment is in progress"),
    ("t", 3, None, "moving-by-api", 60, "reassignment is in progress for the topic 't'"),
    ("t", 3, None, "two-brokers", 38, "Replication factor: 2 larger than available brokers: 1."),
])
def test_refusals(topic, count, assignments, setup, code, text):
    broker = FakeBroker({"t": {0: [1, 2], 1: [2, 3]}}, live=(1,) if setup == "two-brokers"
                        else (1, 2, 3))
    if setup == "marked":
        broker.deferred_zk.marked = ["t"]
    if setup == "reassigning":
        broker.deferred_zk.reassigning = {("t", 1): (3, 1)}
    if setup == "moving-by-api":      # KIP-455: the move is in the topic znode only
        broker.deferred_zk.assignments["t"] = TopicAssignment(
            {0: (1, 2), 1: (1, 2, 3)}, "id-t", adding_replicas={1: (1,)},
            removing_replicas={1: (3,)}, zk_version=0)
    got_code, message = result_of(create_partitions(broker, topic, count, assignments, False,
                                                    5000))
    assert (got_code, text in (message or "")) == (code, True), message
    assert broker.deferred_zk.writes == []


def test_zookeeper_is_the_authority_over_a_stale_cache(broker):
    # someone else grew the topic to 3; this broker's cache still shows 2
    broker.deferred_zk.assignments["t"] = TopicAssignment({0: (1, 2), 1: (2, 3), 2: (3, 1)}, "id-t",
                                                  zk_version=1)
    code, message = result_of(create_partitions(broker, "t", 3, None, False, 0))
    assert code == 37 and "already has 3" in message


def test_unexpected_failures_become_an_error_code(broker):
    broker.deferred_zk.get_topic_assignment = lambda topic: defer.fail(RuntimeError("boom"))
    code, message = result_of(create_partitions(broker, "t", 3, None, False, 0))
    assert code == errors.UnknownServerError.code and "boom" in message


def test_handler_answers_every_topic_and_refuses_duplicates(broker):
    ctx = RequestContext(api_key=37, api_version=0, correlation_id=1, protocol=NATIVE)
    request = m.CreatePartitionsRequest(topics=[
        m.CreatePartitionsTopic("t", 3, None), m.CreatePartitionsTopic("x", 2, None),
        m.CreatePartitionsTopic("x", 3, None), m.CreatePartitionsTopic("nope", 2, None)],
        timeout_ms=0)
    response = result_of(handle_create_partitions(broker, ctx, request))
    assert [(r.name, r.error_code) for r in response.results] == [("t", 7), ("x", 42),
                                                                   ("nope", 3)]
    assert response.results[1].error_message == "Duplicate topic in request."


# --- ZooKeeper decides, not the metadata cache (Kafka's ZkAdminManager.createPartitions) --------

def test_a_topic_the_cache_does_not_know_yet_is_grown_from_zookeeper(broker):
    """CreateTopics wrote the znode; the controller has not sent UpdateMetadata yet."""
    broker.deferred_zk.assignments["new"] = TopicAssignment({0: (2, 3)}, "id-new", zk_version=0)
    assert not broker.metadata_cache.contains("new")
    d = create_partitions(broker, "new", 2, None, False, 5000)
    assert broker.deferred_zk.writes == [("new", {1: [3, 2]}, 0)]
    broker.publish({"new": {1: ([3, 2], 3)}})
    assert not d.called                       # partition 0 is not in the cache yet either
    broker.publish({"new": {0: ([2, 3], 2)}})
    assert result_of(d) == (0, None)


def test_a_registered_broker_the_cache_has_not_seen_may_be_named():
    broker = FakeBroker({"t": {0: [1, 2]}}, live=(1, 2))
    broker.deferred_zk.registered.append(4)   # registered in ZooKeeper a moment ago
    d = create_partitions(broker, "t", 2, [[4, 1]], True, 5000)
    assert result_of(d) == (0, None)
    d = create_partitions(broker, "t", 2, [[5, 1]], True, 5000)
    assert result_of(d) == (39, "Unknown broker(s) in replica assignment: 5.")


def test_an_existing_partition_without_a_leader_is_waited_for_too(broker):
    broker.publish({"t": {1: ([2, 3], -1)}})  # offline
    d = create_partitions(broker, "t", 3, None, False, 2000)
    broker.publish({"t": {2: ([3, 1], 3)}})
    assert not d.called
    broker.clock.advance(2.1)
    assert result_of(d) == (errors.RequestTimedOutError.code, None)
