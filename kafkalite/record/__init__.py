"""Record batches (DESIGN section 6): the v2 header, the msgpack records codec and compression.

Pure code, no I/O. ``header`` knows the 61 header bytes; ``batch`` builds and reads whole batches;
``compression`` maps Kafka's codec ids to gzip, lz4 and zstd.
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
