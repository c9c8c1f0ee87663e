"""A topic's ``compression.type`` applied on the leader: batches re-encoded with the topic's codec.

Kafka's LogValidator keeps a producer's batch as it came when the topic says ``producer`` or the
batch already uses the topic's codec; otherwise it decodes the records and builds them again with
the topic's codec (``uncompressed`` means none), keeping the producer id, epoch and base sequence,
the timestamp type, every record's timestamp, key, value and headers, and the offset deltas. The
broker patches the base offset and leader epoch afterwards, as for any batch.

Transactional and control batches are kept as they came: kafkalite has no transactions yet (their
markers and the producer state they carry are the transactions issue's), and re-encoding them
without their attribute bits would change what they mean.

Pure: bytes in, bytes out; the caller has checked CRCs and headers.
"""

from __future__ import annotations

from kafkalite.record.batch import rebuild_batch
from kafkalite.record.compression import NONE, compression_id
from kafkalite.record.header import COMPRESSION_MASK, CONTROL_BIT, TRANSACTIONAL_BIT
from kafkalite.record.reader import iter_batches

#: ``compression.type`` values, Kafka's names, and the codec each stores ("producer": none forced)
TOPIC_CODECS = ("uncompressed", "gzip", "snappy", "lz4", "zstd", "producer")


def target_codec(compression_type: str) -> int | None:
    """The codec id a topic's ``compression.type`` forces, or None for ``producer``."""
    if compression_type == "producer":
        return None
    if compression_type == "uncompressed":
        return NONE
    return compression_id(compression_type)


def converts(attributes: int, codec: int) -> bool:
    """Whether a batch with these ``attributes`` is re-encoded for ``codec`` (a header look only,
    for the append path)."""
    return (attributes & COMPRESSION_MASK != codec
            and not attributes & (TRANSACTIONAL_BIT | CONTROL_BIT))


def recompress(data, codec: int) -> bytes:
    """Every batch of ``data`` with ``codec``; batches already in it (and transactional or control
    batches) are copied byte for byte."""
    out = []
    view = memoryview(data)
    pos = 0
    for header, records in iter_batches(view, verify_crc=False):
        if not converts(header.attributes, codec):
            out.append(bytes(view[pos:pos + header.size]))
        else:
            out.append(rebuild_batch(header, records, codec))
        pos += header.size
    return b"".join(out)
