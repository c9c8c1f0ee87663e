"""kafkalite.zk.ZkClient against a real ZooKeeper (one per session, a fresh chroot per test)."""

from __future__ import annotations

import queue
import threading
import time

import pytest

from kafkalite.errors import (
    NonEmptyGroupError, NotControllerError, TopicAlreadyExistsError, UnknownTopicOrPartitionError,
    ZooKeeperError,
)
from kafkalite.zk import (
    ControllerMovedError, ZkBadVersionError, ZkClient, ZkClientClosedError, ZkCreate, ZkDelete,
    ZkNodeExistsError, ZkNoNodeError, ZkSetData, ZkState,
)
from kafkalite.zk.twisted_bridge import TwistedZk
from zk_schema import (
    CONTROLLER_EPOCH_PATH, PERSISTENT_PATHS, BrokerRegistration, ConsumerRegistration,
    PartitionState, TopicAssignment, config, topic_path,
)
from zk_schema.topics import partitions_path

pytestmark = pytest.mark.integration


def wait_until(predicate, timeout=15.0, interval=0.02, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture
def new_client(zk_connect):
    """Factory of extra clients on the test's chroot (all stopped at the end)."""
    made = []

    def make(session_timeout_ms=6000, reactor=None):
        client = ZkClient(zk_connect, session_timeout_ms=session_timeout_ms, reactor=reactor)
        made.append(client)
        return client.start()

    yield make
    for client in made:
        client.stop()


def with_topic(zk, topic="t", partitions=None):
    zk.ensure_persistent_paths()
    zk.create_topic(topic, partitions or {0: [1, 2], 1: [2, 1]})
    return topic


# ----------------------------------------------------------------------------- basics & paths

def test_chroot_is_created_and_persistent_paths(zookeeper, zk_connect, zk_chroot):
    client = ZkClient(zk_connect + "/nested/deeper").start()
    try:
        client.ensure_persistent_paths()
        client.ensure_persistent_paths()  # idempotent
        assert all(client.exists(p) for p in PERSISTENT_PATHS)
    finally:
        client.stop()
    with ZkClient(zookeeper.connect_string) as root:
        assert root.exists(f"{zk_chroot}/nested/deeper/brokers/ids")


def test_stopped_client_raises_kafkalite_errors(zk_connect):
    client = ZkClient(zk_connect)
    with pytest.raises(ZkClientClosedError):
        client.get_broker_ids()
    client.start()
    client.stop()
    client.stop()  # idempotent
    with pytest.raises(ZooKeeperError):
        client.list_topics()


def test_unreachable_server_times_out_with_a_kafkalite_error():
    from kafkalite.local.ports import free_port

    client = ZkClient(f"127.0.0.1:{free_port()}", connection_timeout_s=1.0)
    with pytest.raises(ZooKeeperError):
        client.start()


def test_cluster_id_get_or_create(zk_client, new_client):
    assert zk_client.get_cluster_id() is None
    cid = zk_client.get_or_create_cluster_id()
    assert len(cid) == 22
    assert new_client().get_or_create_cluster_id() == cid
    assert zk_client.get_cluster_id() == cid


def test_raw_operations_and_multi(zk_client):
    assert zk_client.create("/a", b"1") == "/a"
    assert zk_client.set_data("/a", b"2", version=0) == 1
    with pytest.raises(ZkBadVersionError):
        zk_client.set_data("/a", b"3", version=0)
    with pytest.raises(ZkNodeExistsError):
        zk_client.create("/a")
    with pytest.raises(ZkNoNodeError):
        zk_client.set_data("/missing", b"")
    assert zk_client.get_data("/missing") is None and zk_client.get_children("/missing") == []
    seq = zk_client.create("/s/n_", b"", sequence=True, makepath=True)
    assert seq.startswith("/s/n_") and len(seq) == len("/s/n_") + 10
    assert zk_client.multi([ZkCreate("/b", b"x"), ZkSetData("/a", b"4", 1), ZkDelete(seq)]) == \
        ["/b", 2, True]
    with pytest.raises(ZkNodeExistsError) as err:
        zk_client.multi([ZkSetData("/a", b"5"), ZkCreate("/b")])
    assert err.value.failed_index == 1
    assert zk_client.get_data("/a") == (b"4", 2)  # the whole transaction rolled back
    assert zk_client.delete("/a") is True and zk_client.delete("/a") is False


# ------------------------------------------------------------------------------------ brokers

def test_register_and_read_brokers(zk_client, new_client):
    zk_client.ensure_persistent_paths()
    b1, b2 = new_client(), new_client()
    e1 = b1.register_broker(BrokerRegistration.plaintext(1, "h1", 9092, rack="r1"))
    e2 = b2.register_broker(BrokerRegistration.plaintext(2, "h2", 9093))
    assert e2 > e1  # broker epochs are czxids
    assert b1.register_broker(BrokerRegistration.plaintext(1, "h1", 9092, rack="r1")) == e1
    assert zk_client.get_broker_ids() == zk_client.list_broker_ids() == [1, 2]
    brokers = zk_client.get_brokers()
    assert brokers[1].endpoint() == ("h1", 9092) and brokers[1].rack == "r1"
    assert brokers[2].broker_epoch == e2 and brokers[2].zk_version == 0
    assert zk_client.get_broker(3) is None
    with pytest.raises(ZkNodeExistsError, match="another ZooKeeper session"):
        zk_client.register_broker(BrokerRegistration.plaintext(1, "h9", 1))
    b2.stop()
    wait_until(lambda: zk_client.get_broker_ids() == [1], what="broker 2 to leave")
    assert zk_client.next_broker_sequence_id() < zk_client.next_broker_sequence_id()


def test_expired_broker_session_drops_registration(zk_client, new_client, zk_expire):
    zk_client.ensure_persistent_paths()
    broker = new_client()
    seen = queue.Queue()
    zk_client.watch_children("/brokers/ids", seen.put)
    assert seen.get(timeout=5) == []
    broker.register_broker(BrokerRegistration.plaintext(7, "h", 1))
    assert seen.get(timeout=5) == ["7"]
    assert zk_expire(broker)
    assert seen.get(timeout=10) == []
    assert broker.get_broker(7) is None  # the broker's own client works again (new session)


# ------------------------------------------------------------------------------------- topics

def test_create_topic(zk_client, new_client):
    zk_client.ensure_persistent_paths()
    created = zk_client.create_topic("orders", {0: [1, 2], 1: [2, 3]}, {"retention.ms": "1000"})
    assert created.topic_id and created.zk_version == 0
    got = zk_client.get_topic_assignment("orders")
    assert got.partitions == {0: (1, 2), 1: (2, 3)} and got.topic_id == created.topic_id
    assert zk_client.get_topic_config("orders") == {"retention.ms": "1000"}
    assert zk_client.list_topics() == ["orders"] and zk_client.topic_exists("orders")
    with pytest.raises(TopicAlreadyExistsError):
        new_client().create_topic("orders", {0: [1]})
    assert zk_client.get_topic_assignment("nope") is None
    zk_client.create_topic("b", TopicAssignment({0: (1,)}, topic_id="fixed"))
    assert set(zk_client.get_topic_assignments()) == {"b", "orders"}
    assert zk_client.get_topic_assignments(["b"])["b"].topic_id == "fixed"
    assert zk_client.get_topic_config("b") == {}


def test_concurrent_topic_creation_has_one_winner(zk_client, new_client):
    zk_client.ensure_persistent_paths()
    clients = [new_client() for _ in range(5)]
    barrier = threading.Barrier(len(clients))
    outcomes = queue.Queue()

    def create(c):
        barrier.wait()
        try:
            c.create_topic("race", {0: [1]})
            outcomes.put("created")
        except TopicAlreadyExistsError:
            outcomes.put("exists")

    threads = [threading.Thread(target=create, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    results = sorted(outcomes.get_nowait() for _ in clients)
    assert results == ["created"] + ["exists"] * 4


def test_topic_config_change_is_announced(zk_client):
    topic = with_topic(zk_client)
    zk_client.set_topic_config(topic, {"cleanup.policy": "compact"})
    assert zk_client.get_topic_config(topic) == {"cleanup.policy": "compact"}
    notes = zk_client.get_config_change_notifications()
    assert [n.entity_path for n in notes.values()] == ["topics/t"]
    assert all(name.startswith(config.CONFIG_CHANGE_PREFIX) for name in notes)


# ---------------------------------------------------------------------------- partition state

def test_conditional_partition_state_write(zk_client, new_client):
    topic = with_topic(zk_client)
    state = PartitionState(leader=1, leader_epoch=0, controller_epoch=1, isr=(1, 2))
    assert zk_client.create_partition_state(topic, 0, state) == 0
    with pytest.raises(ZkNodeExistsError):
        zk_client.create_partition_state(topic, 0, state)
    read = zk_client.get_partition_state(topic, 0)
    assert read == PartitionState(1, 0, 1, (1, 2), zk_version=0)

    shrunk = PartitionState(1, 0, 1, (1,))
    assert zk_client.set_partition_state(topic, 0, shrunk, expected_zk_version=0) == 1
    other = new_client()
    with pytest.raises(ZkBadVersionError, match="t-0"):  # a writer holding the stale version 0
        other.set_partition_state(topic, 0, PartitionState(2, 1, 1, (2,)), expected_zk_version=0)
    assert zk_client.get_partition_state(topic, 0) == PartitionState(1, 0, 1, (1,), zk_version=1)
    assert zk_client.get_partition_state(topic, 9) is None


def test_bulk_partition_states(zk_client):
    topic = with_topic(zk_client)
    for p in (0, 1):
        zk_client.create_partition_state(topic, p, PartitionState(1, 0, 1, (1, 2)))
    states = zk_client.get_partition_states([(topic, 0), (topic, 1), (topic, 5)])
    assert set(states) == {(topic, 0), (topic, 1)}
    result = zk_client.set_partition_states({
        (topic, 0): (PartitionState(2, 1, 1, (2,)), 0),
        (topic, 1): (PartitionState(2, 1, 1, (2,)), 3),  # stale
    })
    assert result[(topic, 0)] == 1
    assert isinstance(result[(topic, 1)], ZkBadVersionError)


def test_batched_partition_state_creation(zk_client, new_client):
    """Many topics' states in one pipelined batch: parents made along, a topic's shared
    ``partitions`` znode in its first transaction; an existing state is refused alone; a
    deposed controller creates nothing."""
    zk_client.ensure_persistent_paths()
    for topic in ("a", "b"):
        zk_client.create_topic(topic, {p: [1, 2] for p in range(20)})
    zk_client.create_partition_state("b", 7, PartitionState(2, 4, 1, (2,)))
    controller = new_client()
    version = controller.try_elect_controller(1).zk_version
    wanted = {(t, p): PartitionState(1, 0, 1, (1, 2)) for t in ("a", "b") for p in range(20)}

    out = controller.create_partition_states(wanted, controller_epoch_zk_version=version)

    assert isinstance(out.pop(("b", 7)), ZkNodeExistsError)
    assert out == {tp: 0 for tp in wanted if tp != ("b", 7)}
    states = zk_client.get_partition_states(list(wanted))
    assert states[("b", 7)].leader_epoch == 4
    assert all(states[tp] == PartitionState(1, 0, 1, (1, 2), zk_version=0) for tp in out)
    zk_client.create_topic("c", {0: [1], 1: [1]})
    stale = {("c", p): PartitionState(1, 0, 1, (1,)) for p in (0, 1)}
    out = controller.create_partition_states(stale, controller_epoch_zk_version=version - 1)
    assert all(isinstance(e, ControllerMovedError) for e in out.values())
    assert not zk_client.exists(partitions_path("c"))


# --------------------------------------------------------------------------------- controller

def test_controller_election_race_has_exactly_one_winner(zk_client, new_client):
    zk_client.ensure_persistent_paths()
    assert zk_client.get_controller_epoch() is None  # created by the first election
    contenders = {broker_id: new_client() for broker_id in range(1, 6)}
    barrier = threading.Barrier(len(contenders))
    results: dict[int, object] = {}

    def elect(broker_id, client):
        barrier.wait()
        results[broker_id] = client.try_elect_controller(broker_id)

    threads = [threading.Thread(target=elect, args=item) for item in contenders.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    winners = {b: r for b, r in results.items() if r is not None}
    assert len(results) == 5 and len(winners) == 1
    (winner, epoch), = winners.items()
    assert epoch.epoch == 1
    assert zk_client.get_controller_id() == winner
    assert zk_client.get_controller_epoch() == epoch

    # the winner goes away: the next election bumps the epoch again
    contenders[winner].stop()
    wait_until(lambda: zk_client.get_controller() is None, what="/controller to vanish")
    survivor = next(b for b in contenders if b != winner)
    second = contenders[survivor].try_elect_controller(survivor)
    assert second.epoch == 2 and second.zk_version == epoch.zk_version + 1
    assert contenders[survivor].try_elect_controller(survivor) == second  # already ours
    loser = next(b for b in contenders if b not in (winner, survivor))
    assert contenders[loser].try_elect_controller(loser) is None


def test_fenced_write_fails_after_another_controller_bumped_the_epoch(zk_client, new_client,
                                                                      zk_expire):
    topic = with_topic(zk_client)
    old, new = new_client(), new_client()
    old_epoch = old.try_elect_controller(1)
    assert old_epoch.epoch == 1
    old.create_partition_state(topic, 0, PartitionState(1, 0, 1, (1, 2)),
                               controller_epoch_zk_version=old_epoch.zk_version)
    assert old.set_partition_state(topic, 0, PartitionState(1, 1, 1, (1,)), 0,
                                   controller_epoch_zk_version=old_epoch.zk_version) == 1

    assert zk_expire(old)  # the old controller's session dies: /controller vanishes
    wait_until(lambda: zk_client.get_controller() is None, what="/controller to vanish")
    new_epoch = new.try_elect_controller(2)
    assert new_epoch.epoch == 2

    stale = PartitionState(1, 2, 1, (1, 2))
    with pytest.raises(ControllerMovedError) as err:
        old.set_partition_state(topic, 0, stale, 1,
                                controller_epoch_zk_version=old_epoch.zk_version)
    assert isinstance(err.value, NotControllerError) and isinstance(err.value, ZooKeeperError)
    with pytest.raises(ControllerMovedError):
        old.fenced_multi(old_epoch.zk_version, [ZkCreate("/written-by-zombie")])
    with pytest.raises(ControllerMovedError):
        old.delete_topic_znodes(topic, controller_epoch_zk_version=old_epoch.zk_version)
    bulk = old.set_partition_states({(topic, 0): (stale, 1)},
                                    controller_epoch_zk_version=old_epoch.zk_version)
    assert isinstance(bulk[(topic, 0)], ControllerMovedError)
    assert not zk_client.exists("/written-by-zombie") and zk_client.topic_exists(topic)
    assert zk_client.get_partition_state(topic, 0).leader_epoch == 1  # untouched

    # the new controller writes fine, and can resign
    assert new.set_partition_state(topic, 0, PartitionState(2, 2, 2, (2,)), 1,
                                   controller_epoch_zk_version=new_epoch.zk_version) == 2
    assert old.resign_controller(old_epoch.zk_version) is False
    assert new.resign_controller(new_epoch.zk_version) is True
    assert zk_client.get_controller() is None
    assert zk_client.get_data(CONTROLLER_EPOCH_PATH)[0] == b"2"


def test_deposed_controller_changes_no_admin_request_and_creates_no_partition(
        zk_client, new_client, zk_expire):
    """Every write a controller makes carries the /controller_epoch check: after another broker
    took over, the old one can neither finish admin requests nor create partition states (not
    even their parent znodes)."""
    topic = with_topic(zk_client)
    old, new = new_client(), new_client()
    old_epoch = old.try_elect_controller(1)
    zk_client.create_partition_reassignment({(topic, 0): [2, 1]})
    zk_client.create_preferred_replica_election([(topic, 0)])
    zk_client.mark_topic_for_deletion(topic)
    assert zk_expire(old)
    wait_until(lambda: zk_client.get_controller() is None, what="/controller to vanish")
    assert new.try_elect_controller(2).epoch == old_epoch.epoch + 1

    stale = old_epoch.zk_version
    for write in (lambda: old.delete_preferred_replica_election(stale),
                  lambda: old.delete_partition_reassignment(stale),
                  lambda: old.update_partition_reassignment({(topic, 1): (1,)}, stale),
                  lambda: old.remove_topic_deletion_marker(topic, stale),
                  lambda: old.delete_isr_change_notifications(["isr_change_0"], stale),
                  lambda: old.create_partition_state(topic, 1, PartitionState(1, 0, 1, (1,)),
                                                     controller_epoch_zk_version=stale)):
        with pytest.raises(ControllerMovedError):
            write()
    assert zk_client.preferred_replica_election_pending()
    assert zk_client.get_partition_reassignments() == {(topic, 0): (2, 1)}
    assert zk_client.topics_marked_for_deletion() == [topic]
    assert not zk_client.exists(partitions_path(topic))


def test_admin_requests_to_the_controller(zk_client, new_client):
    topic = with_topic(zk_client)
    assert zk_client.get_partition_reassignment() is None
    assert not zk_client.preferred_replica_election_pending()
    zk_client.create_partition_reassignment({(topic, 0): [2, 1], (topic, 1): [1]})
    with pytest.raises(ZkNodeExistsError):                     # one at a time, as in Kafka
        zk_client.create_partition_reassignment({(topic, 0): [1]})
    zk_client.create_preferred_replica_election([(topic, 1)])
    with pytest.raises(ZkNodeExistsError):
        zk_client.create_preferred_replica_election([(topic, 0)])
    assert zk_client.preferred_replica_election_pending()

    controller = new_client()
    version = controller.try_elect_controller(1).zk_version
    assert controller.update_partition_reassignment({(topic, 1): (1,)}, version)
    assert zk_client.get_partition_reassignment().partitions == {(topic, 1): (1,)}
    assert controller.update_partition_reassignment({}, version)     # none left: deleted
    assert zk_client.get_partition_reassignment() is None
    assert controller.update_partition_reassignment({}, version) is False
    assert controller.delete_preferred_replica_election(version)
    assert not zk_client.preferred_replica_election_pending()
    assert controller.delete_preferred_replica_election(version) is False
    # a fenced partition state creation brings its parents along
    assert controller.create_partition_state(topic, 1, PartitionState(1, 0, 1, (1,)),
                                             controller_epoch_zk_version=version) == 0
    assert zk_client.get_partition_state(topic, 1).leader == 1
    with pytest.raises(ZkNodeExistsError):
        controller.create_partition_state(topic, 1, PartitionState(2, 0, 1, (2,)),
                                          controller_epoch_zk_version=version)


# ---------------------------------------------------------------------------- topic deletion

def test_topic_deletion_znodes(zk_client, new_client):
    topic = with_topic(zk_client)
    zk_client.set_topic_config(topic, {"retention.ms": "5"})
    for p in (0, 1):
        zk_client.create_partition_state(topic, p, PartitionState(1, 0, 1, (1, 2)))
    with pytest.raises(UnknownTopicOrPartitionError):
        zk_client.mark_topic_for_deletion("unknown")
    zk_client.mark_topic_for_deletion(topic)
    zk_client.mark_topic_for_deletion(topic)  # idempotent
    assert zk_client.topics_marked_for_deletion() == [topic]

    controller = new_client()
    epoch = controller.try_elect_controller(1)
    controller.delete_topic_znodes(topic, controller_epoch_zk_version=epoch.zk_version)
    assert not zk_client.exists(topic_path(topic))
    assert not zk_client.exists(config.topic_config_path(topic))
    assert zk_client.topics_marked_for_deletion() == [] and zk_client.list_topics() == []
    controller.delete_topic_znodes(topic)  # nothing left: no error


def test_isr_change_notifications(zk_client):
    zk_client.ensure_persistent_paths()
    first = zk_client.create_isr_change_notification([("t", 0), ("t", 1)])
    second = zk_client.create_isr_change_notification([("u", 3)])
    notes = zk_client.get_isr_change_notifications()
    assert list(notes) == [first, second]
    assert notes[first].partitions == (("t", 0), ("t", 1))
    zk_client.delete_isr_change_notifications([first])
    assert list(zk_client.get_isr_change_notifications()) == [second]


def test_producer_id_blocks(zk_client, new_client):
    zk_client.ensure_persistent_paths()
    first = zk_client.claim_producer_id_block(1)
    second = new_client().claim_producer_id_block(2)
    assert (first.block_start, first.block_end) == (0, 999)
    assert (second.broker, second.block_start, second.block_end) == (2, 1000, 1999)


# --------------------------------------------------------------------------- consumer groups

def test_consumer_group_znodes(zk_client, new_client):
    zk_client.ensure_persistent_paths()
    m1_client, m2_client = new_client(), new_client()
    reg = ConsumerRegistration({"t": 1}, "static", 1)
    m1_client.register_consumer("g", "g_h-1-aaaaaaaa", reg)
    m2_client.register_consumer("g", "g_h-2-bbbbbbbb", reg)
    assert zk_client.list_consumer_groups() == ["g"]
    assert zk_client.get_consumer_members("g") == ["g_h-1-aaaaaaaa", "g_h-2-bbbbbbbb"]
    assert zk_client.get_consumer_registrations("g")["g_h-1-aaaaaaaa"].subscription == {"t": 1}

    owner1, owner2 = "g_h-1-aaaaaaaa-0", "g_h-2-bbbbbbbb-0"
    assert m1_client.claim_partition_owner("g", "t", 0, owner1) is True
    assert m1_client.claim_partition_owner("g", "t", 0, owner1) is True  # already ours
    assert m2_client.claim_partition_owner("g", "t", 0, owner2) is False
    assert m2_client.release_partition_owner("g", "t", 0, owner2) is False  # not its own
    assert zk_client.get_partition_owners("g") == {("t", 0): owner1}
    assert m1_client.release_partition_owner("g", "t", 0, owner1) is True
    assert m2_client.claim_partition_owner("g", "t", 0, owner2) is True
    assert zk_client.get_partition_owner("g", "t", 0) == owner2

    zk_client.set_consumer_offsets("g", {("t", 0): 42, ("t", 1): 7})
    zk_client.set_consumer_offset("g", "t", 0, 43)
    assert zk_client.get_consumer_offset("g", "t", 0) == 43
    assert zk_client.get_consumer_offsets("g") == {("t", 0): 43, ("t", 1): 7}
    assert zk_client.get_consumer_offset("g", "t", 9) is None

    with pytest.raises(NonEmptyGroupError):
        zk_client.delete_consumer_group("g")
    m2_client.stop()  # a crashed member's ephemerals vanish with its session
    wait_until(lambda: zk_client.get_partition_owner("g", "t", 0) is None, what="owner release")
    m1_client.unregister_consumer("g", "g_h-1-aaaaaaaa")
    assert zk_client.delete_consumer_group("g") is True
    assert zk_client.list_consumer_groups() == []


# ------------------------------------------------------------------------------------ watches

def test_watch_children_and_data_follow_changes_and_survive_expiry(zk_client, new_client,
                                                                    zk_expire):
    watcher = new_client()
    children, data = queue.Queue(), queue.Queue()
    watcher.watch_children("/w", children.put)
    watch = watcher.watch_data("/w/x", lambda d, v: data.put((d, v)))
    assert children.get(timeout=5) is None  # does not exist yet
    assert data.get(timeout=5) == (None, None)
    zk_client.create("/w")
    assert children.get(timeout=5) == []
    zk_client.create("/w/x", b"1")
    assert children.get(timeout=5) == ["x"]
    assert data.get(timeout=5) == (b"1", 0)
    zk_client.set_data("/w/x", b"2")
    assert data.get(timeout=5) == (b"2", 1)

    assert zk_expire(watcher)  # watches are re-armed on the new session
    zk_client.create("/w/y")
    assert children.get(timeout=10) == ["x", "y"]
    zk_client.set_data("/w/x", b"3")
    assert data.get(timeout=5) == (b"3", 2)

    watch.cancel()
    zk_client.delete("/w/x")
    zk_client.create("/w/z")
    expect(children, ["y", "z"])  # maybe after ["y"], depending on timing
    assert data.empty()


def expect(q: queue.Queue, value, timeout=10.0):
    """Read ``q`` until ``value`` shows up."""
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        try:
            item = q.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            break
        if item == value:
            return
        seen.append(item)
    raise AssertionError(f"never saw {value!r}; saw {seen!r}")


class QueueReactor:
    """Just enough of a reactor: callFromThread queues calls for the test thread to run."""

    def __init__(self):
        self.calls: queue.Queue = queue.Queue()
        self.triggers = []

    def callFromThread(self, fn, *args, **kwargs):  # noqa: N802 - Twisted's name
        self.calls.put((fn, args, kwargs))

    def addSystemEventTrigger(self, *args):  # noqa: N802
        self.triggers.append(args)
        return len(self.triggers)

    def removeSystemEventTrigger(self, handle):  # noqa: N802
        self.triggers[handle - 1] = None

    def run_one(self, timeout=5.0):
        fn, args, kwargs = self.calls.get(timeout=timeout)
        fn(*args, **kwargs)


def test_callbacks_hop_onto_the_reactor(zk_client, new_client):
    reactor = QueueReactor()
    client = new_client(reactor=reactor)
    seen = []
    client.add_state_listener(lambda state: seen.append(("state", state)))
    client.watch_children("/", lambda kids: seen.append(("children", threading.get_ident())))
    assert seen == []  # nothing ran on kazoo's threads: all queued for the reactor
    reactor.run_one()
    assert seen == [("children", threading.get_ident())]
    client.stop()
    reactor.run_one()
    assert seen[-1] == ("state", ZkState.CLOSED)


def test_twisted_bridge_returns_deferreds(zk_client):
    reactor = QueueReactor()
    bridge = TwistedZk(zk_client, reactor, max_threads=2)
    try:
        results = []
        d = bridge.create_topic("bridged", {0: [1]})
        d.addCallback(lambda a: results.append(a.partitions))
        reactor.run_one()
        assert results == [{0: (1,)}]
        failures = []
        d2 = bridge.create_topic("bridged", {0: [1]})
        d2.addErrback(lambda f: failures.append(f.trap(TopicAlreadyExistsError)))
        reactor.run_one()
        assert failures == [TopicAlreadyExistsError]
        d3 = bridge.run(zk_client.get_partition_state, "bridged", 0)
        d3.addCallback(results.append)
        reactor.run_one()
        assert results[-1] is None
    finally:
        bridge.stop()
    assert reactor.triggers == [None]
