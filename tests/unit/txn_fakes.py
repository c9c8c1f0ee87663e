"""Fakes for the transaction coordinator's unit tests: an in-memory ``__transaction_state``
(what ``InternalTopicLog`` offers the state store: placement, append, read), a broker with a
``task.Clock`` reactor, a metadata cache and a WriteTxnMarkers sender whose answers the test
gives. The real TransactionStateManager, TransactionCoordinator and marker channel run on them.
"""

from __future__ import annotations

from types import SimpleNamespace

from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalite.config import BrokerConfig
from kafkalite.coordinator.partitioner import partition_for
from kafkalite.protocol import messages as m
from kafkalite.server.metadata_cache import BrokerEndpoint, MetadataCache
from kafkalite.topic_partition import TopicPartition
from kafkalite.txn import log_records
from kafkalite.txn.coordinator import TransactionCoordinator
from kafkalite.txn.markers import TransactionMarkerChannelManager
from kafkalite.txn.state_store import TRANSACTION_STATE_TOPIC, TransactionStateManager

PARTITIONS = 4


class FakeTopicLog:
    """``__transaction_state`` in memory. ``codes`` are the next appends' error codes (0 when
    empty); with ``holding`` set, appends wait until ``release()``."""

    topic = TRANSACTION_STATE_TOPIC

    def __init__(self, partitions: int = PARTITIONS):
        self.partitions = partitions
        self.logs: dict[int, list] = {p: [] for p in range(partitions)}
        self.codes: list[int] = []
        self.holding = False
        self.held: list = []
        self.created = 0
        self.timeouts: list = []          # each append's timeout_ms

    def partition_for(self, key: str) -> int:
        return partition_for(key, self.partitions)

    def append(self, partition, records, timeout_ms=None):
        self.timeouts.append(timeout_ms)
        code = self.codes.pop(0) if self.codes else 0
        if self.holding:
            d = defer.Deferred()
            self.held.append((d, partition, records, code))
            return d
        return defer.succeed(self._write(partition, records, code))

    def _write(self, partition, records, code):
        if code == 0:
            self.logs[partition].extend(records)
        return code

    def release(self):
        held, self.held = self.held, []
        self.holding = False
        for d, partition, records, code in held:
            d.callback(self._write(partition, records, code))

    def read(self, partition, apply_batch):
        for offset, (key, value) in enumerate(self.logs[partition]):
            apply_batch(None, [SimpleNamespace(key=key, value=value, offset=offset)])
        return defer.succeed(len(self.logs[partition]))

    def ensure_topic(self):
        self.created += 1
        return defer.succeed(None)

    # --- what the tests read ----------------------------------------------------------------
    def entries(self, transactional_id: str) -> list:
        """Every value written for the id (None for a tombstone), oldest first."""
        key = log_records.key(transactional_id)
        partition = self.partition_for(transactional_id)
        return [None if v is None else log_records.parse(k, v)[1]
                for k, v in self.logs[partition] if k == key]

    def last(self, transactional_id: str):
        entries = self.entries(transactional_id)
        return entries[-1] if entries else None


class MarkerSender:
    """WriteTxnMarkers requests as sent; each waits for ``answer``/``fail``."""

    def __init__(self):
        self.sent: list = []       # (broker id, request, Deferred)

    def __call__(self, broker_id, endpoint, request):
        d = defer.Deferred()
        self.sent.append((broker_id, request, d))
        return d

    def partitions(self, index=-1) -> list:
        _, request, _ = self.sent[index]
        return sorted(TopicPartition(t.name, p) for marker in request.markers
                      for t in marker.topics for p in t.partition_indexes)

    def answer(self, index=-1, code=0, codes=None):
        """Answer request ``index``: every partition ``code`` (or ``codes[(topic, p)]``)."""
        _, request, d = self.sent[index]
        codes = codes or {}
        d.callback(m.WriteTxnMarkersResponse(markers=[
            m.WritableTxnMarkerResult(marker.producer_id, [
                m.WritableTxnMarkerTopicResult(t.name, [
                    m.WritableTxnMarkerPartitionResult(p, codes.get((t.name, p), code))
                    for p in t.partition_indexes])
                for t in marker.topics])
            for marker in request.markers]))

    def fail(self, index=-1, exc=None):
        from kafkalite.errors import NetworkError
        self.sent[index][2].errback(exc or NetworkError("connection lost"))


class FakeBroker:
    def __init__(self, broker_id=1, **config):
        self.broker_id = broker_id
        self.reactor = Clock()
        self.reactor.advance(1_000_000)
        config.setdefault("transaction_state_log_num_partitions", PARTITIONS)
        self.config = BrokerConfig(broker_id=broker_id, zookeeper_connect="zk", **config)
        self.metadata_cache = MetadataCache(broker_id)
        self.metadata_cache.brokers = {
            i: BrokerEndpoint(i, "127.0.0.1", 9000 + i) for i in (1, 2, 3)}
        self.next_producer_id = 1000

    def clock_ms(self) -> int:
        return int(self.reactor.seconds() * 1000)

    def allocate_producer_id(self):
        self.next_producer_id += 1
        return defer.succeed(self.next_producer_id - 1)

    def lead(self, topic: str, partition: int, leader: int) -> None:
        """The metadata cache says ``leader`` leads the partition (-1: no leader)."""
        state = m.UpdateMetadataPartitionState(topic, partition, 0, leader, 0, [1, 2, 3], 0,
                                               [1, 2, 3], [])
        self.metadata_cache.partitions.setdefault(topic, {})[partition] = state

    def forget(self, topic: str) -> None:
        self.metadata_cache.partitions.pop(topic, None)


def coordinator(**config):
    """(coordinator, broker, topic log, marker sender), every __transaction_state partition
    loaded at coordinator epoch 5."""
    broker = FakeBroker(**config)
    topic_log = FakeTopicLog()
    state = TransactionStateManager(broker, topic_log=topic_log)
    sender = MarkerSender()
    markers = TransactionMarkerChannelManager(broker, state, send=sender)
    coord = TransactionCoordinator(broker, state=state, markers=markers)
    for partition in range(PARTITIONS):
        coord.on_elected(partition, 5)
    return coord, broker, topic_log, sender


def result(d: defer.Deferred):
    """The result a Deferred already has; fails the test if it has none or failed."""
    box = []
    d.addBoth(box.append)
    assert box, "the Deferred has not fired"
    if hasattr(box[0], "raiseException"):
        box[0].raiseException()
    return box[0]


def flush(broker: FakeBroker, seconds: float = 0.0) -> None:
    """Run the reactor's due calls (and those ``seconds`` later)."""
    broker.reactor.advance(0)
    if seconds:
        broker.reactor.advance(seconds)
