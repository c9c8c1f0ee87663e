"""AdminClient against the fake broker."""

from __future__ import annotations

import pytest
from test_client_fakebroker import FakeCluster

from kafkalite import errors
from kafkalite.client import AdminClient, NewTopic
from kafkalite.protocol.api_keys import ApiKey


@pytest.fixture
def cluster():
    c = FakeCluster(3)
    yield c
    c.close()


@pytest.fixture
def admin(cluster):
    client = AdminClient(cluster.bootstrap, retry_backoff_ms=10)
    yield client
    client.close()


def test_create_describe_delete(cluster, admin):
    assert admin.create_topics([NewTopic("a", 3, 2), NewTopic("b", 1, 1)]) == {"a": None,
                                                                             "b": None}
    assert admin.list_topics() == ["a", "b"]
    (desc,) = admin.describe_topics(["a"])
    assert desc.name == "a" and [p.partition for p in desc.partitions] == [0, 1, 2]
    assert [len(p.replicas) for p in desc.partitions] == [2, 2, 2]
    assert all(p.leader == p.replicas[0] and p.isr == p.replicas for p in desc.partitions)
    assert [d.name for d in admin.describe_topics()] == ["a", "b"]
    assert admin.delete_topics(["b"]) == {"b": None}
    assert admin.list_topics() == ["a"]
    with pytest.raises(errors.UnknownTopicOrPartitionError, match="'b'"):
        admin.describe_topics(["b"])


def test_create_with_assignment_and_configs(cluster, admin):
    admin.create_topics([NewTopic("c", replica_assignments={0: [2, 3], 1: [3, 1]},
                                  topic_configs={"retention.ms": 1000})])
    req = [r for _n, k, r in cluster.request_log if k == ApiKey.CREATE_TOPICS][-1]
    sent = req.topics[0]
    assert (sent.num_partitions, sent.replication_factor) == (-1, -1)
    assert sent.assignments == {0: [2, 3], 1: [3, 1]}
    assert sent.configs == {"retention.ms": "1000"}
    (desc,) = admin.describe_topics("c")
    assert [p.leader for p in desc.partitions] == [2, 3]


def test_create_errors(cluster, admin):
    admin.create_topics([NewTopic("x", 1, 1)])
    with pytest.raises(errors.TopicAlreadyExistsError) as info:
        admin.create_topics([NewTopic("y", 1, 1), NewTopic("x", 1, 1)])
    assert info.value.results["y"] is None
    results = admin.create_topics([NewTopic("x", 1, 1), NewTopic("z", 1, 9)],
                                  raise_on_error=False)
    assert isinstance(results["x"], errors.TopicAlreadyExistsError)
    assert isinstance(results["z"], errors.InvalidReplicationFactorError)
    assert admin.create_topics([NewTopic("v", 1, 1)], validate_only=True) == {"v": None}
    assert "v" not in admin.list_topics()


def test_client_side_validation(admin):
    with pytest.raises(errors.InvalidTopicError):
        admin.create_topics([NewTopic("bad name", 1, 1)])
    with pytest.raises(errors.InvalidTopicError):
        admin.create_topics([NewTopic("a" * 300, 1, 1)])
    with pytest.raises(errors.InvalidTopicError):
        admin.delete_topics([".."])
    with pytest.raises(errors.InvalidPartitionsError):
        admin.create_topics([NewTopic("ok", 0, 1)])
    with pytest.raises(errors.InvalidReplicationFactorError):
        admin.create_topics([NewTopic("ok", 1, 0)])
    with pytest.raises(errors.InvalidReplicaAssignmentError):
        admin.create_topics([NewTopic("ok", replica_assignments={0: [1, 1]})])
    with pytest.raises(errors.InvalidReplicaAssignmentError):
        admin.create_topics([NewTopic("ok", replica_assignments={1: [1]})])
    with pytest.raises(errors.InvalidRequestError):
        admin.create_topics([NewTopic("dup", 1, 1), NewTopic("dup", 1, 1)])


def test_delete_unknown_topic(admin):
    with pytest.raises(errors.UnknownTopicOrPartitionError):
        admin.delete_topics(["nope"])
    assert isinstance(admin.delete_topics("nope", raise_on_error=False)["nope"],
                      errors.UnknownTopicOrPartitionError)


def test_requests_go_to_the_controller_and_follow_it(cluster, admin):
    cluster.controller_id = 2
    admin.create_topics([NewTopic("t1", 1, 1)])
    nodes = [n for n, k, _r in cluster.request_log if k == ApiKey.CREATE_TOPICS]
    assert nodes == [2]
    # the controller moves to 3 but the next metadata answer still says 2 (a stale broker):
    # broker 2 answers NOT_CONTROLLER, the admin refreshes and retries on 3
    cluster.controller_id = 3
    stale = {"left": 1}
    for broker in cluster.brokers:
        original = broker.metadata

        def metadata(request, original=original):
            response = original(request)
            if stale["left"]:
                stale["left"] -= 1
                response.controller_id = 2
            return response

        broker.metadata = metadata
    admin.create_topics([NewTopic("t2", 1, 1)])
    nodes = [n for n, k, _r in cluster.request_log if k == ApiKey.CREATE_TOPICS]
    assert nodes[1:] == [2, 3]


def test_describe_cluster(cluster, admin):
    desc = admin.describe_cluster()
    assert desc.cluster_id == "fake-cluster" and desc.controller_id == 1
    assert [b.node_id for b in desc.brokers] == [1, 2, 3]
    assert desc.brokers[0].port == cluster.brokers[0].port


def test_closed_admin(cluster):
    admin = AdminClient(cluster.bootstrap)
    admin.close()
    with pytest.raises(errors.IllegalStateError):
        admin.list_topics()
    with pytest.raises(errors.ConfigError):
        AdminClient(None, zookeeper="zk:2181")
