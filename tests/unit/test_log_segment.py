"""LogSegment: appends, index-driven reads, timestamp lookups, truncation, reload."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st
from logtools import START_MS, FakeClock, headers_of, make_batch, raw_batch, topic_config

from kafkalite.log import LogSegment
from kafkalite.log.segment import segment_paths


def _fill(segment, specs, base):
    """Append raw batches (records_len, count, max_ts); returns [(pos, base, last, size, ts)]."""
    out = []
    offset = base
    for records_len, count, ts in specs:
        data = raw_batch(b"r" * records_len, count=count, base_offset=offset, max_timestamp=ts)
        pos = segment.append(data, offset + count - 1, ts, offset + count - 1,
                             [(0, offset, offset + count - 1, ts)])
        out.append((pos, offset, offset + count - 1, len(data), ts))
        offset += count
    return out


def test_file_names_and_basic_read(tmp_path):
    seg = LogSegment(str(tmp_path), 42, topic_config(), FakeClock())
    assert os.path.basename(seg.log_path) == "00000000000000000042.log"
    assert [os.path.basename(p) for p in segment_paths(str(tmp_path), 42)] == [
        "00000000000000000042.log", "00000000000000000042.index",
        "00000000000000000042.timeindex"]
    assert seg.read(42, 1000) == b"" and seg.next_offset == 42 and seg.size == 0
    batches = _fill(seg, [(30, 2, START_MS), (40, 3, START_MS + 5)], 42)
    assert seg.next_offset == 47 and seg.largest_timestamp == START_MS + 5
    everything = seg.read(42, 10**6)
    assert len(everything) == seg.size == sum(b[3] for b in batches)
    assert [h.base_offset for h in headers_of(everything)] == [42, 44]
    assert headers_of(seg.read(45, 10**6))[0].base_offset == 44  # batch containing 45
    assert seg.read(47, 10**6) == b""
    seg.close()


def test_read_limits(tmp_path):
    seg = LogSegment(str(tmp_path), 0, topic_config(index_interval_bytes=0), FakeClock())
    batches = _fill(seg, [(100, 1, START_MS)] * 5, 0)
    size = batches[0][3]
    assert len(seg.read(0, size * 2 + 10)) == size * 2        # whole batches only
    assert len(seg.read(0, 5)) == size                         # at least one whole batch
    assert seg.read(0, 5, min_one=False) == b""
    assert len(seg.read(0, 10**6, max_position=batches[3][0])) == size * 3
    assert seg.read(3, 10**6, max_position=batches[3][0]) == b""
    assert seg.position_of(2) == batches[2][0] and seg.position_of(99) == seg.size
    seg.close()


def test_reopen_uses_indexes_and_tail(tmp_path):
    config = topic_config(index_interval_bytes=300)
    seg = LogSegment(str(tmp_path), 100, config, FakeClock())
    _fill(seg, [(50 + i * 7, 1 + i % 3, START_MS + (i * 37) % 11) for i in range(40)], 100)
    state = (seg.next_offset, seg.size, seg.largest_timestamp, seg.offset_of_max_timestamp)
    entries = [seg.index.entry(i) for i in range(seg.index.entries)]
    seg.close()
    again = LogSegment(str(tmp_path), 100, config, FakeClock())
    assert (again.next_offset, again.size, again.largest_timestamp,
            again.offset_of_max_timestamp) == state
    assert [again.index.entry(i) for i in range(again.index.entries)] == entries
    assert again.truncated_bytes == 0
    # a full recovery rebuilds the same offset index
    assert again.recover() == 0
    assert [again.index.entry(i) for i in range(again.index.entries)] == entries
    assert again.next_offset == state[0] and again.largest_timestamp == state[2]
    again.close()


def test_truncate_to_and_append_again(tmp_path):
    seg = LogSegment(str(tmp_path), 0, topic_config(index_interval_bytes=0), FakeClock())
    batches = _fill(seg, [(20, 3, START_MS + i) for i in range(6)], 0)
    assert seg.truncate_to(18) == 0
    removed = seg.truncate_to(10)  # inside the batch 9..11: the whole batch goes
    assert removed == sum(b[3] for b in batches[3:])
    assert seg.next_offset == 9 and seg.size == batches[3][0]
    assert seg.largest_timestamp == START_MS + 2
    assert seg.index.last_entry[1] < seg.size
    _fill(seg, [(20, 2, START_MS + 100)], 9)
    assert [h.base_offset for h in headers_of(seg.read(0, 10**6))] == [0, 3, 6, 9]
    assert seg.largest_timestamp == START_MS + 100
    seg.close()


def test_find_offset_by_timestamp_decodes_the_batch(tmp_path):
    seg = LogSegment(str(tmp_path), 0, topic_config(index_interval_bytes=0), FakeClock())
    first = make_batch(3, timestamps=[10, 30, 20])
    second = make_batch(2, timestamps=[25, 40])
    seg.append(first, 2, 30, 2, [(0, 0, 2, 30)])
    data = bytearray(second)
    data[0:8] = (3).to_bytes(8, "big")
    seg.append(bytes(data), 4, 40, 4, [(0, 3, 4, 40)])
    assert seg.find_offset_by_timestamp(5) == (0, 10)
    assert seg.find_offset_by_timestamp(11) == (1, 30)
    assert seg.find_offset_by_timestamp(31) == (4, 40)
    assert seg.find_offset_by_timestamp(41) is None
    assert seg.find_offset_by_timestamp(5, min_offset=2) == (2, 20)
    seg.close()


def test_rename_to_deleted_and_delete(tmp_path):
    seg = LogSegment(str(tmp_path), 7, topic_config(), FakeClock())
    _fill(seg, [(10, 1, START_MS)], 7)
    seg.rename_to_deleted()
    assert sorted(os.listdir(tmp_path)) == [
        "00000000000000000007.index.deleted", "00000000000000000007.log.deleted",
        "00000000000000000007.timeindex.deleted"]
    assert len(seg.read(7, 100)) == seg.size  # open descriptors keep working
    seg.delete()
    assert os.listdir(tmp_path) == []


def test_created_ms_uses_the_clock(tmp_path):
    clock = FakeClock(12345)
    seg = LogSegment(str(tmp_path), 0, topic_config(), clock)
    assert seg.created_ms == 12345
    seg.close()


@settings(deadline=None, max_examples=40)
@given(specs=st.lists(st.tuples(st.integers(0, 400), st.integers(1, 5),
                                st.integers(0, 60)), min_size=1, max_size=60),
       interval=st.integers(0, 2000),
       probes=st.lists(st.integers(0, 400), min_size=1, max_size=20),
       ts_probes=st.lists(st.integers(-5, 70), min_size=1, max_size=10))
def test_lookups_match_linear_scan(tmp_path_factory, specs, interval, probes, ts_probes):
    """Offset lookups (through the sparse index) and timestamp lookups (through the time
    index) find exactly what a linear scan over the batches finds."""
    directory = str(tmp_path_factory.mktemp("seg"))
    config = topic_config(index_interval_bytes=interval)
    seg = LogSegment(directory, 50, config, FakeClock())
    batches = _fill(seg, [(n, c, START_MS + t) for n, c, t in specs], 50)
    for reopen in (False, True):
        if reopen:
            seg.close()
            seg = LogSegment(directory, 50, config, FakeClock())
        for probe in probes:
            target = 50 + probe
            want = next((b for b in batches if b[2] >= target), None)
            got = seg.read_slice(target, 1)[0]
            assert got == (want[0] if want else -1)
            entry_offset, entry_pos = seg.index.lookup(target)
            assert entry_offset <= max(target, 50) and entry_pos <= (want[0] if want else
                                                                       seg.size)
        for probe in ts_probes:
            ts = START_MS + probe
            want = next((b for b in batches if b[4] >= ts), None)
            found = seg.find_batch_by_timestamp(ts)
            assert (found[0] if found else None) == (want[0] if want else None)
    seg.close()



def test_index_pointing_at_the_wrong_batch_is_rebuilt(tmp_path):
    config = topic_config(index_interval_bytes=0)
    seg = LogSegment(str(tmp_path), 0, config, FakeClock())
    _fill(seg, [(30, 2, START_MS)] * 6, 0)
    entries = [seg.index.entry(i) for i in range(seg.index.entries)]
    seg.close()
    index_path = segment_paths(str(tmp_path), 0)[1]
    with open(index_path, "r+b") as f:  # last entry: right position, wrong offset
        f.seek((len(entries) - 1) * 8)
        f.write((entries[-1][0] + 1).to_bytes(4, "big"))
    again = LogSegment(str(tmp_path), 0, config, FakeClock())
    assert [again.index.entry(i) for i in range(again.index.entries)] == entries
    assert again.next_offset == 12 and again.truncated_bytes == 0
    again.close()


@settings(deadline=None, max_examples=60)
@given(steps=st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(0, 300), st.integers(1, 5), st.integers(0, 3)),
    st.tuples(st.just("truncate"), st.integers(0, 100))), min_size=1, max_size=40),
    interval=st.integers(0, 3000))
def test_reads_from_the_tail_hint_match_a_linear_scan(tmp_path_factory, steps, interval):
    """After every append (with offset gaps, as a compacted leader's batches reach followers) and
    every truncation, a read at each offset around the end -- where the last append's position
    is the hint -- finds the batch a linear scan finds."""
    seg = LogSegment(str(tmp_path_factory.mktemp("seg")), 10, topic_config(
        index_interval_bytes=interval), FakeClock())
    batches: list[tuple[int, int, int]] = []          # (position, base, last)
    offset = 10
    for step in steps:
        if step[0] == "append":
            _, size, count, gap = step
            base = offset + gap
            data = raw_batch(b"r" * size, count=count, base_offset=base,
                             max_timestamp=START_MS)
            last = base + count - 1
            pos = seg.append(data, last, START_MS, last, [(0, base, last, START_MS)])
            batches.append((pos, base, last))
            offset = last + 1
        else:
            cut = 10 + step[1]
            seg.truncate_to(cut)
            batches = [b for b in batches if b[2] < cut]
            offset = batches[-1][2] + 1 if batches else 10
        for target in range(max(10, offset - 12), offset + 2):
            want = next((b[0] for b in batches if b[2] >= target), -1)
            assert seg.read_slice(target, 1)[0] == want, (target, batches)
    seg.close()
