"""The controller's ZooKeeper writes at many partitions: a new topic's partition states are created
in one pipelined batch (a fenced transaction per partition, parents included), not one round trip
per partition; what each partition ends up with is what the one-at-a-time creation gives."""

from twisted.internet import task

import zk_schema
from zk_schema import topics as s_topics
from zk_schema.topics import PartitionState

from kafkalite.zk.errors import ControllerMovedError, ZkNodeExistsError

from controller_fakes import ControllerHarness, InMemoryZk, ZkTree


def session():
    zk = InMemoryZk(ZkTree(task.Clock()), session_id=1)
    zk.ensure_persistent_paths()
    return zk


def epoch_version(zk) -> int:
    if not zk.exists(zk_schema.CONTROLLER_EPOCH_PATH):
        zk.create(zk_schema.CONTROLLER_EPOCH_PATH, b"1")
    return zk.get_data(zk_schema.CONTROLLER_EPOCH_PATH)[1]


def states(topic, count, leader=1):
    return {(topic, p): PartitionState(leader, 0, 1, (leader, 2)) for p in range(count)}


def test_a_new_topic_gets_every_state_and_its_parents():
    zk = session()
    zk.create_topic("t", {p: [1, 2] for p in range(5)})
    wanted = {**states("t", 5), **states("u", 2, leader=2)}
    zk.create_topic("u", {0: [2, 1], 1: [2, 1]})

    assert zk.create_partition_states(wanted, epoch_version(zk)) == {tp: 0 for tp in wanted}
    for (t, p), state in wanted.items():
        assert zk.get_partition_state(t, p) == PartitionState(state.leader, 0, 1, state.isr, 0)


def test_an_existing_state_is_refused_and_the_others_are_created():
    zk = session()
    zk.create_topic("t", {p: [1, 2] for p in range(3)})
    zk.create_partition_state("t", 1, PartitionState(2, 7, 1, (2,)))

    out = zk.create_partition_states(states("t", 3), epoch_version(zk))

    assert out[("t", 0)] == 0 and out[("t", 2)] == 0
    assert isinstance(out[("t", 1)], ZkNodeExistsError)
    assert zk.get_partition_state("t", 1).leader_epoch == 7       # left as it was


def test_the_first_state_existing_does_not_stop_the_rest_of_its_topic():
    zk = session()
    zk.create_topic("t", {p: [1, 2] for p in range(3)})
    zk.create_partition_state("t", 0, PartitionState(2, 7, 1, (2,)))

    out = zk.create_partition_states(states("t", 3), epoch_version(zk))

    assert isinstance(out[("t", 0)], ZkNodeExistsError)
    assert out[("t", 1)] == out[("t", 2)] == 0


def test_a_parent_made_meanwhile_sends_that_partition_the_careful_way(monkeypatch):
    zk = session()
    zk.create_topic("t", {0: [1, 2], 1: [1, 2]})
    real = zk._get_many
    zk.ensure_path(s_topics.partition_path("t", 1))        # made by someone else
    # ... after this session looked: the batch thinks it is missing and its create fails
    monkeypatch.setattr(zk, "_get_many", lambda paths: [None for _ in real(paths)])

    assert zk.create_partition_states(states("t", 2), epoch_version(zk)) == {("t", 0): 0,
                                                                            ("t", 1): 0}
    assert zk.get_partition_state("t", 1).leader == 1


def test_a_deposed_controller_creates_nothing():
    zk = session()
    zk.create_topic("t", {0: [1, 2], 1: [1, 2]})
    version = epoch_version(zk)
    zk.set_data(zk_schema.CONTROLLER_EPOCH_PATH, b"2")     # another controller since

    out = zk.create_partition_states(states("t", 2), version)

    assert all(isinstance(e, ControllerMovedError) for e in out.values())
    assert not zk.exists(s_topics.partitions_path("t"))


def creation_round_trips(partitions: int) -> int:
    """Pipelined batches the controller sends while it creates a topic of ``partitions``."""
    h = ControllerHarness(brokers=(1, 2, 3))
    controller, deferred_zk = h.controller(1)
    calls = []
    zk = deferred_zk.zk
    for name in ("multi_many", "_get_many", "get_data", "exists"):
        real = getattr(zk, name)
        setattr(zk, name, lambda *a, _real=real, _name=name, **k: (calls.append(_name),
                                                                    _real(*a, **k))[1])
    h.admin.create_topic("t", {p: [1 + p % 3, 1 + (p + 1) % 3] for p in range(partitions)})
    h.settle()
    assert all(h.state("t", p).leader == 1 + p % 3 for p in range(partitions))
    return len(calls)


def test_creating_a_topic_takes_as_many_round_trips_at_any_size():
    assert creation_round_trips(3) == creation_round_trips(60)
