"""kafkalite.record.batch: building, reading and validating v2 record batches.

The CRC catches almost any damage before the records are decoded, so the decoder's own checks are
exercised with ``reseal`` (recordtools): it wraps an arbitrary records section in a header with a
correct CRC. The records' own layout is tested in test_record_kafka_format.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from recordtools import (
    CODEC_IDS,
    CODECS,
    I64_MAX,
    I64_MIN,
    ONE,
    SAMPLE,
    expected_records,
    reseal,
)

from kafkalite.errors import (
    CorruptRecordError,
    IllegalStateError,
    InvalidRecordError,
    UnsupportedCompressionTypeError,
)
from kafkalite.record import (
    HEADER_SIZE,
    BatchBuilder,
    BatchHeader,
    Record,
    build_batch,
    iter_batches,
    iter_records,
    read_batch,
    validate_batch_bytes,
)
from kafkalite.record import header as H


# --- round trips ---------------------------------------------------------------------------------

@pytest.mark.parametrize("codec", CODECS)
def test_roundtrip_sample(codec):
    batch = build_batch(SAMPLE, compression=codec, base_offset=42, partition_leader_epoch=7,
                        producer_id=1234, producer_epoch=3, base_sequence=99)
    header, records = read_batch(batch)
    assert records == expected_records(42, SAMPLE)
    assert isinstance(header, BatchHeader)
    assert header.size == len(batch)
    assert header.base_offset == 42
    assert header.partition_leader_epoch == 7
    assert header.magic == 2
    assert header.compression == CODEC_IDS[codec]
    assert header.timestamp_type == 0
    assert header.record_count == 4
    assert header.last_offset_delta == 3
    assert header.last_offset == 45 and header.next_offset == 46
    assert header.first_timestamp == SAMPLE[0][0]
    assert header.max_timestamp == max(r[0] for r in SAMPLE)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (1234, 3, 99)
    assert H.check_batch(batch) == header


@pytest.mark.parametrize("codec", CODECS)
def test_builder_matches_build_batch_byte_for_byte(codec):
    builder = BatchBuilder(codec, base_offset=5, producer_id=9, producer_epoch=1, base_sequence=0)
    deltas = [builder.append(*row) for row in SAMPLE]
    assert deltas == [0, 1, 2, 3]
    assert builder.record_count == len(builder) == 4
    batch = builder.build()
    assert batch == build_batch(SAMPLE, compression=codec, base_offset=5, producer_id=9,
                                producer_epoch=1, base_sequence=0)
    assert builder.build() == batch  # build() leaves the builder usable
    assert read_batch(batch)[1] == expected_records(5, SAMPLE)


def test_builder_accepts_codec_ids_and_keyword_headers():
    builder = BatchBuilder(4)
    builder.append(1, b"k", b"v", headers={"a": b"1", "b": None})
    builder.append(2, bytearray(b"k2"), memoryview(b"v2"), headers=(("c", bytearray(b"3")),))
    header, records = read_batch(builder.build())
    assert header.compression == 4
    assert records == [Record(0, 1, b"k", b"v", (("a", b"1"), ("b", None))),
                       Record(1, 2, b"k2", b"v2", (("c", b"3"),))]
    assert all(type(r.key) is bytes and type(r.value) is bytes for r in records)


def test_build_batch_accepts_any_iterable():
    batch = build_batch(iter(SAMPLE[:2]), compression="lz4")
    assert read_batch(batch)[1] == expected_records(0, SAMPLE[:2])
    assert build_batch(tuple(SAMPLE)) == build_batch(SAMPLE)


def test_single_record_and_timestamps_at_the_int64_edges():
    for ts in (I64_MIN, -1, 0, I64_MAX):
        _, records = read_batch(build_batch([(ts, None, None, None)]))
        assert records == [Record(0, ts, None, None, ())]
    near = [(I64_MAX, b"a", b"", None), (I64_MAX - 10, b"b", b"", None), (0, None, b"", None)]
    header, records = read_batch(build_batch(near))
    assert [r.timestamp for r in records] == [I64_MAX, I64_MAX - 10, 0]
    assert header.first_timestamp == I64_MAX and header.max_timestamp == I64_MAX


def test_large_values_and_many_records():
    rows = [(i, b"%d" % i, bytes([i % 256]) * (i * 37 % 5000), None) for i in range(3000)]
    for codec in CODECS:
        header, records = read_batch(build_batch(rows, compression=codec, base_offset=1 << 40))
        assert records == expected_records(1 << 40, rows)
        assert header.last_offset == (1 << 40) + 2999


def test_records_are_frozen_values():
    _, records = read_batch(build_batch(SAMPLE))
    made = expected_records(0, SAMPLE)
    assert records == made and hash(records[1]) == hash(made[1])
    with pytest.raises(dataclasses.FrozenInstanceError):
        records[0].offset = 5
    assert repr(records[0]).startswith("Record(offset=0, timestamp=1700000000000")


binary_or_none = st.one_of(st.none(), st.binary(max_size=64))
record_rows = st.lists(
    st.tuples(
        st.integers(min_value=-(1 << 61), max_value=1 << 61),
        binary_or_none,
        binary_or_none,
        st.one_of(st.none(), st.lists(st.tuples(st.text(max_size=8), binary_or_none), max_size=3)),
    ),
    min_size=1, max_size=40)


@settings(max_examples=80, deadline=None)
@given(rows=record_rows, codec=st.sampled_from(CODECS),
       base_offset=st.integers(min_value=0, max_value=1 << 62),
       epoch=st.integers(min_value=-1, max_value=(1 << 31) - 1))
def test_roundtrip_arbitrary_records(rows, codec, base_offset, epoch):
    batch = build_batch(rows, compression=codec, base_offset=base_offset,
                        partition_leader_epoch=epoch)
    header, records = read_batch(batch)
    assert records == expected_records(base_offset, rows)
    assert header.partition_leader_epoch == epoch
    assert header.max_timestamp == max(r[0] for r in rows)
    assert validate_batch_bytes(batch, from_producer=True) == [header]
    builder = BatchBuilder(codec, base_offset=base_offset, partition_leader_epoch=epoch)
    for row in rows:
        builder.append(*row)
    assert builder.build() == batch


# --- builder input checking ----------------------------------------------------------------------

def test_empty_builder_and_empty_input_are_illegal_state():
    with pytest.raises(IllegalStateError):
        BatchBuilder().build()
    with pytest.raises(IllegalStateError):
        build_batch([])
    with pytest.raises(IllegalStateError):
        build_batch(iter(()))


@pytest.mark.parametrize("row", [
    ("1", b"k", b"v", None),            # timestamp not an int
    (1.5, b"k", b"v", None),
    (True, b"k", b"v", None),
    (1, "k", b"v", None),               # str key
    (1, b"k", 5, None),                 # int value
    (1, b"k", b"v", 5),                 # headers not a list
    (1, b"k", b"v", [("a",)]),          # header not a pair
    (1, b"k", b"v", [(b"a", b"v")]),    # header name not str
    (1, b"k", b"v", [("a", "v")]),      # header value not bytes
])
def test_bad_record_fields_raise_type_error(row):
    with pytest.raises(TypeError):
        build_batch([(0, None, b"ok", None), row])
    with pytest.raises(TypeError):
        BatchBuilder().append(*row)


@pytest.mark.parametrize("row", [(1, b"k", b"v"), (1, b"k", b"v", None, None), 5, None])
def test_bad_record_shapes_raise_type_error(row):
    with pytest.raises(TypeError, match="record 1"):
        build_batch([(0, None, b"ok", None), row])


def test_timestamps_out_of_range_raise_value_error():
    with pytest.raises(ValueError):
        build_batch([(I64_MAX + 1, None, b"", None)])
    with pytest.raises(ValueError):
        build_batch([(I64_MIN - 1, None, b"", None)])
    with pytest.raises(ValueError, match="too far apart"):
        build_batch([(I64_MIN, None, b"", None), (I64_MAX, None, b"", None)])
    builder = BatchBuilder()
    builder.append(I64_MAX, None, b"")
    with pytest.raises(ValueError, match="too far apart"):
        builder.append(I64_MIN, None, b"")
    assert builder.record_count == 1  # the refused record was not added


def test_unencodable_header_name_raises_value_error():
    with pytest.raises(ValueError, match="cannot encode"):
        build_batch([(0, None, b"", [("\ud800", b"")])])


@pytest.mark.parametrize("kwargs, exc", [
    ({"compression": "lzma"}, UnsupportedCompressionTypeError),
    ({"compression": 5}, UnsupportedCompressionTypeError),
    ({"compression": 2.0}, UnsupportedCompressionTypeError),
    ({"base_offset": 1 << 63}, ValueError),
    ({"partition_leader_epoch": 1 << 31}, ValueError),
    ({"producer_epoch": 1 << 15}, ValueError),
    ({"base_sequence": -(1 << 31) - 1}, ValueError),
    ({"producer_id": "7"}, TypeError),
    ({"timestamp_type": 2}, ValueError),
    ({"timestamp_type": True}, ValueError),
])
def test_bad_batch_parameters(kwargs, exc):
    with pytest.raises(exc):
        BatchBuilder(**kwargs)
    with pytest.raises(exc):
        build_batch(SAMPLE, **kwargs)


def test_explicit_offset_deltas_keep_gaps():
    builder = BatchBuilder(base_offset=100)
    assert builder.append(1, b"a", b"1", offset_delta=0) == 0
    assert builder.append(2, b"b", b"2", offset_delta=5) == 5
    assert builder.append(3, b"c", b"3") == 6
    with pytest.raises(ValueError):
        builder.append(4, b"d", b"4", offset_delta=6)
    header, records = read_batch(builder.build())
    assert [r.offset for r in records] == [100, 105, 106]
    assert header.record_count == 3 and header.last_offset_delta == 6
    validate_batch_bytes(builder.build())  # a compacted batch is fine for the log...
    with pytest.raises(InvalidRecordError):  # ...but not as a producer's request
        validate_batch_bytes(builder.build(), from_producer=True)


def test_estimated_size_tracks_the_uncompressed_batch():
    builder = BatchBuilder()
    assert builder.estimated_size() == HEADER_SIZE
    for i in range(200):
        builder.append(1_700_000_000_000 + i, b"key-%d" % i, b"v" * 100,
                       [("h", b"x" * 10)] if i % 10 == 0 else None)
    actual = len(builder.build())
    assert 0.8 * actual <= builder.estimated_size() <= 1.25 * actual


# --- timestamps types and in-place patching ------------------------------------------------------

def test_log_append_time_batches_report_max_timestamp_for_every_record():
    batch = build_batch(SAMPLE, timestamp_type=1, compression="gzip")
    header, records = read_batch(batch)
    assert header.timestamp_type == 1
    assert {r.timestamp for r in records} == {header.max_timestamp}


def test_broker_can_switch_a_batch_to_log_append_time():
    batch = bytearray(build_batch(SAMPLE, compression="zstd", base_offset=3))
    H.set_log_append_time(batch, 0, 1_800_000_000_000)
    header, records = read_batch(batch)  # CRC re-sealed
    assert header.timestamp_type == 1 and header.compression == 4
    assert [r.timestamp for r in records] == [1_800_000_000_000] * len(SAMPLE)
    assert [r.value for r in records] == [row[2] for row in SAMPLE]


@pytest.mark.parametrize("codec", CODECS)
def test_patching_base_offset_and_leader_epoch_keeps_the_crc(codec):
    first = build_batch(SAMPLE, compression=codec)
    second = build_batch(SAMPLE[:2], compression=codec)
    buf = bytearray(first + second)
    H.set_base_offset(buf, 0, 1000)
    H.set_partition_leader_epoch(buf, 0, 17)
    H.set_base_offset(buf, len(first), 1004)
    H.set_partition_leader_epoch(buf, len(first), 18)
    assert H.check_batch(buf, 0).base_offset == 1000
    assert H.check_batch(buf, len(first)).partition_leader_epoch == 18
    header, records = read_batch(buf)
    assert header.partition_leader_epoch == 17
    assert [r.offset for r in records] == [1000, 1001, 1002, 1003]
    assert [r.offset for r in iter_records(buf)] == [1000, 1001, 1002, 1003, 1004, 1005]
    assert [h.base_offset for h in validate_batch_bytes(buf)] == [1000, 1004]


# --- damage: bit flips, truncation, garbage ------------------------------------------------------

OUTSIDE_CRC = set(range(0, 8)) | set(range(12, 16))  # base_offset, partition_leader_epoch


@pytest.mark.parametrize("codec", CODECS)
def test_every_single_bit_flip_is_detected_except_in_the_patchable_fields(codec):
    rows = [(1000, b"k", b"hello", [("h", b"1")]), (1001, None, b"world", None)]
    batch = build_batch(rows, compression=codec, base_offset=10, partition_leader_epoch=3)
    good = read_batch(batch)
    undetected = set()
    for bit in range(len(batch) * 8):
        damaged = bytearray(batch)
        damaged[bit // 8] ^= 1 << (bit % 8)
        try:
            header, records = read_batch(damaged)
        except CorruptRecordError:
            continue
        undetected.add(bit)
        # the flip only moved the offsets or the epoch; the records themselves are intact
        assert [(r.timestamp, r.key, r.value, r.headers) for r in records] == \
               [(r.timestamp, r.key, r.value, r.headers) for r in good[1]]
        assert (header.base_offset, header.partition_leader_epoch) != \
               (good[0].base_offset, good[0].partition_leader_epoch)
        assert [r.offset - header.base_offset for r in records] == [0, 1]
    # exactly the bits of base_offset and partition_leader_epoch go unnoticed; every bit of
    # batch_length (bytes 8..11), magic (16), the CRC (17..20) and all that follows is caught
    assert undetected == {byte * 8 + i for byte in OUTSIDE_CRC for i in range(8)}


@pytest.mark.parametrize("codec", CODECS)
def test_every_truncation_is_corrupt(codec):
    batch = build_batch(SAMPLE, compression=codec)
    for cut in range(len(batch)):
        with pytest.raises(CorruptRecordError):
            read_batch(batch[:cut])
        with pytest.raises(CorruptRecordError):
            read_batch(batch[:cut], verify_crc=False)
        if cut:  # (an empty buffer is a valid, empty record set for the broker)
            with pytest.raises(CorruptRecordError):
                validate_batch_bytes(batch[:cut])


def test_truncated_batch_error_names_the_position():
    batch = build_batch(SAMPLE)
    with pytest.raises(CorruptRecordError, match="truncated batch at byte 0"):
        read_batch(batch[:-1])
    with pytest.raises(CorruptRecordError, match=f"byte {len(batch)}"):
        list(iter_records(batch + batch[:-1]))


def test_crc_mismatch_and_verify_crc_false():
    batch = bytearray(build_batch(SAMPLE))
    batch[H.CRC_POS] ^= 0x01
    with pytest.raises(CorruptRecordError, match="CRC mismatch"):
        read_batch(batch)
    _, records = read_batch(batch, verify_crc=False)  # only the stored CRC was damaged
    assert records == expected_records(0, SAMPLE)


def test_bad_magic_is_corrupt():
    batch = bytearray(build_batch(SAMPLE))
    batch[H.MAGIC_POS] = 1
    with pytest.raises(CorruptRecordError, match="magic 1"):
        read_batch(batch, verify_crc=False)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200))
def test_random_garbage_only_raises_corrupt(data):
    for call in (read_batch, lambda d: read_batch(d, verify_crc=False), validate_batch_bytes,
                 lambda d: list(iter_records(d)), lambda d: list(iter_records(d, False, True))):
        try:
            call(data)
        except CorruptRecordError:
            pass


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=200), codec=st.sampled_from([0, 1, 2, 3, 4, 5, 7]),
       count=st.integers(min_value=-2, max_value=5), log_append=st.booleans())
def test_garbage_records_section_with_a_valid_crc_only_raises_corrupt(data, codec, count,
                                                                      log_append):
    batch = reseal(data, record_count=count, attributes=codec | (8 if log_append else 0))
    try:
        read_batch(batch)
    except CorruptRecordError:
        pass


def test_argument_errors_are_not_corruption():
    batch = build_batch(SAMPLE)
    with pytest.raises(TypeError):
        read_batch("not bytes")
    with pytest.raises(ValueError):
        read_batch(batch, pos=-1)
    with pytest.raises(CorruptRecordError):
        read_batch(batch, pos=len(batch) + 5)


# --- many batches --------------------------------------------------------------------------------

def concatenated():
    parts, expected, offset = [], [], 0
    for i, codec in enumerate(CODECS * 2):
        rows = [(1000 * i + j, b"%d-%d" % (i, j), b"v" * j, [("i", b"%d" % i)] if j else None)
                for j in range(i + 1)]
        parts.append(build_batch(rows, compression=codec, base_offset=offset,
                                 partition_leader_epoch=i))
        expected += expected_records(offset, rows)
        offset += len(rows)
    return parts, expected


def test_iter_records_across_concatenated_batches():
    parts, expected = concatenated()
    buf = b"".join(parts)
    assert list(iter_records(buf)) == expected
    assert list(iter_records(memoryview(buf))) == expected
    assert list(iter_records(bytearray(buf), verify_crc=False)) == expected
    batches = list(iter_batches(buf))
    assert [h.compression for h, _ in batches] == [0, 1, 2, 3, 4] * 2
    assert [h.partition_leader_epoch for h, _ in batches] == list(range(10))
    assert [r for _, records in batches for r in records] == expected
    # each batch can also be read at its own position
    pos = 0
    for part, (header, records) in zip(parts, batches):
        assert read_batch(buf, pos) == (header, records)
        pos += len(part)
    assert list(iter_batches(buf, pos=len(parts[0]))) == batches[1:]


def test_iter_records_empty_buffer():
    assert list(iter_records(b"")) == []
    assert validate_batch_bytes(b"") == []


def test_partial_trailing_batch():
    parts, expected = concatenated()
    whole = b"".join(parts[:-1])
    n_whole = sum(1 for _ in iter_records(whole))
    last = parts[-1]
    for cut in range(1, len(last)):
        buf = whole + last[:cut]
        with pytest.raises(CorruptRecordError):
            list(iter_records(buf))
        # a byte-limited fetch may end mid-batch: allow_partial drops the stub
        assert list(iter_records(buf, allow_partial=True)) == expected[:n_whole]


def test_allow_partial_still_reports_damage():
    parts, _ = concatenated()
    buf = bytearray(b"".join(parts))
    buf[len(parts[0]) + 30] ^= 0x10  # inside batch 2
    with pytest.raises(CorruptRecordError, match=f"byte {len(parts[0])}"):
        list(iter_records(buf, allow_partial=True))
    bad_magic = b"".join(parts[:2]) + b"\x00" * 16 + b"\x07" + b"\x00" * 10
    with pytest.raises(CorruptRecordError, match=f"byte {len(parts[0]) + len(parts[1])}"):
        list(iter_records(bad_magic, allow_partial=True))  # not a batch's start: not a stub


def test_damage_in_a_later_batch_is_reported_where_it_is():
    parts, _ = concatenated()
    buf = bytearray(b"".join(parts))
    where = len(parts[0]) + len(parts[1])
    buf[where + HEADER_SIZE + 2] ^= 0x01
    it = iter_records(buf)
    assert [next(it) for _ in range(3)]  # the first two batches come through
    with pytest.raises(CorruptRecordError, match=f"byte {where}"):
        list(it)
    with pytest.raises(CorruptRecordError) as info:
        validate_batch_bytes(buf)
    assert info.value.position == where


# --- the broker's validation ---------------------------------------------------------------------

def test_validate_batch_bytes_returns_headers_in_order():
    parts, _ = concatenated()
    headers = validate_batch_bytes(b"".join(parts), from_producer=True)
    assert [h.size for h in headers] == [len(p) for p in parts]
    assert [h.record_count for h in headers] == list(range(1, 11))


def test_validate_batch_bytes_does_not_decode_records():
    garbage = reseal(b"\xc1 not Kafka records at all", record_count=3)
    assert validate_batch_bytes(garbage)[0].record_count == 3
    with pytest.raises(CorruptRecordError):
        read_batch(garbage)


@pytest.mark.parametrize("kwargs, exc, message", [
    ({"attributes": 5}, CorruptRecordError, "codec 5"),
    ({"attributes": 7}, CorruptRecordError, "codec 7"),
    ({"record_count": 4, "last_offset_delta": 2}, CorruptRecordError, "claims 4 records"),
])
def test_validate_batch_bytes_checks_headers(kwargs, exc, message):
    args = {"record_count": 1, **kwargs}
    with pytest.raises(exc, match=message):
        validate_batch_bytes(build_batch(SAMPLE) + reseal(ONE, **args))


def test_validate_batch_bytes_from_producer():
    with pytest.raises(InvalidRecordError):
        validate_batch_bytes(reseal(b"\x00", record_count=0), from_producer=True)
    with pytest.raises(CorruptRecordError, match="no records section"):
        validate_batch_bytes(reseal(b"", record_count=0))


def test_batch_length_below_the_header_is_corrupt():
    batch = reseal(ONE, record_count=1, batch_length=10)
    for call in (read_batch, validate_batch_bytes, lambda b: list(iter_records(b, False, True))):
        with pytest.raises(CorruptRecordError, match="length 10"):
            call(batch)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=record_rows, codec=st.sampled_from(CODECS), data=st.data())
def test_hypothesis_flip_and_truncate(rows, codec, data):
    """Random damage to a random batch: either detected, or confined to the patchable fields."""
    batch = bytearray(build_batch(rows, compression=codec))
    bit = data.draw(st.integers(min_value=0, max_value=len(batch) * 8 - 1))
    batch[bit // 8] ^= 1 << (bit % 8)
    cut = data.draw(st.integers(min_value=0, max_value=len(batch)))
    assume(cut == len(batch) or data.draw(st.booleans()))
    damaged = bytes(batch[:cut])
    try:
        header, records = read_batch(damaged)
    except CorruptRecordError:
        return
    assert cut == len(batch) and bit // 8 in OUTSIDE_CRC
    assert [r.value for r in records] == [row[2] for row in rows]
