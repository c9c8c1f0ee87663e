"""Record batches (docs/architecture.md, 6. Storage): byte for byte Apache Kafka's magic-2 batches.

Pure code, no I/O. ``header`` knows the 61 header bytes; ``v2`` is Kafka's varint records
section, written and parsed by aiokafka's compiled codec; ``batch`` builds whole batches and
re-exports ``reader``'s readers and the broker's no-decode validation; ``compression`` maps
Kafka's codec ids to gzip, snappy (xerial-framed or raw), lz4 (frame) and zstd; ``legacy``
recognises kafkalite's old msgpack records so old data dirs are refused by name.
"""

from kafkalite.record.batch import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    BatchBuilder,
    Record,
    build_batch,
    iter_batches,
    iter_records,
    read_batch,
    validate_batch_bytes,
)
from kafkalite.record.compression import (
    CODEC_NAMES,
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    SUPPORTED,
    ZSTD,
    compress,
    compression_id,
    compression_name,
    decompress,
    is_supported,
)
from kafkalite.record.header import HEADER_SIZE, LOG_OVERHEAD, BatchHeader

__all__ = [
    "BatchHeader", "Record", "BatchBuilder", "build_batch", "read_batch", "iter_batches",
    "iter_records", "validate_batch_bytes", "CREATE_TIME", "LOG_APPEND_TIME",
    "compress", "decompress", "compression_id", "compression_name", "is_supported",
    "CODEC_NAMES", "SUPPORTED", "NONE", "GZIP", "SNAPPY", "LZ4", "ZSTD",
    "HEADER_SIZE", "LOG_OVERHEAD",
]
