"""A Log's ``.txnindex`` files and producer snapshots through its lifecycle, on real files:
roll, collect across segments, truncation, retention and DeleteRecords, recovery (the index
rebuilt from the batches and the snapshots), and Kafka's snapshot rules."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st
from logtools import START_MS, FakeClock, topic_config
from txnlogtools import Writer, data, marker

from kafkalite.log import Log
from kafkalite.log.producer_snapshot import ProducerSnapshotEntry
from kafkalite.log.txn_index import ENTRY_SIZE, AbortedTxn

CONFIG = topic_config(segment_bytes=10**9, index_interval_bytes=100)


def files(path, suffix):
    return sorted(n for n in os.listdir(path) if n.endswith(suffix))


def index_entries(log: Log) -> list[list[AbortedTxn]]:
    return [s.txn_index.all_aborted() for s in log.segments]


def test_entries_stay_with_their_segment_through_rolls(tmp_path):
    log = Log(str(tmp_path / "t-0"), CONFIG, FakeClock())
    w = Writer(log)
    w.data(1)                 # 0-1, pid 1 open
    w.data(2)                 # 2-3, pid 2 open
    w.end(1, commit=False)    # 4: abort of 1, pid 2 still open -> LSO 2
    log.roll()
    w.data(3)                 # 5-6
    w.end(2, commit=True)     # 7
    w.end(3, commit=False)    # 8
    assert w.aborted == [AbortedTxn(1, 0, 4, 2), AbortedTxn(3, 5, 8, 9)]
    assert index_entries(log) == [[w.aborted[0]], [w.aborted[1]]]
    assert files(log.dir, ".txnindex") == [f"{0:020d}.txnindex", f"{5:020d}.txnindex"]
    assert log.collect_aborted_transactions(0, 9) == w.aborted
    assert log.collect_aborted_transactions(5, 9) == [w.aborted[1]]
    # from offset 1 up to 3: the first entry's LSO (2) is below 3, so the next segment is read
    assert log.collect_aborted_transactions(1, 3) == [w.aborted[0]]
    log.roll()
    assert index_entries(log)[-1] == [] and len(files(log.dir, ".txnindex")) == 2
    log.close()


def test_truncation_drops_entries_and_files_of_removed_segments(tmp_path):
    log = Log(str(tmp_path / "t-0"), CONFIG, FakeClock())
    w = Writer(log)
    w.data(1)
    w.end(1, commit=False)   # 2
    w.data(2)                # 3-4
    w.end(2, commit=False)   # 5
    log.roll()
    w.data(3)                # 6-7
    w.end(3, commit=False)   # 8
    log.truncate_to(5)
    assert index_entries(log) == [[w.aborted[0]]]
    assert files(log.dir, ".txnindex") == [f"{0:020d}.txnindex"]
    assert os.path.getsize(os.path.join(log.dir, f"{0:020d}.txnindex")) == ENTRY_SIZE
    log.truncate_fully_and_start_at(50)
    assert files(log.dir, ".txnindex") == []


def test_retention_and_delete_records_take_the_index_files(tmp_path):
    log = Log(str(tmp_path / "t-0"), CONFIG, FakeClock())
    w = Writer(log)
    for _ in range(3):
        w.data(1)
        w.end(1, commit=False)
        log.roll()
    assert len(files(log.dir, ".txnindex")) == 3
    log.delete_records_before(3)
    assert files(log.dir, ".txnindex") == [f"{3:020d}.txnindex", f"{6:020d}.txnindex"]
    assert log.collect_aborted_transactions(3, 9) == w.aborted[1:]


def _reopen(path, recovery_point=0, clean=False, **kw):
    return Log(str(path), CONFIG, FakeClock(), recovery_point=recovery_point,
               clean_shutdown=clean, **kw)


def test_recovery_rebuilds_the_index_with_transactions_spanning_segments(tmp_path):
    path = tmp_path / "t-0"
    log = Log(str(path), CONFIG, FakeClock())
    w = Writer(log)
    w.data(1)                 # 0-1: pid 1 opens in segment 0
    w.data(2)                 # 2-3
    log.roll()                # segment 4
    w.data(3)                 # 4-5
    w.end(2, commit=False)    # 6: LSO 0 (pid 1 still open)
    w.end(1, commit=False)    # 7: LSO 4 (pid 3)
    log.roll()                # segment 8
    w.end(3, commit=False)    # 8: LSO 9
    expected = index_entries(log)
    assert sum(map(len, expected)) == 3
    log.close()
    for name in files(path, ".txnindex"):
        os.unlink(path / name)
    # unclean, recovery point in segment 4: segments 4 and 8 are recovered, segment 0 not
    reopened = _reopen(path, recovery_point=5)
    assert reopened.recovered_segments == 2
    assert index_entries(reopened) == [[]] + expected[1:]
    reopened.close()


def test_recovery_replaces_stale_entries(tmp_path):
    """Entries past what recovery keeps (a torn tail) are gone after the rebuild."""
    path = tmp_path / "t-0"
    log = Log(str(path), CONFIG, FakeClock())
    w = Writer(log)
    w.data(1)
    w.end(1, commit=False)    # 2
    w.data(2)                 # 3-4
    w.end(2, commit=False)    # 5
    log.close()
    log_file = path / f"{0:020d}.log"
    with open(log_file, "r+b") as f:
        f.truncate(os.path.getsize(log_file) - 3)  # the last marker is torn
    reopened = _reopen(path)
    assert reopened.log_end_offset == 5
    assert index_entries(reopened) == [[w.aborted[0]]]


def test_recovery_takes_open_transactions_from_a_snapshot(tmp_path):
    """The earlier segment is gone (retention) but the snapshot at the recovered segment's base
    says pid 1's transaction began at 1: the rebuilt entry starts there, as Kafka's would."""
    path = tmp_path / "t-0"
    log = Log(str(path), CONFIG, FakeClock())
    log.append(data(9, transactional=False))        # 0-1
    log.roll()
    log.producer_state_source = lambda: [ProducerSnapshotEntry(1, 0, 1, 1, 0, START_MS, -1, 1)]
    log.append(data(1))                              # 2-3
    log.roll()                                       # snapshot at 4
    assert log.producer_snapshot_offsets() == [4]
    log.append(marker(1, commit=False))              # 4
    log.producer_state_source = None
    log.close()
    reopened = _reopen(path, recovery_point=4)
    assert index_entries(reopened)[-1] == [AbortedTxn(1, 1, 4, 5)]


def test_a_corrupt_txn_index_means_recovery(tmp_path):
    path = tmp_path / "t-0"
    log = Log(str(path), CONFIG, FakeClock())
    w = Writer(log)
    log.roll()
    w.data(1)                 # 0-1 (the empty active segment was replaced)
    log.roll()
    w.data(2)                 # 2-3
    w.end(2, commit=False)    # 4
    log.close()
    bad = path / f"{2:020d}.txnindex"
    with open(bad, "wb") as f:  # an entry ending before the segment starts
        f.write(AbortedTxn(7, 0, 1, 2).pack())
    reopened = _reopen(path, recovery_point=5, clean=True)
    assert index_entries(reopened)[-1] == [AbortedTxn(2, 2, 4, 0)]
    assert reopened.segments[-1].recovered and not reopened.segments[0].recovered


def test_snapshot_rules(tmp_path):
    path = tmp_path / "t-0"
    log = Log(str(path), CONFIG, FakeClock())
    state = [ProducerSnapshotEntry(1, 0, 1, 1, 1, START_MS, -1, -1)]
    log.producer_state_source = lambda: state
    for _ in range(4):
        log.append(data(1, transactional=False))
        log.roll()
    assert log.producer_snapshot_offsets() == [2, 4, 6, 8]
    log.append(data(1, transactional=False))   # 8-9
    log.close()                                # at the log end
    assert files(path, ".snapshot") == [f"{o:020d}.snapshot" for o in (2, 4, 6, 8, 10)]
    with open(path / f"{5:020d}.snapshot", "wb"):  # a stray below the last base
        pass
    log = _reopen(path, recovery_point=10, clean=True)
    assert log.producer_snapshot_offsets() == [2, 4, 6, 8, 10]   # the stray went
    assert log.latest_producer_snapshot() == (10, state)
    assert log.latest_producer_snapshot(at_or_below=7) == (6, state)
    log.delete_records_before(4)               # segments 0 and 2 go, with snapshot 2
    assert log.producer_snapshot_offsets() == [4, 6, 8, 10]
    log.truncate_to(7)                         # snapshots above the new end (6) go
    assert log.producer_snapshot_offsets() == [6]
    assert log.log_end_offset == 6
    log.truncate_fully_and_start_at(100)
    assert log.producer_snapshot_offsets() == [] and files(path, ".snapshot") == []


def test_rebuild_txn_indexes_of_a_copied_log(tmp_path):
    """A log written by replication alone (no appends of entries) gets them rebuilt."""
    source = Log(str(tmp_path / "a" / "t-0"), CONFIG, FakeClock())
    w = Writer(source)
    w.data(1)
    w.data(2)
    source.roll()
    w.end(1, commit=False)
    w.end(2, commit=True)
    copy = Log(str(tmp_path / "b" / "t-0"), CONFIG, FakeClock())
    for segment in source.segments:
        if segment.size:
            copy.append(segment.read_all(), assign_offsets=False)
    assert index_entries(copy) == [[]]
    assert copy.rebuild_txn_indexes() == 1
    assert copy.collect_aborted_transactions(0, 10) == w.aborted


def test_an_emptied_marker_leaves_the_transaction_open_in_recovery():
    """Kafka's replay skips a control batch the cleaner emptied: the transaction it once ended
    is still open for the next marker."""
    from kafkalite.log.txn_cleaning import empty_batch
    from kafkalite.log.txn_recovery import OngoingTxns
    from kafkalite.record.header import parse_header

    ongoing = OngoingTxns()
    assert ongoing.replay(parse_header(data(1))) is None              # 0-1 opens pid 1
    emptied = parse_header(empty_batch(parse_header(marker(1, commit=False))))
    assert emptied.record_count == 0
    assert ongoing.replay(emptied, lambda: True) is None
    assert ongoing.first_offsets == {1: 0}
    abort = parse_header(marker(1, commit=False))
    assert ongoing.replay(abort, lambda: True) == AbortedTxn(1, 0, 0, 1)


def test_a_moved_log_indexes_its_aborted_transactions(tmp_path):
    """AlterReplicaLogDirs: the future log is filled by replication (no entries appended);
    once it replaces the current log, its txn index holds the same aborted transactions."""
    from twisted.internet import task

    from kafkalite.log import LogManager

    clock = task.Clock()
    clock.advance(START_MS / 1000)
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    manager = LogManager(dirs, CONFIG, clock)
    manager.startService()
    current = manager.get_or_create_log("t", 0)
    w = Writer(current)
    w.data(1)
    w.data(2)
    w.end(2, commit=False)
    current.roll()
    w.end(1, commit=False)
    future = manager.create_future_log(("t", 0), next(d for d in dirs
                                                      if d != current.parent_dir))
    for segment in current.segments:
        if segment.size:
            future.append(segment.read_all(), assign_offsets=False)
    swapped = manager.replace_current_with_future(("t", 0))
    assert swapped.collect_aborted_transactions(0, swapped.log_end_offset) == w.aborted
    assert w.aborted == [AbortedTxn(2, 2, 4, 0), AbortedTxn(1, 0, 5, 6)]
    manager.stopService()


def test_an_undecodable_marker_does_not_stop_recovery(tmp_path):
    """A control batch whose CRC holds but whose records do not decode is not indexed, and the
    log still opens."""
    from crc32c import crc32c

    from kafkalite.record import header as hdr

    attributes = hdr.TRANSACTIONAL_BIT | hdr.CONTROL_BIT
    body = b"\xff" * 6
    head = bytearray(hdr.HEADER.pack(0, hdr.HEADER_SIZE - hdr.LOG_OVERHEAD + len(body), -1,
                                     hdr.MAGIC, 0, attributes, 0, START_MS, START_MS, 1, 0, -1,
                                     1))
    raw = bytearray(bytes(head) + body)
    raw[hdr.CRC_POS:hdr.CRC_POS + 4] = crc32c(bytes(raw[hdr.ATTRIBUTES_POS:])).to_bytes(4, "big")
    path = tmp_path / "t-0"
    log = Log(str(path), CONFIG, FakeClock())
    log.append(data(1))              # 0-1
    log.append(bytes(raw))           # 2
    log.close()
    reopened = _reopen(path)
    assert reopened.log_end_offset == 3
    assert reopened.segments[0].recovered
    assert index_entries(reopened) == [[]]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["data", "commit", "abort", "roll"]),
                          st.integers(1, 4)), max_size=30),
       st.integers(0, 60))
def test_recovery_rebuilds_what_the_leader_wrote(tmp_path_factory, steps, recovery_point):
    """Any interleaving of producers' transactions and rolls: after an unclean restart that
    recovers the segments from ``recovery_point`` on, every segment's txn index holds what the
    leader appended (the snapshots taken at each roll supply the transactions open before)."""
    path = tmp_path_factory.mktemp("txn") / "t-0"
    log = Log(str(path), CONFIG, FakeClock())
    w = Writer(log)
    log.producer_state_source = lambda: [
        ProducerSnapshotEntry(pid, 0, 0, 0, 0, START_MS, -1, first)
        for pid, first in w.ongoing.items()]
    for action, pid in steps:
        if action == "data":
            w.data(pid, n=1)
        elif action == "roll":
            log.roll()
        elif pid in w.ongoing:
            w.end(pid, commit=action == "commit")
    expected = index_entries(log)
    log.producer_state_source = None
    log.close()
    reopened = _reopen(path, recovery_point=recovery_point)
    assert index_entries(reopened) == expected
    reopened.close()
