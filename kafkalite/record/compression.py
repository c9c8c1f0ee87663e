"""Compression codecs for a batch's records section, numbered as Kafka numbers them.

    0 none | 1 gzip | 2 snappy | 3 lz4 (LZ4 frame format) | 4 zstd

The id lives in the low three bits of the batch ``attributes``. ``compress``/``decompress`` work on
whole records sections (one call per batch). Decompression is strict: a stream that is truncated,
damaged, or followed by extra bytes raises CorruptRecordError. Asking for an unknown codec raises
UnsupportedCompressionTypeError.

Snappy comes in two framings in the wild, and Kafka accepts both: the Java client writes xerial's
``SnappyOutputStream`` format (a 16-byte ``\x82SNAPPY\x00`` header, then blocks of 32 KiB input,
each a big-endian i32 length and one raw snappy block), librdkafka may send one raw snappy block.
``compress`` writes the Java framing; ``decompress`` reads either.

Pure functions, no I/O, all compiled codecs (zlib, lz4, zstandard, cramjam's snappy). zstd context
objects are reused per thread (they are not safe to share between threads); the others need no
state.
"""

from __future__ import annotations

import threading
import zlib

import struct

import cramjam
import lz4.frame
import zstandard

from kafkalite.errors import CorruptRecordError, UnsupportedCompressionTypeError

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

#: every codec id Kafka defines, supported or not
CODEC_NAMES: dict[int, str] = {
    NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
#: the ids kafkalite can encode and decode: all of Kafka's
SUPPORTED: frozenset[int] = frozenset({NONE, GZIP, SNAPPY, LZ4, ZSTD})
_IDS_BY_NAME: dict[str, int] = {name: cid for cid, name in CODEC_NAMES.items()}

_GZIP_WBITS = 31  # zlib's "gzip container" mode
GZIP_DEFAULT_LEVEL = 6  # Kafka's default (java.util.zip.Deflater's)
ZSTD_DEFAULT_LEVEL = 3  # Kafka's default
LZ4_DEFAULT_LEVEL = 0  # lz4's fast mode

# xerial snappy-java's stream header: magic, then version 1 and minimum compatible version 1
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # SnappyOutputStream's default block size (what the Java client uses)
_BLOCK_LENGTH = struct.Struct(">i")
# Snappy's densest op copies 64 bytes for a 3-byte tag, so no valid block expands more than ~22x;
# refusing larger claims up front keeps a forged length preamble from allocating gigabytes.
_SNAPPY_MAX_RATIO = 32

_local = threading.local()


def compression_id(codec: str | int | None) -> int:
    """The codec id for a name (``"gzip"``, case-insensitive), an id, or None (= none).

    Raises UnsupportedCompressionTypeError for anything unknown.
    """
    if codec is None:
        return NONE
    if isinstance(codec, bool):
        raise UnsupportedCompressionTypeError(f"invalid compression type {codec!r}")
    if isinstance(codec, int):
        cid = codec
    elif isinstance(codec, str):
        cid = _IDS_BY_NAME.get(codec.strip().lower(), -1)
        if cid < 0:
            raise UnsupportedCompressionTypeError(
                f"unknown compression type {codec!r}; choose one of none, gzip, snappy, lz4, "
                f"zstd")
    else:
        raise UnsupportedCompressionTypeError(f"invalid compression type {codec!r}")
    _check_supported(cid)
    return cid


def compression_name(cid: int) -> str:
    """The name of a codec id; UnsupportedCompressionTypeError if unknown."""
    try:
        return CODEC_NAMES[cid]
    except (KeyError, TypeError):
        raise UnsupportedCompressionTypeError(f"unknown compression codec id {cid!r}") from None


def is_supported(cid: int) -> bool:
    return cid in SUPPORTED


def _check_supported(cid: int) -> None:
    if cid not in SUPPORTED:
        raise UnsupportedCompressionTypeError(
            f"unknown compression codec id {cid!r}; Kafka's are 0 none, 1 gzip, 2 snappy, "
            f"3 lz4, 4 zstd")


def _zstd_compressor(level: int) -> zstandard.ZstdCompressor:
    cache = getattr(_local, "zstd_c", None)
    if cache is None:
        cache = _local.zstd_c = {}
    cctx = cache.get(level)
    if cctx is None:
        cctx = cache[level] = zstandard.ZstdCompressor(level=level, write_content_size=True)
    return cctx


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    dctx = getattr(_local, "zstd_d", None)
    if dctx is None:
        dctx = _local.zstd_d = zstandard.ZstdDecompressor()
    return dctx


def compress(cid: int, data, level: int | None = None) -> bytes:
    """Compress ``data`` (any bytes-like object) with codec ``cid``; ``level`` None = default.

    Snappy has no levels and ignores ``level``."""
    if cid == NONE:
        return data if type(data) is bytes else bytes(data)
    if cid == LZ4:
        return lz4.frame.compress(
            data, compression_level=LZ4_DEFAULT_LEVEL if level is None else level)
    if cid == ZSTD:
        return _zstd_compressor(ZSTD_DEFAULT_LEVEL if level is None else level).compress(data)
    if cid == GZIP:
        return zlib.compress(data, GZIP_DEFAULT_LEVEL if level is None else level, _GZIP_WBITS)
    if cid == SNAPPY:
        return _snappy_compress(data)
    _check_supported(cid)
    raise AssertionError("unreachable")  # pragma: no cover


def decompress(cid: int, data) -> bytes:
    """Decompress a whole stream made by ``compress(cid, ...)``.

    CorruptRecordError if the stream is damaged, truncated or followed by extra bytes;
    UnsupportedCompressionTypeError if ``cid`` is unknown. Snappy may be xerial-framed or raw.
    """
    if cid == NONE:
        return data if type(data) is bytes else bytes(data)
    if cid not in SUPPORTED:
        _check_supported(cid)
    name = CODEC_NAMES[cid]
    try:
        if cid == LZ4:
            out = _lz4_decompress(data)
        elif cid == ZSTD:
            out = _zstd_decompress(data)
        elif cid == SNAPPY:
            out = _snappy_decompress(data)
        else:
            out = _gzip_decompress(data)
    except CorruptRecordError:
        raise
    except MemoryError:
        raise CorruptRecordError(f"{name} data expands beyond available memory") from None
    except Exception as exc:  # zlib.error, RuntimeError (lz4), ZstdError, cramjam's errors ...
        raise CorruptRecordError(
            f"cannot decompress {name} data ({len(data)} bytes): {exc}") from exc
    return out


def _gzip_decompress(data) -> bytes:
    d = zlib.decompressobj(_GZIP_WBITS)
    out = d.decompress(data)
    if not d.eof:
        raise CorruptRecordError(f"gzip data is truncated ({len(data)} bytes, stream not ended)")
    if d.unused_data:
        raise CorruptRecordError(
            f"gzip data has {len(d.unused_data)} stray bytes after the end of the stream")
    return out


def _lz4_decompress(data) -> bytes:
    d = lz4.frame.LZ4FrameDecompressor()
    out = d.decompress(data)
    if not d.eof:
        raise CorruptRecordError(f"lz4 frame is truncated ({len(data)} bytes, frame not ended)")
    if d.unused_data:
        raise CorruptRecordError(
            f"lz4 data has {len(d.unused_data)} stray bytes after the end of the frame")
    return out


def _zstd_decompress(data) -> bytes:
    dctx = _zstd_decompressor()
    try:
        return dctx.decompress(data, allow_extra_data=False)
    except zstandard.ZstdError as exc:
        if "content size" not in str(exc):
            raise
    # a frame written without its content size (another zstd implementation): stream it
    d = dctx.decompressobj()
    out = d.decompress(data)
    if not d.eof:
        raise CorruptRecordError(f"zstd frame is truncated ({len(data)} bytes, frame not ended)")
    if d.unused_data:
        raise CorruptRecordError(
            f"zstd data has {len(d.unused_data)} stray bytes after the end of the frame")
    return out


def _snappy_compress(data) -> bytes:
    """The Java client's framing: xerial header, then one raw block per 32 KiB of input (at least
    one block, so that a stream always ends with a block and any truncation shows)."""
    view = memoryview(data)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    parts = [_XERIAL_HEADER]
    raw = cramjam.snappy.compress_raw
    for start in range(0, max(len(view), 1), _XERIAL_BLOCK):
        block = raw(view[start:start + _XERIAL_BLOCK])
        parts.append(_BLOCK_LENGTH.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_block(block) -> bytes:
    claimed = cramjam.snappy.decompress_raw_len(block)
    if claimed > _SNAPPY_MAX_RATIO * len(block) + 64:
        raise CorruptRecordError(
            f"snappy block of {len(block)} bytes claims {claimed} bytes uncompressed")
    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy_decompress(data) -> bytes:
    view = memoryview(data)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    if view[:len(_XERIAL_MAGIC)] != _XERIAL_MAGIC:
        return _snappy_block(view)  # librdkafka's raw snappy: one block, no framing
    end = len(view)
    if end <= len(_XERIAL_HEADER):
        raise CorruptRecordError(f"snappy stream of {end} bytes is truncated: no block after "
                                 f"its header")
    pos = len(_XERIAL_HEADER)  # version and compatible version: 1 everywhere, not checked
    out = []
    while pos < end:
        length = (_BLOCK_LENGTH.unpack_from(view, pos)[0] if end - pos >= _BLOCK_LENGTH.size
                  else -1)
        if length < 0 or length > end - pos - _BLOCK_LENGTH.size:
            # (xerial streams have no end marker: a cut-off block and stray trailing bytes look
            # the same)
            raise CorruptRecordError(
                f"snappy stream is truncated or has stray bytes at byte {pos}: "
                f"{end - pos} bytes left do not hold a whole block")
        pos += _BLOCK_LENGTH.size
        out.append(_snappy_block(view[pos:pos + length]))
        pos += length
    return b"".join(out)
