"""Int32 framing: every frame is a 4-byte big-endian signed length followed by that many bytes.

``FrameDecoder`` is pure and incremental: feed it whatever the socket delivered, get back the
complete frames. It checks each frame's length as soon as the 4 length bytes are in, *before*
buffering the body, so a peer announcing a 2 GiB frame costs us nothing.

Error choice: an invalid length (negative, or above ``max_frame_bytes``) raises ``FrameTooLarge``,
a subclass of ``errors.InvalidRequestError`` (wire code 42, INVALID_REQUEST). Kafka answers such a
frame by closing the connection (its ``InvalidReceiveException``); the Twisted protocol in
``connection.py`` does the same. The stream cannot be resynchronised after a bad length, so the
decoder stays broken: every later ``feed`` raises again.
"""

from __future__ import annotations

import struct

from kafkalite.errors import InvalidRequestError

__all__ = ["DEFAULT_MAX_FRAME_BYTES", "FrameDecoder", "FrameTooLarge", "encode_frame",
           "frame_header", "LENGTH_PREFIX_BYTES"]

#: Kafka's ``socket.request.max.bytes`` default (100 MiB).
DEFAULT_MAX_FRAME_BYTES = 104_857_600
LENGTH_PREFIX_BYTES = 4

_LENGTH = struct.Struct(">i")
_pack_length = _LENGTH.pack
_unpack_length_from = _LENGTH.unpack_from

# compact the receive buffer once this many consumed bytes sit at its front (and they are at
# least half the buffer), so a long stream never pays for repeated copies of its tail
_COMPACT_AT = 1 << 16


class FrameTooLarge(InvalidRequestError):
    """A frame length prefix is negative or larger than the allowed maximum.

    ``length`` is the announced length, ``max_frame_bytes`` the limit, and ``frames`` holds the
    complete frames that preceded the bad length in the same ``feed`` call (so a caller may still
    serve them before closing the connection).
    """

    def __init__(self, length: int, max_frame_bytes: int, frames: list[bytes] | None = None):
        if length < 0:
            message = f"invalid frame length {length} (negative)"
        else:
            message = f"frame of {length} bytes exceeds the maximum of {max_frame_bytes} bytes"
        super().__init__(message)
        self.length = length
        self.max_frame_bytes = max_frame_bytes
        self.frames = frames if frames is not None else []


def frame_header(length: int) -> bytes:
    """The 4-byte length prefix for a payload of ``length`` bytes."""
    return _pack_length(length)


def encode_frame(payload: bytes) -> bytes:
    """``payload`` with its 4-byte big-endian length prefix."""
    return _pack_length(len(payload)) + payload


class FrameDecoder:
    """Incremental decoder of length-prefixed frames.

    ``feed(data)`` returns the list of complete frame payloads (``bytes``) now available, in order;
    a partial frame stays buffered for the next call. Work and copying are linear in the bytes fed:
    frames that arrive whole are sliced straight out of ``data``; partial data is kept in a
    ``bytearray`` read through an offset and compacted only now and then.
    """

    __slots__ = ("max_frame_bytes", "_buf", "_pos", "_need", "_error")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES):
        if not isinstance(max_frame_bytes, int) or max_frame_bytes < 0:
            raise ValueError(f"max_frame_bytes must be a non-negative int, got {max_frame_bytes!r}")
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()
        self._pos = 0          # start of the unconsumed bytes in _buf
        self._need = 0         # total bytes (prefix + body) of the frame being buffered, 0 = unknown
        self._error: FrameTooLarge | None = None

    @property
    def buffered_bytes(self) -> int:
        """Bytes received but not yet returned as a frame."""
        return len(self._buf) - self._pos

    def _bad_length(self, length: int, frames: list[bytes]) -> FrameTooLarge:
        self._error = FrameTooLarge(length, self.max_frame_bytes)
        self._buf = bytearray()
        self._pos = 0
        self._need = 0
        return FrameTooLarge(length, self.max_frame_bytes, frames)

    def feed(self, data: bytes) -> list[bytes]:
        if self._error is not None:
            raise FrameTooLarge(self._error.length, self._error.max_frame_bytes)
        frames: list[bytes] = []
        max_len = self.max_frame_bytes
        buf = self._buf
        n = len(data)
        if not n:
            return frames

        if len(buf) == self._pos:
            # Fast path: nothing buffered, cut frames straight out of ``data``.
            pos = 0
            while n - pos >= 4:
                (length,) = _unpack_length_from(data, pos)
                if length < 0 or length > max_len:
                    raise self._bad_length(length, frames)
                end = pos + 4 + length
                if end > n:
                    break
                frames.append(bytes(data[pos + 4:end]))
                pos = end
            if pos < n:
                buf.clear()
                with memoryview(data) as view:
                    buf += view[pos:]
                self._pos = 0
                self._need = 0
                if n - pos >= 4:
                    self._need = 4 + _unpack_length_from(buf, 0)[0]
            else:
                buf.clear()
                self._pos = 0
            return frames

        # Slow path: append to the buffer, then take whatever is complete.
        buf += data
        size = len(buf)
        pos = self._pos
        need = self._need
        if need and size - pos < need:
            return frames          # still waiting for the body of a known-length frame
        while True:
            avail = size - pos
            if not need:
                if avail < 4:
                    break
                (length,) = _unpack_length_from(buf, pos)
                if length < 0 or length > max_len:
                    raise self._bad_length(length, frames)
                need = 4 + length
            if avail < need:
                break
            with memoryview(buf) as view, view[pos + 4:pos + need] as body:
                frames.append(bytes(body))
            pos += need
            need = 0

        if pos == size:
            buf.clear()
            pos = 0
        elif pos >= _COMPACT_AT and pos * 2 >= size:
            del buf[:pos]
            pos = 0
        self._pos = pos
        self._need = need
        return frames
