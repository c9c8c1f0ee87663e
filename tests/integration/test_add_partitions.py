"""Adding partitions to an existing topic (Kafka's CreatePartitions), end to end: ZooKeeper's
conditional rewrite of /brokers/topics/<t>, the controller's partition-modifications watch, the
brokers' CreatePartitions, AdminClient.create_partitions and ``kafkalite topics --alter
--partitions``, against real ZooKeeper and real broker processes."""

from __future__ import annotations

import time

import pytest

from kafkalite import AdminClient, Consumer, NewPartitions, NewTopic, Producer, TopicPartition
from kafkalite import errors
from cli_tools import run, wait_for

from kafkalite.zk import ZkBadVersionError, ZkClient

pytestmark = pytest.mark.integration

WARNING = ("WARNING: If partitions are increased for a topic that has a key, the partition "
           "logic or ordering of the messages will be affected\n")


def every_broker_sees(cluster, topic, count):
    """Every live broker's metadata shows ``count`` partitions of ``topic``, each with a leader."""
    from kafkalite.protocol import messages as m
    from kafkalite.local.cluster import request

    for broker in cluster.live_brokers():
        response = request("127.0.0.1", broker.port, m.MetadataRequest(
            topics=[topic], allow_auto_topic_creation=False))
        parts = response.topics[0].partitions
        if len(parts) != count or any(p.leader < 0 for p in parts):
            return False
    return True


# --- the ZooKeeper operation -------------------------------------------------------------------

def test_zk_add_partitions_is_a_conditional_rewrite(zk_client):
    zk_client.ensure_persistent_paths()
    created = zk_client.create_topic("grow", {0: [1, 2], 1: [2, 1]})
    written = zk_client.add_partitions("grow", {2: [1, 2], 3: [2, 1]}, expected_version=0)
    assert written.zk_version == 1 and written.topic_id == created.topic_id
    got = zk_client.get_topic_assignment("grow")
    assert got.partitions == {0: (1, 2), 1: (2, 1), 2: (1, 2), 3: (2, 1)}
    assert got.topic_id == created.topic_id and got.zk_version == 1
    # the decision was made on version 0: someone else wrote since
    with pytest.raises(ZkBadVersionError):
        zk_client.add_partitions("grow", {4: [1, 2]}, expected_version=0)
    with pytest.raises(errors.InvalidPartitionsError, match="numbered 4"):
        zk_client.add_partitions("grow", {5: [1, 2]})           # a gap
    with pytest.raises(errors.InvalidPartitionsError):
        zk_client.add_partitions("grow", {3: [1, 2]})           # an existing partition
    with pytest.raises(errors.InvalidPartitionsError):
        zk_client.add_partitions("grow", {})
    with pytest.raises(errors.UnknownTopicOrPartitionError):
        zk_client.add_partitions("missing", {0: [1]})
    assert zk_client.get_topic_assignment("grow").zk_version == 1
    assert zk_client.get_partition_reassignments() == {}


# --- the whole path, through the CLI and the admin client --------------------------------------

@pytest.fixture
def three_brokers(kafkalite_cluster_factory):
    return kafkalite_cluster_factory(3)


def test_topics_alter_partitions(three_brokers, zk_connect, capsys):
    cluster = three_brokers
    conn = ("--bootstrap-server", cluster.bootstrap_servers, "--zookeeper", zk_connect)
    code, out, err = run(capsys, "topics", "--create", "--topic", "grow", "--partitions", "2",
                         "--replication-factor", "2", *conn)
    assert (code, out, err) == (0, "Created topic grow.\n", "")
    wait_for(lambda: every_broker_sees(cluster, "grow", 2), what="the topic on every broker")

    code, out, err = run(capsys, "topics", "--alter", "--topic", "grow", "--partitions", "5",
                         *conn)
    assert (code, out, err) == (0, WARNING + "Adding partitions succeeded!\n", "")
    wait_for(lambda: every_broker_sees(cluster, "grow", 5), what="5 partitions on every broker")

    code, out, _ = run(capsys, "topics", "--describe", "--topic", "grow", *conn)
    assert code == 0
    lines = out.splitlines()
    assert "\tPartitionCount: 5\tReplicationFactor: 2\t" in lines[0]
    assert len(lines) == 6
    leaders = []
    for p, line in enumerate(lines[1:]):
        fields = dict(item.split(": ", 1) for item in line.strip().split("\t"))
        replicas = [int(b) for b in fields["Replicas"].split(",")]
        assert fields["Partition"] == str(p) and len(set(replicas)) == 2
        assert int(fields["Leader"]) == replicas[0]          # the preferred replica leads
        assert sorted(int(b) for b in fields["Isr"].split(",")) == sorted(replicas)
        leaders.append(replicas[0])
    assert set(leaders) == {1, 2, 3}                          # spread over the brokers

    # the new partitions take records like any other
    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all") as producer:
        sent = [producer.send("grow", value=b"v%d" % i, key=b"k", partition=4).get(timeout=30)
                for i in range(3)]
    assert [(r.partition, r.offset) for r in sent] == [(4, 0), (4, 1), (4, 2)]
    consumer = Consumer(bootstrap_servers=cluster.bootstrap_servers,
                        auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition("grow", 4)])
        records = []
        deadline = time.monotonic() + 30
        while len(records) < 3 and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
    finally:
        consumer.close()
    assert [(r.partition, r.offset, r.value) for r in records] == [
        (4, 0, b"v0"), (4, 1, b"v1"), (4, 2, b"v2")]

    # fewer, or as many: one clear error line, nothing changes
    code, out, err = run(capsys, "topics", "--alter", "--topic", "grow", "--partitions", "3",
                         *conn)
    assert code == 1 and out == ""
    assert err == ("error: [INVALID_PARTITIONS] topic 'grow': Topic currently has 5 partitions, "
                   "which is higher than the requested 3. The number of partitions can only be "
                   "increased.\n")
    code, _, err = run(capsys, "topics", "--alter", "--topic", "grow", "--partitions", "5",
                       *conn)
    assert code == 1 and "Topic already has 5 partitions." in err
    code, _, err = run(capsys, "topics", "--alter", "--topic", "nope", "--partitions", "5",
                       *conn)
    assert code == 1 and "topic 'nope' does not exist" in err
    code, out, err = run(capsys, "topics", "--alter", "--topic", "nope", "--partitions", "5",
                         "--if-exists", *conn)
    assert (code, out, err) == (0, "", "")

    # brokers alone suffice; an explicit assignment for the new partition (Kafka's style:
    # every partition listed, the entries past the existing ones used)
    code, out, err = run(capsys, "topics", "--alter", "--topic", "grow", "--partitions", "6",
                         "--replica-assignment", "1:2,2:3,3:1,1:2,2:3,3:1",
                         "--bootstrap-server", cluster.bootstrap_servers)
    assert (code, err) == (0, "") and out.endswith("Adding partitions succeeded!\n")
    wait_for(lambda: every_broker_sees(cluster, "grow", 6), what="6 partitions")
    code, _, err = run(capsys, "topics", "--alter", "--topic", "grow", "--partitions", "7",
                       "--replica-assignment", "1:4", *conn)
    assert code == 1 and "Unknown broker(s) in replica assignment: 4" in err
    assert cluster.partition_metadata("grow", 5).replicas == [3, 1]
    assert cluster.wait_for_leader("grow", 5) == 3


def test_admin_client_create_partitions(three_brokers, zk_connect):
    cluster = three_brokers
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("a", 1, 3), NewTopic("b", 2, 1)], timeout_ms=30000)
        # validate_only: checked, nothing written
        assert admin.create_partitions({"a": NewPartitions(4)}, validate_only=True) == {"a": None}
        assert len(admin.describe_topics(["a"])[0].partitions) == 1
        results = admin.create_partitions(
            {"a": NewPartitions(3, [[3, 1, 2], [2, 3, 1]]), "b": 1, "missing": 2},
            timeout_ms=30000, raise_on_error=False)
        assert results["a"] is None
        assert isinstance(results["b"], errors.InvalidPartitionsError)
        assert isinstance(results["missing"], errors.UnknownTopicOrPartitionError)
        with pytest.raises(errors.InvalidReplicaAssignmentError, match="Inconsistent"):
            admin.create_partitions({"a": NewPartitions(4, [[1]])})
        with pytest.raises(errors.InvalidReplicaAssignmentError, match="but 2 assignments"):
            admin.create_partitions({"b": NewPartitions(3, [[1], [2]])})
        # the answer came once the controller's broker knew the new leaders; the broker asked
        # next may not have heard yet (Kafka answers Metadata from the receiving broker's view
        # too): wait until every broker's metadata shows them
        wait_for(lambda: every_broker_sees(cluster, "a", 3), what="3 partitions of a everywhere")
        [desc] = admin.describe_topics(["a"])
    assert [(p.partition, p.replicas) for p in desc.partitions] == [
        (0, desc.partitions[0].replicas), (1, [3, 1, 2]), (2, [2, 3, 1])]
    assert {cluster.wait_for_leader("a", 1), cluster.wait_for_leader("a", 2)} == {3, 2}

    # after a controller failover: the new controller loaded them from ZooKeeper and adds more
    old = cluster.controller_id()
    with AdminClient(cluster.bootstrap_servers) as admin:
        [b_before] = admin.describe_topics(["b"])
    cluster.kill(old)
    wait_for(lambda: cluster.controller_id() not in (-1, old), what="a new controller")
    with AdminClient(",".join(b.address for b in cluster.live_brokers())) as admin:
        # replication factor 3 with 2 live brokers: refused, as Kafka does
        with pytest.raises(errors.InvalidReplicationFactorError,
                           match="larger than available brokers: 2"):
            admin.create_partitions({"a": NewPartitions(4)})
        # Kafka waits for a leader of every partition of the topic, old ones too: a partition of
        # b that lived on the killed broker alone has none, and the answer is REQUEST_TIMED_OUT
        # (the partitions were added all the same)
        offline = [p.partition for p in b_before.partitions if p.replicas == [old]]
        grown = admin.create_partitions({"b": NewPartitions(4)}, timeout_ms=3000 if offline
                                        else 30000, raise_on_error=False)
        if offline:
            assert isinstance(grown["b"], errors.RequestTimedOutError), (offline, grown)
        else:
            assert grown["b"] is None, grown

        def settled():
            a, b = admin.describe_topics(["a", "b"])
            return (len(a.partitions) == 3 and len(b.partitions) == 4
                    and all(p.leader in set(p.replicas) - {old} for p in a.partitions)
                    and all(p.replicas != [old] and p.leader == p.replicas[0]
                            for p in b.partitions[2:]))
        wait_for(settled, what="a led by live brokers, b's new partitions on live brokers")


def test_partitions_added_to_a_topic_being_deleted_are_undone(kafkalite_cluster_factory,
                                                              zk_connect):
    """A deletion waits while a replica's broker is down; partitions written into the topic
    meanwhile are not created: the controller writes the assignment back (Kafka's
    restorePartitionReplicaAssignment)."""
    cluster = kafkalite_cluster_factory(2)
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("doomed", replica_assignments={0: [1, 2]})],
                            timeout_ms=30000)
    zk = ZkClient(zk_connect).start()
    try:
        cluster.terminate(2)
        wait_for(lambda: 2 not in zk.get_broker_ids(), what="broker 2 to leave")
        wait_for(lambda: cluster.controller_id() == 1, what="broker 1 as controller")
        zk.mark_topic_for_deletion("doomed")
        time.sleep(1.0)                        # the controller saw it: the deletion waits
        assert zk.get_topic_assignment("doomed") is not None
        # the brokers refuse to add partitions to it...
        with AdminClient(cluster.brokers[1].address) as admin:
            with pytest.raises(errors.InvalidTopicError, match="queued for deletion"):
                admin.create_partitions({"doomed": 2})
        # ...and the controller undoes a direct write
        zk.add_partitions("doomed", {1: [1, 2]})

        def restored():
            assignment = zk.get_topic_assignment("doomed")
            return assignment is not None and list(assignment.partitions) == [0]
        wait_for(restored, what="the assignment to be restored")
        assert zk.get_partition_state("doomed", 1) is None
        # once broker 2 is back the deletion completes
        cluster.restart(2)
        wait_for(lambda: zk.get_topic_assignment("doomed") is None, timeout_s=60,
                 what="the deletion to finish")
    finally:
        zk.stop()
