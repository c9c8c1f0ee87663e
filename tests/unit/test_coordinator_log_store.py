"""OffsetsLogStore (kafkalite.coordinator.log_store) over a real ReplicaManager and real logs in a
temp dir, time driven by task.Clock: appends through the produce path (acks, ISR, purgatory),
chunked cooperative loads, compaction of __consumer_offsets, topic creation, and the
leadership hooks the broker gives the group coordinator."""

import logging
from types import SimpleNamespace

import pytest
from crc32c import crc32c
from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalite import errors
from kafkalite.config import BrokerConfig, TopicConfig
from kafkalite.coordinator import records
from kafkalite.coordinator.log_store import OffsetsLogStore
from kafkalite.coordinator.types import (OFFSETS_TOPIC, GroupSnapshot, MemberSnapshot,
                                         OffsetAndMetadata)
from kafkalite.log.manager import LogManager
from kafkalite.protocol import messages as m
from replica_fakes import live_leaders
from kafkalite.record import build_batch, iter_batches, iter_records
from kafkalite.record import header as hdr
from kafkalite.server.broker import BrokerService
from kafkalite.server.data_values import FetchParams, PartitionData
from kafkalite.server.metadata_cache import MetadataCache
from kafkalite.server.replica_manager import ReplicaManager

DAY_MS = 24 * 3600 * 1000


class FakeTzk:
    """The ZooKeeper calls ensure_topic makes, answered at once (or held, with ``hold``)."""

    def __init__(self, broker_ids=(1,), exists=False):
        self.broker_ids = list(broker_ids)
        self.exists = exists
        self.created = []
        self.hold: defer.Deferred | None = None

    def topic_exists(self, topic):
        return defer.succeed(self.exists or any(c[0] == topic for c in self.created))

    def get_broker_ids(self):
        return defer.succeed(self.broker_ids)

    def create_topic(self, topic, assignment, config):
        self.created.append((topic, assignment, config))
        if self.hold is not None:
            return self.hold
        return defer.succeed(None)


class Broker:
    """What OffsetsLogStore needs of a BrokerService, over a real ReplicaManager."""

    def __init__(self, tmp_path, broker_id=1, min_isr=1, segment_bytes=1024 * 1024,
                 **config):
        self.broker_id = broker_id
        self.reactor = Clock()
        self.reactor.advance(1000)
        config.setdefault("offsets_topic_num_partitions", 4)
        self.config = BrokerConfig(broker_id=broker_id, zookeeper_connect="zk", **config)
        self.topic_config = TopicConfig(cleanup_policy=("compact",), segment_bytes=segment_bytes,
                                        min_insync_replicas=min_isr, file_delete_delay_ms=0)
        self.log_manager = LogManager([str(tmp_path / f"b{broker_id}")], TopicConfig(),
                                      self.reactor, self.clock_ms)
        self.log_manager.update_config(OFFSETS_TOPIC, self.topic_config)
        self.log_manager.startService()
        self.roles = []
        self.replica_manager = ReplicaManager(
            broker_id, self.log_manager, self.reactor, self.clock_ms,
            topic_config=self.log_manager.config_for, replica_lag_time_max_ms=10000,
            isr_change_callback=lambda p, isr: None,
            leadership_callback=lambda tp, leader, epoch: self.roles.append((tp, leader, epoch)))
        self.replica_manager.start()
        self.metadata_cache = MetadataCache(broker_id)
        self.deferred_zk = FakeTzk()
        self.store = OffsetsLogStore(self)

    def clock_ms(self):
        return int(self.reactor.seconds() * 1000)

    def become(self, partition=0, leader=1, replicas=(1,), isr=None, epoch=0, topic=OFFSETS_TOPIC,
               expected_error=0):
        state = m.LeaderAndIsrPartitionState(topic, partition, 1, leader, epoch,
                                             list(isr if isr is not None else replicas), 0,
                                             list(replicas))
        response = self.replica_manager.become_leader_or_follower(m.LeaderAndIsrRequest(
            controller_id=1, controller_epoch=1, partition_states=[state],
            live_leaders=live_leaders(replicas)))
        assert all(e.error_code == expected_error for e in response.partition_errors)

    def follower_fetch(self, replica_id, offset, partition=0):
        return self.replica_manager.fetch(
            FetchParams(replica_id, max_wait_ms=0, min_bytes=1),
            {(OFFSETS_TOPIC, partition): PartitionData(offset, max_bytes=1 << 20)})

    def log(self, partition=0):
        return self.replica_manager.partitions[(OFFSETS_TOPIC, partition)].log


def now(d: defer.Deferred):
    """The result a Deferred already has (None if it has none yet); failures raise."""
    box = []
    d.addBoth(lambda r: box.append(r) or r)
    if not box:
        return None
    result = box[0]
    if hasattr(result, "raiseException"):
        d.addErrback(lambda f: None)
        result.raiseException()
    return result


def pump(clock: Clock, d: defer.Deferred, max_turns=10_000):
    """Run the reactor's callLater(0) calls until ``d`` fires; returns (result, turns)."""
    turns = 0
    box = []
    d.addBoth(lambda r: box.append(r) or r)
    while not box and turns < max_turns:
        clock.advance(0)
        turns += 1
    assert box, "the Deferred never fired"
    d.addErrback(lambda f: None)
    if hasattr(box[0], "raiseException"):
        box[0].raiseException()
    return box[0], turns


OAM = OffsetAndMetadata(offset=42, leader_epoch=3, metadata="meta", commit_timestamp=1000)
MEMBER = MemberSnapshot("m-1", None, "client", "/127.0.0.1", 300000, 10000, b"sub", b"asg")
GROUP = GroupSnapshot("consumer", 1, "range", "m-1", 1000, (MEMBER,))


def offset_record(group, topic, partition, oam):
    return (records.offset_key(group, topic, partition),
            None if oam is None else records.offset_value(oam))


def group_record(group, snapshot):
    return (records.group_key(group), None if snapshot is None else records.group_value(snapshot))


# --- placement ----------------------------------------------------------------------------------

def test_partition_for_uses_offsets_topic_num_partitions(tmp_path):
    broker = Broker(tmp_path, offsets_topic_num_partitions=50)
    assert broker.store.partition_for("a") == 47
    assert broker.store.partition_for("polygenelubricants") == 0


# --- append -------------------------------------------------------------------------------------

def test_append_then_load_round_trip_with_last_value_per_key_and_tombstones(tmp_path):
    broker = Broker(tmp_path)
    broker.become()
    store = broker.store
    assert now(store.append(0, [group_record("g1", GROUP),
                                offset_record("g1", "t", 0, OAM),
                                offset_record("g1", "t", 1, OAM)])) == 0
    newer = OAM._replace(offset=99)
    assert now(store.append(0, [offset_record("g1", "t", 0, newer),
                                offset_record("g1", "t", 1, None),
                                group_record("g2", GROUP._replace(generation=7)),
                                group_record("g2", None)])) == 0
    groups, offsets, *_ = pump(broker.reactor, store.load(0))[0]
    assert groups == {"g1": GROUP, "g2": None}
    assert offsets == {("g1", "t", 0): newer, ("g1", "t", 1): None}
    # one uncompressed batch per append, CreateTime timestamps of now, Kafka's bytes stored
    stored = broker.log().read(0, 1 << 20).records
    batch_records = list(iter_records(stored))
    assert [r.offset for r in batch_records] == list(range(7))
    assert {r.timestamp for r in batch_records} == {broker.clock_ms()}
    assert batch_records[1].key == records.offset_key("g1", "t", 0)
    assert batch_records[1].value == records.offset_value(OAM)


def test_an_empty_append_succeeds_without_writing(tmp_path):
    broker = Broker(tmp_path)
    broker.become()
    assert now(broker.store.append(0, [])) == 0
    assert broker.log().log_end_offset == 0


def test_acks_all_fires_once_the_followers_have_the_batch(tmp_path):
    broker = Broker(tmp_path)
    broker.become(replicas=(1, 2))
    d = broker.store.append(0, [offset_record("g", "t", 0, OAM)])
    assert now(d) is None                         # follower 2 has not fetched yet
    broker.follower_fetch(2, 0)
    assert now(d) is None                         # it fetched the batch...
    broker.follower_fetch(2, 1)                   # ...and now says it has it: HW moves
    assert now(d) == 0


def test_request_timed_out_after_offsets_commit_timeout_ms(tmp_path):
    broker = Broker(tmp_path, offsets_commit_timeout_ms=250)
    broker.become(replicas=(1, 2))
    d = broker.store.append(0, [offset_record("g", "t", 0, OAM)])
    broker.reactor.advance(0.2)
    assert now(d) is None
    broker.reactor.advance(0.06)
    assert now(d) == errors.RequestTimedOutError.code


def test_not_coordinator_when_not_the_leader_or_not_hosted(tmp_path):
    broker = Broker(tmp_path)
    batch = [offset_record("g", "t", 0, OAM)]
    assert now(broker.store.append(0, batch)) == errors.NotCoordinatorError.code   # not hosted
    broker.become(leader=2, replicas=(1, 2))
    assert now(broker.store.append(0, batch)) == errors.NotCoordinatorError.code   # follower
    assert broker.log().log_end_offset == 0


def test_not_coordinator_when_leadership_moves_while_waiting(tmp_path):
    broker = Broker(tmp_path)
    broker.become(replicas=(1, 2))
    d = broker.store.append(0, [offset_record("g", "t", 0, OAM)])
    broker.become(leader=2, replicas=(1, 2), epoch=1)
    assert now(d) == errors.NotCoordinatorError.code


def test_not_enough_replicas_below_min_insync_replicas(tmp_path):
    broker = Broker(tmp_path, min_isr=2)
    broker.become(replicas=(1, 2), isr=(1,))
    d = broker.store.append(0, [offset_record("g", "t", 0, OAM)])
    assert now(d) == errors.NotEnoughReplicasError.code
    assert broker.log().log_end_offset == 0


def test_required_acks_1_answers_after_the_local_append(tmp_path):
    broker = Broker(tmp_path, offsets_commit_required_acks=1)
    broker.become(replicas=(1, 2))
    assert now(broker.store.append(0, [offset_record("g", "t", 0, OAM)])) == 0


def test_clients_cannot_produce_to_the_internal_topic(tmp_path):
    broker = Broker(tmp_path)
    broker.become()
    batch = build_batch([(0, b"k", b"v", None)])
    response = broker.replica_manager.append_records(30000, 1, False,
                                                     {(OFFSETS_TOPIC, 0): batch})
    assert response[(OFFSETS_TOPIC, 0)].error_code == errors.InvalidTopicError.code
    assert broker.log().log_end_offset == 0


# --- load ---------------------------------------------------------------------------------------

def _fill(broker, groups=40, partitions_per_group=5, rounds=3):
    expected_offsets = {}
    expected_groups = {}
    for r in range(rounds):
        for g in range(groups):
            group = f"group-{g}"
            batch = []
            for p in range(partitions_per_group):
                oam = OAM._replace(offset=r * 1000 + p, metadata=f"r{r}")
                batch.append(offset_record(group, "topic", p, oam))
                expected_offsets[(group, "topic", p)] = oam
            snapshot = GROUP._replace(generation=r + 1)
            batch.append(group_record(group, snapshot))
            expected_groups[group] = snapshot
            assert now(broker.store.append(0, batch)) == 0
    return expected_groups, expected_offsets


def test_load_reads_in_chunks_and_yields_to_the_reactor_between_them(tmp_path):
    broker = Broker(tmp_path, offsets_load_buffer_size=2000, segment_bytes=16 * 1024)
    broker.become()
    expected_groups, expected_offsets = _fill(broker)
    assert len(broker.log().segments) > 3                  # the load crosses segments
    clock = broker.reactor
    yields = []
    call_later = clock.callLater
    clock.callLater = lambda delay, *a, **kw: yields.append(delay) or call_later(delay, *a, **kw)
    d = broker.store.load(0)
    assert now(d) is None                                  # not all in one reactor turn
    groups, offsets, *_ = pump(clock, d)[0]
    assert len(yields) >= broker.log().size // 2000 - 1    # a callLater(0) per chunk or so
    assert set(yields) == {0}
    assert groups == expected_groups
    assert offsets == expected_offsets


def test_a_batch_larger_than_the_load_buffer_is_still_read_whole(tmp_path):
    broker = Broker(tmp_path, offsets_load_buffer_size=1)
    broker.become()
    expected_groups, expected_offsets = _fill(broker, groups=3, rounds=1)
    groups, offsets, *_ = pump(broker.reactor, broker.store.load(0))[0]
    assert (groups, offsets) == (expected_groups, expected_offsets)


def test_load_of_an_empty_partition(tmp_path):
    broker = Broker(tmp_path)
    broker.become(partition=3)
    assert pump(broker.reactor, broker.store.load(3))[0] == ({}, {}, {}, {})


def test_load_refuses_a_partition_this_broker_does_not_lead(tmp_path):
    broker = Broker(tmp_path)
    with pytest.raises(errors.NotCoordinatorError):
        pump(broker.reactor, broker.store.load(0))
    broker.become(leader=2, replicas=(1, 2))
    with pytest.raises(errors.NotCoordinatorError):
        pump(broker.reactor, broker.store.load(0))


def test_load_stops_when_leadership_moves_during_it(tmp_path):
    broker = Broker(tmp_path, offsets_load_buffer_size=2000)
    broker.become(replicas=(1, 2), isr=(1,))
    _fill(broker, groups=10)
    d = broker.store.load(0)
    assert now(d) is None
    broker.become(leader=2, replicas=(1, 2), epoch=1)
    with pytest.raises(errors.NotCoordinatorError):
        pump(broker.reactor, d)


def test_undecodable_records_are_logged_and_skipped(tmp_path, caplog):
    broker = Broker(tmp_path)
    broker.become()
    assert now(broker.store.append(0, [(b"\x00\x01\x00\x05gr", b"junk"),       # truncated key
                                       (b"\x00\x09whatever", b"x"),          # unknown version
                                       offset_record("g", "t", 0, OAM)])) == 0
    with caplog.at_level(logging.ERROR, logger="kafkalite.coordinator.log_store"):
        groups, offsets, *_ = pump(broker.reactor, broker.store.load(0))[0]
    assert offsets == {("g", "t", 0): OAM} and groups == {}
    assert "offset 0" in caplog.text


def _transactional(batch: bytes, producer_id: int, control: bool = False) -> bytes:
    """Mark a built batch transactional (and control), with a producer id, as Kafka writes
    transactional offset commits and their markers; the CRC is recomputed."""
    out = bytearray(batch)
    fields = hdr.parse_header(out)
    attributes = fields.attributes | hdr.TRANSACTIONAL_BIT | (hdr.CONTROL_BIT if control else 0)
    out[hdr.ATTRIBUTES_POS:hdr.ATTRIBUTES_POS + 2] = attributes.to_bytes(2, "big")
    pid_pos = hdr.HEADER_SIZE - 4 - 4 - 2 - 8   # producer_id, epoch, base_sequence, count
    out[pid_pos:pid_pos + 8] = producer_id.to_bytes(8, "big")
    out[hdr.CRC_POS:hdr.CRC_POS + 4] = crc32c(bytes(out[hdr.ATTRIBUTES_POS:])).to_bytes(4, "big")
    return bytes(out)


def test_transactional_offsets_count_only_once_committed(tmp_path):
    broker = Broker(tmp_path)
    broker.become()
    log_ = broker.log()
    committed = OAM._replace(offset=7)
    aborted = OAM._replace(offset=8)

    def append(batch):
        log_.append(batch, assign_offsets=True, leader_epoch=0)

    append(build_batch([(0, *offset_record("g", "t", 0, OAM), None)]))
    append(_transactional(build_batch([(0, *offset_record("g", "t", 0, committed), None)]), 5))
    append(_transactional(build_batch([(0, *offset_record("g", "t", 1, aborted), None)]), 6))
    append(_transactional(build_batch([(0, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00",
                                        None)]), 5, control=True))          # COMMIT of pid 5
    append(_transactional(build_batch([(0, b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00",
                                        None)]), 6, control=True))          # ABORT of pid 6
    groups, offsets, positions, pending = pump(broker.reactor, broker.store.load(0))[0]
    assert offsets == {("g", "t", 0): committed}
    assert positions == {("g", "t", 0): 1}     # the transactional batch's, not the marker's
    assert pending == {}


def test_transactional_offsets_without_their_marker_stay_pending(tmp_path):
    """A transaction whose marker is not in the log yet: its offsets are handed back as
    pending, with their batch's position; the plain offset stays the visible one."""
    broker = Broker(tmp_path)
    broker.become()
    log_ = broker.log()
    open_ = OAM._replace(offset=9)

    def append(batch):
        log_.append(batch, assign_offsets=True, leader_epoch=0)

    append(build_batch([(0, *offset_record("g", "t", 0, OAM), None)]))
    append(_transactional(build_batch([(0, *offset_record("g", "t", 0, open_), None),
                                       (0, *offset_record("h", "u", 1, open_), None)]), 7))
    groups, offsets, positions, pending = pump(broker.reactor, broker.store.load(0))[0]
    assert offsets == {("g", "t", 0): OAM} and positions == {("g", "t", 0): 0}
    assert pending == {7: {("g", "t", 0): (1, open_), ("h", "u", 1): (1, open_)}}


# --- compaction of __consumer_offsets -----------------------------------------------------------

def test_compaction_keeps_the_newest_value_per_key_and_drops_old_tombstones(tmp_path):
    broker = Broker(tmp_path, segment_bytes=4096)
    broker.become()
    store = broker.store
    expected_groups, expected_offsets = _fill(broker, groups=10, rounds=3)
    # delete one group and one offset of another
    assert now(store.append(0, [group_record("group-0", None),
                                offset_record("group-1", "topic", 0, None)])) == 0
    log_ = broker.log()
    log_.roll()                                           # everything is now compactable
    before = log_.size
    written_at = broker.clock_ms()
    result = log_.compact(now_ms=written_at, force=True)
    assert result.records_removed > 0 and log_.size < before
    groups, offsets, *_ = pump(broker.reactor, store.load(0))[0]
    expected_groups["group-0"] = None                    # tombstones kept for now
    expected_offsets[("group-1", "topic", 0)] = None
    assert (groups, offsets) == (expected_groups, expected_offsets)
    # each key once: only the newest values stayed
    keys = [r.key for r in iter_records(log_.read(0, 1 << 24).records)]
    assert len(keys) == len(set(keys)) == len(expected_groups) + len(expected_offsets)
    # after delete.retention.ms the tombstones go too, and the keys are gone
    log_.compact(now_ms=written_at + DAY_MS + 1, force=True)
    groups, offsets, *_ = pump(broker.reactor, store.load(0))[0]
    del expected_groups["group-0"], expected_offsets[("group-1", "topic", 0)]
    assert (groups, offsets) == (expected_groups, expected_offsets)


# --- the topic ----------------------------------------------------------------------------------

def test_ensure_topic_with_fewer_live_brokers_than_the_replication_factor_warns(tmp_path, caplog):
    broker = Broker(tmp_path, offsets_topic_num_partitions=50)
    with caplog.at_level(logging.WARNING, logger="kafkalite.coordinator.internal_topic"):
        assert now(broker.store.ensure_topic()) is None
    [(topic, assignment, config)] = broker.deferred_zk.created
    assert topic == OFFSETS_TOPIC
    assert sorted(assignment) == list(range(50))
    assert all(replicas == [1] for replicas in assignment.values())
    assert config == {"cleanup.policy": "compact", "segment.bytes": "104857600",
                      "compression.type": "producer"}
    assert "offsets.topic.replication.factor" in caplog.text


def test_ensure_topic_uses_the_replication_factor_when_enough_brokers_live(tmp_path, caplog):
    broker = Broker(tmp_path, offsets_topic_segment_bytes=1 << 20)
    broker.metadata_cache.update(m.UpdateMetadataRequest(
        controller_id=1, controller_epoch=1, partition_states=[],
        live_brokers=[m.UpdateMetadataBroker(b, "h", 9092) for b in (1, 2, 3, 4)]))
    with caplog.at_level(logging.WARNING, logger="kafkalite.coordinator.internal_topic"):
        now(broker.store.ensure_topic())
    [(_topic, assignment, config)] = broker.deferred_zk.created
    assert len(assignment) == 4 and all(len(set(r)) == 3 for r in assignment.values())
    assert config["segment.bytes"] == str(1 << 20)
    assert "offsets.topic.replication.factor" not in caplog.text


def test_ensure_topic_does_nothing_when_the_topic_exists(tmp_path):
    broker = Broker(tmp_path)
    broker.deferred_zk.exists = True
    assert now(broker.store.ensure_topic()) is None
    assert broker.deferred_zk.created == []
    broker.metadata_cache.update(m.UpdateMetadataRequest(
        controller_id=1, controller_epoch=1, live_brokers=[m.UpdateMetadataBroker(1, "h", 1)],
        partition_states=[m.UpdateMetadataPartitionState(OFFSETS_TOPIC, 0, 1, 1, 0, [1], 0,
                                                         [1], [])]))
    broker.deferred_zk.exists = False
    assert now(broker.store.ensure_topic()) is None       # known from metadata: no ZooKeeper
    assert broker.deferred_zk.created == []


def test_concurrent_ensure_topic_calls_share_one_creation(tmp_path):
    broker = Broker(tmp_path)
    broker.deferred_zk.hold = defer.Deferred()
    first, second = broker.store.ensure_topic(), broker.store.ensure_topic()
    assert now(first) is None and now(second) is None and len(broker.deferred_zk.created) == 1
    broker.deferred_zk.hold.errback(errors.TopicAlreadyExistsError("raced"))   # another broker won
    assert now(first) is None and now(second) is None
    assert first.called and second.called


def test_ensure_topic_fails_without_live_brokers(tmp_path):
    broker = Broker(tmp_path)
    broker.deferred_zk.broker_ids = []
    with pytest.raises(errors.CoordinatorNotAvailableError):
        now(broker.store.ensure_topic())


# --- leadership hooks ---------------------------------------------------------------------------

def test_replica_manager_reports_leadership_changes(tmp_path):
    broker = Broker(tmp_path)
    tp = (OFFSETS_TOPIC, 0)
    broker.become(epoch=3)
    assert broker.roles == [(tp, True, 3)]
    # the same epoch again: ignored, as Kafka (STALE_CONTROLLER_EPOCH), and no news
    broker.become(epoch=3, expected_error=errors.StaleControllerEpochError.code)
    assert broker.roles == [(tp, True, 3)]
    # a new epoch of the same leader (an ISR shrink, say): not news, as Kafka's makeLeader
    # (isNewLeader) -- the coordinators keep their state rather than reload the partition
    broker.become(epoch=4)
    assert broker.roles == [(tp, True, 3)]
    broker.become(leader=2, replicas=(1, 2), epoch=5)      # follower
    broker.become(leader=1, replicas=(1, 2), epoch=6)      # leader again: news
    assert broker.roles[1:] == [(tp, False, 5), (tp, True, 6)]
    broker.replica_manager.stop_replicas(m.StopReplicaRequest(
        controller_id=1, controller_epoch=1, partitions=[m.TopicPartition(*tp)]))
    assert broker.roles[-1] == (tp, False, 6)


def test_broker_passes_offsets_partitions_to_the_group_coordinator():
    calls = []
    coordinator = SimpleNamespace(on_elected=lambda p, e: calls.append(("elected", p, e)),
                                  on_resigned=lambda p, e: calls.append(("resigned", p, e)))
    broker = SimpleNamespace(group_coordinator=coordinator)
    BrokerService._on_leadership_change(broker, (OFFSETS_TOPIC, 7), True, 2)
    BrokerService._on_leadership_change(broker, (OFFSETS_TOPIC, 7), False, 3)
    BrokerService._on_leadership_change(broker, ("other", 7), True, 2)
    assert calls == [("elected", 7, 2), ("resigned", 7, 3)]
    BrokerService._on_leadership_change(SimpleNamespace(group_coordinator=None),
                                        (OFFSETS_TOPIC, 1), True, 0)


def test_an_append_tells_where_its_batch_went(tmp_path):
    """The code an append fires with carries the batch's base offset (the group coordinator
    orders plain and transactional commits by it)."""
    broker = Broker(tmp_path)
    broker.become()
    first = now(broker.store.append(0, [offset_record("g", "t", 0, OAM)] * 3))
    second = now(broker.store.append(0, [offset_record("g", "t", 1, OAM)]))
    assert (first, first.base_offset) == (0, 0)
    assert (second, second.base_offset) == (0, 3)
    broker.become(leader=2, replicas=(1, 2), epoch=1)
    refused = now(broker.store.append(0, [offset_record("g", "t", 1, OAM)]))
    assert (refused, refused.base_offset) == (errors.NotCoordinatorError.code, -1)


def test_transactional_appends_carry_the_producer_and_end_with_the_marker(tmp_path):
    """TxnOffsetCommit's batches: transactional, the producer's id and epoch, no sequence to
    check (two batches of one transaction both go in, as Kafka's AppendOrigin.Coordinator);
    the load counts them once the coordinator's COMMIT marker is in the log."""
    from kafkalite.record.control import build_control_batch
    broker = Broker(tmp_path)
    broker.become()
    first = OAM._replace(offset=11)
    second = OAM._replace(offset=12)
    for record in (offset_record("g", "t", 0, first), offset_record("g", "t", 1, second)):
        code = now(broker.store.append(0, [record], producer_id=77, producer_epoch=2,
                                       transactional=True))
        assert code == 0
    headers = [h for h, _ in iter_batches(broker.log().read(0, 1 << 20).records)]
    assert [(h.producer_id, h.producer_epoch, bool(h.attributes & hdr.TRANSACTIONAL_BIT))
            for h in headers] == [(77, 2, True), (77, 2, True)]
    _, offsets, positions, pending = pump(broker.reactor, broker.store.load(0))[0]
    assert offsets == {} and pending == {77: {("g", "t", 0): (0, first),
                                              ("g", "t", 1): (1, second)}}
    marker = build_control_batch(77, 2, True, 5, broker.clock_ms())
    result = now(defer.maybeDeferred(
        broker.replica_manager.append_records, 1000, -1, True,
        {(OFFSETS_TOPIC, 0): marker}, origin="coordinator"))
    assert result[(OFFSETS_TOPIC, 0)].error_code == 0
    _, offsets, positions, pending = pump(broker.reactor, broker.store.load(0))[0]
    assert offsets == {("g", "t", 0): first, ("g", "t", 1): second} and pending == {}
    assert positions == {("g", "t", 0): 0, ("g", "t", 1): 1}


def test_offsets_stored_as_magic_1_messages_load_back(tmp_path):
    """A broker whose log.message.format.version is below 0.11 stores __consumer_offsets as
    magic 1 messages (Kafka's group coordinator writes them at the topic's magic); they load."""
    import dataclasses

    broker = Broker(tmp_path)
    broker.log_manager.update_config(OFFSETS_TOPIC, dataclasses.replace(
        broker.topic_config, message_format_version="0.10.2"))
    broker.become()
    store = broker.store
    assert now(store.append(0, [group_record("g1", GROUP),
                                offset_record("g1", "t", 0, OAM)])) == 0
    assert now(store.append(0, [offset_record("g1", "t", 0, OAM._replace(offset=7))])) == 0
    stored = broker.log().read(0, 1 << 20).records
    assert {h.magic for _p, h in hdr.iter_headers(stored)} == {1}
    groups, offsets, *_ = pump(broker.reactor, store.load(0))[0]
    assert groups == {"g1": GROUP}
    assert offsets == {("g1", "t", 0): OAM._replace(offset=7)}
