"""Kafka's v2 records inside kafkalite's batches: a hand-computed golden batch, kafka-python's
pure-Python ``kafka.record.default_records`` as an independent oracle, aiokafka for snappy, and
lying or malformed varint records, which both readers (``read_batch`` and the consumer's
``decode_records``) must refuse with CorruptRecordError or decode alike."""

from __future__ import annotations

import dataclasses
import struct
import warnings

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from recordtools import (
    CODEC_IDS,
    CODECS,
    I64_MAX,
    I64_MIN,
    ONE,
    SAMPLE,
    expected_records,
    kafka_record,
    reseal,
    varint,
)

from kafkalite.client.decoder import decode_records
from kafkalite.errors import CorruptRecordError
from kafkalite.record import Record, build_batch, compress, read_batch

with warnings.catch_warnings():  # importing kafka-python loads its protocol schemas noisily
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.default_records import DefaultRecordBatch as KafkaPythonBatch
    from kafka.record.default_records import DefaultRecordBatchBuilder as KafkaPythonBuilder

ORACLE_CODECS = ["none", "gzip", "lz4", "zstd"]  # kafka-python here has no snappy library
binary_or_none = st.one_of(st.none(), st.binary(max_size=64))


# --- the layout, and other implementations ---------------------------------------------------

def test_golden_batch_matches_kafkas_v2_layout_byte_for_byte():
    rows = [(1000, b"k", b"v", [("h", b"x")]), (1003, None, b"", None)]
    records = bytes.fromhex(
        "18"        # length 12 (zigzag varint)
        "00"        # attributes
        "00"        # timestampDelta 0
        "00"        # offsetDelta 0
        "02" "6b"   # key: length 1, "k"
        "02" "76"   # value: length 1, "v"
        "02"        # 1 header
        "02" "68"   # header key: length 1, "h"
        "02" "78"   # header value: length 1, "x"
        "0c"        # length 6
        "00"        # attributes
        "06"        # timestampDelta 3
        "02"        # offsetDelta 1
        "01"        # key: null (-1)
        "00"        # value: length 0
        "00")       # no headers
    tail = struct.pack(">hiqqqhii", 0, 1, 1000, 1003, 7, 2, 9, 2)
    expected = (struct.pack(">qiibI", 5, 49 + len(records), 1, 2, crc32c(tail + records))
                + tail + records)
    assert expected.hex() == (
        "0000000000000005" "00000045" "00000001" "02" "c16f46ac" "0000" "00000001"
        "00000000000003e8" "00000000000003eb" "0000000000000007" "0002" "00000009" "00000002"
        "18000000026b027602026802780c000602010000")
    batch = build_batch(rows, base_offset=5, partition_leader_epoch=1, producer_id=7,
                        producer_epoch=2, base_sequence=9)
    assert batch == expected
    assert read_batch(expected)[1] == expected_records(5, rows)


def _oracle_build(rows, codec: str) -> bytes:
    """kafka-python's pure-Python builder (base offset 0, leader epoch 0, as a producer sends)."""
    builder = KafkaPythonBuilder(2, CODEC_IDS[codec], 0, -1, -1, -1, 1 << 30)
    for i, (ts, key, value, hdrs) in enumerate(rows):
        assert builder.append(i, ts, key, value, list(hdrs or ())) is not None
    return bytes(builder.build())


def _oracle_read(batch: bytes) -> list[Record]:
    parsed = KafkaPythonBatch(bytearray(batch))
    assert parsed.validate_crc()
    return [Record(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in parsed]


oracle_rows = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=1 << 45),
        binary_or_none,
        binary_or_none,
        st.one_of(st.none(), st.lists(st.tuples(st.text(max_size=8), binary_or_none), max_size=3)),
    ),
    min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(rows=oracle_rows, codec=st.sampled_from(ORACLE_CODECS))
def test_kafka_python_reads_what_we_write_and_we_read_what_it_writes(rows, codec):
    ours = build_batch(rows, compression=codec, partition_leader_epoch=0)
    assert _oracle_read(ours) == expected_records(0, rows)
    theirs = _oracle_build(rows, codec)
    assert read_batch(theirs)[1] == expected_records(0, rows)
    if codec == "none" or KafkaPythonBatch(bytearray(theirs)).compression_type == 0:
        # (kafka-python falls back to no compression when it does not pay)
        assert read_batch(theirs)[0].compression == 0
    if codec == "none":
        assert ours == theirs  # same header fields, same records: the very same bytes


def test_snappy_batches_interoperate_with_aiokafka():
    """kafka-python has no snappy here; aiokafka decompresses snappy itself (xerial or raw)."""
    from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

    batch = build_batch(SAMPLE, compression="snappy", base_offset=3)
    assert read_batch(batch)[0].compression == 2
    theirs = DefaultRecordBatch(batch)
    assert theirs.validate_crc()
    assert [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in theirs] == \
        [tuple(dataclasses.astuple(r)) for r in expected_records(3, SAMPLE)]
    builder = DefaultRecordBatchBuilder(2, 2, 0, -1, -1, -1, 1 << 30)
    for i, (ts, key, value, hdrs) in enumerate(SAMPLE):
        builder.append(i, ts, key, value, list(hdrs or ()))
    assert read_batch(bytes(builder.build()))[1] == expected_records(0, SAMPLE)


def test_first_timestamp_minus_one_keeps_every_delta():
    """-1 ("no timestamp") is aiokafka's builder's 'no first record yet' marker; kafkalite feeds
    it deltas so a batch starting at -1 still records each timestamp."""
    rows = [(-1, None, b"a", None), (1_700_000_000_000, None, b"b", None), (-1, None, b"c", None)]
    header, records = read_batch(build_batch(rows))
    assert [r.timestamp for r in records] == [-1, 1_700_000_000_000, -1]
    assert header.first_timestamp == -1 and header.max_timestamp == 1_700_000_000_000
    assert _oracle_read(build_batch(rows)) == expected_records(0, rows)


def test_reading_from_buffers_without_a_nul_terminator():
    """aiokafka bounds-checks only a varint's first byte, relying on the NUL that ends bytes and
    bytearray memory; batches in other buffers (here an mmap ending at the batch) are copied."""
    import mmap

    good = build_batch(SAMPLE)
    cut_varint = reseal(kafka_record(0, 0, None, b"v")[:-1] + b"\xff", record_count=1)
    for batch, expected in ((good, expected_records(0, SAMPLE)), (cut_varint, None)):
        with mmap.mmap(-1, len(batch)) as mapped:
            mapped[:] = batch
            view = memoryview(mapped)
            try:
                if expected is None:
                    with pytest.raises(CorruptRecordError):
                        read_batch(view)
                else:
                    assert read_batch(view)[1] == expected
            finally:
                view.release()


# --- malformed records -----------------------------------------------------------------------

def _check_decoded(batch, count):
    """Either CorruptRecordError, or well-typed records -- from both readers, which agree."""
    try:
        header, records = read_batch(batch)
    except CorruptRecordError:
        with pytest.raises(CorruptRecordError):
            decode_records(batch, "t", 0, 0)
        return
    assert len(records) == count
    for r in records:
        assert type(r.offset) is int and type(r.timestamp) is int
        assert I64_MIN <= r.timestamp <= I64_MAX
        assert header.base_offset <= r.offset <= header.last_offset
        assert type(r.key) in (bytes, type(None)) and type(r.value) in (bytes, type(None))
        assert type(r.headers) is tuple
        assert all(type(n) is str and type(v) in (bytes, type(None)) for n, v in r.headers)
    fetched = decode_records(batch, "t", 0, 0).records
    assert [(c.offset, c.timestamp, c.key, c.value, c.headers) for c in fetched] == \
        [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records]


int64s = st.integers(min_value=I64_MIN, max_value=I64_MAX)
small_or_wild = st.one_of(st.integers(min_value=-3, max_value=6), int64s)
lying_records = st.lists(
    st.builds(
        kafka_record,
        small_or_wild, small_or_wild, binary_or_none, binary_or_none,
        st.lists(st.tuples(st.one_of(st.text(max_size=4), st.binary(max_size=4)),
                           binary_or_none), max_size=3),
        attributes=st.integers(min_value=0, max_value=255),
        length=st.one_of(st.none(), small_or_wild),
        header_count=st.one_of(st.none(), small_or_wild)),
    max_size=4)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=lying_records, tail=st.binary(max_size=3), count=st.integers(0, 4),
       lod=st.integers(min_value=0, max_value=5), codec=st.sampled_from(CODECS),
       first_ts=st.sampled_from([0, -1, I64_MAX, I64_MIN]))
def test_lying_varint_records_only_raise_corrupt(records, tail, count, lod, codec, first_ts):
    """Well-framed but lying records (lengths, counts, deltas, invalid UTF-8 header names, huge
    varints), compressed and CRC-sealed: decoded consistently, or refused as corrupt."""
    cid = CODEC_IDS[codec]
    section = b"".join(records) + (tail if len(records) % 2 else b"")
    batch = reseal(compress(cid, section), record_count=count, last_offset_delta=lod,
                   attributes=cid, first_ts=first_ts)
    _check_decoded(batch, count)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.one_of(int64s.map(varint), st.binary(max_size=6),
                                st.just(b"\xff" * 11)), max_size=12),
       count=st.integers(0, 3))
def test_varint_soup_only_raises_corrupt(parts, count):
    _check_decoded(reseal(b"".join(parts), record_count=count, last_offset_delta=3), count)


@pytest.mark.parametrize("section, count, lod, message", [
    (ONE, 2, 1, "Can't read"),                                             # fewer than claimed
    (ONE + kafka_record(1, 0, None, b"v"), 1, 1, "8 unconsumed bytes"),    # more than claimed
    (ONE + b"\x00", 1, 0, "1 unconsumed bytes"),                           # trailing byte
    (kafka_record(0, 0, b"k", b"v", length=5), 1, 0, "Invalid record size"),
    (kafka_record(0, 0, b"k", b"v", length=60), 1, 0, "Invalid record size"),
    (kafka_record(0, 0, b"k", b"v", header_count=-1), 1, 0, "invalid number of record headers"),
    (kafka_record(0, 0, None, b"v", [("h", b"x")], header_count=5), 1, 0, "Can't read"),
    (kafka_record(0, 0, None, b"v", [(b"\xff\xfe", b"x")]), 1, 0, "UnicodeDecodeError"),
    (kafka_record(0, 0, None, b"v")[:-6] + varint(-7) + b"\x00\x00\x00", 1, 0, "Can't read"),
    (b"\x10\x00" + b"\xff" * 11, 1, 0, "Out of double range"),             # 11-byte varint
    (b"\x1c\x00\x00\x00" + varint(I64_MAX) + b"abc", 1, 0, "OverflowError"),  # key "2^63 B"
    (b"\x1c\x00\x00\x00" + varint(1 << 40) + b"abc", 1, 0, "Can't read 1099511627776 bytes"),
    (kafka_record(-1, 0, None, b"v"), 1, 0, "outside 0..0"),
    (ONE + kafka_record(3, 0, None, b"v"), 2, 2, "outside 0..2"),
    (kafka_record(1, 0, None, b"v") + kafka_record(1, 0, None, b"v"), 2, 1,
     "record 1 has offset delta 1 after 1"),
    (kafka_record(2, 0, None, b"v") + kafka_record(1, 0, None, b"v"), 2, 2,
     "record 1 has offset delta 1 after 2"),
])
def test_decoder_names_what_is_wrong(section, count, lod, message):
    batch = reseal(section, record_count=count, last_offset_delta=lod, base_offset=77)
    with pytest.raises(CorruptRecordError, match="batch at byte 0 \\(base offset 77\\)") as info:
        read_batch(batch)
    assert message in str(info.value)
    with pytest.raises(CorruptRecordError, match="base offset 77"):
        decode_records(batch, "t", 0, 0)


@pytest.mark.parametrize("section, attributes, message", [
    (b"", 0, "not valid Kafka v2 records"),
    (b"\x00", 0, "not valid Kafka v2 records"),
    (ONE, 1, "cannot decompress gzip"),          # says gzip, isn't
    (ONE, 2, "cannot decompress snappy"),
    (ONE, 3, "cannot decompress lz4"),
    (ONE, 4, "cannot decompress zstd"),
    (ONE, 5, "codec 5 (unknown)"),
    (ONE, 7, "codec 7"),
])
def test_undecodable_sections(section, attributes, message):
    batch = reseal(section, record_count=1, attributes=attributes)
    with pytest.raises(CorruptRecordError, match="batch at byte 0") as info:
        read_batch(batch)
    assert message in str(info.value)


def test_timestamp_delta_overflow_wraps_as_in_kafka():
    """A delta past int64 is not detected (Kafka's Java reader and aiokafka add in int64 too);
    the timestamp stays an int64, as every reader of the batch sees it."""
    batch = reseal(kafka_record(0, 10, None, b"v"), record_count=1, first_ts=I64_MAX)
    (record,) = read_batch(batch)[1]
    assert record.timestamp == I64_MIN + 9


def test_reader_accepts_offset_gaps_negative_deltas_and_empty_batches():
    section = (kafka_record(0, 0, b"k", b"v") + kafka_record(1, 5, None, None, [("h", b"x")])
               + kafka_record(3, -2, b"", b"", attributes=0x7F))  # record attributes: unused
    header, records = read_batch(reseal(section, record_count=3, last_offset_delta=4,
                                        first_ts=100, max_ts=105, base_offset=10))
    assert records == [Record(10, 100, b"k", b"v", ()), Record(11, 105, None, None, (("h", b"x"),)),
                       Record(13, 98, b"", b"", ())]
    # a batch whose records were all compacted away (Kafka keeps such batches for their
    # producer state) decodes to nothing
    header, records = read_batch(reseal(b"", record_count=0, last_offset_delta=9,
                                        base_offset=50))
    assert records == [] and header.next_offset == 60


def test_control_batches_decode_like_kafkas():
    """A transaction marker as Kafka writes it: control bit, one record, key (version 0, type 1 =
    COMMIT), value (version 0, coordinator epoch 5)."""
    marker = kafka_record(0, 0, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 5))
    batch = reseal(marker, record_count=1, attributes=0x30, first_ts=7, max_ts=7, base_offset=4)
    assert read_batch(batch)[1] == [Record(4, 7, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05")]
    assert decode_records(batch, "t", 0, 0) == ([], 5, 0)  # consumers skip markers
