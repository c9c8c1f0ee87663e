"""kafkalite.record.compression: codec ids and names, strict round trips, clean failures."""

from __future__ import annotations

import struct
import threading
import zlib

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.errors import CorruptRecordError, UnsupportedCompressionTypeError
from kafkalite.record import compression as c

CODECS = [c.NONE, c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD]
COMPRESSED = [c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD]

SAMPLES = [
    b"",
    b"x",
    b"hello kafkalite " * 200,
    bytes(range(256)) * 8,
    struct.pack(">1000Q", *range(1000)),
]


# --- ids and names -------------------------------------------------------------------------------

@pytest.mark.parametrize("name, cid", [("none", 0), ("gzip", 1), ("snappy", 2), ("lz4", 3),
                                       ("zstd", 4)])
def test_ids_follow_kafka_numbering(name, cid):
    assert c.compression_id(name) == cid
    assert c.compression_id(name.upper()) == cid
    assert c.compression_id(f" {name} ") == cid
    assert c.compression_id(cid) == cid
    assert c.compression_name(cid) == name
    assert c.is_supported(cid)


def test_none_means_no_compression():
    assert c.compression_id(None) == c.NONE


def test_every_kafka_codec_is_supported():
    assert c.SUPPORTED == {0, 1, 2, 3, 4}
    assert c.compression_id("SNAPPY") == c.SNAPPY and c.is_supported(2)
    with pytest.raises(UnsupportedCompressionTypeError, match="none, gzip, snappy, lz4, zstd"):
        c.compression_id("brotli")


@pytest.mark.parametrize("codec", ["brotli", "", 5, 7, -1, 1.0, True, b"gzip"])
def test_unknown_codecs_are_rejected(codec):
    with pytest.raises(UnsupportedCompressionTypeError):
        c.compression_id(codec)


@pytest.mark.parametrize("cid", [5, 8, -1, "gzip"])
def test_compression_name_of_unknown_id(cid):
    with pytest.raises(UnsupportedCompressionTypeError):
        c.compression_name(cid)


@pytest.mark.parametrize("cid", [5, 6, 7])
def test_compress_and_decompress_refuse_unsupported_ids(cid):
    with pytest.raises(UnsupportedCompressionTypeError):
        c.compress(cid, b"data")
    with pytest.raises(UnsupportedCompressionTypeError):
        c.decompress(cid, b"data")


# --- round trips ---------------------------------------------------------------------------------

@pytest.mark.parametrize("cid", CODECS)
@pytest.mark.parametrize("data", SAMPLES, ids=lambda d: f"{len(d)}B")
def test_roundtrip(cid, data):
    packed = c.compress(cid, data)
    assert isinstance(packed, bytes)
    assert c.decompress(cid, packed) == data


@pytest.mark.parametrize("cid", COMPRESSED)
def test_compressible_data_shrinks(cid):
    data = b"hello kafkalite " * 200
    assert len(c.compress(cid, data)) < len(data) // 4


@pytest.mark.parametrize("cid", CODECS)
@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_accepts_any_bytes_like(cid, kind):
    data = b"abc" * 100
    packed = c.compress(cid, kind(data))
    assert c.decompress(cid, kind(packed)) == data
    assert type(c.decompress(cid, kind(packed))) is bytes


@pytest.mark.parametrize("cid, level", [(c.GZIP, 1), (c.GZIP, 9), (c.LZ4, 9), (c.ZSTD, 1),
                                        (c.ZSTD, 19)])
def test_levels(cid, level):
    data = SAMPLES[2]
    assert c.decompress(cid, c.compress(cid, data, level=level)) == data


def test_gzip_output_is_a_gzip_stream():
    packed = c.compress(c.GZIP, b"payload")
    assert packed[:2] == b"\x1f\x8b"
    assert zlib.decompress(packed, 31) == b"payload"


def test_lz4_output_is_an_lz4_frame():
    assert lz4.frame.decompress(c.compress(c.LZ4, b"payload")) == b"payload"


def test_snappy_output_is_the_java_clients_xerial_framing():
    data = bytes(range(256)) * 300  # 76800 bytes: blocks of 32768, 32768 and 11264
    packed = c.compress(c.SNAPPY, data)
    assert packed[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    pos, blocks = 16, []
    while pos < len(packed):
        (length,) = struct.unpack_from(">i", packed, pos)
        blocks.append(bytes(cramjam.snappy.decompress_raw(packed[pos + 4:pos + 4 + length])))
        pos += 4 + length
    assert [len(b) for b in blocks] == [32768, 32768, 11264] and b"".join(blocks) == data


def test_snappy_reads_raw_blocks_and_other_writers():
    from aiokafka.codec import snappy_decode, snappy_encode

    data = b"librdkafka sends raw snappy " * 3000
    assert c.decompress(c.SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data
    assert c.decompress(c.SNAPPY, snappy_encode(data)) == data           # aiokafka, xerial
    assert c.decompress(c.SNAPPY, snappy_encode(data, False)) == data    # aiokafka, raw
    assert snappy_decode(c.compress(c.SNAPPY, data)) == data


def test_snappy_forged_lengths_are_corrupt():
    huge_claim = b"\xff\xff\xff\xff\x0f" + b"\x00" * 10  # a preamble claiming 4 GiB
    with pytest.raises(CorruptRecordError, match="claims 4294967295 bytes"):
        c.decompress(c.SNAPPY, huge_claim)
    header_only = c.compress(c.SNAPPY, b"x")[:16]
    with pytest.raises(CorruptRecordError, match="no block"):
        c.decompress(c.SNAPPY, header_only)
    negative = header_only + struct.pack(">i", -1) + b"\x00"
    with pytest.raises(CorruptRecordError, match="snappy"):
        c.decompress(c.SNAPPY, negative)


def test_zstd_frames_without_content_size_decode():
    data = SAMPLES[3]
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(data)
    assert zstandard.frame_content_size(frame) == -1
    assert c.decompress(c.ZSTD, frame) == data


def test_zstd_contexts_are_safe_across_threads():
    results: dict[int, bool] = {}

    def work(i):
        ok = True
        for j in range(50):
            data = (b"%d-%d " % (i, j)) * (50 + j)
            for level in (None, 1):
                ok &= c.decompress(c.ZSTD, c.compress(c.ZSTD, data, level=level)) == data
        results[i] = ok

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: True for i in range(8)}


@settings(max_examples=60, deadline=None)
@given(cid=st.sampled_from(CODECS), data=st.binary(max_size=4096))
def test_roundtrip_arbitrary(cid, data):
    assert c.decompress(cid, c.compress(cid, data)) == data


# --- failures ------------------------------------------------------------------------------------

@pytest.mark.parametrize("cid", COMPRESSED)
def test_every_truncation_is_corrupt(cid):
    packed = c.compress(cid, SAMPLES[2])
    for cut in range(len(packed)):
        with pytest.raises(CorruptRecordError):
            c.decompress(cid, packed[:cut])


@pytest.mark.parametrize("cid", COMPRESSED)
@pytest.mark.parametrize("extra", [b"\x00", b"garbage", None])
def test_trailing_bytes_are_corrupt(cid, extra):
    packed = c.compress(cid, b"payload" * 10)
    extra = packed if extra is None else extra  # a second whole stream is also refused
    with pytest.raises(CorruptRecordError, match="stray|unused|extra"):
        c.decompress(cid, packed + extra)


@pytest.mark.parametrize("cid", COMPRESSED)
def test_damaged_stream_is_corrupt_with_a_message(cid):
    packed = bytearray(c.compress(cid, SAMPLES[4]))
    packed[len(packed) // 2] ^= 0xFF
    packed[len(packed) // 2 + 1] ^= 0xFF
    packed[len(packed) // 2 + 7] ^= 0xFF
    name = c.compression_name(cid)
    try:
        out = c.decompress(cid, bytes(packed))
    except CorruptRecordError as exc:
        assert name in str(exc)
    else:  # snappy blocks and lz4/zstd frames carry no content checksum here (the batch CRC
        # is the guard); gzip always checks its CRC-32
        assert cid != c.GZIP and out != SAMPLES[4]


def test_zstd_lying_content_size_is_corrupt():
    frame = (b"\x28\xb5\x2f\xfd" + bytes([0xE0]) + struct.pack("<Q", 1 << 40)
             + bytes([0x29, 0, 0]) + b"hello")
    with pytest.raises(CorruptRecordError):
        c.decompress(c.ZSTD, frame)


@settings(max_examples=150, deadline=None)
@given(cid=st.sampled_from(COMPRESSED), data=st.binary(max_size=300))
def test_garbage_only_ever_raises_corrupt(cid, data):
    try:
        out = c.decompress(cid, data)
    except CorruptRecordError:
        pass
    else:
        assert isinstance(out, bytes)


@settings(max_examples=100, deadline=None)
@given(cid=st.sampled_from(COMPRESSED), data=st.binary(min_size=1, max_size=300),
       flip=st.integers(min_value=0))
def test_garbage_with_a_valid_magic_only_ever_raises_corrupt(cid, data, flip):
    """Start from a real stream and damage it: errors deep inside the codec are wrapped too."""
    packed = bytearray(c.compress(cid, data))
    bit = flip % (len(packed) * 8)
    packed[bit // 8] ^= 1 << (bit % 8)
    try:
        out = c.decompress(cid, bytes(packed))
    except CorruptRecordError:
        pass
    else:
        assert isinstance(out, bytes)
