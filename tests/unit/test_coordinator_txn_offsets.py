"""TxnOffsetCommit in the GroupCoordinator (kafkalite.coordinator.txn_offsets) on a twisted
Clock and a fake store that reports each batch's log position: offsets pending per producer
until the marker (COMMIT shows them, ABORT drops them), OffsetFetch's require_stable, ordering
against plain commits by log position, KIP-447 fencing, and pending offsets through loading and
resigning."""

import pytest
from twisted.internet import defer

from kafkalite import errors as E
from kafkalite.coordinator.group import EMPTY
from kafkalite.coordinator.internal_topic import AppendCode
from kafkalite.coordinator.types import FetchedOffset, OffsetAndMetadata

from test_coordinator import Env, FakeStore, track

UNSTABLE = E.UnstableOffsetCommitError.code
PID, EPOCH = 4000, 3


class PositionStore(FakeStore):
    """FakeStore whose appends take consecutive log positions and answer AppendCodes (as
    internal_topic does), and remember a transactional batch's producer."""

    def __init__(self):
        super().__init__()
        self.end = 100
        self.positions = []
        self.producers = []

    def append(self, partition, records, **txn):
        d = defer.Deferred()
        self.appends.append((partition, list(records), d))
        self.positions.append(self.end)
        self.producers.append(txn)
        self.end += len(records)
        if not self.manual:
            d.callback(AppendCode(self.code, self.positions[-1]))
        return d

    def complete(self, index=-1, code=0):
        self.appends[index][2].callback(AppendCode(code, self.positions[index]))


class TxnEnv(Env):
    def __init__(self, monkeypatch, **config):
        super().__init__(monkeypatch, **config)
        self.store = self.coord._store = PositionStore()

    def txn_commit(self, offsets, pid=PID, generation=-1, member_id="", instance=None,
                   group="g"):
        offsets = {tp: OffsetAndMetadata(o) for tp, o in offsets.items()}
        return track(self.coord.commit_txn_offsets("tx", group, pid, EPOCH, generation,
                                                   member_id, instance, offsets))

    def marker(self, commit, pid=PID, partitions=(0,)):
        self.coord.complete_txn_offsets(pid, set(partitions), commit)

    def offset(self, tp=("t", 0), stable=False, group="g"):
        code, found = track(self.coord.fetch_offsets(group, [tp], stable))[0]
        assert code == 0
        return found[tp]


@pytest.fixture
def env(monkeypatch):
    e = TxnEnv(monkeypatch)
    e.elect()
    return e


def visible(offset):
    return FetchedOffset(offset, -1, "", 0)


NOTHING = FetchedOffset(-1, -1, "", 0)
UNSTABLE_ANSWER = FetchedOffset(-1, -1, "", UNSTABLE)


def test_txn_offsets_are_one_transactional_batch_visible_only_at_commit(env):
    box = env.txn_commit({("t", 0): 5, ("t", 1): 6})
    assert box == [{("t", 0): 0, ("t", 1): 0}]
    partition, records, _ = env.store.appends[-1]
    assert [key for key, _ in records] == [("offset", "g", "t", 0), ("offset", "g", "t", 1)]
    assert env.store.producers[-1] == dict(producer_id=PID, producer_epoch=EPOCH,
                                           transactional=True)
    assert env.offset() == NOTHING                         # read_uncommitted: not there yet
    assert env.offset(stable=True) == UNSTABLE_ANSWER      # KIP-447: wait for the marker
    env.marker(commit=True)
    assert env.offset() == env.offset(stable=True) == visible(5)
    assert env.offset(("t", 1)) == visible(6)
    assert env.group().pending_txn_offsets == {}


def test_abort_drops_the_txn_offsets_and_keeps_the_plain_ones(env):
    env.commit({("t", 0): 2})
    env.txn_commit({("t", 0): 6})
    assert env.offset() == visible(2)
    assert env.offset(stable=True) == UNSTABLE_ANSWER
    env.marker(commit=False)
    assert env.offset() == env.offset(stable=True) == visible(2)
    assert env.group().has_offsets()                  # the plain offset is still there


def test_a_marker_for_other_partitions_or_producers_leaves_the_offsets_pending(env):
    env.txn_commit({("t", 0): 6})
    env.marker(commit=True, partitions=(1,))
    env.marker(commit=True, pid=PID + 1)
    assert env.offset(stable=True) == UNSTABLE_ANSWER
    env.marker(commit=True, partitions=(0, 1))
    assert env.offset() == visible(6)


def test_two_producers_pend_apart(env):
    env.txn_commit({("t", 0): 6}, pid=1)
    env.txn_commit({("t", 1): 7}, pid=2)
    env.marker(commit=False, pid=1)
    assert env.offset() == NOTHING
    assert env.offset(("t", 1), stable=True) == UNSTABLE_ANSWER
    env.marker(commit=True, pid=2)
    assert env.offset(("t", 1)) == visible(7)


def test_a_plain_commit_written_after_the_txn_batch_wins_over_its_commit(env):
    """Kafka orders by log position: the later batch is the group's offset, whenever the
    marker comes."""
    env.txn_commit({("t", 0): 6})       # position 100
    env.commit({("t", 0): 9})           # position 101, visible at once
    assert env.offset() == visible(9)
    env.marker(commit=True)
    assert env.offset() == visible(9)


def test_a_txn_commit_written_after_a_plain_one_replaces_it_at_the_marker(env):
    env.commit({("t", 0): 9})           # position 100
    env.txn_commit({("t", 0): 6})       # position 101
    env.marker(commit=True)
    assert env.offset() == visible(6)


def test_a_plain_commit_acknowledged_after_a_later_txn_commit_does_not_go_back(env):
    """The plain batch is written first but replicated last: it must not hide the committed
    transaction's later offset."""
    env.store.manual = True
    plain = env.commit({("t", 0): 9})           # position 100, in flight
    txn = env.txn_commit({("t", 0): 6})         # position 101
    env.store.complete(1)
    assert txn == [{("t", 0): 0}]
    env.marker(commit=True)
    assert env.offset() == visible(6)
    env.store.complete(0)
    assert plain == [{("t", 0): 0}]
    assert env.offset() == visible(6)


def test_require_stable_also_waits_for_a_plain_commit_in_flight(env):
    env.store.manual = True
    env.commit({("t", 0): 9})
    assert env.offset(stable=True) == UNSTABLE_ANSWER
    env.store.complete(0)
    assert env.offset(stable=True) == visible(9)


def test_a_failed_write_leaves_nothing_pending_and_maps_the_error(env):
    env.store.code = E.NotEnoughReplicasError.code
    box = env.txn_commit({("t", 0): 6})
    assert box == [{("t", 0): E.CoordinatorNotAvailableError.code}]
    assert env.group().pending_txn_offsets == {}
    assert env.offset(stable=True) == NOTHING
    env.store.code = E.NotLeaderForPartitionError.code
    assert env.txn_commit({("t", 0): 6}) == [{("t", 0): E.NotCoordinatorError.code}]


def test_too_large_metadata_is_refused_per_partition(env):
    big = OffsetAndMetadata(1, metadata="x" * 5000)
    box = track(env.coord.commit_txn_offsets("tx", "g", PID, EPOCH, -1, "", None,
                                             {("t", 0): big, ("t", 1): OffsetAndMetadata(2)}))
    assert box == [{("t", 0): E.OffsetMetadataTooLargeError.code, ("t", 1): 0}]
    env.marker(commit=True)
    assert env.offset(("t", 1)) == visible(2) and env.offset() == NOTHING


def test_an_unknown_group_is_created_empty_even_with_a_generation(env):
    """Unlike OffsetCommit (ILLEGAL_GENERATION for a generation >= 0 of a missing group), a txn
    commit creates the group; the generation is then checked against its 0."""
    assert env.txn_commit({("t", 0): 6}, group="new") == [{("t", 0): 0}]
    assert env.group("new").state is EMPTY
    assert env.txn_commit({("t", 0): 6}, group="other", generation=3) == [
        {("t", 0): E.IllegalGenerationError.code}]


def test_kip_447_fencing_with_the_consumers_group_metadata(env):
    leader, _ = env.stable_pair()
    generation = env.group().generation_id
    assert env.txn_commit({("t", 0): 1}, generation=generation - 1, member_id=leader) == [
        {("t", 0): E.IllegalGenerationError.code}]
    assert env.txn_commit({("t", 0): 1}, generation=generation, member_id="gone") == [
        {("t", 0): E.UnknownMemberIdError.code}]
    assert env.txn_commit({("t", 0): 1}, generation=generation, member_id=leader) == [
        {("t", 0): 0}]
    # no group metadata (a pre-KIP-447 producer): neither is checked
    assert env.txn_commit({("t", 0): 1}) == [{("t", 0): 0}]


def test_a_static_members_old_instance_is_fenced(env):
    joined = env.join(instance="i-a")
    env.clock.advance(0)
    member = joined[0].member_id
    assert env.txn_commit({("t", 0): 1}, member_id="someone-else", instance="i-a") == [
        {("t", 0): E.FencedInstanceIdError.code}]
    assert env.txn_commit({("t", 0): 1}, member_id=member, instance="i-a",
                          generation=joined[0].generation_id) == [{("t", 0): 0}]


def test_group_status_errors(env):
    assert env.txn_commit({("t", 0): 1}, group="") == [
        {("t", 0): E.InvalidGroupIdError.code}]
    env.store.partitions["elsewhere"] = 7
    assert env.txn_commit({("t", 0): 1}, group="elsewhere") == [
        {("t", 0): E.NotCoordinatorError.code}]


def test_pending_offsets_without_their_marker_stay_pending_after_a_load(monkeypatch):
    """The marker comes after the failover, through complete_txn_offsets; a group with only
    pending offsets exists after the load."""
    env = TxnEnv(monkeypatch)
    open_ = OffsetAndMetadata(6)
    env.coord.on_elected(0, 1)
    env.store.loads[-1][1].callback((
        {}, {("g", "t", 0): OffsetAndMetadata(2)}, {("g", "t", 0): 10},
        {PID: {("g", "t", 0): (20, open_), ("only-txn", "t", 0): (20, open_)}}))
    assert env.offset() == visible(2)
    assert env.offset(stable=True) == UNSTABLE_ANSWER
    assert env.offset(group="only-txn", stable=True) == UNSTABLE_ANSWER
    env.marker(commit=True)
    assert env.offset() == visible(6)
    assert env.offset(group="only-txn") == visible(6)


def test_a_loaded_offset_written_after_a_pending_txn_batch_stays(monkeypatch):
    env = TxnEnv(monkeypatch)
    env.coord.on_elected(0, 1)
    env.store.loads[-1][1].callback((
        {}, {("g", "t", 0): OffsetAndMetadata(9)}, {("g", "t", 0): 30},
        {PID: {("g", "t", 0): (20, OffsetAndMetadata(6))}}))
    env.marker(commit=True)
    assert env.offset() == visible(9)


def test_resigning_drops_the_pending_offsets_with_the_group(env):
    env.txn_commit({("t", 0): 6})
    env.coord.on_resigned(0, 2)
    env.marker(commit=True)                    # the marker reaches the old coordinator: ignored
    env.coord.on_elected(0, 3)
    env.store.loads[-1][1].callback(({}, {}))  # the new leader's log had the batch aborted
    assert env.offset(stable=True) == NOTHING


def test_deleting_the_partitions_offsets_drops_their_pending_txn_offsets(env):
    env.txn_commit({("t", 0): 6})
    assert track(env.coord.delete_offsets("g", [("t", 0)]))[0] == (0, {("t", 0): 0})
    env.marker(commit=True)
    assert env.offset() == NOTHING
