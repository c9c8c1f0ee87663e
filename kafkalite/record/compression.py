"""Compression codecs for a batch's records section, numbered as Kafka numbers them.

    0 none | 1 gzip | 2 snappy (not supported) | 3 lz4 (LZ4 frame format) | 4 zstd

The id lives in the low three bits of the batch ``attributes``. ``compress``/``decompress`` work on
whole records sections (one call per batch). Decompression is strict: a stream that is truncated,
damaged, or followed by extra bytes raises CorruptRecordError. Asking for snappy or an unknown codec
raises UnsupportedCompressionTypeError.

Pure functions, no I/O. zstd context objects are reused per thread (they are not safe to share
between threads); zlib and lz4 one-shot calls need no state.
"""

from __future__ import annotations

import threading
import zlib

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
#: the ids kafkalite can encode and decode
SUPPORTED: frozenset[int] = frozenset({NONE, GZIP, LZ4, ZSTD})
_IDS_BY_NAME: dict[str, int] = {name: cid for cid, name in CODEC_NAMES.items()}

_GZIP_WBITS = 31  # zlib's "gzip container" mode
GZIP_DEFAULT_LEVEL = 6  # Kafka's default (java.util.zip.Deflater's)
ZSTD_DEFAULT_LEVEL = 3  # Kafka's default
LZ4_DEFAULT_LEVEL = 0  # lz4's fast mode

_local = threading.local()


def compression_id(codec: str | int | None) -> int:
    """The codec id for a name (``"gzip"``, case-insensitive), an id, or None (= none).

    Raises UnsupportedCompressionTypeError for snappy and for anything unknown.
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
                f"unknown compression type {codec!r}; choose one of none, gzip, lz4, zstd")
    else:
        raise UnsupportedCompressionTypeError(f"invalid compression type {codec!r}")
    _check_supported(cid)
    return cid


def compression_name(cid: int) -> str:
    """The name of a codec id (snappy included); UnsupportedCompressionTypeError if unknown."""
    try:
        return CODEC_NAMES[cid]
    except (KeyError, TypeError):
        raise UnsupportedCompressionTypeError(f"unknown compression codec id {cid!r}") from None


def is_supported(cid: int) -> bool:
    return cid in SUPPORTED


def _check_supported(cid: int) -> None:
    if cid not in SUPPORTED:
        if cid == SNAPPY:
            raise UnsupportedCompressionTypeError(
                "snappy compression (codec 2) is not supported by kafkalite; "
                "use gzip, lz4 or zstd")
        raise UnsupportedCompressionTypeError(f"unknown compression codec id {cid!r}")


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
    """Compress ``data`` (any bytes-like object) with codec ``cid``; ``level`` None = default."""
    if cid == NONE:
        return data if type(data) is bytes else bytes(data)
    if cid == LZ4:
        return lz4.frame.compress(
            data, compression_level=LZ4_DEFAULT_LEVEL if level is None else level)
    if cid == ZSTD:
        return _zstd_compressor(ZSTD_DEFAULT_LEVEL if level is None else level).compress(data)
    if cid == GZIP:
        return zlib.compress(data, GZIP_DEFAULT_LEVEL if level is None else level, _GZIP_WBITS)
    _check_supported(cid)
    raise AssertionError("unreachable")  # pragma: no cover


def decompress(cid: int, data) -> bytes:
    """Decompress a whole stream made by ``compress(cid, ...)``.

    CorruptRecordError if the stream is damaged, truncated or followed by extra bytes;
    UnsupportedCompressionTypeError if ``cid`` is snappy or unknown.
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
        else:
            out = _gzip_decompress(data)
    except CorruptRecordError:
        raise
    except MemoryError:
        raise CorruptRecordError(f"{name} data expands beyond available memory") from None
    except Exception as exc:  # zlib.error, RuntimeError (lz4), ZstdError, ValueError ...
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
