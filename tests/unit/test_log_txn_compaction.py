"""Compaction with transactions, as Kafka 2.8's LogCleaner: aborted data goes and never wins a
key, markers stay while their transaction has data and then for ``delete.retention.ms`` after
their segment's last modification, the cleaned segment's ``.txnindex`` keeps what is still
relevant, an open transaction stops the cleaning, and each producer's last batch survives."""

from __future__ import annotations

import os

from logtools import START_MS, FakeClock, topic_config
from txnlogtools import Writer, data

from kafkalite.log import Log
from kafkalite.log.producer_snapshot import ProducerSnapshotEntry
from kafkalite.log.txn_index import AbortedTxn
from kafkalite.record import header as hdr
from kafkalite.record.batch import iter_batches

RETENTION = 60_000
CONFIG = topic_config(cleanup_policy=("compact",), segment_bytes=10**9,
                      delete_retention_ms=RETENTION)


def batches(log: Log) -> list[tuple]:
    """(base offset, last offset, control, transactional, [(key, value)...]) per stored batch."""
    out = []
    for header, records in iter_batches(log.read(0, 10**9).records):
        out.append((header.base_offset, header.last_offset,
                    bool(header.attributes & hdr.CONTROL_BIT),
                    bool(header.attributes & hdr.TRANSACTIONAL_BIT),
                    [(r.key, r.value) for r in records]))
    return out


def age_segments(log: Log, now_ms: int) -> None:
    """Set every segment file's mtime to ``now_ms`` (marker retention counts from it)."""
    for segment in log.segments:
        os.utime(segment.log_path, ns=(now_ms * 10**6, now_ms * 10**6))


def _log(tmp_path, clock=None):
    return Log(str(tmp_path / "t-0"), CONFIG, clock or FakeClock())


def test_aborted_data_goes_and_never_wins_a_key(tmp_path):
    clock = FakeClock()
    log = _log(tmp_path, clock)
    w = Writer(log)
    w.data(1, keys=[b"a", b"b"], values=[b"a1", b"b1"])   # 0-1 committed
    w.end(1, commit=True)                                  # 2
    w.data(2, keys=[b"a"], values=[b"a-aborted"], n=1)     # 3 aborted
    w.end(2, commit=False)                                 # 4
    log.roll()
    age_segments(log, clock.now)
    result = log.compact(clock.now, force=True)
    assert result.records_removed == 1
    kept = batches(log)
    # the aborted batch keeps its header only: it is producer 2's last data (Kafka's
    # RETAIN_EMPTY), so its sequence survives
    assert [(b[0], b[4]) for b in kept if not b[2]] == [(0, [(b"a", b"a1"), (b"b", b"b1")]),
                                                        (3, [])]
    # both markers stay: the abort's transaction still had data in this pass, and the marker
    # retention has not passed
    assert [(b[0], b[2]) for b in kept if b[2]] == [(2, True), (4, True)]
    assert log.segments[0].txn_index.all_aborted() == [AbortedTxn(2, 3, 4, 5)]
    assert log.collect_aborted_transactions(0, 5) == [AbortedTxn(2, 3, 4, 5)]


def test_markers_go_after_the_retention_once_their_data_is_gone(tmp_path):
    clock = FakeClock()
    log = _log(tmp_path, clock)
    w = Writer(log)
    w.data(1, keys=[b"x"], n=1)      # 0
    w.end(1, commit=False)           # 1
    w.data(2, keys=[b"y"], n=1)      # 2
    w.end(2, commit=True)            # 3
    log.append(data(9, transactional=False, keys=[b"z"], n=1))   # 4: each pid's last batch
    log.append(data(1, transactional=False, keys=[b"z"], n=1, seq=1))  # 5
    log.append(data(2, transactional=False, keys=[b"z"], n=1, seq=1))  # 6
    log.roll()
    age_segments(log, clock.now)
    log.compact(clock.now, force=True)                 # pass 1: aborted data goes
    # 4 and 5 lose their records to 6 but stay empty: their producers' last data
    assert [(b[0], len(b[4])) for b in batches(log)] == [(1, 1), (2, 1), (3, 1), (4, 0),
                                                         (5, 0), (6, 1)]
    assert log.segments[0].txn_index.all_aborted() == [AbortedTxn(1, 0, 1, 2)]
    log.compact(clock.now, force=True)                 # pass 2: no data of txn 1 left
    assert [b[0] for b in batches(log)] == [1, 2, 3, 4, 5, 6]  # marker within the retention
    assert log.segments[0].txn_index.all_aborted() == []
    assert not os.path.exists(log.segments[0].txn_index.path)
    clock.advance(RETENTION + 1)
    log.compact(clock.now, force=True)                 # past the retention
    # the ABORT marker goes; the COMMIT marker stays while its transaction has data (2)
    assert [(b[0], b[2]) for b in batches(log)] == [(2, False), (3, True), (4, False),
                                                    (5, False), (6, False)]


def test_the_last_batch_of_a_producer_stays_empty(tmp_path):
    clock = FakeClock()
    log = _log(tmp_path, clock)
    log.append(data(7, transactional=False, keys=[b"k", b"k"], n=2))     # 0-1 seq 0-1
    log.append(data(8, transactional=False, keys=[b"k"], n=1))            # 2
    log.roll()
    log.compact(clock.now, force=True)
    (first, _), (second, records) = iter_batches(log.read(0, 10**9).records)
    assert (first.base_offset, first.last_offset, first.record_count) == (0, 1, 0)
    assert (first.producer_id, first.base_sequence) == (7, 0)
    assert second.base_offset == 2 and [r.value for r in records] == [b"v0"]


def test_the_producer_state_says_which_batch_is_last(tmp_path):
    """With a producer state table (the partition's), its last data offsets decide."""
    clock = FakeClock()
    log = _log(tmp_path, clock)
    log.append(data(7, transactional=False, keys=[b"k"], n=1))            # 0
    log.append(data(7, transactional=False, keys=[b"k"], n=1, seq=1))     # 1
    log.roll()
    log.append(data(8, transactional=False, keys=[b"k"], n=1))            # 2
    log.roll()
    # the table (not the headers) says producer 7's last data is at 0, and 8 expired
    log.producer_state_source = lambda: [ProducerSnapshotEntry(7, 0, 0, 0, 0, START_MS, -1, -1)]
    log.compact(clock.now, force=True)
    headers = [h for h, _r in iter_batches(log.read(0, 10**9).records)]
    assert [(h.base_offset, h.record_count) for h in headers] == [(0, 0), (2, 1)]


def test_an_open_transaction_stops_the_cleaning(tmp_path):
    clock = FakeClock()
    log = _log(tmp_path, clock)
    w = Writer(log)
    log.append(data(5, transactional=False, keys=[b"a"], n=1))   # 0
    log.append(data(5, transactional=False, keys=[b"a"], n=1, seq=1))   # 1
    log.roll()
    w.data(1, keys=[b"a"], n=1)                                 # 2: open
    log.roll()
    log.append(data(5, transactional=False, keys=[b"a"], n=1, seq=2))   # 3
    log.roll()
    log.compact(clock.now, force=True)
    assert [b[0] for b in batches(log)] == [1, 2, 3]   # only the first segment was cleaned
    w.end(1, commit=True)                              # 4
    log.roll()
    log.compact(clock.now, force=True)
    # 1 and 2 lose their records to 3; 2 stays empty (producer 1's last data) and so does
    # its COMMIT marker (its transaction's batch is still there)
    assert [(b[0], len(b[4])) for b in batches(log)] == [(2, 0), (3, 1), (4, 1)]


def test_a_partly_compacted_committed_batch_stays_transactional(tmp_path):
    clock = FakeClock()
    log = _log(tmp_path, clock)
    w = Writer(log)
    w.data(1, keys=[b"a", b"b"], n=2)   # 0-1
    w.end(1, commit=True)               # 2
    log.append(data(9, transactional=False, keys=[b"a"], n=1))   # 3
    log.roll()
    log.compact(clock.now, force=True)
    kept = batches(log)
    assert kept[0] == (0, 1, False, True, [(b"b", b"v1")])


def test_a_swap_completed_at_loading_gets_its_txn_index_rebuilt(tmp_path):
    """A compaction interrupted after its commit point (``.log.swap`` written): loading puts the
    swap in place and rebuilds the txn index from the swapped batches, so the old segment's
    entries do not outlive the data they describe."""
    clock = FakeClock()
    log = _log(tmp_path, clock)
    w = Writer(log)
    w.data(1, keys=[b"a"], n=1)        # 0 aborted
    w.end(1, commit=False)             # 1
    w.data(2, keys=[b"b"], n=1)        # 2 aborted
    w.end(2, commit=False)             # 3
    log.roll()
    log.append(data(9, transactional=False, keys=[b"c"], n=1))   # 4
    assert log.segments[0].txn_index.all_aborted() == w.aborted
    segment = log.segments[0]
    raw = segment.read_all()
    log.close()
    # the swapped copy lost the first transaction's batch, kept the second's
    first = hdr.parse_header(raw, 0).size
    swap = os.path.join(log.dir, f"{0:020d}.log.swap")
    with open(swap, "wb") as f:
        f.write(raw[first:])
    reopened = Log(log.dir, CONFIG, clock, recovery_point=5, clean_shutdown=True)
    assert not os.path.exists(swap)
    assert reopened.segments[0].txn_index.all_aborted() == [AbortedTxn(2, 2, 3, 4)]
    assert [b[0] for b in batches(reopened)] == [1, 2, 3, 4]
