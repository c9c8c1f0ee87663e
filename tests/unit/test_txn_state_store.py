"""The transaction state store (kafkalite.txn.state_store, Kafka 2.8's TransactionStateManager)
over a real ReplicaManager and real logs in a temp dir, time driven by task.Clock: transitions
written through the produce path with acks=all (waiting for the ISR, refused below
min.insync.replicas, NOT_COORDINATOR after losing leadership), Kafka's bytes in the log, a second
coordinator loading the same log (newest value per id, tombstones, markers for Prepare*), and
``__transaction_state`` created compacted with its min.insync.replicas."""

from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalite import errors
from kafkalite.config import BrokerConfig, TopicConfig
from kafkalite.log.manager import LogManager
from kafkalite.protocol import messages as m
from replica_fakes import live_leaders
from kafkalite.record import iter_records
from kafkalite.server.data_values import FetchParams, PartitionData
from kafkalite.server.metadata_cache import MetadataCache
from kafkalite.server.replica_manager import ReplicaManager
from kafkalite.topic_partition import TopicPartition
from kafkalite.txn import log_records
from kafkalite.txn.coordinator import TransactionCoordinator
from kafkalite.txn.markers import TransactionMarkerChannelManager
from kafkalite.txn.metadata import TxnState
from kafkalite.txn.state_store import TRANSACTION_STATE_TOPIC as TOPIC
from kafkalite.txn.state_store import TransactionStateManager

S = TxnState
TP = TopicPartition("orders", 0)


class FakeTzk:
    def __init__(self):
        self.created = []

    def topic_exists(self, topic):
        return defer.succeed(any(c[0] == topic for c in self.created))

    def get_broker_ids(self):
        return defer.succeed([1])

    def create_topic(self, topic, assignment, config):
        self.created.append((topic, assignment, config))
        return defer.succeed(None)


class Broker:
    """What the state store needs of a BrokerService, over a real ReplicaManager; one
    ``__transaction_state`` partition, so every id lives in partition 0."""

    def __init__(self, tmp_path, min_isr=1, **config):
        self.broker_id = 1
        self.reactor = Clock()
        self.reactor.advance(1000)
        config.setdefault("transaction_state_log_num_partitions", 1)
        self.config = BrokerConfig(broker_id=1, zookeeper_connect="zk", **config)
        self.log_manager = LogManager([str(tmp_path / "b1")], TopicConfig(), self.reactor,
                                      self.clock_ms)
        self.log_manager.update_config(TOPIC, TopicConfig(
            cleanup_policy=("compact",), min_insync_replicas=min_isr, file_delete_delay_ms=0))
        self.log_manager.startService()
        self.replica_manager = ReplicaManager(
            1, self.log_manager, self.reactor, self.clock_ms,
            topic_config=self.log_manager.config_for, replica_lag_time_max_ms=10000,
            isr_change_callback=lambda p, isr: None)
        self.replica_manager.start()
        self.metadata_cache = MetadataCache(1)
        self.deferred_zk = FakeTzk()
        self.sent = []
        self.next_producer_id = 500

    def clock_ms(self):
        return int(self.reactor.seconds() * 1000)

    def allocate_producer_id(self):
        self.next_producer_id += 1
        return defer.succeed(self.next_producer_id - 1)

    def coordinator(self):
        state = TransactionStateManager(self)
        markers = TransactionMarkerChannelManager(
            self, state, send=lambda *a: self.sent.append(a) or defer.Deferred())
        return TransactionCoordinator(self, state=state, markers=markers)

    def become(self, leader=1, replicas=(1,), isr=None, epoch=0):
        state = m.LeaderAndIsrPartitionState(TOPIC, 0, 1, leader, epoch,
                                             list(isr if isr is not None else replicas), 0,
                                             list(replicas))
        self.replica_manager.become_leader_or_follower(m.LeaderAndIsrRequest(
            controller_id=1, controller_epoch=1, partition_states=[state],
            live_leaders=live_leaders(replicas)))

    def follower_fetch(self, replica_id, offset):
        return self.replica_manager.fetch(FetchParams(replica_id, max_wait_ms=0, min_bytes=1),
                                          {(TOPIC, 0): PartitionData(offset, max_bytes=1 << 20)})

    def log(self):
        return self.replica_manager.partitions[(TOPIC, 0)].log


def fired(d):
    """The Deferred's result so far (None if it has none); it keeps its result."""
    box = []
    d.addBoth(lambda r: box.append(r) or r)
    if not box:
        return None
    if hasattr(box[0], "raiseException"):
        box[0].raiseException()
    return box[0]


def pump(broker, d, turns=1000):
    for _ in range(turns):
        result = fired(d)
        if result is not None:
            return result
        broker.reactor.advance(0)
    raise AssertionError("the Deferred never fired")


def elected(broker, epoch=0):
    coordinator = broker.coordinator()
    pump(broker, coordinator.on_elected(0, epoch))
    return coordinator


def test_transitions_are_written_with_kafkas_bytes_and_reloaded_by_the_next_coordinator(
        tmp_path):
    broker = Broker(tmp_path)
    broker.become()
    coordinator = elected(broker)
    assert tuple(pump(broker, coordinator.init_producer_id("tx", 60000))) == (0, 500, 0)
    assert pump(broker, coordinator.add_partitions("tx", 500, 0, [TP])) == 0
    assert tuple(pump(broker, coordinator.init_producer_id("idle", 60000))) == (0, 501, 0)
    # orders-0 is led by this broker; its marker is sent and never answered
    broker.metadata_cache.partitions["orders"] = {0: m.UpdateMetadataPartitionState(
        "orders", 0, 1, 1, 0, [1], 0, [1], [])}
    broker.metadata_cache.brokers = {1: object()}
    assert pump(broker, coordinator.end_txn("tx", 500, 0, True)) == 0
    # three states of "tx" and one of "idle", one record per batch, Kafka's key and value
    stored = list(iter_records(broker.log().read(0, 1 << 20).records))
    parsed = [log_records.parse(r.key, r.value) for r in stored]
    assert [(i, e.state) for i, e in parsed] == [
        ("tx", S.EMPTY), ("tx", S.ONGOING), ("idle", S.EMPTY), ("tx", S.PREPARE_COMMIT)]
    assert parsed[-1][1].partitions == {TP}
    # a new coordinator (leader epoch 1) loads the log: the newest value per id, and the
    # prepared commit's markers are sent again
    broker.reactor.advance(0)
    assert len(broker.sent) == 1
    broker.sent.clear()
    successor = elected(broker, epoch=1)
    code, found = successor.state.get_transaction_state("tx")
    assert code == 0 and found.coordinator_epoch == 1
    assert (found.metadata.state, found.metadata.topic_partitions) == (S.PREPARE_COMMIT, {TP})
    assert found.metadata.pending_state == S.COMPLETE_COMMIT   # the markers' completion
    assert successor.state.get_transaction_state("idle")[1].metadata.state == S.EMPTY
    broker.reactor.advance(0)
    [(destination, _endpoint, request)] = broker.sent
    assert destination == 1 and request.markers[0].coordinator_epoch == 1


def test_a_tombstone_removes_the_id_on_load(tmp_path):
    broker = Broker(tmp_path, transactional_id_expiration_ms=1000)
    broker.become()
    coordinator = elected(broker)
    pump(broker, coordinator.init_producer_id("tx", 60000))
    broker.reactor.advance(2)
    pump(broker, coordinator.state.remove_expired_transactional_ids())
    assert coordinator.state.get_transaction_state("tx") == (0, None)
    stored = list(iter_records(broker.log().read(0, 1 << 20).records))
    assert stored[-1].key == log_records.key("tx") and stored[-1].value is None
    successor = elected(broker, epoch=1)
    assert successor.state.get_transaction_state("tx") == (0, None)


def test_acks_all_waits_for_the_follower(tmp_path):
    broker = Broker(tmp_path)
    broker.become(replicas=(1, 2))
    coordinator = elected(broker)
    d = coordinator.init_producer_id("tx", 60000)
    broker.reactor.advance(0)
    assert fired(d) is None                     # follower 2 has not fetched it yet
    broker.follower_fetch(2, 0)
    broker.follower_fetch(2, 1)
    assert tuple(pump(broker, d)) == (0, 500, 0)


def test_below_min_insync_replicas_the_coordinator_is_not_available(tmp_path):
    broker = Broker(tmp_path, min_isr=2)
    broker.become(replicas=(1, 2), isr=(1,))
    coordinator = elected(broker)
    result = pump(broker, coordinator.init_producer_id("tx", 60000))
    assert result.error_code == errors.CoordinatorNotAvailableError.code
    assert broker.log().log_end_offset == 0
    assert coordinator.state.get_transaction_state("tx")[1].metadata.pending_state is None


def test_losing_leadership_during_the_write_answers_not_coordinator(tmp_path):
    broker = Broker(tmp_path)
    broker.become(replicas=(1, 2))
    coordinator = elected(broker)
    d = coordinator.init_producer_id("tx", 60000)
    broker.reactor.advance(0)
    broker.become(leader=2, replicas=(1, 2), epoch=1)      # this broker now follows
    coordinator.on_resigned(0, 1)
    assert pump(broker, d).error_code == errors.NotCoordinatorError.code
    assert pump(broker, coordinator.init_producer_id("tx", 60000)).error_code == \
        errors.NotCoordinatorError.code


def test_the_topic_is_created_compacted_with_its_min_isr(tmp_path):
    broker = Broker(tmp_path, transaction_state_log_num_partitions=50,
                    transaction_state_log_min_isr=2,
                    transaction_state_log_segment_bytes=1 << 20)
    coordinator = broker.coordinator()
    assert fired(coordinator.state.topic_log.ensure_topic()) is None
    [(topic, assignment, config)] = broker.deferred_zk.created
    assert topic == "__transaction_state" and sorted(assignment) == list(range(50))
    assert config == {"cleanup.policy": "compact", "segment.bytes": str(1 << 20),
                      "compression.type": "uncompressed", "min.insync.replicas": "2",
                      "unclean.leader.election.enable": "false"}
    assert coordinator.partition_for("a") == 47      # abs(javaHash) % 50, as Kafka's


def test_a_transition_waits_up_to_the_transaction_timeout(tmp_path):
    broker = Broker(tmp_path, request_timeout_ms=1000)
    broker.become(replicas=(1, 2))
    coordinator = elected(broker)
    d = coordinator.init_producer_id("tx", 5000)
    broker.reactor.advance(4.9)                 # past request.timeout.ms, not the txn's
    assert fired(d) is None
    broker.reactor.advance(0.2)
    assert pump(broker, d).error_code == errors.CoordinatorNotAvailableError.code
