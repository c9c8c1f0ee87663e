"""KIP-392 (fetch from the closest replica): the pure decisions of ``server.read_replica`` and the
ReplicaManager's fetch path over them, with real logs and time driven by task.Clock."""

import time

import pytest
from twisted.internet.task import Clock

from kafkalite import errors
from kafkalite.config import BrokerConfig, TopicConfig
from kafkalite.errors import ConfigError
from kafkalite.log.manager import LogManager
from kafkalite.protocol import messages as m
from replica_fakes import live_leaders
from kafkalite.record import build_batch, iter_records
from kafkalite.record.control import build_control_batch
from kafkalite.server.data_values import FetchParams, PartitionData
from kafkalite.server.read_replica import (
    RACK_AWARE_SELECTOR, ReplicaView, fetch_only_from_leader, preferred_read_replica,
    rack_aware_select, read_error, replica_selector)
from kafkalite.server.replica_manager import ReplicaManager

TP = ("t", 0)
RACKS = {1: "a", 2: "b", 3: "c"}


# --- who may serve ------------------------------------------------------------------------------

def test_only_a_consumer_with_client_metadata_may_read_from_a_follower():
    assert fetch_only_from_leader(2, None)          # a follower's replica fetch
    assert fetch_only_from_leader(2, "b")
    assert fetch_only_from_leader(-1, None)         # a consumer's Fetch below v11
    assert not fetch_only_from_leader(-1, "")       # Fetch v11+, no rack: still client metadata
    assert not fetch_only_from_leader(-1, "b")


@pytest.mark.parametrize("leader, epoch, asked, only_leader, expected", [
    (1, 5, -1, False, None),                                   # follower, no epoch: serves
    (1, 5, 5, False, None),
    (1, 5, 4, False, errors.FencedLeaderEpochError),
    (1, 5, 6, False, errors.UnknownLeaderEpochError),
    (1, 5, -1, True, errors.NotLeaderForPartitionError),
    (1, 5, 4, True, errors.FencedLeaderEpochError),            # the epoch check comes first
    (2, 5, 5, True, None),                                     # the leader itself
])
def test_read_error(leader, epoch, asked, only_leader, expected):
    error = read_error("t", 0, 2, leader, epoch, asked, only_leader)
    assert (type(error) if error else None) is expected


# --- the selector -------------------------------------------------------------------------------

LEADER = ReplicaView(1, "a", 10)


def test_rack_aware_selector_prefers_the_leader_on_the_clients_rack():
    b = ReplicaView(2, "a", 10)
    assert rack_aware_select("a", LEADER, [LEADER, b]) == LEADER
    assert rack_aware_select("", LEADER, [LEADER, b]) == LEADER        # no rack: the leader
    assert rack_aware_select("z", LEADER, [LEADER, b]) == LEADER        # none there


def test_rack_aware_selector_picks_the_most_caught_up_replica_on_the_rack():
    behind, ahead = ReplicaView(2, "b", 7, 0), ReplicaView(3, "b", 9, 500)
    assert rack_aware_select("b", LEADER, [LEADER, behind, ahead]) == ahead
    # same log end: the one caught up most recently, then the highest id
    recent, stale = ReplicaView(2, "b", 9, 10), ReplicaView(3, "b", 9, 900)
    assert rack_aware_select("b", LEADER, [LEADER, recent, stale]) == recent
    assert rack_aware_select("b", LEADER, [LEADER, ReplicaView(2, "b", 9),
                                           ReplicaView(3, "b", 9)]).broker_id == 3


def test_preferred_read_replica_needs_the_offset_in_the_followers_log():
    select = rack_aware_select
    follower = (ReplicaView(2, "b", 8), 2)       # log [2, 8)
    assert preferred_read_replica(select, "b", LEADER, [follower], 5) == 2
    assert preferred_read_replica(select, "b", LEADER, [follower], 8) == 2   # at its end
    assert preferred_read_replica(select, "b", LEADER, [follower], 9) == -1  # past it
    assert preferred_read_replica(select, "b", LEADER, [follower], 1) == -1  # below its start
    assert preferred_read_replica(select, "a", LEADER, [follower], 5) == -1  # the leader's rack
    assert preferred_read_replica(None, "b", LEADER, [follower], 5) == -1    # no selector
    assert preferred_read_replica(select, None, LEADER, [follower], 5) == -1  # below v11


def test_replica_selector_config():
    assert replica_selector(None) is None
    assert replica_selector(RACK_AWARE_SELECTOR) is rack_aware_select
    with pytest.raises(ConfigError, match="cannot load"):
        replica_selector("org.apache.kafka.common.replica.LeaderSelector")


def test_replica_selector_class_is_checked_at_start_up():
    base = {"broker.id": "1", "zookeeper.connect": "localhost:2181"}
    config = BrokerConfig.from_dict({**base, "replica.selector.class": RACK_AWARE_SELECTOR,
                                      "broker.rack": "a"})
    assert config.replica_selector_class == RACK_AWARE_SELECTOR and config.broker_rack == "a"
    with pytest.raises(ConfigError, match="replica.selector.class: cannot load class"):
        BrokerConfig.from_dict({**base, "replica.selector.class": "com.example.Nearest"})


# --- the fetch path -----------------------------------------------------------------------------

def _batch(n=3):
    now = int(time.time() * 1000)
    return build_batch([(now + i, b"k", b"v%d" % i, None) for i in range(n)])


class Replica:
    """One broker's ReplicaManager hosting t-0 (replicas 1, 2, 3 on racks a, b, c)."""

    def __init__(self, tmp_path, broker_id, selector=None):
        self.clock = Clock()
        self.clock.advance(1000)
        config = TopicConfig()
        self.logs = LogManager([str(tmp_path / f"b{broker_id}")], config, self.clock)
        self.logs.startService()
        self.manager = ReplicaManager(
            broker_id, self.logs, self.clock, lambda: int(self.clock.seconds() * 1000),
            topic_config=lambda t: config, replica_selector=selector, rack_of=RACKS.get)
        self.manager.start()

    def state(self, leader=1, epoch=3):
        state = m.LeaderAndIsrPartitionState("t", 0, 1, leader, epoch, [1, 2, 3], 0, [1, 2, 3])
        self.manager.become_leader_or_follower(m.LeaderAndIsrRequest(
            controller_id=1, controller_epoch=1, partition_states=[state],
            live_leaders=live_leaders([1, 2, 3])))
        return self.manager.partitions[TP]

    def fetch(self, offset, replica_id=-1, rack=None, epoch=-1, isolation=0, max_wait_ms=0):
        return self.manager.fetch(FetchParams(replica_id, max_wait_ms, 1, 1 << 20, isolation,
                                              rack),
                                  {TP: PartitionData(offset, 0 if replica_id >= 0 else -1,
                                                     1 << 20, epoch)})[TP]


@pytest.fixture
def follower(tmp_path):
    """Broker 2, a follower holding 5 records of which the leader's high watermark covers 3."""
    replica = Replica(tmp_path, 2)
    partition = replica.state()
    leader_log = LogManager([str(tmp_path / "leader")], TopicConfig(), replica.clock)
    leader_log.startService()
    log = leader_log.get_or_create_log("t", 0)
    log.append(_batch(3))
    log.append(_batch(2))
    partition.append_as_follower(log.read(0, 1 << 20).records, 3)
    yield replica
    leader_log.stopService()
    replica.manager.stop()
    replica.logs.stopService()


def test_a_follower_serves_a_v11_consumer_up_to_its_high_watermark(follower):
    answer = follower.fetch(0, rack="b", epoch=3)
    assert answer.error_code == 0 and answer.high_watermark == 3
    assert [r.offset for r in iter_records(answer.records)] == [0, 1, 2]
    assert follower.fetch(3, rack="").records == b""          # above the HW, inside the log
    committed = follower.fetch(0, rack="", isolation=1)       # its own last stable offset
    assert committed.error_code == 0 and committed.last_stable_offset == 3
    assert committed.aborted_transactions == []


def test_a_follower_refuses_what_kafka_refuses(follower):
    code = errors.NotLeaderForPartitionError.code
    assert follower.fetch(0).error_code == code                     # Fetch below v11
    assert follower.fetch(0, replica_id=3).error_code == code       # a replica's fetch
    assert follower.fetch(0, rack="b", epoch=2).error_code == errors.FencedLeaderEpochError.code
    assert follower.fetch(0, rack="b", epoch=4).error_code == \
        errors.UnknownLeaderEpochError.code
    assert follower.fetch(6, rack="b").error_code == errors.OffsetOutOfRangeError.code


def test_a_long_poll_at_a_follower_waits_for_its_high_watermark(follower):
    pending = follower.manager.fetch(FetchParams(-1, 500, 1, 1 << 20, 0, "b"),
                                     {TP: PartitionData(3, max_bytes=1 << 20)})
    box = []
    pending.addCallback(box.append)
    assert not box                                       # not answered at once, as at a leader
    follower.clock.advance(0.6)
    assert box and box[0][TP].error_code == 0 and box[0][TP].records == b""


def test_the_leader_names_a_follower_on_the_clients_rack(tmp_path):
    leader = Replica(tmp_path, 1, selector=rack_aware_select)
    leader.state()
    leader.manager.append_records(5000, 1, False, {TP: _batch(3)})
    assert leader.fetch(0, rack="b").preferred_read_replica == -1   # 2 has not fetched yet
    leader.fetch(3, replica_id=2)
    leader.fetch(3, replica_id=3)
    answer = leader.fetch(0, rack="b", epoch=3)
    assert (answer.error_code, answer.preferred_read_replica, answer.records) == (0, 2, b"")
    assert answer.high_watermark == 3
    assert leader.fetch(0, rack="c").preferred_read_replica == 3
    own = leader.fetch(0, rack="a")                                   # the leader's own rack
    assert own.preferred_read_replica == -1 and own.records
    assert leader.fetch(0).preferred_read_replica == -1              # below v11
    assert leader.fetch(0, rack="b", epoch=2).error_code == errors.FencedLeaderEpochError.code
    leader.manager.stop()
    leader.logs.stopService()


def test_a_follower_serves_read_committed_from_its_own_producer_state(tmp_path):
    """The follower's LSO and aborted transactions come from the producer state and .txnindex
    it rebuilt from the leader's batches (Kafka's follower keeps both)."""
    replica = Replica(tmp_path, 2)
    partition = replica.state()
    leader_logs = LogManager([str(tmp_path / "leader")], TopicConfig(), replica.clock)
    leader_logs.startService()
    log = leader_logs.get_or_create_log("t", 0)
    now = int(time.time() * 1000)

    def txn(pid):
        return build_batch([(now, None, b"p%d-%d" % (pid, i), None) for i in range(2)],
                           producer_id=pid, producer_epoch=0, base_sequence=0,
                           transactional=True)

    log.append(txn(7))                                           # 0-1, then aborted
    log.append(build_control_batch(7, 0, False, 0, now))         # 2: ABORT
    log.append(_batch(2))                                        # 3-4
    log.append(txn(8))                                           # 5-6, still open
    partition.append_as_follower(log.read(0, 1 << 20).records, 7)
    answer = replica.fetch(0, rack="b", isolation=1)
    assert (answer.error_code, answer.high_watermark, answer.last_stable_offset) == (0, 7, 5)
    assert [tuple(a) for a in answer.aborted_transactions] == [(7, 0)]
    offsets = [r.offset for r in iter_records(answer.records)]
    assert 4 in offsets and max(offsets) < 5                     # nothing of the open txn
    leader_logs.stopService()
    replica.manager.stop()
    replica.logs.stopService()
