"""Retention by time and size, log start offset, timestamp lookups, compaction."""

from __future__ import annotations

import os

from logtools import START_MS, FakeClock, make_batch, offsets_of, topic_config

from kafkalite.log import Log
from kafkalite.record.batch import iter_records

DAY = 24 * 3600 * 1000


def _log_with_segments(tmp_path, clock, timestamps, **config):
    """One segment per entry of ``timestamps`` (each a list of batch max timestamps)."""
    log = Log(str(tmp_path / "t-0"), topic_config(**config), clock)
    for seg_ts in timestamps:
        for ts in seg_ts:
            log.append(make_batch(2, timestamp=ts, value_size=40))
        log.roll()
    return log


def test_retention_by_time_deletes_exactly_the_expired_prefix(tmp_path):
    clock = FakeClock(START_MS + 10 * DAY)
    stamps = [[START_MS, START_MS + 1], [START_MS + DAY], [START_MS + 8 * DAY],
              [START_MS + DAY + 5], [START_MS + 9 * DAY]]
    log = _log_with_segments(tmp_path, clock, stamps, retention_ms=3 * DAY)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) == 6  # five full segments + an empty active one
    deleted = log.delete_old_segments(clock.now)
    # the 4th segment is expired too, but the 3rd is not: only the prefix goes
    assert deleted == bases[:2]
    assert log.log_start_offset == bases[2]
    assert [s.base_offset for s in log.segments] == bases[2:]
    assert not os.path.exists(os.path.join(log.dir, f"{bases[0]:020d}.log"))
    clock.advance(3 * DAY)
    assert log.delete_old_segments(clock.now) == bases[2:5]
    assert log.segments == [log.active_segment]
    log.close()


def test_active_segment_is_never_deleted_without_a_high_watermark(tmp_path):
    clock = FakeClock(START_MS + 100 * DAY)
    log = Log(str(tmp_path / "t-0"), topic_config(retention_ms=1, retention_bytes=0), clock)
    log.append(make_batch(3, timestamp=START_MS))
    assert log.delete_old_segments(clock.now) == []
    assert log.log_end_offset == 3 and log.log_start_offset == 0
    log.close()


def test_expired_active_segment_below_the_high_watermark_goes_as_in_kafka(tmp_path):
    """Kafka 2.8 (Log.deletableSegments/deleteSegments): a non-empty active segment wholly below
    the HW goes when it is past retention, after a new empty one is rolled at the log end."""
    clock = FakeClock(START_MS + 100 * DAY)
    log = Log(str(tmp_path / "t-0"), topic_config(retention_ms=DAY), clock)
    hw = {"offset": 0}
    log.high_watermark_source = lambda: hw["offset"]
    log.append(make_batch(3, timestamp=START_MS))
    log.roll()
    log.append(make_batch(2, timestamp=START_MS))
    assert log.delete_old_segments(clock.now) == []          # HW 0: nothing is below it
    hw["offset"] = 4
    assert log.delete_old_segments(clock.now) == [0]         # the active one ends past the HW
    assert log.log_start_offset == 3
    hw["offset"] = 5
    assert log.delete_old_segments(clock.now) == [3]
    assert (log.log_start_offset, log.log_end_offset) == (5, 5)
    assert [(s.base_offset, s.size) for s in log.segments] == [(5, 0)]
    assert log.delete_old_segments(clock.now) == []          # an empty last segment stays
    log.append(make_batch(1, timestamp=clock.now))
    assert (log.log_start_offset, log.log_end_offset) == (5, 6)
    log.close()


def test_retention_bytes_zero_empties_a_log_below_the_high_watermark(tmp_path):
    clock = FakeClock()
    log = _log_with_segments(tmp_path, clock, [[START_MS]] * 2, retention_ms=-1)
    log.append(make_batch(2, timestamp=START_MS))
    log.high_watermark_source = lambda: log.log_end_offset
    log.update_config(topic_config(retention_ms=-1, retention_bytes=0))
    assert len(log.delete_old_segments(clock.now)) == 3
    assert log.size == 0 and log.log_start_offset == log.log_end_offset == 6
    log.close()


def test_retention_forever(tmp_path):
    clock = FakeClock(START_MS + 1000 * DAY)
    log = _log_with_segments(tmp_path, clock, [[START_MS]] * 4, retention_ms=-1)
    assert log.delete_old_segments(clock.now) == []
    assert len(log.segments) == 5
    log.close()


def test_retention_by_size(tmp_path):
    clock = FakeClock()
    log = _log_with_segments(tmp_path, clock, [[START_MS] * 2] * 5, retention_ms=-1)
    sizes = [s.size for s in log.segments]
    seg = sizes[0]
    assert sizes[:5] == [seg] * 5 and sizes[5] == 0
    log.update_config(topic_config(retention_ms=-1, retention_bytes=int(seg * 2.5)))
    deleted = log.delete_old_segments(clock.now)
    assert len(deleted) == 2  # 5 segments of S bytes, limit 2.5 S: 3 stay (3S - S < 2.5S)
    assert log.size == 3 * seg
    log.update_config(topic_config(retention_ms=-1, retention_bytes=0))
    assert len(log.delete_old_segments(clock.now)) == 3
    assert log.size == 0 and log.log_start_offset == log.log_end_offset
    log.close()


def test_compact_policy_skips_time_and_size_retention(tmp_path):
    clock = FakeClock(START_MS + 100 * DAY)
    log = _log_with_segments(tmp_path, clock, [[START_MS]] * 3, retention_ms=1,
                             retention_bytes=0, cleanup_policy=("compact",))
    assert log.delete_old_segments(clock.now) == []
    log.close()


def test_delete_records_before_removes_whole_segments_below(tmp_path):
    clock = FakeClock()
    log = _log_with_segments(tmp_path, clock, [[START_MS] * 2] * 3, retention_ms=-1)
    bases = [s.base_offset for s in log.segments]
    assert log.delete_records_before(bases[1] + 1) == bases[:1]
    assert log.log_start_offset == bases[1] + 1
    assert offsets_of(log.read(bases[1] + 1, 10**6).records)[0][0] == bases[1]
    log.close()


def test_timestamp_lookup_across_segments(tmp_path):
    clock = FakeClock()
    log = Log(str(tmp_path / "t-0"), topic_config(segment_bytes=400, index_interval_bytes=50),
              clock)
    expected = []  # (offset, timestamp) of every record
    offset = 0
    for i in range(40):
        stamps = [START_MS + 10 * i + d for d in (3, 1, 7)]
        log.append(make_batch(3, timestamps=stamps))
        expected += [(offset + j, t) for j, t in enumerate(stamps)]
        offset += 3
    assert len(log.segments) > 4
    for target in range(START_MS - 5, START_MS + 10 * 40 + 5, 2):
        want = next(((o, t) for o, t in expected if t >= target), None)
        assert log.find_offset_by_timestamp(target) == want, target
    log.delete_records_before(30)
    assert log.find_offset_by_timestamp(START_MS) == (30, START_MS + 103)
    log.close()


def _keyed(key, value, ts=START_MS):
    return make_batch(1, timestamps=[ts], keys=[key], values=[value])


def test_compaction_keeps_the_newest_value_per_key(tmp_path):
    clock = FakeClock(START_MS)
    config = dict(cleanup_policy=("compact",), segment_bytes=500, delete_retention_ms=1000)
    log = Log(str(tmp_path / "t-0"), topic_config(**config), clock)
    for i in range(60):
        key = f"k{i % 7}".encode()
        log.append(_keyed(key, f"v{i}".encode(), START_MS + i))
        if i == 10:
            log.append(_keyed(b"dead", b"alive", START_MS + i))
        if i == 20:
            log.append(_keyed(b"dead", None, START_MS + i))
    log.append(make_batch(3, timestamps=[START_MS] * 3, keys=[b"a", b"b", b"a"],
                          values=[b"1", b"2", b"3"]))
    active_base = log.active_segment.base_offset
    before = list(iter_records(log.read(0, 10**9).records))
    result = log.compact(clock.now, force=True)
    assert result.records_removed > 0 and result.bytes_after < result.bytes_before
    after = list(iter_records(log.read(0, 10**9).records))
    # in the compacted part, each key appears once, at its newest offset (tombstone kept)
    compacted = [r for r in after if r.offset < active_base]
    keys = [r.key for r in compacted]
    assert len(keys) == len(set(keys))
    newest_inactive = {}
    for r in before:
        if r.offset < active_base:
            newest_inactive[r.key] = r.offset
    assert {r.key: r.offset for r in compacted} == newest_inactive
    assert [r for r in after if r.offset >= active_base] == \
        [r for r in before if r.offset >= active_base]
    assert any(r.value is None for r in compacted)
    # offsets keep their order and reads still work from any offset
    assert [r.offset for r in after] == sorted(r.offset for r in after)
    for offset in range(0, log.log_end_offset):
        log.read(offset, 1)
    # the tombstone goes once delete.retention.ms has passed
    clock.advance(10_000)
    log.compact(clock.now, force=True)
    assert all(r.value is not None for r in iter_records(log.read(0, 10**9).records)
               if r.offset < active_base)
    expected = offsets_of(log.read(0, 10**9).records)
    log.close()
    reopened = Log(log.dir, topic_config(**config), clock, clean_shutdown=False)
    assert offsets_of(reopened.read(0, 10**9).records) == expected
    assert not any(n.endswith((".cleaned", ".swap", ".deleted"))
                   for n in os.listdir(log.dir))
    reopened.close()


def test_compaction_waits_for_the_dirty_ratio(tmp_path):
    clock = FakeClock()
    log = Log(str(tmp_path / "t-0"), topic_config(cleanup_policy=("compact",),
                                                  segment_bytes=200), clock)
    for i in range(20):
        log.append(_keyed(b"same", f"{i}".encode()))
    assert log.dirty_ratio() == 1.0
    assert log.compact(clock.now) is not None
    assert log.dirty_ratio() == 0.0
    assert log.compact(clock.now) is None
    log.close()
