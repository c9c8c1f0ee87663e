"""Producer state snapshots (``.snapshot``): Kafka's version-1 layout, the CRC, file naming and
Kafka's rules for which files stay."""

from __future__ import annotations

import os
import struct

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.log.producer_snapshot import (
    CorruptSnapshotError,
    ProducerSnapshotEntry,
    SnapshotFiles,
    decode_snapshot,
    encode_snapshot,
    read_snapshot,
    snapshot_offset,
    snapshot_path,
    write_snapshot,
)

ENTRY = ProducerSnapshotEntry(producer_id=1000, producer_epoch=3, last_sequence=41,
                              last_offset=77, offset_delta=4, timestamp=1_600_000_000_123,
                              coordinator_epoch=2, current_txn_first_offset=70)


def test_bytes_are_kafkas_struct_layout():
    data = encode_snapshot([ENTRY])
    body = struct.pack(">i", 1) + struct.pack(">qhiqiqiq", *ENTRY)
    assert data == struct.pack(">hI", 1, crc32c(body)) + body
    assert len(data) == 2 + 4 + 4 + 46


def test_round_trip_and_empty(tmp_path):
    path = snapshot_path(str(tmp_path), 77)
    assert os.path.basename(path) == "00000000000000000077.snapshot"
    entries = [ENTRY, ENTRY._replace(producer_id=5, current_txn_first_offset=-1)]
    write_snapshot(path, entries)
    assert read_snapshot(path) == entries
    write_snapshot(path, [])  # replaces the file, no leftover bytes
    assert read_snapshot(path) == []
    assert os.path.getsize(path) == 10


@pytest.mark.parametrize("damage", ["crc", "body", "version", "short", "count"])
def test_damaged_files_are_corrupt(damage):
    data = bytearray(encode_snapshot([ENTRY]))
    if damage == "crc":
        data[3] ^= 1
    elif damage == "body":
        data[-1] ^= 0x40
    elif damage == "version":
        data[1] = 2
    elif damage == "short":
        data = data[:5]
    else:  # a count the bytes cannot hold, with a CRC that matches it
        body = struct.pack(">i", 3) + bytes(data[10:])
        data = bytearray(struct.pack(">hI", 1, crc32c(body)) + body)
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(bytes(data))


def test_file_names():
    assert snapshot_offset("00000000000000000042.snapshot") == 42
    assert snapshot_offset("00000000000000000042.snapshot.deleted") is None
    assert snapshot_offset("42.snapshot") is None
    assert snapshot_offset("00000000000000000042.log") is None


def test_take_skips_offsets_not_past_the_latest(tmp_path):
    files = SnapshotFiles(str(tmp_path))
    assert files.take(10, [ENTRY])
    assert not files.take(10, [])
    assert not files.take(5, [])
    assert files.take(11, [])
    assert SnapshotFiles(str(tmp_path)).offsets == [10, 11]


def test_latest_skips_and_deletes_corrupt_ones(tmp_path):
    files = SnapshotFiles(str(tmp_path))
    files.take(10, [ENTRY])
    files.take(20, [ENTRY._replace(producer_id=2)])
    files.take(30, [])
    with open(files.path(30), "r+b") as f:
        f.seek(3)
        f.write(b"\xff")
    assert files.latest(at_or_below=25) == (20, [ENTRY._replace(producer_id=2)])
    assert os.path.exists(files.path(30))  # not looked at
    assert files.latest() == (20, [ENTRY._replace(producer_id=2)])
    assert not os.path.exists(files.path(30)) and files.offsets == [10, 20]
    assert files.latest(at_or_below=9) is None


def test_remove_strays_keeps_segment_bases_and_the_newest_above_them(tmp_path):
    files = SnapshotFiles(str(tmp_path))
    for offset in (5, 100, 150, 200, 260, 300):
        files.take(offset, [])
    files.remove_strays([0, 100, 200])
    assert files.offsets == [100, 200, 300]
    assert sorted(os.listdir(tmp_path)) == [f"{o:020d}.snapshot" for o in (100, 200, 300)]
    files.remove_strays([0, 100, 200, 400])  # the newest stray is below the last base now
    assert files.offsets == [100, 200]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.builds(
    ProducerSnapshotEntry, st.integers(-2**63, 2**63 - 1), st.integers(-2**15, 2**15 - 1),
    st.integers(-2**31, 2**31 - 1), st.integers(-2**63, 2**63 - 1),
    st.integers(-2**31, 2**31 - 1), st.integers(-2**63, 2**63 - 1),
    st.integers(-2**31, 2**31 - 1), st.integers(-2**63, 2**63 - 1)), max_size=20))
def test_any_entries_round_trip(entries):
    data = encode_snapshot(entries)
    assert decode_snapshot(data) == entries
    assert len(data) == 10 + 46 * len(entries)
