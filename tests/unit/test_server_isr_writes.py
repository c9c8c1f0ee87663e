"""A leader's ISR writes to ZooKeeper: one per partition at a time. While a write is under way,
further changes asked for that partition (every fetch of a follower that caught up asks) are not
sent: each would carry the zkVersion the first write replaces and could only fail, and
thousands of them queued on the broker's ZooKeeper threads ahead of the controller's calls."""

from types import SimpleNamespace

from twisted.internet import defer

from kafkalite.server.broker import BrokerService
from kafkalite.zk.errors import ZkBadVersionError


class Leader:
    """The parts of BrokerService an ISR write uses, with a ZooKeeper whose answers the test
    gives (``writes``: (tp, state, expected zkVersion, Deferred))."""

    _write_isr_change = BrokerService._write_isr_change
    _isr_write_done = BrokerService._isr_write_done

    def __init__(self):
        self.writes = []
        self._isr_writes_in_flight = set()
        self._pending_isr_notifications = set()
        self.applied = []
        self.partition = SimpleNamespace(tp=("t", 0), leader_id=1, leader_epoch=3,
                                         controller_epoch=1, zk_version=5, is_leader=True)
        self.replica_manager = SimpleNamespace(
            partitions={("t", 0): self.partition},
            isr_changed=lambda p, isr, version: self.applied.append((isr, version)))
        self.deferred_zk = SimpleNamespace(set_partition_state=self._set)

    def _set(self, topic, partition, state, expected):
        d = defer.Deferred()
        self.writes.append(((topic, partition), state, expected, d))
        return d


def test_one_write_at_a_time_per_partition():
    leader = Leader()
    for _ in range(5):                       # five fetches of the follower that caught up
        leader._write_isr_change(leader.partition, [1, 2, 3])
    assert len(leader.writes) == 1
    tp, state, expected, d = leader.writes[0]
    assert (tp, state.isr, state.leader_epoch, expected) == (("t", 0), (1, 2, 3), 3, 5)

    d.callback(6)
    assert leader.applied == [([1, 2, 3], 6)]
    assert leader._pending_isr_notifications == {("t", 0)}
    leader._write_isr_change(leader.partition, [1, 2])    # the next change goes out again
    assert len(leader.writes) == 2


def test_a_failed_write_lets_the_next_change_through():
    leader = Leader()
    leader._write_isr_change(leader.partition, [1, 2, 3])
    leader.writes[0][3].errback(ZkBadVersionError("no longer at zkVersion 5"))
    assert leader.applied == [] and not leader._isr_writes_in_flight

    leader._write_isr_change(leader.partition, [1, 2, 3])
    assert len(leader.writes) == 2


def test_other_partitions_are_not_held_up():
    leader = Leader()
    other = SimpleNamespace(tp=("t", 1), leader_id=1, leader_epoch=0, controller_epoch=1,
                            zk_version=0, is_leader=True)
    leader._write_isr_change(leader.partition, [1, 2, 3])
    leader._write_isr_change(other, [1, 2])
    assert [w[0] for w in leader.writes] == [("t", 0), ("t", 1)]
