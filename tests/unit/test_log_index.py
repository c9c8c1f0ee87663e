"""OffsetIndex and TimeIndex: lookups agree with a linear scan, files persist and truncate."""

from __future__ import annotations

import os
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.log import OffsetIndex, TimeIndex

BASE = 1000


def _linear_floor(entries, key):
    best = None
    for entry in entries:
        if entry[0] <= key:
            best = entry
    return best


def test_offset_index_lookup_and_files(tmp_path):
    path = str(tmp_path / "x.index")
    index = OffsetIndex(path, BASE, 1024)
    assert index.lookup(BASE + 5) == (BASE, 0)
    index.append(BASE + 10, 400)
    index.append(BASE + 20, 900)
    assert index.lookup(BASE + 9) == (BASE, 0)
    assert index.lookup(BASE + 10) == (BASE + 10, 400)
    assert index.lookup(BASE + 19) == (BASE + 10, 400)
    assert index.lookup(BASE + 10**6) == (BASE + 20, 900)
    assert index.floor_position(899) == 400 and index.floor_position(900) == 900
    assert os.path.getsize(path) == 0  # entries are written on write()/flush()/close()
    index.flush()
    with open(path, "rb") as f:
        assert f.read() == struct.pack(">iiii", 10, 400, 20, 900)
    index.close()
    again = OffsetIndex(path, BASE, 1024)
    assert again.entries == 2 and not again.corrupt
    assert again.lookup(BASE + 25) == (BASE + 20, 900)
    again.close()


def test_offset_index_rejects_out_of_order(tmp_path):
    index = OffsetIndex(str(tmp_path / "x.index"), BASE, 1024)
    index.append(BASE + 5, 100)
    with pytest.raises(ValueError):
        index.append(BASE + 5, 200)
    with pytest.raises(ValueError):
        index.append(BASE + 6, 100)
    with pytest.raises(ValueError):
        index.append(BASE - 1 + 2**31 + 1, 300)  # relative offset past int32
    index.close()


def test_offset_index_truncate_and_full(tmp_path):
    path = str(tmp_path / "x.index")
    index = OffsetIndex(path, BASE, 8 * 4)
    for i in range(4):
        index.append(BASE + 10 * (i + 1), 100 * (i + 1))
    assert index.is_full
    index.write()
    index.truncate_to(BASE + 25)
    assert index.entries == 2 and os.path.getsize(path) == 16
    index.truncate_to_position(150)
    assert index.entries == 1 and index.last_entry == (BASE + 10, 100)
    index.append(BASE + 11, 120)
    index.close()
    assert os.path.getsize(path) == 16


def test_torn_or_unsorted_index_is_flagged(tmp_path):
    path = str(tmp_path / "x.index")
    with open(path, "wb") as f:
        f.write(struct.pack(">ii", 5, 100) + b"\x00\x00\x00")
    index = OffsetIndex(path, BASE, 1024)
    assert index.corrupt and index.entries == 1
    index.close()
    with open(path, "wb") as f:
        f.write(struct.pack(">iiii", 5, 100, 4, 200))
    index = OffsetIndex(path, BASE, 1024)
    assert index.corrupt and not index.sane_for(10**6)
    index.reset()
    assert index.entries == 0 and os.path.getsize(path) == 0 and index.sane_for(0)
    index.close()


def test_time_index_only_grows(tmp_path):
    path = str(tmp_path / "x.timeindex")
    index = TimeIndex(path, BASE, 1024)
    assert index.lookup(5) == (-1, BASE)
    assert index.maybe_append(100, BASE + 3)
    assert not index.maybe_append(100, BASE + 7)
    assert not index.maybe_append(50, BASE + 8)
    assert index.maybe_append(200, BASE + 9)
    assert index.lookup(99) == (-1, BASE)
    assert index.lookup(150) == (100, BASE + 3)
    assert index.lookup(10**12) == (200, BASE + 9)
    index.close()
    with open(path, "rb") as f:
        assert f.read() == struct.pack(">qiqi", 100, 3, 200, 9)
    again = TimeIndex(path, BASE, 1024)
    assert again.last_entry == (200, BASE + 9) and again.sane_for(BASE + 10)
    assert not again.sane_for(BASE + 9)
    again.truncate_to(BASE + 9)
    assert again.entries == 1 and os.path.getsize(path) == 12
    again.close()


@settings(deadline=None, max_examples=60)
@given(gaps=st.lists(st.tuples(st.integers(1, 50), st.integers(1, 5000)), max_size=200),
       probes=st.lists(st.integers(-10, 12000), min_size=1, max_size=30))
def test_offset_index_matches_linear_scan(tmp_path_factory, gaps, probes):
    path = str(tmp_path_factory.mktemp("idx") / "x.index")
    index = OffsetIndex(path, BASE, 10**6)
    entries = []
    offset, position = BASE, 0
    for d_off, d_pos in gaps:
        offset += d_off
        position += d_pos
        index.append(offset, position)
        entries.append((offset, position))
    for probe in probes:
        expected = _linear_floor(entries, BASE + probe) or (BASE, 0)
        assert index.lookup(BASE + probe) == expected
        by_pos = _linear_floor([(p, o) for o, p in entries], probe * 50)
        assert index.floor_position(probe * 50) == (by_pos[0] if by_pos else 0)
    index.close()
    reopened = OffsetIndex(path, BASE, 10**6)
    assert [reopened.entry(i) for i in range(reopened.entries)] == entries
    reopened.close()


@settings(deadline=None, max_examples=60)
@given(steps=st.lists(st.tuples(st.integers(-20, 50), st.integers(0, 5)), max_size=200),
       probes=st.lists(st.integers(-100, 6000), min_size=1, max_size=30))
def test_time_index_matches_linear_scan(tmp_path_factory, steps, probes):
    index = TimeIndex(str(tmp_path_factory.mktemp("tidx") / "x.timeindex"), BASE, 10**6)
    entries = []
    ts, offset = 0, BASE
    for d_ts, d_off in steps:
        ts += d_ts
        offset += d_off
        added = index.maybe_append(ts, offset)
        assert added == (not entries or ts > entries[-1][0])
        if added:
            entries.append((ts, offset))
    for probe in probes:
        assert index.lookup(probe) == (_linear_floor(entries, probe) or (-1, BASE))
    index.close()


def test_indexes_hold_no_descriptor_between_operations(tmp_path):
    """A broker with thousands of segments must not hold three descriptors per segment: the
    index files are opened for each write, fsync or truncation only."""
    before = len(os.listdir("/proc/self/fd"))
    indexes = [OffsetIndex(str(tmp_path / f"{i}.index"), 0, 1024) for i in range(50)]
    indexes += [TimeIndex(str(tmp_path / f"{i}.timeindex"), 0, 1024) for i in range(50)]
    for index in indexes[:50]:
        index.append(5, 100)
        index.flush()
    assert len(os.listdir("/proc/self/fd")) == before
    assert OffsetIndex(str(tmp_path / "0.index"), 0, 1024).lookup(7) == (5, 100)


def test_a_deleted_index_is_never_written_again(tmp_path):
    index = OffsetIndex(str(tmp_path / "x.index"), 0, 1024)
    index.append(1, 10)
    index.delete()
    with pytest.raises(OSError):
        index.write()
    assert not (tmp_path / "x.index").exists()
