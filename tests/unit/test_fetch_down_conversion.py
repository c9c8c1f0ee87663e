"""Fetch v0-v3: their frames (Kafka's protocol spec, written out byte by byte here) through
kafkalite's schemas, and the down-conversion of fetched batches (Kafka's RecordsUtil.downConvert),
read back with kafka-python's record decoder."""

from __future__ import annotations

import struct

import pytest
from kafka.record import MemoryRecords

from kafkalite import errors
from kafkalite.config import TopicConfig
from kafkalite.errors import UnsupportedCompressionTypeError
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka.codec import decode_request, encode_response
from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka.convert.data import FETCH
from kafkalite.record import build_batch
from kafkalite.record.control import build_control_batch
from kafkalite.record.down_convert import down_convert, fetch_magic
from kafkalite.record.header import set_base_offset
from kafkalite.server.api_table import TABLE
from kafkalite.server.fetch_down_conversion import down_converted

TS = 1_600_000_000_000


def _str(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def entries(data) -> list[tuple]:
    """(magic, offset, timestamp, key, value, headers) of every message, by kafka-python."""
    records = MemoryRecords(bytes(data))
    out = []
    while records.has_next():
        batch = records.next_batch()
        for r in batch:
            out.append((batch.magic, r.offset, r.timestamp, r.key, r.value, list(r.headers)))
    return out


def test_fetch_is_served_from_v0():
    assert TABLE[ApiKey.FETCH].kafka_versions == (0, 12)
    assert [fetch_magic(v) for v in range(6)] == [0, 0, 1, 1, None, None]


@pytest.mark.parametrize("version", [0, 3])
def test_an_old_fetch_request_decodes(version):
    body = struct.pack(">iii", -1, 500, 1) + (struct.pack(">i", 1000) if version == 3 else b"")
    body += struct.pack(">i", 1) + _str("t") + struct.pack(">i", 1) + struct.pack(">iqi", 2, 7,
                                                                                 4096)
    frame = struct.pack(">hhi", ApiKey.FETCH, version, 42) + _str("c") + body
    header, entity = decode_request(frame)
    request = FETCH.request(entity, version)
    assert (header.api_version, header.correlation_id, header.client_id) == (version, 42, "c")
    assert [(t.topic, [(p.partition, p.fetch_offset, p.partition_max_bytes)
                       for p in t.partitions]) for t in request.topics] == [("t", [(2, 7, 4096)])]
    assert (request.max_wait_ms, request.min_bytes, request.max_bytes) == (
        500, 1, 1000 if version == 3 else 0x7FFFFFFF)


@pytest.mark.parametrize("version", [0, 1])
def test_an_old_fetch_response_encodes(version):
    response = m.FetchResponse(throttle_time_ms=5, responses=[m.FetchTopicResponse("t", [
        m.FetchPartitionResponse(2, 0, high_watermark=9, records=b"xyz")])])
    payload = encode_response(ApiKey.FETCH, version, 42, FETCH.response(response, version))
    expected = struct.pack(">i", 42) + (struct.pack(">i", 5) if version else b"")
    expected += struct.pack(">i", 1) + _str("t") + struct.pack(">i", 1)
    expected += struct.pack(">ihqi", 2, 0, 9, 3) + b"xyz"
    assert payload == expected


def _at(batch: bytes, base_offset: int) -> bytes:
    out = bytearray(batch)
    set_base_offset(out, 0, base_offset)
    return bytes(out)


def test_batches_become_magic_1_messages_headers_dropped_controls_skipped():
    data = (build_batch([(TS, b"a", b"1", [("h", b"x")]), (TS + 1, None, b"2", None)],
                        base_offset=0)
            + _at(build_control_batch(5, 0, True, 0, TS), 2)
            + build_batch([(TS + 2, b"c", b"3", None), (TS + 3, b"d", b"4", None)], "gzip",
                          base_offset=3))
    assert entries(down_convert(data, 1, 0)) == [
        (1, 0, TS, b"a", b"1", []), (1, 1, TS + 1, None, b"2", []),
        (1, 3, TS + 2, b"c", b"3", []), (1, 4, TS + 3, b"d", b"4", [])]
    # below the fetch offset: an uncompressed batch's records are left out, a compressed
    # batch's are kept (Kafka converts it whole)
    assert [e[1] for e in entries(down_convert(data, 0, 4))] == [3, 4]
    assert [e[1] for e in entries(down_convert(data, 0, 1))] == [1, 3, 4]
    assert {e[:1] + e[2:3] for e in entries(down_convert(data, 0, 0))} == {(0, None)}
    # already converted messages pass as they are
    once = down_convert(data, 1, 0)
    assert down_convert(once, 1, 0) == once


def test_zstd_cannot_be_down_converted():
    with pytest.raises(UnsupportedCompressionTypeError):
        down_convert(build_batch([(TS, None, b"v", None)], "zstd"), 1, 0)


def _answer(records: bytes) -> m.FetchResponse:
    return m.FetchResponse(responses=[m.FetchTopicResponse("t", [
        m.FetchPartitionResponse(0, 0, high_watermark=2, records=records)])])


def test_the_topic_configs_decide_as_kafkas_fetch_handler():
    request = m.FetchRequest(topics=[m.FetchTopic("t", [m.FetchPartition(0, 0, 1 << 20)])])
    v2 = build_batch([(TS, b"k", b"v", None)])
    on = TopicConfig()
    off = TopicConfig.from_dict({"message.downconversion.enable": "false"})
    old_format = TopicConfig.from_dict({"message.format.version": "0.10.2"})

    def records(config, data, magic=1):
        p = down_converted(request, magic, lambda _t: config, _answer(data)).responses[0] \
            .partitions[0]
        return p.error_code, p.records

    code, data = records(on, v2)
    assert code == 0 and entries(data) == [(1, 0, TS, b"k", b"v", [])]
    assert records(off, v2) == (errors.UnsupportedVersionError.code, b"")
    # a topic of format v1 is not converted for a magic 1 client, even when it holds v2 batches
    # written before its format changed (Kafka looks at the topic's format first)
    assert records(old_format, v2) == (0, v2)
    legacy = down_convert(v2, 1, 0)
    assert records(off, legacy) == (0, legacy)       # nothing to convert: no refusal
    assert entries(records(old_format, legacy, magic=0)[1])[0][0] == 0
