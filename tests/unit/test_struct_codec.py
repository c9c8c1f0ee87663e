"""kafkalite.struct_codec, the classic struct reader/writer of the internal topics' records:
each integer width's range, nullable strings and arrays, and the reader's refusals."""

from __future__ import annotations

import pytest

from kafkalite.errors import CorruptRecordError
from kafkalite.struct_codec import Reader, Writer


@pytest.mark.parametrize("kind,bits", [("int8", 8), ("int16", 16), ("int32", 32), ("int64", 64)])
def test_integer_widths_round_trip_at_their_limits(kind, bits):
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    w = Writer(3)
    getattr(w, kind)("f", low)
    getattr(w, kind)("f", high)
    data = w.done()
    assert len(data) == 2 + 2 * bits // 8
    r = Reader(data, "X")
    assert r.int16("version") == 3
    assert (getattr(r, kind)("f"), getattr(r, kind)("f")) == (low, high)
    for bad in (low - 1, high + 1, True, 1.0):
        with pytest.raises(ValueError, match=f"f=.* is not an {kind}"):
            getattr(Writer(0), kind)("f", bad)


def test_nullable_string_and_array():
    w = Writer(0)
    w.string("s", None, nullable=True)
    w.count("a", None, nullable=True)
    w.count("b", 0)
    data = w.done()
    assert data == bytes.fromhex("0000" "ffff" "ffffffff" "00000000")
    r = Reader(data, "X")
    r.int16("version")
    assert r.string("s", nullable=True) is None
    assert r.count("a", 4, nullable=True) is None
    assert r.count("b", 4) == 0
    with pytest.raises(ValueError, match="a must not be null"):
        Writer(0).count("a", None)
    with pytest.raises(ValueError, match="s must not be null"):
        Writer(0).string("s", None)


def test_reader_refusals_name_the_field():
    with pytest.raises(CorruptRecordError, match="X: a has -1 elements but is not nullable"):
        Reader(bytes.fromhex("ffffffff"), "X").count("a", 4)
    with pytest.raises(CorruptRecordError, match="a has -2 elements at byte 4"):
        Reader(bytes.fromhex("fffffffe"), "X").count("a", 4, nullable=True)
    with pytest.raises(CorruptRecordError, match="a claims 2 elements"):
        Reader(bytes.fromhex("00000002" "00000000"), "X").count("a", 4)
    with pytest.raises(CorruptRecordError, match="truncated b"):
        Reader(b"", "X").int8("b")
    with pytest.raises(CorruptRecordError, match="X: expected bytes, got str"):
        Reader("text", "X")
