"""A topic's compression.type on the leader: batches re-encoded with the topic's codec (Kafka's
LogValidator), everything a consumer reads kept: offsets, timestamps, keys, values, headers,
producer id/epoch/sequence."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.config import TopicConfig
from kafkalite.log.log import Log
from kafkalite.record import build_batch, iter_batches, iter_records
from kafkalite.record.compression import GZIP, LZ4, NONE, ZSTD
from kafkalite.record.recompress import recompress, target_codec
from kafkalite.record.batch import BatchBuilder

records_st = st.lists(st.tuples(st.integers(0, 2**40), st.none() | st.binary(max_size=20),
                                st.none() | st.binary(max_size=200),
                                st.lists(st.tuples(st.text(max_size=5),
                                                   st.none() | st.binary(max_size=5)),
                                         max_size=2)),
                      min_size=1, max_size=30)


def _idempotent_batch(records, compression):
    builder = BatchBuilder(compression=compression, producer_id=7, producer_epoch=2,
                           base_sequence=40)
    for ts, key, value, headers in records:
        builder.append(ts, key, value, headers)
    return builder.build()


@settings(max_examples=60, deadline=None)
@given(records_st, st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"]),
       st.sampled_from([NONE, GZIP, LZ4, ZSTD]))
def test_recompression_keeps_every_record_and_the_producer_fields(records, source, codec):
    batch = _idempotent_batch(records, source)
    out = recompress(batch, codec)
    (before, recs_before), = list(iter_batches(batch))
    (after, recs_after), = list(iter_batches(out))       # the CRC of the new batch checks out
    assert after.compression == codec
    assert recs_after == recs_before
    for field in ("producer_id", "producer_epoch", "base_sequence", "last_offset_delta",
                  "record_count", "max_timestamp", "first_timestamp"):
        assert getattr(after, field) == getattr(before, field), field


def test_a_batch_already_in_the_codec_is_copied_byte_for_byte():
    batch = build_batch([(1, b"k", b"v", None)], compression="lz4")
    assert recompress(batch, LZ4) == batch


@pytest.mark.parametrize("name, codec", [("producer", None), ("uncompressed", NONE),
                                         ("lz4", LZ4), ("zstd", ZSTD)])
def test_topic_compression_type_names(name, codec):
    assert target_codec(name) == codec


def test_leader_stores_an_uncompressed_batch_with_the_topics_codec(tmp_path):
    log = Log(str(tmp_path / "t-0"), TopicConfig(compression_type="lz4"))
    log.append(build_batch([(1, b"a", b"x" * 100, None), (2, b"b", b"y", None)]))
    log.append(build_batch([(3, b"c", b"z", None)], compression="lz4"))
    data = log.read(0, 1 << 20).records
    headers = [h for h, _ in iter_batches(data)]
    assert [h.compression for h in headers] == [LZ4, LZ4]
    assert [(r.offset, r.key) for r in iter_records(data)] == [(0, b"a"), (1, b"b"), (2, b"c")]


def test_followers_keep_the_leaders_bytes(tmp_path):
    log = Log(str(tmp_path / "t-0"), TopicConfig(compression_type="lz4"))
    batch = build_batch([(1, b"a", b"x", None)])
    log.append(batch, assign_offsets=False)
    (header, _), = list(iter_batches(log.read(0, 1 << 20).records))
    assert header.compression == NONE
