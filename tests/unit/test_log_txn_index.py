"""The aborted transaction index (``.txnindex``) on real files: Kafka's 34-byte entries, lazy
creation, append order, collect, truncation, reload and a torn trailing entry."""

from __future__ import annotations

import os
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.log.txn_index import ENTRY_SIZE, AbortedTxn, CorruptIndexError, TransactionIndex


def _path(tmp_path, base=0):
    return str(tmp_path / f"{base:020d}.txnindex")


def test_entry_bytes_are_kafkas_layout(tmp_path):
    index = TransactionIndex(_path(tmp_path), 0)
    index.append(AbortedTxn(producer_id=7, first_offset=3, last_offset=9, last_stable_offset=10))
    with open(index.path, "rb") as f:
        data = f.read()
    assert len(data) == 34 == ENTRY_SIZE
    assert data == struct.pack(">hqqqq", 0, 7, 3, 9, 10)


def test_file_is_created_only_with_the_first_entry(tmp_path):
    index = TransactionIndex(_path(tmp_path), 0)
    assert not os.path.exists(index.path)
    assert index.collect_aborted(0, 100) == ([], False)
    index.truncate_to(0)
    index.reset()
    index.flush()
    assert not os.path.exists(index.path)
    index.append(AbortedTxn(1, 0, 1, 2))
    assert os.path.exists(index.path)


def test_last_offsets_must_increase(tmp_path):
    index = TransactionIndex(_path(tmp_path), 0)
    index.append(AbortedTxn(1, 0, 5, 6))
    with pytest.raises(ValueError):
        index.append(AbortedTxn(2, 1, 5, 6))
    index.close()
    reopened = TransactionIndex(index.path, 0)
    with pytest.raises(ValueError):  # the order survives a reload
        reopened.append(AbortedTxn(2, 1, 4, 6))
    reopened.append(AbortedTxn(2, 1, 6, 7))
    assert len(reopened) == 2


def test_collect_overlapping_and_completeness(tmp_path):
    index = TransactionIndex(_path(tmp_path), 0)
    entries = [AbortedTxn(1, 0, 10, 5), AbortedTxn(2, 5, 20, 21), AbortedTxn(3, 25, 30, 40)]
    for entry in entries:
        index.append(entry)
    assert index.collect_aborted(11, 25) == ([entries[1]], True)   # LSO 40 >= 25 ends it
    assert index.collect_aborted(0, 100) == (entries, False)      # may go on in later segments
    assert index.collect_aborted(21, 25) == ([], True)
    assert index.collect_aborted(10, 11) == ([entries[0], entries[1]], True)


def test_truncate_drops_entries_at_or_after_offset(tmp_path):
    index = TransactionIndex(_path(tmp_path), 0)
    for i in range(5):
        index.append(AbortedTxn(i, i * 10, i * 10 + 5, i * 10 + 6))
    index.truncate_to(25)
    assert [e.last_offset for e in index.all_aborted()] == [5, 15]
    assert os.path.getsize(index.path) == 2 * ENTRY_SIZE
    index.append(AbortedTxn(9, 16, 17, 18))  # appends continue after the new last entry
    index.close()
    assert TransactionIndex(index.path, 0).all_aborted()[-1] == AbortedTxn(9, 16, 17, 18)


def test_partial_trailing_entry_is_cut_on_load(tmp_path):
    index = TransactionIndex(_path(tmp_path), 0)
    index.append(AbortedTxn(1, 0, 3, 4))
    index.append(AbortedTxn(2, 1, 8, 9))
    index.close()
    with open(index.path, "r+b") as f:
        f.truncate(ENTRY_SIZE + 20)  # a crash in the middle of the second entry
    reopened = TransactionIndex(index.path, 0)
    assert reopened.all_aborted() == [AbortedTxn(1, 0, 3, 4)]
    assert os.path.getsize(index.path) == ENTRY_SIZE
    reopened.append(AbortedTxn(2, 1, 8, 9))
    reopened.close()
    assert TransactionIndex(index.path, 0).all_aborted() == [AbortedTxn(1, 0, 3, 4),
                                                             AbortedTxn(2, 1, 8, 9)]


def test_sanity_check_refuses_entries_before_the_segment(tmp_path):
    index = TransactionIndex(_path(tmp_path, 100), 100)
    index.append(AbortedTxn(1, 90, 99, 100))
    with pytest.raises(CorruptIndexError):
        index.sanity_check()
    index.reset()
    index.append(AbortedTxn(1, 90, 100, 101))  # a transaction may start in an earlier segment
    index.sanity_check()


def test_unknown_version_is_corrupt(tmp_path):
    path = _path(tmp_path)
    with open(path, "wb") as f:
        f.write(struct.pack(">hqqqq", 1, 1, 0, 1, 2))
    with pytest.raises(CorruptIndexError):
        TransactionIndex(path, 0).all_aborted()


def test_rename_and_delete(tmp_path):
    index = TransactionIndex(_path(tmp_path), 0)
    index.rename(index.path + ".deleted")  # no file yet: only the path follows
    assert not os.path.exists(index.path)
    index.append(AbortedTxn(1, 0, 1, 2))
    assert os.path.exists(_path(tmp_path) + ".deleted")
    index.rename(_path(tmp_path))
    assert os.path.exists(_path(tmp_path)) and index.all_aborted() == [AbortedTxn(1, 0, 1, 2)]
    index.delete()
    assert not os.path.exists(_path(tmp_path))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 50), st.integers(1, 50),
                          st.integers(0, 50)), max_size=25),
       st.integers(0, 2000), st.integers(0, 2000), st.integers(0, 2000))
def test_collect_and_truncate_agree_with_a_model(tmp_path_factory, steps, fetch, span, cut):
    """Entries of increasing last offsets: collect returns exactly the overlapping ones (in
    order, stopping after the first whose LSO reaches the bound), truncation keeps exactly those
    ending before the cut, and a reload reads back what was written."""
    path = str(tmp_path_factory.mktemp("txn") / "00000000000000000000.txnindex")
    index = TransactionIndex(path, 0)
    entries, last = [], 0
    for producer_id, back, gap, lso_gap in steps:
        last += gap
        entry = AbortedTxn(producer_id, max(0, last - back), last, last + 1 + lso_gap)
        index.append(entry)
        entries.append(entry)
    upper = fetch + span
    expected, complete = [], False
    for e in entries:
        if e.last_offset >= fetch and e.first_offset < upper:
            expected.append(e)
        if e.last_stable_offset >= upper:
            complete = True
            break
    assert index.collect_aborted(fetch, upper) == (expected, complete)
    index.truncate_to(cut)
    kept = [e for e in entries if e.last_offset < cut]
    assert index.all_aborted() == kept
    index.close()
    assert TransactionIndex(path, 0).all_aborted() == kept
    assert (os.path.getsize(path) if os.path.exists(path) else 0) == len(kept) * ENTRY_SIZE


def test_reset_empties_a_closed_index_file_too(tmp_path):
    index = TransactionIndex(_path(tmp_path), 0)
    index.append(AbortedTxn(1, 0, 3, 4))
    index.close()
    index.reset()
    index.append(AbortedTxn(2, 0, 1, 2))
    index.close()
    assert TransactionIndex(index.path, 0).all_aborted() == [AbortedTxn(2, 0, 1, 2)]
