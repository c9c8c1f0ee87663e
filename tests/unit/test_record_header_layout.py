"""record/header.py is the one place that knows the batch header's byte positions: they must
match the fields of real batches, and the header's part-structs must add up to the whole."""

from kafkalite.record import build_batch
from kafkalite.record import header as hdr

# (position, one-field struct, BatchHeader attribute): every field of the 61-byte header
FIELDS = [
    (hdr.BASE_OFFSET_POS, hdr.I64, "base_offset"),
    (hdr.LENGTH_POS, hdr.I32, "batch_length"),
    (hdr.LEADER_EPOCH_POS, hdr.I32, "partition_leader_epoch"),
    (hdr.CRC_POS, hdr.U32, "crc"),
    (hdr.ATTRIBUTES_POS, hdr.I16, "attributes"),
    (hdr.LAST_OFFSET_DELTA_POS, hdr.I32, "last_offset_delta"),
    (hdr.FIRST_TIMESTAMP_POS, hdr.I64, "first_timestamp"),
    (hdr.MAX_TIMESTAMP_POS, hdr.I64, "max_timestamp"),
    (hdr.PRODUCER_ID_POS, hdr.I64, "producer_id"),
    (hdr.PRODUCER_EPOCH_POS, hdr.I16, "producer_epoch"),
    (hdr.BASE_SEQUENCE_POS, hdr.I32, "base_sequence"),
    (hdr.RECORD_COUNT_POS, hdr.I32, "record_count"),
]


def _batch() -> bytes:
    records = [(1_600_000_000_000 + i, b"k%d" % i, b"v" * i, ()) for i in range(3)]
    return build_batch(records, "gzip", base_offset=41, partition_leader_epoch=7,
                       producer_id=123_456_789_012, producer_epoch=5, base_sequence=17)


def test_every_position_reads_its_field_from_a_real_batch():
    batch = _batch()
    header = hdr.parse_header(batch)
    for pos, field, name in FIELDS:
        assert field.unpack_from(batch, pos)[0] == getattr(header, name), name
    assert batch[hdr.MAGIC_POS] == hdr.MAGIC == header.magic
    assert hdr.RECORD_COUNT_POS + hdr.I32.size == hdr.HEADER_SIZE == 61


def test_tuple_indexes_follow_batch_header_fields():
    batch = _batch()
    fields = hdr.HEADER.unpack_from(batch)
    header = hdr.parse_header(batch)
    assert fields[hdr.F_BASE_OFFSET] == header.base_offset
    assert fields[hdr.F_LENGTH] == header.batch_length
    assert fields[hdr.F_EPOCH] == header.partition_leader_epoch
    assert fields[hdr.F_ATTRIBUTES] == header.attributes
    assert fields[hdr.F_LAST_DELTA] == header.last_offset_delta
    assert fields[hdr.F_MAX_TS] == header.max_timestamp
    assert fields[hdr.F_PRODUCER_ID] == header.producer_id
    assert fields[hdr.F_RECORD_COUNT] == header.record_count


def test_part_structs_cover_the_header():
    batch = _batch()
    prefix = hdr.PREFIX.unpack_from(batch, 0)
    covered = hdr.CRC_COVERED.unpack_from(batch, hdr.ATTRIBUTES_POS)
    assert prefix + covered == hdr.HEADER.unpack_from(batch)
    assert hdr.PATCHABLE.unpack_from(batch, 0) == prefix[:3]
    assert hdr.PATCHABLE.size == hdr.MAGIC_POS and hdr.PREFIX.size == hdr.ATTRIBUTES_POS


def test_patching_the_prefix_keeps_the_crc_valid():
    batch = bytearray(_batch())
    hdr.set_base_offset(batch, 0, 9_000)
    hdr.set_partition_leader_epoch(batch, 0, 12)
    header = hdr.check_batch(batch)
    assert (header.base_offset, header.partition_leader_epoch) == (9_000, 12)
