"""Log: append paths, rolling, reads (HW, ranges), truncation, flush, storage errors."""

from __future__ import annotations

import errno
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from logtools import (
    START_MS,
    FakeClock,
    headers_of,
    make_batch,
    offsets_of,
    raw_batch,
    topic_config,
)

from kafkalite.errors import (
    CorruptRecordError,
    IllegalStateError,
    InvalidRecordError,
    KafkaStorageError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
)
from kafkalite.log import Log, UnexpectedAppendOffsetError
from kafkalite.log import segment as segment_module
from kafkalite.record.batch import LOG_APPEND_TIME, read_batch
from kafkalite.record.header import check_batch


def _open(tmp_path, clock=None, **config):
    return Log(str(tmp_path / "my-topic-0"), topic_config(**config), clock or FakeClock())


def _all(log):
    return offsets_of(log.read(log.log_start_offset, 10**9).records)


def test_append_assigns_offsets_and_reads_back(tmp_path):
    log = _open(tmp_path)
    assert (log.topic, log.partition) == ("my-topic", 0)
    info = log.append(make_batch(3, timestamps=[5, 9, 7]))
    assert (info.first_offset, info.last_offset, info.record_count) == (0, 2, 3)
    assert info.max_timestamp == 9 and info.log_append_time == -1
    request = make_batch(2) + make_batch(4) + make_batch(1)
    info = log.append(request)
    assert (info.first_offset, info.last_offset, info.num_bytes) == (3, 9, len(request))
    assert log.log_end_offset == 10
    assert _all(log) == [(0, 2), (3, 4), (5, 8), (9, 9)]
    _header, records = read_batch(log.read(5, 10**6).records)
    assert [r.offset for r in records] == [5, 6, 7, 8]
    log.close()


def test_leader_epoch_is_stamped_and_crc_still_valid(tmp_path):
    log = _open(tmp_path)
    log.append(make_batch(2) + make_batch(1), leader_epoch=7)
    for h in headers_of(log.read(0, 10**6).records):
        assert h.partition_leader_epoch == 7
    log.close()


def test_many_small_batches_take_the_copy_path(tmp_path):
    log = _open(tmp_path, index_interval_bytes=500)
    request = b"".join(make_batch(1, value_size=3) for _ in range(600))
    info = log.append(request, leader_epoch=2)
    assert (info.first_offset, info.last_offset) == (0, 599)
    got = headers_of(log.read(0, 10**9).records)
    assert [h.base_offset for h in got] == list(range(600))
    assert {h.partition_leader_epoch for h in got} == {2}
    assert headers_of(log.read(321, 1).records)[0].base_offset == 321
    log.close()


def test_log_append_time_rewrites_timestamp_and_crc(tmp_path):
    clock = FakeClock(START_MS + 777)
    log = _open(tmp_path, clock, message_timestamp_type="LogAppendTime")
    info = log.append(make_batch(3, timestamps=[1, 2, 3]) + make_batch(1, timestamp=4))
    assert info.log_append_time == info.max_timestamp == START_MS + 777
    data = log.read(0, 10**6).records
    pos = 0
    for h in headers_of(data):
        check_batch(data, pos)
        header, records = read_batch(data, pos)
        assert header.timestamp_type == LOG_APPEND_TIME
        assert {r.timestamp for r in records} == {START_MS + 777}
        pos += h.size
    assert log.find_offset_by_timestamp(START_MS + 700) == (0, START_MS + 777)
    log.close()


def test_invalid_requests_append_nothing(tmp_path):
    log = _open(tmp_path, max_message_bytes=500)
    log.append(make_batch(1))
    good = make_batch(2)
    bad = bytearray(make_batch(2))
    bad[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        log.append(good + bytes(bad))
    with pytest.raises(CorruptRecordError):
        log.append(good + good[:30])  # torn batch at the end of the request
    with pytest.raises(MessageTooLargeError):
        log.append(good + make_batch(1, value_size=600))
    with pytest.raises(InvalidRecordError):
        log.append(raw_batch(count=2, last_offset_delta=3))  # not a producer's batch
    assert log.log_end_offset == 1 and _all(log) == [(0, 0)]
    assert log.append(b"").record_count == 0
    log.close()


def test_follower_append_keeps_offsets(tmp_path):
    log = _open(tmp_path)
    leader_bytes = make_batch(2, base_offset=0) + make_batch(3, base_offset=2)
    patched = bytearray(leader_bytes)
    patched[12:16] = (4).to_bytes(4, "big")  # leader epoch stamped by the leader
    log.append(bytes(patched), assign_offsets=False)
    assert log.log_end_offset == 5
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append(make_batch(1, base_offset=3), assign_offsets=False)
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append(make_batch(1, base_offset=5) + make_batch(1, base_offset=5),
                   assign_offsets=False)
    # a gap (e.g. a compacted leader) is accepted
    log.append(make_batch(1, base_offset=9), assign_offsets=False)
    assert log.log_end_offset == 10
    assert _all(log) == [(0, 1), (2, 4), (9, 9)]
    assert headers_of(log.read(0, 10**6).records)[0].partition_leader_epoch == 4
    assert headers_of(log.read(6, 10**6).records)[0].base_offset == 9
    log.close()


def test_roll_by_segment_bytes(tmp_path):
    log = _open(tmp_path, segment_bytes=1000)
    batch = make_batch(2, value_size=50)
    for _ in range(30):
        log.append(batch)
    segments = log.segments
    assert len(segments) > 3
    assert all(s.size <= 1000 for s in segments)
    assert all(a.next_offset == b.base_offset for a, b in zip(segments, segments[1:]))
    names = sorted(n for n in os.listdir(log.dir) if n.endswith(".log"))
    assert names == [f"{s.base_offset:020d}.log" for s in segments]
    # a batch bigger than segment.bytes still goes in (alone)
    log.append(make_batch(1, value_size=1500))
    assert log.active_segment.size > 1000
    log.close()


def test_roll_by_segment_ms_and_full_index(tmp_path):
    clock = FakeClock()
    log = _open(tmp_path, clock, segment_ms=1000)
    log.append(make_batch(1))
    clock.advance(1000)
    log.append(make_batch(1))
    assert len(log.segments) == 1
    clock.advance(1)
    log.append(make_batch(1))
    assert [s.base_offset for s in log.segments] == [0, 2]
    assert log.active_segment.created_ms == clock.now
    log.close()

    log = Log(str(tmp_path / "idx-0"), topic_config(index_interval_bytes=0,
                                                     segment_index_bytes=8 * 3), FakeClock())
    for _ in range(12):
        log.append(make_batch(1))
    assert len(log.segments) == 3
    assert all(s.index.entries <= 3 for s in log.segments)
    log.close()


def test_read_across_segments_and_limits(tmp_path):
    log = _open(tmp_path, segment_bytes=600, index_interval_bytes=100)
    for i in range(40):
        log.append(make_batch(1 + i % 3, value_size=20))
    everything = _all(log)
    assert len(log.segments) > 4
    assert everything[0][0] == 0 and everything[-1][1] == log.log_end_offset - 1
    size = len(log.read(0, 10**9).records)
    # reads with a byte budget never split a batch and continue across segments
    for budget in (1, 100, 333, 1000, size):
        offset = 0
        seen = []
        while offset < log.log_end_offset:
            got = offsets_of(log.read(offset, budget).records)
            assert got
            seen += got
            offset = got[-1][1] + 1
        assert seen == everything
    for offset in range(0, log.log_end_offset, 3):
        first = offsets_of(log.read(offset, 1).records)[0]
        assert first[0] <= offset <= first[1]
    log.close()


def test_read_with_high_watermark(tmp_path):
    log = _open(tmp_path, segment_bytes=400)
    for _ in range(12):
        log.append(make_batch(3))  # batches 0-2, 3-5, ...
    for hw in range(0, log.log_end_offset + 1):
        got = offsets_of(log.read(0, 10**9, max_offset=hw).records)
        assert all(last < hw for _b, last in got)
        assert got == [o for o in _all(log) if o[1] < hw]
    assert log.read(4, 10**6, max_offset=5).records == b""   # straddling batch held back
    assert log.read(6, 10**6, max_offset=6).records == b""
    assert log.read(30, 10**6, max_offset=9).records == b""  # above the HW
    log.close()


def test_offset_out_of_range(tmp_path):
    log = _open(tmp_path)
    log.append(make_batch(5))
    assert log.read(5, 100).records == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(6, 100)
    log.delete_records_before(3)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(2, 100)
    assert log.read(3, 10**6).first_offset == 3
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(6)
    log.close()


def test_truncate_to_then_append(tmp_path):
    log = _open(tmp_path, segment_bytes=500)
    for _ in range(20):
        log.append(make_batch(2, value_size=30))
    segments_before = len(log.segments)
    log.flush()
    assert log.truncate_to(13)  # inside batch 12-13: the batch goes
    assert log.log_end_offset == 12
    assert log.recovery_point == 12
    assert len(log.segments) < segments_before
    assert _all(log)[-1] == (10, 11)
    assert log.append(make_batch(1)).first_offset == 12
    assert not log.truncate_to(100)
    log.truncate_to(0)
    assert log.log_end_offset == 0 and _all(log) == []
    assert log.append(make_batch(1)).first_offset == 0
    log.close()
    names = sorted(n for n in os.listdir(log.dir) if n.endswith(".log"))
    assert names == ["00000000000000000000.log"]


def test_truncate_fully_and_start_at(tmp_path):
    log = _open(tmp_path, segment_bytes=300)
    for _ in range(10):
        log.append(make_batch(2))
    log.truncate_fully_and_start_at(1000)
    assert (log.log_start_offset, log.log_end_offset, log.recovery_point) == (1000, 1000, 1000)
    assert log.append(make_batch(1)).first_offset == 1000
    assert [s.base_offset for s in log.segments] == [1000]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(5, 100)
    log.close()


def test_flush_messages_and_recovery_point(tmp_path):
    log = _open(tmp_path, flush_messages=5)
    log.append(make_batch(3))
    assert log.recovery_point == 0 and log.unflushed_messages == 3
    log.append(make_batch(3))
    assert log.recovery_point == 6 and log.unflushed_messages == 0
    log.close()
    log = Log(str(tmp_path / "b-0"), topic_config(segment_bytes=300), FakeClock())
    for _ in range(10):
        log.append(make_batch(2))
    log.flush(up_to=4)
    assert log.recovery_point == 4
    assert log.maybe_flush()  # segments rolled since are flushed
    assert log.recovery_point == log.active_segment.base_offset
    log.close()


def test_flush_ms(tmp_path):
    clock = FakeClock()
    log = _open(tmp_path, clock, flush_ms=1000)
    log.append(make_batch(2))
    assert not log.maybe_flush(clock.now + 999)
    assert log.maybe_flush(clock.now + 1000)
    assert log.recovery_point == 2
    log.close()


def test_enospc_gives_storage_error_and_no_partial_batch(tmp_path, monkeypatch):
    log = _open(tmp_path)
    log.append(make_batch(2))
    size = log.active_segment.size
    real_writev, real_write = os.writev, os.write

    def failing_writev(fd, buffers):
        real_write(fd, bytes(buffers[0])[:7])  # a partial write, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    def failing_write(fd, data):
        real_write(fd, bytes(data)[:5])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(segment_module.os, "writev", failing_writev)
    monkeypatch.setattr(segment_module.os, "write", failing_write)
    with pytest.raises(KafkaStorageError, match="No space left"):
        log.append(make_batch(3))
    with pytest.raises(KafkaStorageError, match="No space left"):
        log.append(b"".join(make_batch(1) for _ in range(300)))  # copy path
    assert log.log_end_offset == 2 and log.active_segment.size == size
    assert os.path.getsize(log.active_segment.log_path) == size
    monkeypatch.setattr(segment_module.os, "writev", real_writev)
    monkeypatch.setattr(segment_module.os, "write", real_write)
    assert log.append(make_batch(1)).first_offset == 2
    assert _all(log) == [(0, 1), (2, 2)]
    log.close()
    reopened = Log(log.dir, topic_config(), FakeClock(), clean_shutdown=False)
    assert reopened.recovery_truncated_bytes == 0 and _all(reopened) == [(0, 1), (2, 2)]
    reopened.close()


def test_delayed_file_deletion(tmp_path):
    clock = FakeClock()
    log = _open(tmp_path, clock, segment_bytes=300, file_delete_delay_ms=5000)
    for _ in range(10):
        log.append(make_batch(2))
    first = log.segments[0]
    log.delete_records_before(log.segments[1].base_offset)
    assert first.log_path.endswith(".log.deleted") and os.path.exists(first.log_path)
    assert log.delete_expired_files(clock.now + 4999) == 0
    assert log.delete_expired_files(clock.now + 5000) == 1
    assert not os.path.exists(first.log_path)
    log.close()


def test_reopen_after_close_keeps_everything(tmp_path):
    clock = FakeClock()
    log = _open(tmp_path, clock, segment_bytes=500, index_interval_bytes=64)
    for i in range(30):
        log.append(make_batch(2, timestamp=START_MS + i))
    expected = _all(log)
    log.flush()
    log.close()
    again = Log(log.dir, topic_config(segment_bytes=500, index_interval_bytes=64), clock,
                recovery_point=log.recovery_point, clean_shutdown=True)
    assert _all(again) == expected
    assert again.active_segment.largest_timestamp == START_MS + 29
    assert again.find_offset_by_timestamp(START_MS + 17) == (34, START_MS + 17)
    assert again.append(make_batch(1)).first_offset == 60
    again.delete()
    assert not os.path.exists(log.dir)


def test_closed_log_rejects_appends(tmp_path):
    log = _open(tmp_path)
    log.close()
    with pytest.raises(KafkaStorageError):
        log.append(make_batch(1))


@settings(deadline=None, max_examples=30)
@given(sizes=st.lists(st.tuples(st.integers(1, 300), st.integers(1, 4)), min_size=1,
                      max_size=40),
       segment_bytes=st.integers(100, 2000), interval=st.integers(0, 1000),
       probes=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 3000),
                                 st.one_of(st.none(), st.integers(0, 200))),
                       min_size=1, max_size=25))
def test_reads_match_a_model(tmp_path_factory, sizes, segment_bytes, interval, probes):
    """Any read returns the greedy prefix of whole batches a model of the log predicts."""
    path = tmp_path_factory.mktemp("model") / "m-0"
    log = Log(str(path), topic_config(segment_bytes=segment_bytes,
                                      index_interval_bytes=interval), FakeClock())
    model = []  # (base, last, size)
    for records_len, count in sizes:
        info = log.append(raw_batch(b"z" * records_len, count=count))
        model.append((info.first_offset, info.last_offset, info.num_bytes))
    leo = log.log_end_offset
    for offset, max_bytes, max_offset in probes:
        if offset > leo:
            with pytest.raises(OffsetOutOfRangeError):
                log.read(offset, max_bytes, max_offset)
            continue
        limit = leo if max_offset is None else min(max_offset, leo)
        expected, used = [], 0
        for base, last, size in model:
            if last < offset or offset >= limit:
                continue
            if last >= limit or (expected and used + size > max_bytes):
                break
            expected.append((base, last))
            used += size
            if used >= max_bytes:
                break
        got = log.read(offset, max_bytes, max_offset)
        assert offsets_of(got.records) == expected, (offset, max_bytes, max_offset)
    log.close()


def test_roll_rules(tmp_path):
    log = _open(tmp_path)
    assert log.roll() is log.active_segment  # empty active segment: nothing to do
    log.append(make_batch(2))
    with pytest.raises(IllegalStateError):
        log.roll(1)
    log.roll()
    assert [s.base_offset for s in log.segments] == [0, 2]
    log.roll(10)  # an empty active segment is replaced
    assert [s.base_offset for s in log.segments] == [0, 10]
    assert not os.path.exists(os.path.join(log.dir, f"{2:020d}.log"))
    log.close()
