"""The producer state table (Kafka 2.8's ProducerStateManager/ProducerAppendInfo), pure: a
table of scenarios fed batch headers as a log would, plus the broker's dedup path."""

import time
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite import errors
from kafkalite.record import build_batch
from kafkalite.server.producer_state import (CLIENT, COORDINATOR, REPLICATION, BatchInfo,
                                             CompletedTxn, ProducerStateTable, analyze,
                                             first_producer_id)

from test_server_replica_manager import Harness, _resolved

TXN, CONTROL = 0x10, 0x30


class H(NamedTuple):
    """The header fields the producer state reads."""
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_offset_delta: int
    attributes: int = 0
    max_timestamp: int = 1000

    @property
    def record_count(self):
        return self.last_offset_delta + 1


class Log:
    """Feeds batches to a table as Partition does: validate, then apply at the log end."""

    def __init__(self):
        self.table = ProducerStateTable("t-0")
        self.end = 0
        self.completed = []

    def append(self, header, marker=None, origin=CLIENT):
        analysis = analyze(self.table, [BatchInfo(header, self.end, marker)], origin)
        if analysis.duplicate is not None:
            return analysis.duplicate
        for info in analysis.infos.values():
            self.table.apply(info)
        for done in analysis.completed:
            done_lso = self.table.last_stable_offset(done)
            self.completed.append((done, done_lso))
            self.table.complete(done)
        first = self.end
        self.end += header.last_offset_delta + 1
        return first

    def data(self, pid, epoch, seq, n=1, txn=False, origin=CLIENT):
        return self.append(H(pid, epoch, seq, n - 1, TXN if txn else 0), origin=origin)

    def marker(self, pid, epoch, commit, coordinator_epoch=0, origin=COORDINATOR):
        return self.append(H(pid, epoch, -1, 0, CONTROL), (commit, coordinator_epoch), origin)


def test_in_order_batches_and_a_retry_gets_its_offsets():
    log = Log()
    assert log.data(7, 0, 0, 3) == 0
    assert log.data(7, 0, 3, 2) == 3
    cached = log.data(7, 0, 0, 3)                       # the first batch, retried
    assert (cached.first_offset, cached.last_offset) == (0, 2)
    assert log.end == 5


@pytest.mark.parametrize("epoch,sequence,error", [
    (0, 9, errors.OutOfOrderSequenceNumberError),       # a gap
    (1, 4, errors.OutOfOrderSequenceNumberError),       # a new epoch must start at 0
    (-1, 3, errors.InvalidProducerEpochError),          # fenced by a newer epoch
])
def test_rejections_leave_the_table_as_it_was(epoch, sequence, error):
    log = Log()
    log.data(7, 0, 0, 3)
    before = log.table.producers[7].copy()
    with pytest.raises(error):
        log.data(7, epoch, sequence)
    assert log.table.producers[7] == before
    # replicas take what the leader wrote, never refusing
    log.data(7, epoch, sequence, origin=REPLICATION)


def test_unknown_producer_and_new_epoch_rules():
    log = Log()
    log.data(3, 5, 42)                    # no state (records deleted): any sequence, as Kafka
    log.data(3, 6, 0)                     # a new epoch from 0
    assert log.table.producers[3].epoch == 6
    log.data(3, 6, 1)
    log.data(4, 0, 2147483647)            # sequences wrap at int32 max
    log.data(4, 0, 0)


def test_only_five_batches_are_remembered():
    log = Log()
    for i in range(7):
        log.data(1, 0, i)
    assert len(log.table.producers[1].batches) == 5
    assert log.data(1, 0, 6).first_offset == 6          # a retry of the last is a duplicate
    with pytest.raises(errors.OutOfOrderSequenceNumberError):
        log.data(1, 0, 0)                                # the first is forgotten: a gap


def test_begin_continue_commit():
    log = Log()
    log.data(1, 0, 0, 2, txn=True)                       # 0-1 begins
    log.data(2, 0, 0)                                     # 2, another producer, plain
    log.data(1, 0, 2, 2, txn=True)                       # 3-4 continues
    assert log.table.producers[1].current_txn_first_offset == 0
    assert log.table.first_unstable_offset(high_watermark=5) == 0
    log.marker(1, 0, commit=True)                         # 5
    assert log.completed == [(CompletedTxn(1, 0, 5, False), 6)]
    assert log.table.producers[1].current_txn_first_offset is None
    # decided, but its marker is not below the HW yet: still unstable
    assert log.table.first_unstable_offset(high_watermark=5) == 0
    assert log.table.first_unstable_offset(high_watermark=6) is None
    log.data(1, 0, 4, txn=True)                           # 6: the next transaction
    assert log.table.first_unstable_offset(high_watermark=5) == 6


def test_abort_and_an_empty_transaction():
    log = Log()
    log.data(1, 0, 0, txn=True)
    log.marker(1, 0, commit=False, coordinator_epoch=3)
    assert log.completed == [(CompletedTxn(1, 0, 1, True), 2)]
    log.marker(1, 0, commit=False, coordinator_epoch=3)   # nothing ongoing: no CompletedTxn
    assert len(log.completed) == 1
    assert log.table.producers[1].coordinator_epoch == 3


def test_plain_data_inside_a_transaction_is_invalid_txn_state():
    log = Log()
    log.data(1, 0, 0, txn=True)
    with pytest.raises(errors.InvalidTxnStateError):
        log.data(1, 0, 1)
    assert log.table.producers[1].last_sequence == 0


@pytest.mark.parametrize("epoch,coordinator_epoch,error", [
    (0, 5, errors.InvalidProducerEpochError),             # marker of an older producer epoch
    (1, 4, errors.TransactionCoordinatorFencedError),     # from a zombie coordinator
])
def test_markers_are_fenced(epoch, coordinator_epoch, error):
    log = Log()
    log.data(1, 1, 0, txn=True)
    log.marker(1, 1, commit=True, coordinator_epoch=5)
    log.data(1, 1, 1, txn=True)
    with pytest.raises(error):
        log.marker(1, epoch, commit=False, coordinator_epoch=coordinator_epoch)
    assert log.table.producers[1].current_txn_first_offset == 2
    log.marker(1, epoch, commit=False, coordinator_epoch=coordinator_epoch, origin=REPLICATION)
    assert log.table.producers[1].current_txn_first_offset is None


def test_a_marker_with_a_newer_epoch_bumps_the_producer():
    log = Log()
    log.data(1, 0, 0, txn=True)
    log.marker(1, 1, commit=False)        # the coordinator aborted with a bumped epoch
    assert log.table.producers[1].epoch == 1
    with pytest.raises(errors.InvalidProducerEpochError):
        log.data(1, 0, 1, txn=True)


def test_lso_with_two_interleaved_transactions():
    log = Log()
    log.data(1, 0, 0, txn=True)           # 0: A begins
    log.data(2, 0, 0, txn=True)           # 1: B begins
    log.data(1, 0, 1, txn=True)           # 2: A
    log.marker(1, 0, commit=True)         # 3: A commits; B still open: the LSO stops at 1
    assert log.completed[-1] == (CompletedTxn(1, 0, 3, False), 1)
    assert log.table.first_unstable_offset(high_watermark=4) == 1
    log.data(2, 0, 1, txn=True)           # 4: B
    log.marker(2, 0, commit=False)        # 5: B aborts; nothing else open: LSO after it
    assert log.completed[-1] == (CompletedTxn(2, 1, 5, True), 6)
    assert log.table.first_unstable_offset(high_watermark=5) == 1
    assert log.table.first_unstable_offset(high_watermark=6) is None


def test_coordinator_batches_skip_sequence_checks():
    log = Log()                           # the group coordinator's offset batches: no sequence
    log.data(9, 0, -1, txn=True, origin=COORDINATOR)
    log.data(9, 0, -1, txn=True, origin=COORDINATOR)
    assert log.table.producers[9].current_txn_first_offset == 0


def test_snapshot_entries_load_the_ongoing_transactions():
    log = Log()
    log.data(1, 0, 0, txn=True)
    table = ProducerStateTable()
    table.load_entry(1, log.table.producers[1].copy())
    assert table.first_unstable_offset(high_watermark=10) == 0


def _idempotent_batch(pid, epoch, sequence, n=3):
    now = int(time.time() * 1000)
    return build_batch([(now, None, b"v%d" % i, None) for i in range(n)], producer_id=pid,
                       producer_epoch=epoch, base_sequence=sequence)


def test_first_producer_id_reads_the_header():
    assert first_producer_id(_idempotent_batch(42, 0, 0)) == 42
    assert first_producer_id(build_batch([(0, None, b"x", None)])) == -1


def test_broker_answers_a_retried_batch_with_its_original_offsets(tmp_path):
    h = Harness(tmp_path)
    h.lead([1], [1])

    def send(batch):
        response = _resolved(h.manager.append_records(30000, 1, False, {("t", 0): batch}))
        return response[("t", 0)]

    first = _idempotent_batch(5, 0, 0)
    assert send(first).base_offset == 0
    assert send(_idempotent_batch(5, 0, 3)).base_offset == 3
    retried = send(first)
    assert (retried.error_code, retried.base_offset) == (0, 0)
    assert h.manager.partitions[("t", 0)].log_end_offset == 6       # nothing written twice
    gap = send(_idempotent_batch(5, 0, 9))
    assert gap.error_code == errors.OutOfOrderSequenceNumberError.code
    # a replica rebuilt from the log knows the same producers
    from kafkalite.server.partition import epoch_starts_from_log
    rebuilt = ProducerStateTable()
    epoch_starts_from_log(h.manager.partitions[("t", 0)].log, producer_states=rebuilt)
    assert rebuilt.find_duplicate(5, 0, 3, 3).first_offset == 3



def test_a_duplicate_is_answered_with_its_batch_max_timestamp_as_log_append_time(tmp_path):
    """Kafka 2.8's Log.append answers a duplicate with ``logAppendTime = duplicate.timestamp``
    (the cached batch's max timestamp), even on a CreateTime topic, where a first append
    answers -1 (issue 24: the conformance scenario produce-abandoned-in-flight)."""
    h = Harness(tmp_path)
    h.lead([1], [1])
    batch = build_batch([(1_600_000_000_000 + i, None, b"v%d" % i, None) for i in range(3)],
                        producer_id=7, producer_epoch=0, base_sequence=0)

    def send():
        response = _resolved(h.manager.append_records(30000, 1, False, {("t", 0): batch}))
        return response[("t", 0)]

    first = send()
    assert (first.error_code, first.base_offset, first.log_append_time) == (0, 0, -1)
    again = send()
    assert (again.error_code, again.base_offset, again.log_append_time) == (
        0, 0, 1_600_000_000_002)

# --- replay equals live, and the LSO, over random histories ------------------------------------

_ops = st.lists(st.tuples(st.sampled_from(["data", "txn", "commit", "abort"]),
                          st.integers(1, 3), st.integers(1, 3)), max_size=40)


def _brute_force_first_unstable(history, hw):
    """From the accepted batches alone: the first offset of each transaction whose marker is
    absent or at/above ``hw``."""
    open_at: dict[int, int] = {}
    unstable = []
    for offset, pid, kind in history:
        if kind == "txn":
            open_at.setdefault(pid, offset)
        elif kind in ("commit", "abort") and pid in open_at:
            first = open_at.pop(pid)
            if offset >= hw:
                unstable.append(first)
    unstable.extend(open_at.values())
    return min(unstable) if unstable else None


@settings(max_examples=200, deadline=None)
@given(_ops)
def test_replaying_the_accepted_batches_rebuilds_the_live_table(ops):
    live = Log()
    accepted = []                  # (header, base offset, marker) as written
    history = []
    for kind, pid, n in ops:
        entry = live.table.producers.get(pid)
        sequence = entry.last_sequence + 1 if entry is not None and entry.batches else 0
        if kind in ("data", "txn"):
            header = H(pid, 0, sequence, n - 1, TXN if kind == "txn" else 0)
            marker, origin = None, CLIENT
        else:
            header = H(pid, 0, -1, 0, CONTROL)
            marker, origin = (kind == "commit", 0), COORDINATOR
        offset = live.end
        try:
            live.append(header, marker, origin)
        except errors.InvalidTxnStateError:
            assert kind == "data"      # plain data inside the producer's transaction
            continue
        accepted.append(BatchInfo(header, offset, marker))
        history.append((offset, pid, kind))
    replayed = ProducerStateTable()
    for batch in accepted:
        analysis = analyze(replayed, [batch], REPLICATION)
        for info in analysis.infos.values():
            replayed.apply(info)
        for done in analysis.completed:
            replayed.complete(done)
    assert replayed.producers == live.table.producers
    assert replayed.ongoing == live.table.ongoing
    for hw in range(live.end + 1):       # HWs only grow: the table forgets below them
        expected = _brute_force_first_unstable(history, hw)
        assert live.table.first_unstable_offset(hw) == expected
        assert replayed.first_unstable_offset(hw) == expected
