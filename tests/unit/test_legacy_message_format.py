"""``message.format.version`` below 0.11 on a Log, on real files: the leader's conversion of v2
batches to magic 0/1 messages (Kafka's LogValidator), what the segments hold, recovery, reads,
truncation and a follower's copy. The stored bytes are read with kafka-python's own record
decoder (``kafka.record.MemoryRecords``), not kafkalite's or aiokafka's (which builds them)."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record import MemoryRecords
from logtools import START_MS, FakeClock, topic_config

from kafkalite.client.decoder import decode_records, scan_batches
from kafkalite.config import TOPIC_BY_NAME, TopicConfig
from kafkalite.config_defs import check_format_version, record_magic
from kafkalite.config_dynamic import check_value
from kafkalite.errors import (
    ConfigError,
    UnknownServerError,
    UnsupportedCompressionTypeError,
    UnsupportedForMessageFormatError,
)
from kafkalite.log import Log
from kafkalite.record import build_batch
from kafkalite.record.batch import read_batch
from kafkalite.record.legacy_convert import legacy_fields, to_legacy

TS = (START_MS, START_MS + 7, START_MS + 3)


def shallow(data: bytes) -> list[tuple]:
    """(magic, offset, timestamp, compression) of each stored entry, by kafka-python."""
    records = MemoryRecords(bytes(data))
    out = []
    while records.has_next():
        batch = records.next_batch()
        out.append((batch.magic, batch._offset, batch._timestamp, batch.compression_type))
    return out


def deep(data: bytes) -> list[tuple]:
    """(offset, timestamp, key, value) of every message, inner ones included, by kafka-python."""
    records = MemoryRecords(bytes(data))
    out = []
    while records.has_next():
        for r in records.next_batch():
            out.append((r.offset, r.timestamp, r.key, r.value))
    return out


def make_log(tmp_path, version="0.10.2", **overrides) -> Log:
    return Log(str(tmp_path / "t-0"), topic_config(message_format_version=version,
                                                   index_interval_bytes=1, **overrides),
               FakeClock())


def batch(n=3, compression="none", **kw) -> bytes:
    return build_batch([(TS[i % 3], f"k{i}".encode(), f"v{i}".encode() * 40, None)
                        for i in range(n)], compression, **kw)


def test_format_versions_are_kafkas_api_versions():
    assert [record_magic(v) for v in ("0.8.0", "0.9.0", "0.9.0.1", "0.10.0-IV0", "0.10.2",
                                      "0.10.2.1", "0.11.0", "2.8", "2.8-IV1", "1.0")] == [
        0, 0, 0, 1, 1, 1, 2, 2, 2, 2]
    assert not any(map(check_format_version, ("0.10.9", "3.0", "x", "", "0.10")))
    with pytest.raises(ConfigError):
        TopicConfig.from_dict({"message.format.version": "0.10.9"})
    with pytest.raises(ConfigError, match=r"^Invalid value 0.10.9 for configuration "
                                          r"message.format.version: Version `0.10.9` is not a "
                                          r"valid version$"):
        check_value(TOPIC_BY_NAME["message.format.version"], "0.10.9")
    assert TopicConfig.from_dict({"message.format.version": "0.9.0"}).message_format_version \
        == "0.9.0"


def test_uncompressed_records_become_one_magic_1_message_each(tmp_path):
    log = make_log(tmp_path)
    info = log.append(batch(3), leader_epoch=5)
    assert (info.first_offset, info.last_offset, info.max_timestamp) == (0, 2, max(TS))
    info = log.append(batch(2))
    assert (info.first_offset, info.last_offset) == (3, 4)
    data = log.read(0, 10**6).records
    assert shallow(data) == [(1, 0, TS[0], 0), (1, 1, TS[1], 0), (1, 2, TS[2], 0),
                             (1, 3, TS[0], 0), (1, 4, TS[1], 0)]
    assert [(o, t, k) for o, t, k, _v in deep(data)] == [
        (0, TS[0], b"k0"), (1, TS[1], b"k1"), (2, TS[2], b"k2"), (3, TS[0], b"k0"),
        (4, TS[1], b"k1")]
    assert log.log_end_offset == 5
    assert shallow(log.read(3, 10**6).records)[0][1] == 3


@pytest.mark.parametrize("version,magic", [("0.10.2", 1), ("0.9.0", 0)])
def test_a_compressed_batch_becomes_one_wrapper_at_its_last_offset(tmp_path, version, magic):
    log = make_log(tmp_path, version)
    log.append(batch(1))
    info = log.append(batch(3, "gzip"))
    assert (info.first_offset, info.last_offset) == (1, 3)
    data = log.read(0, 10**6).records
    ts = max(TS) if magic else None
    assert shallow(data) == [(magic, 0, TS[0] if magic else None, 0), (magic, 3, ts, 1)]
    assert [(o, t, k, v) for o, t, k, v in deep(data)][1:] == [
        (1 + i, TS[i] if magic else None, f"k{i}".encode(), f"v{i}".encode() * 40)
        for i in range(3)]
    # a fetch from an inner offset returns the wrapper
    assert shallow(log.read(2, 10**6).records) == [(magic, 3, ts, 1)]
    if magic:   # ListOffsets by time finds the inner record, as Kafka's segment does
        assert log.find_offset_by_timestamp(TS[1]) == (2, TS[1])


def test_a_topic_codec_applies_before_the_conversion(tmp_path):
    log = make_log(tmp_path, compression_type="gzip")
    log.append(batch(2))
    assert [e[1:] for e in shallow(log.read(0, 10**6).records)] == [(1, max(TS[:2]), 1)]


def test_log_append_time_stamps_the_messages(tmp_path):
    log = make_log(tmp_path, message_timestamp_type="LogAppendTime")
    now = log._clock()
    info = log.append(batch(2))
    assert info.log_append_time == now
    records = MemoryRecords(bytes(log.read(0, 10**6).records))
    got = []
    while records.has_next():
        b = records.next_batch()
        assert b.validate_crc()
        got += [(r.offset, r.timestamp, r.timestamp_type) for r in b]
    assert got == [(0, now, 1), (1, now, 1)]


def test_headers_and_producer_ids_are_refused_and_nothing_is_written(tmp_path):
    log = make_log(tmp_path)
    with_headers = build_batch([(TS[0], b"k", b"v", [("h", b"1")])])
    with pytest.raises(UnknownServerError, match="Magic v1 does not support record headers"):
        log.append(with_headers)
    with pytest.raises(UnsupportedForMessageFormatError, match="Idempotent records"):
        log.append(batch(1, producer_id=7, producer_epoch=0, base_sequence=0))
    assert log.log_end_offset == 0 and log.size == 0


def test_recovery_truncation_and_a_followers_copy(tmp_path):
    log = make_log(tmp_path)
    log.append(batch(3))
    log.append(batch(3, "gzip"))
    log.append(batch(2))
    data = bytes(log.read(0, 10**6).records)
    log.flush()
    log.close()
    # an unclean shutdown: the indexes are gone and the tail is torn
    seg = [n for n in os.listdir(tmp_path / "t-0") if n.endswith(".log")][0]
    for name in os.listdir(tmp_path / "t-0"):
        if name.endswith(("index", ".snapshot")) or name.endswith("checkpoint"):
            os.unlink(tmp_path / "t-0" / name)
    with open(tmp_path / "t-0" / seg, "ab") as f:
        f.write(data[:20])
    reopened = make_log(tmp_path)
    assert reopened.log_end_offset == 8
    assert bytes(reopened.read(0, 10**6).records) == data
    assert shallow(reopened.read(4, 10**6).records)[0][1] == 5  # the wrapper holding 4
    # a follower copies the leader's bytes (a leader epoch cannot be stamped into them)
    follower = Log(str(tmp_path / "f-0"), reopened.config, FakeClock())
    follower.append(data, assign_offsets=False, leader_epoch=3)
    assert bytes(follower.read(0, 10**6).records) == data
    reopened.truncate_to(4)      # the wrapper holding 3..5 goes entirely
    assert reopened.log_end_offset == 3
    assert deep(reopened.read(0, 10**6).records)[-1][0] == 2


def test_fields_of_a_legacy_entry_as_a_v2_header_tuple():
    data = to_legacy([read_batch(batch(2))], 1, 10, None)
    f = legacy_fields(data, 0, verify_crc=True)
    assert (f[0], f[3], f[6], f[8], f[9], f[12]) == (10, 1, 0, TS[0], -1, 1)


_RECORD = st.tuples(st.integers(0, 2**40), st.none() | st.binary(max_size=20),
                    st.none() | st.binary(max_size=300))


@settings(max_examples=60, deadline=None)
@given(records=st.lists(_RECORD, min_size=1, max_size=20), codec=st.sampled_from(
    ["none", "gzip", "lz4"]), magic=st.sampled_from([0, 1]),
    first=st.integers(0, 2**40))
def test_conversion_keeps_every_record(records, codec, magic, first):
    if codec == "lz4" and magic == 0:
        with pytest.raises(UnsupportedCompressionTypeError):
            to_legacy([read_batch(build_batch([(0, None, None, None)], codec))], 0, 0, None)
        return
    v2 = build_batch([(t, k, v, None) for t, k, v in records], codec)
    data = to_legacy([read_batch(v2)], magic, first, None)
    got = deep(data)
    assert [(o, k, v) for o, _t, k, v in got] == [
        (first + i, k, v) for i, (_t, k, v) in enumerate(records)]
    if magic:
        assert [t for _o, t, _k, _v in got] == [t for t, _k, _v in records]
    entries = shallow(data)
    assert len(entries) == (len(records) if codec == "none" else 1)
    assert entries[-1][1] == first + len(records) - 1


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_compaction_keeps_the_newest_record_of_each_key_in_magic_1(tmp_path, codec):
    log = make_log(tmp_path, cleanup_policy=("compact",), segment_bytes=10**9)
    for round_ in range(2):
        log.append(build_batch([(TS[i], f"k{i}".encode(), f"r{round_}".encode(), None)
                                for i in range(3)], codec))
    log.append(batch(1))        # k0 again
    log.roll()                  # the active segment is not cleaned
    log.compact(log._clock(), force=True)
    data = log.read(0, 10**6).records
    assert [(o, k, v) for o, _t, k, v in deep(data)] == [
        (4, b"k1", b"r1"), (5, b"k2", b"r1"), (6, b"k0", b"v0" * 40)]
    assert {e[0] for e in shallow(data)} == {1}
    # a wrapper partly kept is written again at its last kept offset
    assert [e[1] for e in shallow(data)] == ([4, 5, 6] if codec == "none" else [5, 6])


def test_scans_cross_read_chunks_between_messages(tmp_path):
    # a sparse index: finding offset 390 walks ~40 KB of messages in 16 KiB reads
    log = Log(str(tmp_path / "t-0"), topic_config(message_format_version="0.10.2",
                                                   index_interval_bytes=10**6), FakeClock())
    log.append(build_batch([(TS[0], None, bytes([i % 251]) * 77, None) for i in range(400)]))
    assert [e[1] for e in shallow(log.read(390, 10**6).records)] == list(range(390, 400))
    log.close()
    reopened = Log(str(tmp_path / "t-0"), log.config, FakeClock())
    assert reopened.log_end_offset == 400
    assert deep(reopened.read(399, 10**6).records)[0][3] == bytes([399 % 251]) * 77


def test_kafkalites_consumer_decodes_magic_0_and_1_messages(tmp_path):
    for version, magic in (("0.10.2", 1), ("0.9.0", 0)):
        log = make_log(tmp_path / version, version)
        log.append(batch(2))
        log.append(batch(3, "gzip"))
        data = bytes(log.read(0, 10**6).records)
        decoded = decode_records(data, "t", 0, 1)
        assert [(r.offset, r.key, r.timestamp) for r in decoded.records] == [
            (o, f"k{i}".encode(), TS[i] if magic else -1)
            for o, i in ((1, 1), (2, 0), (3, 1), (4, 2))]
        assert decoded.next_offset == 5 and decoded.partial_size == 0
        assert scan_batches(data, 0) == (5, len(data), 0)
        wrapper = len(to_legacy([read_batch(batch(3, "gzip"))], magic, 2, None))
        assert scan_batches(data[:-3], 0) == (2, len(data) - wrapper, wrapper)
