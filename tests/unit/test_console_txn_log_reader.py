"""The console's reader of ``__transaction_state`` over a fake log (a fake admin client and
consumer, no network): what was in the log at the first look is history, what comes later is
news; a log created after the first look is all news; after a failure the consumer is made again,
re-reads from the start and hands nothing out as news twice; undecodable records are skipped;
one round stops after its time budget and the next goes on."""

from types import SimpleNamespace

import pytest

from kafkalite.console.txn_log_reader import TOPIC, TxnLogReader
from kafkalite.errors import KafkaError, UnknownTopicOrPartitionError
from kafkalite.txn import log_records
from kafkalite.txn.log_records import TxnLogEntry
from kafkalite.txn.metadata import TxnState


def value(state, epoch=0):
    return log_records.value(TxnLogEntry(7, epoch, 60000, state,
                                         frozenset() if state == TxnState.EMPTY
                                         else frozenset({("t", 0)}), 2, 1))


class FakeLog:
    """Partitions of __transaction_state as lists of (key, value); ``fail`` makes the next
    consumer call raise."""

    def __init__(self, partitions=2):
        self.records = {p: [] for p in range(partitions)}
        self.exists = True
        self.fail = False
        self.consumers = []

    def write(self, partition, transactional_id, state, epoch=0):
        self.records[partition].append((log_records.key(transactional_id), value(state, epoch)))

    def describe_topics(self, names):
        assert names == [TOPIC]
        if not self.exists:
            raise UnknownTopicOrPartitionError("no such topic")
        return [SimpleNamespace(partitions=[SimpleNamespace(partition=p) for p in self.records])]

    def consumer(self, **config):
        consumer = FakeConsumer(self)
        self.consumers.append(consumer)
        return consumer


class FakeConsumer:
    def __init__(self, log):
        self.log = log
        self.positions = {}
        self.closed = False

    def _check(self):
        if self.log.fail:
            self.log.fail = False
            raise KafkaError("broker gone")

    def assign(self, tps):
        self.positions = {tp: 0 for tp in tps}

    def seek_to_beginning(self, *tps):
        for tp in tps:
            self.positions[tp] = 0

    def end_offsets(self, tps):
        self._check()
        return {tp: len(self.log.records[tp.partition]) for tp in tps}

    def position(self, tp):
        return self.positions[tp]

    def poll(self, timeout_ms):
        self._check()
        out = {}
        for tp, position in self.positions.items():
            batch = [SimpleNamespace(offset=o, key=k, value=v) for o, (k, v) in
                     enumerate(self.log.records[tp.partition]) if o >= position][:2]
            if batch:
                out[tp] = batch
                self.positions[tp] = batch[-1].offset + 1
        return out

    def close(self, autocommit=True):
        self.closed = True


def reader(log, clock=None):
    return TxnLogReader(consumer_factory=log.consumer, clock=clock or (lambda: 0.0))


def said(records):
    return [(r.partition, r.offset, r.transactional_id, str(r.entry.state), r.history)
            for r in records]


def test_the_log_at_the_first_look_is_history_and_what_follows_is_news():
    log = FakeLog()
    log.write(0, "a", TxnState.ONGOING)
    log.write(1, "b", TxnState.COMPLETE_COMMIT)
    r = reader(log)
    assert said(r.read("bs", log)) == [(0, 0, "a", "Ongoing", True),
                                       (1, 0, "b", "CompleteCommit", True)]
    log.write(0, "a", TxnState.PREPARE_COMMIT)
    log.write(0, "a", TxnState.COMPLETE_COMMIT)
    assert said(r.read("bs", log)) == [(0, 1, "a", "PrepareCommit", False),
                                       (0, 2, "a", "CompleteCommit", False)]
    assert r.read("bs", log) == []
    assert len(log.consumers) == 1


def test_a_log_created_after_the_first_look_is_all_news():
    log = FakeLog()
    log.exists = False
    r = reader(log)
    assert r.read("bs", log) == [] and log.consumers == []
    log.exists = True
    log.write(1, "c", TxnState.ONGOING)
    assert said(r.read("bs", log)) == [(1, 0, "c", "Ongoing", False)]


def test_after_a_failure_the_log_is_read_again_and_nothing_is_news_twice():
    log = FakeLog()
    r = reader(log)
    r.read("bs", log)
    log.write(0, "a", TxnState.ONGOING)
    assert said(r.read("bs", log)) == [(0, 0, "a", "Ongoing", False)]
    log.fail = True
    with pytest.raises(KafkaError):
        r.read("bs", log)
    assert log.consumers[0].closed
    log.write(0, "a", TxnState.PREPARE_ABORT)
    assert said(r.read("bs", log)) == [(0, 0, "a", "Ongoing", True),
                                       (0, 1, "a", "PrepareAbort", False)]
    assert len(log.consumers) == 2


def test_undecodable_records_are_skipped_and_tombstones_kept():
    log = FakeLog(partitions=1)
    r = reader(log)
    r.read("bs", log)
    log.records[0].append((b"\x00\x09junk", b"junk"))
    log.records[0].append((log_records.key("gone"), None))
    got = r.read("bs", log)
    assert [(x.offset, x.transactional_id, x.entry) for x in got] == [(1, "gone", None)]


def test_a_round_stops_after_its_budget_and_the_next_goes_on():
    log = FakeLog(partitions=1)
    ticks = iter(range(100))
    r = TxnLogReader(consumer_factory=log.consumer, budget_s=0.5,
                     clock=lambda: float(next(ticks)))
    r.read("bs", log)
    for _ in range(5):
        log.write(0, "a", TxnState.ONGOING)
    first = r.read("bs", log)
    assert [x.offset for x in first] == [0, 1]          # one poll of 2, then out of time
    assert [x.offset for x in r.read("bs", log)] == [2, 3]
    assert [x.offset for x in r.read("bs", log)] == [4]
