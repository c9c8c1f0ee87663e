"""Control batches (transaction markers) against Kafka's format, assembled here by hand:
``MemoryRecords.withEndTransactionMarker`` writes a 61-byte v2 header with the control and
transactional bits, no sequence, and one 17-byte record (EndTransactionMarker's
CURRENT_END_TXN_SCHEMA_RECORD_SIZE) whose key is ControlRecordType's and value the marker's."""

import struct

import pytest
from crc32c import crc32c

from kafkalite.errors import InvalidRecordError
from kafkalite.record.batch import read_batch
from kafkalite.record.control import build_control_batch, control_type, parse_control_record


def _kafka_marker(producer_id, epoch, commit, coordinator_epoch, timestamp):
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, coordinator_epoch)
    # record: length 16 (zigzag 0x20), attributes 0, timestamp delta 0, offset delta 0,
    # key length 4 (0x08), key, value length 6 (0x0c), value, no headers
    record = bytes([0x20, 0, 0, 0, 0x08]) + key + bytes([0x0C]) + value + bytes([0])
    after_crc = struct.pack(">hiqqqhii", 0x30, 0, timestamp, timestamp, producer_id, epoch, -1,
                            1) + record
    crc = crc32c(after_crc)
    return struct.pack(">qiibI", 0, len(after_crc) + 9, -1, 2, crc) + after_crc


@pytest.mark.parametrize("commit", [True, False])
def test_bytes_equal_kafkas_end_transaction_marker(commit):
    built = build_control_batch(4001, 7, commit, 12, 1_700_000_000_123)
    assert len(built) == 78
    assert built == _kafka_marker(4001, 7, commit, 12, 1_700_000_000_123)


def test_read_back_as_a_control_batch():
    header, records = read_batch(build_control_batch(5, 1, False, 3, 99))
    assert header.attributes & 0x30 == 0x30
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (5, 1, -1)
    assert len(records) == 1
    assert parse_control_record(records[0].key, records[0].value) == (False, 3)


def test_parse_commit_and_newer_versions():
    assert parse_control_record(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x09") == (True, 9)
    # a newer version is parsed as version 0 (Kafka logs it and goes on)
    assert parse_control_record(b"\x00\x05\x00\x00", b"\x00\x03\x00\x00\x00\x02\xff") == (
        False, 2)


@pytest.mark.parametrize("key,value", [
    (b"\x00\x00\x00", b"\x00\x00\x00\x00\x00\x01"),          # short key
    (None, b"\x00\x00\x00\x00\x00\x01"),
    (b"\xff\xff\x00\x01", b"\x00\x00\x00\x00\x00\x01"),      # negative key version
    (b"\x00\x00\x00\x02", b"\x00\x00\x00\x00\x00\x01"),      # not ABORT/COMMIT
    (b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00"),          # short value
    (b"\x00\x00\x00\x01", b"\xff\xff\x00\x00\x00\x01"),      # negative value version
])
def test_malformed_markers_are_invalid_records(key, value):
    with pytest.raises(InvalidRecordError):
        parse_control_record(key, value)


def test_control_type_reads_other_kinds():
    assert control_type(b"\x00\x00\x00\x05") == 5
