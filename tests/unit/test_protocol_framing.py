"""Int32 framing: FrameDecoder / encode_frame."""

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite import errors
from kafkalite.protocol.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    FrameDecoder,
    FrameTooLarge,
    encode_frame,
    frame_header,
)

FAST = settings(deadline=None, max_examples=150, derandomize=True)


def stream(payloads):
    return b"".join(encode_frame(p) for p in payloads)


def test_encode_frame_is_big_endian_length_prefix():
    assert encode_frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert encode_frame(b"") == b"\x00\x00\x00\x00"
    assert frame_header(258) == b"\x00\x00\x01\x02"


def test_whole_stream_in_one_feed():
    payloads = [b"a", b"", b"hello" * 100, bytes(range(256))]
    assert FrameDecoder().feed(stream(payloads)) == payloads


def test_one_byte_at_a_time():
    payloads = [b"x" * n for n in (0, 1, 3, 4, 5, 300)]
    dec = FrameDecoder(1000)
    out = []
    data = stream(payloads)
    for i in range(len(data)):
        out.extend(dec.feed(data[i:i + 1]))
    assert out == payloads
    assert dec.buffered_bytes == 0


def test_empty_feed_returns_nothing():
    dec = FrameDecoder()
    assert dec.feed(b"") == []
    dec.feed(b"\x00\x00")
    assert dec.feed(b"") == []
    assert dec.feed(b"\x00\x01z") == [b"z"]


def test_frames_are_bytes_for_any_buffer_input():
    data = stream([b"abc", b"de"])
    for kind in (bytes, bytearray, memoryview):
        frames = FrameDecoder().feed(kind(data))
        assert frames == [b"abc", b"de"]
        assert all(type(f) is bytes for f in frames)
    dec = FrameDecoder()
    assert dec.feed(bytearray(data[:5])) == []
    frames = dec.feed(memoryview(data[5:]))
    assert frames == [b"abc", b"de"] and all(type(f) is bytes for f in frames)


@FAST
@given(payloads=st.lists(st.binary(max_size=300), max_size=12),
       cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=20))
def test_random_chunking_gives_the_same_frames(payloads, cuts):
    data = stream(payloads)
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    dec = FrameDecoder(1000)
    out = []
    for a, b in zip(points, points[1:]):
        out.extend(dec.feed(data[a:b]))
    assert out == payloads
    assert dec.buffered_bytes == 0


def test_exactly_max_is_allowed_and_one_more_is_not():
    dec = FrameDecoder(10)
    assert dec.feed(encode_frame(b"x" * 10)) == [b"x" * 10]
    with pytest.raises(FrameTooLarge) as info:
        dec.feed(frame_header(11))
    assert info.value.length == 11 and info.value.max_frame_bytes == 10


def test_oversized_length_raises_before_the_body_is_buffered():
    dec = FrameDecoder(1024)
    with pytest.raises(FrameTooLarge) as info:
        dec.feed(struct.pack(">i", 2**31 - 1))      # only the header: no body ever sent
    assert "exceeds the maximum of 1024" in str(info.value)
    assert dec.buffered_bytes == 0


def test_oversized_length_split_across_feeds():
    dec = FrameDecoder(100)
    assert dec.feed(encode_frame(b"ok") + b"\x00\x00") == [b"ok"]
    with pytest.raises(FrameTooLarge):
        dec.feed(b"\x10\x00" + b"y" * 50)
    assert dec.buffered_bytes == 0


def test_negative_length():
    dec = FrameDecoder()
    with pytest.raises(FrameTooLarge) as info:
        dec.feed(struct.pack(">i", -5) + b"abc")
    assert info.value.length == -5
    assert "negative" in str(info.value)


def test_frames_before_a_bad_length_are_kept_on_the_error():
    dec = FrameDecoder(100)
    with pytest.raises(FrameTooLarge) as info:
        dec.feed(encode_frame(b"one") + encode_frame(b"two") + frame_header(101) + b"zz")
    assert info.value.frames == [b"one", b"two"]
    # the same through the buffered path
    dec = FrameDecoder(100)
    dec.feed(b"\x00")
    with pytest.raises(FrameTooLarge) as info:
        dec.feed(b"\x00\x00\x01A" + struct.pack(">i", -1))
    assert info.value.frames == [b"A"]


def test_decoder_stays_broken_after_a_bad_length():
    dec = FrameDecoder(10)
    with pytest.raises(FrameTooLarge):
        dec.feed(frame_header(11))
    with pytest.raises(FrameTooLarge):
        dec.feed(encode_frame(b"fine"))


def test_frame_too_large_is_an_invalid_request_error():
    exc = FrameTooLarge(5, 4)
    assert isinstance(exc, errors.InvalidRequestError)
    assert errors.code_of(exc) == errors.InvalidRequestError.code == 42


def test_default_limit_is_kafkas_not_twisteds():
    assert DEFAULT_MAX_FRAME_BYTES == 100 * 1024 * 1024
    big = b"z" * 200_000            # well over Int32StringReceiver's 99,999 default
    assert FrameDecoder().feed(encode_frame(big)) == [big]


def test_invalid_max_frame_bytes():
    with pytest.raises(ValueError):
        FrameDecoder(-1)


def test_long_stream_in_small_chunks_keeps_the_buffer_small():
    payloads = [bytes([i % 251]) * (10_000 + i) for i in range(200)]
    data = stream(payloads)
    dec = FrameDecoder(50_000)
    out = []
    largest = 0
    for i in range(0, len(data), 1500):
        out.extend(dec.feed(data[i:i + 1500]))
        largest = max(largest, len(dec._buf))
    assert out == payloads
    assert dec.buffered_bytes == 0
    # never more than about one frame plus compaction slack is held
    assert largest < 10_300 + 4 + 1500 + (1 << 17)


def test_big_frame_in_many_chunks():
    big = bytes(range(256)) * 4096            # 1 MiB
    data = encode_frame(big) + encode_frame(b"tail")
    dec = FrameDecoder(2 << 20)
    out = []
    for i in range(0, len(data), 65536):
        out.extend(dec.feed(data[i:i + 65536]))
    assert out == [big, b"tail"]
