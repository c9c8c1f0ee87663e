"""A leader's ISR writes to ZooKeeper (``IsrWriter``): the changes of one reactor turn go out in
one pipelined batch, and one write per partition at a time. While a partition's write is queued
or under way, further changes asked for it (every fetch of a follower that caught up asks) are
not sent: each would carry the zkVersion the first write replaces and could only fail, and
thousands of them queued on the broker's ZooKeeper threads ahead of the controller's calls."""

from types import SimpleNamespace

from twisted.internet import defer, task

from kafkalite.server.isr_writer import IsrWriter
from kafkalite.zk.errors import ZkBadVersionError, ZkConnectionLossError


def partition(p, zk_version=5):
    return SimpleNamespace(tp=("t", p), leader_id=1, leader_epoch=3, controller_epoch=1,
                           zk_version=zk_version, is_leader=True)


class Leader:
    """An IsrWriter on a clock, with a ZooKeeper whose answers the test gives (``batches``:
    (updates, Deferred))."""

    def __init__(self):
        self.clock = task.Clock()
        self.batches = []
        self.applied = []
        self.led = set()
        zk = SimpleNamespace(set_partition_states=self._set)
        self.writer = IsrWriter(self.clock, lambda: zk, lambda p: p.tp in self.led,
                                lambda p, isr, version: self.applied.append((p.tp, isr,
                                                                             version)))

    def lead(self, *partitions):
        self.led.update(p.tp for p in partitions)

    def _set(self, updates):
        d = defer.Deferred()
        self.batches.append((updates, d))
        return d


def test_one_turn_of_changes_is_one_batch_and_one_write_per_partition():
    leader = Leader()
    p0, p1 = partition(0), partition(1, zk_version=2)
    leader.lead(p0, p1)
    for _ in range(5):                       # five fetches of followers that caught up
        leader.writer.request(p0, [1, 2, 3])
        leader.writer.request(p1, [1, 2])
    assert leader.batches == []              # sent at the end of the reactor turn
    leader.clock.advance(0)
    assert len(leader.batches) == 1
    updates, d = leader.batches[0]
    assert {tp: (s.isr, s.leader, s.leader_epoch, v) for tp, (s, v) in updates.items()} == {
        ("t", 0): ((1, 2, 3), 1, 3, 5), ("t", 1): ((1, 2), 1, 3, 2)}

    leader.writer.request(p0, [1, 2, 3])     # still under way: not asked again
    leader.clock.advance(0)
    assert len(leader.batches) == 1
    d.callback({("t", 0): 6, ("t", 1): 3})
    assert leader.applied == [(("t", 0), [1, 2, 3], 6), (("t", 1), [1, 2], 3)]
    leader.writer.request(p0, [1, 2])        # the next change goes out again
    leader.clock.advance(0)
    assert len(leader.batches) == 2


def test_a_refused_write_is_not_applied_and_lets_the_next_change_through():
    leader = Leader()
    p0, p1 = partition(0), partition(1)
    leader.lead(p0, p1)
    leader.writer.request(p0, [1, 2, 3])
    leader.writer.request(p1, [1, 2, 3])
    leader.clock.advance(0)
    leader.batches[0][1].callback({("t", 0): ZkBadVersionError("BADVERSION"), ("t", 1): 6})
    assert leader.applied == [(("t", 1), [1, 2, 3], 6)]

    leader.writer.request(p0, [1, 2, 3])
    leader.clock.advance(0)
    assert list(leader.batches[1][0]) == [("t", 0)]


def test_a_failed_batch_frees_every_partition():
    leader = Leader()
    p0 = partition(0)
    leader.lead(p0)
    leader.writer.request(p0, [1, 2, 3])
    leader.clock.advance(0)
    leader.batches[0][1].errback(ZkConnectionLossError("connection lost"))
    assert leader.applied == []
    leader.writer.request(p0, [1, 2, 3])
    leader.clock.advance(0)
    assert len(leader.batches) == 2


def test_a_write_landing_after_the_leadership_moved_is_not_applied():
    leader = Leader()
    p0 = partition(0)
    leader.lead(p0)
    leader.writer.request(p0, [1, 2, 3])
    leader.clock.advance(0)
    leader.led.clear()                      # a LeaderAndIsr made it a follower meanwhile
    leader.batches[0][1].callback({("t", 0): 6})
    assert leader.applied == []
